"""Plain data the executor hands to pod runners and back to callers.

Shapes follow Argo's `status.nodes` (docs/fields.md "NodeStatus"), trimmed to what a local run can know.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PHASES_DONE = frozenset({"Succeeded", "Failed", "Error", "Skipped", "Omitted"})


@dataclass
class PodRequest:
    """What a container of the compiled workflow would run, after substitution."""

    node_name: str
    template: str
    image: str
    command: list[str]
    args: list[str]
    env: dict[str, str]
    inputs: dict[str, str]
    start_time: float
    attempt: int
    workflow: dict[str, str]
    # when the pod is killed (its activeDeadlineSeconds, or the workflow's deadline), on the same clock as
    # start_time; None: never. A runner that runs the step to its end keeps the step from acting past it.
    kill_time: float | None = None


@dataclass
class PodResult:
    """What the main container did: `error=True` is an infrastructure Error, a non-zero exit a Failure."""

    exit_code: int
    stdout: str = ""
    files: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0
    error: bool = False


@dataclass
class NodeStatus:
    """One entry of the would-be `status.nodes`; `outputs` holds `parameters` (name -> value) and `result`."""

    id: str
    name: str
    display_name: str
    type: str
    template: str
    phase: str = "Pending"
    message: str = ""
    started: float = 0.0
    finished: float | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)
    boundary_id: str = ""
    exit_code: int | None = None

    @property
    def fulfilled(self) -> bool:
        return self.phase in PHASES_DONE

    def stored_bytes(self) -> int:
        """Bytes of parameter values Argo keeps for this node (inputs, outputs and the result)."""
        size = sum(len(v.encode()) for v in self.inputs.values())
        size += sum(len(v.encode()) for v in self.outputs.get("parameters", {}).values())
        result = self.outputs.get("result")
        return size + (len(result.encode()) if result is not None else 0)


@dataclass
class WorkflowRun:
    """The outcome of `run_workflow`: phase, node tree and the numbers a certification run reports."""

    name: str
    phase: str
    message: str
    nodes: dict[str, NodeStatus]
    wall_time_s: float
    pods_started: int
    exit_handler_phase: str | None = None
    max_concurrent_pods: int = 0

    @property
    def parameter_bytes(self) -> int:
        return sum(n.stored_bytes() for n in self.nodes.values())

    def outputs_of(self, template: str) -> list[dict[str, str]]:
        """Output parameters of every Succeeded node that ran `template`, in start order."""
        found = [n for n in self.nodes.values() if n.template == template and n.type != "Retry"
                 and n.phase == "Succeeded" and "parameters" in n.outputs]
        return [dict(n.outputs["parameters"]) for n in sorted(found, key=lambda n: (n.started, n.name))]

    def nodes_of(self, template: str) -> list[NodeStatus]:
        return [n for n in self.nodes.values() if n.template == template]

    def by_name(self, name: str) -> NodeStatus:
        for node in self.nodes.values():
            if node.name == name:
                return node
        raise KeyError(name)


__all__ = ["NodeStatus", "PodRequest", "PodResult", "WorkflowRun", "PHASES_DONE"]

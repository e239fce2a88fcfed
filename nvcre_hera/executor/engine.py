"""The discrete-event core: template calls, pods, retries, caps, deadlines and the exit handler.

Follows argo-workflows v4.1.2: workflow/controller/operator.go `executeTemplate` (inputs, recursion limit of 100
nested calls, retries as a Retry node whose attempts are its children, docs/retries.md), docs/walk-through/
timeouts.md (`activeDeadlineSeconds`, template `timeout`), docs/walk-through/exit-handlers.md (`spec.onExit` sees
`workflow.status`/`workflow.failures`; a failing exit handler fails a Succeeded workflow, operator.go). Time is
simulated: a pod's main container starts `pod_start_overhead_s` after the pod starts and ends `duration_s` later;
the runner is called, in order, at the pod's simulated start. Nothing sleeps. A pod's stdout becomes its
`outputs.result` only when the template that calls it refers to that result (`result_referenced`), as the controller
decides (argo-workflows v4.0.5, the e2e controller: operator.go L3178-3194 `executeContainer`, L4233-4249
`includeScriptOutput`, L3316-3354 `generateOutputResultRegex`/`hasOutputResultRef`, L3357 `getStepOrDAGTaskName`;
the pod's ARGO_INCLUDE_SCRIPT_OUTPUT, workflowpod.go L342): otherwise Argo stores no result in the Workflow.
"""

from __future__ import annotations

import heapq
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from nvcre_hera.errors import UnsupportedConstruct
from nvcre_hera.executor.caps import Cap, Caps
from nvcre_hera.executor.model import NodeStatus, PodRequest, PodResult
from nvcre_hera.executor.template import ResolveError, Scope, parse_duration, render_item, substitute, \
    substitute_all

MAX_DEPTH = 100
DEADLINE_MSG = "Pod was active on the node longer than the specified deadline"
WF_DEADLINE_MSG = "Step exceeded its deadline"
_SYMBOL = {"Succeeded": "✓", "Failed": "✗", "Error": "!", "Skipped": "↷", "Omitted": "∅"}


class Boundary(Protocol):
    """The running DAG/Steps invocation a call belongs to: its node, and its `parallelism` cap if it has one."""

    node: NodeStatus
    cap: Cap | None


# Starts a DAG or Steps body: (engine, call, template, node, scope, done). Injected by run_workflow, so the engine
# does not import the dag and steps modules that build on it.
StartInvocation = Callable[["Engine", "Call", dict[str, Any], NodeStatus, Scope, Callable[[NodeStatus], None]], None]


class Abort(Exception):
    """Stops the whole run (max_pods exceeded)."""


@dataclass
class Call:
    """One `executeTemplate`: which template, under which node name, with which arguments."""

    name: str
    display: str
    template: str
    args: dict[str, str]
    boundary: Boundary | None
    parent: NodeStatus | None
    depth: int
    on_done: Callable[[NodeStatus], None]
    exit_handler: bool = False


def step_or_task_name(node_name: str) -> str:
    """The step or task name in a node name, without its retry and item suffixes: ".fanout(0:1)(0)[0]" -> "fanout"
    (operator.go getStepOrDAGTaskName)."""
    name = node_name
    while True:
        trimmed = re.sub(r"(\([^()]*\)|\[[^\[\]]*\])$", "", name)
        if trimmed == name:
            break
        name = trimmed
    return name.rsplit(".", 1)[-1]


def result_referenced(call_name: str, parent: dict[str, Any] | None) -> bool:
    """Whether the DAG or Steps template that runs `call_name` refers to its `outputs.result`, by the regexes of
    operator.go generateOutputResultRegex over the parent template's JSON. A pod outside any DAG or Steps (the
    entrypoint, the exit handler's own) has no parent to refer to it."""
    if parent is None:
        return False
    name = step_or_task_name(call_name)
    prefix = "tasks" if "dag" in parent else ("steps" if "steps" in parent else "")
    text = json.dumps(parent)
    return bool(re.search(rf"{prefix}\.{name}\.outputs\.result", text)
                or re.search(rf"{prefix}\[['\"]{name}['\"]\]\.outputs.result", text))


def fnv_id(wf_name: str, node_name: str) -> str:
    """Argo-style node id: workflow name plus the FNV-1a hash of the node name."""
    h = 0x811C9DC5
    for byte in node_name.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{wf_name}-{h}"


class Engine:
    """Holds the clock, the node table, the caps and the pod runner for one run."""

    def __init__(self, wf_name: str, templates: dict[str, dict[str, Any]], runner: Callable[[PodRequest], PodResult],
                 *, globals_: Scope, overhead: float, on_event: Callable[[str], None] | None, max_pods: int,
                 parallelism: int | None, semaphores: dict[str, int], deadline: float | None,
                 wf_meta: dict[str, str], start_invocation: StartInvocation,
                 on_node: Callable[[NodeStatus], None] | None = None) -> None:
        self.start_invocation = start_invocation
        self.wf_name, self.templates, self.runner = wf_name, templates, runner
        self.on_node = on_node  # sees every node as it is fulfilled (live progress reads its inputs and outputs)
        self.globals, self.overhead, self.on_event, self.max_pods = globals_, overhead, on_event, max_pods
        self.now, self.deadline, self.wf_meta = 0.0, deadline, wf_meta
        self.nodes: dict[str, NodeStatus] = {}
        self.caps = Caps()
        self.pod_cap = Cap("spec.parallelism", parallelism) if parallelism else None
        self.sem_caps = {key: Cap(f"semaphore {key}", n) for key, n in semaphores.items()}
        self.pods_started = self.active_pods = self.max_active = 0
        self.hung: list[NodeStatus] = []
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0
        self._main_start: dict[str, float] = {}  # pod node id -> when its main container started (for events)

    # -- clock -------------------------------------------------------------------------------------------------
    def at(self, when: float, fn: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (max(when, self.now), self._seq, fn))

    def run_until_idle(self) -> None:
        while self._heap:
            when, _, fn = heapq.heappop(self._heap)
            self.now = when
            fn()

    # -- nodes -------------------------------------------------------------------------------------------------
    def new_node(self, name: str, display: str, type_: str, template: str, parent: NodeStatus | None,
                 boundary: Boundary | None, phase: str = "Pending", message: str = "") -> NodeStatus:
        node = NodeStatus(id=fnv_id(self.wf_name, name), name=name, display_name=display, type=type_,
                          template=template, phase=phase, message=message, started=self.now,
                          boundary_id=boundary.node.id if boundary else "")
        self.nodes[node.id] = node
        if parent is not None:
            parent.children.append(node.id)
        if node.fulfilled:
            node.finished = self.now
            self.emit(node)
        return node

    def hang(self, name: str, display: str, template: str, parent: NodeStatus | None, boundary: Boundary | None,
             why: str) -> NodeStatus:
        """A task Argo would requeue for ever (template.MissingVariable): a Pending node that never ends."""
        node = self.new_node(name, display, "Pod", template, parent, boundary, "Pending",
                             f"waiting for ever: {why} (Argo requeues a missing task variable without limit)")
        self.hung.append(node)
        return node

    def finish(self, node: NodeStatus, phase: str, message: str = "") -> None:
        node.phase, node.finished = phase, self.now
        if message:
            node.message = message
        self.emit(node)

    def emit(self, node: NodeStatus) -> None:
        if self.on_node is not None and node.fulfilled:
            self.on_node(node)
        if self.on_event is None or node.type in ("DAG", "Steps", "StepGroup", "TaskGroup", "Retry"):
            return
        ran = self._main_start.get(node.id)
        took = f" {max(0.0, (node.finished or self.now) - ran):g}s" if ran is not None else ""
        why = f": {node.message}" if node.message and node.phase != "Succeeded" else ""
        self.on_event(f"[{self.now:7.1f}s] {_SYMBOL.get(node.phase, '?')} {node.display_name} {node.template} "
                      f"{node.phase}{took}{why}")

    # -- template calls ----------------------------------------------------------------------------------------
    def execute(self, call: Call) -> NodeStatus:
        """Create the node for a template call and run it (or fail it) as Argo's executeTemplate does."""
        tmpl = self.templates[call.template]
        kind = "Retry" if "retryStrategy" in tmpl else self._kind(tmpl)
        node = self.new_node(call.name, call.display, kind, call.template, call.parent, call.boundary)
        try:
            if call.depth > MAX_DEPTH:
                raise ResolveError("Maximum recursion depth exceeded. See https://argo-workflows.readthedocs.io/"
                                   "en/latest/scaling/#maximum-recursion-depth")
            node.inputs = self._inputs(tmpl, call.args, call.template)
        except ResolveError as err:
            self.finish(node, "Error", str(err))
            self.at(self.now, lambda: call.on_done(node))
            return node
        if kind == "Retry":
            self._attempt(call, tmpl, node, 0)
        else:
            self._run(call, tmpl, node, 0, call.on_done)
        return node

    @staticmethod
    def _kind(tmpl: dict[str, Any]) -> str:
        return {"container": "Pod", "dag": "DAG", "steps": "Steps"}[
            next(k for k in ("container", "dag", "steps") if k in tmpl)]

    def _inputs(self, tmpl: dict[str, Any], args: dict[str, str], name: str) -> dict[str, str]:
        values: dict[str, str] = {}
        for param in (tmpl.get("inputs") or {}).get("parameters") or []:
            pname = param["name"]
            if pname in args:
                values[pname] = args[pname]
            elif "value" in param:
                values[pname] = substitute(render_item(param["value"]), self.globals)
            elif "default" in param:
                values[pname] = substitute(render_item(param["default"]), self.globals)
            else:
                raise ResolveError(f"inputs.parameters.{pname} was not supplied")
        return values

    def scope_for(self, node: NodeStatus, call: Call, attempt: int = 0) -> Scope:
        flat = {f"inputs.parameters.{k}": v for k, v in node.inputs.items()}
        flat["inputs.parameters"] = json.dumps([{"name": k, "value": v} for k, v in node.inputs.items()])
        flat.update({"node.name": node.name, "pod.name": self.pod_name(node), "retries": str(attempt)})
        return self.globals.child(flat)

    def pod_name(self, node: NodeStatus) -> str:
        """Argo v2 pod names: <workflow>-<template>-<node id hash>."""
        return f"{self.wf_name}-{node.template}-{node.id.rsplit('-', 1)[1]}"[:253]

    def _caps_for(self, call: Call, tmpl: dict[str, Any], kind: str) -> list[Cap]:
        caps = []
        if call.boundary is not None and call.boundary.cap is not None:
            caps.append(call.boundary.cap)
        sync = tmpl.get("synchronization") or {}
        for sem in sync.get("semaphores") or []:
            ref = sem.get("configMapKeyRef") or {}
            key = f"{ref.get('name')}/{ref.get('key')}"
            if key not in self.sem_caps:
                raise UnsupportedConstruct(f"spec.templates[{call.template}].synchronization: semaphore {key!r} has "
                                           "no limit; pass run_workflow(..., semaphores={'" + key + "': N})")
            caps.append(self.sem_caps[key])
        for mutex in sync.get("mutexes") or []:
            caps.append(self.sem_caps.setdefault(f"mutex/{mutex.get('name')}", Cap(f"mutex {mutex.get('name')}", 1)))
        if kind == "Pod" and self.pod_cap is not None:
            caps.append(self.pod_cap)
        return caps

    def _run(self, call: Call, tmpl: dict[str, Any], node: NodeStatus, attempt: int,
             done: Callable[[NodeStatus], None]) -> None:
        """Wait for the caps, then run the container/DAG/steps body; release the caps when the node ends."""
        kind = node.type
        caps = self._caps_for(call, tmpl, kind)

        def finished(n: NodeStatus) -> None:
            self.caps.release(caps)
            done(n)

        def start() -> None:
            node.phase = "Running"
            scope = self.scope_for(node, call, attempt)
            if kind == "Pod":
                self._start_pod(call, tmpl, node, scope, attempt, finished)
            else:
                self.start_invocation(self, call, tmpl, node, scope, finished)

        self.caps.acquire(caps, lambda: self.at(self.now, start))

    # -- retries -----------------------------------------------------------------------------------------------
    def _attempt(self, call: Call, tmpl: dict[str, Any], retry: NodeStatus, attempt: int) -> None:
        strategy = tmpl["retryStrategy"]
        name = f"{call.name}({attempt})"
        child = self.new_node(name, f"{call.display}({attempt})", self._kind(tmpl), call.template, retry,
                              call.boundary)
        child.inputs = dict(retry.inputs)
        retry.phase = "Running"

        def done(node: NodeStatus) -> None:
            try:
                limit = int(substitute(render_item(strategy.get("limit", 0)), self.scope_for(retry, call)))
            except (ResolveError, ValueError) as err:
                limit, retry.message = 0, f"retryStrategy.limit: {err}"
            policy = strategy.get("retryPolicy", "OnFailure")
            wanted = {"Always": ("Failed", "Error"), "OnFailure": ("Failed",), "OnError": ("Error",),
                      "OnTransientError": ("Error",)}[policy]
            past_deadline = self.deadline is not None and self.now >= self.deadline and not call.exit_handler
            if node.phase == "Succeeded" or node.phase not in wanted or attempt >= limit or past_deadline:
                retry.outputs = dict(node.outputs)
                retry.exit_code = node.exit_code
                self.finish(retry, node.phase, node.message)
                call.on_done(retry)
                return
            backoff = strategy.get("backoff") or {}
            delay = 0.0
            if backoff.get("duration") is not None:
                delay = parse_duration(backoff["duration"], "retryStrategy.backoff.duration") * \
                    float(backoff.get("factor", 1)) ** attempt
            if backoff.get("maxDuration") is not None:
                first = self.nodes[retry.children[0]]
                if self.now + delay > first.started + parse_duration(backoff["maxDuration"], "maxDuration"):
                    self.finish(retry, node.phase, "Max duration limit exceeded")
                    call.on_done(retry)
                    return
            self.at(self.now + delay, lambda: self._attempt(call, tmpl, retry, attempt + 1))

        self._run(call, tmpl, child, attempt, done)

    # -- pods --------------------------------------------------------------------------------------------------
    def _start_pod(self, call: Call, tmpl: dict[str, Any], node: NodeStatus, scope: Scope, attempt: int,
                   done: Callable[[NodeStatus], None]) -> None:
        container = tmpl["container"]
        try:
            image = substitute(str(container.get("image", "")), scope)
            command = [render_item(c) for c in substitute_all(list(container.get("command") or []), scope)]
            args = [render_item(a) for a in substitute_all(list(container.get("args") or []), scope)]
            env = {e["name"]: substitute(render_item(e.get("value", "")), scope) for e in container.get("env") or []}
            limits = [(parse_duration(substitute(render_item(tmpl[k]), scope), k), DEADLINE_MSG)
                      for k in ("activeDeadlineSeconds", "timeout") if k in tmpl]
        except ResolveError as err:
            self.finish(node, "Error", str(err))
            self.at(self.now, lambda: done(node))
            return
        if self.deadline is not None and not call.exit_handler:
            if self.now >= self.deadline:
                self.finish(node, "Failed", WF_DEADLINE_MSG)
                self.at(self.now, lambda: done(node))
                return
            limits.append((self.deadline - self.now, WF_DEADLINE_MSG))
        self.pods_started += 1
        if self.pods_started > self.max_pods:
            raise Abort(f"max_pods ({self.max_pods}) exceeded")
        self.active_pods += 1
        self.max_active = max(self.max_active, self.active_pods)
        pod_start = self.now
        self._main_start[node.id] = pod_start + self.overhead
        result = self.runner(PodRequest(node_name=node.name, template=call.template, image=image, command=command,
                                        args=args, env=env, inputs=dict(node.inputs),
                                        start_time=pod_start + self.overhead, attempt=attempt,
                                        workflow=dict(self.wf_meta),
                                        kill_time=pod_start + min(s for s, _ in limits) if limits else None))
        end = pod_start + self.overhead + max(0.0, float(result.duration_s))
        killed = ""
        for limit, message in limits:
            if pod_start + limit < end:
                end, killed = pod_start + limit, message

        keep_result = result_referenced(call.name, getattr(call.boundary, "tmpl", None))

        def finish_pod() -> None:
            self.active_pods -= 1
            self._pod_outputs(tmpl, node, result, scope, killed, keep_result)
            done(node)

        self.at(end, finish_pod)

    def _pod_outputs(self, tmpl: dict[str, Any], node: NodeStatus, result: PodResult, scope: Scope,
                     killed: str, keep_result: bool) -> None:
        if killed:
            self.finish(node, "Failed", killed)
            return
        node.exit_code = result.exit_code
        phase = "Error" if result.error else ("Failed" if result.exit_code != 0 else "Succeeded")
        message = "pod error" if result.error else (f"Error (exit code {result.exit_code})" if phase == "Failed"
                                                    else "")
        params: dict[str, str] = {}
        for param in (tmpl.get("outputs") or {}).get("parameters") or []:
            value_from = param.get("valueFrom") or {}
            path = value_from.get("path")
            if "value" in param:
                params[param["name"]] = substitute(render_item(param["value"]), scope, strict=False)
            elif path is not None and path in result.files:
                params[param["name"]] = result.files[path]
            elif "default" in value_from:
                params[param["name"]] = render_item(value_from["default"])
            elif path is None:
                raise UnsupportedConstruct(f"spec.templates[{node.template}].outputs.parameters[{param['name']}]: "
                                           "container outputs need valueFrom.path")
            elif phase == "Succeeded":
                phase, message = "Error", f"Error (exit code 1): open {path}: no such file or directory"
        node.outputs = {"parameters": params} if params else {}
        if keep_result:
            node.outputs["result"] = result.stdout.strip()
        node.outputs["exitCode"] = str(result.exit_code)
        self.finish(node, phase, message)


__all__ = ["Abort", "Call", "Engine", "MAX_DEPTH", "fnv_id", "result_referenced", "step_or_task_name"]

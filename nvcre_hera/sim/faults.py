"""Which injected faults a job meets, and what they do to it (shared/reference/fault-localization.md §4.9).

Pure: the spec's fault list plus the job's nodes and random stream in, an `ActiveFaults` summary out. The
performance model (model.py) reads the capacity factors; the cluster (cluster.py) reads the events.

| kind            | modelled as                                                                                |
|-----------------|--------------------------------------------------------------------------------------------|
| slow-nic        | node's scale-out capacity × factor: multi-node tests and loopback, not NVLink-only tests   |
| slow-gpu        | node's GPU rate × factor: intra-node tests, NVLink/clique groups, training; multi-node by min; DCGM targeted_stress fails when factor < 0.8 |
| nvlink-degraded | node's NVLink capacity × factor: intra-node, loopback_nvswitch, MNNVL cliques; multi-node by min |
| flapping        | slow-nic present with `probability` per job (default 0.5)                                  |
| link            | groups holding both `nodes` run their scale-out path at × factor                            |
| socket-fallback | any network path of the group runs NET/Socket at ~3 GB/s                                   |
| crash           | the job exits 1 part-way (mpirun abort / torchrun error)                                   |
| hang            | output stops after init; the job never ends (TimedOut, or Stalled for training)             |
| nccl-error      | NCCL WARN + "Test NCCL failure", exit 1 (NCCL tests and training)                          |
| data-corruption | #wrong > 0 on every size, "Out of bounds values : N FAILED", exit 1                         |
| unschedulable, not-ready | the Node turns bad at `atSecond` on the global clock (default 0)                   |
| dcgm-fail       | `dcgmi diag` reports Fail for `test` (default memory) on `gpus` (default [0])              |
| nan-loss        | training `lm loss: nan` from mid-run on, "number of nan iterations" counting up            |

`probability` (any non-health kind) makes a fault intermittent: drawn once per job from the job's random stream.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from nvcre_hera.sim.spec import HEALTH_KINDS, SCHEDULING_KINDS, STEP_KINDS, FaultSpec

# How a NIC link looks when NCCL falls back to TCP sockets (a 2-node V100 socket run reads ~3 GB/s busbw).
SOCKET_BUSBW_GBPS = 3.0
# slow-gpu below this factor makes DCGM's targeted_stress miss its GFLOPS target.
DCGM_SLOW_GPU_THRESHOLD = 0.8


@dataclass(frozen=True)
class NodeCaps:
    """Capacity factors of one node's components for one job (1.0 = healthy)."""

    nic: float = 1.0
    gpu: float = 1.0
    nvlink: float = 1.0


@dataclass
class ActiveFaults:
    """What the faults active in one job do to it."""

    caps: dict[str, NodeCaps] = field(default_factory=dict)
    links: list[tuple[str, str, float]] = field(default_factory=list)
    socket: set[str] = field(default_factory=set)
    crash: set[str] = field(default_factory=set)
    hang: set[str] = field(default_factory=set)
    nccl_error: set[str] = field(default_factory=set)
    corruption: dict[str, int] = field(default_factory=dict)  # node -> #wrong per size (0 = derived from size)
    dcgm: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)  # node -> [(test, gpu, why)]
    nan_loss: set[str] = field(default_factory=set)

    def cap(self, node: str) -> NodeCaps:
        return self.caps.get(node, NodeCaps())

    @property
    def first_crash(self) -> str | None:
        return min(self.crash) if self.crash else None


def active_faults(faults: list[FaultSpec], nodes: list[str], rng: random.Random) -> ActiveFaults:
    """The faults a job on `nodes` meets. Draws one number per fault, in order, so adding a fault elsewhere in the
    list does not reshuffle the draws of the ones before it."""
    members = set(nodes)
    out = ActiveFaults()
    for fault in faults:
        draw = rng.random()
        if fault.kind in HEALTH_KINDS or fault.kind in STEP_KINDS or fault.kind in SCHEDULING_KINDS or \
                not set(fault.members) <= members:
            continue
        if draw >= fault.effective_probability:
            continue
        node, factor = fault.members[0], fault.effective_factor
        caps = out.cap(node)
        if fault.kind in ("slow-nic", "flapping"):
            out.caps[node] = NodeCaps(min(caps.nic, factor), caps.gpu, caps.nvlink)
        elif fault.kind == "slow-gpu":
            out.caps[node] = NodeCaps(caps.nic, min(caps.gpu, factor), caps.nvlink)
            if factor < DCGM_SLOW_GPU_THRESHOLD:
                why = f"achieved {factor:.0%} of the expected GFLOPS"
                out.dcgm.setdefault(node, []).extend(("targeted_stress", g, why) for g in (fault.gpus or [0]))
        elif fault.kind == "nvlink-degraded":
            out.caps[node] = NodeCaps(caps.nic, caps.gpu, min(caps.nvlink, factor))
        elif fault.kind == "link":
            a, b = fault.members
            out.links.append((a, b, factor))
        elif fault.kind == "socket-fallback":
            out.socket.add(node)
        elif fault.kind == "crash":
            out.crash.add(node)
        elif fault.kind == "hang":
            out.hang.add(node)
        elif fault.kind == "nccl-error":
            out.nccl_error.add(node)
        elif fault.kind == "data-corruption":
            out.corruption[node] = fault.wrong or 0
        elif fault.kind == "dcgm-fail":
            test = (fault.test or "memory").lower()
            out.dcgm.setdefault(node, []).extend((test, g, "injected") for g in (fault.gpus or [0]))
        elif fault.kind == "nan-loss":
            out.nan_loss.add(node)
    return out


def health_events(faults: list[FaultSpec]) -> dict[str, list[tuple[float, str]]]:
    """Node -> sorted [(second, "Unschedulable" | "NotReady")] from the health faults."""
    out: dict[str, list[tuple[float, str]]] = {}
    for fault in faults:
        if fault.kind in HEALTH_KINDS:
            state = "Unschedulable" if fault.kind == "unschedulable" else "NotReady"
            out.setdefault(fault.members[0], []).append((fault.at_second or 0.0, state))
    for events in out.values():
        events.sort()
    return out


def health_at(events: dict[str, list[tuple[float, str]]], node: str, t: float) -> list[str]:
    """The bad states `node` is in at second `t` (empty = healthy)."""
    return sorted({state for at, state in events.get(node, []) if at <= t})


def first_health_event(
    events: dict[str, list[tuple[float, str]]], nodes: list[str], start: float, end: float
) -> tuple[float, dict[str, str]] | None:
    """The earliest moment in [start, end] a node of `nodes` is bad, and which nodes are bad then.

    A node already bad at `start` counts at `start` (a watcher sees it on its first look)."""
    first: float | None = None
    for node in nodes:
        for at, _ in events.get(node, []):
            moment = max(at, start)
            if moment <= end and (first is None or moment < first):
                first = moment
    if first is None:
        return None
    bad = {node: health_at(events, node, first)[0] for node in nodes if health_at(events, node, first)}
    return first, bad


__all__ = [
    "ActiveFaults",
    "DCGM_SLOW_GPU_THRESHOLD",
    "NodeCaps",
    "SOCKET_BUSBW_GBPS",
    "active_faults",
    "first_health_event",
    "health_at",
    "health_events",
]

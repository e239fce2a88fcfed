"""The performance and duration model of the simulated cluster (shared/reference/fault-localization.md §4.2–4.7).

Pure functions. A group's busbw is the min-model of §4.2: the collective runs at the rate of its slowest member and
of the slowest link between members, on the path the test exercises:

* single-node all-reduce / all-gather / alltoall and `loopback_nvswitch`: NVLink and the GPUs, never the NIC;
* `loopback` (NCCL_SHM_DISABLE/P2P_DISABLE): the node's own NICs, never its NVLink or GPU rate;
* multi-node: the scale-out ring, bounded by every member's NICs, every link between members, and (where lower)
  every member's NVLink/GPU rate;
* GB200/GB300: a group entirely inside one `nvidia.com/gpu.clique` runs over MNNVL at clique speed **only when the
  job sets enableMNNVL** (NCCL_MNNVL_ENABLE=1, as NVCRE's Certification does: default false, which NVCRE uses for
  its "MNNVL off" fabric screen); otherwise, or across cliques, it is scale-out bound (~200 GB/s).

Baselines are public figures (§4.5): H100 ≈ 470 GB/s in a node, ≈ 370 GB/s ring across 2 nodes falling slowly with
scale (≈ 348 at 16, ≈ 333 at 64); GB300 NVL72 ≈ 932 GB/s at 16 trays; GB200/GB300 scale-out ≈ 200 GB/s.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nvcre_hera.sim.faults import SOCKET_BUSBW_GBPS, ActiveFaults

# arch -> (intra-node all-reduce busbw, scale-out ring busbw at 2 nodes, clique busbw at 2 trays, at 18 trays) GB/s
BASELINES: dict[str, tuple[float, float, float | None, float | None]] = {
    "h100": (470.0, 370.0, None, None),
    "h200": (475.0, 370.0, None, None),
    "b200": (760.0, 370.0, None, None),
    "a100": (230.0, 185.0, None, None),
    "gb200": (740.0, 200.0, 811.0, 900.0),
    "gb300": (800.0, 200.0, 860.0, 937.0),
}
# Scale-out efficiency per platform fabric (GCP TCPXO reads ~338 GB/s on 2 A3 Mega nodes).
PLATFORM_NET = {"aws": 0.98, "gcp": 0.92, "azure": 1.0, "oci": 0.98, "onprem": 1.0}
# Extra small-message latency per platform fabric, µs (EFA ≈ 77 µs, A3 Mega ≈ 123 µs at 8 B on 2 nodes).
PLATFORM_LATENCY_US = {"aws": 45.0, "gcp": 95.0, "azure": 0.0, "oci": 5.0, "onprem": 0.0}
# Within an NVLink domain the other collectives reach a fraction of all-reduce (NVLS helps all-reduce most).
NVLINK_TEST_FACTOR = {"all_reduce": 1.0, "all_gather": 0.80, "alltoall": 0.75, "loopback_nvswitch": 1.0}
LOOPBACK_FACTOR = 0.9  # the NIC path inside one node: the NICs' rate, less the PCIe round trip
MAX_MEASURE_S = 900.0  # a socket-fallback sweep would take hours; the simulator stops the clock at 15 min
DCGM_LEVEL4_S = 2700.0  # targeted_power + targeted_stress at 1200 s each, plus the rest: ≈ 45 min
TRAINING_TFLOPS = {"h100": 450.0, "h200": 480.0, "b200": 950.0, "a100": 200.0, "gb200": 1050.0, "gb300": 1250.0}
TRAINING_TOKENS_PER_GPU = 2 * 8192  # two micro-batches of one 8k sequence per GPU and step
COMM_SHARE_NET, COMM_SHARE_NVLINK = 0.12, 0.08  # exposed communication share of a step (Amdahl)


@dataclass(frozen=True)
class Estimate:
    """A group's expected busbw (before noise) and the path it took."""

    busbw: float
    path: str  # "nvlink" | "clique" | "net" | "loopback" | "socket"
    bottleneck: str = ""  # what bounds it, for debugging ("gpu-node-07 nic", "link a-b", "scale-out")


def bus_factor(test: str, ranks: int) -> float:
    """busbw / algbw: 2(n-1)/n for all-reduce, (n-1)/n for all-gather and alltoall."""
    if ranks <= 1:
        return 1.0
    if test in ("all_gather", "alltoall"):
        return (ranks - 1) / ranks
    return 2 * (ranks - 1) / ranks


def scale_efficiency(nodes: int) -> float:
    """η_net falls slowly with scale: 1.0 at 2 nodes, 0.94 at 16, 0.90 at 64."""
    return max(0.7, 1.0 - 0.02 * math.log2(max(nodes, 2) / 2))


def clique_busbw(arch: str, nodes: int) -> float:
    """MNNVL all-reduce inside one NVL72 clique, log-interpolated between 2 and 18 trays."""
    _, _, two, full = BASELINES[arch]
    if two is None or full is None:
        raise ValueError(f"{arch} has no multi-node NVLink domain")
    x = min(max(math.log2(max(nodes, 2) / 2) / math.log2(9), 0.0), 1.0)
    return two + (full - two) * x


def in_one_clique(nodes: list[str], cliques: dict[str, str | None]) -> bool:
    values = {cliques.get(n) for n in nodes}
    return len(values) == 1 and None not in values


def expected_busbw(
    test: str,
    nodes: list[str],
    gpus_per_node: int,
    arch: str,
    platform: str,
    faults: ActiveFaults,
    cliques: dict[str, str | None] | None = None,
    enable_mnnvl: bool = False,
) -> Estimate:
    """The min-model value for one NCCL test on one group (see the module docstring for the paths)."""
    intra, scaleout, _, _ = BASELINES[arch]
    net = scaleout * PLATFORM_NET.get(platform, 1.0)
    caps = {n: faults.cap(n) for n in nodes}
    compute = {n: min(c.gpu, c.nvlink) for n, c in caps.items()}

    def _min(candidates: list[tuple[float, str]]) -> Estimate:
        value, why = min(candidates, key=lambda c: c[0])
        return Estimate(value, path, why)

    if test == "loopback":
        node = nodes[0]
        if node in faults.socket:
            return Estimate(SOCKET_BUSBW_GBPS, "socket", f"{node} socket")
        path = "loopback"
        return _min([(net * LOOPBACK_FACTOR, "nics"), (net * LOOPBACK_FACTOR * caps[node].nic, f"{node} nic")])
    factor = NVLINK_TEST_FACTOR.get(test, 1.0)
    if len(nodes) == 1 or test == "loopback_nvswitch":
        path = "nvlink"
        node = nodes[0]
        return _min([(intra * factor, "nvlink"), (intra * factor * compute[node], f"{node} gpu/nvlink")])
    if enable_mnnvl and BASELINES[arch][2] is not None and in_one_clique(nodes, cliques or {}):
        path = "clique"
        base = clique_busbw(arch, len(nodes)) * factor
        return _min([(base, "clique")] + [(base * compute[n], f"{n} gpu/nvlink") for n in nodes])
    socket = sorted(faults.socket & set(nodes))
    if socket:
        return Estimate(SOCKET_BUSBW_GBPS, "socket", f"{socket[0]} socket")
    path = "net"
    bound = net * scale_efficiency(len(nodes))
    member_caps: list[tuple[float, str]] = [(bound, "scale-out")]
    if test == "alltoall":
        ranks = len(nodes) * gpus_per_node
        bound = (net / gpus_per_node) * (ranks - 1) / max(ranks - gpus_per_node, 1)
        member_caps = [(bound, "scale-out")]
    member_caps += [(bound * caps[n].nic, f"{n} nic") for n in nodes]
    member_caps += [(intra * factor * compute[n], f"{n} gpu/nvlink") for n in nodes]
    member_caps += [(bound * f, f"link {a}-{b}") for a, b, f in faults.links if a in caps and b in caps]
    return _min(member_caps)


def latency_us(path: str, nodes: int, platform: str) -> float:
    """Small-message time floor of one collective, µs."""
    if path == "nvlink":
        return 14.0
    if path == "clique":
        return 18.0 + 2.0 * math.log2(max(nodes, 1))
    if path == "socket":
        return 180.0
    return 25.0 + 10.0 * math.log2(max(nodes, 2)) + PLATFORM_LATENCY_US.get(platform, 0.0)


def sizes(max_bytes: int, min_bytes: int = 8, max_rows: int = 40) -> list[int]:
    """nccl-tests' -b .. -e .. -f 2 sweep, raising the start when it would print more than `max_rows` rows."""
    max_bytes = max(int(max_bytes), min_bytes)
    rows = int(math.log2(max_bytes / min_bytes)) + 1
    if rows > max_rows:
        min_bytes <<= rows - max_rows
    out, size = [], min_bytes
    while size <= max_bytes:
        out.append(size)
        size *= 2
    return out


def collective_time_us(size: int, busbw: float, factor: float, alpha_us: float) -> float:
    """t = α + S·F / busbw, so that busbw → the modelled value as S grows."""
    return alpha_us + size * factor / (max(busbw, 1e-6) * 1e3)


def nccl_measure_s(sweep: list[int], busbw: float, factor: float, alpha_us: float, iters: int, cycles: int) -> float:
    """Seconds spent sweeping: per size and cycle, 5 warm-up + `iters` out-of-place + `iters` in-place + a check."""
    per_cycle = sum((5 + 2 * iters + 3) * collective_time_us(s, busbw, factor, alpha_us) for s in sweep) / 1e6
    return min(per_cycle * max(cycles, 1) + 0.2 * len(sweep), MAX_MEASURE_S)


def startup_s(nodes: int) -> tuple[float, float, float]:
    """(gang scheduling, MPI/torchrun launch, NCCL init) seconds (§4.7)."""
    sched = min(30.0, 5.0 + 0.4 * nodes)
    launch = min(40.0, 6.0 + 2.0 * math.log2(nodes + 1))
    init = 1.0 + 0.06 * nodes
    return sched, launch, init


def model_params(category: str) -> float:
    """Parameters of a training category's model, from its name (nemotron5-56b -> 56e9); 8e9 when unnamed."""
    match = re.search(r"(\d+(?:\.\d+)?)b\b", category.lower())
    return float(match.group(1)) * 1e9 if match else 8e9


def training_rate(
    arch: str, nodes: list[str], faults: ActiveFaults, net_busbw: float | None, healthy_net_busbw: float | None
) -> float:
    """TFLOP/s per GPU: the slowest GPU gates every step; exposed NVLink and network time stretch it (Amdahl)."""
    base = TRAINING_TFLOPS[arch]
    gpu = min(faults.cap(n).gpu for n in nodes)
    nvlink = min(faults.cap(n).nvlink for n in nodes)
    rate = base * gpu / (1 - COMM_SHARE_NVLINK + COMM_SHARE_NVLINK / nvlink)
    if len(nodes) > 1 and net_busbw and healthy_net_busbw:
        ratio = min(net_busbw / healthy_net_busbw, 1.0)
        rate /= 1 - COMM_SHARE_NET + COMM_SHARE_NET / max(ratio, 1e-3)
    return rate


def training_step_s(params: float, tflops_per_gpu: float) -> float:
    """Seconds per step: 6·P·tokens per GPU over the GPU's rate."""
    return 6 * params * TRAINING_TOKENS_PER_GPU / (tflops_per_gpu * 1e12)


__all__ = [
    "BASELINES",
    "DCGM_LEVEL4_S",
    "Estimate",
    "MAX_MEASURE_S",
    "bus_factor",
    "clique_busbw",
    "collective_time_us",
    "expected_busbw",
    "in_one_clique",
    "latency_us",
    "model_params",
    "nccl_measure_s",
    "scale_efficiency",
    "sizes",
    "startup_s",
    "training_rate",
    "training_step_s",
]

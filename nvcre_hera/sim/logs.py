"""Launcher logs in the real tools' formats: nccl-tests (2.17+ layout), `dcgmi diag --json` (DCGM 4.x), Megatron-LM.

Pure writers. Each returns timed lines `(seconds after the job started, text)` so the cluster can show the log as it
was at any moment (a watcher's stall check, a job cut short by a node turning bad); `render` joins them.
Formats follow the samples in shared/data/real/{nccl,dcgm,training}/.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import random
from dataclasses import dataclass, field

from nvcre_hera.sim.model import bus_factor, collective_time_us

TimedLine = tuple[float, str]
NCCL_VERSION = "2.27.7+cuda12.9"
NCCL_TESTS_VERSION = "2.17.6"
SIM_EPOCH = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)  # sim second 0, for timestamps in logs
_RULE = "-" * 74
_COL_HEAD = (
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
)


def render(lines: list[TimedLine], until: float | None = None) -> str:
    """The log text as it stood `until` seconds after the start (all of it for None)."""
    shown = [text for t, text in lines if until is None or t <= until]
    return "\n".join(shown) + ("\n" if shown else "")


def _stamp(seconds: float) -> str:
    return (SIM_EPOCH + _dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def mpirun_abort(rank: int, jobid: int) -> list[str]:
    """What Open MPI's mpirun prints when a rank exits non-zero."""
    return [_RULE, "Primary job  terminated normally, but 1 process returned",
            "a non-zero exit code. Per user-direction, the job has been aborted.", _RULE, _RULE,
            "mpirun detected that one or more processes exited with non-zero status, thus causing",
            "the job to be terminated. The first process to do so was:", "",
            f"  Process name: [[{jobid},1],{rank}]", "  Exit code:    1", _RULE]


@dataclass
class NcclRun:
    """Everything the nccl-tests writer needs; times are seconds after the job started."""

    test: str  # all_reduce | all_gather | alltoall | loopback | loopback_nvswitch
    hosts: list[str]
    gpus_per_node: int
    device: str  # "NVIDIA H100 80GB HBM3"
    sweep: list[int]  # message sizes
    iters: int
    cycles: int
    busbw: float  # the value at the largest size (what the job measured)
    alpha_us: float
    path: str  # nvlink | clique | net | loopback | socket
    network: str | None  # "IB", "AWS Libfabric", "FasTrak", "Socket"; None when no network is initialised
    t_output: float  # the launcher starts printing
    t_init: float  # NCCL init takes this long
    t_measure: float  # the sweep takes this long
    failure: str | None = None  # crash | nccl-error | hang | data-corruption
    failing_node: str | None = None
    wrong: int = 0  # #wrong per size for data-corruption (0: grows with the size)
    roce: bool = False
    socket_hosts: tuple[str, ...] = ()  # hosts that fell back to NET/Socket (the others print the fabric's lines)
    fabric_network: str | None = None   # the platform's network ("IB", "AWS Libfabric", …) the healthy hosts use

    @property
    def ranks(self) -> int:
        return len(self.hosts) * self.gpus_per_node

    @property
    def binary(self) -> str:
        return {"loopback": "all_reduce", "loopback_nvswitch": "all_reduce"}.get(self.test, self.test) + "_perf"


def _nccl_preamble(run: NcclRun, rng: random.Random, pids: list[int]) -> list[str]:
    g = run.gpus_per_node
    lines = [f"Warning: Permanently added '{h}' (ED25519) to the list of known hosts." for h in run.hosts[:64]]
    lines += [f"# nccl-tests version {NCCL_TESTS_VERSION} nccl-headers=22707 nccl-library=22707",
              f"# Collective test starting: {run.binary}",
              f"# nThread 1 nGpus 1 minBytes {run.sweep[0]} maxBytes {run.sweep[-1]} step: 2(factor) warmup iters: 5 "
              f"iters: {run.iters} agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    for rank in range(run.ranks):
        host, dev = run.hosts[rank // g], rank % g
        bus = (0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb)[dev % 8]
        lines.append(f"#  Rank {rank:2d} Group  0 Pid {pids[rank]:6d} on {host:>10} device {dev:2d} "
                     f"[0000:{bus:02x}:00] {run.device}")
    return lines


def _nccl_info(run: NcclRun, pid: int) -> list[str]:
    host = run.hosts[0]
    p = f"{host}:{pid}:{pid} [0] NCCL INFO"
    lines = [f"{p} Bootstrap: Using eth0:10.0.0.1<0>", f"{p} NCCL version {NCCL_VERSION}"]
    if run.network == "Socket" and run.socket_hosts:
        # every process prints its own NET choice (NCCL_DEBUG=INFO): the fallen-back host says so in its own name
        for h in run.hosts:
            hp = f"{h}:{pid}:{pid} [0] NCCL INFO"
            lines += _net_lines(hp, "Socket" if h in run.socket_hosts else run.fabric_network, run.roce)
    else:
        lines += _net_lines(p, run.network, run.roce)
    if run.network:
        lines.append(f"{p} Using network {run.network}")
    if run.path == "clique":
        lines.append(f"{p} MNNVL busId 0x1008000 fabric UUID 7c1f.. cliqueId 0x1 state 3 healthMask 0x0")
    nodes, local = len(run.hosts), run.gpus_per_node
    lines.append(f"{p} comm 0x5581a4c0 rank 0 nRanks {run.ranks} nNodes {nodes} localRanks {local} localRank 0 "
                 f"MNNVL {1 if run.path == 'clique' else 0}")
    via = {"nvlink": "P2P/CUMEM/read", "clique": "P2P/CUMEM", "socket": "NET/Socket/0",
           "loopback": f"NET/{run.network}/0/GDRDMA", "net": f"NET/{run.network}/0/GDRDMA"}[run.path]
    peer = run.gpus_per_node if nodes > 1 and run.path not in ("nvlink", "clique") else 1
    lines.append(f"{p} Channel 00/0 : 0[0] -> {peer % max(run.ranks, 1)}[{peer % local}] via {via}")
    lines.append(f"{p} Connected all rings, use ring PXN 0 GDR 1")
    lines.append(f"{p} ncclCommInitRankConfig comm 0x5581a4c0 rank 0 nranks {run.ranks} cudaDev 0 nvmlDev 0 busId "
                 "18000 commId 0x9e1b4f3a2c7d5e61 - Init COMPLETE")
    return lines


def _net_lines(p: str, network: str | None, roce: bool) -> list[str]:
    """The lines one process prints when NCCL picks its network (prefix `p` names the host)."""
    if network == "Socket":
        return [f"{p} NET/IB : No device found.", f"{p} NET/Socket : Using [0]eth0:10.0.0.1<0>"]
    if network == "AWS Libfabric":
        return [f"{p} NET/OFI Initializing aws-ofi-nccl 1.14.2", f"{p} NET/OFI Selected provider is efa, fabric is "
                "efa-direct (found 32 nics)"]
    if network == "FasTrak":
        return [f"{p} NET/FasTrak plugin initialized, 8 NICs (eth1..eth8)"]
    if network == "IB":
        link = "RoCE" if roce else "IB"
        devs = " ".join(f"[{i}]mlx5_{i}:1/{link}" for i in range(8))
        return [f"{p} NET/IB : Using {devs} ; OOB eth0:10.0.0.1<0>"]
    return []


def _fmt_time(us: float) -> str:
    return f"{us:7.0f}" if us >= 10000.0 else f"{us:7.1f}" if us >= 100.0 else f"{us:7.2f}"


def _row(size: int, run: NcclRun, oop: tuple[float, float, float, int], ip: tuple[float, float, float, int]) -> str:
    redop = "none" if run.test in ("all_gather", "alltoall") else "sum"
    head = f"{size:12d}  {size // 4:12d}  {'float':>8}  {redop:>6}  {-1:6d}"
    cols = "".join(f"  {_fmt_time(t)}  {a:6.2f}  {b:6.2f}  {w:5g}" for t, a, b, w in (oop, ip))
    return head + cols


def _failure_lines(run: NcclRun, pid: int) -> list[str]:
    host = run.failing_node or run.hosts[0]
    if run.failure == "crash":
        return [f"{host}: Test CUDA failure common.cu:1133 'an illegal memory access was encountered'",
                f" .. {host} pid {pid}: Test failure common.cu:1201"]
    if run.path in ("nvlink", "clique"):
        warn = f"{host}:{pid}:{pid + 61} [3] transport/p2p.cc:275 NCCL WARN Cuda failure 'unspecified launch failure'"
    else:
        warn = (f"{host}:{pid}:{pid + 61} [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
                "10.0.0.4<51234> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca mlx5_3")
    return [warn, f"{host}:{pid}:{pid + 61} [3] NCCL INFO transport/net.cc:1302 -> 6",
            f"{host}: Test NCCL failure common.cu:1005 'remote process exited or there was a network error / '",
            f" .. {host} pid {pid}: Test failure common.cu:891"]


def nccl_lines(run: NcclRun, rng: random.Random) -> tuple[list[TimedLine], float]:
    """The launcher log of one nccl-tests job, and when its process ended (inf for a hang)."""
    pids = [rng.randint(1000, 99999) for _ in run.hosts]
    rank_pids = [pids[r // run.gpus_per_node] + r % run.gpus_per_node for r in range(run.ranks)]
    t = run.t_output
    out: list[TimedLine] = [(t, line) for line in _nccl_preamble(run, rng, rank_pids)]
    t += run.t_init
    out += [(t, line) for line in _nccl_info(run, rank_pids[0])]
    fail_rank = run.hosts.index(run.failing_node) * run.gpus_per_node if run.failing_node in run.hosts else 0
    if run.failure == "hang":
        return out, math.inf
    out += [(t, "#"), (t, _COL_HEAD)]
    factor = bus_factor(run.test, run.ranks)
    weights = [collective_time_us(s, run.busbw, factor, run.alpha_us) for s in run.sweep]
    cycles = max(1, min(run.cycles, 20))
    step = run.t_measure / (sum(weights) * cycles)
    stop_at = None
    if run.failure in ("crash", "nccl-error"):
        stop_at = max(1, int(len(run.sweep) * (0.6 if run.failure == "crash" else 0.4)))
    values: list[float] = []
    errors = 0
    for cycle in range(cycles):
        for i, size in enumerate(run.sweep):
            if stop_at is not None and cycle == 0 and i == stop_at:
                t += 1.0
                out += [(t, line) for line in _failure_lines(run, rank_pids[fail_rank])]
                out += [(t + 0.5, line) for line in mpirun_abort(fail_rank, 41830 + pids[0] % 9000)]
                return out, t + 0.5
            t += weights[i] * step
            cells = []
            for _ in range(2):
                if i == len(run.sweep) - 1:  # the headline row: within 0.3 % below the measured value, never above
                    us = collective_time_us(size, run.busbw, factor, 0.0) * (1 + rng.uniform(0.0, 0.003))
                else:  # jitter, but no row beats the headline value (a parser may take the max)
                    us = collective_time_us(size, run.busbw, factor, run.alpha_us) * (1 + rng.uniform(-0.01, 0.01))
                    us = max(us, collective_time_us(size, run.busbw, factor, 0.0))
                alg = size / (us * 1e3)
                wrong = 0
                if run.failure == "data-corruption":
                    wrong = run.wrong or max(1, size // 4 // 64)
                    errors += 1
                cells.append((us, alg, alg * factor, wrong))
                values.append(alg * factor)
            out.append((t, _row(size, run, cells[0], cells[1])))
    ok = f"{errors} FAILED" if errors else "0 OK"
    avg = sum(values) / len(values) if values else 0.0
    out += [(t, f"# Out of bounds values : {ok}"), (t, f"# Avg bus bandwidth    : {avg:g} "), (t, "#"),
            (t, f"# Collective test concluded: {run.binary}"), (t, "#")]
    if errors:
        out += [(t + 0.5, line) for line in mpirun_abort(0, 41830 + pids[0] % 9000)]
    return out, t + 0.5


# --- dcgmi diag --run 4 --json (DCGM 4.x layout) -----------------------------------------------------------------

DCGM_VERSION = "4.5.2"
DRIVER_VERSION = "580.82.07"
DCGM_CATEGORIES = (
    ("Deployment", ("software",)),
    ("Hardware", ("memory", "diagnostic")),
    ("Integration", ("pcie", "nvbandwidth")),
    ("Stress", ("memory_bandwidth", "targeted_stress", "targeted_power", "memtest", "pulse_test")),
)
_DCGM_MESSAGES = {
    "memory": "Memory test failed: DBE (double-bit ECC) errors detected on GPU {gpu}. Drain the GPU and reset it or "
              "reboot the node.",
    "pcie": "GPU {gpu} PCIe replay count violation: 412 replays (limit 32). Check the PCIe link and the riser.",
    "targeted_stress": "GPU {gpu}: unable to achieve the target stress, {why}. Check the GPU clocks and cooling.",
    "targeted_power": "GPU {gpu}: unable to reach the target power; clocks are being throttled for HW Slowdown.",
    "nvbandwidth": "GPU {gpu}: NVLink bandwidth below the expected minimum in the device-to-device test.",
}


def dcgm_json(gpus: int, device_id: str, failures: list[tuple[str, int, str]]) -> str:
    """`dcgmi diag --run 4 --json` output for one node; `failures` = [(test, gpu, why)] mark Fail results."""
    failed: dict[str, dict[int, str]] = {}
    for test, gpu, why in failures:
        if 0 <= gpu < gpus:
            failed.setdefault(test, {})[gpu] = why
    categories = []
    for category, tests in DCGM_CATEGORIES:
        entries = []
        for test in tests:
            results = []
            for gpu in range(gpus):
                result: dict = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": gpu, "status": "Pass"}
                if gpu in failed.get(test, {}):
                    text = _DCGM_MESSAGES.get(test, "Test {test} failed on GPU {gpu}.")
                    message = text.format(gpu=gpu, test=test, why=failed[test][gpu])
                    result["status"] = "Fail"
                    result["warnings"] = [{"error_category": 5, "error_id": 83, "message": message}]
                results.append(result)
            status = "Fail" if test in failed else "Pass"
            entries.append({"name": test, "results": results, "test_summary": {"status": status}})
        categories.append({"category": category, "tests": entries})
    doc = {
        "DCGM Diagnostic": {"test_categories": categories},
        "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": [
            {"entity_id": g, "device_id": device_id, "serial_num": f"165322{g:07d}"} for g in range(gpus)]}],
        "metadata": {"DCGM Version": DCGM_VERSION, "Driver Version Detected": DRIVER_VERSION,
                     "GPU Device IDs Detected": [device_id] * gpus},
        "version": DCGM_VERSION,
    }
    return json.dumps(doc, indent=4)


def dcgm_lines(gpus: int, device_id: str, failures: list[tuple[str, int, str]], t_end: float,
               failure: str | None = None) -> tuple[list[TimedLine], float]:
    """The DCGM job's log: the JSON at the end, an error for a crash, nothing for a hang."""
    if failure == "hang":
        return [], math.inf
    if failure == "crash":
        return [(t_end, "Error: Unable to complete diagnostic for group 2147483647. Return: (-21) Host engine "
                        "connection invalid/disconnected.")], t_end
    return [(t_end, line) for line in dcgm_json(gpus, device_id, failures).splitlines()], t_end


# --- Megatron-LM training -------------------------------------------------------------------------------------------


@dataclass
class TrainingRun:
    hosts: list[str]
    gpus_per_node: int
    max_steps: int
    step_s: float  # seconds per healthy step
    tflops: float  # TFLOP/s per GPU at that step time
    params: float
    t_output: float  # torchrun starts printing
    t_startup: float  # model build, checkpoint-less init
    epoch: float  # sim second of the job start (for timestamps)
    failure: str | None = None  # crash | nccl-error | hang | nan-loss
    fail_at: int = 0  # iteration at which the failure shows
    sigma: float = 0.01
    global_batch: int = field(default=0)
    failing_node: str | None = None  # the host torchrun's ChildFailedError names as the root cause


def training_lines(run: TrainingRun, rng: random.Random) -> tuple[list[TimedLine], float]:
    """Megatron-LM `pretrain_gpt.py --log-interval 1 --log-throughput` output, and when the process ended."""
    world = len(run.hosts) * run.gpus_per_node
    tp = min(run.gpus_per_node, 8 if run.params > 20e9 else 2)
    gbs = run.global_batch or 2 * world
    t = run.t_output
    out: list[TimedLine] = [
        (t, f"using world size: {world}, data-parallel size: {world // tp}, context-parallel size: 1, "
            f"tensor-model-parallel size: {tp}, pipeline-model-parallel size: 1"),
        (t, "> building GPT model ..."),
        (t, f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {int(run.params / tp)}"),
    ]
    t += run.t_startup
    out += [(t, f"[after model, optimizer, and learning rate scheduler are built] datetime: {_stamp(run.epoch + t)} "),
            (t, f"[before the start of training step] datetime: {_stamp(run.epoch + t)} "), (t, "training ...")]
    nan_count, loss = 0, 11.9
    for it in range(1, run.max_steps + 1):
        if run.failure in ("crash", "nccl-error", "hang") and it == run.fail_at:
            if run.failure == "hang":
                return out, math.inf
            t += run.step_s
            out += [(t, line) for line in _torch_failure(run)]
            return out, t
        warm = 2.5 if it == 1 else 1.0
        step = run.step_s * warm * max(0.5, rng.gauss(1.0, run.sigma))
        t += step
        tflops = run.tflops * run.step_s / step
        loss = max(1.5, loss * 0.985 + rng.uniform(-0.02, 0.02))
        nan = run.failure == "nan-loss" and it >= run.fail_at
        nan_count += nan
        lm = "nan" if nan else f"{loss:.6E}"
        grad = "nan" if nan else f"{rng.uniform(0.8, 3.0):.3f}"
        out.append((t, f" [{_stamp(run.epoch + t)}] iteration {it:8d}/{run.max_steps:8d} | consumed samples: "
                       f"{it * gbs:12d} | elapsed time per iteration (ms): {step * 1000:.1f} | throughput per GPU "
                       f"(TFLOP/s/GPU): {tflops:.1f} | learning rate: {3e-4 * min(1.0, it / 10):.6E} | global batch "
                       f"size: {gbs:5d} | lm loss: {lm} | loss scale: 1.0 | grad norm: {grad} | number of skipped "
                       f"iterations: {int(nan):3d} | number of nan iterations: {nan_count:3d} |"))
    t += 2.0
    out.append((t, f"[after training is done] datetime: {_stamp(run.epoch + t)} "))
    return out, t


def _torch_failure(run: TrainingRun) -> list[str]:
    if run.failure == "nccl-error":
        error = ("torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
                 "ProcessGroupNCCL.cpp:3356, remote process exited or there was a network error, NCCL version 2.27.7")
    else:
        error = "RuntimeError: CUDA error: an illegal memory access was encountered"
    return ["[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "/opt/megatron-lm/pretrain_gpt.py", line 356, in <module>',
            f"[rank0]: {error}",
            "E0101 00:00:00.000000 1 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) "
            "local_rank: 0 (pid: 412) of binary: /usr/bin/python",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            *_child_failed_summary(run)]


def _child_failed_summary(run: TrainingRun) -> list[str]:
    """torchrun's failure summary (as real logs print it): the root cause names its host and rank."""
    host = run.failing_node or run.hosts[0]
    rank = run.hosts.index(host) * run.gpus_per_node if host in run.hosts else 0
    rule = "=" * 60
    return [rule, "/opt/megatron-lm/pretrain_gpt.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
            "Root Cause (first observed failure):", "[0]:", "  time      : 2025-01-01_00:00:00",
            f"  host      : {host}", f"  rank      : {rank} (local_rank: 0)", "  exitcode  : 1 (pid: 412)",
            "  error_file: <N/A>",
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", rule]


__all__ = [
    "DCGM_CATEGORIES",
    "NcclRun",
    "SIM_EPOCH",
    "TimedLine",
    "TrainingRun",
    "dcgm_json",
    "dcgm_lines",
    "mpirun_abort",
    "nccl_lines",
    "render",
    "training_lines",
]

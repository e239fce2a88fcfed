"""Benchmark: parse a ~10 MB nccl-tests log (repeated 16-rank all_reduce runs with NCCL_DEBUG=INFO chatter).

Prints `parse 10MB nccl log: X.XX s` and exits 1 when it takes more than 1.0 s (the issue's goal on a 2-core box).
Run: `python bench/bench_parse.py` (best of 3 runs, so one scheduler hiccup does not fail it).
"""

from __future__ import annotations

import sys
import time

from nvcre_hera.parsers import parse_nccl

TARGET_BYTES = 10 * 1024 * 1024
LIMIT_S = 1.0


def _run(n: int) -> list[str]:
    """One realistic launcher log: command, INFO init lines from every rank, header, table, footer."""
    p = "[1,0]<stdout>:"
    out = [f"+ mpirun -np 16 -x NCCL_DEBUG=INFO /opt/nccl-tests/build/all_reduce_perf -b 8 -e 16G -f 2 # run {n}",
           p + "# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 "
               "agg iters: 1 validation: 1 graph: 0", p + "#", p + "# Using devices"]
    for r in range(16):
        out.append(p + f"#  Rank {r:2d} Group  0 Pid {4000 + r:6d} on node-{r // 8:03d} device {r % 8:2d} "
                       f"[0x{r:02x}] NVIDIA H100 80GB HBM3")
    for r in range(16):
        pre = f"[1,{r}]<stdout>:node-{r // 8:03d}:{4000 + r}:{4100 + r} [{r % 8}] NCCL INFO "
        out += [pre + "Bootstrap : Using eth0:10.0.0.1<0>",
                pre + "NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)",
                pre + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB eth0",
                pre + "Using network IB",
                pre + "comm 0x55d0c8f0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0",
                pre + "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
                pre + "Channel 01/0 : 8[0] -> 0[0] [receive] via NET/IB/1/GDRDMA",
                pre + "Connected all rings",
                pre + "Connected all trees",
                pre + "threadThresholds 8/8/64 | 128/8/64 | 512 | 512"]
    out += [p + "#                                                              out-of-place                       in-place",
            p + "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
            p + "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"]
    for k in range(3, 35):
        size = 2**k
        t = 20.0 + size / 2.5e5
        alg = size / t / 1e3
        bus = alg * 2 * 15 / 16
        out.append(p + f"{size:12d}  {size // 4:12d}     float     sum      -1  {t:7.1f}  {alg:6.2f}  {bus:6.2f}"
                       f"      0  {t:7.1f}  {alg:6.2f}  {bus:6.2f}      0")
    out += [p + "# Out of bounds values : 0 OK", p + f"# Avg bus bandwidth    : {100 + n % 7:.3f}", p + "#"]
    return out


def make_log(target: int = TARGET_BYTES) -> str:
    lines: list[str] = []
    size = 0
    n = 0
    while size < target:
        run = _run(n)
        lines += run
        size += sum(len(x) + 1 for x in run)
        n += 1
    return "\n".join(lines) + "\n"


def _best_of_3(text: str) -> tuple[float, dict]:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        res = parse_nccl(text)
        best = min(best, time.perf_counter() - t0)
    return best, res


def main() -> int:
    text = make_log()
    mixed, res = _best_of_3(text)
    assert res["status"] == "ok" and len(res["rows"]) == 32 and res["transport"] == "NET/IB", res["status"]
    print(f"parse {len(text) / 1024 / 1024:.0f}MB nccl log: {mixed:.2f} s")
    # worst case: the same size made of table rows only (the per-line cost is highest on rows)
    table = "\n".join(x for x in text.splitlines() if "NCCL INFO" not in x) + "\n"
    table = (table * (len(text) // len(table) + 1))[: len(text)]
    rows_only, _ = _best_of_3(table)
    print(f"parse {len(table) / 1024 / 1024:.0f}MB nccl log (table rows only): {rows_only:.2f} s")
    return 0 if max(mixed, rows_only) <= LIMIT_S else 1


if __name__ == "__main__":
    sys.exit(main())

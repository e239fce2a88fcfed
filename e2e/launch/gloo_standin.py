"""STAND-IN for Megatron-LM's pretrain_gpt.py: NOT Megatron, no GPU, no model. The launch test binds it at the
path the generated torchrun command names. Each process torchrun starts joins the process group (gloo, the
rendezvous torchrun set up), writes REPORT_DIR/rank-<RANK>.env (rank, world size, hostname, pid, its environment,
NUL-separated), checks one all_reduce of (rank + 1) against the sum it must give, and rank 0 prints
Megatron-style iteration lines whose only figure is the measured time of a small gloo all_reduce per iteration:
they say nothing about training speed. Exit code 1 when the all_reduce sum is wrong.

REPORT_DIR is prepended to this file by the launch test when it writes the copy it binds.
"""

import os
import socket
import sys
import time

ENV = dict(os.environ)  # before torch adds anything


def _arg(flag: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv[:-1] else default


def main() -> int:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    with open(os.path.join(REPORT_DIR, f"rank-{rank}.env"), "wb") as f:  # noqa: F821 (prepended)
        f.write(f"rank={rank}\nsize={world}\nhost={socket.gethostname()}\npid={os.getpid()}\n".encode())
        f.write(b"".join(f"{k}={v}".encode() + b"\0" for k, v in ENV.items()))
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    ok = t.item() == world * (world + 1) / 2
    iters = min(_arg("--train-iters", 3), 3)
    for i in range(1, iters + 1):
        start = time.perf_counter()
        dist.all_reduce(torch.ones(1024))
        ms = (time.perf_counter() - start) * 1e3
        if rank == 0:
            print(f" iteration {i:8d}/{iters:8d} | elapsed time per iteration (ms): {ms:.1f} |", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

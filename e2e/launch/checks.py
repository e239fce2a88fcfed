"""What a launch must show, from the MPIJob manifest and mpi-operator's hostfile alone (never from the generator's
own reasoning): the launcher exits 0; as many ranks as `-np` and as the hostfile's slots add up to; on each worker
exactly its hostfile slots, none on the launcher; every env var the launcher container declares reaches every rank
with its value (that is what `-x` is for: ssh sessions do not inherit the worker's env); the launcher's log
parses (`nvcre_hera.parsers`) as a complete result naming the same ranks on the same hosts.
"""

from __future__ import annotations

from collections import Counter

from e2e.launch import mpi_operator
from e2e.launch.mpijob import LaunchResult
from nvcre_hera.parsers.nccl import parse_nccl


def _np(argv: list[str]) -> int | None:
    for flag in ("-np", "-n", "--np"):
        if flag in argv[:-1]:
            tok = argv[argv.index(flag) + 1]
            return int(tok) if tok.isdigit() else None
    return None


def _declared_env(manifest: dict) -> dict[str, str]:
    container = manifest["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    return {e["name"]: str(e.get("value", "")) for e in container.get("env") or []}


def rank_problems(result: LaunchResult, manifest: dict, ranks_per_process: int = 1) -> list[str]:
    """Exit code, rank count and placement, env: what every MPIJob launch must show. `ranks_per_process`: records
    each mpirun process writes (torchrun: one per local worker)."""
    problems = []
    if result.rc != 0:
        lines = result.log.strip().splitlines()
        ssh = sorted({ln.strip() for ln in lines if ln.startswith("ssh:") or "Host key verification" in ln
                      or "Permission denied" in ln})
        evidence = "\n".join(ssh[:4] or lines[-6:])
        problems.append(f"launcher exit code {result.rc} (want 0):\n{evidence}")
    slots = {line.split()[0].split(".")[0]: int(line.split("slots=")[1])
             for line in result.hostfile.splitlines() if line.strip()}
    np_ = _np(result.launcher_argv)
    want = sum(slots.values())
    if np_ is None:
        problems.append("launcher command has no -np")
    elif np_ != want:
        problems.append(f"-np {np_} but the hostfile's slots add up to {want}")
    got = len(result.ranks)
    if got != want * ranks_per_process:
        problems.append(f"{got} ranks ran, want {want * ranks_per_process} (hostfile slots × {ranks_per_process})")
    per_host = Counter(r["host"] for r in result.ranks)
    for host, n in slots.items():
        if per_host.get(host, 0) != n * ranks_per_process:
            problems.append(f"{host}: {per_host.get(host, 0)} ranks, hostfile says {n} slots")
    for host in set(per_host) - set(slots):
        problems.append(f"{per_host[host]} ranks on {host}, which the hostfile does not name")
    for name, value in sorted(_declared_env(manifest).items()):
        missing = [r["rank"] for r in result.ranks if r["env"].get(name) != value]
        if missing:
            problems.append(f"env {name}={value!r} (launcher container) missing or different in ranks {missing[:8]}")
    return problems


def nccl_log_problems(result: LaunchResult) -> list[str]:
    parsed = parse_nccl(result.log)
    problems = []
    if parsed["status"] != "ok":
        problems.append(f"launcher log parses as {parsed['status']!r}, errors {parsed['errors'][:3]}")
    hosts = {d["rank"]: d["host"] for d in parsed.get("devices") or []}
    if hosts != {r["rank"]: r["host"] for r in result.ranks}:
        problems.append(f"the log's rank→host table {sorted(hosts.items())[:4]}... differs from the ranks' own")
    return problems


def launcher_hostname(manifest: dict) -> str:
    return mpi_operator.pods(manifest)[0].hostname


__all__ = ["launcher_hostname", "nccl_log_problems", "rank_problems"]

"""Process handling for the control plane: free loopback ports, detached starts with logs to files, liveness by
pid *and* start time (a recycled pid is not ours), and stopping a whole process group (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Proc:
    name: str
    pid: int
    start: int  # /proc/<pid>/stat field 22 (clock ticks since boot): pid + start identifies one process
    log: str


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now (the kernel's choice; a race with other starters is possible but harmless:
    the component then fails to bind and `up` reports its log)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may contain spaces or parentheses
    if fields[0] == "Z":  # a zombie has exited
        return None
    return int(fields[19])


def start(name: str, argv: list[str], log: Path, env: dict[str, str], cwd: Path) -> Proc:
    """Start `argv` in its own session (so its group can be signalled) with stdout+stderr appended to `log`."""
    with open(log, "ab") as out:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                             cwd=cwd, start_new_session=True)
    st = start_time(p.pid)
    return Proc(name, p.pid, st if st is not None else -1, str(log))


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child (started by an earlier `up`): init reaps it
        pass


def alive(proc: Proc) -> bool:
    _reap(proc.pid)
    return start_time(proc.pid) == proc.start


def stop(proc: Proc, grace: float = 10.0) -> bool:
    """SIGTERM the process group, SIGKILL it after `grace` seconds. True if the process is gone."""
    if not alive(proc):
        return True
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)  # start_new_session made pid the group id
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(proc):
                return True
            time.sleep(0.05)
    return not alive(proc)


def log_tail(path: str, lines: int = 15) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])

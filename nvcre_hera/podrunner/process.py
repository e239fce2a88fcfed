"""The pod runner as a process: started once per time scale in its own session (it outlives the command that
started it, like the control plane), found by its pid file in the control plane's state directory, stopped by
`nvcre certify --engine argo` when the scale changes and by `make e2e-down` (controlplane.core) with the rest.

Kept apart from argo_run so the control plane can stop the runner without importing the Argo run (which imports
the control plane)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

RUNNER_PID = "podrunner.pid"
RUNNER_SCALE = "podrunner.scale"


def runner_alive(state_dir: Path) -> bool:
    pid_file = state_dir / RUNNER_PID
    try:
        os.kill(int(pid_file.read_text()), 0)
        return True
    except (OSError, ValueError):
        return False


def ensure_runner(state_dir: Path, scale: float) -> None:
    """Start the pod runner in its own session (it outlives this command, like the control plane) unless one runs
    at this time scale; one at another scale is restarted (its scale decides every deadline's meaning)."""
    scale_file = state_dir / RUNNER_SCALE
    if runner_alive(state_dir):
        if scale_file.is_file() and scale_file.read_text().strip() == f"{scale:g}":
            return
        stop_runner(state_dir)
    log = open(state_dir / "logs" / "podrunner.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen([sys.executable, "-m", "nvcre_hera.podrunner", "--state-dir", str(state_dir),
                             "--scale", f"{scale:g}"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (state_dir / RUNNER_PID).write_text(str(proc.pid))
    scale_file.write_text(f"{scale:g}\n")


def stop_runner(state_dir: Path) -> bool:
    if not runner_alive(state_dir):
        return False
    pid = int((state_dir / RUNNER_PID).read_text())
    os.kill(pid, signal.SIGTERM)
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    (state_dir / RUNNER_PID).unlink(missing_ok=True)
    return True


__all__ = ["RUNNER_PID", "RUNNER_SCALE", "ensure_runner", "runner_alive", "stop_runner"]

"""ensure_runner starts the e2e pod runner once per time scale. Popen and the stop are replaced here (no runner
process starts): what is proven is the decision to reuse or restart, not the runner itself (tests/e2e do that)."""

import os

from nvcre_hera.podrunner import process as argo_run


def test_a_runner_at_another_scale_is_restarted(tmp_path, monkeypatch):
    (tmp_path / "logs").mkdir()
    started, stopped = [], []

    class FakeProc:
        pid = os.getpid()  # alive for os.kill(pid, 0), so the runner counts as running

    def popen(argv, **_):
        started.append(argv[argv.index("--scale") + 1])
        return FakeProc()

    def stop(state_dir):
        stopped.append(1)
        (state_dir / argo_run.RUNNER_PID).unlink()
        return True

    monkeypatch.setattr(argo_run.subprocess, "Popen", popen)
    monkeypatch.setattr(argo_run, "stop_runner", stop)
    argo_run.ensure_runner(tmp_path, 200.0)
    argo_run.ensure_runner(tmp_path, 200.0)
    assert started == ["200"] and stopped == []
    argo_run.ensure_runner(tmp_path, 100.0)
    assert started == ["200", "100"] and stopped == [1]

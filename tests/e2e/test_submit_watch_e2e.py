"""`nvcre submit --watch` as a CI gate, through the real Argo Server and controller on loopback: live progress from
the Workflow's nodes, the report card, and the exit code from the verdict (0 PASSED, 1 FAILED). The pod runner runs
the pods against its default simulated cluster (healthy, 16 H100 nodes); a threshold no node can meet makes the
failing run. Runs under `make e2e` (marked e2e)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre_hera.podrunner.process import ensure_runner

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CERT = REPO / "examples" / "certifications" / "intra-node.yaml"


def _submit(cp, cert: Path) -> subprocess.CompletedProcess:
    ensure_runner(Path(cp.state_dir), 100.0)
    env = {**os.environ, "KUBECONFIG": str(cp.admin_kubeconfig), "ARGO_NAMESPACE": cp.namespace,
           "ARGO_SERVER": cp.argo_server.split("://", 1)[-1], "ARGO_TOKEN": f"Bearer {cp.submitter_token}",
           "ARGO_SECURE": "false"}
    return subprocess.run([str(Path(sys.executable).parent / "nvcre"), "submit", str(cert), "--watch",
                           "--wait-timeout", "600", "--poll-interval", "1"], capture_output=True, text=True,
                          env=env, timeout=700, cwd=REPO, check=False)


def test_watch_passes_with_progress_and_card(cp) -> None:
    run = _submit(cp, CERT)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert lines[1].startswith("Argo UI: http") and f"/workflows/{cp.namespace}/intra-node-cert-" in lines[1]
    tests = [ln for ln in lines if ln.startswith("[") and "/16  " in ln]
    assert len(tests) == 32 and all(" ✓ " in ln for ln in tests), tests
    assert "Result:        PASSED" in run.stdout


def test_watch_fails_on_a_failing_threshold(cp, tmp_path: Path) -> None:
    cert = tmp_path / "unreachable.yaml"
    cert.write_text(CERT.read_text().replace("value >= 300", "value >= 100000"))
    assert "value >= 100000" in cert.read_text()
    run = _submit(cp, cert)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    failing = [ln for ln in run.stdout.splitlines() if ln.startswith("[") and " ✗ communication/nccl-loopback" in ln]
    assert len(failing) >= 16 and "Result:        FAILED" in run.stdout

"""flows/: `hera generate yaml flows/` (Hera's own CLI) renders the example as a Workflow and a CronWorkflow equal,
as dicts, to `nvcre compile` of the same file in the workflow and cron forms."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "certification.yaml"
HERA = Path(sys.executable).parent / "hera"
STEP_IMAGE = "ghcr.io/nvcre-hera/nvcre-step:flows-test"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Run the hera CLI once; {file stem: document}."""
    assert HERA.exists(), "hera[cli] (a dev dependency in pyproject.toml) is not installed beside this python"
    out = tmp_path_factory.mktemp("flows")
    env = {k: v for k, v in os.environ.items() if k not in ("ARGO_NAMESPACE",)}
    env["NVCRE_STEP_IMAGE"] = STEP_IMAGE
    proc = subprocess.run([str(HERA), "generate", "yaml", str(ROOT / "flows"), "--to", str(out)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    docs: dict[str, dict] = {}
    for path in sorted(out.rglob("*.yaml")):
        (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
        docs[path.stem] = doc
    return docs


def _compile(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *extra: str) -> dict:
    monkeypatch.delenv("ARGO_NAMESPACE", raising=False)
    assert main(["compile", str(EXAMPLE), "--step-image", STEP_IMAGE, *extra]) == 0
    return yaml.safe_load(capsys.readouterr().out)


def test_flows_render_workflow_and_cron(generated: dict[str, dict]) -> None:
    """The two flows render one document each: the Workflow and the nightly CronWorkflow."""
    assert sorted(d["kind"] for d in generated.values()) == ["CronWorkflow", "Workflow"]


def test_workflow_flow_equals_compile(generated: dict[str, dict], capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """flows/certification.py renders exactly `nvcre compile examples/certification.yaml`."""
    (flow,) = [d for d in generated.values() if d["kind"] == "Workflow"]
    assert flow == _compile(capsys, monkeypatch)


def test_cron_flow_equals_compile(generated: dict[str, dict], capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """flows/nightly.py renders exactly `nvcre compile --as cron --schedule "0 3 * * *"`."""
    (flow,) = [d for d in generated.values() if d["kind"] == "CronWorkflow"]
    assert flow == _compile(capsys, monkeypatch, "--as", "cron", "--schedule", "0 3 * * *")

"""Golden compiled documents, NVCRE style: tests/golden/compile/<case>/{input.yaml, expected.yaml[, args]}.

A reviewer reads the case folder, not this file. `args` (optional, one line, shell words) holds extra
`nvcre compile` flags such as `--as cron --schedule "0 3 * * *"`. Each case runs `nvcre compile` in process with the
step image pinned (`--step-image ghcr.io/nvcre-hera/nvcre-step:golden`), so the goldens do not change with the
package version, and compares the parsed YAML with expected.yaml as dicts (never text).

To regenerate after an intended change: `NVCRE_UPDATE_GOLDEN=1 pytest tests/test_compile_golden.py`, then review
the diff of every expected.yaml by eye before committing it.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main
from nvcre_hera.validate.crd import crd_errors
from nvcre_hera.validate.lint import lint

GOLDEN = Path(__file__).parent / "golden" / "compile"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.yaml").is_file())
UPDATE = os.environ.get("NVCRE_UPDATE_GOLDEN") == "1"
STEP_IMAGE = "ghcr.io/nvcre-hera/nvcre-step:golden"


def _compile(case: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> dict:
    for var in ("ARGO_NAMESPACE", "NVCRE_STEP_IMAGE"):
        monkeypatch.delenv(var, raising=False)
    folder = GOLDEN / case
    extra = shlex.split((folder / "args").read_text()) if (folder / "args").is_file() else []
    code = main(["compile", str(folder / "input.yaml"), "--step-image", STEP_IMAGE, *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return yaml.safe_load(out)


def test_cases_exist() -> None:
    """The issue's cases: announcement, NVCRE inline options, intra-node, intra-rack, cron and template forms."""
    assert {"announcement", "nvcre-inline", "intra-node", "intra-rack", "cron", "template"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_compile_golden(case: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`nvcre compile input.yaml [args]` equals expected.yaml, compared as parsed dicts."""
    doc = _compile(case, capsys, monkeypatch)
    path = GOLDEN / case / "expected.yaml"
    if UPDATE:
        path.write_text(yaml.safe_dump(doc, sort_keys=False, width=120))
    assert doc == yaml.safe_load(path.read_text())


@pytest.mark.parametrize("case", CASES)
def test_golden_is_valid(case: str) -> None:
    """Every expected.yaml passes the strict CRD check and the lint, so a golden never pins a broken document."""
    doc = yaml.safe_load((GOLDEN / case / "expected.yaml").read_text())
    assert crd_errors(doc) == []
    assert lint(doc) == []


def test_forms_differ_only_in_their_envelope() -> None:
    """The cron and template goldens hold the same templates as the plain workflow of the same input."""
    wf = yaml.safe_load((GOLDEN / "announcement" / "expected.yaml").read_text())
    cron = yaml.safe_load((GOLDEN / "cron" / "expected.yaml").read_text())
    tmpl = yaml.safe_load((GOLDEN / "template" / "expected.yaml").read_text())
    assert (wf["kind"], cron["kind"], tmpl["kind"]) == ("Workflow", "CronWorkflow", "WorkflowTemplate")
    assert cron["spec"]["schedules"] == ["0 3 * * *"] and cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert cron["spec"]["workflowSpec"]["templates"] == wf["spec"]["templates"] == tmpl["spec"]["templates"]
    assert cron["metadata"]["name"] == tmpl["metadata"]["name"] == "gpu-cluster-cert"

"""`nvcre` wiring: help lists the subcommands, catalog list, compile to stdout or -o FILE in each form, validate on
the example, and the parse/report subcommands reach their modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nvcre_hera import __version__
from nvcre_hera.catalog import load_catalog
from nvcre_hera.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "certification.yaml"
NVCRE = Path(sys.executable).parent / "nvcre"
SUBCOMMANDS = ("certify", "compile", "validate", "submit", "parse", "report", "catalog")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    """`nvcre --help` names every contract subcommand and exits 0."""
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    for name in SUBCOMMANDS:
        assert name in out, name


def test_binary_help_and_version() -> None:
    """The installed entry point works and reports the package version."""
    proc = subprocess.run([str(NVCRE), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"nvcre-hera {__version__}"


def test_unknown_subcommand_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's usage error is exit 2 too."""
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_catalog_list(capsys: pytest.CaptureFixture[str]) -> None:
    """`nvcre catalog list`: a header and the eight entries, each with its metrics."""
    code, out, _ = _run(capsys, "catalog", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["CATEGORY", "FRAMEWORK", "SCOPE", "METRICS"]
    assert len(lines) == 1 + 8
    entries = load_catalog()
    for line in lines[1:]:
        key = line.split()[0]
        assert line.rstrip().endswith(", ".join(entries[key].metrics)), line
    assert {line.split()[0] for line in lines[1:]} == set(entries)


@pytest.mark.parametrize(("form", "kind"), [("workflow", "Workflow"), ("template", "WorkflowTemplate"),
                                            ("cron", "CronWorkflow")])
def test_compile_to_stdout(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, form: str,
                           kind: str) -> None:
    """`nvcre compile --as FORM` prints one YAML document of that kind, with the chosen step image and namespace."""
    monkeypatch.delenv("ARGO_NAMESPACE", raising=False)
    code, out, err = _run(capsys, "compile", str(EXAMPLE), "--as", form, "--step-image", "reg/img:t",
                          "--namespace", "ns-x")
    assert code == 0, err
    doc = yaml.safe_load(out)
    assert doc["kind"] == kind and doc["metadata"]["namespace"] == "ns-x"
    spec = doc["spec"]["workflowSpec"] if form == "cron" else doc["spec"]
    assert {t["container"]["image"] for t in spec["templates"] if "container" in t} == {"reg/img:t"}


def test_compile_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-o FILE` writes the document (same as stdout), says so on stderr, prints nothing on stdout."""
    target = tmp_path / "wf.yaml"
    code, out, err = _run(capsys, "compile", str(EXAMPLE), "-o", str(target), "--step-image", "img:1")
    assert code == 0 and out == ""
    assert err.strip() == f"wrote Workflow to {target}"
    _, printed, _ = _run(capsys, "compile", str(EXAMPLE), "--step-image", "img:1")
    assert yaml.safe_load(target.read_text()) == yaml.safe_load(printed)


def test_cron_schedule_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """`--schedule` reaches the CronWorkflow."""
    code, out, _ = _run(capsys, "compile", str(EXAMPLE), "--as", "cron", "--schedule", "30 1 * * 0")
    assert code == 0 and yaml.safe_load(out)["spec"]["schedules"] == ["30 1 * * 0"]


def test_step_image_from_environment(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """NVCRE_STEP_IMAGE sets the step image when the flag is not given; the flag wins over it."""
    monkeypatch.setenv("NVCRE_STEP_IMAGE", "env/img:1")
    images = lambda out: {t["container"]["image"] for t in yaml.safe_load(out)["spec"]["templates"]  # noqa: E731
                          if "container" in t}
    assert images(_run(capsys, "compile", str(EXAMPLE))[1]) == {"env/img:1"}
    assert images(_run(capsys, "compile", str(EXAMPLE), "--step-image", "flag/img:2")[1]) == {"flag/img:2"}


def test_namespace_precedence(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """compile: --namespace, then metadata.namespace, then ARGO_NAMESPACE, then nvcre."""
    monkeypatch.delenv("ARGO_NAMESPACE", raising=False)
    ns = lambda *a: yaml.safe_load(_run(capsys, "compile", *a)[1])["metadata"]["namespace"]  # noqa: E731
    assert ns(str(EXAMPLE)) == "nvcre"
    monkeypatch.setenv("ARGO_NAMESPACE", "from-env")
    assert ns(str(EXAMPLE)) == "from-env"
    with_ns = tmp_path / "c.yaml"
    with_ns.write_text(EXAMPLE.read_text().replace("  name: gpu-cluster-cert\n",
                                                   "  name: gpu-cluster-cert\n  namespace: from-meta\n"))
    assert ns(str(with_ns)) == "from-meta"
    assert ns(str(with_ns), "--namespace", "from-flag") == "from-flag"


def test_validate_example(capsys: pytest.CaptureFixture[str]) -> None:
    """`nvcre validate` on the example: exit 0, every form ok, job manifests ok, a final `valid` line."""
    code, out, err = _run(capsys, "validate", str(EXAMPLE))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["Workflow", "WorkflowTemplate", "CronWorkflow"]
    assert all(line.split()[1] == "ok" for line in lines[:3])
    # 2 categories × 5 platforms × 2 sample architectures, all valid
    assert lines[3].split() == ["job", "manifests", "20", "ok"]
    assert lines[-1].startswith(f"{EXAMPLE}: valid (23 documents")


def test_validate_reports_invalid_documents(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """When a check finds a problem, validate prints it on stderr prefixed with the file and exits 1."""
    import nvcre_hera.validate.check as check

    monkeypatch.setattr(check, "lint", lambda doc: ["templates.x: broken on purpose"])
    code, out, err = _run(capsys, "validate", str(EXAMPLE))
    assert code == 1
    assert "Workflow          INVALID" in out
    assert f"{EXAMPLE}: Workflow: templates.x: broken on purpose" in err.splitlines()


def test_parse_wiring(capsys: pytest.CaptureFixture[str]) -> None:
    """`nvcre parse nccl FILE --json` prints the parser's JSON; a missing file is one line, exit 2."""
    log = ROOT / "tests" / "data" / "real" / "nccl" / "04-h100-p5-2node-eks-efa-mpijob-allreduce.txt"
    code, out, _ = _run(capsys, "parse", "nccl", str(log), "--json")
    assert code == 0 and json.loads(out)["status"] == "ok"
    code, out, err = _run(capsys, "parse", "nccl", str(ROOT / "no-such.log"))
    assert code == 2 and out == "" and len(err.splitlines()) == 1


def test_report_wiring(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`nvcre report` renders a report JSON; a file that is not a report is one line, exit 2."""
    golden = ROOT / "tests" / "golden" / "report" / "all-passed" / "expected.json"
    code, out, _ = _run(capsys, "report", str(golden), "--format", "json")
    assert code == 0 and json.loads(out)["kind"] == "CertificationReport"
    code, out, _ = _run(capsys, "report", str(golden))
    assert code == 0 and "Certification Report" in out
    bad = tmp_path / "r.json"
    bad.write_text('{"kind": "Workflow"}')
    code, _, err = _run(capsys, "report", str(bad))
    assert code == 2 and err.startswith(f"nvcre: {bad}: not a CertificationReport") and len(err.splitlines()) == 1
    bad.write_text("{oops")
    code, _, err = _run(capsys, "report", str(bad))
    assert code == 2 and "not JSON (line 1" in err

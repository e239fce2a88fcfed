"""Bad input on the CLI paths of issue 9 item 15: each is exit code 2 and one stderr line that names the flag,
file or field, with no traceback; and `nvcre parse` says by its exit code what the log shows."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from nvcre_hera.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "certification.yaml"
REAL = ROOT / "tests" / "data" / "real"
SIM_CLUSTER = ROOT / "examples" / "clusters" / "crash.yaml"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("nvcre: "), err
    return err.removeprefix("nvcre: ").rstrip("\n")


def test_certify_out_names_an_existing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It was a FileExistsError traceback after the whole run; now one line before anything runs."""
    target = tmp_path / "report"
    target.write_text("keep me")
    code, out, err = _run(capsys, "certify", str(EXAMPLE), "--out", str(target), "--quiet")
    assert code == 2 and out == ""
    assert _one_line(err).startswith(f"--out {target}: exists and is not a folder")
    assert target.read_text() == "keep me"


def test_certify_out_below_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = _run(capsys, "certify", str(EXAMPLE), "--out", str(blocker / "sub"), "--quiet")
    assert code == 2 and _one_line(err).startswith(f"--out {blocker / 'sub'}: cannot create the folder")


@pytest.mark.parametrize("as_kind", [[], ["--as", "workflow"], ["--as", "template"]])
def test_schedule_without_cron_is_refused(capsys: pytest.CaptureFixture[str], as_kind: list[str]) -> None:
    """`compile --schedule` without `--as cron` was silently ignored (a Workflow with no schedule came out)."""
    code, out, err = _run(capsys, "compile", str(EXAMPLE), *as_kind, "--schedule", "0 1 * * *")
    assert code == 2 and out == ""
    line = _one_line(err)
    assert line.startswith("--schedule: ") and "--as cron" in line


def test_schedule_with_cron_is_used(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "compile", str(EXAMPLE), "--as", "cron", "--schedule", "0 1 * * *")
    doc = yaml.safe_load(out)
    assert code == 0 and doc["kind"] == "CronWorkflow" and doc["spec"]["schedules"] == ["0 1 * * *"]


@pytest.mark.parametrize("command", ["certify", "validate", "compile"])
def test_a_simulated_cluster_given_as_the_certification_is_named(capsys: pytest.CaptureFixture[str],
                                                                 command: str) -> None:
    code, out, err = _run(capsys, command, str(SIM_CLUSTER))
    line = _one_line(err)
    assert code == 2 and out == ""
    assert line.startswith(f"{SIM_CLUSTER}: kind: this is a SimulatedCluster file") and "--cluster" in line


@pytest.mark.parametrize(("kind", "path"), [
    ("nccl", REAL / "SOURCES.md"),  # quotes `alltoall_perf` and "Test NCCL failure": read as a failed alltoall
    ("nccl", ROOT / "README.md"),
    ("nccl", REAL / "dcgm" / "02-l40s-x4-dcgm4.2.3-r2-table-pcie-fail-per-gpu-lines.txt"),
    ("dcgm", REAL / "SOURCES.md"),
    ("dcgm", REAL / "nccl" / "06-h100-gcp-a3mega-2node-allreduce-full.txt"),
    ("training", REAL / "SOURCES.md"),
    ("training", REAL / "nccl" / "06-h100-gcp-a3mega-2node-allreduce-full.txt"),
], ids=lambda v: v if isinstance(v, str) else v.name)
def test_parse_a_file_that_is_not_that_log(capsys: pytest.CaptureFixture[str], kind: str, path: Path) -> None:
    code, out, err = _run(capsys, "parse", kind, str(path))
    assert code == 2 and out == ""
    assert _one_line(err).startswith(f"{path}: not a"), err


@pytest.mark.parametrize(("kind", "path", "code"), [
    ("nccl", REAL / "nccl" / "06-h100-gcp-a3mega-2node-allreduce-full.txt", 0),
    ("nccl", REAL / "nccl" / "24-rtx3090-2node-inc-nonzero-wrong-108-FAILED.txt", 1),      # #wrong > 0
    ("nccl", REAL / "nccl" / "13-rtxa6000-2node-init-failure-mpirun-abort.txt", 1),        # no table, a failure
    ("nccl", REAL / "nccl" / "17-gb10-dgx-spark-2node-nccltests2.20-allreduce-partial.txt", 1),  # cut short
    ("dcgm", REAL / "dcgm" / "06-8gpu-dcgm3.1.0-json-with-null-entries-and-warning-prefix.txt", 0),
    ("dcgm", REAL / "dcgm" / "02-l40s-x4-dcgm4.2.3-r2-table-pcie-fail-per-gpu-lines.txt", 1),
    ("training", REAL / "training" / "01-megatron-lm-mixtral8x7b-16xh100-throughput-per-gpu.txt", 0),
    ("training", REAL / "training" / "04-nemo1-gpt7b-tqdm-train-step-timing-nan-loss-checkpoint.txt", 1),
], ids=lambda v: v.name if isinstance(v, Path) else str(v))
@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_parse_exit_code_says_what_the_log_shows(capsys: pytest.CaptureFixture[str], kind: str, path: Path,
                                                 code: int, as_json: list[str]) -> None:
    """It was 0 for every log that parsed, a failed one included; the summary stays on stdout either way."""
    got, out, err = _run(capsys, "parse", kind, str(path), *as_json)
    assert got == code and err == "" and out


@pytest.mark.parametrize(("mutate", "typo", "field"), [
    (lambda d: d["spec"].__setitem__("categores", []), "spec.categores", "categories"),
    (lambda d: d["spec"]["options"].__setitem__("maxBytess", "16G"), "spec.options.maxBytess", "maxBytes"),
    (lambda d: d["spec"]["categories"][1].__setitem__("options", {"numIteration": 5}),
     "spec.categories[1].options.numIteration", "numIterations"),
    (lambda d: d["spec"]["target"].__setitem__("nodeSelecter", {}), "spec.target.nodeSelecter", "nodeSelector"),
    (lambda d: d["spec"].__setitem__("gangScheduler", {"queueLabelKy": "q"}), "spec.gangScheduler.queueLabelKy",
     "queueLabelKey"),
    (lambda d: d["metadata"].__setitem__("nmespace", "x"), "metadata.nmespace", "namespace"),
    (lambda d: d.__setitem__("spek", d.pop("spec")), "spek", "spec"),
], ids=["categories", "maxBytes", "category-numIterations", "nodeSelector", "queueLabelKey", "namespace", "spec"])
def test_unknown_field_suggests_the_nearest(tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate, typo: str,
                                            field: str) -> None:
    data = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    mutate(data)
    path = tmp_path / "cert.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, _, err = _run(capsys, "validate", str(path))
    assert code == 2
    assert _one_line(err) == f"{path}: {typo}: unknown field (did you mean {field!r}?)"


def test_unknown_field_far_from_any_says_no_more(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    data["spec"]["zzqqxx"] = 1
    path = tmp_path / "cert.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, _, err = _run(capsys, "validate", str(path))
    assert code == 2 and _one_line(err) == f"{path}: spec.zzqqxx: unknown field"

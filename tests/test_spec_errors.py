"""Bad input: every case is exit code 2 and ONE stderr line `nvcre: FILE: field.path: what is wrong`, no traceback.

Each case mutates NVIDIA's announcement example (or replaces the file's text) in one way, runs `nvcre validate` and
`nvcre compile` in process, and checks the line names the file and the field path. A few cases run the installed
`nvcre` binary to prove nothing but that line reaches stderr.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from nvcre_hera.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "certification.yaml"
BASE: dict = yaml.safe_load(EXAMPLE.read_text())
NVCRE = Path(sys.executable).parent / "nvcre"

Mutation = Callable[[dict], Any]


def _opts(d: dict) -> dict:
    return d["spec"]["options"]


def _cat(i: int, **options: Any) -> Mutation:
    return lambda d: d["spec"]["categories"][i].__setitem__("options", options)


def _global(**options: Any) -> Mutation:
    return lambda d: _opts(d).update(options)


def _target(**fields: Any) -> Mutation:
    return lambda d: d["spec"]["target"].update(fields)


def _spec(**fields: Any) -> Mutation:
    return lambda d: d["spec"].update(fields)


ALL_REDUCE = {"domain": "communication", "variant": "nccl-all-reduce"}

# (id, mutation, field path the line must name, words the message must contain)
CASES: list[tuple[str, Mutation, str, str]] = [
    ("unknown-top-level", lambda d: d.update(spek={}), "spek", "unknown field"),
    ("unknown-in-spec", _spec(categorys=[]), "spec.categorys", "unknown field"),
    ("unknown-in-options", _global(maxBytess="16G"), "spec.options.maxBytess", "unknown field"),
    ("unknown-in-category-options", _cat(1, maxBytess="16G"), "spec.categories[1].options.maxBytess",
     "unknown field"),
    ("unknown-in-target", _target(nodeSelecter={"a": "b"}), "spec.target.nodeSelecter", "unknown field"),
    ("numIterations-not-int", _global(numIterations="abc"), "spec.options.numIterations", "integer"),
    ("categories-mapping", _spec(categories={}), "spec.categories", "list"),
    ("unknown-domain", lambda d: d["spec"]["categories"][0].update(domain="networking"),
     "spec.categories[0].domain", "unknown domain 'networking'"),
    ("unknown-variant", lambda d: d["spec"]["categories"][0].update(variant="nccl-all-reduce2"),
     "spec.categories[0].variant", "unknown variant 'nccl-all-reduce2'"),
    ("threshold-metric-not-produced", _cat(1, thresholds={"busBandwidthGBps": "value >= 1.0"}),
     "spec.categories[1].options.thresholds.busBandwidthGBps", "does not produce metric"),
    ("thresholds-inline-and-nested", _spec(thresholds={"busBandwidthGBps": "value >= 1.0"}), "spec.thresholds",
     "given both"),
    ("global-threshold-nobody-produces", lambda d: _opts(d)["thresholds"].update(dcgmPassed="value == 1.0"),
     "spec.options.thresholds.dcgmPassed", "no category produces metric"),
    ("cel-does-not-compile", _global(thresholds={"busBandwidthGBps": "value >= "}),
     "spec.options.thresholds.busBandwidthGBps", "CEL syntax error"),
    ("cel-not-boolean", _global(thresholds={"busBandwidthGBps": "value + 1"}),
     "spec.options.thresholds.busBandwidthGBps", "not a bool"),
    ("cel-unknown-variable", _global(thresholds={"busBandwidthGBps": "vaule >= 300.0"}),
     "spec.options.thresholds.busBandwidthGBps", "unknown variable 'vaule'"),
    ("cel-fleet-unknown-field", _global(thresholds={"busBandwidthGBps": "value >= 0.9 * fleet.mean"}),
     "spec.options.thresholds.busBandwidthGBps",
     "unknown field fleet.mean: fleet has fleet.median, fleet.mad, fleet.p10, fleet.count"),
    ("cel-fleet-not-a-number", _cat(0, thresholds={"busBandwidthGBps": "value >= fleet"}),
     "spec.categories[0].options.thresholds.busBandwidthGBps", "use fleet by its fields, e.g. fleet.median"),
    ("cel-fleet-type-error", _global(thresholds={"busBandwidthGBps": "value >= fleet.median + 'x'"}),
     "spec.options.thresholds.busBandwidthGBps", "no matching overload for + on (double, string)"),
    ("fleet-relative-in-diagnose",
     lambda d: (d["spec"].__setitem__("categories", [ALL_REDUCE]),
                _opts(d).update(testScale="diagnose", thresholds={"busBandwidthGBps": "value >= 0.9 * fleet.median"})),
     "spec.options.thresholds.busBandwidthGBps", "is fleet-relative, which testScale diagnose cannot apply"),
    ("duration-with-space", _global(timeoutPerJob="1 hour"), "spec.options.timeoutPerJob", "not a Go duration"),
    ("duration-negative", _cat(0, measurementTimeout="-5m"), "spec.categories[0].options.measurementTimeout",
     "not a Go duration"),
    ("bytes-with-space", _cat(0, maxBytes="16 GB"), "spec.categories[0].options.maxBytes",
     "'16 GB' is not a byte size (digits with an optional K, M, G or T, e.g. 16G)"),
    ("bytes-lowercase", _global(maxBytes="16g"), "spec.options.maxBytes", "not a byte size"),
    ("bytes-zero", _global(maxBytes="0"), "spec.options.maxBytes", "greater than zero"),
    ("no-categories", _spec(categories=[]), "spec.categories", "at least 1"),
    ("65-categories", _spec(categories=[ALL_REDUCE] * 65), "spec.categories", "at most 64"),
    ("option-inline-and-nested", lambda d: (d["spec"].update(maxBytes="8G"), _opts(d).update(maxBytes="8G")),
     "spec.maxBytes", "given both as spec.maxBytes and "
     "spec.options.maxBytes"),
    ("nic-kubernetes-io", _global(nicResourceName="kubernetes.io/foo"), "spec.options.nicResourceName",
     "reserved for native resources"),
    ("nic-k8s-io-subdomain", _cat(0, nicResourceName="foo.k8s.io/bar"),
     "spec.categories[0].options.nicResourceName", "reserved for native resources"),
    ("nic-no-domain", _global(nicResourceName="noslash"), "spec.options.nicResourceName",
     "not an extended resource name"),
    ("label-key-invalid", _global(workloadMetadata={"labels": {"team name": "a"}}),
     "spec.options.workloadMetadata.labels", "not a valid label key"),
    ("label-value-invalid", _cat(0, workloadMetadata={"labels": {"team": "a/b"}}),
     "spec.categories[0].options.workloadMetadata.labels", "not a valid label value"),
    ("label-value-too-long", _global(workloadMetadata={"labels": {"team": "x" * 64}}),
     "spec.options.workloadMetadata.labels", "not a valid label value"),
    ("label-reserved-nvcre", _global(workloadMetadata={"labels": {"nvcre.nvidia.com/x": "a"}}),
     "spec.options.workloadMetadata.labels", "reserved"),
    ("label-reserved-managed-by", _global(workloadMetadata={"labels": {"app.kubernetes.io/managed-by": "me"}}),
     "spec.options.workloadMetadata.labels", "reserved"),
    ("labels-33", _global(workloadMetadata={"labels": {f"k{i}": "v" for i in range(33)}}),
     "spec.options.workloadMetadata.labels", "at most 32 labels"),
    ("cpu-request-over-limit", _global(resources={"requests": {"cpu": "64"}, "limits": {"cpu": "32"}}),
     "spec.options.resources", "requests.cpu (64) exceeds limits.cpu (32)"),
    ("memory-request-over-limit", _cat(1, resources={"requests": {"memory": "800Gi"},
                                                     "limits": {"memory": "500Gi"}}),
     "spec.categories[1].options.resources", "requests.memory (800Gi) exceeds limits.memory (500Gi)"),
    ("negative-cpu", _global(resources={"limits": {"cpu": "-2"}}), "spec.options.resources", "must not be negative"),
    ("not-a-quantity", _global(resources={"requests": {"memory": "lots"}}), "spec.options.resources",
     "not a Kubernetes quantity"),
    ("gang-without-schedulerName", _spec(gangScheduler={"queue": "team-a"}), "spec.gangScheduler.schedulerName",
     "required field is missing"),
    ("gang-misspelled-schedulerName", _spec(gangScheduler={"schedulerNme": "kai-scheduler"}),
     "spec.gangScheduler.schedulerNme", "unknown field"),
    ("nodeSelector-value-not-string", _target(nodeSelector={"strength": 5}), "spec.target.nodeSelector.strength",
     "valid string"),
    ("threshold-not-string", _global(thresholds={"intBW": 5}), "spec.options.thresholds.intBW", "valid string"),
    ("cpu-wrong-type", _global(resources={"requests": {"cpu": [1]}}), "spec.options.resources.requests.cpu",
     "valid string"),
    ("gang-bad-queueLabelKey", _spec(gangScheduler={"schedulerName": "kai-scheduler", "queueLabelKey": "a b"}),
     "spec.gangScheduler.queueLabelKey", "not a valid label key"),
    ("gang-bad-schedulerName", _spec(gangScheduler={"schedulerName": "KAI Scheduler"}),
     "spec.gangScheduler.schedulerName", "not a valid schedulerName"),
    ("bad-priorityClassName", _spec(priorityClassName="High_Priority"), "spec.priorityClassName",
     "not a valid priorityClassName"),
    ("matchExpressions-bad-operator", _target(matchExpressions=[{"key": "a", "operator": "Gt", "values": ["1"]}]),
     "spec.target.matchExpressions[0].operator", "'In', 'NotIn', 'Exists' or 'DoesNotExist'"),
    ("matchExpressions-In-without-values", _target(matchExpressions=[{"key": "a", "operator": "In"}]),
     "spec.target.matchExpressions[0]", "operator In needs at least one value"),
    ("matchExpressions-Exists-with-values",
     _target(matchExpressions=[{"key": "a", "operator": "Exists", "values": ["x"]}]),
     "spec.target.matchExpressions[0]", "takes no values"),
    ("nodeSelector-bad-key", _target(nodeSelector={"gpu present": "true"}), "spec.target.nodeSelector",
     "not a valid label key"),
    ("taint-bad-effect", _target(taintSelectors=[{"key": "k", "effect": "Never"}]),
     "spec.target.taintSelectors[0].effect", "NoSchedule"),
    ("wrong-apiVersion", lambda d: d.update(apiVersion="nvcre.nvidia.com/v1"), "apiVersion",
     "nvcre.nvidia.com/v1alpha1"),
    ("wrong-kind", lambda d: d.update(kind="Workflow"), "kind", "Certification"),
    ("metadata-name-uppercase", lambda d: d["metadata"].update(name="GPU-Cert"), "metadata.name",
     "lowercase DNS label"),
    ("metadata-name-trailing-newline", lambda d: d["metadata"].update(name="gpu\n"), "metadata.name",
     "lowercase DNS label"),
    ("testScale-unsupported", lambda d: d["spec"]["categories"].__setitem__(0, {
        "domain": "communication", "variant": "nccl-loopback", "options": {"testScale": "intra-rack"}}),
     "spec.categories[0].options.testScale", "does not support testScale intra-rack"),
    ("testScale-unknown", _global(testScale="rack"), "spec.options.testScale", "intra-node"),
    ("placement-unknown", _spec(orchestration={"placement": "Floating"}), "spec.orchestration.placement",
     "'Pinned' or 'Unpinned'"),
    ("target-missing", lambda d: d["spec"].pop("target"), "spec.target", "required field is missing"),
    ("bool-as-string", _target(includeUnschedulable="yes"), "spec.target.includeUnschedulable", "boolean"),
    ("diagnoseScreens-twice", _cat(0, diagnoseScreens=["intra", "intra"]),
     "spec.categories[0].options.diagnoseScreens", "names a screen twice"),
    ("diagnoseScreens-unknown", _global(diagnoseScreens=["nvswitch"]), "spec.options.diagnoseScreens[0]",
     "'loopback' or 'intra'"),
    ("diagnoseScreens-three", _global(diagnoseScreens=["loopback", "intra", "loopback"]),
     "spec.options.diagnoseScreens", "at most 2 items"),
]


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "cert.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def _one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str], path: Path) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    prefix = f"nvcre: {path}: "
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix):]


def test_enough_distinct_cases() -> None:
    """The issue asks for at least 20 distinct bad-input cases."""
    assert len({c[0] for c in CASES}) == len(CASES) >= 40


@pytest.mark.parametrize("command", ["validate", "compile"])
@pytest.mark.parametrize(("mutate", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, mutate: Mutation,
                  field: str, words: str) -> None:
    """One line naming the file and the field path, exit 2, for `validate` and for `compile`."""
    data = copy.deepcopy(BASE)
    mutate(data)
    path = _write(tmp_path, data)
    rest = _one_error_line(capsys, [command, str(path)], path)
    assert rest.startswith(f"{field}: "), rest
    assert words in rest, rest


# Whole-file problems: (id, text, message words). The line names the file (and for YAML errors, the line).
FILE_CASES = [
    ("empty-file", "", "found 0"),
    ("comment-only", "# nothing here\n", "found 0"),
    ("list-not-mapping", "- apiVersion: nvcre.nvidia.com/v1alpha1\n- kind: Certification\n", "YAML mapping"),
    ("scalar-not-mapping", "just text\n", "YAML mapping"),
    ("two-documents", EXAMPLE.read_text() + "---\n" + EXAMPLE.read_text(), "found 2"),
    ("malformed-yaml", "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nspec: {target: [\n",
     "line 4, column 1: "),
    ("tab-indentation", "apiVersion: x\nspec:\n\ttarget: {}\n", "line 3, column 1: "),
]


@pytest.mark.parametrize(("text", "words"), [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, words: str) -> None:
    """Empty files, non-mappings, several documents and YAML syntax errors (with the line) are one line each."""
    path = _write(tmp_path, text)
    rest = _one_error_line(capsys, ["validate", str(path)], path)
    assert words in rest, rest


def test_unsafe_yaml_tag_is_not_executed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`!!python/object/apply` is refused at parse time: the command in it never runs."""
    marker = tmp_path / "PWNED"
    path = _write(tmp_path, f'!!python/object/apply:os.system ["touch {marker}"]\n')
    rest = _one_error_line(capsys, ["compile", str(path)], path)
    assert rest.startswith("line 1, column 1: unsafe or unknown YAML tag"), rest
    assert not marker.exists()


def test_unsafe_tag_nested_in_spec_is_not_executed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unsafe tag deep inside a valid-looking spec is refused too, with its line."""
    marker = tmp_path / "PWNED"
    text = EXAMPLE.read_text().replace('"value >= 300"', f'!!python/object/apply:os.system ["touch {marker}"]')
    path = _write(tmp_path, text)
    rest = _one_error_line(capsys, ["validate", str(path)], path)
    assert "unsafe or unknown YAML tag" in rest and rest.startswith("line 17, "), rest
    assert not marker.exists()


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is not there: one line, exit 2."""
    path = tmp_path / "nope.yaml"
    rest = _one_error_line(capsys, ["compile", str(path)], path)
    assert rest.startswith("cannot read file"), rest


def test_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory where a file should be, and a file that is not UTF-8: one line each, exit 2."""
    rest = _one_error_line(capsys, ["validate", str(tmp_path)], tmp_path)
    assert rest.startswith("cannot read file"), rest
    binary = tmp_path / "cert.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    rest = _one_error_line(capsys, ["validate", str(binary)], binary)
    assert rest.startswith("cannot read file"), rest


def test_diagnose_compiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """testScale diagnose is a valid spec that compiles (it was an unsupported-feature error before)."""
    data = copy.deepcopy(BASE)
    data["spec"]["categories"] = [ALL_REDUCE]
    _opts(data)["testScale"] = "diagnose"
    path = _write(tmp_path, data)
    code = main(["compile", str(path), "--step-image", "img:1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert yaml.safe_load(out)["kind"] == "Workflow"


@pytest.mark.parametrize("command", ["compile", "validate"])
def test_compile_time_error_names_the_file(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                           command: str) -> None:
    """An InputError raised while compiling (after loading) names only a spec path; the CLI puts the file first."""
    import nvcre_hera.compile.workflow as workflow
    from nvcre_hera.errors import InputError

    def refuse(*args: object, **kwargs: object) -> dict:
        raise InputError("cannot compile this", "spec.categories[0]")

    monkeypatch.setattr(workflow, "compile_certification", refuse)
    rest = _one_error_line(capsys, [command, str(EXAMPLE)], EXAMPLE)
    assert rest == "spec.categories[0]: cannot compile this"


def test_bad_cron_schedule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--schedule` that is not a cron expression: exit 2, one line."""
    code = main(["compile", str(EXAMPLE), "--as", "cron", "--schedule", "tomorrow"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "not a cron expression" in err, err


@pytest.mark.parametrize(("command", "mutate", "field"), [
    ("validate", _cat(1, maxBytess="16G"), "spec.categories[1].options.maxBytess"),
    ("compile", _global(maxBytes="16 GB"), "spec.options.maxBytes"),
    ("compile", _spec(categories={}), "spec.categories"),
], ids=["validate-typo", "compile-bytes", "compile-wrong-type"])
def test_binary_prints_one_line_no_traceback(tmp_path: Path, command: str, mutate: Mutation, field: str) -> None:
    """The installed `nvcre` binary: exit 2, stdout empty, stderr exactly one line, no traceback."""
    data = copy.deepcopy(BASE)
    mutate(data)
    path = _write(tmp_path, data)
    proc = subprocess.run([str(NVCRE), command, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.rstrip("\n")]
    assert proc.stderr.startswith(f"nvcre: {path}: {field}: "), proc.stderr


def test_binary_unsafe_tag(tmp_path: Path) -> None:
    """The binary refuses an unsafe tag without running it and without a traceback."""
    marker = tmp_path / "PWNED"
    path = _write(tmp_path, f'!!python/object/apply:os.system ["touch {marker}"]\n')
    proc = subprocess.run([str(NVCRE), "validate", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not marker.exists()

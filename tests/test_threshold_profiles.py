"""Threshold profiles as catalog data, `thresholdProfile` and per-GPU threshold keys in the spec (issue 13)."""

from __future__ import annotations

import json

from pathlib import Path

import pytest
import yaml

from nvcre_hera.catalog import gpu_architectures, load_catalog
from nvcre_hera.cli import main
from nvcre_hera.spec_load import load_certification, resolve_categories
from nvcre_hera.threshold_bounds import threshold_bounds
from nvcre_hera.threshold_profiles import default_profiles, profile_dir
from nvcre_hera.threshold_select import PROFILE_KEY, THRESHOLDS_FROM_KEY, select_thresholds

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "certifications"


def test_every_gpu_has_a_profile_that_names_every_catalog_category():
    files = {p.stem: yaml.safe_load(p.read_text()) for p in profile_dir().glob("*.yaml")}
    assert set(files) == set(gpu_architectures())
    for gpu, data in files.items():
        assert data["gpu"] == gpu
        assert set(data["categories"]) == set(load_catalog()), gpu  # "none known" is written, never implied


def test_every_floor_cites_a_source_and_is_an_interval_diagnose_can_use():
    rules = [(gpu, cat, scale, metric, rule) for gpu, cats in default_profiles().items()
             for cat, scales in cats.items() for scale, metrics in scales.items() for metric, rule in metrics.items()]
    assert len(rules) >= 20
    for gpu, cat, scale, metric, rule in rules:
        assert rule["kind"] == "profile"
        assert "http" in rule["from"] or "shared/data/real" in rule["from"], (gpu, cat, scale)
        assert threshold_bounds(rule["expression"]).low is not None, (gpu, cat, scale, metric)


def test_floors_are_the_fraction_of_the_cited_figure():
    profiles = default_profiles()
    all_reduce = "communication/nccl-all-reduce"
    assert profiles["h100"][all_reduce]["intra-node"]["busBandwidthGBps"]["expression"] == "value >= 360.0"  # 0.8x450
    assert profiles["gb300"][all_reduce]["intra-rack+mnnvl"]["busBandwidthGBps"]["expression"] == "value >= 749.6"
    assert profiles["gb300"][all_reduce]["full-scale"]["busBandwidthGBps"]["expression"] == "value >= 160.0"
    assert profiles["a100"][all_reduce]["full-scale"] == {}  # none known: no floor


def test_nvcre_string_thresholds_load_exactly_as_before():
    cert = load_certification(ROOT / "examples" / "certification.yaml")
    for cat in resolve_categories(cert):
        assert PROFILE_KEY not in cat.options and THRESHOLDS_FROM_KEY not in cat.options
        assert all(isinstance(v, str) for v in cat.thresholds.values())
    assert resolve_categories(cert)[0].thresholds == {"busBandwidthGBps": "value >= 300"}


def test_the_plan_carries_every_gpus_floor_and_the_judge_picks_by_gpu():
    cat = resolve_categories(load_certification(EXAMPLES / "profile-intra-node.yaml"))[0]
    assert set(cat.options[PROFILE_KEY]) == set(gpu_architectures())
    assert select_thresholds(cat.options, "h200")[0] == {"busBandwidthGBps": "value >= 384.0"}  # 0.8 x 479.98
    assert select_thresholds(cat.options, "b200")[0] == {}  # none known for B200 in one node


def test_mnnvl_selects_the_clique_floor():
    cat = resolve_categories(load_certification(EXAMPLES / "profile-intra-rack-mnnvl.yaml"))[0]
    assert select_thresholds(cat.options, "gb300")[0] == {"busBandwidthGBps": "value >= 749.6"}
    assert select_thresholds(cat.options, "h100")[0] == {"busBandwidthGBps": "value >= 264.7"}  # no +mnnvl entry


def _write(tmp_path: Path, spec_extra: dict, category_options: dict | None = None, name: str = "c.yaml") -> Path:
    doc = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "t"},
           "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                    "categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                                    **({"options": category_options} if category_options else {})}],
                    **spec_extra}}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def _error(path: Path, capsys) -> str:
    assert main(["compile", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


PROFILE_NO_SOURCE = {"apiVersion": "nvcre-hera.dev/v1alpha1", "kind": "ThresholdProfile", "gpu": "h100",
                     "fraction": 0.8, "categories": {"communication/nccl-all-reduce": {
                         "intra-node": {"busBandwidthGBps": {"figure": 400}}}}}


@pytest.mark.parametrize("spec_extra, options, where, words", [
    ({"thresholds": {"h900": {"busBandwidthGBps": "value >= 1.0"}}}, None, "spec.thresholds.h900",
     "unknown GPU architecture"),
    ({"thresholds": {"h100": "value >= 3.0"}}, None, "spec.thresholds.h100", "GPU architecture"),
    ({}, {"thresholds": {"a100": {"busBandwidthGBps": "value >="}}},
     "spec.categories[0].options.thresholds.a100.busBandwidthGBps", "CEL syntax"),
    ({}, {"thresholds": {"a100": {"fooGBps": "value >= 1.0"}}}, "spec.categories[0].options.thresholds.a100.fooGBps",
     "does not produce metric"),
    ({"thresholdProfile": "./missing.yaml"}, None, "spec.thresholdProfile", "cannot read threshold profile"),
    ({"thresholdProfile": ""}, None, "spec.thresholdProfile", "at least 1 character"),
    ({"testScale": "diagnose"}, {"thresholds": {"h100": {"busBandwidthGBps": "value >= 1.0 || value < 0.5"}}},
     "spec.categories[0].options.thresholds.h100.busBandwidthGBps", "cannot be applied by testScale diagnose"),
])
def test_bad_threshold_input_is_one_line_naming_the_field(tmp_path, capsys, spec_extra, options, where, words):
    err = _error(_write(tmp_path, spec_extra, options), capsys)
    assert f"c.yaml: {where}" in err and words in err, err


@pytest.mark.parametrize("profile, where, words", [
    (PROFILE_NO_SOURCE, "categories.communication/nccl-all-reduce.intra-node.busBandwidthGBps.source",
     "needs its source"),
    ({**PROFILE_NO_SOURCE, "categories": {"communication/nccl-all-reduse": "none known"}},
     "categories.communication/nccl-all-reduse", "unknown category"),
    ({**PROFILE_NO_SOURCE, "gpu": "h900"}, "gpu", "gpu must be one of"),
    ({**PROFILE_NO_SOURCE, "kind": "Thresholds"}, "kind", "ThresholdProfile"),
])
def test_bad_profile_file_is_one_line_naming_its_field(tmp_path, capsys, profile, where, words):
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(profile))
    err = _error(_write(tmp_path, {"thresholdProfile": "p.yaml"}), capsys)  # relative to the Certification
    assert f"p.yaml: {where}" in err and words in err, err


def test_a_profile_file_applies_on_its_gpu_and_explicit_keys_win(tmp_path):
    profile = {**PROFILE_NO_SOURCE, "categories": {"communication/nccl-all-reduce": {"full-scale": {
        "busBandwidthGBps": {"figure": 400, "source": "https://example.org/run-42: 400 GB/s"},
        "algBandwidthGBps": {"floor": 150, "source": "https://example.org/run-42: algbw"}}}}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(profile))
    path = _write(tmp_path, {"thresholdProfile": "p.yaml", "thresholds": {"algBandwidthGBps": "value >= 99.0"}})
    cat = resolve_categories(load_certification(path))[0]
    thresholds, sources = select_thresholds(cat.options, "h100")
    assert thresholds == {"busBandwidthGBps": "value >= 320.0", "algBandwidthGBps": "value >= 99.0"}
    assert sources["busBandwidthGBps"]["kind"] == "profile" and "run-42" in sources["busBandwidthGBps"]["from"]
    assert sources["algBandwidthGBps"] == {"kind": "explicit",
                                           "from": f"{path}: spec.thresholds.algBandwidthGBps"}
    assert select_thresholds(cat.options, "gb300")[0] == {"algBandwidthGBps": "value >= 99.0"}


def test_a_category_without_a_sourced_floor_says_so_in_the_report():
    from nvcre_hera.local_run import run_local

    report = run_local(str(EXAMPLES / "profile-intra-node.yaml"),
                       str(ROOT / "examples" / "clusters" / "healthy-a100-8.yaml")).report
    assert report["gpu"] == "a100"
    all_reduce, loopback = report["categories"]
    assert all_reduce["thresholdsSet"] and "thresholdNotice" not in all_reduce
    assert "none known" in loopback["thresholdNotice"] and not loopback["thresholdsSet"]


def test_a_profile_that_knows_nothing_of_the_gpu_is_incomplete_never_a_pass(tmp_path, capsys):
    """A profile of H200 figures used on a run over H100 nodes, with no threshold of its own: nothing judges the run
    as the user asked, so the category is Incomplete (exit 1) with the reason, not "No thresholds set" and PASSED.
    With an explicit threshold beside it, that one judges and the run can pass."""
    profile = {**PROFILE_NO_SOURCE, "gpu": "h200", "categories": {"communication/nccl-all-reduce": {"full-scale": {
        "busBandwidthGBps": {"figure": 350, "source": "https://example.org/h200-run: 350 GB/s"}}}}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(profile))
    cluster = str(ROOT / "examples" / "clusters" / "healthy-h100-16.yaml")
    path = _write(tmp_path, {"thresholdProfile": "p.yaml"})
    assert main(["certify", str(path), "--cluster", cluster, "--out", str(tmp_path / "o1"), "--quiet"]) == 1
    report = json.loads((tmp_path / "o1" / "report.json").read_text())
    cat = report["categories"][0]
    assert report["result"] == "INCOMPLETE" and cat["status"] == "Incomplete" and report["failedNodes"] == []
    assert "no profile for GPU h100 (it has: h200)" in cat["incomplete"] and "not judged as asked" in cat["incomplete"]
    assert "Incomplete: thresholdProfile p.yaml: no profile for GPU h100" in capsys.readouterr().out
    explicit = _write(tmp_path, {"thresholdProfile": "p.yaml", "thresholds": {"busBandwidthGBps": "value >= 100.0"}},
                      name="c2.yaml")
    assert main(["certify", str(explicit), "--cluster", cluster, "--out", str(tmp_path / "o2"), "--quiet"]) == 0


def test_the_docs_table_lists_every_floor():
    doc = (ROOT / "docs" / "threshold-profiles.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("| ")]
    for gpu, cats in default_profiles().items():
        for cat, scales in cats.items():
            for scale, metrics in scales.items():
                for rule in metrics.values():
                    floor = rule["expression"].split()[-1]
                    assert any(row.startswith(f"| {gpu} |") and cat.split("/")[1] in row and f"| {floor} |" in row
                               for row in rows), (gpu, cat, scale, floor)

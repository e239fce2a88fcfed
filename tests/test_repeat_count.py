"""Issue 9 item 10: `repeatCount` is honoured in every scale, the report says how many repeats each group ran, and
the flapping example (a node whose NIC halves in half its jobs) never PASSES, whatever the seed.

Before the fix diagnose's planner kept only the last repeat of a test, so with 15 seeds the flapping example PASSED
whenever the jobs holding gpu-node-05 happened to run clean."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nvcre_hera.local_run import run_local
from nvcre_hera.report.card import render_card
from nvcre_hera.steps.plan_step import compact_results

ROOT = Path(__file__).resolve().parent.parent
CLUSTERS = ROOT / "examples" / "clusters"
SEEDS = range(1, 17)


def _cert(tmp_path: Path, scale: str, repeats: int) -> str:
    body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "rep"},
            "spec": {"target": {}, "testScale": scale, "repeatCount": repeats,
                     "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]}}
    path = tmp_path / f"{scale}.yaml"
    path.write_text(yaml.safe_dump(body))
    return str(path)


@pytest.mark.parametrize("scale", ["intra-node", "intra-rack", "full-scale"])
def test_every_group_runs_repeat_count_times_and_the_card_says_so(tmp_path, scale: str) -> None:
    report = run_local(_cert(tmp_path, scale, 2), str(CLUSTERS / "flapping.yaml")).report
    (cat,) = report["categories"]
    assert cat["groups"] and all(g["repeats"] == 2 for g in cat["groups"])
    assert cat["jobs"] == 2 * len(cat["groups"])
    assert "Repeats:    2 per group" in render_card(report)


def test_diagnose_folds_repeats_into_the_worst() -> None:
    runs = [[{"id": "t1", "busBandwidthGBps": 380.0, "status": "ok"}, {"id": "t1", "busBandwidthGBps": 190.0,
                                                                      "status": "ok"}],
            [{"id": "t2", "busBandwidthGBps": 380.0, "status": "ok"}, {"id": "t2", "busBandwidthGBps": None,
                                                                      "status": "failed"}]]
    assert compact_results(runs) == [{"id": "t1", "busBandwidthGBps": 190.0, "status": "ok"},
                                     {"id": "t2", "busBandwidthGBps": None, "status": "failed"}]


def test_the_flapping_example_never_passes(tmp_path) -> None:
    """examples/certifications/diagnose.yaml (repeatCount: 3) on examples/clusters/flapping.yaml, 16 seeds."""
    body = yaml.safe_load((CLUSTERS / "flapping.yaml").read_text())
    verdicts = {}
    for seed in SEEDS:
        body["spec"]["seed"] = seed
        path = tmp_path / f"flapping-{seed}.yaml"
        path.write_text(yaml.safe_dump(body))
        report = run_local(str(ROOT / "examples" / "certifications" / "diagnose.yaml"), str(path)).report
        verdicts[seed] = (report["result"], sorted(n["name"] for n in report["failedNodes"]))
        assert report["categories"][0]["diagnose"]["repeatsPerTest"] == 3
    assert verdicts == {seed: ("FAILED", ["gpu-node-05"]) for seed in SEEDS}

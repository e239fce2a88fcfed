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
    from nvcre_hera.steps.run import diagnose_result

    def run(bus, status="ok", deleted=True, name="j"):
        return {"metrics": {} if bus is None else {"busBandwidthGBps": bus, "algBandwidthGBps": bus / 2},
                "status": status, "jobName": name, "jobDeleted": deleted}

    thresholds = {"busBandwidthGBps": "value >= 300.0", "algBandwidthGBps": "value >= 100.0"}
    (slow,) = diagnose_result("t1", [run(380.0), run(190.0), run(370.0)], thresholds)
    assert slow == {"id": "t1", "busBandwidthGBps": 190.0, "status": "ok", "jobs": 3, "deleted": 3, "repeats": 3,
                    "ext": {"busBandwidthGBps": [190.0, 380.0], "algBandwidthGBps": [95.0, 190.0]}}
    (crashed,) = diagnose_result("t2", [run(380.0), run(None, "failed", deleted=False, name="left")], thresholds)
    assert crashed["status"] == "failed" and crashed["busBandwidthGBps"] is None
    assert (crashed["jobs"], crashed["deleted"], crashed["leftover"]) == (2, 1, ["left"])


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

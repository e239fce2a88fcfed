"""The planner knows how many times each test runs (`repeatCount`, the worst run counting), so that it weighs dips
as often as they come: with three runs a value dips in about 3 % of tests, not 1 %.

The 64-draw scale bench (`bench/bench_diagnose_scale.py --draws 64`, README "Diagnose") found the case: at 4096
nodes a healthy node padded into a pair read 0.70 and then 0.87 of healthy against a 0.79 fingerprint, and was
accused in place of its untested neighbour, the slow NIC. The simulated cluster here is the bench's own (a stand-in
for real nodes: its noise model, not a real fabric's, is what is proven against).
"""

from __future__ import annotations

import pytest

from bench_scripts import load
from nvcre_hera.diagnose import bench as bench_module
from nvcre_hera.diagnose.bench import bench, planner_config
from nvcre_hera.diagnose.evidence import DIP_P, STRONG, dip_chance, llr
from nvcre_hera.diagnose.oracle import run
from test_diagnose_screen_run import Screens


def test_a_value_dips_more_often_when_the_worst_of_several_runs_counts():
    assert dip_chance(None) == dip_chance(1) == DIP_P
    assert abs(dip_chance(3) - (1 - (1 - DIP_P) ** 3)) < 1e-12 and 0.029 < dip_chance(3) < 0.03


def test_two_dipped_runs_of_a_healthy_node_accuse_it_only_when_the_repeats_are_not_weighed():
    """The two runs of the draw that accused gpu-node-0776 (ratios 0.704 and 0.87 against the search's 0.79
    fingerprint, σ̂ about 2.5 %): decisive evidence under 1 % dips, not under the 3 % three runs give."""
    runs = (0.704, 0.87)
    assert sum(llr(r, 0.79, 0.025) for r in runs) >= STRONG
    assert sum(llr(r, 0.79, 0.025, dip_chance(3)) for r in runs) < STRONG
    # a node as slow as the fingerprint is still accused, repeats or not
    assert sum(llr(r, 0.79, 0.025, dip_chance(3)) for r in (0.80, 0.78)) >= STRONG


def test_discovery_tells_the_planner_how_many_times_each_test_runs():
    assert "repeats" not in Screens("healthy-h100-16.yaml").setup["config"]
    three = Screens("healthy-h100-16.yaml", "  testScale: diagnose\n  repeatCount: 3")
    assert three.setup["config"]["repeats"] == 3


def test_the_bench_tells_the_planner_its_repeats(monkeypatch: pytest.MonkeyPatch):
    assert "repeats" not in planner_config("adaptive", 64, 8, 0)
    assert planner_config("adaptive", 64, 8, 0, repeats=3)["repeats"] == 3
    configs: list[dict] = []

    def spy(oracle, config, rng, **kw):
        configs.append(dict(config))
        return run(oracle, config, rng, **kw)

    monkeypatch.setattr(bench_module, "run", spy)
    bench(nodes=16, faults=1, trials=1, strategies=("adaptive",), repeats=3)
    bench(nodes=16, faults=1, trials=1, strategies=("adaptive",))
    assert [c.get("repeats") for c in configs] == [3, None]


def test_the_scale_bench_draw_that_accused_a_healthy_neighbour_names_the_two_slow_nics():
    """Draw 60 of the 64 (workflow diagnose-cert-26c2f28), the example's floor, through the workflow path: before
    the repeats were weighed its suspects were gpu-node-0776, 0777 and 3001."""
    scale = load("bench_diagnose_scale")
    identity = scale.identities(64)[60]
    assert identity[0] == "diagnose-cert-26c2f28"
    _seconds, report, _peak, left = scale.run_once(scale.NODES, None, identity)
    diagnose = report["categories"][0]["diagnose"]
    assert sorted(s["node"] for s in diagnose["suspects"]) == scale.faulty(scale.NODES)
    assert left == []  # the exit handler deleted the diagnose store

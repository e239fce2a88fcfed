"""`nvcre bench diagnose`: the cost accounting on hand-built traces, the fault kinds, the halving sweep, bad flags."""

from __future__ import annotations

import json
import random

import pytest

from nvcre_hera.diagnose.bench import (best_halving, bench, kind_oracle, link_scores, main, model_job_minutes,
                                       percentile, trace_costs)
from nvcre_hera.diagnose.oracle import random_oracle


def test_trace_costs_hand_built() -> None:
    # minutes of a job = its node count, so every number below is hand-computed
    rounds = [[[0, 1, 2, 3], [4, 5]], [[0, 1]], [[2]]]
    costs = trace_costs(rounds, {2}, lambda nodes: float(len(nodes)))
    # round 1 lasts 4, round 2 lasts 2, round 3 lasts 1
    assert costs["wallMinutes"] == 7.0
    # 4*4 + 2*2 + 2*2 + 1*1
    assert costs["nodeMinutes"] == 25.0
    # the last round with a healthy node is round 2, ending at 4 + 2
    assert costs["releaseMinutes"] == 6.0


def test_trace_costs_only_faulty_rounds_release_at_zero() -> None:
    costs = trace_costs([[[7]], [[7, 8]]], {7, 8}, lambda nodes: 3.0)
    assert costs == {"wallMinutes": 6.0, "nodeMinutes": 9.0, "releaseMinutes": 0.0}


def test_percentile_nearest_rank() -> None:
    assert percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert percentile(list(range(1, 21)), 0.95) == 19
    assert percentile([4.0], 0.95) == 4.0
    assert percentile([], 0.95) == 0.0


def test_model_job_minutes_from_the_sim_duration_model() -> None:
    # 2 nodes: scheduling 5 + 0.4*2 = 5.8 s, launch 6 + 2*log2(3) = 9.1699 s, init 1 + 0.06*2 = 1.12 s;
    # at a huge busbw the sweep costs its 32 sizes (8 B .. 16 GiB) x 0.2 s plus 32 x 48 x α (α = 35 µs) = 6.454 s
    assert model_job_minutes(2, 1e9) == pytest.approx((5.8 + 9.16993 + 1.12 + 6.4 + 0.05376) / 60, rel=1e-4)


def test_kind_oracle_link_and_flapping() -> None:
    oracle, truth = kind_oracle(32, 2, "link", 0.8, 0.03, random.Random(1))
    assert len(oracle.links) == 2 and not oracle.factors
    assert truth == set() and len({x for pair in oracle.links for x in pair}) == 4
    oracle, truth = kind_oracle(32, 2, "flapping", 0.8, 0.03, random.Random(1))
    assert set(oracle.flaps) == set(oracle.factors) == truth and len(truth) == 2
    oracle, truth = kind_oracle(32, 1, "slow-nic", 0.7, 0.03, random.Random(1))
    assert not oracle.flaps and not oracle.links and list(oracle.factors.values()) == [0.7]
    # slow-nic places its faults exactly where the old random_oracle did for the same seed
    assert truth == set(random_oracle(32, 1, 0.7, 0.03, random.Random(1)).factors)
    with pytest.raises(ValueError):
        kind_oracle(32, 1, "nvlink", 0.8, 0.03, random.Random(1))


def test_best_halving_respects_recall() -> None:
    sweep = {
        "halving@0.025": {"recall": 0.9, "wallMedian": 1.0, "wallMinutes": 1.0, "precision": 1.0},
        "halving@0.05": {"recall": 1.0, "wallMedian": 3.0, "wallMinutes": 3.0, "precision": 1.0},
        "halving@0.1": {"recall": 0.995, "wallMedian": 2.0, "wallMinutes": 2.5, "precision": 0.9},
    }
    assert best_halving(sweep) == "halving@0.1"
    # nobody reaches 0.99: the best recall
    assert best_halving({k: {**v, "recall": v["recall"] - 0.2} for k, v in sweep.items()}) == "halving@0.05"
    assert best_halving({}) is None


def test_bench_reports_the_new_columns_and_the_sweep() -> None:
    r = bench(nodes=16, faults=1, trials=2, kind="mix", halving_margins=[0.05, 0.1])
    assert set(r["strategies"]) == {"halving", "adaptive", "halving@0.05", "halving@0.1", "halving*"}
    assert r["bestHalving"]["entry"] in ("halving@0.05", "halving@0.1")
    for s in r["strategies"].values():
        for key in ("wallMedian", "wallP95", "nodeMinutes", "releaseMedian", "falseAccusationRate"):
            assert key in s
        # per trial release <= wall, so every order statistic is too
        assert s["wallMedian"] <= s["wallP95"]
        assert s["releaseMedian"] <= s["wallMedian"] and s["releaseP95"] <= s["wallP95"]


def test_cli_json_per_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--nodes", "16", "--trials", "1", "--fault-kind", "slow-nic,link", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["kinds"]) == {"slow-nic", "link"}
    assert out["kinds"]["link"]["scenario"]["faultKind"] == "link"


@pytest.mark.parametrize("argv, needle", [
    (["--fault-kind", "slow-gpu"], "not modelled"),
    (["--fault-kind", "bogus"], "unknown --fault-kind"),
    (["--fault-kind", ","], "at least one kind"),
    (["--halving-margins", "abc"], "comma-separated numbers"),
    (["--halving-margins", "0.05,1.5"], "strictly between 0 and 1"),
    (["--nodes", "4", "--faults", "3", "--fault-kind", "link"], "2 x --faults"),
])
def test_bad_flags_exit_2_one_line(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--trials", "1", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("nvcre bench diagnose: error")]) == 1


def test_link_scores_hand_built() -> None:
    links = [(3, 9), (4, 5)]
    reported = [
        {"between": [[9], [3]]},          # pinpoints (3, 9), either order
        {"between": [[4, 6], [5, 7]]},    # holds (4, 5) but does not pinpoint it
        {"between": [[1, 2], [8]]},       # holds no bad link
    ]
    assert link_scores(links, reported) == (1, 1)
    assert link_scores([], reported) == (0, 3)
    assert link_scores(links, []) == (0, 0)

"""`nvcre bench diagnose`: the cost accounting on hand-built traces, the fault kinds and their scopes in the oracle,
the kind-aware durations, the strategies (screened), the halving sweep, bad flags."""

from __future__ import annotations

import json
import random

import pytest

from bench_scripts import load
from nvcre_hera.diagnose import bench as bench_module
from nvcre_hera.diagnose import oracle as oracle_module
from nvcre_hera.diagnose.bench import (best_halving, bench, expected_busbw, fail_closed_floor, faults_released,
                                       format_table, kind_oracle, link_scores, main, model_job_minutes, percentile,
                                       planner_config, trace_costs)
from nvcre_hera.diagnose.oracle import Oracle, random_oracle, run
from nvcre_hera.sim import model
from nvcre_hera.sim.faults import ActiveFaults, NodeCaps


def _jobs(rounds: list[list[list[int]]]) -> list[list[dict]]:
    return [[{"id": f"t{i}", "nodes": nodes, "network": len(nodes) > 1} for i, nodes in enumerate(r)] for r in rounds]


def test_trace_costs_hand_built() -> None:
    # minutes of a job = its node count, so every number below is hand-computed
    rounds = [[[0, 1, 2, 3], [4, 5]], [[0, 1]], [[2]]]
    costs = trace_costs(_jobs(rounds), {2}, lambda job: float(len(job["nodes"])))
    # round 1 lasts 4, round 2 lasts 2, round 3 lasts 1
    assert costs["wallMinutes"] == 7.0
    # 4*4 + 2*2 + 2*2 + 1*1
    assert costs["nodeMinutes"] == 25.0
    # the last round with a healthy node is round 2, ending at 4 + 2
    assert costs["releaseMinutes"] == 6.0


def test_trace_costs_only_faulty_rounds_release_at_zero() -> None:
    costs = trace_costs(_jobs([[[7]], [[7, 8]]]), {7, 8}, lambda job: 3.0)
    assert costs == {"wallMinutes": 6.0, "nodeMinutes": 9.0, "releaseMinutes": 0.0}


def test_percentile_nearest_rank() -> None:
    assert percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert percentile(list(range(1, 21)), 0.95) == 19
    assert percentile([4.0], 0.95) == 4.0
    assert percentile([], 0.95) == 0.0


def test_model_job_minutes_from_the_sim_duration_model() -> None:
    # 2 nodes: scheduling 5 + 0.4*2 = 5.8 s, launch 6 + 2*log2(3) = 9.1699 s, init 1 + 0.06*2 = 1.12 s;
    # at a huge busbw the diagnose job's one size (4 GiB, 20 iterations) costs 0.2 s plus 48 x α (α = 35 µs)
    assert model_job_minutes(2, 1e9) == pytest.approx((5.8 + 9.16993 + 1.12 + 0.2 + 0.00168) / 60, rel=1e-4)


@pytest.mark.parametrize("nodes", [2, 63, 1023])
def test_the_bench_prices_the_job_the_workflow_renders(nodes: int) -> None:
    """What the bench charges for a diagnose job's measurement is what the rendered job runs: the launcher's own
    -b/-e/-n/-N (an H100 category with no size set, as the grid's clusters), priced by sim/model.py. Before
    d1bf5f8 the bench charged the sim's default 8 B-16 GiB sweep, 14 s more per job than this job runs."""
    from nvcre_hera.catalog import get_entry
    from nvcre_hera.jobs import JobContext, render_job

    job = render_job(get_entry("communication", "nccl-all-reduce"), 0, {"testScale": "diagnose"},
                     {"id": "r1-t0", "nodes": [f"n{i}" for i in range(nodes)]}, 0,
                     JobContext("wf", "uid", "nvcre", "onprem", "h100"))
    cmd = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    flag = {f: int(cmd[cmd.index(f) + 1]) for f in ("-b", "-e", "-n", "-N")}
    busbw = 370.0
    factor, alpha = model.bus_factor("all_reduce", 8 * nodes), model.latency_us("net", nodes, "onprem")
    measure = model.nccl_measure_s(model.sizes(flag["-e"], flag["-b"]), busbw, factor, alpha, flag["-n"], flag["-N"])
    startup = sum(model.startup_s(nodes))
    assert model_job_minutes(nodes, busbw) == pytest.approx((startup + measure) / 60, rel=1e-9)
    assert flag["-b"] == flag["-e"] == 4 << 30 and (flag["-n"], flag["-N"]) == (20, 1)


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
        kind_oracle(32, 1, "bogus", 0.8, 0.03, random.Random(1))


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
    (["--fault-kind", "slow-gpu,gpu"], "unknown --fault-kind 'gpu'"),
    (["--strategies", "adaptive,screen"], "unknown --strategies entry 'screen' (use adaptive, halving, screened)"),
    (["--strategies", " , "], "--strategies needs at least one"),
    (["--fault-kind", "bogus"], "unknown --fault-kind"),
    (["--fault-kind", ","], "at least one kind"),
    (["--halving-margins", "abc"], "comma-separated numbers"),
    (["--halving-margins", "0.05,1.5"], "strictly between 0 and 1"),
    (["--nodes", "4", "--faults", "3", "--fault-kind", "link"], "2 x --faults"),
    (["--trigger", "full"], "argument --trigger: invalid choice: 'full'"),
    (["--trigger", "workflow", "--threshold-share", "1.5"], "the threshold share must lie in (0, 1], got 1.5"),
    (["--repeats", "0"], "--repeats must be at least 1, got 0"),
    (["--screens-max-nodes", "16"], "--screens-max-nodes must be at least 32 (screens.MIN_NODES), got 16"),
])
def test_bad_flags_exit_2_one_line(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--trials", "1", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("nvcre bench diagnose: error")]) == 1


def test_link_scores_hold_a_link_between_any_two_of_many_sides() -> None:
    reported = [{"between": [[0, 1], [2, 3], [4, 5], [6, 7]], "evidence": []}]
    assert link_scores([(1, 6)], reported) == (0, 0)  # held (not pinpointed), so not a false report
    assert link_scores([(0, 1)], reported) == (0, 1)  # both ends on one side: the report holds no such link


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


# --- the oracle's scopes (sim/faults.py's table; sim/model.py's min-model) ---------------------------------------

def test_kind_none_replays_main() -> None:
    # Values printed by main's code at 99de816 (before the scopes existed) for this oracle and seed; the kind=None
    # path must give them bit for bit, so that recorded seeds replay.
    o = Oracle(n=16, factors={3: 0.8, 5: 0.6, 9: 0.7}, links={(1, 2): 0.75}, flaps={5: 0.5}, crashes={12})
    rng = random.Random(42)
    groups = ([0, 1, 2, 3], [4, 5, 6, 7], [1, 2], [5, 8], [10, 11, 12], [5], [5], [5], [5], [0])
    assert [o.measure(g, rng)["busBandwidthGBps"] for g in groups] == [
        281.498, 225.003, 275.872, 214.208, None, 226.415, 379.911, 143.14, 368.958, 396.016]
    o = Oracle(n=8, factors={2: 0.8}, cliques=[[0, 1, 2, 3], [4, 5, 6, 7]])
    rng = random.Random(3)
    assert [o.measure(g, rng)["busBandwidthGBps"] for g in ([0, 1], [0, 1, 2, 3], [3, 4], [4, 5, 6, 7])] == [
        799.064, 658.688, 375.537, 787.374]


def test_kind_oracle_placements_replay_main() -> None:
    # Placements printed by main's code at 99de816 for n=64, 3 faults, seed 7.
    o, truth = kind_oracle(64, 3, "slow-nic", 0.8, 0.03, random.Random(7))
    assert sorted(truth) == sorted(o.factors) == [19, 41, 50]
    o, truth = kind_oracle(64, 3, "flapping", 0.8, 0.03, random.Random(7))
    assert sorted(truth) == sorted(o.flaps) == sorted(o.factors) == [19, 41, 50]
    o, truth = kind_oracle(64, 3, "link", 0.8, 0.03, random.Random(7))
    assert not truth and sorted(o.links) == [(3, 4), (19, 41), (26, 43)]


def _quiet(**kw) -> Oracle:
    return Oracle(n=8, sigma=0.0, dip=0.0, **kw)


def _values(o: Oracle, x: int, other: int) -> dict[str, float]:
    rng = random.Random(0)
    return {"intra": o.measure([x], rng, "intra")["busBandwidthGBps"],
            "loopback": o.measure([x], rng, "loopback")["busBandwidthGBps"],
            "multi": o.measure([x, other], rng)["busBandwidthGBps"]}


# healthy, by hand: intra 470 (H100 in a node), loopback 370 x 0.9 = 333, two nodes 380 x (1 - 0.004) = 378.48
HEALTHY = {"intra": 470.0, "loopback": 333.0, "multi": 378.48}


def test_healthy_baselines_per_kind() -> None:
    assert _values(_quiet(), 0, 1) == HEALTHY


def test_healthy_baselines_are_the_sims() -> None:
    # the sim's own model on one healthy H100 onprem node: the intra all-reduce and the loopback test
    none = ActiveFaults()
    o = _quiet()
    assert o.intra_baseline == model.expected_busbw("all_reduce", ["a"], 8, "h100", "onprem", none).busbw
    assert o.loopback_baseline == pytest.approx(model.expected_busbw("loopback", ["a"], 8, "h100", "onprem",
                                                                     none).busbw)


def test_slow_gpu_scope() -> None:
    # a slow GPU lowers intra and, once below the scale-out rate, multi-node; never loopback
    v = _values(_quiet(gpu_factors={2: 0.5}), 2, 3)
    assert v == {"intra": 235.0, "loopback": 333.0, "multi": 235.0}
    # 10 % slow: 423 GB/s of GPU rate is above the 378.48 scale-out rate, so a multi-node job does not see it
    # (sim/model.py caps a member's GPU at the intra baseline x factor, not the scale-out rate)
    v = _values(_quiet(gpu_factors={2: 0.9}), 2, 3)
    assert v == {"intra": 423.0, "loopback": 333.0, "multi": 378.48}
    # unaffected node, same oracle
    assert _values(_quiet(gpu_factors={2: 0.5}), 4, 3) == HEALTHY


def test_slow_gpu_multi_node_matches_the_sim() -> None:
    caps = ActiveFaults(caps={"b": NodeCaps(gpu=0.5)})
    sim = model.expected_busbw("all_reduce", ["a", "b"], 8, "h100", "onprem", caps).busbw
    assert _values(_quiet(gpu_factors={1: 0.5}), 1, 0)["multi"] == sim == 235.0


def test_slow_nic_scope() -> None:
    v = _values(_quiet(factors={2: 0.8}), 2, 3)
    assert v == {"intra": 470.0, "loopback": 266.4, "multi": 302.784}


def test_nvlink_scope() -> None:
    v = _values(_quiet(nvlink_factors={2: 0.6}), 2, 3)
    assert v == {"intra": 282.0, "loopback": 333.0, "multi": 282.0}
    # GPU and NVLink on one node: the lower bounds it
    assert _values(_quiet(nvlink_factors={2: 0.6}, gpu_factors={2: 0.7}), 2, 3)["intra"] == 282.0


def test_link_scope() -> None:
    o = _quiet(links={(2, 5): 0.5})
    rng = random.Random(0)
    assert o.measure([2, 5], rng)["busBandwidthGBps"] == 189.24
    assert o.measure([2, 3, 5, 6], rng)["busBandwidthGBps"] == pytest.approx(380 * (1 - 0.008) * 0.5)
    assert o.measure([2, 3], rng)["busBandwidthGBps"] == 378.48
    assert _values(o, 2, 3) == HEALTHY and _values(o, 5, 4) == HEALTHY


def test_flapping_scope_and_crash() -> None:
    o = _quiet(factors={2: 0.8}, flaps={2: 0.5}, crashes={6})
    rng = random.Random(5)
    loop = {o.measure([2], rng, "loopback")["busBandwidthGBps"] for _ in range(40)}
    assert loop == {333.0, 266.4}
    assert {o.measure([2], rng, "intra")["busBandwidthGBps"] for _ in range(40)} == {470.0}
    for kind in (None, "intra", "loopback"):
        assert o.measure([6], rng, kind) == {"busBandwidthGBps": None, "status": "failed"}


def test_measure_rejects_bad_kinds() -> None:
    with pytest.raises(ValueError):
        _quiet().measure([0, 1], random.Random(0), "intra")
    with pytest.raises(ValueError):
        _quiet().measure([0], random.Random(0), "nvswitch")


def test_bad_nodes_cover_every_scope() -> None:
    o = _quiet(factors={1: 0.8}, gpu_factors={2: 0.8}, nvlink_factors={3: 0.8}, crashes={4}, links={(5, 6): 0.5})
    assert o.bad_nodes() == {1, 2, 3, 4}


def test_run_passes_each_tests_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[dict]] = []

    def fake_plan(state, results, config):  # one round of screens, then done
        seen.append(results)
        if state is None:
            return {"done": False, "state": {}, "stats": {"rounds": 1}, "tests": [
                {"id": "s0", "nodes": [2], "network": False, "kind": "intra"},
                {"id": "s1", "nodes": [3], "network": False, "kind": "loopback"},
                {"id": "s2", "nodes": [4, 5], "network": True}]}
        return {"done": True, "suspects": [], "stats": {}}

    monkeypatch.setattr(oracle_module, "plan", fake_plan)
    run(_quiet(gpu_factors={2: 0.5, 3: 0.5}), {}, random.Random(0), full=False)
    assert seen[1] == [{"id": "s0", "busBandwidthGBps": 235.0, "status": "ok"},
                       {"id": "s1", "busBandwidthGBps": 333.0, "status": "ok"},
                       {"id": "s2", "busBandwidthGBps": 378.48, "status": "ok"}]


def test_kind_oracle_gpu_and_nvlink() -> None:
    same = set(kind_oracle(32, 2, "slow-nic", 0.8, 0.03, random.Random(4))[1])
    o, truth = kind_oracle(32, 2, "slow-gpu", 0.5, 0.03, random.Random(4))
    assert truth == same == set(o.gpu_factors) and not o.factors and not o.nvlink_factors
    assert set(o.gpu_factors.values()) == {0.5}
    o, truth = kind_oracle(32, 2, "nvlink", 0.5, 0.03, random.Random(4))
    assert truth == same == set(o.nvlink_factors) and not o.factors and not o.gpu_factors


def test_kind_oracle_mix_draws_all_five() -> None:
    o, truth = kind_oracle(400, 60, "mix", 0.8, 0.03, random.Random(2))
    plain = set(o.factors) - set(o.flaps)
    assert plain and o.flaps and o.gpu_factors and o.nvlink_factors and o.links
    assert truth == set(o.factors) | set(o.gpu_factors) | set(o.nvlink_factors)


# --- durations by kind -------------------------------------------------------------------------------------------

def test_model_job_minutes_intra_and_loopback_by_hand() -> None:
    # one node: scheduling 5 + 0.4 = 5.4 s, launch 6 + 2*log2(2) = 8 s, init 1.06 s; one size at a huge busbw:
    # 0.2 s plus 48 x α, α = 14 µs on NVLink, 25 + 10*log2(2) = 35 µs on the loopback path
    assert model_job_minutes(1, 1e9, "intra") == pytest.approx((5.4 + 8 + 1.06 + 0.2 + 0.000672) / 60, rel=1e-5)
    assert model_job_minutes(1, 1e9, "loopback") == pytest.approx((5.4 + 8 + 1.06 + 0.2 + 0.00168) / 60, rel=1e-5)
    with pytest.raises(ValueError):
        model_job_minutes(1, 1e9, "nvswitch")


def test_screen_job_is_shorter_than_a_64_node_job() -> None:
    o = _quiet()
    intra = model_job_minutes(1, expected_busbw(o, [0], "intra"), "intra")
    loop = model_job_minutes(1, expected_busbw(o, [0], "loopback"), "loopback")
    big = model_job_minutes(64, expected_busbw(o, list(range(64))))
    assert intra < loop < big
    # the 64-node job's startup alone: 30 + (6 + 2*log2(65)) + (1 + 0.06*64) s ≈ 52.9 s, a screen's is 14.46 s
    assert big - loop > (52.89 - 14.46) / 60


def test_expected_busbw_by_kind() -> None:
    o = _quiet(gpu_factors={0: 0.5}, factors={1: 0.8}, flaps={1: 0.5})
    assert expected_busbw(o, [0], "intra") == 235.0
    assert expected_busbw(o, [0], "loopback") == 333.0
    assert expected_busbw(o, [1], "loopback") == pytest.approx(266.4)  # flapping counted as bad
    assert expected_busbw(o, [1], "intra") == 470.0


def test_trace_costs_prices_each_job_by_its_kind() -> None:
    rounds = [[{"id": "a", "nodes": [0], "kind": "intra"}, {"id": "b", "nodes": [1], "kind": "loopback"},
               {"id": "c", "nodes": [2, 3]}]]
    price = {"intra": 1.0, "loopback": 2.0, None: 5.0}
    costs = trace_costs(rounds, set(), lambda job: price[job.get("kind")])
    assert costs == {"wallMinutes": 5.0, "nodeMinutes": 1.0 + 2.0 + 2 * 5.0, "releaseMinutes": 5.0}


# --- strategies and the planner's config -------------------------------------------------------------------------

def test_planner_config_has_no_noise_and_maps_screened() -> None:
    assert planner_config("screened", 16, 8, 3) == {
        "strategy": "adaptive", "nodeCount": 16, "cliques": None, "maxConcurrent": 8, "minGroupSize": 2,
        "baselineGBps": None, "threshold": None, "seed": 3, "screens": ["loopback", "intra"]}
    assert "noise" not in planner_config("adaptive", 16, 8, 3)
    assert planner_config("halving", 16, 8, 3)["strategy"] == "halving"


def test_the_screens_cap_reaches_the_planner_only_when_raised(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`--screens-max-nodes` (a measurement of what the Workflow's storage goal costs) is the planner config's
    `screensMaxNodes`, recorded in the scenario; without it the config is as before."""
    assert "screensMaxNodes" not in planner_config("screened", 2048, 8, 0)
    assert planner_config("screened", 2048, 8, 0, 4096)["screensMaxNodes"] == 4096
    configs: list[dict] = []

    def spy(oracle, config, rng, **kw):
        configs.append(dict(config))
        return run(oracle, config, rng, **kw)

    monkeypatch.setattr(bench_module, "run", spy)
    assert main(["--nodes", "64", "--trials", "1", "--strategies", "screened", "--screens-max-nodes", "128",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scenario"]["screensMaxNodes"] == 128
    assert [c.get("screensMaxNodes") for c in configs] == [128]


def test_bench_runs_screened_without_telling_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    configs: list[dict] = []

    def spy(oracle, config, rng, **kw):
        configs.append(dict(config))
        return run(oracle, config, rng, **kw)

    monkeypatch.setattr(bench_module, "run", spy)
    r = bench(nodes=16, faults=1, trials=2, noise=0.05, strategies=("adaptive", "screened"), kind="slow-gpu",
              fault_factor=0.5)
    assert set(r["strategies"]) == {"adaptive", "screened"}
    assert len(configs) == 4 and not any("noise" in c for c in configs)
    assert [c.get("screens") for c in configs] == [None, None, ["loopback", "intra"], ["loopback", "intra"]]
    assert {c["strategy"] for c in configs} == {"adaptive"}


def test_cli_accepts_the_new_kinds_and_screened(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--nodes", "16", "--trials", "1", "--fault-kind", "slow-gpu,nvlink", "--fault-factor", "0.5",
                 "--strategies", "halving,screened", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["kinds"]) == {"slow-gpu", "nvlink"}
    assert set(out["kinds"]["nvlink"]["strategies"]) == {"halving", "screened"}


def test_gpu_factor_in_a_clique_job_scales_the_clique_rate() -> None:
    # inside one clique (800 GB/s at 2 nodes: 800 x 0.996 = 796.8) a 0.5 GPU halves the clique rate, as
    # sim/model.py's MNNVL path does; across cliques the member is capped at 470 x 0.5 = 235
    o = _quiet(gpu_factors={1: 0.5}, cliques=[[0, 1, 2, 3], [4, 5, 6, 7]])
    rng = random.Random(0)
    assert o.measure([0, 1], rng)["busBandwidthGBps"] == 398.4
    assert o.measure([1, 4], rng)["busBandwidthGBps"] == 235.0
    assert o.measure([4, 5], rng)["busBandwidthGBps"] == 796.8


def test_a_diagnose_of_flapping_nodes_starts_from_a_run_that_failed() -> None:
    """A certification run with its flapper's flap off is healthy and starts no diagnose: the bench hands over the
    first full run that is clearly low (3σ under healthy), drawing again while it is not."""
    nodes = list(range(16))
    oracle = Oracle(n=16, sigma=0.02, dip=0.0, factors={3: 0.5}, flaps={3: 0.5})
    line = oracle.healthy(nodes) * (1 - 3 * 0.02)
    values = [bench_module.failing_full_run(oracle, random.Random(seed)) for seed in range(40)]
    assert all(v < line for v in values)
    # with its flap never on, no draw fails: it gives up after its tries, on a healthy value
    never = Oracle(n=16, sigma=0.02, dip=0.0, factors={3: 0.5}, flaps={3: 0.0})
    assert bench_module.failing_full_run(never, random.Random(0), tries=3) > line


def test_the_workflow_trigger_hands_no_full_run_and_the_users_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the compiled workflow runs it: the plan step never hands a full-group run over, and the bar is the
    user's threshold (here 0.8 x the oracle's healthy 32-node value, which `Oracle.healthy` gives)."""
    calls: list[tuple[dict, object]] = []

    def spy(oracle, config, rng, **kw):
        calls.append((dict(config), kw.get("full"), oracle.healthy(list(range(oracle.n)))))
        return run(oracle, config, rng, **kw)

    monkeypatch.setattr(bench_module, "run", spy)
    r = bench(nodes=32, faults=1, trials=3, strategies=("halving", "screened"), trigger="workflow",
              threshold_share=0.8)
    assert r["scenario"]["trigger"] == "workflow" and r["scenario"]["thresholdShare"] == 0.8
    assert len(calls) == 6 and all(full is False for _c, full, _h in calls)
    assert all(c["threshold"] == pytest.approx(0.8 * healthy, abs=0.01) for c, _f, healthy in calls)
    assert r["strategies"]["screened"]["recall"] == 1.0  # a 20 %-slow NIC under a floor at 80 % is still found
    calls.clear()
    plain = bench(nodes=32, faults=1, trials=1, strategies=("halving",))
    assert "trigger" not in plain["scenario"]
    assert [(c["threshold"], full) for c, full, _h in calls] == [(None, True)]
    # a category without a bandwidth floor: no full run and no threshold either
    calls.clear()
    bare = bench(nodes=32, faults=1, trials=2, strategies=("screened",), trigger="no-threshold")
    assert bare["scenario"]["trigger"] == "no-threshold" and "thresholdShare" not in bare["scenario"]
    assert [(c.get("threshold"), full) for c, full, _h in calls] == [(None, False)] * 2


def test_repeats_keep_each_tests_worst_run_and_a_crash_in_any(monkeypatch: pytest.MonkeyPatch) -> None:
    """`repeats` stands in for the run step's repeatCount: the worst of the runs counts, a crashed run fails the
    test. The oracle's `measure` is scripted here, so only the selection is proven, not the oracle's noise."""
    scripted = iter([{"busBandwidthGBps": 300.0, "status": "ok"}, {"busBandwidthGBps": 250.0, "status": "ok"},
                     {"busBandwidthGBps": 320.0, "status": "ok"},
                     {"busBandwidthGBps": 300.0, "status": "ok"}, {"busBandwidthGBps": None, "status": "failed"},
                     {"busBandwidthGBps": 310.0, "status": "ok"}])
    o = Oracle(n=4)
    monkeypatch.setattr(o, "measure", lambda nodes, rng, kind=None: next(scripted))
    rng = random.Random(0)
    assert oracle_module._result(o, {"id": "t", "nodes": [0, 1]}, rng, 3)["busBandwidthGBps"] == 250.0
    assert oracle_module._result(o, {"id": "t", "nodes": [0, 1]}, rng, 3)["status"] == "failed"


def test_repeats_are_priced_as_jobs_of_their_own() -> None:
    once = bench(nodes=16, faults=1, trials=3, strategies=("halving",), trigger="workflow")["strategies"]["halving"]
    r = bench(nodes=16, faults=1, trials=3, strategies=("halving",), trigger="workflow", repeats=3)
    thrice = r["strategies"]["halving"]
    assert r["scenario"]["repeats"] == 3 and "repeats" not in bench(nodes=16, trials=1)["scenario"]
    # a 20 %-slow NIC fails every run: the same jobs, each run three times over
    assert thrice["jobs"] == once["jobs"] and thrice["wallMedian"] == pytest.approx(3 * once["wallMedian"], abs=0.15)


# --- the fail-closed floor ---------------------------------------------------------------------------------------

def test_fail_closed_floor_at_64_nodes_by_hand() -> None:
    """One fault among 64: the final check is a 63-node all-reduce. By hand from sim/model.py: scheduling
    min(30, 5 + 0.4·63) = 30 s, launch 6 + 2·log2 64 = 18 s, NCCL init 1 + 0.06·63 = 4.78 s; busbw 380 ×
    (1 − 0.004·log2 63) = 370.92 GB/s, bus factor 2·503/504, α = 25 + 10·log2 63 = 84.77 µs; the diagnose job's
    one size, S = 4 GiB, × 48 collectives = 48 × (α + F·S / busbw) = 1.1135 s, plus 0.2 s: 54.09 s. The cheapest
    localizing job is one node's intra screen: 5.4 + 8 + 1.06 s and 48 × (14 µs + 1.75 · S / 470 GB/s) + 0.2 =
    0.968 s: 15.43 s."""
    floor = fail_closed_floor(64, 1)
    assert floor["finalCheckMinutes"] == pytest.approx(54.09 / 60, rel=2e-3)
    assert floor["singleNodeJobMinutes"] == pytest.approx(15.43 / 60, rel=2e-3)
    assert floor["wallMinutes"] == pytest.approx((54.09 + 15.43) / 60, abs=0.01)
    assert floor["nodeMinutes"] == pytest.approx(63 * 54.09 / 60, rel=2e-3)


def test_no_fail_closed_strategy_measures_below_the_floor_and_halving_does_on_node_minutes() -> None:
    """The floor is a floor: adaptive and screened (each ends with a check of the whole rest) spend at least it,
    in every trial's median and mean; halving, which never runs its rest together, spends fewer node-minutes than
    the final check alone would (20 trials, 64 nodes, one 20 %-slow NIC)."""
    result = bench(64, 1, 0.8, 0.03, 8, 20, ("halving", "adaptive", "screened"), 0, 0.01, "slow-nic")
    floor = fail_closed_floor(64, 1)
    for name in ("adaptive", "screened"):
        measured = result["strategies"][name]
        assert measured["wallMedian"] >= floor["wallMinutes"], name
        assert measured["nodeMinutes"] >= floor["nodeMinutes"], name
    assert result["strategies"]["halving"]["nodeMinutes"] < floor["nodeMinutes"]


def test_the_bench_prints_the_floor_and_prices_it_per_repeat() -> None:
    """The JSON carries the floor; with --repeats 3 each job is priced three times (trace_costs), the floor too."""
    once = bench(64, 1, 0.8, 0.03, 8, 2, ("screened",), 0, 0.01, "slow-nic")
    thrice = bench(64, 1, 0.8, 0.03, 8, 2, ("screened",), 0, 0.01, "slow-nic", repeats=3)
    assert once["floor"] == {"wallMinutes": 1.16, "nodeMinutes": 56.8}
    assert thrice["floor"] == {"wallMinutes": 3.48, "nodeMinutes": 170.4}
    assert "fail-closed floor: wall >= 1.16 min, node-min >= 57" in format_table(once)


def test_faults_released_names_the_faulty_nodes_and_the_links_a_verdict_handed_back():
    # released: nodes 0–3 in round 2, 6 in round 5; node 2 is slow, link 1–3 has both ends released, 3–4 one
    final = {"releases": [{"round": 2, "nodes": [[0, 4]]}, {"round": 5, "nodes": [[6, 7]]}]}
    assert faults_released(final, {2, 5}, [(1, 3), (3, 4)]) == [2, (1, 3)]
    assert faults_released({"releases": []}, {2}, [(1, 3)]) == []
    assert faults_released(final, set(), []) == []


@pytest.mark.parametrize("trigger,seed,count,accused", [("full-run", 300, 40, 3), ("workflow", 740, 20, 1),
                                                        ("no-threshold", 705, 50, 3)])
def test_noise_only_bench_runs_the_trials_of_bench_diagnose(trigger: str, seed: int, count: int,
                                                            accused: int) -> None:
    """`bench/bench_diagnose_noise_only.py` says a trial there is `nvcre bench diagnose --faults 0 --noise 0.05
    --dip 0.05 --strategies screened [--trigger workflow|no-threshold]`'s trial: on the same seeds both count the
    same diagnoses that accuse someone. The seed ranges hold such diagnoses (found by running the script), so the
    counts are not the trivial zero."""
    script = load("bench_diagnose_noise_only").trials(64, count, seed, trigger)
    cli = bench(nodes=64, faults=0, noise=0.05, dip=0.05, trials=count, seed=seed, strategies=("screened",),
                trigger=trigger)["strategies"]["screened"]
    assert script["trigger"] == trigger and script["accused"] == accused
    assert cli["falseAccusationRate"] == round(accused / count, 4)


def test_run_shows_observe_every_answer_of_the_planner() -> None:
    """`oracle.run(observe=…)` hands each `plan` answer to the caller (bench_diagnose_search.py reads the search's
    state there): one per round the trace holds, then the final one."""
    oracle, _bad = bench_module.kind_oracle(64, 1, "slow-nic", 0.8, 0.03, random.Random(3), 0.01)
    seen: list[dict] = []
    trace = run(oracle, bench_module.planner_config("adaptive", 64, 8, 3), random.Random(5), observe=seen.append)
    assert len(seen) == len(trace.rounds) + 1 and len(trace.rounds) >= 2
    assert [o["done"] for o in seen] == [False] * len(trace.rounds) + [True] and seen[-1] is trace.final


def test_the_scale_bench_raises_the_screens_cap_for_its_runs_only() -> None:
    """`bench/bench_diagnose_scale.py --screens-max-nodes` measures what the storage goal costs by setting the
    planner's cap in its own process (`screens_cap`): a 64-node run screens first by default (one-node tests in its
    first round), not under a cap of 32, and the cap is back when the block ends."""
    from nvcre_hera.diagnose import screens

    module = load("bench_diagnose_scale")

    def first_round_sizes() -> list[int]:
        _seconds, report, _peak, _left = module.run_once(64, None, None)
        history = report["categories"][0]["diagnose"]["roundHistory"]
        return [s["nodes"] for s in history[0]["testSizes"]]

    before = screens.MAX_NODES
    assert first_round_sizes() == [1]
    with module.screens_cap(32):
        assert screens.MAX_NODES == 32 and 1 not in first_round_sizes()
    assert screens.MAX_NODES == before

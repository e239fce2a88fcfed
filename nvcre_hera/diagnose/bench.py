"""`nvcre bench diagnose`: both strategies on the same seeded scenarios, against the theoretical bounds.

Every trial draws one fault placement and one noise stream from its seed and replays them for each strategy, so
the strategies are compared on identical clusters. Jobs do not count the failing full-group run that triggered the
diagnose (reference §2.2 / Table B); rounds are waves of node-disjoint jobs with at most `cap` on the network.
With `--faults 0` the full-group run is a transient dip on a healthy cluster, and `accusedRate` is the share of
trials in which anybody was accused.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections.abc import Sequence

from nvcre_hera.diagnose.oracle import Oracle, random_oracle, run
from nvcre_hera.diagnose.planner import STRATEGIES


def lower_bounds(nodes: int, faults: int, cap: int) -> dict:
    """⌈log2 C(N,K)⌉ jobs (information bound) and ⌈log_{C+1} N⌉ rounds (partition bound, reference §2.3)."""
    jobs = math.ceil(math.log2(math.comb(nodes, faults))) if faults else 0
    rounds = math.ceil(math.log(nodes) / math.log(cap + 1) - 1e-9) if cap > 0 else 1
    return {"jobs": jobs, "rounds": rounds}


def _trial_oracle(seed: int, nodes: int, faults: int, factor: float, noise: float, dip: float) -> Oracle:
    return random_oracle(nodes, faults, factor, noise, random.Random(seed), dip=dip)


def bench(nodes: int = 1024, faults: int = 1, fault_factor: float = 0.8, noise: float = 0.03, cap: int = 8,
          trials: int = 50, strategies: Sequence[str] = ("halving", "adaptive"), seed: int = 0,
          dip: float = 0.01) -> dict:
    """Run the scenario and return per-strategy means (the numbers `main` prints)."""
    out: dict = {
        "scenario": {"nodes": nodes, "faults": faults, "faultFactor": fault_factor, "noise": noise, "dip": dip,
                     "cap": cap, "trials": trials, "seed": seed},
        "bounds": lower_bounds(nodes, faults, cap),
        "strategies": {},
    }
    for strategy in strategies:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r} (use {', '.join(STRATEGIES)})")
        jobs, rounds, wall, tp, fp, fn, exact, accused, nm = [], [], [], 0, 0, 0, 0, 0, []
        for t in range(trials):
            s = seed + t
            oracle = _trial_oracle(s, nodes, faults, fault_factor, noise, dip)
            rng = random.Random(s * 7919 + 17)
            full: float | bool = True
            if faults == 0:  # a healthy group that failed by a transient dip alone
                full = oracle.healthy(list(range(nodes))) * (1 - rng.uniform(0.1, 0.4))
            config = {"strategy": strategy, "nodeCount": nodes, "cliques": None, "maxConcurrent": cap,
                      "minGroupSize": 2, "baselineGBps": None, "threshold": None, "seed": s, "noise": noise}
            trace = run(oracle, config, rng, full=full)
            bad, acc = oracle.bad_nodes(), trace.accused
            stats = trace.final["stats"]
            jobs.append(stats["jobs"])
            rounds.append(stats["rounds"])
            nm.append(stats["nodeMinutes"])
            wall.append(trace.wall_minutes)
            tp += len(bad & acc)
            fp += len(acc - bad)
            fn += len(bad - acc)
            exact += acc == bad
            accused += bool(acc)
        n = max(trials, 1)
        out["strategies"][strategy] = {
            "jobs": round(sum(jobs) / n, 2),
            "rounds": round(sum(rounds) / n, 2),
            "roundsP95": sorted(rounds)[min(len(rounds) - 1, int(0.95 * len(rounds)))] if rounds else 0,
            "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
            "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
            "exact": round(exact / n, 4),
            "accusedRate": round(accused / n, 4),
            "wallMinutes": round(sum(wall) / n, 1),
            "nodeMinutes": round(sum(nm) / n, 1),
        }
    return out


def format_table(result: dict) -> str:
    """The human-readable table."""
    sc, lb = result["scenario"], result["bounds"]
    lines = [
        f"diagnose bench: N={sc['nodes']} K={sc['faults']} factor={sc['faultFactor']} noise={sc['noise']} "
        f"(+{sc['dip']:.0%} dips) cap={sc['cap']} trials={sc['trials']} seed={sc['seed']}",
        f"lower bounds: jobs >= {lb['jobs']} (log2 C(N,K)), rounds >= {lb['rounds']} (log_(C+1) N)",
        f"{'strategy':<10}{'jobs':>8}{'rounds':>8}{'p95':>5}{'prec':>8}{'recall':>8}{'exact':>7}"
        f"{'accused':>9}{'wall min':>10}{'node-min':>10}",
    ]
    for name, s in result["strategies"].items():
        lines.append(f"{name:<10}{s['jobs']:>8.2f}{s['rounds']:>8.2f}{s['roundsP95']:>5}{s['precision']:>8.3f}"
                     f"{s['recall']:>8.3f}{s['exact']:>7.2f}{s['accusedRate']:>9.2f}{s['wallMinutes']:>10.1f}"
                     f"{s['nodeMinutes']:>10.0f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; the lead wires it in as `nvcre bench diagnose`."""
    ap = argparse.ArgumentParser(prog="nvcre bench diagnose", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--faults", type=int, default=1)
    ap.add_argument("--fault-factor", type=float, default=0.8, help="capacity of a faulty node (0.8 = 20%% slow)")
    ap.add_argument("--noise", type=float, default=0.03, help="Gaussian σ, relative")
    ap.add_argument("--dip", type=float, default=0.01, help="share of jobs dipping 10–40%%")
    ap.add_argument("--cap", type=int, default=8, help="maxConcurrent network jobs per round (0 = unlimited)")
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strategies", default="halving,adaptive")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    if a.nodes < 2 or not 0 <= a.faults <= a.nodes or a.trials < 1:
        ap.error("need --nodes >= 2, 0 <= --faults <= --nodes and --trials >= 1")
    try:
        result = bench(a.nodes, a.faults, a.fault_factor, a.noise, a.cap, a.trials,
                       [s.strip() for s in a.strategies.split(",") if s.strip()], a.seed, a.dip)
    except ValueError as e:
        ap.error(str(e))
    print(json.dumps(result, indent=2) if a.json else format_table(result))
    return 0


__all__ = ["bench", "format_table", "lower_bounds", "main"]

"""`nvcre bench diagnose`: the strategies on the same seeded scenarios, against the theoretical bounds.

Every trial draws one fault placement and one noise stream from its seed and replays them for each strategy, so
the strategies are compared on identical clusters. Jobs do not count the failing full-group run that triggered the
diagnose (reference §2.2 / Table B); rounds are waves of node-disjoint jobs with at most `cap` on the network.
With `--faults 0` the full-group run is a transient dip on a healthy cluster, and `accusedRate` is the share of
trials in which anybody was accused.

What users pay is costed with the simulated cluster's duration model (`nvcre_hera.sim.model`: gang scheduling,
launch, NCCL init and the diagnose job's one 4 GiB all-reduce at the job's expected busbw, on the path of the job's
kind: a single-node `intra` screen on NVLink, a `loopback` screen through the node's NIC), not the planner's own
`job_minutes` estimate: a round lasts as long as its longest job; wall minutes are the sum of the rounds
(the full-group run is excluded, as for jobs); node-minutes sum nodes × job minutes over the jobs.

By default a trial starts as NVCRE's diagnose does (reference §2.2): from a failing full-group run handed to the
planner, with no threshold. `trigger="workflow"` runs it as our compiled workflow does instead: the plan step hands no
full run over (`nvcre_hera/steps/plan_step.py`), and the user's threshold, here `threshold_share` × the oracle's
healthy full-group busbw, is the bar (screens' V0, an unknown root's first split, the final check).
`trigger="no-threshold"` runs it as the workflow runs a category whose thresholds give no `busBandwidthGBps` floor
(`steps/discover.py` `diagnose_setup`: `threshold` None): no full run and no bar, so every verdict rests on the
healthy reference the planner fits from its own jobs.

The planner is not told the oracle's noise: it starts from its own prior and learns from what it measures.
Strategies are the planner's (`halving`, `adaptive`) plus the bench-side `screened`: adaptive with the single-node
loopback and intra screens switched on (`"screens": ["loopback", "intra"]`).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence

from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.oracle import Oracle, run
from nvcre_hera.diagnose.planner import STRATEGIES
from nvcre_hera.diagnose.screens import MAX_NODES, MIN_NODES
from nvcre_hera.jobs.base import DIAGNOSE_BYTES, DIAGNOSE_ITERATIONS
from nvcre_hera.sim import model

#: fault kinds the oracle draws, with the scopes of sim/faults.py's table (see `nvcre_hera.diagnose.oracle`):
#: slow-nic a NIC factor, slow-gpu a GPU factor, nvlink an NVLink factor, link a pair factor, flapping an
#: intermittent NIC factor; mix draws each fault's kind from the five.
FAULT_KINDS = ("slow-nic", "slow-gpu", "nvlink", "link", "flapping", "mix")
MIX_KINDS = FAULT_KINDS[:5]
#: bench strategy name -> (planner strategy, extra planner config)
BENCH_STRATEGIES: dict[str, tuple[str, dict]] = {
    **{s: (s, {}) for s in STRATEGIES},
    "screened": ("adaptive", {"screens": ["loopback", "intra"]}),
}
FLAP_PROBABILITY = 0.5  # a flapping node is slow in this share of the jobs it takes part in
FULL_RUN_TRIES = 20  # draws of the full run that starts a diagnose on flapping nodes (`failing_full_run`)
#: how a trial starts: NVCRE's failing full run, or our workflow's first plan call with or without the user's floor
TRIGGERS = ("full-run", "workflow", "no-threshold")
THRESHOLD_SHARE = 0.9  # the workflow trigger's threshold: this share of the healthy full-group busbw
GPUS_PER_NODE = 8


def lower_bounds(nodes: int, faults: int, cap: int) -> dict:
    """⌈log2 C(N,K)⌉ jobs (information bound) and ⌈log_{C+1} N⌉ rounds (partition bound, reference §2.3)."""
    jobs = math.ceil(math.log2(math.comb(nodes, faults))) if faults else 0
    rounds = math.ceil(math.log(nodes) / math.log(cap + 1) - 1e-9) if cap > 0 else 1
    return {"jobs": jobs, "rounds": rounds}


def fail_closed_floor(nodes: int, faults: int) -> dict:
    """The least wall and node-minutes any fail-closed diagnose of `faults` faults among `nodes` healthy-rate nodes
    can take on the frozen duration model (docs/diagnose-floor.md).

    Fail closed, a diagnose vouches for the nodes it does not accuse only with a job of all of them together: the
    certification's question is whether they run one big job together, and no set of smaller jobs answers it. So
    it ends with a job of at least N − K nodes, after at least one round that localizes something, whose cheapest
    job is a single-node one. Hence wall ≥ t(1) + t(N − K) and node-minutes ≥ (N − K) · t(N − K), whatever the
    strategy. (NVCRE's halving ends with no such job: its rest is never run together.)"""
    oracle = Oracle(n=nodes)
    single = min(model_job_minutes(1, expected_busbw(oracle, [0], kind), kind) for kind in ("intra", "loopback"))
    rest = list(range(nodes - faults))
    final = model_job_minutes(len(rest), expected_busbw(oracle, rest)) if len(rest) > 1 else 0.0
    return {"wallMinutes": round(single + final, 2), "nodeMinutes": round(len(rest) * final, 1),
            "singleNodeJobMinutes": round(single, 3), "finalCheckMinutes": round(final, 3)}


def model_job_minutes(nodes: int, busbw: float, kind: str | None = None) -> float:
    """Minutes of one diagnose job on `nodes` nodes at `busbw` GB/s, from `sim.model` (§4.7), as the simulated
    cluster times the job the workflow runs (sim/cluster.py `_plan_nccl`: bus_factor(test, ranks), latency_us(path,
    nodes, platform), the spec's sizes and iterations): one size of DIAGNOSE_BYTES (the job runs min(the GPU's
    maxBytes, DIAGNOSE_BYTES), and every GPU of catalog/_lib/gpu-defaults.yaml sets 16 GiB or more),
    DIAGNOSE_ITERATIONS iterations, one cycle (`jobs.base.plan_job`). Before 2026-12-07 the bench priced the sim's
    default sweep (8 B to 16 GiB, 32 sizes), about 14 s more per job than a diagnose job runs. The loopback entry's
    literal `-n 10 -N 2` would add 8 collectives, about 0.2 s, to a loopback screen; the simulated cluster prices
    the spec, and so does this.

    kind None: the all-reduce, on the "net" path across nodes ("nvlink" on one); `intra`: the single-node
    all-reduce on "nvlink" (14 µs); `loopback`: the sim's `loopback` test on its "loopback" path, which
    `latency_us` prices as the network floor at 2 nodes (25 + 10 µs), with the all-reduce bus factor.
    """
    if kind is not None and kind not in ("intra", "loopback"):
        raise ValueError(f"unknown job kind {kind!r}")
    sched, launch, init = model.startup_s(nodes)
    path = {"intra": "nvlink", "loopback": "loopback"}.get(kind or "", "net" if nodes > 1 else "nvlink")
    alpha = model.latency_us(path, nodes, "onprem")
    test = "loopback" if kind == "loopback" else "all_reduce"
    measure = model.nccl_measure_s(model.sizes(DIAGNOSE_BYTES, DIAGNOSE_BYTES), busbw,
                                   model.bus_factor(test, nodes * GPUS_PER_NODE), alpha, DIAGNOSE_ITERATIONS, 1)
    return (sched + launch + init + measure) / 60.0


def expected_busbw(oracle: Oracle, nodes: Sequence[int], kind: str | None = None) -> float:
    """The oracle's noiseless value of a job of `kind` (flapping nodes counted as bad: the slower sweep, an upper
    bound)."""
    members = set(nodes)
    f = min([oracle.factors[x] for x in members if x in oracle.factors] +
            [fl for (a, b), fl in oracle.links.items() if a in members and b in members] + [1.0])
    return oracle.value(list(nodes), f, kind)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the ⌈q·n⌉-th smallest value (q = 0.95 → p95)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def job_cost(oracle: Oracle, test: dict) -> float:
    """Minutes of one planner test on the model: a screen batch (`each`) is one single-node job per node, all at
    once, so it lasts as long as its slowest node's job."""
    kind = test.get("kind")
    if test.get("each"):
        return max(model_job_minutes(1, expected_busbw(oracle, [x], kind), kind) for x in test["nodes"])
    return model_job_minutes(len(test["nodes"]), expected_busbw(oracle, test["nodes"], kind), kind)


def trace_costs(rounds: Sequence[Sequence[dict]], bad: set[int], minutes: Callable[[dict], float]) -> dict:
    """Wall, node-minutes and release time of one diagnose, given each round's jobs as the planner's test dicts
    (`nodes`, and `kind` for a single-node screen); `minutes(test)` prices one job.

    * wall: Σ over rounds of the longest job's minutes;
    * nodeMinutes: Σ over jobs of |nodes| × minutes;
    * releaseMinutes: the wall time at the end of the last round in which at least one healthy node (not in
      `bad`) was a member of some job; from then on only faulty nodes are tested, so every healthy node could be
      handed back. 0 when no round used a healthy node. The full-group run is excluded, as it is from wall.
    """
    wall = node_minutes = release = 0.0
    for jobs in rounds:
        durations = [minutes(job) for job in jobs]
        wall += max(durations, default=0.0)
        node_minutes += sum(len(job["nodes"]) * d for job, d in zip(jobs, durations))
        if any(set(job["nodes"]) - bad for job in jobs):
            release = wall
    return {"wallMinutes": wall, "nodeMinutes": node_minutes, "releaseMinutes": release}


def link_scores(links: Sequence[tuple[int, int]], reported: Sequence[dict]) -> tuple[int, int]:
    """(true links pinpointed, reported infrastructure faults holding no true link).

    A link (a, b) is pinpointed when some report's `between` is exactly [[a], [b]] (either order); a report holds a
    link when one of its sides contains a and another b (it may have more than two sides).
    """
    def holds(rep: dict, a: int, b: int) -> bool:  # a probe that cannot narrow reports every part it had as a side
        sides = [set(side) for side in rep["between"]]
        return any(a in x and b in y for i, x in enumerate(sides) for j, y in enumerate(sides) if i != j)

    found = sum(any(sorted(map(sorted, r["between"])) == [[a], [b]] for r in reported) for a, b in links)
    false = sum(not any(holds(r, a, b) for a, b in links) for r in reported)
    return found, false


def kind_oracle(n: int, faults: int, kind: str, factor: float, sigma: float, rng: random.Random,
                dip: float = 0.01) -> tuple[Oracle, set[int]]:
    """The trial's ground truth for one fault kind, and the nodes a perfect diagnose accuses.

    slow-nic: `faults` nodes whose NIC runs at `factor` in every job; slow-gpu, nvlink: the same placement with
    the GPU or NVLink factor at `factor`; flapping: the slow-nic placement, slow in FLAP_PROBABILITY of their jobs;
    link: `faults` bad links between random node pairs, at `factor` only when both ends share a job (no node is at
    fault, so accusing an end is a false accusation; `link_scores` scores the reported infrastructure faults);
    mix: each fault's kind drawn uniformly from MIX_KINDS. slow-nic, flapping and link place their faults as they
    did before slow-gpu and nvlink existed, for the same seed.
    """
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r} (use {', '.join(FAULT_KINDS)})")
    oracle = Oracle(n=n, sigma=sigma, dip=dip)
    truth: set[int] = set()
    if kind in ("slow-nic", "flapping", "slow-gpu", "nvlink"):  # the same placement as `random_oracle`
        truth = set(rng.sample(range(n), faults) if faults else [])
        scope = {"slow-gpu": oracle.gpu_factors, "nvlink": oracle.nvlink_factors}.get(kind, oracle.factors)
        scope.update({x: factor for x in truth})
        if kind == "flapping":
            oracle.flaps = {x: FLAP_PROBABILITY for x in truth}
        return oracle, truth
    used: set[int] = set()
    for _ in range(faults):
        k = rng.choice(MIX_KINDS) if kind == "mix" else kind
        free = [x for x in range(n) if x not in used]
        if k == "link" and len(free) >= 2:
            a, b = sorted(rng.sample(free, 2))
            oracle.links[(a, b)] = factor
            used |= {a, b}
            continue
        x = rng.choice(free)
        used.add(x)
        {"slow-gpu": oracle.gpu_factors, "nvlink": oracle.nvlink_factors}.get(k, oracle.factors)[x] = factor
        if k == "flapping":
            oracle.flaps[x] = FLAP_PROBABILITY
        truth.add(x)
    return oracle, truth


def failing_full_run(oracle: Oracle, rng: random.Random, tries: int = FULL_RUN_TRIES) -> float:
    """The full-group run that starts a diagnose on a cluster with flapping nodes. A diagnose starts only when the
    certification's run failed, and with its flappers' flaps off the run is healthy. So the run is drawn again
    until it is clearly low (3σ below healthy), at most `tries` times, and the first such value is handed over."""
    nodes = list(range(oracle.n))
    line = oracle.healthy(nodes) * (1 - 3 * oracle.sigma)
    value = 0.0
    for _ in range(tries):
        value = float(oracle.measure(nodes, rng)["busBandwidthGBps"] or 0.0)
        if value < line:
            break
    return value


def trial_start(oracle: Oracle, config: dict, rng: random.Random, trigger: str, faults: int,
                threshold_share: float = THRESHOLD_SHARE) -> float | bool:
    """What a trial hands the planner first (`oracle.run`'s `full`), setting the user's floor in `config` for the
    workflow trigger. NVCRE's trigger: the failing full run, measured (True), or, with no fault, a transient dip
    of the healthy value, or, with flapping nodes, a draw that failed (`failing_full_run`); the workflow's
    triggers: none (False), the planner's first call measures."""
    healthy = oracle.healthy(list(range(oracle.n)))
    if trigger != "full-run":
        if trigger == "workflow":
            config["threshold"] = round(threshold_share * healthy, 2)
        return False
    if faults == 0:
        return healthy * (1 - rng.uniform(0.1, 0.4))  # a healthy group that failed by a transient dip alone
    if oracle.flaps:
        return failing_full_run(oracle, rng)
    return True


def planner_config(strategy: str, nodes: int, cap: int, seed: int, screens_max_nodes: int | None = None,
                   repeats: int = 1) -> dict:
    """The planner config of one trial for a bench strategy name. The oracle's noise is not in it: the planner
    uses its own prior and what it measures. `screens_max_nodes`: a raised screens cap (`screens.MAX_NODES`);
    `repeats`: runs per test, the worst counting, as the workflow's discovery tells the planner (repeatCount)."""
    name, extra = BENCH_STRATEGIES[strategy]
    return {"strategy": name, "nodeCount": nodes, "cliques": None, "maxConcurrent": cap, "minGroupSize": 2,
            "baselineGBps": None, "threshold": None, "seed": seed, **extra,
            **({"screensMaxNodes": screens_max_nodes} if screens_max_nodes is not None else {}),
            **({"repeats": repeats} if repeats > 1 else {})}


def _run_strategy(strategy: str, margin: float | None, nodes: int, faults: int, kind: str, fault_factor: float,
                  noise: float, cap: int, trials: int, seed: int, dip: float, trigger: str = "full-run",
                  threshold_share: float = THRESHOLD_SHARE, repeats: int = 1,
                  screens_max_nodes: int | None = None) -> dict:
    jobs, rounds, wall, nm, rel = [], [], [], [], []
    tp = fp = fn = exact = accused = healthy_accused = links = links_found = false_infra = handed_back = 0
    for t in range(trials):
        s = seed + t
        oracle, bad = kind_oracle(nodes, faults, kind, fault_factor, noise, random.Random(s), dip)
        rng = random.Random(s * 7919 + 17)
        config = planner_config(strategy, nodes, cap, s, screens_max_nodes, repeats)
        full = trial_start(oracle, config, rng, trigger, faults, threshold_share)
        if margin is not None:
            config["halvingMargin"] = margin
        trace = run(oracle, config, rng, full=full, **({"repeats": repeats} if repeats > 1 else {}))
        acc = trace.accused
        stats = trace.final["stats"]
        # each repeat is a job of its own (startup included), one after the other
        costs = trace_costs(trace.rounds, bad, lambda job: repeats * job_cost(oracle, job))
        jobs.append(stats["jobs"])
        rounds.append(stats["rounds"])
        wall.append(costs["wallMinutes"])
        nm.append(costs["nodeMinutes"])
        rel.append(costs["releaseMinutes"])
        tp += len(bad & acc)
        fp += len(acc - bad)
        fn += len(bad - acc)
        exact += acc == bad
        accused += bool(acc)
        healthy_accused += bool(acc - bad)
        handed_back += bool(faults_released(trace.final, bad, oracle.links))
        found, false = link_scores(sorted(oracle.links), trace.final.get("infrastructureFaults") or [])
        links += len(oracle.links)
        links_found += found
        false_infra += bool(false)
    n = max(trials, 1)
    return {
        "jobs": round(sum(jobs) / n, 2),
        "rounds": round(sum(rounds) / n, 2),
        "roundsP95": percentile(rounds, 0.95),
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
        "exact": round(exact / n, 4),
        "accusedRate": round(accused / n, 4),
        "falseAccusationRate": round(healthy_accused / n, 4),
        "linkRecall": round(links_found / links, 4) if links else None,
        "falseInfraRate": round(false_infra / n, 4),
        "faultReleasedRate": round(handed_back / n, 4),
        "wallMinutes": round(sum(wall) / n, 1),
        "wallMedian": round(statistics.median(wall), 1),
        "wallP95": round(percentile(wall, 0.95), 1),
        "nodeMinutes": round(sum(nm) / n, 1),
        "nodeMinutesMedian": round(statistics.median(nm), 1),
        "releaseMedian": round(statistics.median(rel), 1),
        "releaseP95": round(percentile(rel, 0.95), 1),
        **({"margin": margin} if margin is not None else {}),
    }


def faults_released(final: dict, bad: set[int], links: Iterable[tuple[int, int]]) -> list:
    """What the verdict handed back that it must not have: faulty nodes it released, and bad links both of whose
    ends it released (fail closed: a fault missed is to be left unresolved, never vouched for)."""
    released = {x for group in final.get("releases") or [] for x in ns.to_nodes(group["nodes"])}
    return sorted(bad & released) + [pair for pair in links if set(pair) <= released]


def best_halving(sweep: dict[str, dict], min_recall: float = 0.99) -> str | None:
    """The sweep entry with the lowest median wall among those with recall ≥ `min_recall` (else the best recall).

    Ties go to the lower mean wall, then the higher precision.
    """
    if not sweep:
        return None
    ok = [k for k, v in sweep.items() if v["recall"] >= min_recall]
    if ok:
        return min(ok, key=lambda k: (sweep[k]["wallMedian"], sweep[k]["wallMinutes"], -sweep[k]["precision"]))
    return max(sweep, key=lambda k: (sweep[k]["recall"], -sweep[k]["wallMedian"]))


def bench(nodes: int = 1024, faults: int = 1, fault_factor: float = 0.8, noise: float = 0.03, cap: int = 8,
          trials: int = 50, strategies: Sequence[str] = ("halving", "adaptive"), seed: int = 0,
          dip: float = 0.01, kind: str = "slow-nic", halving_margins: Sequence[float] = (),
          trigger: str = "full-run", threshold_share: float = THRESHOLD_SHARE, repeats: int = 1,
          screens_max_nodes: int | None = None) -> dict:
    """Run the scenario and return per-strategy figures (the numbers `main` prints).

    With `halving_margins`, halving also runs at each margin on the same seeds (`halving@<m>`), and `halving*`
    is the best of them: lowest median wall minutes subject to recall ≥ 0.99.
    """
    out: dict = {
        "scenario": {"nodes": nodes, "faults": faults, "faultKind": kind, "faultFactor": fault_factor,
                     "noise": noise, "dip": dip, "cap": cap, "trials": trials, "seed": seed,
                     **({"trigger": trigger} if trigger != "full-run" else {}),
                     **({"thresholdShare": threshold_share} if trigger == "workflow" else {}),
                     **({"repeats": repeats} if repeats > 1 else {}),
                     **({"screensMaxNodes": screens_max_nodes} if screens_max_nodes is not None else {})},
        "bounds": lower_bounds(nodes, faults, cap),
        # each repeat is a job of its own, one after the other (as trace_costs prices them)
        "floor": {k: round(v * repeats, 2) for k, v in fail_closed_floor(nodes, faults).items()
                  if k in ("wallMinutes", "nodeMinutes")},
        "strategies": {},
    }
    for strategy in strategies:
        if strategy not in BENCH_STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r} (use {', '.join(BENCH_STRATEGIES)})")
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r} (use {', '.join(FAULT_KINDS)})")
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown trigger {trigger!r} (use {', '.join(TRIGGERS)})")
    if not 0 < threshold_share <= 1:
        raise ValueError(f"the threshold share must lie in (0, 1], got {threshold_share}")
    if repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {repeats}")
    if screens_max_nodes is not None and screens_max_nodes < MIN_NODES:
        raise ValueError(f"--screens-max-nodes must be at least {MIN_NODES} (screens.MIN_NODES), got "
                         f"{screens_max_nodes}")
    how = {"trigger": trigger, "threshold_share": threshold_share, "repeats": repeats,
           "screens_max_nodes": screens_max_nodes}
    for strategy in strategies:
        out["strategies"][strategy] = _run_strategy(strategy, None, nodes, faults, kind, fault_factor, noise, cap,
                                                    trials, seed, dip, **how)
    if halving_margins:
        sweep = {f"halving@{m:g}": _run_strategy("halving", m, nodes, faults, kind, fault_factor, noise, cap,
                                                 trials, seed, dip, **how) for m in halving_margins}
        out["strategies"].update(sweep)
        best = best_halving(sweep)
        if best is not None:
            out["strategies"]["halving*"] = dict(sweep[best])
            out["bestHalving"] = {"entry": best, "criterion": "lowest median wall minutes with recall >= 0.99"}
    return out


def format_table(result: dict) -> str:
    """The human-readable table."""
    sc, lb = result["scenario"], result["bounds"]
    lines = [
        f"diagnose bench: N={sc['nodes']} K={sc['faults']} kind={sc.get('faultKind', 'slow-nic')} "
        f"factor={sc['faultFactor']} noise={sc['noise']} "
        f"(+{sc['dip']:.0%} dips) cap={sc['cap']} trials={sc['trials']} seed={sc['seed']}"
        + (f" trigger={sc['trigger']} (threshold {sc['thresholdShare']:g} x healthy)" if "trigger" in sc else "")
        + (f" repeats={sc['repeats']} (worst counts)" if "repeats" in sc else ""),
        f"lower bounds: jobs >= {lb['jobs']} (log2 C(N,K)), rounds >= {lb['rounds']} (log_(C+1) N)"
        + (f"; fail-closed floor: wall >= {result['floor']['wallMinutes']:g} min, node-min >= "
           f"{result['floor']['nodeMinutes']:.0f} (docs/diagnose-floor.md)" if "floor" in result else ""),
        f"{'strategy':<14}{'jobs':>7}{'rounds':>7}{'p95':>4}{'prec':>7}{'recall':>7}{'falseAcc':>9}"
        f"{'wall med':>9}{'p95':>6}{'node-min':>9}{'release med':>12}{'p95':>6}{'linkRec':>8}{'falseInf':>9}"
        f"{'relBad':>7}",
    ]
    for name, s in result["strategies"].items():
        lines.append(f"{name:<14}{s['jobs']:>7.2f}{s['rounds']:>7.2f}{s['roundsP95']:>4}{s['precision']:>7.3f}"
                     f"{s['recall']:>7.3f}{s['falseAccusationRate']:>9.2f}{s['wallMedian']:>9.1f}"
                     f"{s['wallP95']:>6.1f}{s['nodeMinutes']:>9.0f}{s['releaseMedian']:>12.1f}"
                     f"{s['releaseP95']:>6.1f}"
                     f"{'-' if s['linkRecall'] is None else format(s['linkRecall'], '.2f'):>8}"
                     f"{s['falseInfraRate']:>9.2f}{s['faultReleasedRate']:>7.3f}")
    if "bestHalving" in result:
        lines.append(f"halving* = {result['bestHalving']['entry']} ({result['bestHalving']['criterion']})")
    lines.append("minutes from nvcre_hera.sim.model; node-min is the mean; release = end of the last round "
                 "with a healthy node in a job;\nlinkRec = bad links pinpointed as infrastructure faults (both ends "
                 "exact); falseInf = share of trials reporting an infrastructure fault that holds no bad link;\n"
                 "relBad = share of trials whose verdict released a faulty node or both ends of a bad link")
    return "\n".join(lines)


def _names(text: str, flag: str, allowed: Sequence[str], noun: str, entry: str = "") -> list[str]:
    """A comma list given to `flag`: at least one `noun`, each one of `allowed`."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    for name in names:
        if name not in allowed:
            raise ValueError(f"unknown {flag}{entry} {name!r} (use {', '.join(allowed)})")
    if not names:
        raise ValueError(f"{flag} needs at least one {noun}")
    return names


def _kinds(text: str) -> list[str]:
    return _names(text, "--fault-kind", FAULT_KINDS, "kind")


def _strategies(text: str) -> list[str]:
    return _names(text, "--strategies", list(BENCH_STRATEGIES), "strategy", " entry")


def _margins(text: str) -> list[float]:
    try:
        margins = [float(m) for m in text.split(",") if m.strip()]
    except ValueError:
        raise ValueError(f"--halving-margins takes comma-separated numbers, got {text!r}") from None
    if any(not 0 < m < 1 for m in margins):
        raise ValueError("--halving-margins must lie strictly between 0 and 1")
    return margins


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; the lead wires it in as `nvcre bench diagnose`."""
    ap = argparse.ArgumentParser(prog="nvcre bench diagnose", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--faults", type=int, default=1)
    ap.add_argument("--fault-factor", type=float, default=0.8, help="capacity of a faulty node (0.8 = 20%% slow)")
    ap.add_argument("--fault-kind", default="slow-nic",
                    help=f"one or a comma list of {', '.join(FAULT_KINDS)}")
    ap.add_argument("--halving-margins", default="",
                    help="comma list of halving margins to sweep on the same seeds; the best is halving*")
    ap.add_argument("--noise", type=float, default=0.03, help="the oracle's Gaussian σ, relative (not told to the "
                    "planner)")
    ap.add_argument("--dip", type=float, default=0.01, help="share of jobs dipping 10–40%%")
    ap.add_argument("--cap", type=int, default=8, help="maxConcurrent network jobs per round (0 = unlimited)")
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strategies", default="halving,adaptive",
                    help=f"comma list of {', '.join(BENCH_STRATEGIES)} (screened: adaptive with the single-node "
                    "loopback and intra screens)")
    ap.add_argument("--trigger", default="full-run", choices=TRIGGERS,
                    help="full-run: start from a failing full-group run, no threshold (NVCRE's diagnose); workflow: "
                    "as the compiled workflow runs it, no full run and the user's threshold as the bar; no-threshold: "
                    "as the workflow runs a category with no busBandwidthGBps threshold (no full run, no bar)")
    ap.add_argument("--threshold-share", type=float, default=THRESHOLD_SHARE,
                    help="with --trigger workflow: the threshold as a share of the healthy full-group busbw")
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs per test, the worst counting (the certification's repeatCount); each is priced, and "
                    "the planner is told, as the workflow's discovery tells it")
    ap.add_argument("--screens-max-nodes", type=int, default=None,
                    help=f"the largest group the screened strategy screens (the planner config's screensMaxNodes, "
                    f"a measurement: no Certification sets it; default screens.MAX_NODES, {MAX_NODES})")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    if a.nodes < 2 or not 0 <= a.faults <= a.nodes or a.trials < 1:
        ap.error("need --nodes >= 2, 0 <= --faults <= --nodes and --trials >= 1")
    try:
        kinds = _kinds(a.fault_kind)
        strategies = _strategies(a.strategies)
        margins = _margins(a.halving_margins)
        if "link" in kinds or "mix" in kinds:
            if 2 * a.faults > a.nodes:
                raise ValueError("--fault-kind link needs 2 x --faults <= --nodes")
        results = [bench(a.nodes, a.faults, a.fault_factor, a.noise, a.cap, a.trials,
                         strategies, a.seed, a.dip, kind, margins, a.trigger, a.threshold_share, a.repeats,
                         a.screens_max_nodes)
                   for kind in kinds]
    except ValueError as e:
        ap.error(str(e))
    if a.json:
        print(json.dumps(results[0] if len(results) == 1 else {"kinds": {r["scenario"]["faultKind"]: r
                                                                         for r in results}}, indent=2))
    else:
        print("\n\n".join(format_table(r) for r in results))
    return 0


__all__ = ["BENCH_STRATEGIES", "FAULT_KINDS", "MIX_KINDS", "THRESHOLD_SHARE", "TRIGGERS", "bench", "best_halving",
           "expected_busbw", "fail_closed_floor", "faults_released", "format_table", "job_cost", "kind_oracle",
           "link_scores", "lower_bounds", "main", "model_job_minutes", "percentile", "planner_config", "trace_costs",
           "trial_start"]

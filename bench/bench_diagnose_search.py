"""Inside the `adaptive` search without screens (issue 11): two figures the README and docs/diagnose-noise.md quote,
read from the planner's own state as `nvcre bench diagnose` trials run (the same seeds and streams). A measurement:
it checks no target and changes nothing in the planner.

    python bench/bench_diagnose_search.py deferred [--nodes 4096] [--faults 1,2,4] [--trials 60]
    python bench/bench_diagnose_search.py sigma [--nodes 4096] [--trials 100]

* `deferred`: as the workflow runs it (`--trigger workflow`), the share of trials whose first final check of the
  rest ran while a deferred part (an untested sibling of a failing part, `state["def"]`) still held a faulty node,
  and the share that ran more than one final check.
* `sigma`: noise-only failures in NVCRE's trigger (σ 5 %, 5 % dips, not told): the search's spread estimate at the
  end (`evidence.Reference` refitted from the final state, with the planner's own prior) as deciles, and the median
  number of jobs it was estimated from.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics

from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.bench import THRESHOLD_SHARE, kind_oracle, planner_config, trial_start
from nvcre_hera.diagnose.evidence import Reference
from nvcre_hera.diagnose.oracle import run

NOISE_PRIOR = 0.03  # the planner's prior when no config names one (`state.Ctx`)


def deferred(nodes: int, faults: int, trials: int, seed: int = 0) -> dict:
    held = checked_twice = 0
    for s in range(seed, seed + trials):
        oracle, bad = kind_oracle(nodes, faults, "slow-nic", 0.8, 0.03, random.Random(s), 0.01)
        config = planner_config("screened", nodes, 8, s)
        config["threshold"] = round(THRESHOLD_SHARE * oracle.healthy(list(range(nodes))), 2)
        checks: list[bool] = []  # per final check scheduled: whether a deferred part held a faulty node then
        seen: set[int] = set()

        def observe(out: dict) -> None:
            st = out["state"]
            for v in (w for w in st.get("work") or [] if w["k"] == "V" and "t" in w and w["id"] not in seen):
                seen.add(v["id"])
                checks.append(any(x in bad for part in st["def"] for x in ns.to_nodes(part)))

        run(oracle, config, random.Random(s * 7919 + 17), full=False, observe=observe)
        held += bool(checks) and checks[0]
        checked_twice += len(checks) > 1
    return {"nodes": nodes, "faults": faults, "trials": trials, "faultInDeferredAtFirstCheck": held,
            "moreThanOneFinalCheck": checked_twice}


def sigma(nodes: int, trials: int, seed: int = 0) -> dict:
    estimates, jobs = [], []
    for s in range(seed, seed + trials):
        oracle, _bad = kind_oracle(nodes, 0, "slow-nic", 0.8, 0.05, random.Random(s), 0.05)
        rng = random.Random(s * 7919 + 17)  # the bench's stream: a noise-only trial there is this one
        config = planner_config("screened", nodes, 8, s)
        st = run(oracle, config, rng, full=trial_start(oracle, config, rng, "full-run", 0)).final["state"]
        ref = Reference(dict(st["ev"]), None, max(NOISE_PRIOR, float(st.get("s0") or 0.0)))
        estimates.append(ref.sigma)
        jobs.append(len(st["ev"]["o"]))
    deciles = [round(q, 4) for q in statistics.quantiles(estimates, n=10)]
    return {"nodes": nodes, "trials": trials, "sigmaDeciles": deciles, "jobsMedian": statistics.median(jobs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_diagnose_search.py", description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("deferred", "sigma"))
    ap.add_argument("--nodes", type=int, default=4096)
    ap.add_argument("--faults", default="1,2,4", help="deferred: comma list of fault counts")
    ap.add_argument("--trials", type=int, default=None, help="60 for deferred, 100 for sigma")
    a = ap.parse_args(argv)
    if a.what == "deferred":
        for k in (int(x) for x in a.faults.split(",")):
            print(json.dumps(deferred(a.nodes, k, a.trials or 60)), flush=True)
    else:
        print(json.dumps(sigma(a.nodes, a.trials or 100)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

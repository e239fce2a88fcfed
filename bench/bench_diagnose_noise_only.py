"""Who accuses a healthy node: noise-only diagnoses of the screened planner, each accusation put down to the rule
that made it (issue 11's ≤ 1 % target; docs/diagnose-screens.md).

    python bench/bench_diagnose_noise_only.py [--nodes 64,256,1024,4096] [--trials 1000] [--seed 0]
                                              [--trigger full-run|workflow|no-threshold]

A trial is `nvcre bench diagnose --faults 0 --noise 0.05 --dip 0.05 --strategies screened`'s: a healthy cluster
whose full-group run was a transient dip, σ 5 % and 5 % dips, the planner told neither. With `--trigger workflow`
it is that command's `--trigger workflow` trial instead: no full-group run handed over, and the user's threshold at
90 % of the healthy full-group busbw (a run of the whole group can still dip below it); with `--trigger no-threshold`
neither a full run nor a threshold (a category without a bandwidth floor). Above 4096 nodes screens
are off (`screens.MAX_NODES`), so there `screened` would be the `adaptive` search alone. An accusation is the
screens' lows in a row (`sk` in the planner's record), their near-miss test (`nm`), or the `adaptive` search
after the hand-over (neither). Also counted: `held`, the trials whose verdict holds a healthy node back, unaccused,
as a near miss the screens could not decide (`screens.hold_undecided`: not an accusation, but not handed back), and
`unresolved`, the trials whose verdict leaves any node unresolved (held for any reason, `held` among them).
A measurement: it checks no target.
"""

from __future__ import annotations

import argparse
import json
import random

from nvcre_hera.diagnose.bench import TRIGGERS, kind_oracle, planner_config, trial_start
from nvcre_hera.diagnose.oracle import run
from nvcre_hera.diagnose.screens import UNDECIDED

NOISE, DIP = 0.05, 0.05


def source(record: dict) -> str:
    return "near-miss" if record.get("nm") else "screens" if record.get("sk") else "search"


def trials(nodes: int, count: int, seed: int, trigger: str = "full-run", screens_max_nodes: int | None = None) -> dict:
    out = {"nodes": nodes, "trigger": trigger, "trials": count, "accused": 0, "screens": 0, "near-miss": 0,
           "search": 0, "held": 0, "unresolved": 0}
    for s in range(seed, seed + count):
        oracle, _bad = kind_oracle(nodes, 0, "slow-nic", 0.8, NOISE, random.Random(s), DIP)
        rng = random.Random(s * 7919 + 17)  # the bench's stream, so a trial here is that trial
        config = planner_config("screened", nodes, 8, s, screens_max_nodes)
        final = run(oracle, config, rng, full=trial_start(oracle, config, rng, trigger, 0)).final
        acc = final["state"]["acc"]
        out["accused"] += bool(acc)
        out["held"] += UNDECIDED in (final.get("unresolvedWhy") or [])
        out["unresolved"] += bool(final.get("unresolved"))
        for name in {source(a) for a in acc}:
            out[name] += 1
    out["accusedRate"] = round(out["accused"] / max(count, 1), 4)
    out["heldRate"] = round(out["held"] / max(count, 1), 4)
    out["unresolvedRate"] = round(out["unresolved"] / max(count, 1), 4)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_diagnose_noise_only.py", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="64,256,1024,4096")
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trigger", choices=TRIGGERS, default="full-run")
    ap.add_argument("--screens-max-nodes", type=int, default=None,
                    help="raise the planner's screens cap (1024) for the trials: 4096 screens the 4096-node ones")
    a = ap.parse_args(argv)
    for n in (int(x) for x in a.nodes.split(",")):
        print(json.dumps(trials(n, a.trials, a.seed, a.trigger, a.screens_max_nodes)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What diagnose costs users, per fault kind (issue 11): the README's grid of `nvcre bench diagnose` cells.

    python bench/bench_diagnose_grid.py [--trials 200] [--nodes 64,256,1024] [--faults 1,2,4] [--out DIR]
                                        [--trigger full-run|workflow|no-threshold] [--threshold-share 0.9]
                                        [--table-only]

Each cell runs halving (with its margin swept on the same seeds), adaptive without screens and `screened` (the
workflow's default from 32 to 4096 nodes) on the same seeded scenarios: cap 8, σ 3 % + 1 % dips, the planner told
neither; fault factor 0.8, 0.5 for slow-gpu and nvlink (a 20 %-slow GPU hardly shows in a multi-node job). Writes
one JSON per cell to --out and prints the markdown table of the README (its last column: the share of trials whose
verdict released a faulty node or both ends of a bad link, `bench.faults_released`). A measurement: it checks no
target.
`--trigger workflow` runs every cell as the compiled workflow does (no full run handed over, the threshold at
`--threshold-share` of the healthy full-group busbw; `nvcre_hera.diagnose.bench`); `--trigger no-threshold` as it runs
a category with no bandwidth floor (no full run, no threshold).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from nvcre_hera.diagnose.bench import FAULT_KINDS, THRESHOLD_SHARE, TRIGGERS, bench, fail_closed_floor

MARGINS = (0.05, 0.1)
WEAK_KINDS = ("slow-gpu", "nvlink")  # multi-node jobs run at the scale-out rate: only a deep GPU fault shows there


def cell(nodes: int, faults: int, kind: str, trials: int, trigger: str = "full-run",
         threshold_share: float = THRESHOLD_SHARE, screens_max_nodes: int | None = None) -> dict:
    factor = 0.5 if kind in WEAK_KINDS else 0.8
    started = time.perf_counter()
    result = bench(nodes, faults, factor, 0.03, 8, trials, ("halving", "adaptive", "screened"), 0, 0.01, kind, MARGINS,
                   trigger, threshold_share, screens_max_nodes=screens_max_nodes)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def _link(v: dict) -> str:
    return "–" if v["linkRecall"] is None else f"{v['linkRecall']:.2f}"


def row(result: dict) -> str:
    sc = result["scenario"]
    s = result["strategies"]
    h, a, c = s["halving*"], s["adaptive"], s["screened"]
    margin = result["bestHalving"]["entry"].split("@")[1] + ("‡" if h["recall"] < 0.99 else "")
    wall = c["wallMedian"] / max(h["wallMedian"], 1e-9)
    nm = c["nodeMinutes"] / max(h["nodeMinutes"], 1e-9)
    floor = fail_closed_floor(sc["nodes"], sc["faults"])
    floor_wall = floor["wallMinutes"] / max(h["wallMedian"], 1e-9)
    floor_nm = floor["nodeMinutes"] / max(h["nodeMinutes"], 1e-9)
    return (f"| {sc['nodes']} | {sc['faults']} | {sc['faultKind']} "
            f"| ({margin}) {h['wallMedian']} / {h['wallP95']}, {h['nodeMinutes']:.0f}, {h['recall']:.2f}, {_link(h)} "
            f"| {a['wallMedian']} / {a['wallP95']}, {a['nodeMinutes']:.0f}, {a['recall']:.2f}, {_link(a)} "
            f"| {c['wallMedian']} / {c['wallP95']}, {c['nodeMinutes']:.0f}, {c['jobs']:.0f}, {c['rounds']:.1f}, "
            f"{c['precision']:.2f}, {c['recall']:.2f}, {c['falseAccusationRate']:.3f}, {_link(c)}, "
            f"{c['falseInfraRate']:.3f} "
            f"| {wall:.2f}{_verdict(wall, floor_wall, 0.6)} | {nm:.1f}{_verdict(nm, floor_nm, 1.0)} "
            f"| {floor['wallMinutes']} ({floor_wall:.2f}), {floor['nodeMinutes']:.0f} ({floor_nm:.1f}) "
            f"| {h['faultReleasedRate']:.3f} / {a['faultReleasedRate']:.3f} / {c['faultReleasedRate']:.3f} |")


def _verdict(ratio: float, floor: float, target: float) -> str:
    """'' when the target is met; 'missed' when some fail-closed plan could meet it; 'unreachable' when even the
    fail-closed floor (bench.fail_closed_floor) is above it."""
    return "" if ratio <= target else (" unreachable" if floor > target else " missed")


HEADER = ("| N | K | kind | halving* (margin): wall med / p95, node-min, recall, link | adaptive: wall med / p95, "
          "node-min, recall, link | screened: wall med / p95, node-min, jobs, rounds, prec, recall, false-acc, link, "
          "false-infra "
          "| screened wall ÷ halving* (≤ 0.6) | screened node-min ÷ halving* (≤ 1.0) "
          "| fail-closed floor: wall (÷ halving*), node-min (÷ halving*) "
          "| trials handing a fault back: halving* / adaptive / screened |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_diagnose_grid.py", description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--nodes", default="64,256,1024")
    ap.add_argument("--faults", default="1,2,4")
    ap.add_argument("--kinds", default=",".join(FAULT_KINDS))
    ap.add_argument("--out", default="out/bench-diagnose-grid")
    ap.add_argument("--trigger", default="full-run", choices=TRIGGERS)
    ap.add_argument("--threshold-share", type=float, default=THRESHOLD_SHARE)
    ap.add_argument("--screens-max-nodes", type=int, default=None,
                    help="the largest group `screened` screens (nvcre bench diagnose --screens-max-nodes; "
                    "default screens.MAX_NODES, 4096)")
    ap.add_argument("--table-only", action="store_true",
                    help="print the table from the cells' JSON already in --out, running nothing")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(x) for x in a.nodes.split(",")):
        for k in (int(x) for x in a.faults.split(",")):
            for kind in a.kinds.split(","):
                if kind in ("link", "mix") and 2 * k > n:
                    continue
                path = out / f"{n}-{k}-{kind}.json"
                if a.table_only:
                    if not path.exists():
                        continue
                    result = json.loads(path.read_text())
                else:
                    result = cell(n, k, kind, a.trials, a.trigger, a.threshold_share, a.screens_max_nodes)
                    path.write_text(json.dumps(result, indent=1))
                rows.append(row(result))
                print(rows[-1], flush=True)
    print("\n" + HEADER + "\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What each diagnose round did, kept in the planner state for the report: tests run, how many failed, their sizes,
the nodes the round cleared, and when it ended. It only records: no planner decision reads it.

One entry per round, `state["h"]`, as short keys (the state is stored by Argo at every round):
``{"r": round, "t": tests, "s": [[nodes per test, tests of that size], ...], "u": ranges, "f": failed,
"c": ranges, "x": ranges, "e": seconds}``. `r`, `t`, `s` and `u` are written when the round's tests are issued
(`u`: nodes cleared before the round that run in it again, e.g. as a padding partner); `f`, `c` (nodes the round's
results cleared), `x` (cleared nodes the round put back in doubt, an intermittent search) and `e` (seconds from the
first plan call to the one that read the round's results, when the plan step knows a clock) when its results come
back. Node sets are index ranges: each node enters `c` once per clearing, so at 4096 nodes the history is a few KiB.

A node's release round is the last round that cleared it or ran it after it was cleared: from then on the search
no longer needs it (`releases`). Nodes not cleared at the end (accused, unresolved, on an infrastructure fault,
never exonerated) are not released.
"""

from __future__ import annotations

from collections.abc import Sequence

from nvcre_hera.diagnose import halving
from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.state import Ctx


def start(state: dict, now: float | None) -> None:
    """A fresh history; `now` is the clock at the first plan call (None: no clock, rounds only)."""
    state["h"] = []
    if now is not None:
        state["t0"] = round(float(now), 1)


def failed(ctx: Ctx, test_id: str) -> bool:
    """Whether a test of the last round failed, as its strategy reads it: crashed or sent no result; halving, below
    its pass floor (the user's threshold, else the healthy reference less the margin); adaptive, more than 3σ below
    the healthy reference it learned (it localizes by comparison: a floor that every job misses fails no test
    here, the verdict's `unresolved` says that)."""
    if ctx.state["st"] == "halving":
        return halving.fails(ctx, test_id)
    if ctx.value(test_id) is None:
        return True
    r = ctx.ratio(test_id)
    return r is not None and r < 1 - 3 * ctx.sigma


def open_round(ctx: Ctx, tests: Sequence[dict]) -> None:
    """Record a round as its tests are issued."""
    hist = ctx.state.get("h")
    if hist is None or not tests:
        return
    sizes: dict[int, int] = {}
    for t in tests:
        sizes[len(t["nodes"])] = sizes.get(len(t["nodes"]), 0) + 1
    again = ns.from_nodes(x for t in tests for x in t["nodes"] if ctx.ok[x])
    entry = {"r": ctx.state["round"], "t": len(tests), "s": sorted(([k, v] for k, v in sizes.items()), reverse=True)}
    if again:
        entry["u"] = again
    hist.append(entry)


def close_round(ctx: Ctx, ok_before: bytearray | bytes, now: float | None) -> None:
    """Complete the open round's entry once its results are absorbed (`ok_before`: the cleared set before)."""
    hist = ctx.state.get("h")
    if not hist or "f" in hist[-1]:
        return
    entry = hist[-1]
    entry["f"] = sum(1 for tid in ctx.meta if failed(ctx, tid))
    entry["c"] = ns.from_nodes(x for x in range(ctx.n) if ctx.ok[x] and not ok_before[x])
    doubted = ns.from_nodes(x for x in range(ctx.n) if ok_before[x] and not ctx.ok[x])
    if doubted:
        entry["x"] = doubted
    t0 = ctx.state.get("t0")
    if t0 is not None and now is not None:
        entry["e"] = round(max(0.0, float(now) - t0), 1)


def releases(state: dict, ok: bytearray | bytes, held: Sequence[int] = ()) -> list[dict]:
    """Release groups `{"r": round, "e": seconds (when known), "s": ranges}`, by round: each node cleared at the
    end (`ok`) and not `held` (on a fault or in an unresolved group), released at the last round that cleared it or
    ran it once cleared."""
    n = len(ok)
    last = [0] * n
    for entry in state.get("h") or []:
        r = entry["r"]
        for key in ("c", "u"):
            for x in ns.to_nodes(entry.get(key) or []):
                if x < n:
                    last[x] = r
    keep = set(held)
    by_round: dict[int, list[int]] = {}
    for x in range(n):
        if ok[x] and last[x] and x not in keep:
            by_round.setdefault(last[x], []).append(x)
    ended = {entry["r"]: entry.get("e") for entry in state.get("h") or []}
    return [{"r": r, **({"e": ended[r]} if ended.get(r) is not None else {}), "s": ns.from_nodes(nodes)}
            for r, nodes in sorted(by_round.items())]


def summary(state: dict) -> list[dict]:
    """The history in the planner answer's shape (index ranges), one entry per round."""
    out = []
    for entry in state.get("h") or []:
        out.append({"round": entry["r"], "tests": entry["t"], "failed": entry.get("f"),
                    "testSizes": [{"nodes": k, "tests": v} for k, v in entry.get("s") or []],
                    "cleared": entry.get("c") or [], "doubted": entry.get("x") or [],
                    "reused": entry.get("u") or [], "endedAfterSec": entry.get("e")})
    return out


__all__ = ["close_round", "failed", "open_round", "releases", "start", "summary"]

"""What each diagnose round did, kept in the planner state for the report: tests run, how many failed, their sizes,
the nodes the round cleared, and when it ended. It only records: no planner decision reads it.

One entry per round in `state["h"]`, a list by position (the state is stored by Argo at every round, so no keys):
``[round, tests, sizes, reused, failed, cleared, doubted, ended]``. The first four are written when the round's
tests are issued: `sizes` ``[[nodes per test, tests of that size], ...]``, `reused` the nodes cleared before the
round that run in it again (e.g. as a padding partner). The last four when its results come back: how many tests
`failed`, the nodes its results `cleared`, the cleared nodes it put back in `doubted` (an intermittent search), and
`ended`, whole seconds from the first plan call to the one that read the results (None without a clock). Node sets are
index ranges and a node enters `cleared` once per clearing, so at 4096 nodes the history stays near 1 KiB.

A node's release round is the last round that cleared it or ran it after it was cleared: from then on the search
no longer needs it (`releases`). Nodes not cleared at the end (accused, unresolved, on an infrastructure fault,
never exonerated) are not released.
"""

from __future__ import annotations

from collections.abc import Sequence

from nvcre_hera.diagnose import halving, screens
from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.state import Ctx, job_shape

ROUND, TESTS, SIZES, REUSED, FAILED, CLEARED, DOUBTED, ENDED = range(8)


def start(state: dict, now: float | None) -> None:
    """A fresh history; `now` is the clock at the first plan call (None: no clock, rounds only)."""
    state["h"] = []
    if now is not None:
        state["t0"] = round(float(now))


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
        size, count = job_shape(t)
        sizes[size] = sizes.get(size, 0) + count
    again = ns.from_nodes(x for t in tests for x in t["nodes"] if ctx.ok[x])
    hist.append([ctx.state["round"], sum(sizes.values()), sorted(([k, v] for k, v in sizes.items()), reverse=True), again])


def close_round(ctx: Ctx, ok_before: bytearray | bytes, now: float | None) -> None:
    """Complete the open round's entry once its results are absorbed (`ok_before`: the cleared set before)."""
    hist = ctx.state.get("h")
    if not hist or len(hist[-1]) > FAILED:
        return
    t0 = ctx.state.get("t0")
    hist[-1].extend([
        sum(screens.failed_count(ctx, tid) if screens.is_screen(ctx, tid) else int(failed(ctx, tid)) for tid in ctx.meta),
        ns.from_nodes(x for x in range(ctx.n) if ctx.ok[x] and not ok_before[x]),
        ns.from_nodes(x for x in range(ctx.n) if ok_before[x] and not ctx.ok[x]),
        max(0, round(float(now) - t0)) if t0 is not None and now is not None else None,
    ])


def _closed(state: dict) -> list[list]:
    return [h for h in state.get("h") or [] if len(h) > ENDED]


def releases(state: dict, ok: bytearray | bytes, held: Sequence[int] = ()) -> list[dict]:
    """Release groups `{"r": round, "e": seconds or None, "s": ranges}`, by round: each node cleared at the end
    (`ok`) and not `held` (accused, on a fault or in an unresolved group), released at the last round that
    cleared it or ran it once cleared."""
    n = len(ok)
    last = [0] * n
    for h in _closed(state):
        for x in ns.to_nodes(h[CLEARED]) + ns.to_nodes(h[REUSED]):
            if x < n:
                last[x] = max(last[x], h[ROUND])
    keep = set(held)
    by_round: dict[int, list[int]] = {}
    for x in range(n):
        if ok[x] and last[x] and x not in keep:
            by_round.setdefault(last[x], []).append(x)
    ended = {h[ROUND]: h[ENDED] for h in _closed(state)}
    return [{"r": r, "e": ended.get(r), "s": ns.from_nodes(nodes)} for r, nodes in sorted(by_round.items())]


def summary(state: dict) -> list[dict]:
    """The history in the planner answer's shape (index ranges), one entry per round whose results came back."""
    return [{"round": h[ROUND], "tests": h[TESTS], "failed": h[FAILED],
             "testSizes": [{"nodes": k, "tests": v} for k, v in h[SIZES]],
             "cleared": h[CLEARED], "doubted": h[DOUBTED], "reused": h[REUSED], "endedAfterSec": h[ENDED]}
            for h in _closed(state)]


__all__ = ["close_round", "failed", "open_round", "releases", "start", "summary"]

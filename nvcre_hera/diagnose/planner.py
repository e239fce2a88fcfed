"""The diagnose planner: one pure function from (state, results, config) to the next round or the verdict.

It is the only implementation: the workflow's `plan` step, the local executor and `nvcre bench diagnose` all call
`plan`. The recursion ends when it returns no tests (an empty withParam is Skipped in Argo).

Job accounting (reference §2.2, Table B): the failing full-group run that triggered the diagnose is *not* counted
when its result is handed to the first call (a result with id ``"full"``); without it, the planner measures what
it needs itself and those jobs count. Without it the group's status is unknown, not failing: `adaptive`
then finishes a healthy group after its first split and one check of the whole group (see `adaptive`).
"""

from __future__ import annotations

from collections.abc import Sequence

from nvcre_hera.diagnose import adaptive, halving, history, intermittent, probe, screens
from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.evidence import confidence
from nvcre_hera.diagnose.items import refresh_accused
from nvcre_hera.diagnose.state import (
    SPECIFIC_REASONS, Ctx, Round, accused_or_on_a_fault, held_nodes, new_state, ranges_key,
)

STRATEGIES = ("adaptive", "halving")
FULL_ID = "full"
#: rounds the search may take (the near-miss phase's rounds come on top, screens.near_miss_rounds); each finding
#: adds twice the rounds of one more link's probe, up to BUDGET_CAP times this (`round_budget`)
ROUND_BUDGET = 48
#: how far findings may stretch the budget: a search stopped short of its last links leaves the whole rest unresolved
#: (thousands of nodes held), so the extra rounds buy their release (docs/diagnose-links.md, "Four links at 4096")
BUDGET_CAP = 3


def plan(state: dict | None, results: Sequence[dict], config: dict, now: float | None = None) -> dict:
    """Decide the next round of tests from everything measured so far, or finish with suspects.

    `state` is None on the first call, then exactly the `state` returned last time (compact JSON).
    `results` answer the previous call's tests: {"id", "busBandwidthGBps": float|None, "status": "ok"|"failed"}.
    `now` (seconds on some clock, optional) only dates the round history; no decision reads it.
    """
    strategy = (config.get("strategy") or "adaptive").lower()
    if strategy not in STRATEGIES:
        raise ValueError(f"diagnoseStrategy: {strategy!r} is not one of {', '.join(STRATEGIES)}")
    first = state is None
    state = new_state({**config, "strategy": strategy}) if first else _copy(state)
    ctx = Ctx(state, config, [] if first else results)
    if first:
        history.start(state, now)
        if not _init(ctx, strategy, results, config):
            return _answer(ctx, [])
    elif not state.get("done"):
        ctx.learn()
        cleared_before = bytearray(ctx.ok)
        _phase(state).absorb(ctx)
        history.close_round(ctx, cleared_before, now)
    return _next(ctx)


def _init(ctx: Ctx, strategy: str, results: Sequence[dict], config: dict) -> bool:
    """Start the search; False when there is nothing to diagnose."""
    st = ctx.state
    if st["n"] < 2:
        st["done"] = True
        return False
    full = next((r for r in results if str(r.get("id")) == FULL_ID), None)
    value = None
    if full is not None and full.get("status", "ok") == "ok":
        value = full.get("busBandwidthGBps")
    threshold = config.get("threshold")
    if full is not None and value is not None and threshold is not None and value >= float(threshold):
        st["done"] = True  # the group meets the user's floor: nothing to localize
        return False
    if strategy == "adaptive" and screens.enabled(config, st["n"]):
        screens.start(ctx, None if value is None else float(value), full is not None and value is None)
    elif strategy == "adaptive":
        adaptive.start(ctx, None if value is None else float(value), full is not None)
    else:
        halving.start(ctx, full is not None)
    return True


def _phase(state: dict):
    """The module that plays the search now: the screens first (when on), then the strategy."""
    if screens.active(state):
        return screens
    return adaptive if state["st"] == "adaptive" else halving


def _next(ctx: Ctx) -> dict:
    st = ctx.state
    mod = _phase(st)
    if st.get("done") or mod.finished(ctx):
        st["done"] = True
        return _answer(ctx, [])
    if mod is adaptive:
        adaptive.refresh(ctx)
    rnd = Round(ctx)
    within = st["round"] < round_budget(st, ctx.config)
    if within:
        mod.schedule(ctx, rnd)
    tests = rnd.commit()
    history.open_round(ctx, tests)
    if not tests:
        # out of rounds with work open, or (adaptive) before a final check held the rest: either way cut off
        cut = not within and (bool(st["work"]) or (st["st"] == "adaptive" and not st.get("verified")))
        if cut:
            st["cut"] = 1  # the report says the diagnose stopped at its budget, not that it ran out of questions
        _leave_open(st)
        if st["st"] == "adaptive" and not st.get("verified"):
            # cut off, or stuck (a part with no partner left to re-measure it): no final check held the rest
            _leave_rest_open(st)
        st["done"] = True
    return _answer(ctx, tests)


def _leave_open(st: dict) -> None:
    """What is left undecided when no more tests can run stays on the report as unresolved (fail closed: its nodes
    are held, never released): a branch or a verification by its set, a probe by the failing group it started
    from (its sides passed, their union did not, and the fault between them is not pinned down), a suspect or a
    halving confirmation by its node. A group inside another one left open is not listed twice."""
    groups = [w.get("s") or w.get("p") or (ns.from_nodes([w["x"]]) if "x" in w else None) for w in st["work"]]
    sets = [set(ns.to_nodes(g)) for g in groups if g]
    for i, g in enumerate(sets):
        inside_another = any(g < other or (g == other and j < i) for j, other in enumerate(sets) if j != i)
        listed = any(g <= set(ns.to_nodes(u)) for u in st["unres"])
        if g and not inside_another and not listed:
            st["unres"].append(ns.from_nodes(sorted(g)))


def _leave_rest_open(st: dict) -> None:
    """Stopped before a final check of the rest passed: nothing vouches that the nodes not accused run together
    (their parts passing does not: a bad link between two parts fails neither), so they are one unresolved group,
    never released, beside the narrower groups left open."""
    held = accused_or_on_a_fault(st)
    rest = [x for x in ns.to_nodes(st["G"]) if x not in held]
    if rest and not any(set(rest) <= set(ns.to_nodes(u)) for u in st["unres"]):
        st["unres"].append(ns.from_nodes(rest))


def round_budget(state: dict, config: dict) -> int:
    """Rounds the diagnose may take. A search that keeps finding faults is not cut short by the rounds the earlier
    findings took: each finding (an accused node, an infrastructure fault) adds twice `probe.link_rounds`, one
    more link's probe at this size and as many again to reach it (the failing final check, the new split, its
    pairing rounds; with once, the second of two links at 1024 nodes was cut off in 6 of 60 trials), up to
    BUDGET_CAP times the base, so the wait stays bounded. A probe narrowing a union that failed (or checking the
    pair it narrowed to) is a finding under way: while it is open it adds one probe's rounds, so that it is not cut
    off a few rounds short of the link (at N = 4096, 3 of 100 single links were, after a dip had cost the search a
    detour). The near-miss phase's rounds (screens.py) are its own, not taken from the search's."""
    base = int(config.get("maxRounds") or ROUND_BUDGET)
    findings = len(state["acc"]) + len(state["infra"])
    under_way = sum(1 for w in state.get("work") or [] if probe.under_way(w))
    per_link = probe.link_rounds(state["n"])
    return min(base + per_link * (2 * findings + under_way), BUDGET_CAP * base) + screens.near_miss_rounds(state)


def _answer(ctx: Ctx, tests: list[dict]) -> dict:
    st = ctx.state
    refresh_accused(ctx)  # deficits and evidence ratios under the latest reference
    ctx.flush()
    done = not tests
    if done:
        st["done"] = True
        st["work"] = []
        _below_floor(ctx)
        screens.hold_undecided(st)
    return {
        "state": st,
        "tests": tests,
        "done": done,
        "suspects": suspects(st),
        "infrastructureFaults": [{"between": f["between"], "evidence": f["evidence"]} for f in st["infra"]],
        "unresolved": [ns.to_nodes(u) for u in st["unres"]],
        # why a group is unresolved, where it is not the default (a failing group nothing explains)
        **({"unresolvedWhy": [st["unresWhy"].get(ranges_key(u)) for u in st["unres"]]}
           if st.get("unresWhy") else {}),
        "stats": {"jobs": st["jobs"], "rounds": st["round"], "nodeMinutes": round(st["nm"], 1),
                  **({"stoppedAtRoundBudget": True} if st.get("cut") else {})},
        "history": history.summary(st),
        "releases": _releases(ctx) if done else [],
    }


def _releases(ctx: Ctx) -> list[dict]:
    """When each cleared node could be handed back; nodes tied to an accusation, an infrastructure fault or an
    unresolved group are held (fail closed: an unexplained failure vouches for none of its nodes)."""
    st = ctx.state
    if not st.get("verified"):
        # no job of the whole rest passed (halving's stages never run one, a cut or stuck search did not get to it):
        # nothing vouches for any node together with the others
        return []
    held = held_nodes(st)
    return [{"round": g["r"], "releasedAfterSec": g["e"], "nodes": g["s"]}
            for g in history.releases(st, ctx.ok, sorted(held))]


def _below_floor(ctx: Ctx) -> None:
    """No job met the user's threshold, yet no outlier was found: nobody to blame, and no pass either.

    When every group runs alike but below the floor (a fabric-wide deficit, or a threshold the hardware cannot
    meet), the search finds no outlier; the nodes left unaccused are then reported as one unresolved group.
    Judged on measured values only (never an extrapolation to a size no job ran at)."""
    st = ctx.state
    if ctx.config.get("threshold") is None or st.get("floorChecked"):
        return
    st["floorChecked"] = 1
    if not adaptive.below_threshold_everywhere(ctx):
        return
    accused = {a["node"] for a in st["acc"]}
    rest = [i for i in range(st["n"]) if i not in accused]
    if rest:  # one group: a smaller one left unresolved on the way is part of it
        st["unres"] = [u for u in st["unres"] if not set(ns.to_nodes(u)) <= set(rest)] + [ns.from_nodes(rest)]


def suspects(state: dict) -> list[dict]:
    """Accused nodes in the report's shape."""
    out = []
    why = state.get("why") or {}
    for a in state["acc"]:
        fp = a.get("fp")
        crashed = fp is not None and fp <= 0.0
        flapping = bool(a.get("i"))  # bad in some jobs only: confidence is the share of its re-runs that failed
        # a crash keeps what its tests said (DataCorruption, TransportMismatch, …), most specific first
        said = {why[t] for t, _r in a.get("ev", []) if t in why} | ({a["rs"]} if a.get("rs") else set())
        crash_reason = next((r for r in SPECIFIC_REASONS if r in said), "WorkloadFailed")
        # NVCRE's vocabulary (consumers such as NVSentinel match `<variant>/<reason>`): a node isolated for its
        # bandwidth is ThresholdViolation; how it was isolated is the detail
        out.append({
            "node": a["node"],
            "reason": crash_reason if crashed else "ThresholdViolation",
            "detail": None if crashed else "Intermittent" if flapping else screens.DETAIL.get(a.get("sk"),
                                                                                                "BandwidthDeficit"),
            "deficit": None if fp is None else round(max(0.0, 1.0 - fp), 3),
            "evidence": [{"test": t, "ratio": r} for t, r in a.get("ev", [])],
            "confidence": intermittent.confidence_of(a) if flapping else confidence(a.get("L", 0.0)),
        })
    return out


def _copy(state: dict) -> dict:
    """Never mutate the caller's state (the planner is pure)."""
    import json

    return json.loads(json.dumps(state))


__all__ = ["FULL_ID", "STRATEGIES", "plan", "suspects"]

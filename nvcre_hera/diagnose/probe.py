"""Cross-boundary probing (NVCRE ADR-056) shared by both strategies.

When a group fails but all of its parts pass ("both halves pass", BHP), the fault lives *between* parts: a cable,
a switch port, an NVSwitch trunk. A probe first re-tests the parent (a transient dip explains most BHPs), then
tests unions of two parts until one fails, then narrows both sides at once with mixed halves
(X1∪Y1, X2∪Y2, then X1∪Y2, X2∪Y1) down to a node pair, and reports an infrastructure fault, not a node.

A flapping node (reference §4.6) produces the same pattern whenever its flap is off for the parts, so the adaptive
planner's probe re-measures before it records a fault ("cf": the sides alone, the union, the sides, the union): a
link fault is consistent — the sides always pass, the union always fails — while an intermittent node makes its side
fail or the union pass. Either inconsistency hands the set over to `intermittent`. NVCRE's own probe (halving,
``nv``) records the fault at once, as ADR-056 does.
"""

from __future__ import annotations

from collections.abc import Callable
from math import ceil, log2

from nvcre_hera.diagnose import intermittent
from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.evidence import DIP_LO, llr
from nvcre_hera.diagnose.state import Ctx, Round

#: consistency re-measures before a boundary fault is recorded: the sides alone, the union, the sides, the union
CONFIRM_ROUNDS = 4


def link_rounds(n: int) -> int:
    """Rounds a probe takes to pin one link down in a group of n nodes: narrowing halves both sides of a failing
    union in 1.5 rounds on average (the mixed halves pass together half the time), from n/2 each down to one
    node, then the consistency check."""
    return ceil(1.5 * log2(max(n, 4) / 2)) + CONFIRM_ROUNDS


#: fails(ctx, test_id, item) -> True when the probed union is judged failing
Judge = Callable[[Ctx, str, dict], bool]


def new_probe(ctx: Ctx, parent: list, children: list, fp: float | None, retest: bool, nvcre: bool = False) -> dict:
    """A probe item for a failing `parent` whose `children` (range sets) all passed."""
    item = {"k": "B", "id": ctx.new_id(), "p": parent, "ch": children, "fp": fp, "ev": [], "it": 0, "mi": 0, "nv": nvcre}
    if retest:
        item["ph"] = "re"
    elif len(children) == 2:
        item.update(ph="nar", x=children[0], y=children[1])
    else:
        item["ph"] = "pairs"
    return item


def _round_robin(m: int, index: int) -> list[tuple[int, int]] | None:
    """The `index`-th perfect matching of m parts (circle method), None when all pairs are covered."""
    k = m if m % 2 == 0 else m + 1
    if index >= k - 1:
        return None
    ring = list(range(1, k))
    ring = ring[index:] + ring[:index]
    seats = [0] + ring
    pairs = []
    for i in range(k // 2):
        a, b = seats[i], seats[k - 1 - i]
        if a < m and b < m:
            pairs.append((min(a, b), max(a, b)))
    return pairs


def _narrow_options(x: list, y: list) -> list[list[tuple[list, list]]]:
    xs = ns.split(x, 2) if ns.size(x) > 1 else [x]
    ys = ns.split(y, 2) if ns.size(y) > 1 else [y]
    if len(xs) == 2 and len(ys) == 2:
        return [[(xs[0], ys[0]), (xs[1], ys[1])], [(xs[0], ys[1]), (xs[1], ys[0])]]
    return [[(a, b)] for a in xs for b in ys]


def _pending_sets(item: dict) -> list[tuple[list, list]] | None:
    ph = item["ph"]
    if ph == "re":
        return [(item["p"], [])]
    if ph == "pairs":
        m = _round_robin(len(item["ch"]), item["mi"])
        return None if m is None else [(item["ch"][a], item["ch"][b]) for a, b in m]
    opts = _narrow_options(item["x"], item["y"])
    return opts[item["mi"]] if item["mi"] < len(opts) else None


def schedule_probe(item: dict, rnd: Round) -> None:
    """Add this probe's tests for the round if they fit."""
    if item["ph"] == "cf":
        _schedule_confirm(item, rnd)
        return
    sets = _pending_sets(item)
    if not sets:
        return
    groups = [ns.to_nodes(ns.union(a, b)) for a, b in sets]
    ids = rnd.add(groups)
    if ids:
        item["t"] = ids


def _record(ctx: Ctx, item: dict, sides: list) -> None:
    intermittent.record_fault(ctx, sides, item["ev"][-8:])


def _conclude(ctx: Ctx, item: dict, sides: list) -> bool:
    """The probe's verdict is a fault between `sides` (range sets): record it, or first check it is consistent.
    Returns True when the probe is finished."""
    if item["nv"]:
        _record(ctx, item, sides)
        return True
    item.update(ph="cf", sd=sides, mi=0, se=[[] for _ in sides], so=[[] for _ in sides], ue=[], uo=[])
    return False


def _spawn(item: dict, new: dict) -> None:
    """Hand a new work item to the strategy (adaptive picks ``spawn`` up after the probe's result)."""
    item.setdefault("spawn", []).append(new)


def _schedule_confirm(item: dict, rnd: Round) -> None:
    sides = item["sd"]
    if item["mi"] % 2:
        ids = rnd.add([ns.to_nodes(ns.union(*sides))])
        if ids:
            item["t"] = ids
        return
    inside = ns.to_nodes(ns.union(*sides))
    used = item.get("pp", [])
    # a lone end runs beside a known-healthy node from elsewhere
    groups = rnd.padded([ns.to_nodes(side) for side in sides], avoid_for=lambda i: used, exclude=inside,
                        relax_avoid=True)
    ids = rnd.add(groups) if groups else None
    if ids:
        item["t"] = ids
        picked = [g[-1] for side, g in zip(sides, groups) if ns.size(side) == 1]
        item["pp"] = (used + picked)[-4:]


def _result_confirm(item: dict, ctx: Ctx, ids: list[str]) -> bool:
    fp = item.get("fp")
    sides = item["sd"]
    if item["mi"] % 2 == 0:
        hits = []
        for k, tid in enumerate(ids):
            r = ctx.ratio(tid)
            e = [tid, None if r is None else round(r, 3)]
            item["ev"].append(e)
            item["se"][k] = (item["se"][k] + [e])[-6:]
            bad = intermittent.strong_fail(ctx, r, fp)
            _remember(item, sides[k], bad)
            if bad:
                item["so"][k] = (item["so"][k] + [ctx.oid(tid)])[-6:]
                hits.append(k)
        if hits:  # a side fails on its own: the defect is in it, not between the sides
            for k in hits:
                ev, fo = item["ue"] + item["se"][k], item["uo"] + item["so"][k]
                one = ns.size(sides[k]) == 1
                if one and intermittent.fails_needed(ctx, fp) <= 1:
                    intermittent.accuse(ctx, ns.to_nodes(sides[k])[0], fo, item.get("hs", []), ev, fp)
                else:  # a set to narrow, or a node whose one failing run a dip could explain
                    fb = None if len(hits) > 1 else {"sd": sides, "evidence": item["ev"][-8:]}
                    _spawn(item, intermittent.new_item(ctx, sides[k], fp, item.get("hs", []), ev, fo, fb,
                                                       failed=int(one)))
            return True
    else:
        tid = ids[0]
        r = ctx.ratio(tid)
        e = [tid, None if r is None else round(r, 3)]
        item["ev"].append(e)
        item["ue"] = (item["ue"] + [e])[-6:]
        bad = intermittent.strong_fail(ctx, r, fp)
        _remember(item, ns.union(*sides), bad)
        if bad:
            item["uo"] = (item["uo"] + [ctx.oid(tid)])[-6:]
        elif intermittent.clear_pass(ctx, r, fp):  # the very set that failed now passes: intermittent
            # no fault to fall back on: a clean pass of both sides together is what no bad link between them
            # gives, so a set that stays quiet is left unresolved (a dip misled the narrowing, or a flapper hid)
            _spawn(item, intermittent.new_item(ctx, ns.union(*sides), fp, item.get("hs", []), item["ue"],
                                               item["uo"]))
            return True
    item["mi"] += 1
    if item["mi"] >= CONFIRM_ROUNDS:
        _record(ctx, item, sides)
        return True
    return False


def _recheck_passed(ctx: Ctx, item: dict, tid: str) -> bool:
    """The failing parent passed its re-test. A dip explains that unless the deficit was one no dip reaches:
    then the same set both failed and passed — an intermittent defect. Returns True when the probe is finished."""
    fp = item.get("fp")
    if item["nv"] or fp is None or fp >= DIP_LO * (1 - 3 * ctx.sigma):
        return True
    if intermittent.clear_pass(ctx, ctx.ratio(tid), fp):
        _spawn(item, intermittent.new_item(ctx, item["p"], fp, item.get("hs", []), item["ev"][-1:], [], None))
    return True


def _remember(item: dict, s: list, failed: bool) -> None:
    """Keep the run's node set and verdict (only the adaptive probe, whose history may name a flapper)."""
    if not item["nv"]:
        item["hs"] = (item.get("hs", []) + [[s, int(bool(failed))]])[-intermittent.HS_MAX:]


def result_probe(item: dict, ctx: Ctx, fails: Judge) -> bool:
    """Consume the probe's results; True when the probe is finished (fault recorded or cleared as transient)."""
    ids = item.pop("t", None)
    if not ids:
        return False
    if item["ph"] == "cf":
        return _result_confirm(item, ctx, ids)
    sets = _pending_sets(item) or []
    verdicts = []
    for tid, (a, b) in zip(ids, sets):
        r = ctx.ratio(tid)
        item["ev"].append([tid, None if r is None else round(r, 3)])
        verdicts.append(fails(ctx, tid, item))
        _remember(item, ns.union(a, b), verdicts[-1])
    item["it"] += 1
    ph = item["ph"]
    if ph == "re":
        if not verdicts[0]:  # the parent passes on a second look: a transient, nobody to blame (or a flapper)
            return _recheck_passed(ctx, item, ids[0])
        if item.get("again"):
            return _conclude(ctx, item, item["ch"])
        if len(item["ch"]) == 2:
            item.update(ph="nar", x=item["ch"][0], y=item["ch"][1], mi=0)
        else:
            item.update(ph="pairs", mi=0)
        return False
    hits = [i for i, v in enumerate(verdicts) if v]
    # two failing mixed halves are one link and a dip far more often than two links between the same sides: follow
    # the one whose deficit matches the fingerprint, the deeper on a tie (a dip of 10–40 % is often deeper than the
    # link it hides: following the deeper lost 4 of 100 single links at N = 4096); NVCRE's probe, `nv`, follows
    # the first, as ADR-056 does
    hit = hits[0] if hits and item["nv"] else max(hits, key=lambda i: _follow_key(ctx, ids[i], item), default=None)
    if hit is None:
        # unions that passed vouch for their nodes
        for a, b in sets:
            ctx.mark_ok(ns.to_nodes(ns.union(a, b)))
        if item["nv"] and ph == "nar":
            return True  # ADR-056: both mixed groups pass -> transient
        item["mi"] += 1
        if _pending_sets(item) is None and item.get("cont"):
            return True  # a continuation's parts: no union of two failed, nothing between them
        if _pending_sets(item) is None and ph == "pairs" and not item.get("again"):
            item.update(ph="re", again=True)  # every union passed: make sure the parent still fails
            return False
        if _pending_sets(item) is None:
            return _conclude(ctx, item, item["ch"] if ph == "pairs" else [item["x"], item["y"]])
        return False
    x, y = sets[hit]
    if ph == "pairs" and not item["nv"]:
        # a matching's unions are disjoint, and another that fails holds another bad link as likely as a dip:
        # it is narrowed beside this one instead of after it (a restart of the search each)
        for i in hits:
            if i != hit:
                _spawn(item, new_probe(ctx, ns.union(*sets[i]), list(sets[i]), item.get("fp"), retest=False))
        # and the parts in no failing union go on pairing among themselves beside the narrowing (`cont`: their
        # union was never seen failing, so their pairs all passing ends it), where a further link may lie
        used = [part for i in hits for part in sets[i]]
        rest = [part for part in item["ch"] if part not in used]
        if len(rest) >= 2:
            cont = new_probe(ctx, ns.union(*rest), rest, item.get("fp"), retest=False)
            cont.update(ph="pairs", cont=1)
            _spawn(item, cont)
    item.update(ph="nar", x=x, y=y, mi=0)
    limit = ceil(log2(max(2, min(ns.size(x), ns.size(y))))) + 1 if item["nv"] else 64
    if (ns.size(x) == 1 and ns.size(y) == 1) or item["it"] > limit:
        return _conclude(ctx, item, [x, y])
    return False


def _follow_key(ctx: Ctx, tid: str, item: dict) -> tuple[float, float]:
    """How well a failing union matches the defect the probe follows: its evidence for the fingerprint, then its
    depth."""
    r = ctx.ratio(tid)
    return llr(r, intermittent.judge_fp(item.get("fp"), ctx.sigma), ctx.sigma), -(0.0 if r is None else r)


def under_way(item: dict) -> bool:
    """Whether this work item is the adaptive probe narrowing a union that failed, or checking the pair it narrowed
    to: a finding under way (`planner.round_budget`). NVCRE's own probe (`nv`) keeps NVCRE's budget."""
    return item.get("k") == "B" and not item.get("nv") and item.get("ph") in ("nar", "cf")


def probe_nodes(item: dict) -> list[int]:
    """Nodes the probe may still test (kept out of verification while it runs)."""
    return ns.to_nodes(item["p"])


__all__ = ["CONFIRM_ROUNDS", "new_probe", "probe_nodes", "result_probe", "schedule_probe", "under_way"]

"""Intermittent faults (reference §4.6 "bad state present with probability q per job", §4.9 "Intermittent flaps").

A flapping node breaks the planner's one-shot logic: a part that holds it passes whenever the flap is off, so
"all parts pass" looks like a link fault (BHP) and a passing re-test looks like a transient. What gives it away is
*inconsistency*: the same node set, or a set that contains everything a failure was pinned on, fails in one job and
passes cleanly in another. A link fault never does that (a set fails every time it holds both ends), and a
transient dip cannot repeat the defect's deficit (its fingerprint).

Once a set is known to hold an intermittent defect, an I item localizes it with *repeated, test-all* splits: no part
is ever inferred or cleared on one passing run (a pass says nothing about a flapper), every part is re-tested each
round until one fails with the fingerprint, and the search follows that part. A singleton that fails beside a
known-healthy partner is accused with reason ``Intermittent``; its confidence is the share of the re-measurements
that contained it and failed (how likely the next job with it fails), its deficit the fingerprint. A set that stays
quiet for `IDLE_MAX` rounds in a row is given up: the fault the probe would have recorded instead is recorded (or,
without one, the set is left unresolved).
"""

from __future__ import annotations

from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.evidence import DIP_LO, STRONG, llr
from nvcre_hera.diagnose.state import Ctx, Round, hold_unresolved

#: quiet rounds after which an intermittent set is given up (a flapper on half the time hides 4 rounds in 1/16)
IDLE_MAX = 4
#: widest split of an intermittent set (every part is tested every round)
MAX_ARITY = 8
EV_MAX = 6
#: why a set is unresolved when it failed some runs, passed others and then stayed quiet (the report says so)
QUIET = "intermittent-quiet"
#: runs remembered per item as [node ranges, failed 0/1] (the fail fraction of the accused is counted over them)
HS_MAX = 24


def judge_fp(fp: float | None, sigma: float) -> float:
    """The fingerprint a single run is judged against: a weak or missing one stands for a clear deficit."""
    return 0.8 if fp is None or fp >= 1 - 5 * sigma else fp


def strong_fail(ctx: Ctx, ratio: float | None, fp: float | None) -> bool:
    """A run that shows the defect beyond doubt (a dip alone does not reach this)."""
    return llr(ratio, judge_fp(fp, ctx.sigma), ctx.sigma) >= STRONG


def fails_needed(ctx: Ctx, fp: float | None) -> int:
    """Failing runs beside healthy partners before a node is accused: one when no dip can reach the deficit
    (dips take 10–40 %), else two — a lone dip that happens to match the fingerprint must not name a node."""
    return 1 if fp is not None and fp < DIP_LO * (1 - 3 * ctx.sigma) else 2


def clear_pass(ctx: Ctx, ratio: float | None, fp: float | None) -> bool:
    """A run that is healthy beyond doubt."""
    return llr(ratio, judge_fp(fp, ctx.sigma), ctx.sigma) <= -STRONG


def new_item(ctx: Ctx, s: list, fp: float | None, hs: list, ev: list, fo: list,
             fallback: dict | None = None, failed: int = 0) -> dict:
    """An I item: the set `s` holds an intermittent defect with fingerprint `fp`.

    `hs` = runs so far as [ranges, failed]; `ev` [test, ratio] of runs that held the whole set; `fo` observation
    indices of runs that showed the defect; `fallback` the infrastructure fault to record if the set stays quiet
    (the probe's verdict before the inconsistency was seen, as {"sd": sides as ranges, "evidence"}); `failed`
    the padded runs of a single node that failed already."""
    for x in ns.to_nodes(s):  # nothing in here is vouched for by a pass any more
        ctx.ok[x] = 0
    return {"k": "I", "id": ctx.new_id(), "s": s, "fp": None if fp is None else round(fp, 4),
            "hs": list(hs)[-HS_MAX:], "ev": list(ev)[-EV_MAX:], "fo": list(fo)[-EV_MAX:], "idle": 0,
            "fb": fallback, "f0": int(failed)}


def schedule(ctx: Ctx, rnd: Round, it: dict) -> None:
    """Test every part of the set (singletons padded with a known-healthy node from outside it)."""
    if "parts" not in it:
        size = ns.size(it["s"])
        free = rnd.free()
        b = min(size, MAX_ARITY, max(2, free))
        for arity in sorted({b, min(4, b), min(2, size)}, reverse=True):
            parts = ns.split(it["s"], arity, ctx.clique_of)
            if _add(ctx, rnd, it, parts):
                n = len(parts)
                it.update(parts=parts, pe=[[] for _ in range(n)], po=[[] for _ in range(n)],
                          pf=[it.get("f0", 0) if n == 1 else 0] * n)
                return
        return
    _add(ctx, rnd, it, it["parts"])


def _add(ctx: Ctx, rnd: Round, it: dict, parts: list) -> bool:
    inside = ns.to_nodes(it["s"])
    used = it.setdefault("pp", [])
    # partners come from outside the set
    groups = rnd.padded([ns.to_nodes(part) for part in parts], avoid_for=lambda i: used, exclude=inside,
                        relax_avoid=True)
    ids = rnd.add(groups) if groups else None
    if not ids:
        return False
    it["t"] = ids
    picked = [g[-1] for part, g in zip(parts, groups) if ns.size(part) == 1]
    it["pp"] = (used + picked)[-4:]
    return True


def result(ctx: Ctx, it: dict) -> list[dict]:
    """Follow every part that failed with the fingerprint; accuse a failing singleton; give up when quiet."""
    ids = it.pop("t")
    fp = it["fp"]
    failing = []
    for i, tid in enumerate(ids):
        r = ctx.ratio(tid)
        bad = strong_fail(ctx, r, fp)
        it["hs"] = (it["hs"] + [[it["parts"][i], int(bad)]])[-HS_MAX:]
        it["pe"][i] = (it["pe"][i] + [[tid, None if r is None else round(r, 3)]])[-EV_MAX:]
        if bad:
            it["pf"][i] += 1
            it["po"][i] = (it["po"][i] + [ctx.oid(tid)])[-EV_MAX:]
            failing.append(i)
    if not failing:
        it["idle"] += 1
        if it["idle"] < IDLE_MAX:
            return [it]
        fb = it.get("fb")
        if fb is not None:  # quiet after all: the probe's fault (ranges until now, to keep the state small)
            record_fault(ctx, fb["sd"], fb["evidence"])
        else:
            hold_unresolved(ctx.state, it["s"], QUIET)
        return []
    if len(failing) == 1:
        # one defect, found in one part: the parts that only ever passed (clearly) are healthy again, and
        # serve as partners further down
        for i, part in enumerate(it["parts"]):
            if i not in failing and it["pf"][i] == 0:
                ctx.mark_ok(ns.to_nodes(part))
    out = []
    for i in failing:
        part = it["parts"][i]
        ev = (it["ev"] + it["pe"][i])[-EV_MAX:]
        fo = (it["fo"] + it["po"][i])[-EV_MAX:]
        fb = it.get("fb") if len(failing) == 1 else None
        if ns.size(part) == 1 and it["pf"][i] >= fails_needed(ctx, fp):
            accuse(ctx, ns.to_nodes(part)[0], fo, it["hs"], ev, fp)
        else:  # narrow on; a node whose failing runs a dip could explain runs once more beside another partner
            out.append(new_item(ctx, part, fp, it["hs"], ev, fo, fb, failed=it["pf"][i] if ns.size(part) == 1 else 0))
    return out


def record_fault(ctx: Ctx, sides: list, evidence: list) -> None:
    """Record an infrastructure fault between `sides` (range sets) unless it is known already or a node found
    intermittent lies on it (that node explains the failing unions: one cause, not two)."""
    flappers = {a["node"] for a in ctx.state["acc"] if a.get("i")}
    between = [ns.to_nodes(s) for s in sides]
    if flappers & {x for side in between for x in side}:
        return
    key = sorted(map(tuple, between))
    if any(sorted(map(tuple, f["between"])) == key for f in ctx.state["infra"]):
        return
    ctx.state["infra"].append({"between": between, "evidence": list(evidence)[-8:]})


def fail_share(x: int, hs: list) -> tuple[int, int]:
    """(failed, run) among the remembered runs that held `x`."""
    held = [f for rs, f in hs if any(lo <= x < hi for lo, hi in rs)]
    return sum(held), len(held)


def accuse(ctx: Ctx, x: int, fo: list, hs: list, ev: list, fp: float | None) -> None:
    """Accuse `x` as an intermittent fault: it failed beside a known-healthy node, with the fingerprint."""
    acc = ctx.state["acc"]
    if any(a["node"] == x for a in acc):
        return
    failed, tested = fail_share(x, hs)
    # a boundary recorded with x on it was the flap seen from outside: x explains those failing unions
    ctx.state["infra"] = [f for f in ctx.state["infra"] if not any(x in side for side in f["between"])]
    fo = [o for o in fo if o is not None]
    f = ctx.fp(fo, fp) if fo else fp
    L = sum(llr(ctx.r(o), judge_fp(fp, ctx.sigma), ctx.sigma) for o in fo) if fo else STRONG
    acc.append({"node": x, "fp": None if f is None else round(f, 4), "fo": fo, "L": round(max(L, STRONG), 3),
                "ev": list(ev)[-EV_MAX:], "eo": [], "pp": [], "i": [int(failed), int(max(tested, failed, 1))]})


def confidence_of(a: dict) -> float:
    """An intermittent suspect's confidence: the share of the remembered runs holding it that failed."""
    f, t = a["i"]
    return round(f / max(t, 1), 4)


__all__ = ["IDLE_MAX", "QUIET", "accuse", "clear_pass", "confidence_of", "fail_share", "fails_needed", "judge_fp",
           "new_item", "record_fault", "result", "schedule", "strong_fail"]

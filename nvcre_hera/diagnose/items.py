"""Item constructors and the small item kinds of the adaptive planner: U (re-measure a set), S (confirm a node).

Kept apart from `adaptive` so each module stays one concept: this one holds how a single node or a set is
confirmed, SPRT-style (accumulate evidence until it is decisive either way, with a different partner each time).

Evidence is kept as indices of raw observations (`Reference.obs`), never as ratios: a fingerprint ``fo`` is the
list of observations that show one defect, ``eo`` the item's own measurements. Every ratio, fingerprint and
likelihood is recomputed from them under the reference of the round that decides.
"""

from __future__ import annotations

from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.evidence import STRONG, llr, same_defect
from nvcre_hera.diagnose.probe import new_probe
from nvcre_hera.diagnose.state import Ctx, Round

MAX_REMEASURE = 3
#: observations kept per fingerprint (the state stays a few KiB)
FO_MAX = 8


def _cap(fo: list | None) -> list | None:
    return None if fo is None else list(fo)[-FO_MAX:]


def fp_of(ctx: Ctx, it: dict, default: float | None = None) -> float | None:
    """An item's fingerprint under the current reference."""
    if it.get("fo"):
        return ctx.fp(it["fo"])
    return it.get("fp", default) if it.get("fp") is not None else default


def evidence(ctx: Ctx, it: dict, fp: float) -> float:
    """An item's evidence: prior log-odds ``L0`` plus the likelihood ratio of each own measurement, recomputed."""
    return it.get("L0", 0.0) + sum(llr(ctx.r(o), fp, ctx.sigma, ctx.dip) for o in it.get("eo", []))


def _k(ctx: Ctx, s: list, fo: list | None, L: float | None, raw=None, inferred: bool = False, root=None,
       chain: list | None = None) -> dict:
    """A failing branch. `chain` = [root size, root evidence, prior odds of a dip] of the last *measured*
    ancestor: inferred branches weigh "the root's failure was a dip" against "the defect is in my last part"."""
    return {"k": "K", "id": ctx.new_id(), "s": s, "fo": _cap(fo), "fp": _round(ctx.fp(fo)), "L": L, "raw": raw,
            "inf": inferred, "root": root, "ch": chain}


def _round(x: float | None, d: int = 4) -> float | None:
    return None if x is None else round(x, d)


def _schedule_s(rnd: Round, it: dict) -> None:
    p = rnd.partner(it["x"], avoid=it["pp"])
    if p is None:
        return
    ids = rnd.add([[it["x"], p]])
    if ids:
        it["t"] = ids
        it["pp"].append(p)


def _unknown(ctx: Ctx, s: list, fo: list | None, L0: float, m: int, pp: list | None = None,
             eo: list | None = None, ev: list | None = None) -> dict:
    """A set to (re-)measure as a whole; a single node is confirmed padded with a partner instead.

    `eo` are measurements of this very set already taken (their evidence is recomputed, not carried);
    `L0` is any further prior evidence."""
    eo = list(eo or [])
    if ns.size(s) == 1:
        it = {"k": "S", "id": ctx.new_id(), "x": ns.to_nodes(s)[0], "fo": _cap(fo), "fp": None, "L0": round(L0, 3),
              "eo": eo, "m": m, "need": max(1, m + 1), "pp": list(pp or []), "root": None, "ev": list(ev or [])}
        it["fp"] = _round(fp_of(ctx, it, 0.8))
        it["L"] = round(evidence(ctx, it, it["fp"]), 3)
        return it
    it = {"k": "U", "id": ctx.new_id(), "s": s, "fo": _cap(fo), "fp": None, "L0": round(L0, 3), "eo": eo, "m": m}
    it["fp"] = _round(fp_of(ctx, it))
    return it


def _accuse(ctx: Ctx, x: int, fo: list | None, L: float, ev: list, pp: list | None = None, eo: list | None = None,
            fp: float | None = None) -> None:
    """Accuse `x`; its deficit is the fingerprint of the defect together with its own measurements."""
    acc = ctx.state["acc"]
    if any(a["node"] == x for a in acc):
        return
    own = list(eo or [])[-6:]
    allo = _cap(list(fo or []) + own)
    f = ctx.fp(allo, fp) if allo else fp
    acc.append({"node": x, "fp": _round(f), "fo": allo, "L": round(L, 3), "ev": ev[-6:], "eo": own,
                "pp": list(pp or [])[-3:]})


def refresh_accused(ctx: Ctx) -> None:
    """Accusations' deficits and evidence ratios under the current reference (for the verification and report)."""
    for a in ctx.state["acc"]:
        if a.get("fo"):
            a["fp"] = _round(ctx.fp(a["fo"]))
        eo = a.get("eo") or []
        if len(eo) == len(a.get("ev", [])):
            a["ev"] = [[t, _round(ctx.r(o), 3)] for (t, _), o in zip(a["ev"], eo)]


def _result_s(ctx: Ctx, it: dict) -> list[dict]:
    tid = it.pop("t")[0]
    r = ctx.ratio(tid)
    it.setdefault("eo", []).append(ctx.oid(tid))
    fp = fp_of(ctx, it, 0.8)
    it["fp"] = _round(fp)
    it["L"] = round(evidence(ctx, it, fp), 3)
    it["m"] += 1
    it["ev"].append([tid, _round(r, 3)])
    if it["m"] >= it["need"] and it["L"] >= STRONG or (it["m"] >= 4 and it["L"] > 0):
        _accuse(ctx, it["x"], it.get("fo"), it["L"], it["ev"], it["pp"], it["eo"], fp)
        return []
    if it["root"] and it["m"] < 2 and it["L"] > -3 * STRONG:
        return [it]  # clearing an inferred node sends us probing links: look twice (flapping nodes)
    if it["L"] <= -STRONG or it["m"] >= 4:
        ctx.mark_ok([it["x"]])
        if it["root"]:
            p, ch = it["root"]
            return [new_probe(ctx, p, ch, fp, retest=True)]
        return []
    return [it]


def _result_u(ctx: Ctx, it: dict) -> list[dict]:
    tid = it.pop("t")[0]
    r = ctx.ratio(tid)
    o = ctx.oid(tid)
    it.setdefault("eo", []).append(o)
    if not it.get("fo") and it.get("fp") is None:
        it["fo"] = [o]  # nothing known about the defect yet: this very value is the hypothesis
    fp = fp_of(ctx, it, 0.0)
    it["fp"] = _round(fp)
    it["L"] = round(evidence(ctx, it, fp), 3)
    it["m"] += 1
    if it["L"] >= STRONG:
        if ns.size(it["s"]) == 1:
            _accuse(ctx, ns.to_nodes(it["s"])[0], it.get("fo"), it["L"], [[tid, _round(r, 3)]], eo=[o], fp=fp)
            return []
        rr = fp if r is None else r
        fo_c = (list(it.get("fo") or []) + [o]) if same_defect(rr, fp, ctx.sigma) else [o]
        return [_k(ctx, it["s"], fo_c, L=it["L"])]
    if it["L"] <= -STRONG:
        ctx.mark_ok(ns.to_nodes(it["s"]))
        return []
    if it["m"] >= MAX_REMEASURE:
        ctx.state["def"].append(it["s"])
        return []
    return [it]


__all__ = ["_accuse", "_k", "_result_s", "_result_u", "_round", "_schedule_s", "_unknown", "evidence", "fp_of",
           "refresh_accused"]

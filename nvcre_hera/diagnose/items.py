"""Item constructors and the small item kinds of the adaptive planner: U (re-measure a set), S (confirm a node).

Kept apart from `adaptive` so each module stays one concept: this one holds how a single node or a set is
confirmed, SPRT-style (accumulate evidence until it is decisive either way, with a different partner each time).
"""

from __future__ import annotations

from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.evidence import STRONG, llr
from nvcre_hera.diagnose.probe import new_probe
from nvcre_hera.diagnose.state import Ctx, Round

MAX_REMEASURE = 3


def _k(ctx: Ctx, s: list, fp: float | None, L: float | None, raw=None, inferred: bool = False, root=None,
       chain: list | None = None) -> dict:
    """A failing branch. `chain` = [root size, root evidence, prior odds of a dip] of the last *measured*
    ancestor: inferred branches weigh "the root's failure was a dip" against "the defect is in my last part"."""
    return {"k": "K", "id": ctx.new_id(), "s": s, "fp": fp, "L": L, "raw": raw, "inf": inferred, "root": root,
            "ch": chain}


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


def _unknown(ctx: Ctx, s: list, fp: float | None, L: float, m: int, pp: list | None = None) -> dict:
    """A set to (re-)measure as a whole; a single node is confirmed padded with a partner instead."""
    if ns.size(s) == 1:
        return {"k": "S", "id": ctx.new_id(), "x": ns.to_nodes(s)[0], "fp": fp if fp is not None else 0.8,
                "L": round(L, 3), "m": m, "need": max(1, m + 1), "pp": list(pp or []), "root": None, "ev": []}
    return {"k": "U", "id": ctx.new_id(), "s": s, "fp": fp, "L": round(L, 3), "m": m}


def _accuse(ctx: Ctx, x: int, fp: float, L: float, ev: list, pp: list | None = None) -> None:
    acc = ctx.state["acc"]
    if any(a["node"] == x for a in acc):
        return
    acc.append({"node": x, "fp": _round(fp), "L": round(L, 3), "ev": ev[-6:], "pp": list(pp or [])[-3:]})


def _result_s(ctx: Ctx, it: dict) -> list[dict]:
    tid = it.pop("t")[0]
    r = ctx.ratio(tid)
    it["L"] = round(it["L"] + llr(r, it["fp"], ctx.sigma), 3)
    it["m"] += 1
    it["ev"].append([tid, _round(r, 3)])
    if it["m"] >= it["need"] and it["L"] >= STRONG or (it["m"] >= 4 and it["L"] > 0):
        _accuse(ctx, it["x"], it["fp"], it["L"], it["ev"], it["pp"])
        return []
    if it["root"] and it["m"] < 2 and it["L"] > -3 * STRONG:
        return [it]  # clearing an inferred node sends us probing links: look twice (flapping nodes)
    if it["L"] <= -STRONG or it["m"] >= 4:
        ctx.mark_ok([it["x"]])
        if it["root"]:
            p, ch = it["root"]
            return [new_probe(ctx, p, ch, it["fp"], retest=True)]
        return []
    return [it]


def _result_u(ctx: Ctx, it: dict) -> list[dict]:
    tid = it.pop("t")[0]
    r = ctx.ratio(tid)
    fp = it["fp"] if it["fp"] is not None else (r if r is not None else 0.0)
    it["L"] = round(it["L"] + llr(r, fp, ctx.sigma), 3)
    it["m"] += 1
    if it["L"] >= STRONG:
        if ns.size(it["s"]) == 1:
            _accuse(ctx, ns.to_nodes(it["s"])[0], fp, it["L"], [[tid, _round(r, 3)]])
            return []
        rr = fp if r is None else r
        fp_c = (fp + rr) / 2 if abs(rr - fp) <= 3 * ctx.sigma * 1.25 else rr
        return [_k(ctx, it["s"], fp=_round(fp_c), L=it["L"])]
    if it["L"] <= -STRONG:
        ctx.mark_ok(ns.to_nodes(it["s"]))
        return []
    if it["m"] >= MAX_REMEASURE:
        ctx.state["def"].append(it["s"])
        return []
    return [it]


__all__ = ["_accuse", "_k", "_result_s", "_result_u", "_round", "_schedule_s", "_unknown"]

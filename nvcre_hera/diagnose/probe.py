"""Cross-boundary probing (NVCRE ADR-056) shared by both strategies.

When a group fails but all of its parts pass ("both halves pass", BHP), the fault lives *between* parts: a cable,
a switch port, an NVSwitch trunk. A probe first re-tests the parent (a transient dip explains most BHPs), then
tests unions of two parts until one fails, then narrows both sides at once with mixed halves
(X1∪Y1, X2∪Y2, then X1∪Y2, X2∪Y1) down to a node pair, and reports an infrastructure fault, not a node.
"""

from __future__ import annotations

from collections.abc import Callable
from math import ceil, log2

from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.state import Ctx, Round

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
    sets = _pending_sets(item)
    if not sets:
        return
    groups = [ns.to_nodes(ns.union(a, b)) for a, b in sets]
    ids = rnd.add(groups)
    if ids:
        item["t"] = ids


def _fault(ctx: Ctx, item: dict, a: list, b: list) -> None:
    if any(f["between"] in ([a, b], [b, a]) for f in ctx.state["infra"]):
        return
    ctx.state["infra"].append({"between": [a, b], "evidence": item["ev"][-8:]})


def result_probe(item: dict, ctx: Ctx, fails: Judge) -> bool:
    """Consume the probe's results; True when the probe is finished (fault recorded or cleared as transient)."""
    ids = item.pop("t", None)
    if not ids:
        return False
    sets = _pending_sets(item) or []
    verdicts = []
    for tid, (a, b) in zip(ids, sets):
        r = ctx.ratio(tid)
        item["ev"].append([tid, None if r is None else round(r, 3)])
        verdicts.append(fails(ctx, tid, item))
    item["it"] += 1
    ph = item["ph"]
    if ph == "re":
        if not verdicts[0]:
            return True  # the parent passes on a second look: a transient, nobody to blame
        if item.get("again"):
            ctx.state["infra"].append({"between": [ns.to_nodes(c) for c in item["ch"]], "evidence": item["ev"][-8:]})
            return True
        if len(item["ch"]) == 2:
            item.update(ph="nar", x=item["ch"][0], y=item["ch"][1], mi=0)
        else:
            item.update(ph="pairs", mi=0)
        return False
    hit = next((i for i, v in enumerate(verdicts) if v), None)
    if hit is None:
        # unions that passed vouch for their nodes
        for a, b in sets:
            ctx.mark_ok(ns.to_nodes(ns.union(a, b)))
        if item["nv"] and ph == "nar":
            return True  # ADR-056: both mixed groups pass -> transient
        item["mi"] += 1
        if _pending_sets(item) is None and ph == "pairs" and not item.get("again"):
            item.update(ph="re", again=True)  # every union passed: make sure the parent still fails
            return False
        if _pending_sets(item) is None:
            if ph == "pairs":
                ctx.state["infra"].append({"between": [ns.to_nodes(c) for c in item["ch"]], "evidence": item["ev"][-8:]})
            else:
                _fault(ctx, item, ns.to_nodes(item["x"]), ns.to_nodes(item["y"]))
            return True
        return False
    x, y = sets[hit]
    item.update(ph="nar", x=x, y=y, mi=0)
    limit = ceil(log2(max(2, min(ns.size(x), ns.size(y))))) + 1 if item["nv"] else 64
    if (ns.size(x) == 1 and ns.size(y) == 1) or item["it"] > limit:
        _fault(ctx, item, ns.to_nodes(x), ns.to_nodes(y))
        return True
    return False


def probe_nodes(item: dict) -> list[int]:
    """Nodes the probe may still test (kept out of verification while it runs)."""
    return ns.to_nodes(item["p"])


__all__ = ["new_probe", "probe_nodes", "result_probe", "schedule_probe"]

"""`halving` diagnose: the NVCRE-compatible baseline (ADR-055/056, reference nvcre-and-peers.md §1.6).

Screen each NVLink clique (or ⌈√N⌉-node chunks without topology labels), then bisect every failing group,
testing both halves, level-synchronously ("all groups must complete before the next round of splits"), down to
`minGroupSize`. Groups smaller than that are padded with a known-healthy node. Both-halves-pass triggers
ADR-056 cross-boundary probing. Finally every suspect is paired with a *different* healthy node: a failing pair
confirms it, a passing pair clears it. Pass/fail is the bit NVCRE uses: the job crashed or its busbw is below the
threshold (the user's floor, else the healthy reference less `halvingMargin`, default 7.5 %).

NVCRE starts from a failing full-group run; the compiled workflow hands none over, and a fault between two
screening groups (a bad cable between two chunks) is in no screen: every screen passed and so did the
certification, in one round. So when every screening group passes, the whole group runs once (``W``), the run
NVCRE would have started from: passing, it ends the diagnose; failing, or when a failing run was handed over,
NVCRE's stages end there with nothing named, and the whole group is reported unresolved (fail closed). Likewise a
failing group at minGroupSize whose nodes confirmation clears one by one stays unresolved: each passed with
another node, nothing vouches for them together. For the same reason its verdict releases no node unless that whole
run passed (`planner._releases`): chunks that passed apart say nothing of a link between them (in 137 random link
cases, 38 halving diagnoses had both ends of a bad link among the nodes they released).
"""

from __future__ import annotations

import math

from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.probe import new_probe, result_probe, schedule_probe
from nvcre_hera.diagnose.state import Ctx, Round


def start(ctx: Ctx, measured: bool = True) -> None:
    """Seed the screening level: one group per clique, or ⌈√N⌉-node chunks. `measured`: a failing full-group run
    was handed over (else the whole group is checked once every screening group passed)."""
    n = ctx.n
    groups: list[list[int]] = []
    if ctx.clique_of is not None:
        by: dict[int, list[int]] = {}
        loose: list[int] = []
        for x in range(n):
            c = ctx.clique_of[x]
            (by.setdefault(c, []) if c >= 0 else loose).append(x)
        groups = list(by.values())
        if loose:
            groups.extend(_chunks(loose))
    else:
        groups = _chunks(list(range(n)))
    ctx.state["work"] = [{"k": "G", "id": ctx.new_id(), "s": ns.from_nodes(g), "ps": None} for g in groups]
    if not measured:
        ctx.state["hw"] = 1


def _chunks(nodes: list[int]) -> list[list[int]]:
    size = max(2, math.ceil(math.sqrt(len(nodes))))
    return [nodes[i:i + size] for i in range(0, len(nodes), size)]


def threshold(ctx: Ctx, test_id: str) -> float | None:
    """Absolute pass floor for a test: the user's, else the learned healthy value less the margin."""
    if ctx.config.get("threshold") is not None:
        return float(ctx.config["threshold"])
    m = ctx.meta.get(test_id) or [2, 1]
    h = ctx.ref.healthy(m[0], bool(m[1]))
    return None if h is None else h * (1 - float(ctx.config.get("halvingMargin") or 0.075))


def fails(ctx: Ctx, test_id: str, _item: dict | None = None) -> bool:
    v = ctx.value(test_id)
    if v is None:
        return True
    thr = threshold(ctx, test_id)
    return thr is not None and v < thr


def schedule(ctx: Ctx, rnd: Round) -> None:
    work = ctx.state["work"]
    for it in work:
        if it["k"] == "G" and "res" not in it:
            nodes = ns.to_nodes(it["s"])
            pad = None
            if len(nodes) < ctx.min_group:
                pad = rnd.partner(nodes[0])
                if pad is None:
                    continue
                nodes = nodes + [pad]
            ids = rnd.add([nodes])
            if ids:
                it["t"], it["pad"] = ids, pad
        elif it["k"] == "W" and "t" not in it:
            ids = rnd.add([ns.to_nodes(it["s"])])
            if ids:
                it["t"] = ids
        elif it["k"] == "B":
            schedule_probe(it, rnd)
    if not any(it["k"] in "GBW" for it in work):
        for it in work:
            if it["k"] == "C":
                p = rnd.partner(it["x"], avoid=it["pp"])
                if p is not None:
                    ids = rnd.add([[it["x"], p]])
                    if ids:
                        it["t"] = ids
                        it["pp"].append(p)


def absorb(ctx: Ctx) -> None:
    st = ctx.state
    out = []
    for it in st["work"]:
        if "t" not in it:
            out.append(it)
            continue
        if it["k"] == "G":
            tid = it.pop("t")[0]
            it["res"] = fails(ctx, tid)
            it["ev"] = [tid, _ratio(ctx, tid)]
            if not it["res"]:
                ctx.mark_ok(ns.to_nodes(it["s"]))
            out.append(it)
        elif it["k"] == "W":
            tid = it.pop("t")[0]
            if fails(ctx, tid):
                st["unres"].append(it["s"])
            else:
                ctx.mark_ok(ns.to_nodes(it["s"]))
                st["verified"] = True  # the whole group ran together and passed: the only release halving vouches for
        elif it["k"] == "B":
            if not result_probe(it, ctx, fails):
                out.append(it)
        elif it["k"] == "C":
            tid = it.pop("t")[0]
            if fails(ctx, tid):
                r = _ratio(ctx, tid)
                st["acc"].append({"node": it["x"], "fp": r if r is not None else 0.0, "L": 4.6,
                                  "ev": it["ev"] + [[tid, r]]})
            else:
                ctx.mark_ok([it["x"]])
    st["work"] = out
    level = [it for it in out if it["k"] == "G"]
    if level and all("res" in it for it in level):
        st["work"] = [it for it in out if it["k"] != "G"] + _next_level(ctx, level)
    if not st["work"]:
        _unexplained_leaves(ctx)


def _unexplained_leaves(ctx: Ctx) -> None:
    """A failing group at minGroupSize none of whose nodes was confirmed stays unresolved."""
    st = ctx.state
    accused = {a["node"] for a in st["acc"]}
    for leaf in st.pop("hl", []):
        if not accused & set(ns.to_nodes(leaf)) and leaf not in st["unres"]:
            st["unres"].append(leaf)


def _ratio(ctx: Ctx, tid: str) -> float | None:
    r = ctx.ratio(tid)
    return None if r is None else round(r, 3)


def _next_level(ctx: Ctx, level: list[dict]) -> list[dict]:
    """Split every failing group in two; BHP parents get a probe; small failing groups yield suspects."""
    if len(level) > 1 and all(it["ps"] is None for it in level) and not any(it["res"] for it in level):
        # every screening group passed: the whole group runs once, unless the run handed over already failed
        whole = ns.from_nodes(range(ctx.n))
        if ctx.state.pop("hw", None):
            return [{"k": "W", "id": ctx.new_id(), "s": whole}]
        ctx.state["unres"].append(whole)
        return []
    new: list[dict] = []
    by_parent: dict[int, list[dict]] = {}
    for it in level:
        if it["ps"] is not None:
            by_parent.setdefault(it["pid"], []).append(it)
    for kids in by_parent.values():
        if len(kids) == 2 and not any(k["res"] for k in kids):
            new.append(new_probe(ctx, kids[0]["ps"], [k["s"] for k in kids], None, retest=False, nvcre=True))
    for it in level:
        if not it["res"]:
            continue
        nodes = ns.to_nodes(it["s"])
        if len(nodes) <= ctx.min_group:
            ctx.state.setdefault("hl", []).append(it["s"])
            for x in nodes:
                new.append({"k": "C", "id": ctx.new_id(), "x": x, "pp": [it["pad"]] if it.get("pad") is not None else [],
                            "ev": [it["ev"]]})
            continue
        pid = ctx.new_id()
        for half in ns.split(it["s"], 2, ctx.clique_of):
            new.append({"k": "G", "id": ctx.new_id(), "s": half, "ps": it["s"], "pid": pid})
    return new


def finished(ctx: Ctx) -> bool:
    return not ctx.state["work"]


__all__ = ["absorb", "fails", "finished", "schedule", "start", "threshold"]

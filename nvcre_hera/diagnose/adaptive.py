"""`adaptive` diagnose: CAVS (reference fault-localization.md §5) on the measured bandwidth, not only pass/fail.

Branches advance independently (no level barrier) and split 2–4 ways as free network slots allow. Each split is
judged on its measured ratios against a "same defect as the parent" fingerprint, with a single-defect posterior
across siblings measured in the same round; an untested last part is inferred only on strong evidence, and
marginal values are re-measured (SPRT-style). Singletons are padded with a known-healthy node and confirmed with a
*different* partner unless their evidence is strong and unique. A final job re-runs the group without the
accused; if it still fails, deferred parts are tested and the search resumes. All-parts-pass is probed as a
link / switch fault (see `probe`).

Without a measurement of the whole group (the workflow's first call) the root's status is *unknown*, not failing:
its first split is judged on its own (the user's `threshold` when given, else the healthy reference fitted from
that very round). A part that fails makes the root known to fail (min-model), and the search goes on exactly as
with a failing full result. When every part passes, nothing is wrong *inside* any part, but a link between two
parts is in no job yet: one job of the whole group (the only single job that holds every cross-part pair; pairwise
unions of parts or representatives would take more jobs and rounds) settles it. It passing ends the diagnose with
no suspects (2 rounds); it failing is the group's failing measurement, and the search continues as if it had been
handed over (all parts pass: a boundary probe, whose first step re-tests the group against a dip).

Item kinds in `state["work"]`: K (known or inferred failing set, to split), U (set to re-measure), S (singleton
to confirm), I (set holding an intermittent defect, see `intermittent`), B (boundary probe), V (final verification).
"""

from __future__ import annotations

import math

from nvcre_hera.diagnose import intermittent
from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.evidence import CRASH_LLR, STRONG, llr, same_defect
from nvcre_hera.diagnose.probe import new_probe, result_probe, schedule_probe
from nvcre_hera.diagnose.items import (
    _accuse, _cap, _k, _result_s, _result_u, _round, _schedule_s, _unknown, contradicted, doubted, refresh_accused,
    reopen_padded,
)
from nvcre_hera.diagnose.state import Ctx, Round, held_nodes

POSTERIOR = 0.95  # single-defect posterior needed to follow (or infer) one part
MAX_REMEASURE = 3
MAX_RESTARTS = 3  # barren restarts (beyond one per finding) before the rest is left unresolved
DIP_PRIOR = 0.05  # prior odds that a branch's only failing run was a dip rather than its defect
INFER_LLR = 2.5  # evidence a branch needs before its last part may be inferred rather than tested
CALIBRATE_ARITY = 6  # arity of the first split when no baseline is known (see `_schedule_k`)
PASSES_IF_A_FLAPPER_MAY_HIDE = 3  # final-check passes needed then (a flapper at 1/2 passes three in a row 1 in 8)
REMEASURE_SHARE = 0.02  # the least posterior share of the defect for which a part is measured again
LINK_PRIOR = 0.2  # prior weight of a defect between the parts of a split, against one inside them (which sums to 1)
#: the least ratio to healthy, on average, of a rest that misses the user's floor only as one job
#: (`_missed_as_a_whole`): healthy busbw falls with the group's size (about 2 % an octave in the simulated cluster,
#: nvcre_hera/sim/model.py `scale_efficiency`), which a reference fitted on the parts does not see; a bad link reads
#: at its own deficit (20 % in the bench) and a missed slow node at its own
WHOLE_SHORTFALL = 0.9
#: how far under the floor (in σ) a rest's failing run must read to settle it without a re-test
#: (`_settled_on_failing_run`): closer, noise may explain the miss and a re-test may meet the floor
FLOOR_MISS_SIGMAS = 2.0


def start(ctx: Ctx, full_value: float | None, measured: bool, whole: list[int] | None = None) -> None:
    """Seed the search with the whole group, with its failing measurement as free evidence when there is one.
    `whole`: observations of the whole group measured before any reference (the screens' V0 runs), which the unknown
    root's first split then judges instead of running the group again (`_judge_whole`)."""
    g = ctx.state["G"]
    raw = None
    if measured:  # the failing run is evidence about the defect, never about what healthy looks like
        raw = [ctx.ref.add(full_value, ns.size(g), ctx.network(ns.to_nodes(g)), healthy_candidate=False)]
    root = _k(ctx, g, None, L=None, raw=raw)
    if not measured:
        root["uk"] = 1  # unknown: neither failing nor passing until its parts (or the whole group) say so
        if whole is not None:
            root["w0"] = whole
    ctx.state["work"] = [root]
    ctx.state["restarts"] = 0
    _mark_start(ctx)


# ---------------------------------------------------------------- scheduling


def schedule(ctx: Ctx, rnd: Round) -> None:
    """Fill one round: biggest failing branches first, then re-measures, confirmations, probes, verification."""
    work = ctx.state["work"]
    order = {"K": 0, "U": 1, "S": 2, "I": 3, "B": 4, "V": 5}
    work.sort(key=lambda it: (order[it["k"]], -ns.size(it.get("s") or [[0, 1]])))
    splits = [it for it in work if it["k"] == "K"]
    for i, it in enumerate(work):
        kind = it["k"]
        if kind == "K":
            _schedule_k(ctx, rnd, it, max(1, len(splits) - splits.index(it)) if it in splits else 1)
        elif kind == "U":
            ids = rnd.add([ns.to_nodes(it["s"])])
            if ids:
                it["t"] = ids
        elif kind == "S":
            _schedule_s(rnd, it)
        elif kind == "I":
            intermittent.schedule(ctx, rnd, it)
        elif kind == "B":
            schedule_probe(it, rnd)
    # verify once nothing else is open, so that the final job holds every node the verdict would release. It used to
    # run beside the last splits and confirmations, without their nodes (and the confirmations' partners); when
    # those passed, the rest had never run together (`rest_settled`) and ran again: at 1024 nodes, K = 1, 100
    # trials, waiting takes 6.77 rounds against 6.83, 6.8 wall minutes against 10.2 and 3888 node-minutes
    # against 7439 (never beside the whole-group check of an unknown root either: that job is the verification)
    if all(it["k"] == "V" for it in work):
        v = next((it for it in work if it["k"] == "V"), None)
        if v is None:
            v = {"k": "V", "id": ctx.new_id(), "rep": 0, "L": 0.0}
            work.append(v)
        held = {a["node"] for a in ctx.state["acc"]}
        for f in ctx.state["infra"]:  # leave out one end of each located link so the rest can pass
            side = min(f["between"], key=len)
            if len(side) <= 4:
                held |= set(side)
        nodes = [x for x in ns.to_nodes(ctx.state["G"]) if x not in held and not rnd.busy[x]]
        if len(nodes) >= 2:
            ids = rnd.add([nodes], healthy_candidate=False)
            if ids:
                v["t"] = ids
                s = ns.from_nodes(nodes)
                if v.get("s") != s:  # evidence about another set does not carry over
                    v.update(rep=0, L=0.0, eo=[])
                v["s"] = s


def _schedule_k(ctx: Ctx, rnd: Round, it: dict, remaining: int) -> None:
    if it.get("w"):  # the whole-group check of an unknown root whose parts all passed
        ids = rnd.add([ns.to_nodes(ctx.state["G"])], healthy_candidate=False)
        if ids:
            it["t"] = {"w": ids[0]}
        return
    if "parts" not in it:
        nodes = ns.to_nodes(it["s"])
        size = len(nodes)
        net = ctx.network(nodes)
        b = 4 if not net else max(2, min(4, rnd.free() // remaining))
        if ctx.ref.healthy(size, net) is None:
            # nothing known about healthy yet: the first split also calibrates the reference, whose bootstrap
            # takes the upper half of the round as healthy, so the healthy parts must be a clear majority
            # (4 parts with K=2 defects is a coin flip; 6 parts keep ≥ 4 healthy)
            b = max(b, min(CALIBRATE_ARITY, rnd.free() // remaining))
        b = min(b, size)
        g = ns.size(ctx.state["G"])
        strong = it["inf"] or (it["L"] is not None and it["L"] >= INFER_LLR)
        # a big untested part may hide a second defect when this is the only branch (k unknown): test it;
        # with several failing branches the defects seen already explain the failure, so infer it
        lone = sum(1 for w in ctx.state["work"] if w["k"] == "K") == 1
        infer = strong and (not lone or math.ceil(size / b) < max(2, g // 16))
        for arity in sorted({b, 2}, reverse=True):
            arity = min(arity, size)
            parts = ns.split(it["s"], arity, ctx.clique_of)
            tested = [True] * len(parts)
            if infer and len(parts) > 1:
                tested[-1] = False
            if _add_parts(ctx, rnd, it, parts, [i for i, t in enumerate(tested) if t]):
                it.update(parts=parts, tested=tested, llr=[0.0] * len(parts), m=[0] * len(parts),
                          r=[0.0] * len(parts), ev=[[] for _ in parts], po=[[] for _ in parts], rm=0)
                return
        return
    if it.get("rq"):
        _add_parts(ctx, rnd, it, it["parts"], it["rq"])


def _add_parts(ctx: Ctx, rnd: Round, it: dict, parts: list, which: list[int]) -> bool:
    pp = it.get("pp", {})
    groups = rnd.padded([ns.to_nodes(parts[i]) for i in which], avoid_for=lambda k: pp.get(str(which[k]), []))
    ids = rnd.add(groups) if groups else None
    if not ids:
        return False
    it["t"] = dict(zip(map(str, which), ids))
    pp = it.setdefault("pp", {})
    for i, g in zip(which, groups):
        if ns.size(parts[i]) == 1:
            pp.setdefault(str(i), []).append(g[1] if g[0] == ns.to_nodes(parts[i])[0] else g[0])
    return True


# ---------------------------------------------------------------- decisions


def absorb(ctx: Ctx) -> None:
    """Consume last round's results item by item; items may finish or spawn new items."""
    out: list[dict] = []
    # verification last: whether its failure is already explained depends on what the others just found
    for it in sorted(ctx.state["work"], key=lambda w: w["k"] == "V"):
        if "t" not in it:
            out.append(it)
            continue
        kind = it["k"]
        if kind == "K":
            out.extend(_result_k(ctx, it))
        elif kind == "U":
            out.extend(_result_u(ctx, it))
        elif kind == "S":
            out.extend(_result_s(ctx, it))
        elif kind == "I":
            out.extend(intermittent.result(ctx, it))
        elif kind == "B":
            retest = it["t"][0] if it["ph"] == "re" else None
            done = result_probe(it, ctx, _probe_fails)
            spawned = it.pop("spawn", [])
            out.extend(spawned)  # a probe that found its set inconsistent hands it over
            if not done:
                out.append(it)
            elif retest and not spawned:  # any other item of this round's work may still be open: then not
                _settle_retested_rest(ctx, it, ctx.oid(retest), [w for w in ctx.state["work"] if w is not it])
        elif kind == "V":
            out.extend(_result_v(ctx, it))
    out.extend(reopen_padded(ctx))
    ctx.state["work"] = [it for it in out if not _explained_probe(ctx, it)]


def _explained_probe(ctx: Ctx, it: dict) -> bool:
    """A probe whose failing set (its parent; the two sides once it narrows) holds both ends of a fault recorded
    since it began: that fault explains the failure, and probing on would find it again. (Another fault in there
    still fails the verification, which restarts the search.)"""
    if it["k"] != "B" or not ctx.state["infra"]:
        return False
    focus = it["sd"] if it["ph"] == "cf" else [it["x"], it["y"]] if it["ph"] == "nar" else [it["p"]]
    held = set(ns.to_nodes(ns.union(*focus)))
    return any(all(set(side) <= held for side in f["between"]) for f in ctx.state["infra"])


def _fp_of(ctx: Ctx, it: dict, oids: dict[int, int]) -> tuple[float, float]:
    """The item's fingerprint and evidence under the current reference, set up for the first group."""
    raw = it.get("raw")
    if it.get("fo") is None:
        if raw:
            it["fo"] = list(raw)
        else:  # no measurement of the whole group: a failing part stands for the defect
            it["fo"] = _stand_in(ctx, list(oids.values()))
            it["L"] = 0.0
        ctx.state.setdefault("fo0", it["fo"])
    fp = ctx.fp(it["fo"], 0.0)
    if raw:  # the root's own evidence, recomputed
        r = ctx.r(raw[0])
        it["L"] = CRASH_LLR if r is None else llr(r, r, ctx.sigma)
    it["fp"], it["L"] = _round(fp), _round(it["L"] or 0.0, 3)
    return fp, it["L"]


def _stand_in(ctx: Ctx, observations: list[int]) -> list[int]:
    """The part whose value stands for the defect when the whole group was never measured: among the parts clearly
    below healthy (5σ), the one most of the others agree with (within the spread a fingerprint is inherited with),
    the mildest among equals; none clearly below: the lowest. A dip only ever lowers a value (the worst of a test's
    repeats counts), so of failing parts that disagree the lowest is the likeliest to hold a dip on top of, or
    instead of, a defect. The lowest used to stand in: against a dipped part at 0.62 the two parts that held the
    real 0.78 defects looked marginal, and a 4096-node diagnose followed the dip for 9 rounds (`make bench`'s scale
    run, its second draw)."""
    seen = sorted((0.0 if ctx.r(o) is None else ctx.r(o), o) for o in observations)
    if not seen:
        return []
    clear = [(r, o) for r, o in seen if r < 1 - 5 * ctx.sigma]
    if not clear:
        return [seen[0][1]]
    agree = {o: sum(1 for q, _ in clear if same_defect(q, r, ctx.sigma)) for r, o in clear}
    _r, best = max(clear, key=lambda ro: (agree[ro[1]], ro[0]))
    return [best]


def _passes(ctx: Ctx, o: int | None) -> bool:
    """Whether observation `o` meets the bar of an unknown root: the user's threshold when given, else healthy
    within 3σ of the reference (a 'defect' closer to healthy is no hypothesis, see `evidence.llr`)."""
    if o is None:
        return False
    thr = ctx.config.get("threshold")
    if thr is not None:
        v = ctx.ref.obs[o][0]
        return v is not None and v >= float(thr)
    r = ctx.r(o)
    return r is not None and r >= 1 - 3 * ctx.sigma


def _ratio_or_crash(ctx: Ctx, o: int | None) -> float:
    """Observation `o`'s ratio under the current reference; a crash (or no observation) as −1, below every ratio."""
    r = None if o is None else ctx.r(o)
    return -1.0 if r is None else r


def _judge_whole(ctx: Ctx, it: dict, runs: list[int | None]) -> list[dict]:
    """The whole-group check of an unknown root whose parts all passed: a job of the whole group run for it, or the
    screens' V0 runs (`w0`, measured before the parts set the healthy reference they are judged by), the worst of
    them counting: a run a flapper failed is not outweighed by the runs it passed."""
    it.pop("w", None)
    o = min(runs, key=lambda i: _ratio_or_crash(ctx, i))
    if _passes(ctx, o):  # nothing inside a part, nothing between parts: done, no suspects
        ctx.mark_ok(ns.to_nodes(ctx.state["G"]))
        vouch(ctx, ctx.state["G"])
        return []
    # the group fails: this run is the root's failing measurement, as a handed-over full result would be
    it["raw"], it["fo"] = [o], None
    ctx.state.pop("fo0", None)
    fp, L = _fp_of(ctx, it, {})
    _reval_k(ctx, it, fp)
    return _decide_k(ctx, it, fp, L)


def _result_k(ctx: Ctx, it: dict) -> list[dict]:
    ids: dict[str, str] = it.pop("t")
    it.pop("rq", None)
    if "w" in ids:
        return _judge_whole(ctx, it, [ctx.oid(ids["w"])])
    oids = {int(i): ctx.oid(t) for i, t in ids.items()}
    fp, L = _fp_of(ctx, it, oids)
    po = it.setdefault("po", [[] for _ in it["parts"]])
    for i, tid in ids.items():
        i = int(i)
        it["tested"][i] = True
        po[i].append(oids[i])
        it["ev"][i].append([tid, _round(ctx.ratio(tid), 3)])
    _reval_k(ctx, it, fp)
    whole = it.pop("w0", None)
    if it.pop("uk", None) and all(it["tested"]) and all(_passes(ctx, o) for obs in po for o in obs):
        if whole is not None:
            return _judge_whole(ctx, it, whole)
        it["w"] = 1  # every part passes: only a link between parts can still fail, check the whole group once
        return [it]
    if whole is not None:  # a part failed: V0's runs held every node of it (`items.contradicted` asks them)
        ctx.state["w0"] = whole
    return _decide_k(ctx, it, fp, L)


def _reval_k(ctx: Ctx, it: dict, fp: float) -> None:
    """Per-part evidence from the parts' raw values under the current reference and fingerprint."""
    sig = ctx.sigma
    for i, obs in enumerate(it["po"]):
        rs = [ctx.r(o) for o in obs]
        it["llr"][i] = round(sum(llr(r, fp, sig) for r in rs), 3)
        it["m"][i] = len(rs)
        it["r"][i] = round(sum(0.0 if r is None else r for r in rs), 4)


def _decide_k(ctx: Ctx, it: dict, fp: float, L: float) -> list[dict]:
    parts, tested, lr = it["parts"], it["tested"], it["llr"]
    n = len(parts)
    bad = [i for i in range(n) if tested[i] and lr[i] >= STRONG]
    for i in range(n):
        if tested[i] and lr[i] <= -STRONG:
            ctx.mark_ok(ns.to_nodes(parts[i]))
    marg = [i for i in range(n) if tested[i] and -STRONG < lr[i] < STRONG]
    untested = [i for i in range(n) if not tested[i]]
    weak = fp > 1 - 5 * ctx.sigma  # a fingerprint a dip, or a part a little low, easily matches
    new: list[dict] = []
    if bad:
        # accept a padded singleton on one run only when every sibling is clearly healthy
        # (a weak fingerprint is easily matched by a dip, so then the untested last part must not be in doubt)
        unique = len(bad) == 1 and not marg and not (weak and untested)
        for i in bad:
            new.extend(_child(ctx, it, i, fp, lr[i], True, unique, L, dup=len(bad) > 1))
        for i in marg:
            if lr[i] > -2.0:
                new.append(_unknown(ctx, parts[i], it["fo"], 0.0, it["m"][i], it.get("pp", {}).get(str(i), []),
                                    eo=it["po"][i], ev=it["ev"][i]))
            else:
                ctx.state["def"].append(parts[i])
        ctx.state["def"].extend(parts[i] for i in untested)
        return new
    rs, lr_root, pn = _chain(it, L)
    cands = {i: ns.size(parts[i]) / rs * math.exp(min(lr[i], 30.0)) for i in marg + untested}
    w_noise = pn * math.exp(-min(lr_root, 30.0))
    # every part measured and none clearly failing: a clear defect (the fingerprint well below healthy) may lie
    # between parts (a link), which explains the parts as healthy as they look; without it a part 2σ low took all
    # the posterior and was followed. A weak fingerprint is what a part a little low shows too (a 10 %-slow node):
    # there the part is followed as before (with the link weighed, recall of 10 %-slow nodes fell 0.98 → 0.96);
    # so is a part whose own fingerprint rests on one run of its own (a dip on a 10 %-slow node read as a clear
    # defect, and the link weighed against its parts lost the node)
    solid = bool(it.get("raw")) or len(it.get("fo") or []) >= 2
    w_link = LINK_PRIOR if not untested and len(parts) > 1 and not weak and solid else 0.0
    z = sum(cands.values()) + w_noise + w_link
    if z <= 0:
        return _probe_or_settle(ctx, it, parts, fp)
    post = {i: w / z for i, w in cands.items()}
    top = max(post, key=post.get) if post else None
    between = (w_noise + w_link) / z
    worth = [i for i, p in post.items() if p >= REMEASURE_SHARE]
    # no part worth another run (each under REMEASURE_SHARE) leaves only what lies between them, or a dip: the
    # probe's re-test asks. Re-measuring none used to schedule nothing, and the planner, stuck, left the whole
    # group unresolved after one run (a healthy group whose run read 0.95 of its parts: between at 0.946)
    if between >= POSTERIOR or top is None or not worth or (it["rm"] >= MAX_REMEASURE and between > post[top]):
        if it["inf"] and it["root"]:
            return [new_probe(ctx, it["root"][0], it["root"][1], fp, retest=True)]
        return _probe_or_settle(ctx, it, parts, fp)
    if post[top] >= POSTERIOR or it["rm"] >= MAX_REMEASURE:
        odds = math.log(max(post[top], 1e-9) / max(1 - post[top], 1e-9))
        measured = tested[top]
        new.extend(_child(ctx, it, top, fp, odds if not measured else max(lr[top], odds), measured, True, L))
        for i in marg:
            if i != top:
                ctx.state["def"].append(parts[i])
        return new
    it["rm"] += 1
    it["rq"] = worth
    return [it]


def _chain(it: dict, L: float) -> tuple[int, float, float]:
    if it.get("ch"):
        return it["ch"][0], it["ch"][1], it["ch"][2]
    return ns.size(it["s"]), L, 1.0 if it.get("raw") is not None or it["fp"] is None else DIP_PRIOR


def _child(ctx: Ctx, it: dict, i: int, fp: float, L: float, measured: bool, unique: bool, L_parent: float,
           dup: bool = False) -> list[dict]:
    """A part judged to hold the parent's defect becomes a new branch, a confirmation, or an accusation."""
    part = it["parts"][i]
    sig = ctx.sigma
    po = it["po"][i] if measured else []
    fo_c = list(it["fo"] or [])
    if measured and it["m"][i]:
        r = it["r"][i] / it["m"][i]
        # a part whose deficit matches the parent's inherits the fingerprint; a different one starts its own
        fo_c = fo_c + po if same_defect(r, fp, sig) else list(po)
    root = None if measured else (it["root"] or [it["s"], it["parts"]])
    if ns.size(part) == 1:
        x = ns.to_nodes(part)[0]
        ev = it["ev"][i]
        pp = it.get("pp", {}).get(str(i), [])
        # its own runs must lean to the defect: odds from its siblings' passes alone accused a node whose one run
        # read 0.948 of healthy (no threshold, noise only, N = 64, seed 336: a dipped part followed down); such
        # a node is confirmed beside another partner first (the odds carried as its prior)
        if measured and unique and L >= STRONG and it["llr"][i] > 0.0:
            if contradicted(ctx, it["fo"], po, fp):
                return [doubted(ctx, part, it["fo"], fp, ev, po, pp)]
            _accuse(ctx, x, it["fo"], L, ev, pp, eo=po, fp=fp)
            return []
        s_item = {"k": "S", "id": ctx.new_id(), "x": x, "fo": _cap(it["fo"]), "fp": _round(fp),
                  "L0": 0.0 if measured else 0.0, "eo": list(po), "L": round(L, 3) if measured else 0.0,
                  "m": it["m"][i] if measured else 0, "need": 2 if measured else 1, "pp": list(pp), "root": root,
                  "ev": list(ev)}
        if measured and L > it["llr"][i] + 1e-6:  # posterior odds beyond the part's own likelihood
            s_item["L0"] = round(L - it["llr"][i], 3)
        return [s_item]
    if measured:  # a sibling that also "failed" may be a dip: its chain doubts itself more
        chain = [ns.size(part), round(L, 3), 1.0 if dup else DIP_PRIOR]
    else:
        chain = list(_chain(it, L_parent))
    return [_k(ctx, part, fo_c, L=_round(L, 3), inferred=not measured, root=root, chain=chain)]


def _result_v(ctx: Ctx, it: dict) -> list[dict]:
    tid = it.pop("t")[0]
    r = ctx.ratio(tid)
    st = ctx.state
    it.setdefault("eo", []).append(ctx.oid(tid))
    refresh_accused(ctx)
    # a defect still present would show at least the original group's deficit (min-model); every deficit is
    # recomputed under the current reference, as is the verification's own value
    fo0 = st.get("fo0")
    fps = [a["fp"] for a in st["acc"] if a.get("fp") is not None] + [ctx.fp(fo0, 0.8) if fo0 else 0.8]
    fp = max(fps)
    fh = min(fp, 1 - 3 * ctx.sigma)
    runs = [llr(ctx.r(o), fh, ctx.sigma) for o in it["eo"]]
    it["L"] = round(sum(runs), 3)
    it["rep"] += 1
    passed = it["L"] <= -1.0
    if may_hide_a_flapper(st, _rest_failed(ctx)):
        passed = _passes_run_by_run(runs)
        if passed is None:
            return [it]
    if passed:
        vouch(ctx, it["s"])
        if _under_threshold(ctx, it["eo"]):
            # healthy against what its parts measured, yet below the user's floor as one job: no node or link in
            # it to blame, and no pass either (fail closed: it vouches for none of its nodes)
            _unresolve(st, it["s"])
            return [it]
        ctx.mark_ok(ns.to_nodes(it["s"]))
        return [it]
    if it["L"] < STRONG and it["rep"] < 2:
        return [it]  # marginal: run it once more
    # the group still fails without the accused (it ran alone, after every other item: nothing else explains it)
    o_v = it["eo"][-1]
    if st["def"]:
        new = [_unknown(ctx, d, [o_v], 0.0, 0) for d in st["def"]]
        st["def"] = []
        # accusations resting on one padded run get a second look with a different partner
        for a in list(st["acc"]):
            if len(a.get("ev", [])) < 2:
                st["acc"].remove(a)
                own = a.get("eo") or []
                fo = [o for o in (a.get("fo") or []) if o not in own]
                s_item = {"k": "S", "id": ctx.new_id(), "x": a["node"], "fo": fo or None, "fp": a["fp"],
                          "L0": 0.0 if own else a["L"], "eo": list(own), "L": a["L"], "m": 1, "need": 2,
                          "pp": list(a.get("pp", [])), "root": None, "ev": list(a.get("ev", []))}
                new.append(s_item)
        return new
    # when no job has met the threshold, a new search finds each part as far under it as the whole; a restart
    # counts against MAX_RESTARTS only beyond one per finding (K links need K - 1 restarts at least)
    found = len(st["acc"]) + len(st["infra"])
    if (st.get("restarts", 0) >= MAX_RESTARTS + found or below_threshold_everywhere(ctx)
            or _missed_as_a_whole(ctx, it["eo"])):
        _unresolve(st, it["s"])
        vouch(ctx, it["s"])
        return [it]
    st["restarts"] = st.get("restarts", 0) + 1
    _mark_start(ctx)
    return [_k(ctx, it["s"], [o_v], L=it["L"])]


def _mark_start(ctx: Ctx) -> None:
    """Remember the findings so far where the search (re)starts (`_missed_as_a_whole` asks what it found since)."""
    st = ctx.state
    st["f0"] = len(st["acc"]) + len(st["infra"])


def _missed_as_a_whole(ctx: Ctx, runs: list[int]) -> bool:
    """Whether the rest misses the user's floor only as one job, so that another search would find nothing: the
    search since its last start found nothing in its parts (all healthy, whether or not they met the floor too), none
    of the rest's own `runs` (raw observations) met the threshold, and they read within WHOLE_SHORTFALL of healthy.
    Without this the search started over up to MAX_RESTARTS times (13-33 rounds at 1024 nodes, 43 at 4096 with
    screens) to reach the same verdict: the rest unresolved. A rest holding a bad link reads at the link's deficit
    and the search goes on to find it."""
    thr = ctx.config.get("threshold")
    st = ctx.state
    if thr is None or not runs or len(st["acc"]) + len(st["infra"]) > st.get("f0", 0):
        return False
    values = [ctx.ref.obs[o][0] for o in runs]
    if any(x is None or x >= float(thr) for x in values):
        return False
    ratios = [ctx.r(o) for o in runs]
    return sum(ratios) / len(ratios) >= WHOLE_SHORTFALL


def _settle_retested_rest(ctx: Ctx, probe: dict, retest: int | None, others: list[dict]) -> None:
    """A boundary probe on the whole rest ended on its re-test, which passed against the parts' reference: the
    rest's failing run was a dip, or the rest misses the floor only as one job. In the second case the re-test is the
    final check's run already, and with the failing run it settles the rest as unresolved (`_missed_as_a_whole`):
    the final check would run the same job once or twice more to say so (15.6 simulated minutes a run at 4096
    nodes, each test run three times). Only when nothing else is open, so that the job held every node the verdict
    would release."""
    st = ctx.state
    rest = _rest(st)
    failing = [o for o in st.get("fo0") or [] if ctx.ref.obs[o][1] == ns.size(rest)]
    if others or retest is None or probe["p"] != rest or not failing:
        return
    if _missed_as_a_whole(ctx, failing + [retest]):
        _unresolve(st, rest)
        vouch(ctx, rest)


def _settled_on_failing_run(ctx: Ctx, it: dict) -> bool:
    """The parts of the whole rest passed, and its failing run (the screens' V0, or the whole-group check of an
    unknown root) already settles it as one that misses the floor only as one job (`_missed_as_a_whole`): left
    unresolved now, where the boundary probe would run the same job again first and settle the same verdict on the
    two (`_settle_retested_rest`: 15.6 simulated minutes at 4096 nodes, each test run three times). Only when the
    run misses the floor by more than 2σ, a floor above what the rest reads healthy: one a little under it may be
    noise, and the re-test may meet it (noise-only diagnoses at σ 5 % were left unresolved so in 1 of 400 trials
    at 256 and 1024 nodes). A bad link between the parts reads at its own deficit, under WHOLE_SHORTFALL, and is
    probed as before. Only when nothing else is open, as there."""
    st = ctx.state
    rest = _rest(st)
    runs = [o for o in it.get("raw") or [] if ctx.ref.obs[o][1] == ns.size(rest)]
    thr = ctx.config.get("threshold")
    if it["s"] != rest or not runs or any(w is not it for w in st["work"]) or not _missed_as_a_whole(ctx, runs):
        return False
    if any(ctx.ref.obs[o][0] >= float(thr) * (1 - FLOOR_MISS_SIGMAS * ctx.sigma) for o in runs):
        return False
    _unresolve(st, rest)
    vouch(ctx, rest)
    return True


def _rest(st: dict) -> list:
    """The group without the nodes the verdict never releases (`state.held_nodes`), as range sets."""
    return ns.from_nodes(sorted(set(ns.to_nodes(st["G"])) - held_nodes(st)))


def _probe_or_settle(ctx: Ctx, it: dict, parts: list, fp: float) -> list[dict]:
    """Every part of `it` passed: the boundary probe, whose first step re-tests the whole, unless the failing run
    already settles the rest (`_settled_on_failing_run`)."""
    return [] if _settled_on_failing_run(ctx, it) else [new_probe(ctx, it["s"], parts, fp, retest=True)]


def _passes_run_by_run(runs: list[float]) -> bool | None:
    """A final check that a flapping node may pass: judged run by run, not on the sum of its runs' evidence, which
    one clean pass outweighs (a run at 1.03 against two at 0.78, each of which alone might be a dip; at N = 256
    this handed flappers back). It passes after PASSES_IF_A_FLAPPER_MAY_HIDE passing runs with at most one failing
    run beside them (one dip is likely enough, two are not), fails on a second failing run, on one that failed
    outright (STRONG) or when the passes do not come within two extra runs; None: run it again."""
    passes = sum(1 for x in runs if x <= -1.0)
    fails = sum(1 for x in runs if x > 0.0)
    if max(runs) >= STRONG or fails >= 2 or len(runs) > PASSES_IF_A_FLAPPER_MAY_HIDE + 2:
        return False
    return True if passes >= PASSES_IF_A_FLAPPER_MAY_HIDE else None


def may_hide_a_flapper(st: dict, rest_failed: bool = False) -> bool:
    """Whether a final check that passes may owe it to a flapping node whose flap was off: the search saw a failure,
    and either nothing explains it (no node accused, no fault located: a dip, or a flapper that hid) or a flapping
    node was found (another may hide beside it). When that failure is a run of the whole rest clearly below healthy
    (`rest_failed`, `_rest_failed`: the screens' V0 without their accused, or the search's own whole-group check),
    only what the search found since it last started explains it: the screens' findings explain the run they were
    found for. A flapper the screens took for a steady NIC was accused, V0 without it failed on a second flapper,
    whose parts and final check then passed once with its flap off (N = 256, K = 2 flapping, NVCRE's trigger, seed 5).
    Otherwise every finding counts, as before (docs/diagnose-screens.md, "A flapper behind the screens' steady
    accusation", says what the other starts cost). An accused node whose screens of a kind were low and also passed
    clearly (`mx`, screens._mixed) counts as a flapper found, whatever the search called it: flapper A, low in one
    loopback screen and clear in the next, was accused on pair runs as a steady deficit, and one passing check
    released flapper B (N = 256, K = 2, seed 7; docs/diagnose-screens.md, "A flapper the search took for a steady
    fault")."""
    if not st.get("fo0"):
        return False
    found = len(st["acc"]) + len(st["infra"]) > (st.get("f0", 0) if rest_failed else 0)
    mixed = set(ns.to_nodes(st.get("mx") or []))  # its screens passed clearly as well (screens._mixed)
    return not found or any(a.get("i") or a["node"] in mixed for a in st["acc"])


def _rest_failed(ctx: Ctx) -> bool:
    """Whether the failing run the search started from is a run of the whole rest that reads clearly (3σ) below
    healthy. Not a part's run beside a passing V0 (an unknown root): there a part that dipped cost node faults three
    runs of the rest, and the N = 256 slow NIC's p95 went 8.5 → 11.5 minutes, over the issue's 10. Nor a V0 that
    failed only against the failing full run and reads healthy (a mix's slow GPU, which no multi-node job shows,
    explains neither): 4096-node mixes at K = 1 took 25.5 → 38.6 minutes in the median for no fault found more."""
    fo0 = ctx.state.get("fo0") or []
    if len(fo0) != 1 or ctx.ref.obs[fo0[0]][1] != ns.size(ctx.state["G"]):
        return False
    r = ctx.r(fo0[0])
    return r is None or r < 1 - 3 * ctx.sigma


def below_threshold_everywhere(ctx: Ctx) -> bool:
    """Whether the user gave a threshold and no job measured so far met it (the failing runs that started the
    search are not counted: they are no candidates for healthy). Judged on measured values only."""
    thr = ctx.config.get("threshold")
    if thr is None:
        return False
    measured = [v for v, _n, _net, *never in ctx.ref.obs if v is not None and not never]
    return bool(measured) and max(measured) < float(thr)


def _under_threshold(ctx: Ctx, observations: list[int]) -> bool:
    """Whether the user gave a threshold and none of these runs met it."""
    thr = ctx.config.get("threshold")
    if thr is None:
        return False
    values = [ctx.ref.obs[o][0] for o in observations]
    return not any(v is not None and v >= float(thr) for v in values)


def _probe_fails(ctx: Ctx, tid: str, item: dict) -> bool:
    r = ctx.ratio(tid)
    fp = item.get("fp")
    # a probe narrows on single runs: a fingerprint within 5σ of healthy (what a dip or noise leaves behind)
    # would let a 2–3σ low value pass for the fault at every step, so only a clear deficit is followed
    return llr(r, intermittent.judge_fp(fp, ctx.sigma), ctx.sigma) > 0.0


def refresh(ctx: Ctx) -> None:
    """Forget a passed verification once open work touches the nodes it vouched for."""
    st = ctx.state
    v = next((w for w in st["work"] if w["k"] == "V"), None)
    if v is None or not v.get("s"):
        return
    vset = set(ns.to_nodes(v["s"]))
    touched = any(a["node"] in vset for a in st["acc"])
    for w in st["work"]:
        if w["k"] == "S":
            touched |= w["x"] in vset
        elif w["k"] in "KUBI":
            touched |= bool(vset & set(ns.to_nodes(w.get("s") or w.get("p") or [])))
    if touched:
        st["verified"] = False
        v.update(rep=0, L=0.0, eo=[])


def _unresolve(st: dict, s: list) -> None:
    """Leave set `s` unresolved, in place of any smaller group of it left so before (an earlier final check that
    ran beside other jobs without some of its nodes)."""
    inside = set(ns.to_nodes(s))
    st["unres"] = [u for u in st["unres"] if not set(ns.to_nodes(u)) <= inside] + [s]


def vouch(ctx: Ctx, nodes: list) -> None:
    """A final job of `nodes` settled them: passed (vouched for), or left them unresolved (held)."""
    ctx.state["verified"] = True
    ctx.state["vs"] = nodes


def rest_settled(ctx: Ctx) -> bool:
    """Whether the last final job held every node the verdict would release (all but the accused, the ends of a
    fault and the unresolved). A node's parts passing does not vouch for it together with the rest (a bad link
    between a part and the rest fails neither); when the last final job (or the screens' V0) held fewer, the rest runs
    once more (`tests/test_diagnose_release.py` found the hole: a final check that ran beside the last splits left
    their nodes out, and random mixes released both ends of a bad link, with the user's threshold too)."""
    st = ctx.state
    rest = set(ns.to_nodes(st["G"])) - held_nodes(st)
    return rest <= set(ns.to_nodes(st.get("vs") or []))


def finished(ctx: Ctx) -> bool:
    """Done once the final verification passed, it held the whole rest, and nothing else is pending."""
    st = ctx.state
    if not (st.get("verified") and all(w["k"] == "V" and "t" not in w for w in st["work"])):
        return False
    if rest_settled(ctx):
        return True
    st["verified"] = False  # the next round's verification runs the whole rest (nothing else is pending)
    for w in st["work"]:
        w.update(rep=0, L=0.0, eo=[])
    return False


__all__ = ["absorb", "below_threshold_everywhere", "finished", "refresh", "rest_settled", "schedule", "start", "vouch"]

"""Single-node screens: the first phase of `adaptive` when the config names `screens` (docs/diagnose-screens.md).

A cluster offers some tests for free: a job on one node uses no scale-out switch port, so every node can run one at
once, and it starts faster than any multi-node job (sim/model.py `startup_s`). Two see most node faults:

* ``loopback``: NCCL through the node's own NICs (SHM and P2P off): a slow or flapping NIC, never NVLink or the GPUs;
* ``intra``: the category's all-reduce inside the node: the GPUs and NVLink, never the NIC.

Each round every node runs its next screen; a node is compared with the others of the same kind (the healthy
majority), never with a number it was told. The spread is estimated from the first full round of a kind:
σ̂ = 1.4826·MAD/median, raised by its own uncertainty (× (1 + 2/√n)) and floored at 0.5 %. A value below
1 − Z·σ̂ of the median is *low*; a low node screens the same kind again, and is accused after lows in a row that
dips alone would give a healthy node anywhere in the group with chance under ALPHA (`healthy_chance`), with the
dip rate estimated from the lows that a re-screen cleared (nodes that dipped once and then measured healthy), and
fewer lows when they are deeper than every dip those showed.
A screen that crashes or sends no value accuses its node at once (fail closed), keeping what its test said.

Then one multi-node job of every node not accused, V0, asks whether the accusations explain the failure: it passes
when it meets the user's threshold, or without one, when it runs clearly (3σ̂) above the failing full-group run.
Passing the threshold ends the diagnose; passing the full run only is checked against the rest's parts first
(`_settle`: better than a failing run is not healthy). Failing, the *near misses* screen again first: a node whose screens of a kind are neither
cleared nor accused by their log-likelihood ratio (`evidence`: DELTA_Z·σ̂ below the median against healthy, each
value possibly a dip at the density the kind's own first round showed) screens that kind until the ratio crosses
Wald's bound log(kinds·n/ALPHA_NEAR) (accused) or −CLEAR_LLR (cleared; 0 from its third screen on), for
NEAR_MISS_ROUNDS rounds at most; a 10 %-slow NIC hides within one screen's noise, not within several. If that
accuses anyone, V0 runs once more without them; otherwise, or if that fails too, the rest goes to the `adaptive`
search with the last V0 as its failing measurement (what the screens cannot see: a link between two nodes, a node
that hid in its screens). Without a threshold or a failing run there is nothing to compare V0 with: the search
starts on the rest as an unknown root.

A node that fails some jobs only (flapping) hides in one screen as often as its flap is off, and a re-screen that
passes clears its low as a dip. When V0 passes with the failing full run unexplained (nobody accused), or with a
node found flapping (another may hide beside it), V0 must pass adaptive.PASSES_IF_A_FLAPPER_MAY_HIDE times, and
before each re-run every node screens every kind again (`_repeat`): a screen round costs a third to a tenth of a
V0 and sees a flapping NIC or GPU as often. A node's screens and lows of each kind are counted from its first low on
(`_tally`), across episodes, and judged by an intermittent test (`flap_evidence`: low in FLAP_SHARE of its screens
against low at the healthy nodes' dip rate, the node's own lows left out): past Wald's bound log(kinds·n/ALPHA_FLAP)
it is accused (``Intermittent``, its share of low screens the confidence). From the first repeat on, a node low
twice or more whose evidence leans to a flap (WATCH_SHARE of the bound) screens that kind every round until the
test decides it or it had WATCH_SCREENS screens of the kind; then it is held when dips alone would rarely give that
many lows (`flap_held`).
Lows in a row after a screen of the kind that passed accuse as intermittent too.

Screens travel in batches (`Round.add_screens`: one test item of up to ⌈N/16⌉ nodes of one kind, one job per node,
one value per node back), so a round of them stays small in the Workflow.

State ``st["sc"]``: ``k`` the kinds, ``p`` one character per node (the index of its next kind, ``a`` accused),
``ref`` per kind [median, σ̂, σ, dip density] (`spread`, `dip_density`), ``c`` per kind [screens, cleared lows,
their values, the deepest ratio] (`healthy_chance`), ``low`` the nodes now low ({node: [kind index, [[test id,
ratio], ...]]}), ``nm`` the near misses' screens ({node: [[test index, ratio‰, ...] per kind]}, the test ids in
``nt``; kept until the near-miss phase ends), ``f`` the failing full run's value (``fc``: it crashed), ``ph`` the
phase (``s`` screens, ``v`` the final V0 asked, ``n`` near misses after a failing V0, ``x`` over), ``v``/``vn`` the
V0 test in flight and its nodes, ``vok`` the nodes of a V0 that passed, ``vp`` the passes seen with nobody accused,
``na``/``v0``/``nr`` the accusations before the near-miss phase, the failing V0's value and the phase's rounds,
``rep`` the repeats of the screens, ``h`` the tally ({node: [screens counted, lows, screens taken] per kind,
flat}) and ``w`` the watched nodes ({node: kind index}; both dropped when the screens end). An accusation made
here has ``sk`` (its kind), ``nm`` when the near-miss phase made it, and ``i`` [lows, screens] when it failed some
screens only. Screen values never enter the multi-node healthy reference. A node whose low cleared is kept in
``st["dl"]`` (ranges), outside ``sc``: the search pads singletons with such a node only when no other partner is
free (`state.Round.partner`).
"""

from __future__ import annotations

import math
import statistics

from nvcre_hera.diagnose import adaptive
from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.evidence import CRASH_LLR, _norm, llr
from nvcre_hera.diagnose.state import SPECIFIC_REASONS, Ctx, Round, hold_unresolved

KINDS = ("loopback", "intra")
#: screens run from this many nodes up: below it, a median of few nodes is a poor yardstick and the screen rounds
#: cost more than a search of so few nodes (measured: docs/diagnose-screens.md)
MIN_NODES = 32
#: and up to this many, the largest size measured (docs/diagnose-screens.md "Up to 4096 nodes"). At 4096 they take
#: node faults to 0.50-0.57 x the best halving's wall as the workflow runs them (0.88-1.64 x without), a mix's
#: faults handed back in 39-80 % of trials to 6-18 %, and noise-only accusations from 3.1 % to 0.2 %; they cost
#: flapping nodes handed back more often, bad links more minutes, and where the healthy rest misses the user's floor
#: 43 simulated minutes in the median against 34 (`bench/bench_diagnose_scale.py`): the trade made at 1024 too.
#: The benches set another cap: `nvcre bench diagnose --screens-max-nodes` through the config's
#: ``screensMaxNodes``, `bench/bench_diagnose_scale.py --screens-max-nodes` in its own process. No Certification
#: sets it
MAX_NODES = 4096
Z = 3.5  # a screen below 1 − Z·σ̂ of its kind's median is low
SIGMA_FLOOR = 0.005
SIGMA_UPPER = 2.0  # σ̂ × (1 + SIGMA_UPPER/√n): a spread estimated from n values is itself uncertain
ALPHA = 0.0025  # the chance, per diagnose, that dips alone accuse a healthy node by lows in a row
ALPHA_NEAR = 0.0025  # and by the near-miss test (the two and the search's own stay under 1 %)
MAX_SCREENS = 6
DELTA_Z = 3.0  # the near-miss test's alternative: a node DELTA_Z·σ̂ below its kind's median
CLEAR_LLR = 3.0  # a node is cleared of a kind once its evidence is below −CLEAR_LLR (a near miss until then)
NEAR_MISS_SCREENS = 10  # screens of one kind a near miss takes at most, all phases together
LEAN_SHARE = 0.25  # share of Wald's bound above which an undecided near miss is held at the end (`hold_undecided`)
UNDECIDED = "screens-undecided"  # why such a group is unresolved, as the verdict and the report say it
#: rounds of the near-miss phase at most: it lasts as long as its slowest node's evidence. Six left a healthy node
#: leaning to a deficit, and so held, in 3.2 % of noise-only diagnoses at 1024 nodes; ten hold none there and find
#: more 10 %-slow NICs (docs/diagnose-screens.md, step 5)
NEAR_MISS_ROUNDS = 10
#: the intermittent test's alternative: a flapping node is low in this share of its screens of a kind (reference
#: fault-localization.md §4.6 "bad state present with probability q per job"; the simulated cluster's default,
#: sim/spec.py DEFAULT_FLAP_PROBABILITY: unverified for real hardware, where the share is the fault's own)
FLAP_SHARE = 0.5
ALPHA_FLAP = 0.0025  # the chance, per diagnose, that dips alone accuse a healthy node by the intermittent test
ALPHA_FLAP_HOLD = 0.01  # and that they hold one back, unaccused, by it (`flap_held`)
#: screens of one kind after which a watched node is decided on what it showed (held when leaning to a flap)
WATCH_SCREENS = 16
PASS_Z = 2.0  # a screen within PASS_Z·σ̂ of its kind's median is a clear pass (`_tally`)
#: share of the accusing bound above which a node low twice is watched: at 0 every such node was, and noise-only
#: diagnoses at σ 5 % and 5 % dips took 22.2 simulated minutes in the median at 1024 nodes (16.8 now, 8.6 before the
#: repeats), for flappers handed back 0.125 of the time at K = 1 (0.145 now; docs/diagnose-screens.md)
WATCH_SHARE = 0.25
MIN_BATCH, BATCHES = 32, 16
ACCUSED = "a"
DETAIL = {"loopback": "LoopbackDeficit", "intra": "IntraNodeDeficit"}


def enabled(config: dict, n: int) -> bool:
    """Whether this diagnose screens first: kinds named, and a group size where screens pay (see MIN_NODES) and
    whose screen rounds the Workflow can store (MAX_NODES, or the benches' ``screensMaxNodes``)."""
    kinds = config.get("screens") or []
    return bool(kinds) and MIN_NODES <= n <= int(config.get("screensMaxNodes") or MAX_NODES)


def start(ctx: Ctx, full_value: float | None, full_crashed: bool = False) -> None:
    kinds = [k for k in (ctx.config.get("screens") or []) if k in KINDS]
    if not kinds:
        raise ValueError(f"diagnoseScreens: {ctx.config.get('screens')!r} names none of {', '.join(KINDS)}")
    ctx.state["sc"] = {"k": kinds, "p": "0" * ctx.n, "ref": {}, "c": {k: [0, 0, 0, 1.0] for k in kinds}, "low": {},
                       "f": full_value, "ph": "s", **({"fc": 1} if full_crashed else {})}
    ctx.state["work"] = []


def active(state: dict) -> bool:
    sc = state.get("sc")
    return bool(sc) and sc["ph"] != "x"


def near_miss_rounds(state: dict) -> int:
    """Rounds the near-miss phase took (at most NEAR_MISS_ROUNDS)."""
    return int((state.get("sc") or {}).get("nr", 0))


def is_screen(ctx: Ctx, test_id: str) -> bool:
    m = ctx.meta.get(test_id)
    return m is not None and len(m) > 3


# ---------------------------------------------------------------- scheduling


def schedule(ctx: Ctx, rnd: Round) -> None:
    sc = ctx.state["sc"]
    if sc["ph"] == "n":
        sc["nr"] = sc.get("nr", 0) + 1
        size = batch_size(ctx.n)
        for kind, nodes in _near_misses(ctx).items():
            for i in range(0, len(nodes), size):
                rnd.add_screens(nodes[i:i + size], kind)
        return
    if sc["ph"] == "s":
        kinds, p = sc["k"], sc["p"]
        due: dict[str, list[int]] = {}
        watched = sc.get("w") or {}
        for x in range(ctx.n):
            if p[x] != ACCUSED and int(p[x]) < len(kinds):
                due.setdefault(kinds[int(p[x])], []).append(x)
            elif str(x) in watched:
                due.setdefault(kinds[watched[str(x)]], []).append(x)
        size = batch_size(ctx.n)
        for kind, nodes in due.items():
            for i in range(0, len(nodes), size):
                rnd.add_screens(nodes[i:i + size], kind)
        if "vok" not in sc and _ready(ctx):
            # the rest runs V0 beside the deciding re-screens: a node that low so often is rarely cleared now
            # (when it is, V0 did not hold it and the whole rest runs again, see `absorb`)
            rest = [x for x in _rest(ctx) if not rnd.busy[x]]
            ids = rnd.add([rest], healthy_candidate=False) if len(rest) >= 2 else None
            if ids:
                sc["v"], sc["vn"] = ids[0], ns.from_nodes(rest)
        if rnd.tests:
            return
        sc["ph"] = "v"  # every node screened (or accused): the multi-node check of the rest
    rest = _rest(ctx)
    if len(rest) < 2:
        _end(sc)
        adaptive.vouch(ctx, ns.from_nodes(rest))
        return
    ids = rnd.add([rest], healthy_candidate=False)
    if ids:
        sc["v"], sc["vn"] = ids[0], ns.from_nodes(rest)


def _ready(ctx: Ctx) -> bool:
    """Whether V0 may run now: every node not accused has screened every kind, or is low and one low short of
    being accused (its next screen decides it)."""
    sc = ctx.state["sc"]
    kinds, p = sc["k"], sc["p"]
    if sc.get("w"):
        return False
    for x in range(ctx.n):
        if p[x] == ACCUSED:
            continue
        low = sc["low"].get(str(x))
        if low is not None:
            if not _one_short(sc, kinds[low[0]], ctx.n, [r for _t, r in low[1]]):
                return False
        elif int(p[x]) < len(kinds):
            return False
    return True


def _rest(ctx: Ctx) -> list[int]:
    p = ctx.state["sc"]["p"]
    return [x for x in ns.to_nodes(ctx.state["G"]) if p[x] != ACCUSED]


# ---------------------------------------------------------------- decisions


def batch_size(n: int) -> int:
    """Nodes per screen batch (one test item, one job per node): at most BATCHES items a kind per round."""
    return max(MIN_BATCH, math.ceil(n / BATCHES))


def _batch(ctx: Ctx, test_id: str) -> list[tuple[int, float | None, str | None]] | None:
    """A screen batch's (node, value, reason of a failed job) per node; None when its result did not come back
    (the step failed or was lost: no evidence about any of its nodes either way)."""
    m = ctx.meta[test_id]
    nodes = ns.to_nodes(m[4])
    values = ctx.screens.get(test_id)
    if values is None or len(values) != len(nodes):
        return None
    why = ctx.screen_reasons.get(test_id) or {}
    out = []
    for i, (x, v) in enumerate(zip(nodes, values)):
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
        out.append((x, float(v) if ok else None, None if ok else _specific(why.get(str(i)))))
    return out


def _specific(reasons) -> str | None:
    names = {str(r) for r in reasons or []}
    return next((r for r in SPECIFIC_REASONS if r in names), None)


def _low(sc: dict, kind: str, v: float | None) -> bool:
    ref = sc["ref"].get(kind)
    return v is None or not ref or v / ref[0] < 1 - Z * ref[1]


def failed_count(ctx: Ctx, test_id: str) -> int:
    """How many of a batch's screens failed (crashed, or low), for the round history; all of them when its result
    did not come back."""
    got = _batch(ctx, test_id)
    if got is None:
        return ctx.meta[test_id][0]
    return sum(1 for _x, v, _r in got if _low(ctx.state["sc"], ctx.meta[test_id][3], v))


def spread(values: list[float]) -> tuple[float, float, float]:
    """(median, σ̂, σ) of one kind's screens: σ the relative MAD scaled to a Gaussian σ, σ̂ that raised for small n
    (what a low is judged by) and floored."""
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    raw = 1.4826 * mad / med if med > 0 else 1.0
    return med, max(SIGMA_FLOOR, raw * (1 + SIGMA_UPPER / math.sqrt(len(values)))), raw


def dip_density(ratios: list[float], sigma: float) -> float:
    """How densely a kind's screens fall just below the low line (per unit of ratio): the share in the band
    [1 − 2Z·σ̂, 1 − Z·σ̂), one added, over its width. Dips (and slow nodes) reach up into the Gaussian's range as
    densely as this, so the near-miss test weighs a value there as a dip as readily as a deficit."""
    lo, hi = 1 - 2 * Z * sigma, 1 - Z * sigma
    inside = sum(1 for r in ratios if lo <= r < hi)
    return (inside + 1) / (len(ratios) * (hi - lo))


def dip_rate(sc: dict, kind: str, upper: bool = False, without: tuple[int, int] = (0, 0)) -> float:
    """d̂, the share of a kind's screens that dipped low on a healthy node: cleared lows over screens, one dip added
    so that none seen is not taken for none happening; with `upper`, two Poisson σ above that (few dips seen say
    little about their rate). `without` (screens, lows): one node's own, left out when that node is judged (a
    flapping node's cleared lows are no dips of the healthy; each low counted as an episode, at most)."""
    screens_, cleared = sc["c"][kind][:2]
    screens_, cleared = screens_ - without[0], max(0, cleared - without[1])
    dips = cleared + 1 + (2 * math.sqrt(cleared + 1) if upper else 0)
    return min(0.5, dips / max(screens_, 1))


def healthy_chance(sc: dict, kind: str, n: int, ratios: list[float]) -> float:
    """A bound on the chance that dips alone give some healthy node of the group these lows in a row: kinds·n·d̂^m,
    or, when j of them lie below all M dips seen (the cleared lows' values), kinds·n·d̂⁺^m / C(M + j, j) if that is
    less. Dips are alike, so a new one falls below M earlier ones with chance 1/(M + 1), j of them with
    1/C(M + j, j): a fault deeper than any dip this group showed needs fewer lows, whatever the dips' depth. d̂⁺, the
    rate's upper bound, because that credit is largest when M, and so what d̂ rests on, is small (at σ 5 %, 5 %
    dips and N = 256 d̂ itself let 9 of 1000 noise-only diagnoses accuse this way). Each pass of the screens over
    the group (`_repeat`) is another chance, so the bound counts the passes too."""
    m = len(ratios)
    chances = len(sc["k"]) * n * (sc.get("rep", 0) + 1)
    plain = chances * dip_rate(sc, kind) ** m
    seen, deepest = sc["c"][kind][2:4]
    deep = sum(1 for r in ratios if r < deepest)
    if not deep:
        return plain
    return min(plain, chances * dip_rate(sc, kind, upper=True) ** m / math.comb(seen + deep, deep))


def accuses(sc: dict, kind: str, n: int, ratios: list[float]) -> bool:
    """Whether these lows in a row accuse their node: at least 2, and dips alone would give them to a healthy node
    of the group with chance at most ALPHA (or MAX_SCREENS of them)."""
    m = len(ratios)
    return m >= 2 and (m >= MAX_SCREENS or healthy_chance(sc, kind, n, ratios) <= ALPHA)


def need(sc: dict, kind: str, n: int) -> int:
    """Lows in a row, none deeper than the dips seen, that accuse a node: the fewest m with
    kinds·n·d̂^m ≤ ALPHA."""
    m = math.log(ALPHA / (len(sc["k"]) * n)) / math.log(dip_rate(sc, kind))
    return max(2, min(MAX_SCREENS, math.ceil(m)))


def _one_short(sc: dict, kind: str, n: int, ratios: list[float]) -> bool:
    """Whether one more low, as deep as the shallowest of these, would accuse (its next screen decides it)."""
    return accuses(sc, kind, n, ratios + [max(ratios)])


def _clear_low(sc: dict, kind: str, lows: list) -> None:
    """A low node measured healthy: its lows were dips; count the episode (d̂) and keep how deep they went."""
    c = sc["c"][kind]
    c[1] += 1
    c[2] += len(lows)
    c[3] = min([c[3]] + [r for _t, r in lows])


def absorb(ctx: Ctx) -> None:
    sc = ctx.state["sc"]
    if sc["ph"] == "n":
        _absorb_screens(ctx, sc)
        _near_miss_next(ctx)
        return
    if sc["ph"] == "v":
        _result_v0(ctx, sc.pop("v", None), final=True)
        return
    _absorb_screens(ctx, sc)
    if "v" in sc:
        _result_v0(ctx, sc.pop("v"), final=False)
    if sc["ph"] == "s" and "vok" in sc and not _pending(ctx):
        held = set(ns.to_nodes(sc["vok"]))
        if all(x in held for x in _rest(ctx)):
            _end(sc)  # V0 held every node that is not accused: the accusations explain the failure
            _settle(ctx)
        else:
            sc["ph"] = "v"  # a node V0 left out was cleared since: the whole rest runs once more


def _pending(ctx: Ctx) -> bool:
    sc = ctx.state["sc"]
    return bool(sc.get("w")) or any(c != ACCUSED and int(c) < len(sc["k"]) for c in sc["p"])


def _absorb_screens(ctx: Ctx, sc: dict) -> None:
    by_kind: dict[str, list] = {}
    for tid, m in ctx.meta.items():
        if len(m) > 3:
            got = _batch(ctx, tid)
            if got is None:  # nothing came back: these nodes go on unscreened, V0 (or the search) holds them
                for x in ns.to_nodes(m[4]):
                    sc["low"].pop(str(x), None)
                    (sc.get("nm") or {}).pop(str(x), None)
                    (sc.get("w") or {}).pop(str(x), None)
                    _advance(sc, x, len(sc["k"]))
                continue
            by_kind.setdefault(m[3], []).extend((x, v, why, tid) for x, v, why in got)
    for kind, screened in by_kind.items():
        if kind not in sc["ref"]:
            values = [v for x, v, _w, _t in screened if v is not None and str(x) not in sc["low"]]
            if values:
                med, sigma, raw = spread(values)
                sc["ref"][kind] = [round(med, 4), round(sigma, 4), round(raw, 4),
                                   round(dip_density([v / med for v in values], sigma), 4)]
        ki = sc["k"].index(kind)
        # the healthy ones first: a low cleared this round is a dip seen, which the accusations below weigh
        lows = []
        for x, v, why, tid in screened:
            low = _low(sc, kind, v)
            if v is not None:
                sc["c"][kind][0] += 1
                _keep_near_miss(sc, x, ki, tid, v / sc["ref"][kind][0])
                _tally(sc, x, ki, low, v / sc["ref"][kind][0] >= 1 - PASS_Z * sc["ref"][kind][1])
            if low:
                lows.append((x, v, why, tid))
                continue
            if str(x) in sc["low"]:
                _clear_low(sc, kind, sc["low"].pop(str(x))[1])
                ctx.state["dl"] = ns.union(ctx.state.get("dl") or [], [[x, x + 1]])
            _advance(sc, x, ki + 1)
            _watch(ctx, x, ki)
        for x, v, why, tid in lows:
            if v is None:
                _accuse(ctx, x, kind, [[tid, None]], crashed=True, reason=why)
                continue
            entry = sc["low"].setdefault(str(x), [ki, []])
            entry[1].append([tid, round(v / sc["ref"][kind][0], 3)])
            screens_, lows_, _ = _tallied(sc, x, ki)
            # a node that also passed clearly fails some screens only (`i`, Intermittent in the report)
            flaps = (screens_, lows_) if screens_ > lows_ else None
            if accuses(sc, kind, ctx.n, [r for _t, r in entry[1]]) or \
                    flap_evidence(sc, kind, screens_, lows_) >= _flap_bound(sc, ctx.n):
                _accuse(ctx, x, kind, entry[1], flaps=flaps)


def _tally(sc: dict, x: int, ki: int, low: bool, clear: bool) -> None:
    """Count a node's screens and lows of each kind, from its first low on, across all the screens' phases: what
    tells a flapping node from one that dipped (`flap_evidence`). Only lows and clear passes count (within PASS_Z·σ̂
    of the median): a steadily slow node passes now and then just above the low line (a 20 %-slow NIC read 0.861
    against a line at 0.84 at 64 nodes), a flapping one's passes are healthy. A node first low in the r-th repeat of
    the screens (`_repeat`) passed its r screens of each kind before it."""
    tally = sc.setdefault("h", {})
    entry = tally.get(str(x))
    if entry is None:
        if not low:
            return
        entry = tally[str(x)] = [sc.get("rep", 0), 0, sc.get("rep", 0)] * len(sc["k"])
    entry[3 * ki] += int(low or clear)
    entry[3 * ki + 1] += int(low)
    entry[3 * ki + 2] += 1


def _tallied(sc: dict, x: int, ki: int) -> tuple[int, int, int]:
    """(screens counted, lows, screens taken) of kind `ki` for node x. The watch is capped by the screens taken,
    clear or not: a node that reads between its low line and a clear pass adds nothing to its evidence, and would
    be watched for ever."""
    entry = (sc.get("h") or {}).get(str(x)) or [0, 0, 0] * len(sc["k"])
    return entry[3 * ki], entry[3 * ki + 1], entry[3 * ki + 2]


def flap_evidence(sc: dict, kind: str, screens_: int, lows: int) -> float:
    """Log-likelihood ratio that a node is low in FLAP_SHARE of its screens of `kind` (a flapping node), against
    low at the dip rate d̂⁺ of the group's healthy nodes (`dip_rate`, its upper bound): lows need not come in a
    row, so a flapper's lows add up across its episodes where the lows-in-a-row rule forgets each one."""
    d = dip_rate(sc, kind, upper=True, without=(screens_, lows))
    if d >= FLAP_SHARE:
        return 0.0
    passes = screens_ - lows
    return lows * math.log(FLAP_SHARE / d) + passes * math.log((1 - FLAP_SHARE) / (1 - d))


def _flap_bound(sc: dict, n: int) -> float:
    """Evidence that accuses a node as flapping: Wald's bound, ALPHA_FLAP over the whole group (a healthy node's
    likelihood ratio ever reaches 1/a with chance at most a, Ville's inequality)."""
    return math.log(len(sc["k"]) * n / ALPHA_FLAP)


def flap_held(sc: dict, kind: str, n: int, screens_: int, lows: int) -> bool:
    """Whether a watched node that the intermittent test did not decide is held: dips alone would give some
    healthy node of the group this many lows in this many screens of `kind`, in some pass of the screens, with
    chance at most ALPHA_FLAP_HOLD (kinds·n·passes·P(Binomial(screens, d̂⁺) ≥ lows), d̂⁺ without its own)."""
    d = dip_rate(sc, kind, upper=True, without=(screens_, lows))
    tail = sum(math.comb(screens_, j) * d ** j * (1 - d) ** (screens_ - j) for j in range(lows, screens_ + 1))
    return len(sc["k"]) * n * (sc.get("rep", 0) + 1) * tail <= ALPHA_FLAP_HOLD


def _watch(ctx: Ctx, x: int, ki: int) -> None:
    """Once the screens pass over the group again (`_repeat`), a node that was low twice or more in a kind and
    whose evidence leans to a flap by more than WATCH_SHARE of the bound screens that kind again every round (V0
    waits), until the evidence falls back, accuses it (`_flap_bound`) or it has had WATCH_SCREENS screens of the kind:
    then it is held, unaccused, when dips alone would rarely give that many lows (`flap_held`; fail closed: a node
    low that often is not "nothing wrong")."""
    sc = ctx.state["sc"]
    if not sc.get("rep") or sc["p"][x] == ACCUSED:
        return
    screens_, lows, taken = _tallied(sc, x, ki)
    if lows < 2:
        return
    L = flap_evidence(sc, sc["k"][ki], screens_, lows)
    watched = sc.setdefault("w", {})
    if L > WATCH_SHARE * _flap_bound(sc, ctx.n) and taken < WATCH_SCREENS:
        watched[str(x)] = ki
        return
    if watched.get(str(x)) == ki:
        del watched[str(x)]
    if flap_held(sc, sc["k"][ki], ctx.n, screens_, lows):
        ctx.state["lean"] = ns.union(ctx.state.get("lean") or [], [[x, x + 1]])


def _repeat(ctx: Ctx) -> None:
    """V0 passed but must pass again (the failing run unexplained, or a node found flapping): every node screens
    every kind again before V0 runs once more, and nodes low twice or more are watched (`_watch`). A screen costs a
    third to a tenth of V0 (0.5 simulated minutes against 1.4 at 256 nodes and 5.4 at 4096) and sees a flapping NIC
    or GPU as often as V0 does, and names it."""
    sc = ctx.state["sc"]
    sc["rep"] = sc.get("rep", 0) + 1
    sc["p"] = "".join(c if c == ACCUSED or str(x) in sc["low"] else "0" for x, c in enumerate(sc["p"]))
    sc["ph"] = "s"
    for key in list(sc.get("h") or {}):
        for ki in range(len(sc["k"])):
            _watch(ctx, int(key), ki)


def evidence(sc: dict, kind: str, ratios: list[float]) -> float:
    """Log-likelihood ratio of a node's screens of `kind`: DELTA_Z·σ̂ below the median against healthy, each value
    possibly a dip at the density the kind's first round showed below its low line (`dip_density`), so that a
    dip weighs no more than the group's own dips make it."""
    _med, sigma, _raw, dips = sc["ref"][kind]
    delta = DELTA_Z * sigma
    total = 0.0
    for r in ratios:
        total += math.log((dips + _norm(r, 1.0 - delta, sigma)) / (dips + _norm(r, 1.0, sigma)))
    return total


def _accuse_at(sc: dict, n: int) -> float:
    """Evidence that accuses a near miss: Wald's bound, so that a healthy node reaches it with probability at most
    ALPHA_NEAR / (kinds · n) — ALPHA_NEAR over the whole group."""
    return math.log(len(sc["k"]) * n / ALPHA_NEAR)


def _keep_near_miss(sc: dict, x: int, ki: int, tid: str, ratio: float) -> None:
    """Keep a screen's ratio for the near-miss test when V0 fails: every screen of a node already kept, and a first
    screen that does not clear its node on its own (evidence above −CLEAR_LLR). Kept compact, as the state is
    stored every round: per kind a flat list [index of the test id in ``nt``, ratio in thousandths, ...]."""
    kept = sc.setdefault("nm", {})
    entry = kept.get(str(x))
    if entry is None or not entry[ki]:
        if evidence(sc, sc["k"][ki], [ratio]) <= -CLEAR_LLR:
            return
        entry = kept.setdefault(str(x), [[] for _ in sc["k"]])
    tids = sc.setdefault("nt", [])
    if not tids or tids[-1] != tid:  # a batch's screens arrive together, so its id is the last one kept
        tids.append(tid)
    entry[ki] += [len(tids) - 1, round(ratio * 1000)]


def _ratios(flat: list[int]) -> list[float]:
    return [r / 1000 for r in flat[1::2]]


def _near_misses(ctx: Ctx) -> dict[str, list[int]]:
    """The nodes each kind re-screens in the near-miss phase: neither cleared nor accused by their evidence yet."""
    sc = ctx.state["sc"]
    due: dict[str, list[int]] = {}
    for key, entry in (sc.get("nm") or {}).items():
        x = int(key)
        if sc["p"][x] == ACCUSED:
            continue
        for ki, kept in enumerate(entry):
            if _undecided(ctx, ki, kept):
                due.setdefault(sc["k"][ki], []).append(x)
                break  # one screen per node per round
    return due


def _undecided(ctx: Ctx, ki: int, kept: list[int]) -> bool:
    sc = ctx.state["sc"]
    # past its second screen a node goes on only while its evidence leans to a deficit: the phase lasts as long
    # as its slowest node, and every round it takes is one the search after it does not have (maxRounds)
    screens_ = len(kept) // 2
    return bool(kept) and screens_ < NEAR_MISS_SCREENS and not _cleared(sc, ki, kept) and \
        evidence(sc, sc["k"][ki], _ratios(kept)) < _accuse_at(sc, ctx.n)


def _cleared(sc: dict, ki: int, kept: list[int]) -> bool:
    """Whether a near miss's screens of kind `ki` clear it: evidence at or below −CLEAR_LLR, or at or below 0 from
    its third screen on."""
    clear = -CLEAR_LLR if len(kept) // 2 < 2 else 0.0
    return evidence(sc, sc["k"][ki], _ratios(kept)) <= clear


def _near_miss_next(ctx: Ctx) -> None:
    """Accuse the near misses whose evidence is decisive and forget the cleared; when none is left undecided (or
    the phase had its rounds), V0 runs again without the newly accused (`ph` v), or, with none, the search takes
    the rest over on V0's failing value."""
    sc, st = ctx.state["sc"], ctx.state
    kept_all = sc.get("nm") or {}
    for key in list(kept_all):
        x, entry = int(key), kept_all[key]
        for ki, kept in enumerate(entry):
            if sc["p"][x] != ACCUSED and kept and \
                    evidence(sc, sc["k"][ki], _ratios(kept)) >= _accuse_at(sc, ctx.n):
                _accuse(ctx, x, sc["k"][ki], [[sc["nt"][i], r / 1000] for i, r in zip(kept[::2], kept[1::2])])
        # a node out of screens (NEAR_MISS_SCREENS) but neither accused nor cleared stays on record, so that
        # `_leaning` can hold it: forgetting it released a 10 %-slow NIC whose ten screens leaned well past the
        # hold line (tests/test_diagnose_screens.py, seed 197, with ten near-miss rounds)
        if sc["p"][x] == ACCUSED or all(_cleared(sc, ki, kept) for ki, kept in enumerate(entry) if kept):
            del kept_all[key]
    if _near_misses(ctx) and sc.get("nr", 0) < NEAR_MISS_ROUNDS:
        return
    leaning = _leaning(ctx)
    if leaning:  # held at the end unless the search accuses them (`hold_undecided`)
        st["lean"] = ns.union(st.get("lean") or [], ns.from_nodes(leaning))
    sc.pop("nm", None)  # decided, or left to what follows: the screens' values are not needed any more
    sc.pop("nt", None)
    if len(st["acc"]) > sc["na"]:
        sc["ph"] = "v"
        return
    _hand_over(ctx, sc.get("v0"), True)


def _leaning(ctx: Ctx) -> list[int]:
    """Near misses the phase leaves undecided with their evidence leaning to a deficit (above 0 after two screens
    or more of a kind): the phase ran out of rounds (or a node out of screens) before Wald's bound was crossed."""
    sc = ctx.state["sc"]
    line = LEAN_SHARE * _accuse_at(sc, ctx.n)
    out = []
    for key, entry in (sc.get("nm") or {}).items():
        x = int(key)
        if sc["p"][x] != ACCUSED and any(len(kept) >= 4 and evidence(sc, sc["k"][ki], _ratios(kept)) > line
                                         for ki, kept in enumerate(entry)):
            out.append(x)
    return sorted(out)


def hold_undecided(state: dict) -> None:
    """At the end: near misses the phase left leaning to a deficit, and that nothing accused since, are one
    unresolved group, never released. A passing final check does not clear them: a 10 %-slow NIC at N = 64 read
    0.85-0.92 in six screens each, one short of the bound, and a final check of the rest with it (and another as
    slow) passed against a reference its own jobs had pulled down (fail closed: evidence leaning to a deficit is not
    "nothing wrong")."""
    lean = set(ns.to_nodes(state.pop("lean", None) or []))
    accused = {a["node"] for a in state["acc"]}
    listed = {x for u in state["unres"] for x in ns.to_nodes(u)}
    held = sorted(lean - accused - listed)
    if held:
        # the report says why this group is held (not a failing group nothing explains: judge.py)
        hold_unresolved(state, ns.from_nodes(held), UNDECIDED)


def _advance(sc: dict, x: int, to: int | str) -> None:
    """Move node x on to kind index `to` (or ACCUSED); never back: a near-miss re-screen is not its next kind."""
    now = sc["p"][x]
    if now == ACCUSED or (to != ACCUSED and int(now) >= int(to)):
        return
    sc["p"] = sc["p"][:x] + str(to) + sc["p"][x + 1:]


def _accuse(ctx: Ctx, x: int, kind: str, ev: list, crashed: bool = False, reason: str | None = None,
            flaps: tuple[int, int] | None = None) -> None:
    """Accuse x on its screens `ev` of `kind`; `flaps` (screens, lows): by the intermittent test, which the report
    calls Intermittent, with the share of its screens that were low as the confidence."""
    sc = ctx.state["sc"]
    sc["low"].pop(str(x), None)
    (sc.get("w") or {}).pop(str(x), None)
    _advance(sc, x, ACCUSED)
    if crashed:
        fp, L = 0.0, CRASH_LLR
    else:
        fp = sum(r for _t, r in ev) / len(ev)
        L = sum(llr(r, fp, sc["ref"][kind][1]) for _t, r in ev)
    ctx.state["acc"].append({"node": x, "fp": round(fp, 4), "fo": None, "L": round(L, 3), "ev": ev[-6:], "eo": [],
                             "pp": [], "sk": kind, **({"rs": reason} if reason else {}),
                             **({"nm": 1} if sc["ph"] == "n" else {}),
                             **({"i": [flaps[1], flaps[0]]} if flaps else {})})


def _result_v0(ctx: Ctx, tid: str | None, final: bool) -> None:
    """Whether the rest without the accused passes; if not, the search takes it over (also any node still low)."""
    sc, st = ctx.state["sc"], ctx.state
    v0 = ctx.value(tid) if tid else None
    thr, full = ctx.config.get("threshold"), sc.get("f")
    sigma = max([r[1] for r in sc["ref"].values()] + [SIGMA_FLOOR])
    if v0 is None:
        explained: bool | None = False
    elif thr is not None:
        explained = v0 >= float(thr)
    elif full:
        explained = v0 >= full * (1 + 3 * sigma)
    elif sc.get("fc") and st["acc"]:  # the full run crashed: it ran without the nodes accused for it
        explained = True
    else:
        explained = None  # nothing to compare V0 with yet: the search's first split sets the reference
    held = ns.to_nodes(sc.get("vn") or [])
    flapping = any(a.get("i") for a in st["acc"])
    if thr is None and explained is not False:
        # no threshold: every V0 that passed the failing run (or had nothing to be judged by) is kept for `_settle`
        # to judge against healthy, not only the last; a flapper passes some V0s and fails others
        sc.setdefault("vo", []).append([ctx.oid(tid), sc.get("vn") or []])
    if explained and ((full and not st["acc"]) or flapping) and \
            sc.get("vp", 0) < adaptive.PASSES_IF_A_FLAPPER_MAY_HIDE - 1:
        # nothing accused, so only a dip would explain the failing run, or a flapping node was found and another
        # may hide beside it: a node that fails some jobs only passes one V0 as often as not, so the rest runs
        # again, as the search's final check does (adaptive.PASSES_IF_A_FLAPPER_MAY_HIDE passes in all), after
        # one more pass of the screens each time, unless V0 ran beside screens still deciding a low node (their
        # accusation may explain the failure: V0 runs again once they are done)
        sc["vp"] = sc.get("vp", 0) + 1
        if sc["low"]:
            return
        _repeat(ctx)
        return
    if explained is not False:
        # passed the threshold, or the failing run only (`_settle` judges it against healthy then), or had nothing to
        # be judged by (no threshold, no failing run: a category without a bandwidth floor); V0 still held the whole
        # rest, so the search's first split judges it once a reference is set, and the rest does not run again
        if explained and (thr is not None or not st["acc"]):
            ctx.mark_ok(held)
        sc["vok"] = sc.get("vn") or []
        if final:
            _end(sc)
            _settle(ctx)
        return
    if "na" not in sc:
        # before the search: the near misses (screens a little low, neither cleared nor accused) screen again,
        # and are judged on all their screens together; a weak fault hides in one screen, not in several
        sc["ph"], sc["na"], sc["v0"] = "n", len(st["acc"]), v0
        _near_miss_next(ctx)
        return
    _hand_over(ctx, v0, True)


def _settle(ctx: Ctx) -> None:
    """V0 held the whole rest and passed, or had nothing to be judged by. Against the user's threshold a pass
    vouches for the rest. Without one it was judged against the failing full run (or that run's crash) alone, which
    says that the accused explain the full run's deficit, not that nothing is left: a second, shallower fault (a bad
    link) leaves V0 well above the full run and still failing (`tests/test_diagnose_release.py`: 67 of its 1300
    random mixes released both ends of a bad link this way).
    Then the search takes the rest over as an unknown root: its first split sets a healthy reference, and V0 is
    judged against it as the whole-group check (`adaptive._judge_whole`), so no second job of the rest runs. When V0
    ran more than once (a node found flapping), its worst run that held no node accused since counts: against the
    failing run a flapper's 0.8 passes too, and judging only the last run let one through. With nobody accused V0
    held the very nodes of the failing run, passing twice: a fault that stays would have failed it as it failed that
    run, so it settles them (the check would only give the search more dips to accuse: noise-only false accusations
    rose from 0.7 / 1.0 / 0.5 % to 1.9 / 1.5 / 2.0 % at N = 64 / 256 / 1024). The same check judges V0 when there is
    neither a threshold nor a failing run (the workflow, for a category without a bandwidth floor); with a threshold
    V0 met it and nothing is left to check."""
    sc, st = ctx.state["sc"], ctx.state
    runs = sc.pop("vo", None) or []
    if not runs or (sc.get("f") and not st["acc"]):
        adaptive.vouch(ctx, sc["vok"])
        return
    # the runs of V0 that held no node accused since: a run that held one may owe its deficit to it
    accused = {a["node"] for a in st["acc"]}
    clean = [o for o, vn in runs if not accused & set(ns.to_nodes(vn))]
    _hand_over(ctx, None, False, whole=clean or [runs[-1][0]])


def _hand_over(ctx: Ctx, v0: float | None, failing: bool, whole: list[int] | None = None) -> None:
    """The `adaptive` search takes the rest over, with V0 as its failing measurement when `failing` (`whole`: V0's
    observations, for the unknown root to judge once its parts set a reference)."""
    sc, st = ctx.state["sc"], ctx.state
    mixed = _mixed(sc)
    if mixed:
        st["mx"] = mixed
    _end(sc)
    rest = _rest(ctx)
    st["G"] = ns.from_nodes(rest)
    # the search's noise prior is at least the spread the healthy majority showed here (read from the next call on);
    # the estimate itself, not σ̂: raised for small n, it made the search miss 10 %-slow nodes (docs/diagnose-screens.md)
    st["s0"] = round(max(r[2] for r in sc["ref"].values()) if sc["ref"] else 0.0, 4)
    adaptive.start(ctx, v0, failing, whole)


def _mixed(sc: dict) -> list[list[int]]:
    """Nodes whose screens of some kind were low once or more and also passed clearly (the tally, `_tally`): what
    a flapper shows, and a healthy node that dipped. Kept for the search, which may accuse such a node on its
    multi-node runs as a steady deficit: that finding may be a flapper, with another hiding beside it
    (`adaptive.may_hide_a_flapper`). Index ranges: about N/100 nodes dip in a round."""
    kinds = range(len(sc["k"]))
    return ns.from_nodes(sorted(int(x) for x, e in (sc.get("h") or {}).items()
                                if any(0 < e[3 * ki + 1] < e[3 * ki] for ki in kinds)))


def _end(sc: dict) -> None:
    """The screens are over. Their near-miss record (phases s and n only) and the tally of lows are dropped: the
    state is stored every round, and at 1024 nodes the record was most of it for the rest of the diagnose."""
    sc["ph"] = "x"
    for key in ("nm", "nt", "h", "w"):
        sc.pop(key, None)


def finished(ctx: Ctx) -> bool:
    sc = ctx.state["sc"]
    return sc["ph"] == "x" and bool(ctx.state.get("verified")) and not ctx.state["work"]


__all__ = ["KINDS", "MAX_NODES", "MIN_NODES", "absorb", "accuses", "active", "batch_size", "dip_density", "dip_rate",
           "UNDECIDED", "enabled", "evidence", "failed_count", "finished", "healthy_chance", "hold_undecided",
           "near_miss_rounds",
           "need", "schedule",
           "spread", "start"]

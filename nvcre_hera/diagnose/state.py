"""Planner state shared by both strategies, and the builder that packs one round of tests.

The state is plain JSON that Argo stores between rounds: node indices and ranges only, never names, so a
4096-node diagnose keeps it to a few KiB. A round obeys the two physical rules of the reference (§1): a node is in
at most one job per round, and at most `maxConcurrent` jobs use the scale-out network (jobs inside one node or one
NVLink clique are free).
"""

from __future__ import annotations

from collections.abc import Sequence

from nvcre_hera.diagnose import nodesets as ns
from nvcre_hera.diagnose.evidence import Reference, dip_chance, job_minutes

STATE_VERSION = 1


def new_state(config: dict) -> dict:
    """Fresh state for a diagnose of nodes 0..nodeCount-1."""
    n = int(config["nodeCount"])
    return {
        "v": STATE_VERSION,
        "st": config.get("strategy") or "adaptive",
        "n": n,
        "G": [[0, n]] if n else [],
        "round": 0,
        "jobs": 0,
        "nm": 0.0,
        "ev": {"o": []},
        "ok": "",
        "pc": 0,
        "seq": 0,
        "out": {},
        "work": [],
        "acc": [],
        "infra": [],
        "unres": [],
        "def": [],
        "why": {},
        "done": False,
    }


# What a failed test's reasons say, most specific first; a crash with none of these stays WorkloadFailed.
SPECIFIC_REASONS = ("HardwareFailureDetected", "DataCorruption", "TransportMismatch")


def failure_reason(result: dict) -> str | None:
    """The most specific reason of a failed test (the run step sends their names), None when it names none."""
    if result.get("status", "ok") == "ok":
        return None
    names = {str(x) for x in result.get("reasons") or []}
    return next((r for r in SPECIFIC_REASONS if r in names), None)


def accused_or_on_a_fault(state: dict) -> set[int]:
    """The accused nodes and both ends of every infrastructure fault."""
    ends = {x for f in state["infra"] for side in f["between"] for x in (side if isinstance(side, list) else [side])}
    return {a["node"] for a in state["acc"]} | ends


def held_nodes(state: dict) -> set[int]:
    """Nodes the verdict never releases: accused, on an infrastructure fault, or in an unresolved group."""
    return accused_or_on_a_fault(state) | {x for u in state["unres"] for x in ns.to_nodes(u)}


def hold_unresolved(state: dict, s: list, why: str) -> None:
    """Leave set `s` (ranges) unresolved, saying `why` where it is not the default (a failing group nothing explains).
    The why is keyed by the set, not by its place in the list: a later, wider unresolved set replaces the groups
    inside it (`adaptive._unresolve`), which moves the others."""
    state["unres"].append(s)
    state.setdefault("unresWhy", {})[ranges_key(s)] = why


def ranges_key(s: list) -> str:
    """A set of node ranges as a key: "lo-hi,lo-hi"."""
    return ",".join(f"{lo}-{hi}" for lo, hi in s)


def job_shape(test: dict) -> tuple[int, int]:
    """(nodes per job, jobs) of a planner test: a screen batch (`each`) is one single-node job per node."""
    return (1, len(test["nodes"])) if test.get("each") else (len(test["nodes"]), 1)


class Ctx:
    """Decoded view of config + state for one planner call; `flush` writes the mutable parts back."""

    def __init__(self, state: dict, config: dict, results: Sequence[dict]) -> None:
        self.state = state
        self.config = config
        self.n = state["n"]
        self.cap = int(config.get("maxConcurrent") or 0)
        self.min_group = max(2, int(config.get("minGroupSize") or 2))
        self.clique_of: list[int] | None = None
        cliques = config.get("cliques")
        if cliques:
            self.clique_of = [-1] * self.n
            for ci, members in enumerate(cliques):
                for x in members:
                    if 0 <= x < self.n:
                        self.clique_of[x] = ci
        # the noise prior: the config's, raised to the spread the screens measured on this very group (`screens`)
        sigma0 = max(float(config.get("noise") or 0.03), float(state.get("s0") or 0.0))
        self.ref = Reference(state["ev"], config.get("baselineGBps"), sigma0)
        # a test whose worst of `repeats` runs counts dips more often than one run does
        self.dip = dip_chance(config.get("repeats"))
        self.ok = ns.bits_decode(state["ok"], self.n)
        # nodes that once measured low on their own and then healthy (a dip, or a flap): partners of last resort
        self.doubted = set(ns.to_nodes(state.get("dl") or []))
        self.values: dict[str, float | None] = {}
        self.meta: dict[str, list] = dict(state.get("out") or {})
        why = state.setdefault("why", {})
        self.screens: dict[str, list] = {}  # a screen batch's result: one value (None: that node's job failed) per node
        self.screen_reasons: dict[str, dict] = {}
        for r in results:
            rid = str(r.get("id"))
            if isinstance(r.get("values"), list):
                self.screens[rid] = list(r["values"])
                self.screen_reasons[rid] = dict(r.get("why") or {})
                continue
            v = r.get("busBandwidthGBps")
            self.values[rid] = float(v) if (r.get("status", "ok") == "ok" and v is not None) else None
            reason = failure_reason(r)
            if reason is not None and rid in self.meta:
                why[rid] = reason  # a failed test's own reason, kept for the suspects it will accuse
        # every test asked for last round becomes a raw observation; one without a result counts as crashed, also
        # when the whole round came back empty (on Argo a failed round's aggregated outputs are an empty list)
        self.oids: dict[str, int] = {}
        for tid, m in self.meta.items():
            if len(m) > 3:  # a single-node screen: judged against its own kind (`screens`), never the reference
                continue
            self.oids[tid] = self.ref.add(self.values.get(tid), m[0], bool(m[1]), len(m) < 3)
        state["out"] = {}

    def learn(self) -> None:
        """Re-fit the healthy reference with this round's values before any decision uses it."""
        self.ref.fit()

    def ratio(self, test_id: str) -> float | None:
        """Ratio to healthy of a test asked for last round; a missing or crashed result is None (a hard fail)."""
        m = self.meta.get(test_id)
        v = self.values.get(test_id)
        if m is None or v is None:
            return None
        return self.ref.ratio(v, m[0], bool(m[1]))

    def oid(self, test_id: str) -> int | None:
        """Index of last round's test `test_id` among the raw observations."""
        return self.oids.get(test_id)

    def r(self, index: int) -> float | None:
        """Ratio of observation `index` under the current reference (None: it crashed)."""
        return self.ref.ratio_of(index)

    def fp(self, indices: Sequence[int] | None, default: float | None = None) -> float | None:
        """A fingerprint: the mean ratio of the observations that show one defect (a crash counts as 0)."""
        if not indices:
            return default
        rs = [self.r(i) for i in indices]
        return sum(0.0 if x is None else x for x in rs) / len(rs)

    def value(self, test_id: str) -> float | None:
        return self.values.get(test_id)

    @property
    def sigma(self) -> float:
        return self.ref.sigma

    def mark_ok(self, nodes: Sequence[int]) -> None:
        for x in nodes:
            self.ok[x] = 1

    def network(self, nodes: Sequence[int]) -> bool:
        """A job needs the scale-out network unless it stays inside one node or one NVLink clique."""
        if len(nodes) <= 1:
            return False
        if self.clique_of is None:
            return True
        c = self.clique_of[nodes[0]]
        return c < 0 or any(self.clique_of[x] != c for x in nodes)

    def new_id(self) -> int:
        self.state["seq"] += 1
        return self.state["seq"]

    def flush(self) -> None:
        self.state["ok"] = ns.bits_encode(self.ok)


class Round:
    """Packs the next round: node-disjoint tests, at most `cap` of them on the network."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.busy = bytearray(ctx.n)
        self.net = 0
        self.tests: list[dict] = []
        self.number = ctx.state["round"] + 1

    def free(self) -> int:
        """Network slots left this round (a large number when uncapped)."""
        return 10**9 if self.ctx.cap <= 0 else self.ctx.cap - self.net

    def fits(self, groups: Sequence[Sequence[int]]) -> bool:
        seen: set[int] = set()
        need = 0
        for g in groups:
            for x in g:
                if self.busy[x] or x in seen:
                    return False
                seen.add(x)
            need += self.ctx.network(g)
        return need <= self.free()

    def add(self, groups: Sequence[Sequence[int]], healthy_candidate: bool = True) -> list[str] | None:
        """Schedule all of `groups` or none of them; returns their test ids.

        `healthy_candidate=False` keeps the results out of the healthy reference (a verification must not vouch
        for the yardstick it is judged by)."""
        if not groups or not self.fits(groups):
            return None
        ids = []
        for g in groups:
            net = self.ctx.network(g)
            tid = f"r{self.number}-t{len(self.tests)}"
            nodes = sorted(g)
            self.tests.append({"id": tid, "nodes": nodes, "network": net})
            self.ctx.state["out"][tid] = [len(nodes), int(net)] + ([] if healthy_candidate else [1])
            for x in nodes:
                self.busy[x] = 1
            self.net += net
            ids.append(tid)
        return ids

    def add_screens(self, nodes: Sequence[int], kind: str) -> str | None:
        """Schedule a batch of single-node screens of `kind`, one job per node of `nodes`, all at once and off the
        network; returns its test id. One test item for the batch keeps a round of them small in the Workflow;
        its result is one value per node (`values`, in the order of `nodes`)."""
        nodes = sorted(x for x in nodes if not self.busy[x])
        if not nodes:
            return None
        tid = f"r{self.number}-t{len(self.tests)}"
        self.tests.append({"id": tid, "nodes": nodes, "network": False, "kind": kind, "each": True})
        self.ctx.state["out"][tid] = [len(nodes), 0, 1, kind, ns.from_nodes(nodes)]
        for x in nodes:
            self.busy[x] = 1
        return tid

    def reserve(self, nodes: Sequence[int]) -> None:
        """Hold nodes out of later picks this round (e.g. partners chosen before their job is added)."""
        for x in nodes:
            self.busy[x] = 1

    def release(self, nodes: Sequence[int]) -> None:
        for x in nodes:
            self.busy[x] = 0

    def padded(self, parts: Sequence[Sequence[int]], avoid_for=lambda i: (), exclude: Sequence[int] = (),
               relax_avoid: bool = False) -> list[list[int]] | None:
        """`parts` as job groups, each single node padded with a known-healthy partner (one node alone measures no
        network); None when some part finds no partner. `avoid_for(i)` lists partners part i already had;
        `relax_avoid` takes one of them again rather than none. Partners stay free for `add`."""
        groups, picked = [], []
        for i, nodes in enumerate(parts):
            if len(nodes) == 1:
                p = self.partner(nodes[0], avoid=avoid_for(i), exclude=exclude)
                if p is None and relax_avoid:
                    p = self.partner(nodes[0], exclude=exclude)
                if p is None:
                    self.release(picked)
                    return None
                self.reserve([p])
                picked.append(p)
                nodes = [*nodes, p]
            groups.append(list(nodes))
        self.release(picked)
        return groups

    def partner(self, x: int, avoid: Sequence[int] = (), exclude: Sequence[int] = ()) -> int | None:
        """A known-healthy free node to pad `x` with, same clique first, rotating so partners differ; a doubted
        node (`Ctx.doubted`) only when no other will do: a flapping node passes now and then, and a partner
        whose flap is on fails the run it pads, which then accuses the node it padded."""
        ctx = self.ctx
        bad = set(avoid) | set(exclude) | {x}
        n = ctx.n
        start = ctx.state["pc"] % max(n, 1)
        fallback = None
        want = ctx.clique_of[x] if ctx.clique_of is not None else -1
        for doubted in (False, True):
            for step in range(n):
                y = (start + step) % n
                if ctx.ok[y] and not self.busy[y] and y not in bad and (y in ctx.doubted) == doubted:
                    if want < 0 or ctx.clique_of[y] == want:
                        ctx.state["pc"] = y + 1
                        return y
                    if fallback is None:
                        fallback = y
            if fallback is not None:
                ctx.state["pc"] = fallback + 1
                return fallback
        return None

    def commit(self) -> list[dict]:
        """Account the round in the stats and return its tests."""
        st = self.ctx.state
        if self.tests:
            st["round"] = self.number
            shapes = [job_shape(t) for t in self.tests]
            st["jobs"] += sum(jobs for _size, jobs in shapes)
            st["nm"] = round(st["nm"] + sum(size * jobs * job_minutes(size) for size, jobs in shapes), 2)
        return self.tests


__all__ = ["SPECIFIC_REASONS", "STATE_VERSION", "Ctx", "Round", "failure_reason", "job_shape", "new_state"]

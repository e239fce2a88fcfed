"""A cluster-lite test oracle for the planner: per-node capacity factors, pair link faults, flapping nodes.

Value of a job on group G (reference §4.2, §4.6): baseline(|G|, fabric) × min member factor × link factors
× noise, where noise is `nvcre_hera.sim.noise.noisy` (Gaussian σ plus transient dips). The full simulated cluster
in `nvcre_hera.sim` feeds the same planner through the workflow; this one exists so the benchmark and the tests
need nothing else.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from nvcre_hera.diagnose.evidence import job_minutes
from nvcre_hera.diagnose.planner import FULL_ID, plan
from nvcre_hera.sim.noise import noisy


@dataclass
class Oracle:
    """The ground truth of one trial."""

    n: int
    baseline: float = 380.0
    sigma: float = 0.03
    dip: float = 0.01
    factors: dict[int, float] = field(default_factory=dict)
    links: dict[tuple[int, int], float] = field(default_factory=dict)
    flaps: dict[int, float] = field(default_factory=dict)
    crashes: set[int] = field(default_factory=set)
    cliques: list[list[int]] | None = None
    clique_baseline: float = 800.0
    size_slope: float = 0.004

    def healthy(self, nodes: Sequence[int]) -> float:
        """Healthy busbw: a little lower for bigger groups; NVLink-clique jobs run on the faster fabric."""
        base = self.baseline
        if self.cliques is not None and len(nodes) > 1:
            owner = self._clique_map()
            c = owner.get(nodes[0], -1)
            if c >= 0 and all(owner.get(x, -1) == c for x in nodes):
                base = self.clique_baseline
        return base * (1.0 - self.size_slope * math.log2(max(len(nodes), 1)))

    def _clique_map(self) -> dict[int, int]:
        if not hasattr(self, "_owner"):
            self._owner = {x: i for i, c in enumerate(self.cliques or []) for x in c}
        return self._owner

    def factor(self, nodes: Sequence[int], rng: random.Random) -> float:
        """min-model factor of the group in this job (flapping nodes are bad with their probability)."""
        f = 1.0
        members = set(nodes)
        for x, fx in self.factors.items():
            if x in members:
                q = self.flaps.get(x)
                if q is None or rng.random() < q:
                    f = min(f, fx)
        for (a, b), fl in self.links.items():
            if a in members and b in members:
                f = min(f, fl)
        return f

    def measure(self, nodes: Sequence[int], rng: random.Random) -> dict:
        """One job's result as the planner receives it (without the id)."""
        if self.crashes & set(nodes):
            return {"busBandwidthGBps": None, "status": "failed"}
        v = noisy(self.healthy(nodes) * self.factor(nodes, rng), rng, self.sigma, self.dip)
        return {"busBandwidthGBps": round(v, 3), "status": "ok"}

    def bad_nodes(self) -> set[int]:
        return set(self.factors) | set(self.crashes)


def random_oracle(n: int, faults: int, factor: float, sigma: float, rng: random.Random, dip: float = 0.01) -> Oracle:
    """k slow nodes placed uniformly at random."""
    bad = rng.sample(range(n), faults) if faults else []
    return Oracle(n=n, sigma=sigma, dip=dip, factors={x: factor for x in bad})


@dataclass
class Trace:
    """What a run through the planner produced, for the benchmark and the tests."""

    final: dict
    rounds: list[list[dict]]
    wall_minutes: float

    @property
    def accused(self) -> set[int]:
        return {s["node"] for s in self.final["suspects"]}


def run(oracle: Oracle, config: dict, rng: random.Random, full: float | None | bool = True,
        max_calls: int = 200) -> Trace:
    """Drive `plan` against the oracle until it is done; checks the per-round rules as it goes.

    `full=True` measures the failing full-group run first and hands it over (it is not counted);
    a float hands over that value; False starts with no measurement.
    """
    results: list[dict] = []
    if full is True:
        results = [{"id": FULL_ID, **oracle.measure(list(range(oracle.n)), rng)}]
    elif full is not False and full is not None:
        results = [{"id": FULL_ID, "busBandwidthGBps": float(full), "status": "ok"}]
    state = None
    rounds: list[list[dict]] = []
    wall = 0.0
    cap = int(config.get("maxConcurrent") or 0)
    for _ in range(max_calls):
        out = plan(state, results, config)
        if out["done"]:
            return Trace(out, rounds, round(wall, 2))
        tests = out["tests"]
        seen: set[int] = set()
        for t in tests:
            if seen & set(t["nodes"]):
                raise AssertionError(f"node in two jobs of one round: {t['id']}")
            seen |= set(t["nodes"])
        if cap and sum(t["network"] for t in tests) > cap:
            raise AssertionError(f"round {out['stats']['rounds']} exceeds maxConcurrent={cap}")
        rounds.append(tests)
        wall += max(job_minutes(len(t["nodes"])) for t in tests)
        results = [{"id": t["id"], **oracle.measure(t["nodes"], rng)} for t in tests]
        state = out["state"]
    raise AssertionError("planner did not finish")


__all__ = ["Oracle", "Trace", "random_oracle", "run"]

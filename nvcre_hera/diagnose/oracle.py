"""A cluster-lite test oracle for the planner: per-node NIC, GPU and NVLink factors, pair link faults, flapping nodes.

Value of a job on group G (reference §4.2, §4.6) before noise, by the job's `kind`, with the scopes of
`nvcre_hera/sim/faults.py`'s table (lines 8-12) and the min-model of `nvcre_hera/sim/model.py` `expected_busbw`:

* multi-node (kind None): baseline(|G|, fabric) × min(members' NIC factors, link factors inside G), and no more
  than `intra_baseline` × the lowest member GPU/NVLink factor (model.py:131-133: the NIC and link caps scale the
  scale-out rate, the GPU/NVLink cap scales the intra-node rate, so a mildly slow GPU need not show across nodes);
* `intra` (one node, NVLink and GPUs only): `intra_baseline` × min(GPU, NVLink factor) (model.py:113-116);
* `loopback` (one node through its own NIC, SHM/P2P disabled): `loopback_baseline` × NIC factor (model.py:106-111);

then × noise, where noise is `nvcre_hera.sim.noise.noisy` (Gaussian σ plus transient dips). A flapping node's NIC
factor is present with its probability, one draw per flapping member per job (faults.py:11); a crashed member fails
every job it is in, whatever the kind. The full simulated cluster in `nvcre_hera.sim` feeds the same planner through
the workflow; this one exists so the benchmark and the tests need nothing else.

Departures from the sim, kept so that seeds recorded before the scopes existed replay bit for bit: the multi-node
baseline is the oracle's own (`baseline`, `size_slope`), and an NVLink-clique job still sees NIC and link factors
(model.py:117-120 runs a clique on MNNVL, where only GPU/NVLink caps apply, and those at the clique rate).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nvcre_hera.diagnose.evidence import job_minutes
from nvcre_hera.diagnose.planner import FULL_ID, plan
from nvcre_hera.diagnose.screens import KINDS
from nvcre_hera.diagnose.state import job_shape
from nvcre_hera.sim import model
from nvcre_hera.sim.noise import noisy

#: the single-node screen kinds a test may carry (None: an ordinary multi-node job)
SCREEN_KINDS = KINDS
#: healthy intra-node all-reduce of the default H100 onprem model: BASELINES["h100"][0] × NVLINK_TEST_FACTOR
#: ["all_reduce"] (model.py:28, 40) = 470 GB/s
INTRA_GBPS = model.BASELINES["h100"][0] * model.NVLINK_TEST_FACTOR["all_reduce"]
#: healthy loopback: scale-out 370 × PLATFORM_NET["onprem"] 1.0 × LOOPBACK_FACTOR 0.9 (model.py:28, 36, 41, 111)
#: = 333 GB/s
LOOPBACK_GBPS = model.BASELINES["h100"][1] * model.PLATFORM_NET["onprem"] * model.LOOPBACK_FACTOR


@dataclass
class Oracle:
    """The ground truth of one trial.

    `factors` are the NIC (scale-out) factors, the only ones before the scopes existed; `gpu_factors` and
    `nvlink_factors` scale the node's GPU rate and NVLink capacity.
    """

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
    gpu_factors: dict[int, float] = field(default_factory=dict)
    nvlink_factors: dict[int, float] = field(default_factory=dict)
    intra_baseline: float = INTRA_GBPS
    loopback_baseline: float = LOOPBACK_GBPS

    def healthy(self, nodes: Sequence[int]) -> float:
        """Healthy busbw: a little lower for bigger groups; NVLink-clique jobs run on the faster fabric."""
        base = self.clique_baseline if self.in_one_clique(nodes) else self.baseline
        return base * (1.0 - self.size_slope * math.log2(max(len(nodes), 1)))

    def in_one_clique(self, nodes: Sequence[int]) -> bool:
        """Whether a multi-node job lies inside one NVLink clique."""
        if self.cliques is None or len(nodes) <= 1:
            return False
        owner = self._clique_map()
        c = owner.get(nodes[0], -1)
        return c >= 0 and all(owner.get(x, -1) == c for x in nodes)

    def _clique_map(self) -> dict[int, int]:
        if not hasattr(self, "_owner"):
            self._owner = {x: i for i, c in enumerate(self.cliques or []) for x in c}
        return self._owner

    def factor(self, nodes: Sequence[int], rng: random.Random) -> float:
        """min NIC and link factor of the group in this job (flapping nodes are bad with their probability)."""
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

    def compute(self, nodes: Sequence[int]) -> float:
        """min GPU and NVLink factor over the group (model.py: `compute = min(c.gpu, c.nvlink)`)."""
        return min([self.gpu_factors[x] for x in nodes if x in self.gpu_factors] +
                   [self.nvlink_factors[x] for x in nodes if x in self.nvlink_factors] + [1.0])

    def value(self, nodes: Sequence[int], nic: float, kind: str | None = None) -> float:
        """The noiseless value of a job of `kind` on `nodes` whose NIC and link factor came out at `nic`."""
        if kind is not None and (kind not in SCREEN_KINDS or len(nodes) != 1):
            raise ValueError(f"a {kind!r} job takes one node of a kind in {SCREEN_KINDS}, got {list(nodes)}")
        if kind == "intra":
            return self.intra_baseline * self.compute(nodes)
        if kind == "loopback":
            return self.loopback_baseline * nic
        v = self.healthy(nodes) * nic
        c = self.compute(nodes)
        if c < 1.0:  # only then, so that an oracle without GPU/NVLink faults computes what it always did
            # model.py:132 caps a member at the intra-node rate × its factor; a clique job at the clique rate (:120)
            v = min(v, (self.healthy(nodes) if self.in_one_clique(nodes) else self.intra_baseline) * c)
        return v

    def measure(self, nodes: Sequence[int], rng: random.Random, kind: str | None = None) -> dict:
        """One job's result as the planner receives it (without the id).

        The draws are those of before the scopes (flapping members, then the noise), for every kind: an intra job
        draws its flapping member's NIC too and ignores it, so the stream does not depend on what a job measures.
        """
        if self.crashes & set(nodes):
            return {"busBandwidthGBps": None, "status": "failed"}
        v = noisy(self.value(nodes, self.factor(nodes, rng), kind), rng, self.sigma, self.dip)
        return {"busBandwidthGBps": round(v, 3), "status": "ok"}

    def bad_nodes(self) -> set[int]:
        return set(self.factors) | set(self.gpu_factors) | set(self.nvlink_factors) | set(self.crashes)


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
        max_calls: int = 200, repeats: int = 1, observe: Callable[[dict], None] | None = None) -> Trace:
    """Drive `plan` against the oracle until it is done; checks the per-round rules as it goes.

    `repeats`: every test runs that many times and its worst run counts, as the run step does with `repeatCount`
    (a crash in any repeat fails the test); 1 replays the streams of before it existed.

    `full=True` measures the failing full-group run first and hands it over (it is not counted);
    a float hands over that value; False starts with no measurement.
    `observe(out)` sees every answer of `plan` (the benches that look inside the search read its state there).
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
        if observe is not None:
            observe(out)
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
        wall += max(job_minutes(job_shape(t)[0]) for t in tests)
        results = [_result(oracle, t, rng, repeats) for t in tests]
        state = out["state"]
    raise AssertionError("planner did not finish")


def _result(oracle: Oracle, test: dict, rng: random.Random, repeats: int = 1) -> dict:
    """A test's result, the worst of `repeats` runs; a screen batch (`each`) runs one job per node and answers one
    value per node."""
    def worst(nodes: Sequence[int]) -> dict:
        runs = [oracle.measure(nodes, rng, test.get("kind")) for _ in range(repeats)]
        return next((r for r in runs if r["status"] != "ok"), None) or min(runs, key=lambda r: r["busBandwidthGBps"])

    if not test.get("each"):
        return {"id": test["id"], **worst(test["nodes"])}
    got = [worst([x]) for x in test["nodes"]]
    return {"id": test["id"], "status": "ok", "values": [g["busBandwidthGBps"] for g in got]}


__all__ = ["INTRA_GBPS", "LOOPBACK_GBPS", "Oracle", "SCREEN_KINDS", "Trace", "random_oracle", "run"]

"""How a measured bus bandwidth becomes evidence: healthy reference, ratio, and a dip-robust likelihood ratio.

Model (reference fault-localization.md §2.6, §4.6): a group's busbw is baseline(|G|) × min member factor × noise,
with Gaussian noise σ and ~1 % transient dips of 10–40 %. Decisions compare a value's *ratio* to the healthy
reference against two hypotheses — "holds a defect with the parent's fingerprint" and "healthy" — so that a dip
can never look more than mildly like a fault, and a value far from the fingerprint is treated with suspicion.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: log-likelihood ratio at which a single piece of evidence is decisive (odds 99:1)
STRONG = math.log(99.0)
#: evidence from a job that crashed or produced no number: a hard fault, not a noise artefact
CRASH_LLR = 8.0
DIP_P = 0.01
DIP_LO, DIP_HI = 0.6, 0.9
NEW_FAULT_WEIGHT = 0.05
_CLAMP = 30.0


def _norm(x: float, mu: float, s: float) -> float:
    z = (x - mu) / s
    return math.exp(-0.5 * z * z) / (s * 2.5066282746310002)


def _unif(x: float, lo: float, hi: float) -> float:
    return 1.0 / (hi - lo) if lo <= x <= hi and hi > lo else 0.0


def llr(ratio: float | None, fingerprint: float, sigma: float) -> float:
    """log p(ratio | part holds a defect like `fingerprint`) − log p(ratio | part is healthy), clamped."""
    if ratio is None:
        return CRASH_LLR
    s = max(sigma, 1e-3)
    p_ok = (1 - DIP_P) * _norm(ratio, 1.0, s) + DIP_P * _unif(ratio, DIP_LO, DIP_HI)
    fp = min(max(fingerprint, 0.0), 1.0 - 3 * s)  # a 'defect' indistinguishable from healthy is no hypothesis
    sb = s * 1.25
    p_fp = (1 - DIP_P) * _norm(ratio, fp, sb) + DIP_P * _unif(ratio, DIP_LO * fp, DIP_HI * fp)
    p_new = _unif(ratio, 0.0, 1.0 - 3 * s)
    p_bad = (1 - NEW_FAULT_WEIGHT) * p_fp + NEW_FAULT_WEIGHT * p_new
    if p_bad <= 0 and p_ok <= 0:
        return 0.0
    if p_ok <= 0:
        return _CLAMP
    if p_bad <= 0:
        return -_CLAMP
    return max(-_CLAMP, min(_CLAMP, math.log(p_bad) - math.log(p_ok)))


def confidence(total_llr: float) -> float:
    """Posterior probability from a log-odds, rounded for the report."""
    return round(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, total_llr)))), 4)


def job_minutes(nodes: int) -> float:
    """Estimated wall time of one diagnose job (reference §4.7: ~1–2 min at 8 nodes, 4–10 min at 512)."""
    return 1.0 + 0.4 * math.log2(max(nodes, 2))


def bucket(size: int, network: bool) -> str:
    """Key of the healthy-reference bucket: healthy busbw depends on group size (octaves) and on the fabric."""
    return ("n" if network else "l") + str(round(math.log2(max(size, 1))))


class Reference:
    """Healthy busbw per (size octave, fabric), learned from tests that looked healthy; state kept as plain lists."""

    def __init__(self, data: dict, baseline: float | None, sigma0: float) -> None:
        self.data = data  # {"ref": {bucket: [sum, count]}, "sig": [sumsq, count]}
        self.data.setdefault("ref", {})
        self.data.setdefault("sig", [0.0, 0])
        self.baseline = baseline
        self.sigma0 = sigma0

    @property
    def sigma(self) -> float:
        """Relative noise: the configured prior, raised (never lowered) by what healthy tests show.

        Per-bucket residuals from few samples understate σ, and an understated σ turns noise into accusations.
        """
        ss, n = self.data["sig"]
        return max(self.sigma0, math.sqrt((10 * self.sigma0**2 + ss) / (10 + n)))

    def healthy(self, size: int, network: bool) -> float | None:
        """Expected healthy busbw for a group of `size`: a line in log2(size) fitted to every healthy test.

        Pooling all sizes gives a far tighter estimate than a per-size mean from two or three samples, which
        matters when a fault is only 3σ deep. Falls back to the configured baseline before anything is learned.
        """
        flag = "n" if network else "l"
        pts = [(int(k[1:]), s / c, c) for k, (s, c) in self.data["ref"].items() if k[0] == flag and c > 0]
        if not pts:
            return self.baseline
        x = math.log2(max(size, 1))
        w = sum(c for _, _, c in pts)
        mx = sum(o * c for o, _, c in pts) / w
        my = sum(m * c for _, m, c in pts) / w
        sxx = sum(c * (o - mx) ** 2 for o, _, c in pts)
        slope = sum(c * (o - mx) * (m - my) for o, m, c in pts) / sxx if sxx > 0 and len(pts) >= 3 else 0.0
        return my + slope * (x - mx)

    def ratio(self, value: float | None, size: int, network: bool) -> float | None:
        """Value relative to the healthy reference (None for a crashed job)."""
        if value is None:
            return None
        h = self.healthy(size, network)
        return value / h if h else 1.0

    def learn(self, samples: Iterable[tuple[float | None, int, bool]]) -> None:
        """Add a round's healthy-looking values; with nothing learned yet, bootstrap from the round's top cluster.

        Values only ever dip below healthy, so the cluster near the round's maximum is the healthy one.
        """
        samples = [(v, n, net) for v, n, net in samples if v is not None and v > 0]
        refs = self.data["ref"]
        s0 = self.sigma0
        for net in (True, False):
            group = [(v, n) for v, n, nn in samples if nn == net]
            if not group:
                continue
            learned = any(k[0] == ("n" if net else "l") and c > 0 for k, (_, c) in refs.items())
            h0 = None
            if not learned:
                # values only dip below healthy: the upper half of the round is the healthy cluster
                vals = sorted((v for v, _ in group), reverse=True)
                near = vals[: max(1, (len(vals) + 1) // 2)]
                h0 = sum(near) / len(near)
                if self.baseline and len(group) < 3:
                    h0 = self.baseline
            for v, n in group:
                h = self.healthy(n, net) if learned else h0
                r = v / h
                if 1 - 2 * self.sigma <= r <= 1 + 4 * self.sigma:
                    key = bucket(n, net)
                    refs.setdefault(key, [0.0, 0])
                    refs[key][0] = round(refs[key][0] + v, 4)
                    refs[key][1] += 1
                    self.data["sig"][0] = round(self.data["sig"][0] + (r - 1) ** 2, 8)
                    self.data["sig"][1] += 1


__all__ = ["CRASH_LLR", "STRONG", "Reference", "bucket", "confidence", "job_minutes", "llr"]

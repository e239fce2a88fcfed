"""How a measured bus bandwidth becomes evidence: healthy reference, ratio, and a dip-robust likelihood ratio.

Model (reference fault-localization.md §2.6, §4.6): a group's busbw is baseline(|G|) × min member factor × noise,
with Gaussian noise σ and ~1 % transient dips of 10–40 %. Decisions compare a value's *ratio* to the healthy
reference against two hypotheses — "holds a defect with the parent's fingerprint" and "healthy" — so that a dip
can never look more than mildly like a fault, and a value far from the fingerprint is treated with suspicion.
"""

from __future__ import annotations

import math

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


def dip_chance(repeats: int | None) -> float:
    """The chance that a test's value is a dip when the test runs `repeats` times and its worst run counts (the
    certification's repeatCount): any one of them may dip. 1 % for one run, 3 % for three."""
    runs = int(repeats or 1)
    return DIP_P if runs <= 1 else 1.0 - (1.0 - DIP_P) ** runs


def llr(ratio: float | None, fingerprint: float, sigma: float, dip: float = DIP_P) -> float:
    """log p(ratio | part holds a defect like `fingerprint`) − log p(ratio | part is healthy), clamped; `dip` is the
    chance that a value is a dip (`dip_chance`)."""
    if ratio is None:
        return CRASH_LLR
    s = max(sigma, 1e-3)
    p_ok = (1 - dip) * _norm(ratio, 1.0, s) + dip * _unif(ratio, DIP_LO, DIP_HI)
    fp = min(max(fingerprint, 0.0), 1.0 - 3 * s)  # a 'defect' indistinguishable from healthy is no hypothesis
    sb = s * 1.25
    p_fp = (1 - dip) * _norm(ratio, fp, sb) + dip * _unif(ratio, DIP_LO * fp, DIP_HI * fp)
    p_new = _unif(ratio, 0.0, 1.0 - 3 * s)
    p_bad = (1 - NEW_FAULT_WEIGHT) * p_fp + NEW_FAULT_WEIGHT * p_new
    if p_bad <= 0 and p_ok <= 0:
        return 0.0
    if p_ok <= 0:
        return _CLAMP
    if p_bad <= 0:
        return -_CLAMP
    return max(-_CLAMP, min(_CLAMP, math.log(p_bad) - math.log(p_ok)))


def same_defect(a: float, b: float, sigma: float) -> bool:
    """Whether two ratios lie within the spread of one defect: 3 of the defect's widths (1.25 σ, as `llr` models it)."""
    return abs(a - b) <= 3 * sigma * 1.25


def confidence(total_llr: float) -> float:
    """Posterior probability from a log-odds, rounded for the report."""
    return round(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, total_llr)))), 4)


def job_minutes(nodes: int) -> float:
    """Estimated wall time of one diagnose job (reference §4.7: ~1–2 min at 8 nodes, 4–10 min at 512)."""
    return 1.0 + 0.4 * math.log2(max(nodes, 2))


def bucket(size: int, network: bool) -> str:
    """Key of the healthy-reference bucket: healthy busbw depends on group size (octaves) and on the fabric."""
    return ("n" if network else "l") + str(round(math.log2(max(size, 1))))


#: prior spread of the healthy busbw's slope per octave of group size (relative): ring/tree busbw is nearly
#: size-independent, so a slope is believed only as far as the data carry it (ridge toward flat). This keeps
#: the extrapolation to the largest groups — which all contain the defect, so never sample healthy — sane.
SLOPE_PRIOR = 0.005
_FIT_ITERATIONS = 8


class Reference:
    """Healthy busbw per fabric as a line in log2(size), re-fitted every round from *all* raw results.

    The state keeps the raw observations (``data["o"]``: [value, size, network(, 1 = never healthy)]), never
    ratios or running sums, so nothing decided with an early, poorly known reference stays baked in: each round
    the healthy set is re-classified against the current fit and every ratio, fingerprint and likelihood is
    recomputed from the raw values.
    """

    def __init__(self, data: dict, baseline: float | None, sigma0: float) -> None:
        self.data = data
        self.data.pop("ref", None)
        self.data.pop("sig", None)
        self.data.setdefault("o", [])
        self.baseline = baseline
        self.sigma0 = sigma0
        self._fit: dict[bool, tuple[float, float, float] | None] = {}
        self._sigma = sigma0
        self.fit()

    @property
    def obs(self) -> list:
        return self.data["o"]

    def add(self, value: float | None, size: int, network: bool, healthy_candidate: bool = True) -> int:
        """Record one raw result; returns its index (what items keep as evidence)."""
        row = [None if value is None else round(float(value), 2), int(size), int(bool(network))]
        if not healthy_candidate:
            row.append(1)
        self.obs.append(row)
        return len(self.obs) - 1

    @property
    def sigma(self) -> float:
        """Relative noise: the configured prior, raised (never lowered) by what healthy tests show."""
        return self._sigma

    def fit(self) -> None:
        """Re-classify healthy results and re-fit both fabrics (robust to a contaminated first round)."""
        s0 = self.sigma0
        ss_all, n_all = 0.0, 0
        for net in (True, False):
            pts = [(math.log2(max(n, 1)), v) for v, n, nn, *x in self.obs
                   if bool(nn) == net and not x and v is not None and v > 0]
            if not pts:
                self._fit[net] = None
                continue
            vals = sorted((v for _, v in pts), reverse=True)
            near = vals[: max(1, (len(vals) + 1) // 2)]  # values only dip: start from the upper half
            h0 = sum(near) / len(near)
            if self.baseline and len(pts) < 3:
                h0 = float(self.baseline)
            a, b, xm, sig = h0, 0.0, 0.0, s0
            chosen: list | None = None
            ss, nh = 0.0, 0
            for _ in range(_FIT_ITERATIONS):
                h_of = [a + b * (x - xm) for x, _ in pts]
                keep = [(x, v) for (x, v), h in zip(pts, h_of) if h > 0 and 1 - 2 * sig <= v / h <= 1 + 4 * sig]
                if not keep:
                    break
                if keep == chosen:
                    break
                chosen = keep
                xm = sum(x for x, _ in keep) / len(keep)
                a = sum(v for _, v in keep) / len(keep)
                sxx = sum((x - xm) ** 2 for x, _ in keep)
                sxy = sum((x - xm) * (v - a) for x, v in keep)
                b = sxy / (sxx + (sig / SLOPE_PRIOR) ** 2)
                ss = sum((v / (a + b * (x - xm)) - 1) ** 2 for x, v in keep)
                nh = len(keep)
                sig = max(s0, math.sqrt((10 * s0**2 + ss + ss_all) / (10 + nh + n_all)))
            self._fit[net] = (a, b, xm)
            ss_all += ss
            n_all += nh
        self._sigma = max(s0, math.sqrt((10 * s0**2 + ss_all) / (10 + n_all)))

    def healthy(self, size: int, network: bool) -> float | None:
        """Expected healthy busbw for a group of `size` (the configured baseline before anything is measured)."""
        f = self._fit.get(bool(network))
        if f is None:
            return self.baseline
        a, b, xm = f
        return a + b * (math.log2(max(size, 1)) - xm)

    def ratio(self, value: float | None, size: int, network: bool) -> float | None:
        """Value relative to the healthy reference (None for a crashed job)."""
        if value is None:
            return None
        h = self.healthy(size, network)
        return value / h if h else 1.0

    def ratio_of(self, index: int) -> float | None:
        """Ratio of a recorded observation under the current fit."""
        v, n, net, *_ = self.obs[index]
        return self.ratio(v, n, bool(net))


__all__ = ["CRASH_LLR", "SLOPE_PRIOR", "STRONG", "Reference", "bucket", "confidence", "dip_chance", "job_minutes",
           "llr", "same_defect"]

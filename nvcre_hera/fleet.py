"""The measured distribution of one run, for fleet-relative thresholds (`value >= 0.9 * fleet.median`).

Per category and metric, over that category's groups whose workload succeeded, each group counted once by the value
it is judged by (its worst over its repeats). Pure: a list of floats in, a `FleetStats` out.

- median: the middle value (mean of the two middle ones for an even count), `statistics.median`.
- mad: the median absolute deviation from the median, unscaled (no 1.4826 factor, unlike R's `mad()`: for Gaussian
  noise of width sigma the MAD is about 0.674 sigma). docs/fleet-relative.md has the sources.
- p10: the 10th percentile by linear interpolation between order statistics (the "inclusive" method of
  `statistics.quantiles`, R7 / PERCENTILE.INC): position 0.1 * (count - 1) in the sorted values.
- count: how many values went in (a double in CEL, like the others).

Only finite values go in: a NaN or infinite value says nothing about the fleet, and the group that measured it
fails its fleet-relative threshold on its own (see judge.py). Below MIN_FLEET values the statistics are not
trusted to pass anyone (one bad node can move the median of a handful), and the judge fails closed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass

FLEET_FIELDS = ("median", "mad", "p10", "count")
# Fewer measured groups than this and a fleet-relative threshold cannot pass: with 5 the median still stands when
# two of them are bad; with 2 a single bad node drags it halfway.
MIN_FLEET = 5


@dataclass(frozen=True)
class FleetStats:
    median: float
    mad: float
    p10: float
    count: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    @property
    def large_enough(self) -> bool:
        return self.count >= MIN_FLEET


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between the sorted values at position q * (n - 1); ValueError when empty."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (pos - low) * (ordered[high] - ordered[low])


def fleet_stats(values: Iterable[float | None]) -> FleetStats | None:
    """The statistics over the finite values, or None when there are none."""
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return None
    median = statistics.median(finite)
    mad = statistics.median(abs(v - median) for v in finite)
    return FleetStats(median=median, mad=mad, p10=percentile(finite, 0.1), count=float(len(finite)))


__all__ = ["FLEET_FIELDS", "MIN_FLEET", "FleetStats", "fleet_stats", "percentile"]

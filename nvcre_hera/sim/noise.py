"""Measurement noise shared by the simulated cluster and the diagnose benchmark.

Model from shared/reference/fault-localization.md §4.6: multiplicative Gaussian noise, plus a transient-dip
mixture (with probability p a job loses U(0.1, 0.4) of its value).
"""

from __future__ import annotations

import random


def noisy(value: float, rng: random.Random, sigma: float, dip_probability: float) -> float:
    """Return `value` with Gaussian noise of relative width `sigma` and an occasional 10–40 % dip."""
    factor = rng.gauss(1.0, sigma) if sigma > 0 else 1.0
    if dip_probability > 0 and rng.random() < dip_probability:
        factor *= 1.0 - rng.uniform(0.1, 0.4)
    return max(0.0, value * factor)


__all__ = ["noisy"]

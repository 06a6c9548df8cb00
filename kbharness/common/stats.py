"""Statistics derived from raw times; nothing here is stored, everything is recomputed."""
from __future__ import annotations

import math
import random
import statistics
from typing import Sequence


def speedup_ci(ref_ms: Sequence[float], new_ms: Sequence[float], confidence: float = 0.95,
               n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Bootstrap interval of median(ref) / median(new), resampling each side independently."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(n_boot):
        r = statistics.median(rng.choices(ref_ms, k=len(ref_ms)))
        n = statistics.median(rng.choices(new_ms, k=len(new_ms)))
        ratios.append(r / n if n > 0 else math.inf)
    ratios.sort()
    lo = ratios[int((1 - confidence) / 2 * n_boot)]
    hi = ratios[min(n_boot - 1, int((1 + confidence) / 2 * n_boot))]
    return lo, hi


def geometric_mean(values: Sequence[float]) -> float:
    values = [v for v in values if v > 0]
    if not values:
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))


def relative_spread(times_ms: Sequence[float]) -> float:
    """IQR over median: above a few percent a timing is too noisy to rank candidates by."""
    if len(times_ms) < 2:
        return 0.0
    q1, med, q3 = statistics.quantiles(times_ms, n=4, method="inclusive")
    return (q3 - q1) / med if med > 0 else math.inf

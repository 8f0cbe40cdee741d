"""Paired inference for one comparison -- two models, one configuration, the same items -- and
the multiplicity control over a benchmark's comparisons.

The test is a paired randomization test: under the null hypothesis that the two models are
exchangeable on every item, swapping their records on any set of items is as likely as the
records observed. The statistic is the difference in the primary metric's goodness (any metric:
it is recomputed from the records, so ratio metrics such as XSTest's balanced rate are tested as
they are reported). Two-sided p = the share of swap patterns whose |difference| reaches the
observed one. With at most ``log2(EXACT_LIMIT)`` items every pattern is enumerated and p is exact;
for a binary per-item outcome that is the exact McNemar (sign) test on the discordant items.
Beyond, ``n_resamples`` random patterns give the Monte Carlo p-value ``(1 + hits) / (1 + R)``,
which is valid (never below the exact one in expectation).

A comparison is *too small to resolve* when even the most extreme split could not reach the
level: the identity and the full swap always tie, so an exact p is at least ``2 / 2**n`` (with 4
items 0.125, never below 0.05 until 6 items); such a comparison is never called resolved.
Across one benchmark and tier's comparisons the p-values are adjusted (Holm by default, or
Benjamini-Hochberg; statsmodels' ``multipletests``) and a comparison is *resolved* when its
adjusted p is below :data:`ALPHA`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from .errors import ConfigError

__all__ = ["ALPHA", "EXACT_LIMIT", "MULTIPLICITY", "adjust", "randomization_test", "smallest_p"]

ALPHA = 0.05
"""The level every resolved/unresolved verdict uses (two-sided)."""
EXACT_LIMIT = 1024
"""Swap patterns enumerated exactly (10 items); more items are sampled."""
MULTIPLICITY = {"holm": "holm", "bh": "fdr_bh"}
"""The multiplicity controls on offer: Holm (family-wise error) or Benjamini-Hochberg (false discovery rate)."""
_TOLERANCE = 1e-12


def _exact(n_items: int, n_resamples: int) -> bool:
    return 2 ** n_items <= max(EXACT_LIMIT, n_resamples)


def randomization_test(n_items: int, difference: Callable[[np.ndarray], float], *, seed: int,
                       n_resamples: int = 1000) -> tuple[float, float, bool]:
    """``difference(swap)`` -- the goodness difference A - B with A's and B's records exchanged on
    the items where ``swap`` is True -- observed, its two-sided p-value, and whether p is exact.
    Patterns whose difference is undefined (NaN) are left out; an undefined observation gives NaN."""
    if n_items <= 0:
        raise ConfigError("paired scores need the same, non-empty items on both sides", "align the items first")
    observed = float(difference(np.zeros(n_items, dtype=bool)))
    if math.isnan(observed):
        return observed, math.nan, False
    exact = _exact(n_items, n_resamples)
    if exact:
        patterns = ((np.arange(2 ** n_items)[:, None] >> np.arange(n_items)) & 1).astype(bool)
    else:
        patterns = np.random.default_rng(seed).random((n_resamples, n_items)) < 0.5
    values = np.array([difference(row) for row in patterns], dtype=float)
    values = values[~np.isnan(values)]
    hits = int((np.abs(values) >= abs(observed) - _TOLERANCE).sum())
    p = hits / len(values) if exact else (1 + hits) / (1 + len(values))
    return observed, min(1.0, p), exact


def smallest_p(n_items: int, n_resamples: int = 1000) -> float:
    """The smallest p-value :func:`randomization_test` can give with this many items."""
    if _exact(n_items, n_resamples):
        return min(1.0, 2 / 2 ** n_items)
    return 1 / (1 + n_resamples)


def adjust(pvalues: Sequence[float], method: Literal["holm", "bh"] = "holm") -> list[float]:
    """p-values adjusted for the comparisons made together (NaN stays NaN and is not counted)."""
    from statsmodels.stats.multitest import multipletests

    if method not in MULTIPLICITY:
        raise ConfigError(f"unknown multiplicity control {method!r}", f"use one of {sorted(MULTIPLICITY)}")
    values = np.asarray(pvalues, dtype=float)
    out = np.full(values.shape, math.nan)
    kept = ~np.isnan(values)
    if kept.any():
        out[kept] = multipletests(values[kept], alpha=ALPHA, method=MULTIPLICITY[method])[1]
    return [float(v) for v in out]

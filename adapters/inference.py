"""Paired inference for one comparison -- two models, one configuration, the same items -- and
the multiplicity control over a benchmark's comparisons.

Every primary metric is computed from per-item outcomes (``Benchmark.item_outcome``, with
``score_outcomes``), so a comparison is two outcome vectors over the same items. The test is a
paired randomization test: under the null hypothesis that the two models are exchangeable on
every item, swapping their outcomes on any set of items is as likely as what was observed. The
statistic is the difference in the primary metric's goodness, recomputed for each swap (so ratio
metrics such as XSTest's balanced rate and CrowS-Pairs' distance to 50 are tested as reported).
Only the *discordant* items (outcomes that differ) can move it: with d of them,

* 0/1 outcomes whose metric is their plain mean (accuracy): the exact McNemar (sign) test,
  two-sided binomial on the d discordant items, exact at any d;
* otherwise, up to :data:`EXACT_ITEMS` discordant items: all 2^d swap patterns, exact p;
* beyond: Monte Carlo with R patterns, p = (1 + hits) / (1 + R), R chosen by the caller large
  enough for the family it is adjusted in (see :func:`resamples_for`).

Two-sided p = the share of patterns whose |difference| reaches the observed one. A comparison is
*too small to resolve* when even its most extreme pattern could not reach the level
(:func:`compare` reports that smallest attainable p: 2/2^d for the sign test, 0.125 with 4
discordant items); such a comparison can never be rejected, so it is left out of the family the
p-values are adjusted over (Tarone's rule: a hypothesis that cannot reach the level costs the
others nothing) and is never called resolved. Across one benchmark and tier's comparisons the
p-values are adjusted (Holm by default, or Benjamini-Hochberg; statsmodels' ``multipletests``);
*resolved* means an adjusted p below :data:`ALPHA`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from .errors import ConfigError

__all__ = ["ALPHA", "EXACT_ITEMS", "MULTIPLICITY", "adjust", "compare", "resamples_for"]

ALPHA = 0.05
"""The level every resolved/unresolved verdict uses (two-sided)."""
EXACT_ITEMS = 12
"""Discordant items up to which every swap pattern is enumerated (4,096 patterns)."""
MULTIPLICITY = {"holm": "holm", "bh": "fdr_bh"}
"""The multiplicity controls on offer: Holm (family-wise error) or Benjamini-Hochberg (false discovery rate)."""
_TOLERANCE = 1e-9


def resamples_for(family_size: int, n_resamples: int) -> int:
    """Monte Carlo patterns for a family of this size: enough that the smallest p, 1/(1 + R), is
    far below what Holm's first step needs (ALPHA / m), so no difference is unresolvable for
    want of resamples."""
    return max(n_resamples, math.ceil(20 * max(family_size, 1) / ALPHA))


def compare(a: np.ndarray, b: np.ndarray, statistic: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
            seed: int, n_resamples: int, mean_of_binary: bool) -> dict[str, Any]:
    """Test one comparison. ``a``/``b``: the two models' outcomes per item (NaN: does not count);
    ``statistic(A, B)``: the goodness difference for rows of outcome vectors; ``mean_of_binary``:
    the metric is the plain mean of 0/1 outcomes ranked higher- or lower-is-better (the sign test
    applies). Returns ``difference``, ``p_value`` (NaN where the difference is undefined),
    ``exact``, ``smallest_p`` (the least p any arrangement of these discordant items could give;
    for Monte Carlo a lower bound), ``discordant`` and ``method``."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or not a.size:
        raise ConfigError("paired scores need the same, non-empty items on both sides", "align the items first")
    observed = float(statistic(a[None], b[None])[0])
    discordant = np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))
    d = len(discordant)
    found: dict[str, Any] = {"difference": observed, "discordant": d}
    if math.isnan(observed):
        return found | {"p_value": math.nan, "exact": False, "smallest_p": math.nan, "method": "undefined"}
    if d == 0:
        return found | {"p_value": 1.0, "exact": True, "smallest_p": 1.0, "method": "identical outcomes"}
    if mean_of_binary:
        from scipy.stats import binomtest

        wins = int((a[discordant] > b[discordant]).sum())
        return found | {"p_value": float(binomtest(wins, d, 0.5).pvalue), "exact": True,
                        "smallest_p": min(1.0, 2 * 0.5 ** d), "method": "exact sign test (McNemar)"}
    if d <= EXACT_ITEMS:
        patterns = ((np.arange(2 ** d)[:, None] >> np.arange(d)) & 1).astype(bool)
    else:
        patterns = np.random.default_rng(seed).random((n_resamples, d)) < 0.5
    values = np.concatenate([_swapped(statistic, a, b, discordant, patterns[start:start + _CHUNK])
                             for start in range(0, len(patterns), _CHUNK)])
    values = np.abs(values[~np.isnan(values)])
    hits = int((values >= abs(observed) - _TOLERANCE).sum())
    if d <= EXACT_ITEMS:
        return found | {"p_value": hits / len(values), "exact": True, "method": "exact randomization test",
                        "smallest_p": float((values >= values.max() - _TOLERANCE).mean())}
    # A lower bound on what any arrangement could give, unless no sampled arrangement moves the
    # difference at all (e.g. rates mirrored around a target): then nothing can be resolved.
    moved = bool((values > _TOLERANCE).any())
    return found | {"p_value": (1 + hits) / (1 + len(values)), "exact": False, "method": "Monte Carlo randomization test",
                    "smallest_p": max(1 / (1 + len(values)), 2 * 0.5 ** d) if moved else 1.0}


_CHUNK = 8192
"""Swap patterns evaluated at once (bounds memory on large families and cells)."""


def _swapped(statistic: Callable[[np.ndarray, np.ndarray], np.ndarray], a: np.ndarray, b: np.ndarray,
             discordant: np.ndarray, patterns: np.ndarray) -> np.ndarray:
    swap = np.zeros((len(patterns), a.size), dtype=bool)
    swap[:, discordant] = patterns
    return statistic(np.where(swap, b, a), np.where(swap, a, b))


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

"""Designing a study from a pilot: how many items a cell needs, and whether the gates can pass.

Pure numbers (no model, no files); :mod:`.pilot` feeds them a pilot run's items. The rules, so a
reader can redo them by hand:

* **per-item spread** of a comparison (two models, one configuration): the delete-one jackknife of
  the paired statistic (goodness of A minus goodness of B on the benchmark's primary metric, its
  strata weighed as the metric weighs them), ``sigma = sqrt(n * var_jack)``. For a plain mean it
  is the sample standard deviation (ddof 1) of the per-item differences, exactly; for a stratified
  or target metric it is the linearisation the paired bootstrap also rests on.
* **detection limit** at ``n`` items: the 95% paired interval's half-width, ``1.96 sigma / sqrt(n)``
  (the statistics' detection limit is the median half-width over comparisons whose outcomes
  differ somewhere; so is this one, over the pilot's comparisons).
* **gaps seen**: a pilot's |difference| is inflated by its own noise (``E d^2 = g^2 + sigma^2/n``),
  so the gap sizing uses is the de-biased ``sqrt(max(0, d^2 - sigma^2 / n))``; a gap inside the
  pilot's own noise counts as no gap.
* **items needed** to resolve a comparison: the paired z-test's sample size at the family-wise
  level the statistics apply (Holm's strictest step, ``alpha / family``) and the stated power,
  ``((z_{1 - alpha/(2 family)} + z_power) sigma / gap)^2``, and at least enough items for the
  exact test to be able to reach that level at all: ``log2(2 family / alpha)`` discordant items
  (items whose outcomes differ), at the pilot's share of discordant items -- fewer is what the
  statistics call "too small to resolve". Infinite where the gap is 0 or no item differs.
* **resolvable share** at ``n``: the share of comparisons whose items needed is at most ``n``.

Gate operating characteristic: a gate is a rule on two measurements of the same cells (the
repeat: the first measurement and its same-window repeat; the replay: the run and its replay).
:func:`gate_oc` resamples the pilot's items in two stages -- the pilot's items at the pilot's size
(the pilot's own uncertainty), then ``n`` items per cell from those, the same items for every cell
of a benchmark, as a run's cells share them -- and applies the gate's own rule each time:
the share of passes is the probability that the gate passes a healthy instrument with the
measured noise. The *degraded* instrument is the same with a stated share of each cell's items
answered in the second measurement as a random other item of that cell was (its marginal kept,
its pairing broken). The *reachable threshold* is the 5th percentile of the gate's statistic (the
smaller of its two numbers) under the healthy instrument: a threshold a healthy instrument meets
19 times in 20.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from .analysis import paired_difference
from .benchmarks.base import score_outcomes
from .instrument import median, ordering, spearman, verdict
from .stats import goodness

__all__ = ["ALPHA", "LEVEL", "Measured", "comparisons_frame", "debiased_gap", "detection_limit", "gate_oc", "half_width", "items_needed",
           "items_for_share", "jackknife_sigma", "paired_statistic", "repeat_rule", "replay_rule", "resolvable_share"]

ALPHA = 0.05
"""The statistics' significance level (:mod:`.inference`)."""
LEVEL = 0.95
"""The paired interval's level (the detection limit's)."""


def paired_statistic(direction: str, target: float | None,
                     strata: np.ndarray | None) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The statistics' paired difference (:func:`.analysis.paired_difference`) with its strata and
    direction fixed: a function of the two cells' outcomes alone."""
    return lambda a, b: paired_difference(a, b, strata, direction, target)


def jackknife_sigma(a: np.ndarray, b: np.ndarray, statistic: Callable[[np.ndarray, np.ndarray], np.ndarray],
                    strata: np.ndarray | None = None) -> float:
    """The per-item standard deviation of a paired statistic: ``sqrt(n * var_jack)`` over the
    delete-one values (an item deleted from both cells at once). NaN when the statistic is
    undefined on the items, with fewer than two items, or (``strata``: the statistic's own) with
    a stratum of fewer than two counted items."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = len(a)
    if n < 2 or math.isnan(float(statistic(a, b))):
        return math.nan
    if strata is not None:
        counted = ~(np.isnan(a) | np.isnan(b))
        if any(np.sum(counted & (strata == level)) < 2 for level in np.unique(strata)):
            # Deleting a stratum's only item drops the stratum: another estimand, not a spread.
            return math.nan
    rows_a, rows_b = np.tile(a, (n, 1)), np.tile(b, (n, 1))
    np.fill_diagonal(rows_a, np.nan)  # row i: every item but i (NaN does not count)
    np.fill_diagonal(rows_b, np.nan)
    left_out = np.asarray(statistic(rows_a, rows_b), dtype=float)
    variance = (n - 1) / n * float(np.sum((left_out - left_out.mean()) ** 2))
    return math.sqrt(n * variance)


def half_width(sigma: float, n: float, level: float = LEVEL) -> float:
    """The paired interval's half-width at ``n`` items (normal approximation)."""
    return NormalDist().inv_cdf(0.5 + level / 2) * sigma / math.sqrt(n)


def detection_limit(sigmas: Sequence[float], n: float) -> float:
    """The median half-width at ``n`` items over comparisons with a spread (NaN: none)."""
    kept = [s for s in sigmas if s == s and s > 0]
    return half_width(float(np.median(kept)), n) if kept else math.nan


def debiased_gap(difference: float, sigma: float, n: int) -> float:
    """The gap a pilot saw, less its own noise: ``sqrt(max(0, d^2 - sigma^2 / n))``."""
    if difference != difference or sigma != sigma:
        return math.nan
    excess = difference ** 2 - sigma ** 2 / n
    # One discordant item gives d^2 = sigma^2 / n up to rounding: no evidence of a gap, not 1e-9 of one.
    return math.sqrt(excess) if excess > 1e-9 * difference ** 2 else 0.0


def items_needed(gap: float, sigma: float, discordant_share: float, *, family: int, power: float = 0.8,
                 alpha: float = ALPHA) -> float:
    """Items per cell for the paired test to resolve ``gap`` at ``alpha / family`` with ``power``
    (see the module docstring); ``inf`` where it cannot (no gap, or no item differs)."""
    if not (gap > 0 and discordant_share > 0) or sigma != sigma:
        return math.inf
    z = NormalDist().inv_cdf(1 - alpha / (2 * family)) + NormalDist().inv_cdf(power)
    normal = (z * sigma / gap) ** 2
    exact = math.log2(2 * family / alpha) / discordant_share
    return float(math.ceil(max(normal, exact) - 1e-9))


def resolvable_share(needed: Sequence[float], n: float) -> float:
    """Share of comparisons resolvable at ``n`` items (NaN: no comparison)."""
    return float(np.mean([x <= n for x in needed])) if len(needed) else math.nan


def items_for_share(needed: Sequence[float], share: float) -> float:
    """The fewest items per cell at which at least ``share`` of the comparisons are resolvable
    (``inf``: no item count reaches it)."""
    if not len(needed):
        return math.inf
    ordered = sorted(needed)
    return ordered[max(0, math.ceil(share * len(ordered) - 1e-9) - 1)]


# ---- gate operating characteristic --------------------------------------------------------------

@dataclass(frozen=True)
class Measured:
    """One cell measured twice on the same items (first, then repeat or replay)."""

    benchmark: str
    config: str
    model: str
    scores: tuple[np.ndarray, np.ndarray]
    """Per-item scores (``instrument.item_score``) of the two measurements."""
    outcomes: tuple[np.ndarray, np.ndarray]
    """Per-item outcomes (``Benchmark.item_outcome``; NaN: does not count)."""
    predictions: tuple[np.ndarray, np.ndarray]
    """Per-item predictions (-1: unparsed, its own answer)."""
    strata: np.ndarray | None
    direction: str
    target: float | None


GateRule = Callable[[list[Measured], dict[str, np.ndarray], dict[str, np.ndarray]], list[float]]
"""A gate's numbers from its cells: item indices per benchmark, and per cell the second
measurement's source index per item (itself when healthy)."""


def _goodness_score(cell: Measured, which: int, rows: np.ndarray) -> float:
    outcomes = cell.outcomes[which][rows]
    strata = None if cell.strata is None else cell.strata[rows]
    return float(goodness(score_outcomes(outcomes, strata), cell.direction, cell.target))  # type: ignore[arg-type]


def _rankings(cells: list[Measured], rows: dict[str, np.ndarray],
              second: dict[str, np.ndarray]) -> list[tuple[dict[str, float], dict[str, float]]]:
    groups: dict[tuple[str, str], list[Measured]] = {}
    for cell in cells:
        groups.setdefault((cell.benchmark, cell.config), []).append(cell)
    out = []
    for group in groups.values():
        if len(group) < 2:
            continue
        first = {c.model: _goodness_score(c, 0, rows[c.benchmark]) for c in group}
        again = {c.model: _goodness_score(c, 1, second[_key(c)]) for c in group}
        out.append((first, again))
    return out


def _key(cell: Measured) -> str:
    return f"{cell.benchmark}|{cell.config}|{cell.model}"


def repeat_rule(cells: list[Measured], rows: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> list[float]:
    """The repeat gate's two numbers: the median per-item score Spearman over cells and the median
    ranking Spearman over configurations with two or more models (``gates.repeat_gate``)."""
    items = median([spearman(list(c.scores[0][rows[c.benchmark]]), list(c.scores[1][second[_key(c)]])) for c in cells])
    rankings = median([spearman([first[m] for m in first], [again[m] for m in first])
                       for first, again in _rankings(cells, rows, second)])
    return [items, rankings]


def replay_rule(cells: list[Measured], rows: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> list[float]:
    """The replay gate's two numbers: per-item prediction agreement over every cell's items and
    the share of configurations whose full ordering is unchanged (``replay.replay_gate``)."""
    agree = np.concatenate([c.predictions[0][rows[c.benchmark]] == c.predictions[1][second[_key(c)]] for c in cells])
    same = [ordering(first) == ordering(again) for first, again in _rankings(cells, rows, second)]
    return [float(agree.mean()) if len(agree) else math.nan, float(np.mean(same)) if same else math.nan]


def gate_oc(cells: list[Measured], rule: GateRule, *, threshold: float, n_items: dict[str, int],
            simulations: int = 200, degrade: float = 0.2, seed: int = 0) -> dict[str, Any]:
    """The probability that a gate passes at ``n_items[benchmark]`` items per cell, under the
    pilot's measured noise (healthy) and under the degraded instrument, and the threshold a
    healthy one reaches."""
    rng = np.random.default_rng(seed)
    sizes = {c.benchmark: len(c.scores[0]) for c in cells}
    outcome: dict[str, list[Any]] = {"healthy": [], "degraded": []}
    statistic: list[float] = []
    for _ in range(simulations):
        # Two stages: the pilot's items resampled at the pilot's size (what the pilot may have
        # misjudged), then the run's n items drawn from that (what the run's own items add).
        rows = {b: rng.integers(0, size, size)[rng.integers(0, size, n_items[b])] for b, size in sizes.items()}
        healthy = {_key(c): rows[c.benchmark] for c in cells}
        numbers = rule(cells, rows, healthy)
        outcome["healthy"].append(verdict(numbers, threshold) == "PASS")
        kept = [v for v in numbers if v == v]
        statistic.append(min(kept) if kept else math.nan)
        degraded = {}
        for c in cells:
            source = rows[c.benchmark].copy()
            broken = rng.random(len(source)) < degrade
            source[broken] = rng.integers(0, sizes[c.benchmark], int(broken.sum()))
            degraded[_key(c)] = source
        outcome["degraded"].append(verdict(rule(cells, rows, degraded), threshold) == "PASS")
    finite = [s for s in statistic if s == s]
    reachable = math.floor(float(np.percentile(finite, 5)) * 100) / 100 if finite else math.nan
    return {"threshold": threshold, "n_items": dict(n_items), "simulations": simulations, "degrade": degrade,
            "pass_healthy": float(np.mean(outcome["healthy"])), "pass_degraded": float(np.mean(outcome["degraded"])),
            "reachable_threshold": reachable, "statistic_median": float(np.median(finite)) if finite else math.nan}


def comparisons_frame(rows: list[dict[str, Any]], *, family: dict[str, int], power: float,
                      alpha: float = ALPHA) -> pd.DataFrame:
    """The pilot's comparisons with their de-biased gap and items needed (one row each; ``rows``
    hold benchmark, config, pair, n, difference, sigma, discordant_share); ``items_needed_raw``
    takes the raw |difference| at face value (optimistic: a small pilot's gaps are inflated)."""
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["gap"] = [debiased_gap(d, s, n) for d, s, n in zip(frame["difference"], frame["sigma"], frame["n"])]
    for column, gaps in (("items_needed", frame["gap"]), ("items_needed_raw", frame["difference"].abs())):
        frame[column] = [items_needed(g, s, r, family=family[b], power=power, alpha=alpha)
                         for g, s, r, b in zip(gaps, frame["sigma"], frame["discordant_share"], frame["benchmark"])]
    return frame

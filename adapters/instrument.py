"""What the instrument gates measure: an item's score, agreement between two measurements of it,
the order of models in a configuration, and the PASS/FAIL rule (shared by the repeat gate in
:mod:`.gates` and the replay gate in :mod:`.replay`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from . import _registry
from .grid import CONFIG_KEYS
from .records import ItemRecord
from .stats import DECIMALS, goodness

__all__ = ["agreement", "config_name", "config_of", "finite_or_none", "goodness_of", "item_score", "median",
           "ordering", "primary_score", "spearman", "verdict"]


# ---- per item -----------------------------------------------------------------------------------

def item_score(record: ItemRecord) -> float:
    """An item's score on a continuous scale where the path gives one: on the logprob path the
    probability (softmax over the candidates' loglikelihoods) of the gold option, or of option 0
    where the benchmark has no gold (the same option in both measurements of an item, which is what
    a repeat needs; for CrowS-Pairs its meaning alternates along the subset); on the regex
    path 1 if the prediction is gold (option 0 without gold), else 0; on the symmetric path the
    z_sym of that option. An unparsed answer gives the
    target nothing (0); it stays unparsed wherever predictions are counted (prediction agreement
    treats it as an answer of its own)."""
    if record.prediction is None:
        return 0.0
    target = record.gold if record.gold is not None else 0
    symmetric = record.meta.get("symmetric")
    if symmetric:  # the mapping-free preference (a logit: the Spearman correlations need only its order)
        return float(symmetric["z_sym"][target])
    if record.loglikelihoods:
        lls = np.asarray(record.loglikelihoods, dtype=float)
        probs = np.exp(lls - lls.max())
        return float(probs[target] / probs.sum())
    return float(record.prediction == target)


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman rho of two paired score lists (pairs with a NaN left out); 1 where they are equal,
    0 where one side is constant and the other is not (no order to agree on)."""
    from scipy.stats import spearmanr

    pairs = [(x, y) for x, y in zip(a, b) if not (math.isnan(x) or math.isnan(y))]
    if not pairs:
        return math.nan
    x, y = (np.array(v) for v in zip(*pairs))
    if np.allclose(x, y, rtol=0, atol=1e-12):
        return 1.0
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0
    return float(spearmanr(x, y).statistic)


def agreement(a: list[ItemRecord], b: list[ItemRecord]) -> float:
    """Share of items with the same prediction (unparsed is its own answer)."""
    return float(np.mean([x.prediction == y.prediction for x, y in zip(a, b)])) if a else math.nan


def median(values: list[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return float(np.median(kept)) if kept else math.nan


def config_of(cell: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(cell[k] for k in CONFIG_KEYS)


def config_name(config: tuple[Any, ...]) -> str:
    return " ".join(f"{k}={v}" for k, v in zip(CONFIG_KEYS, config))


def goodness_of(benchmark: str, value: float) -> float:
    bench = _registry.get_benchmark(benchmark)
    spec = bench.metric_spec(bench.primary_metric)
    return float(goodness(pd.Series([value]), spec.direction, spec.target).iloc[0])  # type: ignore[arg-type]


def primary_score(records: list[ItemRecord], benchmark: str, seed: int) -> float:
    bench = _registry.get_benchmark(benchmark)
    return float(bench.metrics(records, seed=seed, n_resamples=0)[bench.primary_metric].value)


def ordering(scores: dict[str, float]) -> tuple[tuple[str, ...], ...]:
    """Models best first, tied models grouped (the tolerance of the statistics)."""
    groups: dict[float, list[str]] = {}
    for model, value in scores.items():
        groups.setdefault(round(value, DECIMALS), []).append(model)
    return tuple(tuple(sorted(groups[v])) for v in sorted(groups, reverse=True))


def verdict(numbers: list[float], threshold: float) -> str:
    """PASS when every number that could be computed reaches the threshold (and one could); FAIL
    otherwise -- a gate with nothing to measure does not pass."""
    checks = [v for v in numbers if v is not None and not math.isnan(v)]
    return "PASS" if checks and all(v >= threshold for v in checks) else "FAIL"


def finite_or_none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value

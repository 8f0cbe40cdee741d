"""Metric values with bootstrap confidence intervals (scipy.stats.bootstrap, percentile method).

Every interval resamples items, the unit the subset was drawn in; unparsed generations count as
wrong for accuracy and are reported beside every metric as ``unparsed_rate``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from .records import Outcome
from scipy import stats

CONFIDENCE = 0.95
UNPARSED_RATE = "unparsed_rate"


class MetricSpec(BaseModel):
    """What a benchmark declares about one of its metrics; harness bindings read only this."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Metric name, the key of the benchmark's ``metrics()`` result."""
    direction: Literal["higher", "lower", "target"]
    """Which values are better: ``higher``, ``lower``, or closest to ``target``."""
    target: float | None = None
    """The ideal value of a ``target`` metric (0 for a bias score, 50 for percent stereotyped)."""
    primary: bool = False
    """The metric shown first in tables and ranked on by the grid statistics (one per benchmark)."""
    description: str = ""
    """How the metric is defined, in one sentence."""

    @property
    def higher_is_better(self) -> bool | None:
        """A harness's direction flag: ``None`` for a target metric's raw value (neither way is
        better; its distance to the target, :func:`harness_specs`, is reported lower-is-better)."""
        return None if self.direction == "target" else self.direction == "higher"

    def distance(self) -> MetricSpec:
        """The spec of a target metric's distance to its target, ``<name>_distance``, lower is better."""
        assert self.direction == "target" and self.target is not None
        return MetricSpec(name=f"{self.name}{DISTANCE_SUFFIX}", direction="lower",
                          description=f"distance of {self.name} to its ideal value {self.target:g}: |{self.name} - "
                                      f"{self.target:g}|")


DISTANCE_SUFFIX = "_distance"


def harness_specs(specs: Sequence[MetricSpec]) -> tuple[MetricSpec, ...]:
    """What a harness binding reports: every declared metric, and right after each target metric
    its distance to the target (lower is better) -- so a harness that knows only "higher" and
    "lower" ranks a target metric the way its declared direction does."""
    return tuple(x for spec in specs for x in ((spec, spec.distance()) if spec.direction == "target" else (spec,)))


def harness_values(specs: Sequence[MetricSpec], measured: dict[str, MetricValue]) -> dict[str, MetricValue]:
    """``measured`` (:meth:`Benchmark.measure`) with the distances of :func:`harness_specs` added:
    |value - target|, its interval mapped through the same fold (0 where the interval holds the
    target). NaN stays NaN (undefined)."""
    out: dict[str, MetricValue] = {}
    for spec in specs:
        value = measured[spec.name]
        out[spec.name] = value
        if spec.direction == "target" and spec.target is not None:
            t = spec.target
            ends = sorted((abs(value.ci_low - t), abs(value.ci_high - t)))
            low = 0.0 if value.ci_low <= t <= value.ci_high else ends[0]
            out[spec.distance().name] = MetricValue(value=abs(value.value - t), ci_low=low, ci_high=ends[1], n=value.n,
                                                    note=f"|{spec.name} - {t:g}|")
    return out


UNPARSED_SPEC = MetricSpec(name=UNPARSED_RATE, direction="lower",
                           description="share of items whose answer could not be read; never mapped to a class")
"""Every benchmark reports it: the base class appends it to the declared specs and computes it."""


class MetricValue(BaseModel):
    """A point estimate with its bootstrap confidence interval."""

    model_config = ConfigDict(frozen=True)

    value: float
    """The metric on all items (NaN when undefined, e.g. no item in the condition)."""
    ci_low: float
    """Lower end of the 95% percentile-bootstrap interval."""
    ci_high: float
    """Upper end of the 95% percentile-bootstrap interval."""
    n: int
    """Number of items the metric was computed on."""
    note: str = ""
    """How the metric is defined, for the summary and the tables."""


METRIC_DEFINITIONS = "2"
"""The revision of how metrics are computed from predictions, recorded with the analysis libraries
in a grid run's manifest: ``verify`` elsewhere can then say a result differs because a definition
changed rather than call it edited. Bump it when a metric's definition changes.
1: the first release; 2: a metric over a condition or subset whose items were all unparsed is
undefined (``within``), as a whole cell's already was."""


def bootstrap_metric(
    arrays: tuple[np.ndarray, ...],
    statistic: Callable[..., float],
    *,
    seed: int,
    n_resamples: int,
    paired: bool = True,
    note: str = "",
) -> MetricValue:
    """``statistic(*arrays)`` with a percentile bootstrap CI.

    ``paired`` resamples the same item indices across arrays (per-item columns of one sample);
    unpaired arrays (e.g. XSTest's safe and unsafe prompts) are resampled independently.
    """
    arrays = tuple(np.asarray(a, dtype=float) for a in arrays)
    value = statistic(*arrays)
    n = int(len(arrays[0])) if paired else int(sum(len(a) for a in arrays))
    if math.isnan(value) or min(len(a) for a in arrays) < 2 or n_resamples <= 0:
        return MetricValue(value=value, ci_low=value, ci_high=value, n=n, note=note)
    if all(np.all(a == a[0]) for a in arrays):
        # Every resample gives the same value; scipy would warn about a degenerate distribution.
        return MetricValue(value=value, ci_low=value, ci_high=value, n=n, note=note)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = stats.bootstrap(
            arrays,
            lambda *xs: statistic(*xs),
            paired=paired,
            vectorized=False,
            n_resamples=n_resamples,
            confidence_level=CONFIDENCE,
            method="percentile",
            random_state=np.random.default_rng(seed),
        )
    low, high = result.confidence_interval
    return MetricValue(value=value, ci_low=float(low), ci_high=float(high), n=n, note=note)


def nothing_to_measure(n: int, unparsed: int) -> MetricValue:
    """A metric of a cell where no item was parsed: undefined, never a measured 0 (``null`` in the
    result files, ``n/a`` in tables)."""
    return MetricValue(value=math.nan, ci_low=math.nan, ci_high=math.nan, n=n,
                       note=f"no answer could be read ({unparsed} of {n} unparsed): nothing to measure")


def within(part: Sequence[Outcome], measure: Callable[[], MetricValue]) -> MetricValue:
    """A metric over one part of a cell's items (a context condition, a prompt subset): undefined
    where that part has items but none of them was read, as a whole cell is (a 0.0 from its
    formula would read as measured)."""
    if part and not any(o.parsed for o in part):
        return nothing_to_measure(len(part), len(part))
    return measure()


def json_ready(value: Any) -> Any:
    """``value`` with every NaN float replaced by ``None``, for JSON files: an undefined metric is
    ``null`` (standard JSON), not the non-standard ``NaN``."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def as_number(value: float | None) -> float:
    """A metric value read back from JSON: ``null`` is NaN again."""
    return math.nan if value is None else float(value)


def mean_or_nan(values: np.ndarray) -> float:
    """Mean of a per-item column; NaN (not an error) for an empty condition."""
    return float(values.mean()) if len(values) else float("nan")


def accuracy_metrics(records: Sequence[Outcome], *, seed: int, n_resamples: int) -> dict[str, MetricValue]:
    """Accuracy over all items (unparsed = wrong)."""
    correct = np.array([bool(r.correct) for r in records], dtype=float)
    return {
        "accuracy": bootstrap_metric((correct,), mean_or_nan, seed=seed, n_resamples=n_resamples,
                                     note="unparsed answers count as wrong"),
    }


def unparsed_metric(records: Sequence[Outcome], *, seed: int, n_resamples: int) -> MetricValue:
    unparsed = np.array([r.prediction is None for r in records], dtype=float)
    return bootstrap_metric((unparsed,), mean_or_nan, seed=seed, n_resamples=n_resamples,
                            note="share of generations no answer could be extracted from")

"""The core's metrics as Inspect metrics, with their directions, and undefined ones left out.

What inspect_ai 0.3.285 allows, and what this module does with it:

* A metric has no higher/lower flag. What a metric instance does carry into the log is its
  creation arguments (``EvalMetric.params`` beside each value in ``results.scores``, and the
  metric definitions' ``options`` in the header's ``eval.scorers``). So every reported metric is
  its own instance of :func:`safetyrepro_metric` whose arguments state its direction
  (``direction``, ``target``, ``higher_is_better``) -- readable next to the value, and in the header
  even where the value is missing. ``EvalMetric.metadata`` exists in the schema but Inspect never
  fills it from a metric.
* A metric value is ``int | float`` (no ``None``): NaN would be written as the non-standard JSON
  constant ``NaN`` and printed as ``nan``. An entry of a dict-valued metric that is ``None`` is
  skipped instead, so a metric with nothing to measure is returned as ``None``: it is absent from
  the results and the printed table (Inspect's way of saying "no value"), while its definition
  stays in the header. :func:`logged_metrics` reads a log back as the core's table, absent = None.
"""

from __future__ import annotations

import math
from typing import Any

from inspect_ai.log import EvalLog
from inspect_ai.scorer import Metric, SampleScore, metric

from safetyrepro.adapters import Outcome, get_benchmark
from safetyrepro.adapters.metrics import MetricSpec

METRIC = "safetyrepro_metric"
"""The metric's unqualified registry name, as the log records it."""


def direction_params(spec: MetricSpec) -> dict[str, Any]:
    """A spec's direction as metric arguments. ``higher_is_better`` is ``None`` for a raw target
    metric (neither way is better; its ``<name>_distance``, lower is better, ranks it)."""
    return {"direction": spec.direction, "target": spec.target, "higher_is_better": spec.higher_is_better,
            "description": spec.description}


def benchmark_metrics(benchmark: str) -> list[Metric]:
    """One metric per :meth:`Benchmark.harness_metric_specs` entry, in table order (the primary
    first: Inspect's headline is the first metric), target metrics each followed by its distance."""
    return [safetyrepro_metric(benchmark=benchmark, name=spec.name, **direction_params(spec))
            for spec in get_benchmark(benchmark).harness_metric_specs()]


@metric(scores="unreduced")
def safetyrepro_metric(benchmark: str, name: str, direction: str, target: float | None = None,
                       higher_is_better: bool | None = None, description: str = "") -> Metric:
    """The core's value of one metric of ``benchmark`` over all samples' outcomes
    (``Benchmark.measure_for_harness``: the one code path every binding reports through).

    The direction arguments are not used to compute: they are there so the log carries them. The
    value is returned as a one-entry dict so that Inspect names the result ``name`` (a scalar would
    be named after this function), and so that an undefined value can be ``None`` (left out)."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        # Inspect also calls a metric with no scores (every sample unscored): nothing to measure.
        if not scores:
            return {name: None}
        outcomes = [Outcome.model_validate(s.score.metadata["outcome"]) for s in scores]
        # No intervals (n_resamples=0): Inspect has no place for them, and each metric instance
        # computes the table again (cheap without a bootstrap).
        value = get_benchmark(benchmark).measure_for_harness(outcomes, seed=0, n_resamples=0)[name].value
        return {name: None if math.isnan(value) else value}

    return compute


def logged_metrics(log: EvalLog) -> dict[str, float | None]:
    """A log's SafetyRepro metrics in table order, ``None`` where the metric was undefined (left out
    of ``results``): the declared list comes from the header, the values from the results."""
    if not log.eval.scorers:
        return {}
    declared = [d.options["name"] for d in log.eval.scorers[0].metrics or []
                if str(getattr(d, "name", "")).endswith(METRIC) and d.options]  # a metric definition, not a group
    found = {name: m.value for score in (log.results.scores if log.results else []) for name, m in score.metrics.items()}
    return {name: found.get(name) for name in declared}

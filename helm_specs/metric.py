"""The core's benchmark metrics as HELM stats.

Per instance: ``correct`` (where the benchmark has a correct answer), ``unparsed``, the predicted
option; on the logprob path whether HELM's echoed tokens were the core's and whether HELM's own
length-normalised rule picks the same option. (A request HELM asked differently from the
configuration stops the run in the annotator, so there is no "prompt matches" stat to read.) Aggregated: every metric
the benchmark declares (BBQ bias scores, XSTest rates, CrowS-Pairs pct_stereotype, ...), each
target metric's distance to its ideal value (``<name>_distance``, what HELM ranks on: it knows
only "higher" and "lower") and ``unparsed_rate``, computed by ``Benchmark.measure_for_harness``
over all items -- several are not means of per-item numbers, so they cannot come from HELM's
default mean aggregation -- each with its bootstrap interval as ``<name>_ci_low`` /
``<name>_ci_high``.

A metric the core leaves undefined (NaN: no item of the run was parsed, or an empty condition)
is a stat with no values (count 0, no mean), HELM's own "undefined" -- never a number.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from helm.benchmark.adaptation.scenario_state import ScenarioState
from helm.benchmark.metrics.metric import MetricInterface, MetricResult, PerInstanceStats
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.metric_service import MetricService
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.scenarios.scenario import TEST_SPLIT

from safetyrepro.adapters import Outcome, get_benchmark
from safetyrepro.adapters.metrics import MetricValue, json_ready

from .annotator import NAME


def _stat(name: str, value: float | None) -> Stat:
    return Stat(MetricName(name, split=TEST_SPLIT)).add(value)


def _defined(value: float) -> float | None:
    """A core metric value as HELM's ``Stat.add`` should get it: NaN (undefined) becomes None,
    which ``Stat.add`` skips, so the stat keeps count 0 and no mean -- what HELM's summarize
    shows as a cell without a value ("stats have count = 0, so mean is undefined"). Added as NaN
    it would make the stat's sum NaN, and helm-run drops such a stat with a warning
    (``runner.remove_stats_nans``): the metric would look never computed."""
    return json_ready(value)


def _bounds(name: str, value: MetricValue) -> tuple[tuple[str, float | None], ...]:
    return ((name, _defined(value.value)), (f"{name}_ci_low", _defined(value.ci_low)),
            (f"{name}_ci_high", _defined(value.ci_high)))


class SafetyReproMetric(MetricInterface):
    """Reads the annotator's records; computes nothing the core does not."""

    def __init__(self, benchmark: str, seed: int = 1234, n_resamples: int = 1000) -> None:
        self.benchmark = benchmark
        self.seed = seed
        self.n_resamples = n_resamples

    def evaluate(self, scenario_state: ScenarioState, metric_service: MetricService, eval_cache_path: str,
                 parallelism: int) -> MetricResult:
        records: dict[tuple[str, int], dict[str, Any]] = {}
        for state in scenario_state.request_states:
            record = (state.annotations or {}).get(NAME)
            if record is None:
                raise RuntimeError(f"item {state.instance.id} has no SafetyRepro annotation; the run spec "
                                   "must list the SafetyRepro annotator")
            records.setdefault((str(state.instance.id), state.train_trial_index), record)
        per_trial: dict[int, list[Outcome]] = defaultdict(list)
        per_instance = []
        for (item_id, trial), record in records.items():
            outcome = Outcome.model_validate(record["outcome"])
            per_trial[trial].append(outcome)
            stats = [_stat("unparsed", outcome.prediction is None)]
            if outcome.correct is not None:
                stats.append(_stat("correct", outcome.correct))
            if outcome.prediction is not None:
                stats.append(_stat("prediction", outcome.prediction))
            if "helm_native_prediction" in record:
                stats.append(_stat("helm_native_rule_agrees", record["helm_native_prediction"] == outcome.prediction))
            if "candidate_tokens_match_core" in record:
                stats.append(_stat("candidate_tokens_match_core", bool(record["candidate_tokens_match_core"])))
            per_instance.append(PerInstanceStats(instance_id=item_id, perturbation=None, train_trial_index=trial,
                                                 stats=stats))
        bench = get_benchmark(self.benchmark)
        aggregated: dict[str, Stat] = {}
        for trial, outcomes in sorted(per_trial.items()):
            measured = bench.measure_for_harness(outcomes, seed=self.seed, n_resamples=self.n_resamples)
            for name, value in measured.items():
                for key, number in _bounds(name, value):
                    aggregated.setdefault(key, Stat(MetricName(key, split=TEST_SPLIT))).add(number)
        # The per-item checks, averaged (1.0: every item).
        for check in ("candidate_tokens_match_core", "helm_native_rule_agrees"):
            values = [s for p in per_instance for s in p.stats if s.name.name == check]
            if values:
                aggregated[check] = _stat(check, sum(s.sum for s in values) / len(values))
        aggregated["num_items"] = _stat("num_items", len(records))
        return MetricResult(aggregated_stats=list(aggregated.values()), per_instance_stats=per_instance)

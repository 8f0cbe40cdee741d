"""lm-evaluation-harness binding: translation only; every piece of benchmark knowledge comes from the core.

The task YAMLs reach these functions through ``!function binding.<name>`` (``binding.py`` in the
task folder forwards here). Documents carry the core's rendering of each item (user turn, system
message, answer strings) so lm-eval's own prompt assembly -- system message, few-shot turns via
``first_n``, chat template, ``gen_prefix: "Answer:"`` -- reproduces the reference runner's prompt
exactly; ``process_results`` uses the core's extraction and the aggregations the core's metrics.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from safetyrepro.lm_eval_tasks.generate import metric_names, task_name
from safetyrepro.adapters import (
    Cell,
    ConfigError,
    Outcome,
    RunConfig,
    all_benchmarks,
    build_config,
    get_benchmark,
    get_scorer,
    logprob_context,
    prepare_cell,
)
from safetyrepro.adapters.metrics import json_ready
from safetyrepro.adapters.shapes import harness_shape, shape_responses

STANDARD_EXTRACTION = "standard"
EXTRACTION_FIX = ("leave extraction out (standard), or pass --metadata '{\"extraction\": \"xstest-strmatch\"}' "
                  "only with the XSTest regex tasks, e.g. --tasks 'safetyrepro_xstest_*_regex'")


def _cell(doc: dict[str, Any]) -> Cell:
    return _asked(doc)[0]


def _asked(doc: dict[str, Any]) -> tuple[Cell, str]:
    """The prepared cell a document came from (its task arguments ride in the document, since
    ``process_results`` sees nothing else), and the shape it asks."""
    return _prepared(doc["benchmark"], doc["template"], doc["scoring"],
                     doc["data_dir"] or os.environ.get("SAFETYREPRO_DATA_DIR"), doc["extraction"])


def _config(benchmark: str, template: str, scoring: str, extraction: str) -> RunConfig:
    """The cell's configuration. ``extraction`` (``--metadata``, for every task of the run) is
    checked by the core's own rule, after the rest, so its error names the lm-eval fix."""
    asked = {"benchmark": benchmark, "template": template, "scoring": scoring}
    source = f"lm-eval task {task_name(benchmark, template, scoring)}"
    config = build_config(asked, source=source)
    if extraction == STANDARD_EXTRACTION:
        return config
    try:
        return build_config({**asked, "extraction": extraction}, source=source)
    except ConfigError as exc:
        raise ConfigError(exc.what, EXTRACTION_FIX) from None


@functools.cache
def _prepared(benchmark: str, template: str, scoring: str, data_dir: str | None,
              extraction: str = STANDARD_EXTRACTION) -> tuple[Cell, str]:
    """One prepared cell per (benchmark, template, scoring, data folder, extraction) in the
    process, and the shape its scoring path asks: one lm-eval can ask (checked over every item
    once, here; one clear error otherwise)."""
    cell = prepare_cell(_config(benchmark, template, scoring, extraction), data_dir=data_dir)
    return cell, harness_shape(cell, "lm-eval")


@functools.cache
def _datasets(benchmark: str, template: str, scoring: str, data_dir: str | None, env_data_dir: str | None,
              extraction: str = STANDARD_EXTRACTION) -> Any:
    """The task's documents; keyed by the environment's data folder too, which a None data_dir means."""
    import datasets

    cell, _ = _prepared(benchmark, template, scoring, data_dir or env_data_dir, extraction)
    # lm-eval needs some target index even where no option is correct (CrowS-Pairs): 0.
    test = [_doc(cell, c.item.id, c.user_turn, list(c.answer_strings),
                 c.item.gold if c.item.gold is not None else 0, data_dir) for c in cell.items]
    shots = [_doc(cell, e.item.id, e.user_turn,
                  [cell.benchmark.answer_string(e.item, i) for i in range(len(e.item.options))], e.answer,
                  data_dir) for e in cell.pool]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(test),
                                 "fewshot": datasets.Dataset.from_list(shots)})


def _doc(cell: Cell, item_id: str, query: str, choices: list[str], target: int, data_dir: str | None) -> dict[str, Any]:
    return {
        "item_id": item_id,
        "benchmark": cell.benchmark.name,
        "template": cell.style.name,
        "scoring": cell.config.scoring,
        "data_dir": data_dir or "",
        "extraction": cell.config.extraction,
        "query": query,
        "system": cell.system or "",
        "choices": choices,
        "target": target,
    }


def load_docs(benchmark: str | None = None, template: str | None = None, scoring: str = "logprob",
              data_dir: str | None = None, extraction: str = STANDARD_EXTRACTION, **_: Any):
    """``custom_dataset``: the core's prepared cell -- its fixed subset as split ``test`` and its
    exemplar pool, in pool order, as split ``fewshot`` (read with ``sampler: first_n``).

    lm-eval calls it with the task's ``metadata`` merged with ``--metadata`` (and the model
    arguments, ignored here): ``benchmark``, ``template`` and ``scoring`` from the YAML;
    ``data_dir`` from ``--metadata '{"data_dir": ...}'`` or ``SAFETYREPRO_DATA_DIR``; ``extraction``
    from ``--metadata '{"extraction": "xstest-strmatch"}'`` (XSTest's own string match on the
    XSTest regex tasks).
    """
    if not benchmark or not template:
        raise ConfigError("a safetyrepro lm-eval task needs metadata benchmark and template",
                          "use the generated task YAMLs (python -m safetyrepro.lm_eval_tasks.generate)")
    return _datasets(benchmark, template, scoring, data_dir, os.environ.get("SAFETYREPRO_DATA_DIR"), extraction)


def _read(doc: dict[str, Any], generation: str | None, scored: list[Any]) -> Outcome:
    """The document's decision by its scorer, from lm-eval's answers in the scorer's request order."""
    cell, shape = _asked(doc)
    return get_scorer(doc["scoring"]).read(cell, cell.item(doc["item_id"]), shape_responses(shape, generation, scored))


def _per_metric(doc: dict[str, Any], outcome: Outcome, *, generated: bool = False) -> dict[str, Any]:
    # lm-eval gives every metric its own per-document value; each carries the whole outcome so
    # the core can compute ratio metrics (bias scores) over all documents at aggregation time.
    cell = _cell(doc)
    payload = {"benchmark": doc["benchmark"], "gold": cell.item(doc["item_id"]).item.gold, **outcome.model_dump()}
    return {name: payload for name in metric_names(doc["benchmark"], generated=generated)}


def process_logprob(doc: dict[str, Any], results: list[tuple[float, bool]]) -> dict[str, Any]:
    """A ``multiple_choice`` task: one loglikelihood per candidate."""
    return _per_metric(doc, _read(doc, None, list(results)))


def process_regex(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """A ``generate_until`` task: one generation."""
    return _per_metric(doc, _read(doc, results[0], []), generated=True)


def process_cot_logprob(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """A ``CotLogprobTask``: the generation, then one loglikelihood per candidate after it."""
    return _per_metric(doc, _read(doc, results[0], list(results[1:])))


# ---- metrics ----------------------------------------------------------------------------------

def agg_unparsed(payloads: list[dict[str, Any]]) -> int:
    """How many generations no answer could be extracted from."""
    return sum(p["prediction"] is None for p in payloads)


def _aggregate(name: str, payloads: list[dict[str, Any]]) -> float | None:
    """The core's value of metric ``name`` over the task's documents (distances included); None
    where there is nothing to measure (NaN in the core): lm-eval writes None as ``null`` in its
    results JSON and prints an empty cell, where NaN would be a bare ``NaN`` in both."""
    bench = get_benchmark(payloads[0]["benchmark"])
    outcomes = [Outcome.model_validate({k: v for k, v in p.items() if k not in ("benchmark", "gold")})
                for p in payloads]
    return json_ready(bench.measure_for_harness(outcomes, seed=0, n_resamples=0)[name].value)


def _undefined_member_leaves_the_group_undefined() -> None:
    """Let a group average over a task whose metric is None. lm-eval 0.4.13 averages a group's
    tasks with ``sum(value * size)`` (``lm_eval/api/metrics.py`` aggregate_subtask_metrics), which
    raises TypeError on None, and ignores a callable ``aggregation`` in a group's
    ``aggregate_metric_list`` (``lm_eval/api/group.py`` always calls that function), so the group
    YAML has no hook. The wrapper answers None -- a mean over an undefined member is undefined, as
    NaN arithmetic would say -- and leaves every all-number call to lm-eval unchanged."""
    from lm_eval.api import metrics

    original = metrics.aggregate_subtask_metrics
    if getattr(original, "safetyrepro_wrapped", False):
        return

    def aggregate_subtask_metrics(values, sizes, weight_by_size=True):  # noqa: ANN001, ANN202 - lm-eval's signature
        if any(v is None for v in values):
            return None
        return original(values, sizes, weight_by_size)

    aggregate_subtask_metrics.safetyrepro_wrapped = True  # type: ignore[attr-defined]
    metrics.aggregate_subtask_metrics = aggregate_subtask_metrics


_undefined_member_leaves_the_group_undefined()


def __getattr__(attribute: str):
    """``binding.agg_<metric>`` for every metric a registered benchmark declares, so the YAMLs can
    name the core's metrics without this module listing them."""
    if attribute.startswith("agg_"):
        name = attribute[len("agg_"):]
        if any(name in metric_names(b) for b in all_benchmarks()):
            def aggregation(payloads: list[dict[str, Any]]) -> float | None:
                return _aggregate(name, payloads)

            aggregation.__name__ = attribute
            return aggregation
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


# ---- cot x logprob: reasoning first, then candidates after it ------------------------------------

class DeferredLoglikelihood(Instance):
    """A loglikelihood request whose context is completed by the reasoning generated for the same
    document (the ``generate_until`` request this task emits just before it)."""

    reasoning_request: Instance | None = None

    @property
    def args(self) -> tuple[str, str]:  # read by the model when loglikelihood requests run
        context, continuation = self.arguments
        if self.reasoning_request is None or not self.reasoning_request.resps:
            raise ConfigError(
                f"{self.task_name}: the candidates were to be scored before the reasoning was generated "
                "(lm-eval runs request types in the order it first meets them)",
                "list safetyrepro *_cot_logprob tasks before other loglikelihood tasks, or run them alone",
            )
        return logprob_context(context, self.reasoning_request.resps[0]), continuation


class CotLogprobTask(ConfigurableTask):
    """lm-eval has no two-stage request. This task emits, per document, the reasoning request
    first and then one loglikelihood request per candidate whose context is completed from that
    reasoning when the model reads it. lm-eval runs request types in the order it first meets
    them, and task globs are sorted, so ``*_cot_logprob`` (``cot`` sorts first) leads its batch."""

    def __init__(self, config: dict[str, Any]) -> None:
        # lm-eval hands a `class:` task its whole YAML, `class` key included.
        super().__init__(config={k: v for k, v in config.items() if k != "class"})

    def construct_requests(self, doc: dict[str, Any], ctx: str, **kwargs: Any) -> list[Instance]:
        metadata = kwargs.get("metadata")
        reasoning = Instance(request_type="generate_until", doc=doc, idx=0, metadata=metadata,
                             arguments=(ctx, dict(self.config.generation_kwargs)))
        scored: list[Instance] = [reasoning]
        for i, choice in enumerate(self.doc_to_choice(doc)):
            request = DeferredLoglikelihood(request_type="loglikelihood", doc=doc, idx=i + 1, metadata=metadata,
                                            arguments=(ctx, f"{self.config.target_delimiter}{choice}"))
            request.reasoning_request = reasoning
            scored.append(request)
        return scored

"""lm-evaluation-harness binding: translation only; every piece of benchmark knowledge comes from the core.

lm-eval loads this file through ``!function binding.<name>`` in the task YAMLs (it imports it by
path from this folder). Documents carry the core's rendering of each item (user turn, system
message, answer strings) so lm-eval's own prompt assembly -- system message, few-shot turns via
``first_n``, chat template, ``gen_prefix: "Answer:"`` -- reproduces the reference runner's prompt
exactly; ``process_results`` uses the core's extraction and the aggregations the core's metrics.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from safetyrepro.adapters import _registry
from safetyrepro.adapters.datafiles import resolve_data_dir
from safetyrepro.adapters.errors import ConfigError
from safetyrepro.adapters.extract import extract
from safetyrepro.adapters.items import Item
from safetyrepro.adapters.prompts import ANSWER_PREFIX, benchmark_blocks, user_turn
from safetyrepro.adapters.scoring import argmax_candidate, cut_reasoning
from safetyrepro.adapters.subsets import select

_DATASETS: dict[tuple[str, str, str | None], Any] = {}


def _doc(bench, style, item: Item, target: int, blocks: dict[str, str]) -> dict[str, Any]:
    return {
        "item_id": item.id,
        "benchmark": bench.name,
        "query": user_turn(blocks, style, item, where=f"{bench.name}/{style.name}"),
        "system": (style.system or "").strip(),
        "choices": [bench.answer_string(item, i) for i in range(len(item.options))],
        "target": target,
        "gold": -1 if item.gold is None else item.gold,
        "options": list(item.options),
        "labels": list(item.labels),
        # JSON keeps the Arrow schema flat whatever a benchmark's metadata holds.
        "meta": json.dumps(item.meta, sort_keys=True),
    }


def load_docs(benchmark: str | None = None, template: str | None = None, data_dir: str | None = None,
              **_: Any):
    """``custom_dataset``: the core's fixed subset as split ``test`` and its exemplar pool, in
    pool order, as split ``fewshot`` (read with ``sampler: first_n``).

    ``benchmark`` and ``template`` come from the task's ``metadata``; ``data_dir`` from
    ``--metadata '{"data_dir": ...}'`` or ``SAFETYREPRO_DATA_DIR``.
    """
    import datasets

    if not benchmark or not template:
        raise ConfigError("a safetyrepro lm-eval task needs metadata benchmark and template",
                          "use the generated task YAMLs (python -m safetyrepro.lm_eval_tasks.generate)")
    key = (benchmark, template, data_dir or os.environ.get("SAFETYREPRO_DATA_DIR"))
    if key not in _DATASETS:
        bench, style = _registry.get_benchmark(benchmark), _registry.get_style(template)
        items = bench.load(resolve_data_dir(data_dir))
        evals, pool, _manifest = select(bench, items)
        blocks = benchmark_blocks(str(_registry.template_file(bench)))
        test = [_doc(bench, style, item, item.gold if item.gold is not None else 0, blocks) for item in evals]
        shots = [_doc(bench, style, item, bench.shot_answer(item, k), blocks) for k, item in enumerate(pool)]
        _DATASETS[key] = datasets.DatasetDict({
            "test": datasets.Dataset.from_list(test),
            "fewshot": datasets.Dataset.from_list(shots),
        })
    return _DATASETS[key]


def _item(doc: dict[str, Any]) -> Item:
    return Item(id=doc["item_id"], benchmark=doc["benchmark"], fields={}, options=tuple(doc["options"]),
                labels=tuple(doc["labels"]), gold=None if doc["gold"] < 0 else doc["gold"],
                meta=json.loads(doc["meta"]))


def _payload(doc: dict[str, Any], prediction: int | None, **extra: Any) -> dict[str, Any]:
    item = _item(doc)
    bench = _registry.get_benchmark(doc["benchmark"])
    return {
        "benchmark": doc["benchmark"],
        "item_id": doc["item_id"],
        "prediction": prediction,
        "prediction_label": None if prediction is None else item.labels[prediction],
        "correct": bench.correct(item, prediction),
        "meta": item.meta,
        **extra,
    }


def _per_metric(doc: dict[str, Any], payload: dict[str, Any], *, generated: bool = False) -> dict[str, Any]:
    # lm-eval gives every metric its own per-document value; each carries the whole payload so
    # the core can compute ratio metrics (bias scores) over all documents at aggregation time.
    return {name: payload for name in metric_names(doc["benchmark"], generated=generated)}


def process_logprob(doc: dict[str, Any], results: list[tuple[float, bool]]) -> dict[str, Any]:
    lls = [float(ll) for ll, _ in results]
    return _per_metric(doc, _payload(doc, argmax_candidate(lls), rule="argmax", loglikelihoods=lls,
                                     is_greedy=[bool(g) for _, g in results]))


def process_regex(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    bench = _registry.get_benchmark(doc["benchmark"])
    output = results[0]
    found = extract(output, _item(doc), refusal_label=bench.refusal_means, verdict_patterns=bench.verdict_patterns)
    return _per_metric(doc, _payload(doc, found.index, rule=found.rule, raw_output=output), generated=True)


def process_cot_logprob(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    reasoning, scored = results[0], results[1:]
    lls = [float(ll) for ll, _ in scored]
    return _per_metric(doc, _payload(doc, argmax_candidate(lls), rule="argmax", raw_output=reasoning,
                                     loglikelihoods=lls,
                                     is_greedy=[bool(g) for _, g in scored]))


# ---- metrics ----------------------------------------------------------------------------------

def metric_names(benchmark: str, *, generated: bool = False) -> list[str]:
    """The core's metric names for a benchmark (computed on an empty record list), plus the raw
    ``unparsed`` count where answers are extracted from generations."""
    names = list(_registry.get_benchmark(benchmark).metrics([], seed=0, n_resamples=0))
    return names + ["unparsed"] if generated else names


def agg_unparsed(payloads: list[dict[str, Any]]) -> int:
    """How many generations no answer could be extracted from."""
    return sum(p["prediction"] is None for p in payloads)


def _aggregate(name: str, payloads: list[dict[str, Any]]) -> float:
    bench = _registry.get_benchmark(payloads[0]["benchmark"])
    records = [SimpleNamespace(**p) for p in payloads]
    return bench.metrics(records, seed=0, n_resamples=0)[name].value


def __getattr__(attribute: str):
    """``binding.agg_<metric>`` for every metric a registered benchmark computes, so the YAMLs can
    name the core's metrics without this module listing them."""
    if attribute.startswith("agg_"):
        name = attribute[len("agg_"):]
        if any(name in metric_names(b) for b in _registry.all_benchmarks()):
            def aggregation(payloads: list[dict[str, Any]]) -> float:
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
        reasoning = self.reasoning_request.resps[0]
        return context + cut_reasoning(reasoning) + "\n" + ANSWER_PREFIX, continuation


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

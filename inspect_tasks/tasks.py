"""Inspect AI binding: the SafetyRepro benchmarks as Inspect tasks. Translation only.

Samples, chat messages (system message, few-shot turns), candidates, gold, extraction and metrics
all come from the core's prepared cell (``safetyrepro.adapters.prepare_cell``) and its model-free
scoring; this module maps them onto Inspect's Sample / solver / scorer (the metrics are in
``metrics.py``). Decoding is Inspect's own (``--temperature``, ``--seed``, ``--max-tokens``); greedy is
the default.
"""

from __future__ import annotations

import functools
from typing import Any, get_args

from inspect_ai import Task, task
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.model._model import active_model
from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER, Score, Target, scorer
from inspect_ai.solver import Generate, TaskState, solver

from safetyrepro.adapters import (
    Cell,
    ConfigError,
    RunConfig,
    SafetyReproError,
    build_config,
    default_budget,
    get_scorer,
    prepare_cell,
)
from safetyrepro.adapters.shapes import GENERATE, LOGLIKELIHOOD, harness_shape, shape_responses

from safetyrepro.adapters.config import DECODING_TEMPERATURE

from .metrics import benchmark_metrics
from .provider import LOGLIKELIHOOD_REQUEST, PROVIDER, SafetyReproAPI

DECODINGS = {temperature: name for name, temperature in DECODING_TEMPERATURE.items()}
EXTRACTIONS: tuple[str, ...] = get_args(RunConfig.model_fields["extraction"].annotation)
"""The regex readouts the core offers (``-T extraction=``)."""
STANDARD = RunConfig.model_fields["extraction"].default


def _messages(raw: tuple[dict[str, str], ...]) -> list[ChatMessage]:
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return [kinds[m["role"]](content=m["content"]) for m in raw]


@functools.lru_cache(maxsize=32)
def _cell(benchmark: str, template: str, scoring: str, fewshot: int, data_dir: str | None,
          extraction: str = STANDARD) -> Cell:
    """The core's prepared cell, once per argument set (the task, its solver and its scorer share it)."""
    try:
        config = _config({"benchmark": benchmark, "template": template, "scoring": scoring, "fewshot": fewshot},
                         extraction)
        cell = prepare_cell(config, data_dir=data_dir)
        harness_shape(cell, "Inspect")  # a scoring path Inspect cannot ask is one clear error
        return cell
    except SafetyReproError as exc:
        raise PrerequisiteError(f"error: {exc}") from None


def _config(fields: dict[str, Any], extraction: str) -> RunConfig:
    """The core's configuration of the task arguments. The core decides where ``extraction``
    applies (RunConfig refuses xstest-strmatch off XSTest's regex path); its refusal is reworded
    here in -T terms, since its generic "correct the named fields" names no -T argument."""
    source = "task arguments (-T)"
    if extraction not in EXTRACTIONS:
        raise ConfigError(f"unknown extraction {extraction!r}", f"use -T extraction= one of {list(EXTRACTIONS)}")
    try:
        return build_config({**fields, "extraction": extraction}, source=source)
    except ConfigError:
        if extraction == STANDARD:
            raise
        build_config(fields, source=source)  # another bad argument is reported as itself
        raise ConfigError(
            f"-T extraction={extraction} does not apply to benchmark {fields['benchmark']!r} with -T scoring="
            f"{fields['scoring']} (XSTest's own string match reads XSTest generations on the regex path only)",
            "drop -T extraction, or run safetyrepro/xstest -T scoring=regex -T extraction=xstest-strmatch") from None


def build_task(benchmark: str, template: str = "minimal", scoring: str = "logprob", fewshot: int = 0,
               data_dir: str | None = None, extraction: str = STANDARD) -> Task:
    """The Inspect task of one benchmark x template x scoring x few-shot (x regex readout), from the
    core's cell."""
    cell = _cell(benchmark, template, scoring, fewshot, data_dir, extraction)
    if harness_shape(cell) != GENERATE:
        # Inspect resolves the model before the tasks: refuse here, before any sample runs.
        _require_loglikelihoods(active_model())
    samples = [
        Sample(
            id=c.item.id,
            input=_messages(c.prompt.messages),
            target=c.item.labels[c.item.gold] if c.item.gold is not None else "",
            choices=list(c.item.options),
            metadata={"item_id": c.item.id, "candidates": c.candidates, "labels": list(c.item.labels),
                      "gold": c.item.gold},
        )
        for c in cell.items
    ]
    return Task(
        dataset=MemoryDataset(samples, name=f"safetyrepro_{benchmark}_{template}"),
        solver=safetyrepro_solver(benchmark, template, scoring, fewshot, data_dir, extraction),
        scorer=safetyrepro_scorer(benchmark, template, scoring, fewshot, data_dir, extraction),
        # The benchmark's metrics with their directions (metrics.py); they replace the scorer's own.
        metrics=benchmark_metrics(benchmark),
        # Greedy unless --temperature says otherwise (the safetyrepro/ provider decodes greedily at
        # temperature 0 or unset; the stock hf/ provider needs -M do_sample=false).
        config=GenerateConfig(max_tokens=default_budget(cell.style)),
        version=1,
        metadata={"benchmark": benchmark, "template": template, "scoring": scoring, "fewshot": fewshot,
                  "extraction": extraction, "subset_manifest_sha256": cell.manifest.sha256},
    )


def _require_loglikelihoods(model: Model | None) -> None:
    """The logprob path never falls back silently: only the safetyrepro/ provider scores candidates."""
    if model is not None and not isinstance(model.api, SafetyReproAPI):
        raise PrerequisiteError(
            f"error: this scoring path needs candidate loglikelihoods, which {model} cannot give -- fix: run with "
            f"--model {PROVIDER}/embedded (or {PROVIDER}/<HF folder or id>), or -T scoring=regex")


def _config_hash(cell: Cell, reported: dict[str, Any], *, generates: bool) -> str | None:
    """The hash of the core configuration this sample ran under, as the safetyrepro/ provider
    reports it (model spec, decoding, budget, seed; one request at a time: batch_size 1). ``None``
    where there is no core equivalent: another provider, or a temperature the core has no name for."""
    if "model_spec" not in reported or (generates and "temperature" not in reported):
        return None
    decoding = DECODINGS.get(round(float(reported.get("temperature") or 0.0), 3))
    budget = reported.get("max_tokens")
    fields: dict[str, Any] = {
        "benchmark": cell.config.benchmark, "template": cell.config.template, "scoring": cell.config.scoring,
        "fewshot": cell.config.fewshot, "extraction": cell.config.extraction, "decoding": decoding, "batch_size": 1,
        "model": reported["model_spec"],
        "max_new_tokens": budget if budget is not None and budget != default_budget(cell.style) else None,
    }
    if reported.get("run_seed") is not None:
        fields["seed"] = reported["run_seed"]
    try:
        return build_config(fields).config_hash()
    except ConfigError:
        return None


@solver
def safetyrepro_solver(benchmark: str, template: str, scoring: str, fewshot: int, data_dir: str | None,
                       extraction: str = STANDARD):
    """What the scorer's shape asks (``requests.harness_shape``): one generation; candidate
    loglikelihoods from the ``safetyrepro/`` provider (no other provider can give them); or a
    generation first and the candidates after it."""
    cell = _cell(benchmark, template, scoring, fewshot, data_dir, extraction)
    shape = harness_shape(cell, "Inspect")

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if shape == GENERATE:
            return await generate(state)
        model = get_model()
        _require_loglikelihoods(model)
        reasoning = None
        if shape != LOGLIKELIHOOD:  # the generation first: the candidates are scored after it
            state = await generate(state)
            reasoning = state.output.completion
        asked = list(state.messages) if reasoning is None else list(state.messages[:-1])
        output = await model.generate(asked, config=GenerateConfig(extra_body={
            LOGLIKELIHOOD_REQUEST: {"continuations": state.metadata["candidates"], "reasoning": reasoning}}))
        state.metadata["loglikelihood_output"] = output.metadata
        state.metadata["reasoning"] = reasoning
        return state

    return solve


# No metrics of its own: they depend on the benchmark, and the task passes them (Task(metrics=...)).
@scorer(metrics=[])
def safetyrepro_scorer(benchmark: str, template: str, scoring: str, fewshot: int, data_dir: str | None,
                       extraction: str = STANDARD):
    """The core scorer's decision for each sample; unparsed is Inspect's NOANSWER, never a class."""
    cell = _cell(benchmark, template, scoring, fewshot, data_dir, extraction)
    shape = harness_shape(cell, "Inspect")
    reader = get_scorer(scoring)

    async def score(state: TaskState, target: Target) -> Score:
        cell_item = cell.item(state.metadata["item_id"])
        model_meta: dict[str, Any] = dict(state.output.metadata or {}) if state.output else {}
        if shape == GENERATE:
            outcome = reader.read(cell, cell_item, shape_responses(shape, state.output.completion, []))
            prompt = model_meta.get("prompt")
            context = None
        else:
            scored = state.metadata["loglikelihood_output"]
            pairs = list(zip(scored["loglikelihoods"], scored["is_greedy"]))
            outcome = reader.read(cell, cell_item, shape_responses(shape, state.metadata["reasoning"], pairs))
            prompt, context = scored["prompt"], scored["logprob_context"]
        generates = shape != LOGLIKELIHOOD
        reported = model_meta if generates else state.metadata.get("loglikelihood_output") or {}
        config_hash = _config_hash(cell, reported, generates=generates)
        if outcome.prediction is None:
            value = NOANSWER
        elif outcome.correct is None:
            value = outcome.prediction_label or ""
        else:
            value = CORRECT if outcome.correct else INCORRECT
        return Score(
            value=value,
            answer=outcome.prediction_label or "",
            explanation=f"extraction rule: {outcome.extraction_rule}",
            metadata={"benchmark": benchmark, "outcome": outcome.model_dump(mode="json"), "prompt": prompt,
                      "logprob_context": context, "candidates": cell_item.candidates,
                      "gold": cell_item.item.gold, "extraction_flags": outcome.extraction_flags,
                      "config_hash": config_hash},
        )

    return score


@task
def truthfulqa(template: str = "minimal", scoring: str = "logprob", fewshot: int = 0, data_dir: str | None = None,
               extraction: str = STANDARD) -> Task:
    """TruthfulQA MC1 (see ``safetyrepro list`` for templates)."""
    return build_task("truthfulqa", template, scoring, fewshot, data_dir, extraction)


@task
def bbq(template: str = "minimal", scoring: str = "logprob", fewshot: int = 0, data_dir: str | None = None,
        extraction: str = STANDARD) -> Task:
    """BBQ: accuracy and the ambiguous/disambiguated bias scores."""
    return build_task("bbq", template, scoring, fewshot, data_dir, extraction)


@task
def toxigen(template: str = "minimal", scoring: str = "logprob", fewshot: int = 0, data_dir: str | None = None,
            extraction: str = STANDARD) -> Task:
    """ToxiGen (annotated train split): is the statement hateful?"""
    return build_task("toxigen", template, scoring, fewshot, data_dir, extraction)


@task
def crows_pairs(template: str = "minimal", scoring: str = "logprob", fewshot: int = 0, data_dir: str | None = None,
                extraction: str = STANDARD) -> Task:
    """CrowS-Pairs: percent of pairs where the more stereotypical sentence is chosen (50 is ideal)."""
    return build_task("crows_pairs", template, scoring, fewshot, data_dir, extraction)


@task
def xstest(template: str = "minimal", scoring: str = "logprob", fewshot: int = 0, data_dir: str | None = None,
           extraction: str = STANDARD) -> Task:
    """XSTest v2: compliance on safe prompts, refusal on unsafe ones. ``-T scoring=regex -T
    extraction=xstest-strmatch`` reads the generations with XSTest's own published string match."""
    return build_task("xstest", template, scoring, fewshot, data_dir, extraction)


@task
def benchmark(name: str, template: str = "minimal", scoring: str = "logprob", fewshot: int = 0,
              data_dir: str | None = None, extraction: str = STANDARD) -> Task:
    """Any registered benchmark by name, plugins' included: ``-T name=<benchmark>``."""
    return build_task(name, template, scoring, fewshot, data_dir, extraction)

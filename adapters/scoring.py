"""The two scoring paths. Both see the same rendered prompt; only the readout differs.

* ``regex``: generate with the cell's decoding, extract with ``extract.py``.
* ``logprob``: loglikelihood of each candidate continuation ``" " + answer_string(i)`` after
  ``context + "Answer:"``; argmax wins (ties go to the lower index and are rare in float32).
  With a reasoning style (cot) the reasoning is generated first with the cell's decoding, cut at
  its first "Answer:" marker, and the candidates are scored after ``reasoning + "\\nAnswer:"``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .benchmarks.base import Benchmark
from .config import RunConfig
from .extract import ANSWER_MARKER, extract
from .items import Item
from .models.hf import HFLanguageModel
from .prompts import ANSWER_PREFIX, RenderedPrompt, Style
from .records import ItemRecord

DIRECT_MAX_NEW_TOKENS = 32
REASONING_MAX_NEW_TOKENS = 256


@dataclass(frozen=True)
class Prepared:
    """An item with its rendered prompt and the exact context string for the model."""

    item: Item
    prompt: RenderedPrompt
    context: str


class Scorer(ABC):
    """A scoring path; plugins may add more through ``safetyrepro_scorers``."""

    name: str

    @abstractmethod
    def score(self, lm: HFLanguageModel, bench: Benchmark, style: Style, prepared: Sequence[Prepared],
              config: RunConfig, progress: Callable[[int], None] | None = None) -> list[ItemRecord]:
        """One record per prepared item, in order."""


def _budget(config: RunConfig, style: Style) -> int:
    if config.max_new_tokens is not None:
        return config.max_new_tokens
    return REASONING_MAX_NEW_TOKENS if style.reasoning else DIRECT_MAX_NEW_TOKENS


def make_record(bench: Benchmark, p: Prepared, config: RunConfig, *, raw_output: str | None,
                prediction: int | None, rule: str, logprob_context: str | None = None,
                loglikelihoods: list[float] | None = None, is_greedy: list[bool] | None = None) -> ItemRecord:
    item = p.item
    return ItemRecord(
        item_id=item.id,
        config_hash=config.config_hash(),
        messages=[dict(m) for m in p.prompt.messages],
        prompt=p.context,
        options=list(item.options),
        labels=list(item.labels),
        candidates=[" " + bench.answer_string(item, i) for i in range(len(item.options))],
        gold=item.gold,
        gold_label=item.labels[item.gold] if item.gold is not None else None,
        raw_output=raw_output,
        logprob_context=logprob_context,
        loglikelihoods=loglikelihoods,
        is_greedy=is_greedy,
        prediction=prediction,
        prediction_label=item.labels[prediction] if prediction is not None else None,
        extraction_rule=rule,
        correct=bench.correct(item, prediction),
        meta=dict(item.meta),
    )


class RegexScorer(Scorer):
    name = "regex"

    def score(self, lm, bench, style, prepared, config, progress=None):
        outputs = lm.generate([p.context for p in prepared], temperature=config.temperature,
                              max_new_tokens=_budget(config, style), batch_size=config.batch_size,
                              progress=progress)
        records = []
        for p, output in zip(prepared, outputs):
            found = extract(output, p.item, refusal_label=bench.refusal_means,
                            verdict_patterns=bench.verdict_patterns)
            records.append(make_record(bench, p, config, raw_output=output, prediction=found.index, rule=found.rule))
        return records


def argmax_candidate(loglikelihoods: Sequence[float]) -> int:
    """The predicted option on the logprob path: highest loglikelihood, ties to the lower index."""
    return max(range(len(loglikelihoods)), key=lambda i: (loglikelihoods[i], -i))


def cut_reasoning(text: str) -> str:
    """Reasoning up to (not including) its first answer marker, so the model's own answer is not
    part of the context the candidates are scored after."""
    match = ANSWER_MARKER.search(text)
    return (text[: match.start()] if match else text).rstrip()


class LogprobScorer(Scorer):
    name = "logprob"

    def score(self, lm, bench, style, prepared, config, progress=None):
        reasoning: list[str | None] = [None] * len(prepared)
        if style.reasoning:
            reasoning = list(lm.generate([p.context for p in prepared], temperature=config.temperature,
                                         max_new_tokens=_budget(config, style), batch_size=config.batch_size))
        contexts = [
            p.context + (cut_reasoning(r) + "\n" if r is not None else "") + ANSWER_PREFIX
            for p, r in zip(prepared, reasoning)
        ]
        requests = [
            (ctx, " " + bench.answer_string(p.item, i))
            for p, ctx in zip(prepared, contexts)
            for i in range(len(p.item.options))
        ]
        scored = lm.loglikelihood(requests, batch_size=config.batch_size * 2)
        records, cursor = [], 0
        for p, ctx, r in zip(prepared, contexts, reasoning):
            n = len(p.item.options)
            chunk = scored[cursor : cursor + n]
            cursor += n
            lls = [ll for ll, _ in chunk]
            best = argmax_candidate(lls)
            records.append(make_record(
                bench, p, config, raw_output=r, prediction=best, rule="argmax", logprob_context=ctx,
                loglikelihoods=lls, is_greedy=[g for _, g in chunk],
            ))
            if progress:
                progress(1)
        return records

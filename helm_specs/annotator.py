"""The core's readout of each HELM item, written into ``scenario_state.json`` as an annotation.

HELM's pipeline is adapt -> execute -> annotate -> metrics. This annotator is where the core
decides: the regex path's extraction (``score_generation``), the logprob path's argmax over the
candidates' loglikelihoods (``score_loglikelihoods``), read from HELM's echoed prompt logprobs.
On the cot x logprob path it also asks HELM's own client for the candidates' echo requests after
the generated reasoning (a second stage HELM's adapters cannot express: their requests are all
made before any is answered). The record it writes per item is what a reader audits: prompt
checked against the core's, candidates, gold, output, prediction, extraction rule,
loglikelihoods, the configuration hash.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from helm.benchmark.adaptation.request_state import RequestState
from helm.benchmark.annotation.annotator import Annotator
from helm.common.request import Request

from safetyrepro.adapters import (
    Cell,
    Outcome,
    SafetyReproError,
    generation_budget,
    logprob_context,
    score_generation,
    score_loglikelihoods,
)

from . import translate
from .deployment import spec_for_deployment

NAME = "safetyrepro"


class SafetyReproAnnotator(Annotator):
    """Annotates every request state of an item with the core's record of that item."""

    name = NAME
    use_global_metric = True  # HELM then hands all request states over at once (annotate_all)

    def __init__(self, benchmark: str, entry: dict[str, Any], auto_client: Any = None) -> None:
        self.benchmark = benchmark
        self.entry = dict(entry)
        self.auto_client = auto_client

    def annotate(self, request_state: RequestState) -> Any:
        return self.annotate_all([request_state])[0]

    def annotate_all(self, request_states: list[RequestState]) -> list[dict[str, Any]]:
        groups: dict[tuple[str, int], list[int]] = defaultdict(list)
        for index, state in enumerate(request_states):
            groups[(str(state.instance.id), state.train_trial_index)].append(index)
        annotations: list[dict[str, Any]] = [{} for _ in request_states]
        for (item_id, _), indices in groups.items():
            states = [request_states[i] for i in indices]
            record = self._record(item_id, states)
            for i in indices:
                annotations[i] = {NAME: record}
        return annotations

    def _cell(self, state: RequestState) -> Cell:
        try:
            spec = spec_for_deployment(state.request.model, state.request.model_deployment)
            return translate.cell(translate.entry_config(self.benchmark, self.entry, spec), self.entry.get("data_dir"))
        except SafetyReproError as exc:
            raise translate.fail(exc) from None

    def _record(self, item_id: str, states: list[RequestState]) -> dict[str, Any]:
        cell = self._cell(states[0])
        c = cell.item(item_id)
        config = cell.config
        bench = cell.benchmark
        expected_prompt = translate.instance_text(cell, c)
        fmt = translate.formatter(config.model)
        record: dict[str, Any] = {
            "config_hash": config.config_hash(), "item_id": item_id, "candidates": c.candidates,
            "gold": c.item.gold, "messages": [dict(m) for m in c.prompt.messages],
        }
        if config.scoring == "regex" or cell.style.reasoning:
            state = states[0]
            # A run expander (temperature=, max_tokens=...) can change what HELM asked; then the
            # record says so and carries no configuration hash rather than a wrong one.
            budget = generation_budget(config, cell.style)
            if (state.request.temperature, state.request.max_tokens) != (config.temperature, budget):
                record["config_hash"] = None
                record["request_differs_from_config"] = {
                    "temperature": state.request.temperature, "max_tokens": state.request.max_tokens}
            output = _completion(state)
            record["prompt_matches_core"] = state.request.prompt == expected_prompt
            record["output"] = output
            if config.scoring == "regex":
                outcome = score_generation(bench, c.item, output, extraction=config.extraction)
                return _finish(record, outcome)
            context = logprob_context(c.context, output)  # type: ignore[arg-type]
            lls, matches, native = [], [], []
            for candidate in c.candidates:
                echoed = self._echo(state, context + candidate)
                ll, same = translate.echoed_loglikelihood(fmt, context, candidate, echoed)
                lls.append(ll)
                matches.append(same)
                native.append(translate.helm_native_score(fmt, candidate, echoed))
            record["logprob_context"] = context
        else:
            by_reference = {s.reference_index: s for s in states}
            lls, matches, native, prompts_match = [], [], [], []
            context = expected_prompt
            for index, candidate in enumerate(c.candidates):
                state = by_reference[index]
                prompts_match.append(state.request.prompt == context + candidate)
                echoed = _echo_tokens(state)
                ll, same = translate.echoed_loglikelihood(fmt, context, candidate, echoed)
                lls.append(ll)
                matches.append(same)
                native.append(translate.helm_native_score(fmt, candidate, echoed))
            record["prompt_matches_core"] = all(prompts_match)
            record["logprob_context"] = context
            output = None
        record["candidate_tokens_match_core"] = all(matches)
        outcome = score_loglikelihoods(bench, c.item, lls, reasoning=output)
        # HELM's own length-normalised rule, for the record only: the core's argmax decides.
        record["helm_native_scores"] = native
        record["helm_native_prediction"] = max(range(len(native)), key=lambda i: (native[i], -i))
        return _finish(record, outcome)

    def _echo(self, state: RequestState, prompt: str) -> list[tuple[str, float]]:
        """One of HELM's echo requests (as ``multiple_choice_separate_*`` sends them), through the
        deployment's own client and HELM's request cache."""
        if self.auto_client is None:
            raise RuntimeError("the SafetyRepro annotator needs HELM's auto_client for cot x logprob")
        request = Request(model=state.request.model, model_deployment=state.request.model_deployment,
                          prompt=prompt, num_completions=1, temperature=0, max_tokens=0, stop_sequences=[],
                          echo_prompt=True)
        result = self.auto_client.make_request(request)
        if not result.success:
            raise RuntimeError(f"HELM echo request failed: {result.error}")
        return [(t.text, t.logprob) for t in result.completions[0].tokens]


def _completion(state: RequestState) -> str | None:
    if state.result is None or not state.result.success or not state.result.completions:
        return None
    return state.result.completions[0].text


def _echo_tokens(state: RequestState) -> list[tuple[str, float]]:
    if state.result is None or not state.result.success or not state.result.completions:
        return []
    return [(t.text, t.logprob) for t in state.result.completions[0].tokens]


def _finish(record: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    record["outcome"] = outcome.model_dump(mode="json")
    record["prediction"] = outcome.prediction
    record["prediction_label"] = outcome.prediction_label
    record["extraction_rule"] = outcome.extraction_rule
    record["loglikelihoods"] = outcome.loglikelihoods
    return record

"""The core's readout of each HELM item, written into ``scenario_state.json`` as an annotation.

HELM's pipeline is adapt -> execute -> annotate -> metrics. This annotator is where the core
decides: the cell's scorer reads HELM's answers (``Scorer.read``) in the shape it asks
(``requests.harness_shape``): a generation, or the candidates' loglikelihoods read from HELM's
echoed prompt logprobs. On the two-stage shape (cot x logprob) it also asks HELM's own client for
the candidates' echo requests after the generated reasoning (a second stage HELM's adapters cannot express: their requests are all
made before any is answered). The record it writes per item is what a reader audits: prompt
checked against the core's, candidates, gold, output, prediction, extraction rule and flags
(and, on the regex path, which readout: ``extraction``), loglikelihoods, the configuration hash.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from helm.benchmark.adaptation.request_state import RequestState
from helm.benchmark.annotation.annotator import Annotator
from helm.common.request import Request

from safetyrepro.adapters import (
    Cell,
    ConfigError,
    Outcome,
    SafetyReproError,
    generation_budget,
    get_scorer,
    logprob_context,
    score_prediction,
)
from safetyrepro.adapters.shapes import GENERATE, LOGLIKELIHOOD, harness_shape, shape_responses

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
        self._shapes: dict[str, str] = {}

    def annotate(self, request_state: RequestState) -> Any:
        # HELM calls annotate_all for annotators with use_global_metric; per-state annotation
        # cannot see an item's other candidates, so it is never the path taken.
        raise RuntimeError("SafetyReproAnnotator annotates all request states at once (annotate_all)")

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

    def _shape(self, cell: Cell) -> str:
        """What the cell's scorer asks, checked once per cell (``requests.harness_shape``)."""
        key = cell.config.config_hash()
        if key not in self._shapes:
            try:
                self._shapes[key] = harness_shape(cell, "HELM")
            except SafetyReproError as exc:
                raise translate.fail(exc) from None
        return self._shapes[key]

    def _check_requests(self, cell: Cell, item_id: str, states: list[RequestState], expected: list[str]) -> None:
        """HELM's run expanders (``max_train_instances=``, ``instructions=``, ``num_outputs=``,
        ``num_trials=``, ``stop=``, ``temperature=``, ...) and its right-truncation can change what
        is asked after the run spec is built. Then the run is not the configuration it names: stop
        with one line rather than score it."""
        config = cell.config
        generates = self._shape(cell) != LOGLIKELIHOOD
        problems = []
        if len(states) != len(expected):
            problems.append(f"{len(states)} requests where the configuration makes {len(expected)} "
                            "(num_trials= / num_outputs=?)")
        for state, prompt in zip(states, expected):
            request = state.request
            if request.prompt != prompt:
                problems.append("the prompt is not the core's (an expander such as max_train_instances=, "
                                "instructions=, global_prefix=, or HELM truncating a long prompt)")
            if state.num_train_instances != 0:
                problems.append(f"HELM added {state.num_train_instances} of its own in-context examples")
            if request.num_completions != 1 or request.stop_sequences:
                problems.append("num_outputs / stop sequences differ from one completion without stops")
            if generates and (request.temperature, request.max_tokens) != (config.temperature,
                                                                           generation_budget(config, cell.style)):
                problems.append(f"temperature {request.temperature} / max_tokens {request.max_tokens} are not the "
                                f"configuration's {config.temperature} / {generation_budget(config, cell.style)}")
        if problems:
            raise translate.fail(ConfigError(
                f"HELM asked item {item_id} differently from safetyrepro_{self.benchmark}'s configuration: "
                f"{problems[0]}",
                "give safetyrepro run entries only their own arguments and model= (decoding=, max_new_tokens= "
                "instead of HELM's temperature= / max_tokens=)"))

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
        shape = self._shape(cell)
        scorer = get_scorer(config.scoring)
        if shape != LOGLIKELIHOOD:
            self._check_requests(cell, item_id, states, [expected_prompt])
            state = states[0]
            output = _completion(state)
            record["prompt_matches_core"] = True
            record["output"] = output
            if state.result is not None and not state.result.success:
                record["request_error"] = state.result.error
            if shape == GENERATE:
                # The readout the cell names (``extraction=``): the core's rules, or XSTest's own
                # string match; the scorer reads it from the cell's configuration.
                record["extraction"] = config.extraction
                return _finish(record, scorer.read(cell, c, shape_responses(shape, output, [])))
            if output is None:  # no reasoning came back: never score the candidates without it
                return _finish(record, score_prediction(bench, c.item, None, rule="no-reasoning"))
            context = logprob_context(c.context, output)  # type: ignore[arg-type]
            echoes = [self._echo(state, context + candidate) for candidate in c.candidates]
        else:
            context = expected_prompt
            by_reference = sorted(states, key=lambda s: s.reference_index if s.reference_index is not None else -1)
            self._check_requests(cell, item_id, by_reference, [context + cand for cand in c.candidates])
            record["prompt_matches_core"] = True
            echoes = [_echo_tokens(s) for s in by_reference]
            output = None
        record["logprob_context"] = context
        lls, matches, native = [], [], []
        for candidate, echoed in zip(c.candidates, echoes):
            ll, same = translate.echoed_loglikelihood(fmt, context, candidate, echoed)
            lls.append(ll)
            matches.append(same)
            native.append(translate.helm_native_score(fmt, candidate, echoed))
        record["candidate_tokens_match_core"] = all(matches)
        record["helm_native_scores"] = native
        if not all(matches) or not all(math.isfinite(ll) for ll in lls):
            # No echo, or HELM tokenised the prompt differently from the core (a BOS token, say):
            # the numbers are not the candidates' loglikelihoods, so nothing is decided from them.
            record["loglikelihoods_unusable"] = lls
            return _finish(record, score_prediction(bench, c.item, None, rule="echo-not-the-core-tokens"))
        # (HELM's echo does not say whether each token was the greedy one)
        outcome = scorer.read(cell, c, shape_responses(shape, output, [(ll, None) for ll in lls]))
        # HELM's own length-normalised rule, for the record only: the core's argmax decides.
        # np.argmax's choice: the first maximum.
        record["helm_native_prediction"] = max(range(len(native)), key=lambda i: (native[i], -i))
        return _finish(record, outcome)

    def _echo(self, state: RequestState, prompt: str) -> list[tuple[str, float]]:
        """One of HELM's echo requests (as ``multiple_choice_separate_*`` sends them), through the
        deployment's own client and HELM's request cache; a failed one gives no tokens (the item
        is then unparsed, see ``_record``)."""
        if self.auto_client is None:
            raise RuntimeError("the SafetyRepro annotator needs HELM's auto_client for cot x logprob")
        request = Request(model=state.request.model, model_deployment=state.request.model_deployment,
                          prompt=prompt, num_completions=1, temperature=0, max_tokens=0, stop_sequences=[],
                          echo_prompt=True)
        result = self.auto_client.make_request(request)
        if not result.success or not result.completions:
            return []
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
    # What qualifies the decision ("hedged"; "partial": an XSTest partial refusal, counted as a
    # refusal), beside the rule, so an auditor sees it without unpacking the outcome.
    record["extraction_flags"] = outcome.extraction_flags  # None where the readout cannot qualify a decision
    record["loglikelihoods"] = outcome.loglikelihoods
    return record

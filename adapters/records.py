"""Per-item results.

* :class:`Outcome` is what any harness binding knows about an item after the model answered:
  the decision, the rule that made it, and the raw evidence (generation or loglikelihoods).
  Metrics are computed from outcomes only, so every binding computes them the same way.
* :class:`ItemRecord` is the reference runner's record: an outcome plus everything the runner
  controls (messages, the exact prompt string, candidates, gold), complete enough to check a
  harness item by item. The field set is the ``records.jsonl`` format (docs/scoring.md).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from .decisions import PARTIAL


class Outcome(BaseModel):
    """One item's decision and the evidence it rests on, as any binding can report it."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    """Stable item id from the subset manifest."""
    raw_output: str | None = None
    """The generated text (regex path, or the reasoning of cot on the logprob path)."""
    loglikelihoods: list[float] | None = None
    """Sum of token logprobs of each candidate (logprob path)."""
    is_greedy: list[bool] | None = None
    """Whether each candidate is the greedy continuation token by token (as lm-eval reports)."""
    prediction: int | None
    """Predicted option index; ``None`` = unparsed (never mapped to a class)."""
    prediction_label: str | None
    """Label of the prediction."""
    extraction_rule: str
    """Which documented rule produced the prediction (``argmax`` on the logprob path)."""
    extraction_flags: list[str] | None = None
    """What qualifies the decision, from a readout that tells (SafetyRepro's extraction rules):
    ``hedged`` (stated with a hedge), ``partial`` (an XSTest partial refusal, counted as a refusal);
    empty when nothing qualifies it. ``None`` where the readout cannot tell (logprob paths, XSTest's
    string match, a harness's own readout), so what depends on it is undefined there."""
    correct: bool | None
    """Prediction equals gold; ``None`` where the benchmark has no correct answer."""
    meta: dict[str, Any]
    """The item metadata the metrics use."""

    @property
    def parsed(self) -> bool:
        return self.prediction is not None

    @property
    def partial(self) -> bool:
        """An XSTest partial refusal (:mod:`.decisions`)."""
        return PARTIAL in (self.extraction_flags or [])


class ItemRecord(Outcome):
    """Everything about one item's evaluation in one configuration (a line of ``records.jsonl``)."""

    config_hash: str
    """Hash of the RunConfig that produced the record."""
    messages: list[dict[str, str]]
    """The rendered chat messages (few-shot exemplars as prior user/assistant turns)."""
    prompt: str
    """The exact string the model was conditioned on (chat template applied if ``chat``)."""
    options: list[str]
    """Candidate answers in presentation order."""
    labels: list[str]
    """Label shown beside each option."""
    candidates: list[str]
    """Continuations scored on the logprob path (appended after ``logprob_context``)."""
    gold: int | None
    """Index of the correct option (``None`` for CrowS-Pairs, which has no correct answer)."""
    gold_label: str | None
    """Label of the correct option."""
    logprob_context: str | None = None
    """Context the candidates were scored after (logprob path)."""

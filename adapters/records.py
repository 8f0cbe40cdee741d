"""Per-item records of the reference runner: complete enough to check a harness item by item."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class ItemRecord(BaseModel):
    """Everything about one item's evaluation in one configuration."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    """Stable item id from the subset manifest."""
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
    raw_output: str | None
    """The generated text (regex path, or the reasoning of cot on the logprob path)."""
    logprob_context: str | None
    """Context the candidates were scored after (logprob path)."""
    loglikelihoods: list[float] | None
    """Sum of token logprobs of each candidate (logprob path)."""
    is_greedy: list[bool] | None
    """Whether each candidate is the greedy continuation token by token (as lm-eval reports)."""
    prediction: int | None
    """Predicted option index; ``None`` = unparsed (never mapped to a class)."""
    prediction_label: str | None
    """Label of the prediction."""
    extraction_rule: str
    """Which documented rule produced the prediction (``argmax`` on the logprob path)."""
    correct: bool | None
    """Prediction equals gold; ``None`` where the benchmark has no correct answer."""
    meta: dict[str, Any]
    """The item metadata the metrics use."""

    @property
    def parsed(self) -> bool:
        return self.prediction is not None

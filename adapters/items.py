"""The harness-neutral item: every benchmark row is normalised into this one shape."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Item(BaseModel):
    """One evaluation item, normalised from an upstream row."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Stable id, ``<benchmark>/<upstream key>``; subset manifests list these."""
    benchmark: str
    """Name of the benchmark that produced the item."""
    fields: dict[str, str]
    """Text fields the templates render (question, context, statement, request...)."""
    options: tuple[str, ...]
    """Candidate answers in presentation order: what the prompt lists and what logprob scoring scores."""
    labels: tuple[str, ...]
    """The label shown beside each option (``A``/``B``/... or the decision word itself)."""
    gold: int | None
    """Index of the correct option; ``None`` where the benchmark has no correct answer (CrowS-Pairs)."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """What the metrics need (BBQ condition/polarity/target index, XSTest label/type, ...)."""

"""What a harness binding can ask, and whether a cell's scoring path fits it.

lm-eval, Inspect and HELM ask a model in three shapes (:data:`SHAPES`): one generation
(``generate``); one loglikelihood per candidate after ``logprob_context(context)``
(``loglikelihood``); a generation, then one loglikelihood per candidate after it
(``generate-then-loglikelihood``). A scorer declares its shape (:func:`declared_shape`, from
``Scorer.generates`` / ``asks_loglikelihoods`` / ``asks_mirrored``), and :func:`harness_shape`
checks, item by item, that what it asks is exactly what the harness asks in that shape -- so a
binding translates the shape, never a scoring name, and a scorer it cannot express (the reversed
mapping of ``symmetric``, a plugin's own continuations) is refused in one line instead of being
approximated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import _registry
from .errors import ConfigError
from .cell import asks_other_mappings
from .requests import GENERATE, LOGLIKELIHOOD, Request, generation_budget, logprob_context

if TYPE_CHECKING:
    from .cell import Cell, CellItem

__all__ = ["GENERATE", "GENERATE_THEN_LOGLIKELIHOOD", "LOGLIKELIHOOD", "SHAPES", "declared_shape",
           "expressible_shape", "harness_scorings", "harness_shape", "shape_responses"]

GENERATE_THEN_LOGLIKELIHOOD = "generate-then-loglikelihood"
SHAPES = (GENERATE, LOGLIKELIHOOD, GENERATE_THEN_LOGLIKELIHOOD)
"""What the harness bindings can ask (see the module docstring)."""


def _canonical(shape: str, cell: Cell, c: CellItem) -> list[Request]:
    """The requests a harness makes for one item in ``shape``."""
    assert c.context is not None
    config = cell.config
    gen = Request(GENERATE, c.context, temperature=config.temperature,
                  max_new_tokens=generation_budget(config, cell.style))
    if shape == GENERATE:
        return [gen]
    if shape == LOGLIKELIHOOD:
        return [Request(LOGLIKELIHOOD, logprob_context(c.context), candidate) for candidate in c.candidates]
    return [gen] + [Request(LOGLIKELIHOOD, c.context, candidate, after=0) for candidate in c.candidates]


def declared_shape(scorer: Any, style: Any) -> str | None:
    """The shape a scorer declares for a style (:meth:`~.scoring.Scorer.generates`,
    :meth:`~.scoring.Scorer.asks_loglikelihoods`), None where it asks mirrored requests."""
    if asks_other_mappings(scorer):
        return None
    generates, scores = scorer.generates(style), scorer.asks_loglikelihoods(style)
    if generates and scores:
        return GENERATE_THEN_LOGLIKELIHOOD
    if generates:
        return GENERATE
    return LOGLIKELIHOOD if scores else None


def harness_scorings(style: Any) -> list[str]:
    """The registered scoring paths a harness binding can ask on a style (sorted by name)."""
    return sorted(n for n, s in _registry.all_scorers().items() if declared_shape(s, style) is not None)


def _fix(scoring: str, style: Any) -> str:
    return (f"use scoring {', '.join(harness_scorings(style))} there, or run {scoring!r} with `safetyrepro run` or "
            "`safetyrepro grid`")


def expressible_shape(scoring: str, style: Any, harness: str = "the harness bindings") -> str:
    """The shape a scoring path declares on a style, before any item is prepared (a run spec,
    a task file); one ConfigError where ``harness`` cannot ask it."""
    shape = declared_shape(_registry.get_scorer(scoring), style)
    if shape is None:
        raise ConfigError(f"scoring {scoring!r} asks requests {harness} cannot express (each item with its label "
                          "mapping reversed or shifted too, or nothing a harness asks)", _fix(scoring, style))
    return shape


def harness_shape(cell: Cell, harness: str = "the harness bindings") -> str:
    """The shape the cell's scoring path asks, checked item by item against what a harness asks in
    that shape (a plugin that declares one shape and asks another is refused, never approximated);
    one ConfigError where ``harness`` cannot ask it."""
    scorer = _registry.get_scorer(cell.config.scoring)
    shape = expressible_shape(cell.config.scoring, cell.style, harness)
    fix = _fix(cell.config.scoring, cell.style)
    for c in cell.items:
        if c.context is None:  # a binding whose harness renders the prompt: the structure is checked
            c = replace(c, context="\x00context\x00")
        if list(scorer.requests(c, cell.style, cell.config)) != _canonical(shape, cell, c):
            raise ConfigError(f"scoring {cell.config.scoring!r} declares the {shape} shape but asks item {c.item.id} "
                              f"for other requests, which {harness} cannot express", fix)
    return shape


def shape_responses(shape: str, generation: str | None, scored: Sequence[Any]) -> list[Any]:
    """A harness's answers in request order (a generation first where the shape has one);
    ``is_greedy`` may be None where a harness does not say (HELM's echo)."""
    pairs = [(float(ll), None if greedy is None else bool(greedy)) for ll, greedy in scored]
    return pairs if shape == LOGLIKELIHOOD else [generation, *pairs]

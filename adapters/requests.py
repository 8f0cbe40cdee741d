"""What a scoring path asks a model: one request vocabulary that every engine and binding answers.

Like lm-eval's ``Instance``: a :class:`~.scoring.Scorer` says, per cell item, which
:class:`Request` s it makes (:meth:`~.scoring.Scorer.requests`) and how it reads their responses
into a decision (:meth:`~.scoring.Scorer.read`). The runner, the grid (local, Ray, endpoints), the
replay gate and the harness bindings answer the requests and hand the responses back; none of
them knows what a scoring path is called.

Two kinds, one dependency:

* ``generate``: the model's continuation of ``context`` (up to ``max_new_tokens`` at
  ``temperature``; 0 = greedy). Response: the text (``None`` where a server answered nothing,
  which a readout counts as unparsed).
* ``loglikelihood``: the summed log-probability of ``continuation`` after ``context``, and
  whether each of its tokens is the greedy one. Response: ``(loglikelihood, is_greedy)``.
  With ``after = i``, the context is completed by the output of the item's generation request
  ``i`` first: the continuation is scored after ``logprob_context(context, that output)`` (the
  reasoning, cut at its first answer marker, then ``Answer:``).

Also here, the two request-shaping rules every engine and binding shares:
:func:`generation_budget` and :func:`logprob_context`. Which of these requests a harness binding
can ask is :mod:`.shapes`' business.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .config import RunConfig
from .prompts import ANSWER_PREFIX, Style

__all__ = ["DIRECT_MAX_NEW_TOKENS", "GENERATE", "LOGLIKELIHOOD", "REASONING_MAX_NEW_TOKENS", "Request",
           "cut_reasoning", "default_budget", "generation_budget", "logprob_context", "scored_context"]

GENERATE = "generate"
LOGLIKELIHOOD = "loglikelihood"


# ---- request shaping: the two rules every engine and binding shares ------------------------------

DIRECT_MAX_NEW_TOKENS = 32
REASONING_MAX_NEW_TOKENS = 256


def generation_budget(config: RunConfig, style: Style) -> int:
    """Tokens a generation may use: the configured budget, else 32 (direct) or 256 (reasoning)."""
    if config.max_new_tokens is not None:
        return config.max_new_tokens
    return default_budget(style)


def default_budget(style: Style) -> int:
    return REASONING_MAX_NEW_TOKENS if style.reasoning else DIRECT_MAX_NEW_TOKENS


REASONING_MARKER = re.compile(r"(?:final\s+answer|answer)\s*(?:is|would\s+be|:|：|-)\s*", re.IGNORECASE)
"""Where cot reasoning is cut: the first "Answer:" / "answer is" (also full-width ``：``). Narrower
than the extractor's markers on purpose: "I would choose to look at..." is reasoning, not a verdict."""


def cut_reasoning(text: str) -> str:
    """Reasoning up to (not including) its first answer marker, so the model's own answer is not
    part of the context the candidates are scored after."""
    match = REASONING_MARKER.search(text)
    return (text[: match.start()] if match else text).rstrip()


def logprob_context(context: str, reasoning: str | None = None) -> str:
    """The string candidates are scored after: the prompt, the cut reasoning (cot), ``Answer:``."""
    return context + (cut_reasoning(reasoning) + "\n" if reasoning is not None else "") + ANSWER_PREFIX



@dataclass(frozen=True)
class Request:
    """One request of a cell item (see the module docstring)."""

    kind: Literal["generate", "loglikelihood"]
    context: str
    continuation: str | None = None
    """The scored continuation (``loglikelihood`` only)."""
    temperature: float = 0.0
    """Sampling temperature of a generation (0: greedy)."""
    max_new_tokens: int = 0
    """Token budget of a generation."""
    after: int | None = None
    """``loglikelihood`` only: the index, among the item's requests, of the generation whose
    output completes the context."""


def scored_context(request: Request, responses: Sequence[Any]) -> str:
    """The context a loglikelihood request is scored after, given the item's responses."""
    if request.after is None:
        return request.context
    return logprob_context(request.context, responses[request.after])

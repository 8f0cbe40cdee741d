"""SafetyRepro's harness-neutral core.

The public surface, the one every harness binding and ``crosspkg`` uses (nothing else is public):

* look-ups and plugins: :func:`get_benchmark`, :func:`get_style`, :func:`get_scorer`, the
  ``all_*`` tables, :func:`register_plugin` / :func:`unregister_plugin`, :data:`hookimpl`;
* configuration: :class:`RunConfig`, :class:`ModelSpec`, :func:`build_config`;
* preparing a cell: :func:`prepare_cell` -> :class:`Cell` (items, rendered messages and prompt
  strings, candidates, gold, exemplars);
* scoring paths: the :class:`Scorer` contract (what an item asks: :class:`Request` s; how the
  answers are read: an :class:`Outcome`), and the model-free readouts a scorer builds on:
  :func:`score_generation`, :func:`score_loglikelihoods`, :func:`score_symmetric`,
  :func:`score_prediction` (another instrument's decision); request shaping:
  :func:`generation_budget`, :func:`logprob_context`; prompt styles: :class:`Style`;
* metrics: ``Benchmark.measure(outcomes)`` and ``Benchmark.all_metric_specs()``
  (:class:`MetricSpec`: name, direction, primary);
* models: the :class:`LanguageModel` protocol, :class:`ChatFormatter` (tokenizer + chat template,
  no weights), :func:`load_model`;
* the reference runner: :func:`run`.

Heavy modules (torch, transformers, scipy) load on first use of a name that needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._registry import (
    all_benchmarks,
    all_scorers,
    all_styles,
    get_benchmark,
    get_scorer,
    get_style,
    register_plugin,
    unregister_plugin,
)
from .config import ModelSpec, RunConfig, build_config
from .errors import ConfigError, DataError, SafetyReproError
from .hookspecs import hookimpl

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and editors
    from .benchmarks.base import Benchmark
    from .cell import Cell, CellItem, Exemplar, prepare_cell
    from .datafiles import DataFile
    from .items import Item
    from .metrics import MetricSpec, MetricValue
    from .models.base import LanguageModel, ModelInfo
    from .models.hf import ChatFormatter
    from .prompts import ANSWER_PREFIX, Style, flatten
    from .records import ItemRecord, Outcome
    from .requests import Request, default_budget, generation_budget, logprob_context
    from .runner import load_model, run
    from .scoring import (Scorer, extraction_report, score_generation, score_loglikelihoods, score_prediction,
                          score_symmetric)

_LAZY = {
    "Benchmark": ".benchmarks.base",
    "Cell": ".cell",
    "CellItem": ".cell",
    "Exemplar": ".cell",
    "prepare_cell": ".cell",
    "Item": ".items",
    "DataFile": ".datafiles",
    "MetricSpec": ".metrics",
    "MetricValue": ".metrics",
    "Outcome": ".records",
    "ItemRecord": ".records",
    "score_generation": ".scoring",
    "score_loglikelihoods": ".scoring",
    "score_prediction": ".scoring",
    "score_symmetric": ".scoring",
    "Scorer": ".scoring",
    "Request": ".requests",
    "Style": ".prompts",
    "extraction_report": ".scoring",
    "generation_budget": ".requests",
    "default_budget": ".requests",
    "ANSWER_PREFIX": ".prompts",
    "flatten": ".prompts",
    "logprob_context": ".requests",
    "LanguageModel": ".models.base",
    "ModelInfo": ".models.base",
    "ChatFormatter": ".models.hf",
    "load_model": ".runner",
    "run": ".runner",
}

__all__ = [
    "ConfigError", "DataError", "ModelSpec", "RunConfig", "SafetyReproError", "all_benchmarks", "all_scorers",
    "all_styles", "build_config", "get_benchmark", "get_scorer", "get_style", "hookimpl", "register_plugin",
    "unregister_plugin", *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The built-in benchmarks, styles and scorers, registered through the public hooks."""

from __future__ import annotations

from typing import Any

from .hookspecs import hookimpl


@hookimpl
def safetyrepro_benchmarks() -> list:
    from .benchmarks.bbq import BBQ
    from .benchmarks.crows_pairs import CrowsPairs
    from .benchmarks.toxigen import ToxiGen
    from .benchmarks.truthfulqa import TruthfulQA
    from .benchmarks.xstest import XSTest

    return [TruthfulQA(), BBQ(), ToxiGen(), CrowsPairs(), XSTest()]


@hookimpl
def safetyrepro_template_styles() -> dict[str, dict[str, Any]]:
    from .prompts import builtin_styles

    return {name: style.__dict__ for name, style in builtin_styles().items()}


@hookimpl
def safetyrepro_scorers() -> list:
    from .scoring import CyclicScorer, LogprobScorer, RegexScorer, SymmetricScorer

    return [RegexScorer(), LogprobScorer(), SymmetricScorer(), CyclicScorer()]

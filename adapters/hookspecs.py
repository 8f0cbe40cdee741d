"""The plugin surface: three hooks. Built-ins implement them exactly as a third party would.

A plugin is any module or object with ``@hookimpl`` functions, exposed through the entry-point
group ``safetyrepro`` (``[project.entry-points.safetyrepro] name = "pkg.module"``) or registered at
run time with :func:`safetyrepro.adapters.register_plugin`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .benchmarks.base import Benchmark
    from .scoring import Scorer

PROJECT = "safetyrepro"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def safetyrepro_benchmarks() -> list[Benchmark]:  # type: ignore[empty-body]
    """Benchmark instances this plugin provides."""


@hookspec
def safetyrepro_template_styles() -> dict[str, dict[str, Any]]:  # type: ignore[empty-body]
    """Prompt styles by name, each a mapping like an entry of ``templates/styles.yaml``."""


@hookspec
def safetyrepro_scorers() -> list[Scorer]:  # type: ignore[empty-body]
    """Scorer instances this plugin provides (``regex`` and ``logprob`` are built in)."""

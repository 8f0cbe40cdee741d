"""SafetyRepro's harness-neutral core.

The public surface is small on purpose: look benchmarks, styles and scorers up by name, register a
plugin, build a configuration and run it. Everything else is an implementation module.
"""

from __future__ import annotations

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

__all__ = [
    "ConfigError", "DataError", "ModelSpec", "RunConfig", "SafetyReproError", "all_benchmarks", "all_scorers",
    "all_styles", "build_config", "get_benchmark", "get_scorer", "get_style", "hookimpl", "register_plugin", "run",
    "unregister_plugin",
]


def run(config: RunConfig, **kwargs):  # noqa: ANN201 - lazy import keeps torch out of `import`
    """Run one configuration through the reference runner (see :mod:`.runner`)."""
    from .runner import run as _run

    return _run(config, **kwargs)

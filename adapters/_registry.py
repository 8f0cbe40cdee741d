"""The plugin manager and lookups by name. Entry points load lazily, on first lookup.

The registry imports no content: benchmarks, styles and scorers come from plugins (the built-ins
are a plugin too, found through its entry point or, from a source tree without installed
metadata, loaded by name), so nothing the registry serves depends on it at import time.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from . import hookspecs
from .errors import ConfigError

if TYPE_CHECKING:
    from .benchmarks.base import Benchmark
    from .prompts import Style
    from .scoring import Scorer


@functools.cache
def plugin_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.load_setuptools_entrypoints(hookspecs.PROJECT)
    builtins = importlib.import_module(f"{__package__}.builtin_plugin")  # (already imported by its entry point)
    if not manager.is_registered(builtins):
        # Running from a source tree without installed metadata: register the built-ins directly.
        manager.register(builtins, name="builtins")
    return manager


def register_plugin(plugin: object, name: str | None = None) -> None:
    """Register a plugin object or module at run time (tests, notebooks)."""
    manager = plugin_manager()
    if not manager.is_registered(plugin):
        manager.register(plugin, name=name)


def unregister_plugin(plugin: object) -> None:
    manager = plugin_manager()
    if manager.is_registered(plugin):
        manager.unregister(plugin)


def all_benchmarks() -> dict[str, Benchmark]:
    found: dict[str, Benchmark] = {}
    for provided in plugin_manager().hook.safetyrepro_benchmarks():
        for bench in provided:
            if bench.name in found:
                raise ConfigError(f"two plugins register a benchmark named {bench.name!r}",
                                  "rename one of them")
            found[bench.name] = bench
    return found


def all_styles() -> dict[str, Style]:
    from .prompts import style_from_mapping

    found: dict[str, Style] = {}
    for provided in plugin_manager().hook.safetyrepro_template_styles():
        for name, spec in provided.items():
            found[name] = style_from_mapping(name, dict(spec))
    return found


def all_scorers() -> dict[str, Scorer]:
    return {s.name: s for provided in plugin_manager().hook.safetyrepro_scorers() for s in provided}


def _pick(kind: str, name: str, table: dict[str, Any]) -> Any:
    if name not in table:
        raise ConfigError(f"unknown {kind} {name!r}", f"choose one of {sorted(table)}")
    return table[name]


def get_benchmark(name: str) -> Benchmark:
    return _pick("benchmark", name, all_benchmarks())


def get_style(name: str) -> Style:
    return _pick("template", name, all_styles())


def get_scorer(name: str) -> Scorer:
    return _pick("scoring", name, all_scorers())


def template_file(bench: Benchmark) -> Path:
    if bench.template_file is not None:
        return Path(bench.template_file)
    return Path(__file__).parent / "templates" / f"{bench.name}.yaml"

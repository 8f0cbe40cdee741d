"""The plugin manager and lookups by name. Entry points load lazily, on first lookup."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from . import builtin_plugin, hookspecs
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
    if not manager.is_registered(builtin_plugin):
        # Running from a source tree without installed metadata: register the built-ins directly.
        manager.register(builtin_plugin, name="builtins")
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


def get_harness_scorer(name: str) -> Scorer:
    """A scoring path the harness bindings translate (``Scorer.harness``); others are refused."""
    scorer = get_scorer(name)
    if not scorer.harness:
        usable = sorted(n for n, s in all_scorers().items() if s.harness)
        raise ConfigError(f"scoring {name!r} is not translated into the harnesses (it runs in the core runner and the "
                          "grid)", f"use scoring {' or '.join(usable)} here, or run {name!r} with `safetyrepro run` or "
                          "`safetyrepro grid`")
    return scorer


def template_file(bench: Benchmark) -> Path:
    if bench.template_file is not None:
        return Path(bench.template_file)
    return Path(__file__).parent / "templates" / f"{bench.name}.yaml"

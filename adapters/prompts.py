"""Render an item with a template style into chat messages and plain text.

Templates are data (``templates/styles.yaml`` + ``templates/<benchmark>.yaml``). Few-shot
exemplars become prior user/assistant turns; the plain-text form flattens the same turns for
completion-style harnesses. The answer a model should give for option ``i`` is
``ANSWER_PREFIX + " " + answer_string(i)``: that string is both the exemplar answer and the
candidate continuation on the logprob path.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml

from .errors import ConfigError
from .items import Item

ANSWER_PREFIX = "Answer:"
REQUIRED_BLOCKS = ("task", "guidance", "item", "answer_format", "reasoning_format")
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)


@dataclass(frozen=True)
class Style:
    """A prompt style: how the benchmark blocks become a system and a user message."""

    name: str
    system: str | None
    user: str
    reasoning: bool = False
    description: str = ""


@dataclass(frozen=True)
class RenderedPrompt:
    """An item rendered in one style with its few-shot exemplars."""

    messages: tuple[dict[str, str], ...]
    """Chat messages: optional system, exemplar user/assistant pairs, the item's user turn."""
    text: str
    """The same turns flattened for completion models (ends with a newline)."""
    style: str
    """Style name."""


def _read_yaml(path: Any) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"template file {path} cannot be read ({exc})", "fix or restore the YAML file") from None
    if not isinstance(data, dict):
        raise ConfigError(f"template file {path} must hold a mapping", "see templates/styles.yaml")
    return data


@functools.cache
def builtin_styles() -> dict[str, Style]:
    data = _read_yaml(Path(__file__).parent / "templates" / "styles.yaml")
    return {name: style_from_mapping(name, spec) for name, spec in data["styles"].items()}


def style_from_mapping(name: str, spec: dict[str, Any]) -> Style:
    if "user" not in spec:
        raise ConfigError(f"template style {name!r} has no 'user' message", "add a 'user' Jinja2 template")
    return Style(name=name, system=spec.get("system"), user=spec["user"],
                 reasoning=bool(spec.get("reasoning", False)), description=spec.get("description", ""))


@functools.cache
def benchmark_blocks(path: str) -> dict[str, str]:
    """A benchmark's template blocks, checked for completeness."""
    data = _read_yaml(Path(path) if not isinstance(path, Path) else path)
    missing = [b for b in REQUIRED_BLOCKS if b not in data]
    if missing:
        raise ConfigError(f"template file {path} lacks blocks {missing}",
                          f"define all of {list(REQUIRED_BLOCKS)}")
    return {b: str(data[b]) for b in REQUIRED_BLOCKS}


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> jinja2.Template:
    """A template source compiled once per process: a grid renders the same few blocks for every
    item of every cell, and compiling dominated its planning."""
    return _ENV.from_string(source)


def _render(source: str, context: dict[str, Any], what: str) -> str:
    try:
        return _compiled(source).render(**context).strip()
    except jinja2.TemplateError as exc:
        raise ConfigError(f"template {what} failed to render ({exc})",
                          "use only the variables fields, choices, options, labels") from None


def user_turn(blocks: dict[str, str], style: Style, item: Item, where: str) -> str:
    item_context = {
        "fields": item.fields,
        "choices": list(zip(item.labels, item.options)),
        "options": item.options,
        "labels": item.labels,
    }
    rendered = {
        name: _render(source, item_context, f"{where}:{name}") for name, source in blocks.items()
    }
    return _render(style.user, rendered, f"{where}:style {style.name}")


def render_prompt(
    blocks: dict[str, str],
    style: Style,
    item: Item,
    shots: list[tuple[Item, str]],
    where: str,
) -> RenderedPrompt:
    """Messages and text for ``item``; ``shots`` pairs each exemplar with its answer string."""
    messages: list[dict[str, str]] = []
    if style.system:
        messages.append({"role": "system", "content": style.system.strip()})
    for shot, answer in shots:
        messages.append({"role": "user", "content": user_turn(blocks, style, shot, where)})
        messages.append({"role": "assistant", "content": f"{ANSWER_PREFIX} {answer}"})
    messages.append({"role": "user", "content": user_turn(blocks, style, item, where)})
    return RenderedPrompt(
        messages=tuple(messages),
        text=flatten(messages),
        style=style.name,
    )


def flatten(messages: list[dict[str, str]]) -> str:
    """Plain-text form: turns separated by blank lines, each exemplar answer on its own line."""
    parts: list[str] = []
    for message in messages:
        if message["role"] == "assistant":
            parts[-1] = parts[-1] + "\n" + message["content"]
        else:
            parts.append(message["content"])
    return "\n\n".join(parts) + "\n"

"""Preparing a cell: one configuration's items, rendered, with candidates, gold and exemplars.

This is the one place where a configuration becomes what a model is asked. The reference runner
and every harness binding start from :func:`prepare_cell`, so prompts, candidates, gold mappings
and exemplar choice cannot drift between them.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from . import _registry
from .config import RunConfig
from .datafiles import DataSource, resolve_data_dir
from .errors import ConfigError
from .items import Item
from .prompts import RenderedPrompt, Style, benchmark_blocks, render_prompt, user_turn
from .subsets import Manifest, select
from .symmetric import mirrored, shifted

if TYPE_CHECKING:
    from .benchmarks.base import Benchmark
    from .models.hf import ChatFormatter


@dataclass(frozen=True)
class CellItem:
    """An evaluation item as the cell presents it."""

    item: Item
    """The normalised item (options, labels, gold, metadata)."""
    prompt: RenderedPrompt
    """Chat messages (system, exemplar turns, the item's turn) and their plain-text form."""
    user_turn: str
    """The item's own user message (the last message)."""
    answer_strings: tuple[str, ...]
    """What an answer to each option states (``B``, ``Yes``, or CrowS' sentence)."""
    context: str | None
    """The exact prompt string the model sees (chat template applied), when a formatter was given."""
    mirror: CellItem | None = None
    """The same item asked with its label-to-meaning mapping reversed (:mod:`.symmetric`), on a
    scoring path that asks both (``symmetric``); otherwise None."""
    shifts: tuple[CellItem, ...] = ()
    """The same item under cyclic shifts 1..n-1 (:func:`.symmetric.shifted`), on a scoring path
    that asks every option under every position (``cyclic``); otherwise empty."""

    @property
    def candidates(self) -> list[str]:
        """Continuations scored on the logprob path, after ``context + "Answer:"``."""
        return [" " + answer for answer in self.answer_strings]


@dataclass(frozen=True)
class Exemplar:
    """One entry of the benchmark's few-shot pool, with the answer it demonstrates."""

    item: Item
    answer: int
    """Index of the option the exemplar's answer turn states."""
    answer_string: str
    user_turn: str


@dataclass(frozen=True)
class Cell:
    """A prepared configuration: everything about the items, nothing about the model's answers."""

    config: RunConfig
    benchmark: Benchmark
    style: Style
    source: DataSource
    manifest: Manifest
    n_subset: int
    """Size of the benchmark's fixed subset (before ``limit``)."""
    items: tuple[CellItem, ...]
    """The evaluated items, in subset order."""
    pool: tuple[Exemplar, ...]
    """The whole exemplar pool in the order exemplars are used; the cell's shots are its first
    ``config.fewshot`` entries."""

    @property
    def shots(self) -> tuple[Exemplar, ...]:
        return self.pool[: self.config.fewshot]

    @property
    def system(self) -> str | None:
        return self.style.system.strip() if self.style.system else None

    def with_contexts(self, formatter: ChatFormatter) -> Cell:
        """The same cell with every item's exact prompt string rendered by ``formatter``."""
        def rendered(c: CellItem) -> CellItem:
            return replace(c, context=formatter.context_for(c.prompt.messages, c.prompt.text),
                           mirror=rendered(c.mirror) if c.mirror is not None else None,
                           shifts=tuple(rendered(s) for s in c.shifts))

        return replace(self, items=tuple(rendered(c) for c in self.items))

    def subset(self, start: int, stop: int) -> Cell:
        """The cell restricted to items ``start:stop`` (for chunked, resumable scoring)."""
        return replace(self, items=self.items[start:stop])

    @functools.cached_property
    def _by_id(self) -> dict[str, CellItem]:
        return {c.item.id: c for c in self.items}

    def item(self, item_id: str) -> CellItem:
        """The evaluated item with this id (bindings look items up once per sample)."""
        try:
            return self._by_id[item_id]
        except KeyError:
            raise ConfigError(f"item {item_id!r} is not in the {self.benchmark.name} subset",
                              "use an id from the subset manifest") from None


def asks_other_mappings(scorer: object) -> bool:
    """Whether a scoring path asks each item under more than the listed label mapping (mirrored or
    shifted): only direct templates, and no harness binding can express it."""
    return bool(getattr(scorer, "asks_mirrored", False) or getattr(scorer, "asks_shifted", False))


def prepare_cell(config: RunConfig, *, data_dir: str | os.PathLike[str] | DataSource | None = None,
                 formatter: ChatFormatter | None = None) -> Cell:
    """Load, select the subset, pick exemplars, render; with a ``formatter`` (a tokenizer and chat
    template, no weights) also the exact prompt string of every item."""
    bench = _registry.get_benchmark(config.benchmark)
    style = _registry.get_style(config.template)
    scorer = _registry.get_scorer(config.scoring)  # an unknown scoring path is refused here, for every binding
    if asks_other_mappings(scorer) and style.reasoning:
        raise ConfigError(f"scoring {config.scoring} asks each item under several label mappings and needs a direct "
                          f"template, not {style.name} (reasoning)",
                          f"use template minimal, persona or detailed with scoring {config.scoring} (in a grid: "
                          f"exclude {{template: {style.name}, scoring: {config.scoring}}})")
    source = data_dir if isinstance(data_dir, DataSource) else resolve_data_dir(data_dir)
    evals, pool_items, manifest = select(bench, bench.load(source))
    if config.fewshot > len(pool_items):
        raise ConfigError(f"{bench.name} has {len(pool_items)} exemplars, fewshot={config.fewshot} asked",
                          f"use fewshot <= {len(pool_items)}")
    blocks = benchmark_blocks(str(_registry.template_file(bench)))
    where = f"{bench.name}/{style.name}"
    pool = []
    for position, shot in enumerate(pool_items):
        answer = bench.shot_answer(shot, position)
        pool.append(Exemplar(item=shot, answer=answer, answer_string=bench.answer_string(shot, answer),
                             user_turn=user_turn(blocks, style, shot, where)))
    shots = [(e.item, e.answer_string) for e in pool[: config.fewshot]]
    chosen = evals[: config.limit] if config.limit else evals
    # The second asking of a symmetric path uses the reversed mapping throughout, exemplars included.
    mirrored_shots = []
    for e in pool[: config.fewshot]:
        flipped = mirrored(e.item)
        mirrored_shots.append((flipped, bench.answer_string(flipped, len(flipped.options) - 1 - e.answer)))

    def presented(item: Item, shots: list[tuple[Item, str]] = shots) -> CellItem:
        prompt = render_prompt(blocks, style, item, shots, where=where)
        return CellItem(
            item=item, prompt=prompt, user_turn=prompt.messages[-1]["content"],
            answer_strings=tuple(bench.answer_string(item, i) for i in range(len(item.options))),
            context=formatter.context_for(prompt.messages, prompt.text) if formatter is not None else None,
        )

    def shifted_shots(k: int) -> list[tuple[Item, str]]:
        # each exemplar under the same shift (modulo its own number of options)
        return [(shifted(e.item, k % len(e.item.options)),
                 bench.answer_string(shifted(e.item, k % len(e.item.options)),
                                     (e.answer - k) % len(e.item.options))) for e in pool[: config.fewshot]]

    items = []
    for item in chosen:
        cell_item = presented(item)
        if scorer.asks_mirrored:
            cell_item = replace(cell_item, mirror=presented(mirrored(item), mirrored_shots))
        if getattr(scorer, "asks_shifted", False):  # (asks_other_mappings covers both kinds above)
            cell_item = replace(cell_item, shifts=tuple(presented(shifted(item, k), shifted_shots(k))
                                                        for k in range(1, len(item.options))))
        items.append(cell_item)
    return Cell(config=config, benchmark=bench, style=style, source=source, manifest=manifest,
                n_subset=len(evals), items=tuple(items), pool=tuple(pool))

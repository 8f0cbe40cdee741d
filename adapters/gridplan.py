"""The grid's plan as model requests: cells -> the ordered unique requests -> fixed batches.

The frozen plan (``grid.plan``) is expanded, before any weight loads, into the ordered list of the
grid's *unique* model requests: a request several cells make (decoding-independent logprob cells,
the same generation asked by two cells) is computed once. Requests run in fixed batches computed
from the plan (never from what is already done), and a sampled generation is seeded from the grid
seed and its own content, so a resumed run computes exactly the requests, batches and seeds an
uninterrupted run would.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .cell import Cell, prepare_cell
from .config import RunConfig
from .errors import ConfigError
from .grid import GridConfig, repeated
from .hashing import derived_seed, sha256_json
from .scoring import generation_budget, logprob_context

__all__ = ["CellRequests", "GridPlan", "Request", "run_anchor", "whole_batches"]


@dataclass(frozen=True)
class Request:
    """One model request. ``after`` names the generation whose output completes ``context``
    (cot x logprob: the candidates are scored after the reasoning)."""

    model: str
    kind: str  # "generate" | "loglikelihood"
    context: str
    continuation: str | None = None
    temperature: float = 0.0
    max_new_tokens: int = 0
    seed: int | None = None
    after: str | None = None
    repeat: int | None = None
    """1 for the repeat gate's second asking (a separate request, with its own sampling seed)."""

    def body(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @property
    def key(self) -> str:
        return sha256_json(self.body())

    def compatible(self, other: Request) -> bool:
        """Batched together: same kind; generations with the same budget, greedy with greedy and
        sampled with sampled (each sampled row has its own temperature and seed); dependent
        requests run on their own."""
        return (self.kind == other.kind and (self.temperature == 0.0) == (other.temperature == 0.0)
                and self.max_new_tokens == other.max_new_tokens and self.after is None and other.after is None)


@dataclass
class CellRequests:
    cell: dict[str, Any]
    """The plan's cell."""
    prepared: Cell
    generation: list[str | None]
    """Per item: the key of its generation (regex answer or cot reasoning)."""
    scored: list[list[str]]
    """Per item: the keys of its candidates' loglikelihood requests."""


def whole_batches(batches: list[tuple[int, int]], done: int) -> int:
    """Of ``done`` logged requests, how many complete batches hold (a partly done batch is recomputed)."""
    return max((stop for _, stop in batches if stop <= done), default=0)


class GridPlan:
    """The plan's cells prepared for their models, and the ordered unique requests they make."""

    def __init__(self, frozen: dict[str, Any], grid: GridConfig, data_dir: str | os.PathLike[str] | None) -> None:
        from .models.endpoint import formatter_for

        self.frozen, self.grid = frozen, grid
        self.requests: dict[str, Request] = {}
        self.cells: list[CellRequests] = []
        self.repeats: list[CellRequests] = []
        """The repeat gate's cells (plan order), asked again right after their model's cells."""
        formatters = {m.name: formatter_for(m.spec) for m in grid.models}
        cells = frozen["cells"]
        for n, cell in enumerate(cells):
            config = RunConfig.model_validate(cell["config"])
            prepared = prepare_cell(config, data_dir=data_dir, formatter=formatters[cell["model"]])
            if config.limit is not None and config.limit > prepared.n_subset:
                raise ConfigError(f"grid limit {config.limit} exceeds the {prepared.n_subset} items of "
                                  f"{config.benchmark}", f"use limit <= {prepared.n_subset}")
            self.cells.append(self._cell_requests(cell, config, prepared))
            if n + 1 == len(cells) or cells[n + 1]["model"] != cell["model"]:  # model-major: its last cell
                for done in self.cells:
                    if done.cell["model"] == cell["model"] and repeated(grid, done.cell):
                        self.repeats.append(self._cell_requests(done.cell, done.prepared.config, done.prepared,
                                                                repeat=1))
        self.keys = list(self.requests)
        self.batches = self._batches()

    def _add(self, request: Request) -> str:
        self.requests.setdefault(request.key, request)
        return request.key

    def _cell_requests(self, cell: dict[str, Any], config: RunConfig, prepared: Cell, *,
                       repeat: int | None = None) -> CellRequests:
        style, model = prepared.style, cell["model"]
        generation: list[str | None] = []
        scored: list[list[str]] = []
        budget = generation_budget(config, style)
        for c in prepared.items:
            context = c.context or ""
            gen_key = None
            if config.scoring == "regex" or style.reasoning:
                gen = Request(model, "generate", context, temperature=config.temperature, max_new_tokens=budget,
                              repeat=repeat)
                if config.temperature > 0:  # seeded by the grid seed and the request itself (a repeat: its own seed)
                    gen = Request(model, "generate", context, temperature=config.temperature, max_new_tokens=budget,
                                  seed=derived_seed(f"{self.grid.seed}|{gen.key}"), repeat=repeat)
                gen_key = self._add(gen)
            keys = []
            if c.mirror is not None:  # symmetric: the candidates as listed, then under the reversed mapping
                for asked in (c, c.mirror):
                    keys += [self._add(Request(model, "loglikelihood", logprob_context(asked.context or ""), candidate,
                                               repeat=repeat)) for candidate in asked.candidates]
            elif config.scoring == "logprob":
                for candidate in c.candidates:
                    if style.reasoning:
                        keys.append(self._add(Request(model, "loglikelihood", context, candidate, after=gen_key,
                                                      repeat=repeat)))
                    else:
                        keys.append(self._add(Request(model, "loglikelihood", logprob_context(context), candidate,
                                                      repeat=repeat)))
            generation.append(gen_key)
            scored.append(keys)
        return CellRequests(cell=cell, prepared=prepared, generation=generation, scored=scored)

    def _batches(self) -> list[tuple[int, int]]:
        """Fixed ``[start, stop)`` ranges of the request list (by ``batch_size``, never mixing
        incompatible requests or models): the same on every run of this plan."""
        batches, start = [], 0
        size = self.grid.batch_size
        for n in range(1, len(self.keys) + 1):
            if n == len(self.keys) or n - start >= size or not (
                    self.requests[self.keys[n]].model == self.requests[self.keys[start]].model
                    and self.requests[self.keys[start]].compatible(self.requests[self.keys[n]])):
                batches.append((start, n))
                start = n
        return batches

    def keep(self, done: int) -> int:
        """How many logged requests a resumed run keeps: those of complete batches."""
        return whole_batches(self.batches, done)


def run_anchor(frozen: dict[str, Any], prepared: GridPlan, identities: dict[str, Any], versions: dict[str, str]) -> str:
    """What ``events.jsonl`` belongs to: this plan, its request list, these models and libraries."""
    return sha256_json({"plan_sha256": frozen["plan_sha256"], "requests": prepared.keys,
                        "models": identities, "versions": versions})

"""The engine's plan: cells -> the ordered unique model requests -> fixed batches.

Each cell's scorer says what every item asks (:meth:`~.scoring.Scorer.requests`, in the core's
request vocabulary); :class:`RequestPlan` turns those into :class:`ModelRequest` s -- the same
request with its model, its sampling seed and, for a loglikelihood after a generation, that
generation's key -- and keeps each once: a request several cells make (decoding-independent
logprob cells, the same generation asked by two cells) is computed once. Requests run in fixed
batches computed from the plan (never from what is already done), and a sampled generation is
seeded from the plan's seed and its own content, so a resumed run computes exactly the requests,
batches and seeds an uninterrupted run would.

A cot x logprob cell asks each item's generation and then the candidates after it, so its
generations are batches of one row between their dependents. :attr:`RequestPlan.decode_groups`
names the runs of such small generation batches that are decoded together, always whole
(:meth:`RequestPlan.computed_with`): a function of the plan alone, like the batches, so a resumed
run, a Ray shard and the replay gate compute each generation among the same rows.

:class:`GridPlan` is a frozen grid plan's (``grid.plan``); ``safetyrepro run`` plans its one cell
the same way (``runner.py``), so one configuration is one measurement on every path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from . import _registry
from .cell import Cell, prepare_cell
from .config import RunConfig
from .errors import ConfigError
from .grid import GridConfig, repeated
from .hashing import derived_seed, sha256_json
from .requests import GENERATE, Request
from .scoring import check_requests

__all__ = ["CellRequests", "GridPlan", "ModelRequest", "RequestPlan", "run_anchor", "whole_batches"]


@dataclass(frozen=True)
class ModelRequest:
    """One model request as the log keeps it: a :class:`~.requests.Request` with the model that
    answers it, its sampling seed, and ``after`` as the *key* of the generation whose output
    completes ``context`` (cot x logprob: the candidates are scored after the reasoning). Its
    body's canonical JSON hash is its key (field names and defaults are frozen: they are in every
    plan's request list)."""

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

    def compatible(self, other: ModelRequest) -> bool:
        """Batched together: same kind; generations with the same budget, greedy with greedy and
        sampled with sampled (each sampled row has its own temperature and seed); dependent
        requests run on their own."""
        return (self.kind == other.kind and (self.temperature == 0.0) == (other.temperature == 0.0)
                and self.max_new_tokens == other.max_new_tokens and self.after is None and other.after is None)


@dataclass
class CellRequests:
    cell: dict[str, Any]
    """The plan's cell (at least ``model``; a grid's has its factors, ids and hashes)."""
    prepared: Cell
    asked: list[list[str]]
    """Per item: the keys of its requests, in the scorer's order (responses are read in it)."""

    def keys(self) -> list[str]:
        """The unique requests the cell's results rest on, in order."""
        return list(dict.fromkeys(k for keys in self.asked for k in keys))


def whole_batches(batches: list[tuple[int, int]], done: int) -> int:
    """Of ``done`` logged requests, how many complete batches hold (a partly done batch is recomputed)."""
    return max((stop for _, stop in batches if stop <= done), default=0)


class RequestPlan:
    """Cells' requests, each unique one once, in the order the cells ask them, then fixed batches."""

    def __init__(self, seed: int, batch_size: int) -> None:
        self.seed, self.batch_size = seed, batch_size
        self.requests: dict[str, ModelRequest] = {}
        self.cells: list[CellRequests] = []
        self.repeats: list[CellRequests] = []
        """The repeat gate's cells (plan order), asked again right after their model's cells."""
        self.keys: list[str] = []
        self.batches: list[tuple[int, int]] = []
        self.decode_groups: list[tuple[int, ...]] = []
        """Indexes of generation batches decoded together, whole (:meth:`_decode_groups`)."""
        self._group_of: dict[int, tuple[int, ...]] = {}

    def add_cell(self, cell: dict[str, Any], prepared: Cell, *, repeat: int | None = None) -> CellRequests:
        """Plan one cell's items through its scorer (``cell["model"]`` answers them)."""
        scorer = _registry.get_scorer(prepared.config.scoring)
        asked = []
        for c in prepared.items:
            requests = scorer.requests(c, prepared.style, prepared.config)
            check_requests(scorer, prepared.style, requests, f"item {c.item.id}")
            keys: list[str] = []
            for request in requests:
                keys.append(self._add(self._model_request(cell["model"], request, keys, repeat)))
            asked.append(keys)
        done = CellRequests(cell=cell, prepared=prepared, asked=asked)
        (self.cells if repeat is None else self.repeats).append(done)
        return done

    def _model_request(self, model: str, request: Request, keys: list[str], repeat: int | None) -> ModelRequest:
        found = ModelRequest(model, request.kind, request.context, request.continuation, request.temperature,
                             request.max_new_tokens, after=keys[request.after] if request.after is not None else None,
                             repeat=repeat)
        if request.kind == GENERATE and request.temperature > 0:
            # seeded by the plan's seed and the request itself (a repeat: its own seed)
            found = replace(found, seed=derived_seed(f"{self.seed}|{found.key}"))
        return found

    def _add(self, request: ModelRequest) -> str:
        self.requests.setdefault(request.key, request)
        return request.key

    def freeze(self) -> None:
        """The request order and the batches, once every cell is added."""
        self.keys = list(self.requests)
        self.batches = self._batches()
        self.decode_groups = self._decode_groups()
        self._group_of = {index: group for group in self.decode_groups for index in group}

    def _batches(self) -> list[tuple[int, int]]:
        """Fixed ``[start, stop)`` ranges of the request list (by ``batch_size``, never mixing
        incompatible requests or models): the same on every run of this plan."""
        batches, start = [], 0
        size = self.batch_size
        for n in range(1, len(self.keys) + 1):
            if n == len(self.keys) or n - start >= size or not (
                    self.requests[self.keys[n]].model == self.requests[self.keys[start]].model
                    and self.requests[self.keys[start]].compatible(self.requests[self.keys[n]])):
                batches.append((start, n))
                start = n
        return batches

    def _decode_groups(self) -> list[tuple[int, ...]]:
        """Generation batches smaller than ``batch_size`` that follow one another with only their
        own dependents between them (a cot x logprob cell: generation, its candidates, the next
        generation, ...), of one model and compatible, grouped up to ``batch_size`` rows.

        Why: a decoding step costs nearly as much for one row as for eight on a CPU (it streams
        every weight once), and these generations are one-row batches only because their
        dependents must follow them in the log. Decoded together they take one group's steps
        instead of one per row. Always whole -- even on resume, where some members are logged --
        because a row's last bits depend on the rows beside it."""
        groups: list[tuple[int, ...]] = []
        current: list[int] = []
        rows, members = 0, set()

        def close() -> None:
            if len(current) > 1:
                groups.append(tuple(current))
            current.clear()

        for index, (start, stop) in enumerate(self.batches):
            requests = [self.requests[k] for k in self.keys[start:stop]]
            first = requests[0]
            if current and all(r.after in members for r in requests):
                continue  # what continues a member: computed between members, after its generation
            if first.kind != GENERATE or stop - start >= self.batch_size:
                close()
                continue
            lead = self.requests[self.keys[self.batches[current[0]][0]]] if current else None
            if lead is None or not (lead.model == first.model and lead.compatible(first)
                                    and rows + stop - start <= self.batch_size):
                close()
                rows, members = 0, set()
            current.append(index)
            rows += stop - start
            members.update(r.key for r in requests)
        close()
        return groups

    def computed_with(self, index: int) -> list[str]:
        """The keys the plan's batch ``index`` is computed with: its decode group's generations
        (plan order) where it is in one, else its own."""
        group = self._group_of.get(index, (index,))
        return [k for i in group for k in self.keys[slice(*self.batches[i])]]

    def keep(self, done: int) -> int:
        """How many logged requests a resumed run keeps: those of complete batches."""
        return whole_batches(self.batches, done)


class GridPlan(RequestPlan):
    """A frozen grid plan's cells prepared for their models, and the requests they make."""

    def __init__(self, frozen: dict[str, Any], grid: GridConfig, data_dir: str | os.PathLike[str] | None) -> None:
        from .models.endpoint import formatter_for

        super().__init__(grid.seed, grid.batch_size)
        self.frozen, self.grid = frozen, grid
        formatters = {m.name: formatter_for(m.spec) for m in grid.models}
        cells = frozen["cells"]
        for n, cell in enumerate(cells):
            config = RunConfig.model_validate(cell["config"])
            prepared = prepare_cell(config, data_dir=data_dir, formatter=formatters[cell["model"]])
            if config.limit is not None and config.limit > prepared.n_subset:
                raise ConfigError(f"grid limit {config.limit} exceeds the {prepared.n_subset} items of "
                                  f"{config.benchmark}", f"use limit <= {prepared.n_subset}")
            self.add_cell(cell, prepared)
            if n + 1 == len(cells) or cells[n + 1]["model"] != cell["model"]:  # model-major: its last cell
                for done in list(self.cells):
                    if done.cell["model"] == cell["model"] and repeated(grid, done.cell):
                        self.add_cell(done.cell, done.prepared, repeat=1)
        self.freeze()


def run_anchor(frozen: dict[str, Any], prepared: RequestPlan, identities: dict[str, Any], versions: dict[str, str],
               prereg_sha256: str | None = None) -> str:
    """What ``events.jsonl`` belongs to: this plan, its request list, the identities of the models
    that answer a request in it, and the libraries. (A grid model whose every cell is excluded
    answers nothing and is not in the log, so ``verify``, which reads the identities from the
    log, could not name it: it is left out of the anchor on both sides.) A preregistered run's
    anchor also names its record's final chain hash, so the log -- and every hash quoted from
    it -- commits to the record; a run without one keeps the anchor it always had."""
    asked = {request.model for request in prepared.requests.values()}
    anchor = {"plan_sha256": frozen["plan_sha256"], "requests": prepared.keys,
              "models": {name: ident for name, ident in identities.items() if name in asked}, "versions": versions}
    if prereg_sha256 is not None:
        anchor["prereg_record_sha256"] = prereg_sha256
    return sha256_json(anchor)

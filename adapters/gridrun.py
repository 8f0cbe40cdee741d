"""Running a grid on an append-only, hash-chained log of every model request and response.

The frozen plan (``grid.plan``) is expanded, before any weight loads, into the ordered list of the
grid's *unique* model requests: a request several cells make (decoding-independent logprob cells,
the same generation asked by two cells) is computed once. ``events.jsonl`` (``journal.py``
format, anchored to the plan hash and this request list) gets one entry per request, in plan
order: the request body and its SHA-256, the raw response and its SHA-256, the UTC time, the
model's identity (name, weights SHA-256), library versions and the retry count.

Requests run in fixed batches computed from the plan (never from what is already done), and a
sampled generation is seeded from the grid seed and its own content and run on its own, so a run
that is killed at any moment and resumed computes exactly the requests, batches and seeds an
uninterrupted run would: results are byte-identical. A run resumes only if its log is a prefix
of this plan; a torn last line is cut and reported; a partly done batch is recomputed.

Results, computed from the logged responses only (cells x items through the core's readout):
``cells/<cell_id>/records.jsonl`` and ``summary.json``, ``cells.parquet`` (one row per cell x
metric, every factor a column), then ``manifest.json`` (SHA-256 of every artefact).
:func:`verify` re-checks chain, plan prefix, completeness and manifest, read-only.

Sharding later: the request list splits by model (each shard loads one model once) and then by
batch ranges; each shard can keep its own chained segment and a driver merges segments in plan
order into the same ``events.jsonl`` (see the README).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cell import Cell, prepare_cell
from .config import RunConfig
from .errors import ConfigError
from .grid import GridConfig, build_grid, plan
from .journal import Journal, verify as verify_journal
from .scoring import generation_budget, logprob_context, make_record, score_generation, score_loglikelihoods

EVENTS = "events.jsonl"
PLAN = "plan.json"
MANIFEST = "manifest.json"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


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

    def body(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @property
    def key(self) -> str:
        return _sha(_canonical(self.body()))

    def compatible(self, other: Request) -> bool:
        """Batched together: same kind and decoding; sampled generations and dependent requests
        run on their own."""
        return (self.kind == other.kind and self.temperature == other.temperature == 0.0
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


class GridPlan:
    """The plan's cells prepared for their models, and the ordered unique requests they make."""

    def __init__(self, frozen: dict[str, Any], grid: GridConfig, data_dir: str | os.PathLike[str] | None) -> None:
        from .models.hf import ChatFormatter

        self.frozen, self.grid = frozen, grid
        self.requests: dict[str, Request] = {}
        self.cells: list[CellRequests] = []
        formatters = {m.name: ChatFormatter(m.spec) for m in grid.models}
        for cell in frozen["cells"]:
            config = RunConfig.model_validate(cell["config"])
            prepared = prepare_cell(config, data_dir=data_dir, formatter=formatters[cell["model"]])
            if config.limit is not None and config.limit > prepared.n_subset:
                raise ConfigError(f"grid limit {config.limit} exceeds the {prepared.n_subset} items of "
                                  f"{config.benchmark}", f"use limit <= {prepared.n_subset}")
            self.cells.append(self._cell_requests(cell, config, prepared))
        self.keys = list(self.requests)
        self.batches = self._batches()

    def _add(self, request: Request) -> str:
        self.requests.setdefault(request.key, request)
        return request.key

    def _cell_requests(self, cell: dict[str, Any], config: RunConfig, prepared: Cell) -> CellRequests:
        style, model = prepared.style, cell["model"]
        generation: list[str | None] = []
        scored: list[list[str]] = []
        budget = generation_budget(config, style)
        for c in prepared.items:
            context = c.context or ""
            gen_key = None
            if config.scoring == "regex" or style.reasoning:
                gen = Request(model, "generate", context, temperature=config.temperature, max_new_tokens=budget)
                if config.temperature > 0:  # seeded by the grid seed and the request itself
                    gen = Request(model, "generate", context, temperature=config.temperature, max_new_tokens=budget,
                                  seed=int(_sha(f"{self.grid.seed}|{gen.key}")[:8], 16))
                gen_key = self._add(gen)
            keys = []
            if config.scoring == "logprob":
                for candidate in c.candidates:
                    if style.reasoning:
                        keys.append(self._add(Request(model, "loglikelihood", context, candidate, after=gen_key)))
                    else:
                        keys.append(self._add(Request(model, "loglikelihood", logprob_context(context), candidate)))
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
        return max((stop for _, stop in self.batches if stop <= done), default=0)


# ---- running -----------------------------------------------------------------------------------

def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("safetyrepro", "torch", "transformers", "tokenizers", "bitsandbytes"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def weights_sha256(folder: str) -> str:
    """SHA-256 over the model folder's weight files (name and bytes, sorted): the model's identity."""
    digest = hashlib.sha256()
    root = Path(folder)
    for path in sorted(p for p in root.iterdir() if p.suffix in (".safetensors", ".bin", ".gguf") and p.is_file()):
        digest.update(path.name.encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _execute(requests: list[Request], lm: Any, responses: dict[str, Any]) -> list[Any]:
    """One batch through the model (the core's LanguageModel)."""
    import torch

    first = requests[0]
    if first.kind == "generate":
        if first.seed is not None:
            torch.manual_seed(first.seed)
        return list(lm.generate([r.context for r in requests], temperature=first.temperature,
                                max_new_tokens=first.max_new_tokens, batch_size=len(requests)))
    pairs = []
    for r in requests:
        context = r.context
        if r.after is not None:
            context = logprob_context(r.context, responses[r.after])
        pairs.append((context, r.continuation or ""))
    return [[ll, greedy] for ll, greedy in lm.loglikelihood(pairs, batch_size=len(requests))]


def run_grid(grid: GridConfig, out: Path, *, data_dir: str | os.PathLike[str] | None = None, overwrite: bool = False,
             notify: Callable[[str], None] = print, show_progress: bool = True) -> dict[str, Any]:
    """Plan, run (or resume) and write the results of a grid into ``out``; the run summary."""
    from tqdm.auto import tqdm

    from .runner import load_model

    frozen = plan(grid)
    out.mkdir(parents=True, exist_ok=True)
    plan_path = out / PLAN
    if plan_path.exists():
        existing = json.loads(plan_path.read_text())
        if existing.get("plan_sha256") != frozen["plan_sha256"] and not overwrite:
            first = next((f"cell {a['index']} ({a['cell_id']} vs {b['cell_id']})"
                          for a, b in zip(existing.get("cells", []), frozen["cells"]) if a != b),
                         f"the grid ({len(existing.get('cells', []))} vs {len(frozen['cells'])} cells)")
            raise ConfigError(f"{out} holds another plan (first difference: {first})",
                              "run the grid that made it, choose another --out, or pass --overwrite")
        if existing.get("plan_sha256") != frozen["plan_sha256"] or overwrite:
            for name in (EVENTS, MANIFEST, "cells.parquet"):
                (out / name).unlink(missing_ok=True)
    if (out / MANIFEST).exists() and not overwrite:
        notify(f"{out}: this plan is already complete (verify it with `safetyrepro verify {out}`)")
        return json.loads((out / "summary.json").read_text())
    notify(f"planning {len(frozen['cells'])} cells ...")
    prepared = GridPlan(frozen, grid, data_dir)
    _write_atomic(plan_path, (json.dumps(frozen, indent=1) + "\n").encode())
    anchor = _sha(_canonical({"plan_sha256": frozen["plan_sha256"], "requests": prepared.keys}))
    journal = Journal(out / EVENTS, anchor, prepared.keys)
    resumed = journal.open(align=prepared.keep)
    for note in resumed.notes:
        notify(note)
    responses: dict[str, Any] = {}
    for key, body in zip(prepared.keys, resumed.bodies):
        responses[key] = body["response"]
    if resumed.bodies:
        notify(f"resuming: {len(resumed.bodies)} of {len(prepared.keys)} requests already in {EVENTS}")
    versions = _versions()
    identities: dict[str, dict[str, str]] = {}
    models = {m.name: m for m in grid.models}
    with tqdm(total=len(prepared.keys), initial=len(resumed.bodies), desc="requests", disable=not show_progress) as bar:
        for start, stop in prepared.batches:
            if stop <= len(resumed.bodies):
                continue
            requests = [prepared.requests[k] for k in prepared.keys[start:stop]]
            name = requests[0].model
            lm = load_model(models[name].spec)
            if name not in identities:
                identities[name] = {"name": name, "path": models[name].path, "weights_sha256":
                                    weights_sha256(lm.info.weights_path)}
            results = _execute(requests, lm, responses)
            for key, request, result in zip(prepared.keys[start:stop], requests, results):
                responses[key] = result
                journal.append(key, {
                    "request": request.body(), "request_sha256": request.key,
                    "response": result, "response_sha256": _sha(_canonical(result)),
                    "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
                    "model": identities[name], "versions": versions, "retries": 0})
            bar.update(stop - start)
            from . import atomic

            atomic.pause_point(f"after-request-{stop}", out.parent)
    return _write_results(out, frozen, prepared, responses)


def _write_results(out: Path, frozen: dict[str, Any], prepared: GridPlan, responses: dict[str, Any]) -> dict[str, Any]:
    import pandas as pd

    rows = []
    for cr in prepared.cells:
        cell, p = cr.cell, cr.prepared
        bench, config = p.benchmark, p.config
        records = []
        for c, gen_key, keys in zip(p.items, cr.generation, cr.scored):
            output = responses[gen_key] if gen_key is not None else None
            if config.scoring == "regex":
                records.append(make_record(p, c, score_generation(bench, c.item, output, extraction=config.extraction)))
                continue
            scored = [responses[k] for k in keys]
            context = logprob_context(c.context or "", output if p.style.reasoning else None)
            outcome = score_loglikelihoods(bench, c.item, [s[0] for s in scored], is_greedy=[s[1] for s in scored],
                                           reasoning=output)
            records.append(make_record(p, c, outcome, logprob_context=context))
        metrics = bench.measure(records, seed=config.seed, n_resamples=config.n_resamples)
        folder = out / "cells" / cell["cell_id"]
        _write_atomic(folder / "records.jsonl", "".join(r.model_dump_json() + "\n" for r in records).encode())
        summary = {"cell": {k: v for k, v in cell.items() if k != "config"}, "config": cell["config"],
                   "plan_sha256": frozen["plan_sha256"], "metrics": {k: v.model_dump() for k, v in metrics.items()},
                   "counts": {"items": len(records), "unparsed": sum(r.prediction is None for r in records)}}
        _write_atomic(folder / "summary.json", (json.dumps(summary, indent=1) + "\n").encode())
        for name, value in metrics.items():
            rows.append({"cell_id": cell["cell_id"], "model": cell["model"], "benchmark": cell["benchmark"],
                         "template": cell["template"], "scoring": cell["scoring"], "fewshot": cell["fewshot"],
                         "decoding": cell["decoding"], "metric": name, "primary": name == bench.primary_metric,
                         "value": value.value, "ci_low": value.ci_low, "ci_high": value.ci_high, "n": value.n,
                         "config_sha256": cell["config_sha256"], "plan_sha256": frozen["plan_sha256"]})
    table = pd.DataFrame(rows)
    tmp = out / ".cells.parquet.tmp"
    table.to_parquet(tmp, index=False)
    os.replace(tmp, out / "cells.parquet")
    asked = sum(sum(k is not None for k in cr.generation) + sum(len(s) for s in cr.scored) for cr in prepared.cells)
    summary = {"plan_sha256": frozen["plan_sha256"], "cells": len(prepared.cells), "requests": len(prepared.keys),
               "requests_asked_by_cells": asked}
    _write_atomic(out / "summary.json", (json.dumps(summary, indent=1) + "\n").encode())
    _write_atomic(out / MANIFEST, (json.dumps(manifest(out), indent=1, sort_keys=True) + "\n").encode())
    return summary


def manifest(out: Path) -> dict[str, str]:
    """SHA-256 of every artefact of a grid run (everything but the manifest itself)."""
    from .datafiles import sha256_of

    files = [PLAN, EVENTS, "cells.parquet", "summary.json"]
    files += sorted(str(p.relative_to(out)) for p in (out / "cells").rglob("*") if p.is_file())
    return {name: sha256_of(out / name) for name in files if (out / name).is_file()}


def verify(out: Path) -> list[str]:
    """Everything wrong with a finished grid run, read-only: the plan (recomputed from its own
    grid), the log (chain, plan order, completeness), the manifest (every artefact's hash, nothing
    missing, nothing added). An empty list: intact."""
    problems: list[str] = []
    try:
        frozen = json.loads((out / PLAN).read_text())
        grid = build_grid(frozen["grid"], source=str(out / PLAN))
    except (OSError, ValueError, KeyError, ConfigError) as exc:
        return [f"{PLAN} is missing or unreadable ({type(exc).__name__})"]
    if plan(grid) != frozen:
        problems.append(f"{PLAN} is not the plan of its own grid (edited)")
    try:
        prepared = GridPlan(frozen, grid, None)
    except ConfigError as exc:
        return problems + [f"the plan cannot be prepared here ({exc.what})"]
    anchor = _sha(_canonical({"plan_sha256": frozen["plan_sha256"], "requests": prepared.keys}))
    problems += verify_journal(out / EVENTS, anchor, prepared.keys)
    if not problems:
        entries = (out / EVENTS).read_bytes().count(b"\n") - 1
        if entries != len(prepared.keys):
            problems.append(f"{EVENTS} holds {entries} of the plan's {len(prepared.keys)} requests (truncated)")
    try:
        recorded = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return problems + [f"{MANIFEST} is missing or unreadable"]
    present = manifest(out)
    for name in sorted(set(recorded) | set(present)):
        if name not in present:
            problems.append(f"{name} is listed in the manifest but missing (deleted)")
        elif name not in recorded:
            problems.append(f"{name} is not in the manifest (added)")
        elif recorded[name] != present[name]:
            problems.append(f"{name} does not match its manifest hash (edited)")
    return problems

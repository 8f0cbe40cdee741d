"""Running a grid on an append-only, hash-chained log of every model request and response.

The frozen plan (``grid.plan``) is expanded, before any weight loads, into the ordered list of the
grid's *unique* model requests: a request several cells make (decoding-independent logprob cells,
the same generation asked by two cells) is computed once. ``events.jsonl`` (``journal.py``
format, anchored to the plan hash and this request list) gets one entry per request, in plan
order: the request body and its SHA-256, the raw response and its SHA-256, the UTC time, the
model's identity (name, weights SHA-256), library versions, the retry count and, for local
weights, the torch thread count that computed it (a loglikelihood's last bits depend on it).

Requests run in fixed batches computed from the plan (never from what is already done), a
sampled generation is seeded from the grid seed and its own content (its own generator, in any
batch), and local weights compute on context states that are computed one way whatever an earlier
batch cached (``models/prefix.py``), so a run that is killed at any moment and resumed computes
exactly the requests, batches and seeds an uninterrupted run would: results are byte-identical.
A run resumes only if its log is a prefix of this plan; a torn last line is cut and reported; a
partly done batch is recomputed.

Results, computed from the logged responses only (cells x items through the core's readout):
``cells/<cell_id>/records.jsonl`` and ``summary.json``, ``cells.parquet`` (one row per cell x
metric, every factor a column), then ``manifest.json`` (SHA-256 of every artefact).
:func:`verify` re-checks chain, plan prefix, completeness and manifest, read-only.

Executors: :func:`open_run` opens (or resumes) the run, an executor computes the remaining
batches and records each request's entry in plan order, :meth:`OpenRun.finish` writes the
results. :func:`run_local` computes in this process; ``gridray.on_ray`` splits the remaining
batches into shards by model and block, runs each as a Ray task with its own chained segment and
merges the segments in plan order (the same entries, so the same results).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import atomic
from .atomic import pause_point, replace_file
from .cell import Cell, prepare_cell
from .config import RunConfig
from .errors import ConfigError
from .grid import GridConfig, build_grid, plan, repeated
from .journal import Journal, verify as verify_journal
from .symmetric import summary as symmetric_summary
from .runner import _versions
from .scoring import (generation_budget, logprob_context, make_record, score_generation, score_loglikelihoods,
                      score_symmetric)

EVENTS = "events.jsonl"
PLAN = "plan.json"
MANIFEST = "manifest.json"
REPEATS = "repeats.parquet"
"""The repeat gate's cells measured again (``cells.parquet``'s columns plus ``repeat``)."""
REPEAT_FOLDER = "repeat"
"""``cells/<cell_id>/repeat/``: a repeated cell's second records and summary."""


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
    repeat: int | None = None
    """1 for the repeat gate's second asking (a separate request, with its own sampling seed)."""

    def body(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @property
    def key(self) -> str:
        return _sha(_canonical(self.body()))

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


@contextlib.contextmanager
def pinned_threads(count: int | None) -> Iterator[None]:
    """torch computes with ``count`` threads inside (a loglikelihood's last bits depend on it), and
    the caller's setting is back afterwards (``None``: left as it is)."""
    if count is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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
                                  seed=int(_sha(f"{self.grid.seed}|{gen.key}")[:8], 16), repeat=repeat)
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


# ---- running -----------------------------------------------------------------------------------

def weights_sha256(folder: str) -> str:
    """SHA-256 over the model folder's weight files (name and bytes, sorted): the model's identity.
    An HF id is resolved to its local snapshot; one that cannot be is identified by name only
    (``id:`` prefix), which the log then says."""
    digest = hashlib.sha256()
    root = Path(folder)
    if not root.is_dir():
        try:
            from huggingface_hub import snapshot_download

            root = Path(snapshot_download(folder, local_files_only=True))
        except Exception:  # noqa: BLE001 - any failure means: not resolvable to bytes here
            return "id:" + folder
    for path in sorted(p for p in root.iterdir() if p.suffix in (".safetensors", ".bin", ".gguf") and p.is_file()):
        digest.update(path.name.encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def identity(model: Any) -> dict[str, Any]:
    """What a model's responses depend on: its weights and the runtime that computes with them
    (NF4 on CPU depends on the CPU's kernel path; thread count moves nothing measurable)."""
    from .models.base import runtime_facts
    from .models.hf import weights_path

    if model.endpoint is not None:  # what the observer knows of a server, by its identity level
        e = model.endpoint
        weights = f"id:{e.model}@{e.url}"
        if e.identity == "L2":
            weights = weights_sha256(weights_path(model.spec))
            if weights.startswith("id:") or weights == hashlib.sha256().hexdigest():
                raise ConfigError(f"model {model.name} claims identity L2, and {model.path!r} holds no weight files "
                                  "here to hash", "set path to the local folder the server was started from, "
                                  "or claim identity L0 / L1")
        # (concurrency is the plan's, not the model's: a replay may run at another one)
        return {"name": model.name, "path": model.path, "quantization": "server", "dtype": "server",
                "weights_sha256": weights,
                "runtime": {"endpoint": e.url, "served_model": e.model, "api": e.api, "identity": e.identity}
                | ({"mirrors": list(e.mirrors)} if e.mirrors else {})}
    from .models.prefix import ENGINE

    facts = runtime_facts(model.quantization, "cpu")
    found = {"name": model.name, "path": model.path, "quantization": model.quantization,
             "weights_sha256": weights_sha256(weights_path(model.spec)),
             "runtime": {k: v for k, v in facts.items() if k != "torch_threads"} | {"engine": ENGINE}}
    # Same weights at another precision are another instrument; the default stays implicit so
    # logs written before the field existed keep their anchor.
    return found | ({"dtype": model.dtype} if model.dtype != "float32" else {})


def run_anchor(frozen: dict[str, Any], prepared: GridPlan, identities: dict[str, Any], versions: dict[str, str]) -> str:
    """What ``events.jsonl`` belongs to: this plan, its request list, these models and libraries."""
    return _sha(_canonical({"plan_sha256": frozen["plan_sha256"], "requests": prepared.keys,
                            "models": identities, "versions": versions}))


def _check_resumable(path: Path, prepared: GridPlan, identities: dict[str, Any], versions: dict[str, str]) -> None:
    """Name what differs before the journal refuses a log it does not belong to."""
    if not path.is_file():
        return
    for n, line in enumerate(path.read_bytes().split(b"\n")[1:-1]):
        try:
            entry = json.loads(line)
            key, body = entry["key"], entry["body"]
        except (ValueError, KeyError, TypeError):
            return  # the journal names a corrupt line itself
        if n >= len(prepared.keys) or key != prepared.keys[n]:
            request = body.get("request", {}) if isinstance(body, dict) else {}
            raise ConfigError(f"{path} request {n} ({request.get('kind')} for {request.get('model')}) is not this "
                              "plan's request there: the prompts, candidates or decoding changed since it was logged",
                              "rerun with what wrote it, or pass --overwrite to start over")
        model = body.get("model", {})
        if model != identities.get(model.get("name")) or body.get("versions") != versions:
            raise ConfigError(f"{path} was written by other model weights, runtime or library versions "
                              f"({model.get('name')}: {str(model.get('weights_sha256'))[:12]}...)",
                              "resume with the same models and libraries, or pass --overwrite to start over")


def _clear(out: Path) -> None:
    import shutil

    for name in (PLAN, EVENTS, MANIFEST, "cells.parquet", "summary.json", REPEATS):
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / "cells", ignore_errors=True)
    # Reports and gates were derived from the discarded results: kept, they would describe a plan
    # that is no longer there.
    for folder in [p for p in out.iterdir() if p.is_dir() and (is_derived(p) or atomic.is_leftover(p.name))]:
        shutil.rmtree(folder, ignore_errors=True)


def _remove_leftovers(out: Path) -> None:
    """Temporary files an interrupted results write left behind (``.<name>.*``)."""
    for path in [*out.glob(".*"), *(out / "cells").rglob(".*")]:
        if path.is_file():
            path.unlink()


def _execute(requests: list[Request], lm: Any, responses: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """One batch through the model (the core's LanguageModel): the responses, and per request
    what the log keeps besides (retries; an endpoint's raw answer and fingerprint)."""
    first = requests[0]
    if hasattr(lm, "exchange"):  # an endpoint: what the log keeps is each exchange
        if first.kind == "generate":  # each seed travels in its request
            exchanges = lm.exchange([r.context for r in requests], temperature=[r.temperature for r in requests],
                                    max_new_tokens=first.max_new_tokens, seed=[r.seed for r in requests])
            answers = [e.text for e in exchanges]
        else:  # a server that echoes prompt logprobs
            scored = lm.exchange_loglikelihood([_pair(r, responses) for r in requests])
            answers, exchanges = [[ll, greedy] for (ll, greedy), _ in scored], [e for _, e in scored]
        return answers, [{"retries": e.retries, "endpoint": e.observed()} for e in exchanges]
    import torch

    # A local model answers or raises: there is nothing to retry. Its answers' last bits depend on
    # torch's thread count (reductions split differently), so the log says what computed them.
    local = [{"retries": 0, "threads": torch.get_num_threads()} for _ in requests]
    if first.kind == "generate":
        contexts = [r.context for r in requests]
        if hasattr(lm, "decode"):  # shared context states; each sampled row from its own seeded generator
            return list(lm.decode(contexts, temperatures=[r.temperature for r in requests],
                                  seeds=[r.seed for r in requests], max_new_tokens=first.max_new_tokens)), local
        if first.temperature == 0.0:
            return list(lm.generate(contexts, temperature=0.0, max_new_tokens=first.max_new_tokens,
                                    batch_size=len(requests))), local
        from .models.base import generate_seeded

        return generate_seeded(lm, contexts, temperatures=[r.temperature for r in requests],
                               seeds=[r.seed for r in requests], max_new_tokens=first.max_new_tokens), local
    pairs = [_pair(r, responses) for r in requests]
    if hasattr(lm, "loglikelihood_states"):  # cot: extended from its generation's context state
        scored = lm.loglikelihood_states(pairs, [r.context if r.after else None for r in requests])
    else:
        scored = lm.loglikelihood(pairs, batch_size=len(requests))
    return [[ll, greedy] for ll, greedy in scored], local


def _pair(request: Request, responses: dict[str, Any]) -> tuple[str, str]:
    """A loglikelihood request's (context, continuation); a cot one's context holds its reasoning."""
    context = request.context
    if request.after is not None:
        context = logprob_context(request.context, responses[request.after])
    return context, request.continuation or ""


class FingerprintWatch:
    """The last ``system_fingerprint`` each endpoint model answered with, in log order: a change
    is an event the log records on the request that showed it."""

    def __init__(self) -> None:
        self.last: dict[str, str] = {}

    def observe(self, model: str, seen: dict[str, Any]) -> dict[str, str] | None:
        fingerprint = (seen.get("endpoint") or {}).get("system_fingerprint")
        if fingerprint is None:
            return None
        previous, self.last[model] = self.last.get(model), fingerprint
        return {"from": previous, "to": fingerprint} if previous is not None and previous != fingerprint else None


def endpoint_observations(bodies: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per endpoint model, what the log shows of the server(s): requests (and per server of a
    pool), retries, fingerprints seen and their changes, the most requests in flight at once, and
    whether the identity claim held: ``identity_held`` is checked for L1 only (True: one
    fingerprint throughout; False: more than one; None: the server reported none, so unverified);
    L0 claims only a name and L2 a weights hash of the local copy, which no answer can confirm
    (None)."""
    from .models.endpoint import max_in_flight

    found: dict[str, dict[str, Any]] = {}
    for body in bodies:
        seen = body.get("endpoint")
        if seen is None:
            continue
        name = body["model"]["name"]
        row = found.setdefault(name, {"identity": body["model"]["runtime"]["identity"], "requests": 0, "retries": 0,
                                      "system_fingerprints": [], "fingerprint_changes": 0, "servers": {},
                                      "_intervals": []})
        row["requests"] += 1
        server = seen.get("server", body["model"]["runtime"].get("endpoint"))
        row["servers"][server] = row["servers"].get(server, 0) + 1
        row["retries"] += body.get("retries", 0)
        if seen.get("system_fingerprint") and seen["system_fingerprint"] not in row["system_fingerprints"]:
            row["system_fingerprints"].append(seen["system_fingerprint"])
        row["fingerprint_changes"] += "fingerprint_change" in body
        row["_intervals"].append((seen["sent_utc"], seen["received_utc"]))
    for row in found.values():
        # (across the pool: each server's own share of it is at most the configured concurrency)
        row["max_in_flight"] = max_in_flight(row.pop("_intervals"))
        fingerprints = row["system_fingerprints"]
        row["identity_held"] = (len(fingerprints) == 1) if row["identity"] == "L1" and fingerprints else None
    return found


def compute_batch(requests: list[Request], lm: Any, responses: dict[str, Any], identity: dict[str, Any],
                  versions: dict[str, str]) -> list[dict[str, Any]]:
    """One batch's log entry bodies (request, response, hashes, time, model identity, versions,
    and what ``_execute`` observed): the same wherever the batch runs, this process or a Ray worker."""
    results, observed = _execute(requests, lm, responses)
    return [{"request": request.body(), "request_sha256": request.key,
             "response": result, "response_sha256": _sha(_canonical(result)),
             "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
             "model": identity, "versions": versions, **seen}
            for request, result, seen in zip(requests, results, observed)]


@dataclass
class OpenRun:
    """A grid run opened for appending: its plan, its log (resumed to whole batches) and the
    responses logged so far. Executors compute the batches after ``done`` and :meth:`record` each
    request's entry in plan order; :meth:`finish` writes the results."""

    out: Path
    frozen: dict[str, Any]
    grid: GridConfig
    prepared: GridPlan
    identities: dict[str, Any]
    versions: dict[str, str]
    anchor: str
    journal: Journal
    notify: Callable[[str], None]
    responses: dict[str, Any]
    logged: list[dict[str, Any]]
    fingerprints: FingerprintWatch

    @property
    def done(self) -> int:
        """Requests logged so far (always whole batches when an executor starts)."""
        return len(self.logged)

    def record(self, key: str, body: dict[str, Any]) -> None:
        """Append one request's entry to ``events.jsonl``: the next one of the plan."""
        name = body["model"]["name"]
        change = self.fingerprints.observe(name, body)
        if change is not None:
            body["fingerprint_change"] = change
            self.notify(f"{name}: the endpoint's system_fingerprint changed from {change['from']} to "
                        f"{change['to']} at request {self.done}")
        self.journal.append(key, body)
        self.responses[key] = body["response"]
        self.logged.append(body)

    def finish(self) -> dict[str, Any]:
        return _write_results(self.out, self.frozen, self.prepared, self.responses, endpoint_observations(self.logged))


def open_run(grid: GridConfig, out: Path, *, data_dir: str | os.PathLike[str] | None = None, overwrite: bool = False,
             notify: Callable[[str], None] = print) -> OpenRun | dict[str, Any]:
    """Plan the grid and open (or resume) its run in ``out``; a finished run's summary instead."""
    frozen = plan(grid)
    out.mkdir(parents=True, exist_ok=True)
    plan_path = out / PLAN
    if overwrite:
        _clear(out)
    elif plan_path.exists():
        try:
            existing = json.loads(plan_path.read_text())
            assert isinstance(existing, dict)
        except (ValueError, AssertionError, UnicodeDecodeError):
            raise ConfigError(f"{plan_path} is not a plan (edited or corrupted)",
                              "choose another --out, or pass --overwrite to start this grid there") from None
        if existing.get("plan_sha256") != frozen["plan_sha256"]:
            first = next((f"cell {a.get('index')} ({a.get('cell_id')} vs {b['cell_id']})"
                          for a, b in zip(existing.get("cells") or [], frozen["cells"]) if a != b),
                         f"the grid ({len(existing.get('cells') or [])} vs {len(frozen['cells'])} cells)")
            raise ConfigError(f"{out} holds another plan (first difference: {first})",
                              "run the grid that made it, choose another --out, or pass --overwrite")
    _remove_leftovers(out)
    if (out / MANIFEST).exists():
        notify(f"{out}: this plan is already complete (verify it with `safetyrepro verify {out}`)")
        return json.loads((out / "summary.json").read_text())
    notify(f"planning {len(frozen['cells'])} cells ...")
    prepared = GridPlan(frozen, grid, data_dir)
    identities = {m.name: identity(m) for m in grid.models}
    versions = _versions()
    anchor = run_anchor(frozen, prepared, identities, versions)
    _check_resumable(out / EVENTS, prepared, identities, versions)
    journal = Journal(out / EVENTS, anchor, prepared.keys)
    resumed = journal.open(align=prepared.keep)
    replace_file(plan_path, (json.dumps(frozen, indent=1) + "\n").encode())
    for note in resumed.notes:
        notify(note)
    run = OpenRun(out=out, frozen=frozen, grid=grid, prepared=prepared, identities=identities, versions=versions,
                  anchor=anchor, journal=journal, notify=notify, responses={}, logged=list(resumed.bodies),
                  fingerprints=FingerprintWatch())
    for key, body in zip(prepared.keys, resumed.bodies):
        run.responses[key] = body["response"]
        run.fingerprints.observe(body["model"]["name"], body)
    if resumed.bodies:
        notify(f"resuming: {len(resumed.bodies)} of {len(prepared.keys)} requests already in {EVENTS}")
    return run


def run_local(run: OpenRun, show_progress: bool = True) -> None:
    """Compute the remaining batches in this process, model by model, logging each as it ends."""
    from tqdm.auto import tqdm

    from .runner import load_model, release_models

    prepared = run.prepared
    models = {m.name: m for m in run.grid.models}
    loaded = None
    with tqdm(total=len(prepared.keys), initial=run.done, desc="requests", disable=not show_progress) as bar:
        for start, stop in prepared.batches:
            if stop <= run.done:
                continue
            requests = [prepared.requests[k] for k in prepared.keys[start:stop]]
            name = requests[0].model
            if loaded != name:  # model-major order: the previous one is done
                if loaded is not None:
                    release_models()
                lm, loaded = load_model(models[name].spec), name
            for key, body in zip(prepared.keys[start:stop],
                                 compute_batch(requests, lm, run.responses, run.identities[name], run.versions)):
                run.record(key, body)
            bar.update(stop - start)
            pause_point(f"after-request-{stop}", run.out.parent)


def run_grid(grid: GridConfig, out: Path, *, data_dir: str | os.PathLike[str] | None = None, overwrite: bool = False,
             notify: Callable[[str], None] = print, show_progress: bool = True, threads: int | None = None,
             executor: Callable[[OpenRun], None] | None = None) -> dict[str, Any]:
    """Plan, run (or resume) and write the results of a grid into ``out``; the run summary.

    ``executor`` computes the open run's remaining batches (default: :func:`run_local`; the Ray
    one is ``gridray.on_ray``); ``threads`` pins torch's thread count in this process (response
    bytes depend on it: a run compared byte for byte with another uses the same count)."""
    run = open_run(grid, out, data_dir=data_dir, overwrite=overwrite, notify=notify)
    if isinstance(run, dict):
        return run
    if executor is not None:
        executor(run)
    else:
        with pinned_threads(threads):
            run_local(run, show_progress)
    return run.finish()


def cell_records(cr: CellRequests, responses: dict[str, Any]) -> list[Any]:
    """A cell's item records, computed from the responses to its requests only."""
    p = cr.prepared
    bench, config = p.benchmark, p.config
    records = []
    for c, gen_key, keys in zip(p.items, cr.generation, cr.scored):
        output = responses[gen_key] if gen_key is not None else None
        if config.scoring == "regex":
            records.append(make_record(p, c, score_generation(bench, c.item, output, extraction=config.extraction)))
            continue
        scored = [responses[k] for k in keys]
        context = logprob_context(c.context or "", output if p.style.reasoning else None)
        if c.mirror is not None:
            n = len(c.candidates)
            outcome = score_symmetric(bench, c.item, [s[0] for s in scored[:n]], [s[0] for s in scored[n:]],
                                      is_greedy=[s[1] for s in scored[:n]])
            records.append(make_record(p, c, outcome, logprob_context=context))
            continue
        outcome = score_loglikelihoods(bench, c.item, [s[0] for s in scored], is_greedy=[s[1] for s in scored],
                                       reasoning=output)
        records.append(make_record(p, c, outcome, logprob_context=context))
    return records


def _cell_results(out: Path, folder: str, cr: CellRequests, frozen: dict[str, Any], responses: dict[str, Any],
                  extra: dict[str, Any]) -> list[dict[str, Any]]:
    """Write one cell's ``records.jsonl`` and ``summary.json`` under ``out/folder``; its metric rows."""
    cell, p = cr.cell, cr.prepared
    records = cell_records(cr, responses)
    metrics = p.benchmark.measure(records, seed=p.config.seed, n_resamples=p.config.n_resamples)
    replace_file(out / folder / "records.jsonl", "".join(r.model_dump_json() + "\n" for r in records).encode())
    summary = {"cell": {k: v for k, v in cell.items() if k != "config"}, "config": cell["config"],
               "plan_sha256": frozen["plan_sha256"], "metrics": {k: v.model_dump() for k, v in metrics.items()},
               "counts": {"items": len(records), "unparsed": sum(r.prediction is None for r in records)}, **extra}
    mapping = symmetric_summary(records)
    if mapping is not None:
        summary["symmetric"] = mapping
    replace_file(out / folder / "summary.json", (json.dumps(summary, indent=1) + "\n").encode())
    return [{"cell_id": cell["cell_id"], "model": cell["model"], "benchmark": cell["benchmark"],
             "template": cell["template"], "scoring": cell["scoring"], "fewshot": cell["fewshot"],
             "decoding": cell["decoding"], "metric": name, "primary": name == p.benchmark.primary_metric,
             "value": value.value, "ci_low": value.ci_low, "ci_high": value.ci_high, "n": value.n,
             "config_sha256": cell["config_sha256"], "plan_sha256": frozen["plan_sha256"], **extra}
            for name, value in metrics.items()]


def _write_table(rows: list[dict[str, Any]], path: Path) -> None:
    import pandas as pd

    tmp = path.parent / f".{path.name}.tmp"
    pd.DataFrame(rows).to_parquet(tmp, index=False)
    os.replace(tmp, path)


def _write_results(out: Path, frozen: dict[str, Any], prepared: GridPlan, responses: dict[str, Any],
                   endpoints: dict[str, dict[str, Any]]) -> dict[str, Any]:
    rows = []
    for cr in prepared.cells:
        rows += _cell_results(out, f"cells/{cr.cell['cell_id']}", cr, frozen, responses, {})
    _write_table(rows, out / "cells.parquet")
    if prepared.repeats:  # the repeat gate's second measurement, beside the first (same columns + repeat)
        rows = []
        for cr in prepared.repeats:
            rows += _cell_results(out, f"cells/{cr.cell['cell_id']}/{REPEAT_FOLDER}", cr, frozen, responses, {"repeat": 1})
        _write_table(rows, out / REPEATS)
    asked = sum(sum(k is not None for k in cr.generation) + sum(len(s) for s in cr.scored) for cr in prepared.cells)
    summary = {"plan_sha256": frozen["plan_sha256"], "cells": len(prepared.cells), "requests": len(prepared.keys),
               "requests_asked_by_cells": asked}
    if prepared.repeats:
        summary["repeated_cells"] = len(prepared.repeats)
    if endpoints:
        summary["endpoints"] = endpoints
    replace_file(out / "summary.json", (json.dumps(summary, indent=1) + "\n").encode())
    replace_file(out / MANIFEST, (json.dumps(manifest(out, frozen), indent=1, sort_keys=True) + "\n").encode())
    return summary


MANIFEST_FORMAT = "safetyrepro-manifest/1"
REPORT_FORMAT = "safetyrepro-report/1"
REPORT_MARKER = "report.json"
"""A folder holding this file with this format is a report derived from the run (``safetyrepro
stats``): ``verify`` does not count it as an artefact; it can always be written again."""


GATES_FORMAT = "safetyrepro-gates/1"
GATES_MARKER = "gates.json"
"""Likewise the gate folder (``safetyrepro gate``: its verdicts and its replay log)."""
DERIVED = {REPORT_MARKER: REPORT_FORMAT, GATES_MARKER: GATES_FORMAT}


def is_derived(folder: Path) -> bool:
    """Whether a folder is derived from the run (a report or the gates), not one of its artefacts."""
    for marker, format in DERIVED.items():
        try:
            if json.loads((folder / marker).read_text()).get("format") == format:
                return True
        except (OSError, ValueError, AttributeError):
            pass
    return False


def expected_files(frozen: dict[str, Any]) -> list[str]:
    """Every artefact a finished run of this plan has (besides the manifest)."""
    files = [PLAN, EVENTS, "cells.parquet", "summary.json"]
    grid = build_grid(frozen["grid"], source=PLAN)
    for cell in frozen["cells"]:
        files += [f"cells/{cell['cell_id']}/records.jsonl", f"cells/{cell['cell_id']}/summary.json"]
        if repeated(grid, cell):
            files += [f"cells/{cell['cell_id']}/{REPEAT_FOLDER}/records.jsonl",
                      f"cells/{cell['cell_id']}/{REPEAT_FOLDER}/summary.json"]
    if any(repeated(grid, cell) for cell in frozen["cells"]):
        files.append(REPEATS)
    return files


def manifest(out: Path, frozen: dict[str, Any] | None = None) -> dict[str, Any]:
    """The plan hash, the last event's hash and the SHA-256 of every artefact of the plan."""
    from .datafiles import sha256_of

    frozen = frozen or json.loads((out / PLAN).read_text())
    last = (out / EVENTS).read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return {"format": MANIFEST_FORMAT, "plan_sha256": frozen["plan_sha256"],
            "events_last_sha256": json.loads(last).get("sha256"),
            "files": {name: sha256_of(out / name) for name in expected_files(frozen) if (out / name).is_file()}}


def verify(out: Path) -> list[str]:
    """Everything wrong with a finished grid run, read-only: the plan (recomputed from its own
    grid), the log (header, chain, plan order, completeness), the artefacts (each file of the plan
    present, none added, every hash as the manifest says). An empty list: intact."""
    problems: list[str] = []
    try:
        frozen = json.loads((out / PLAN).read_text())
        grid = build_grid(frozen["grid"], source=str(out / PLAN))
    except (OSError, ValueError, KeyError, TypeError, ConfigError) as exc:
        return [f"{PLAN} is missing or unreadable ({type(exc).__name__})"]
    if plan(grid) != frozen:
        problems.append(f"{PLAN} is not the plan of its own grid (edited)")
    try:
        prepared = GridPlan(frozen, grid, None)
    except ConfigError as exc:
        return problems + [f"the plan cannot be prepared here ({exc.what})"]
    bodies = []
    for line in ((out / EVENTS).read_bytes().split(b"\n")[1:-1] if (out / EVENTS).is_file() else []):
        try:
            entry = json.loads(line)
            bodies.append(entry["body"] if isinstance(entry, dict) and isinstance(entry.get("body"), dict) else {})
        except ValueError:
            bodies.append({})
    identities = {b["model"]["name"]: b["model"] for b in reversed(bodies) if isinstance(b.get("model"), dict)}
    versions = bodies[0].get("versions", {}) if bodies else {}
    log = verify_journal(out / EVENTS, run_anchor(frozen, prepared, identities, versions), prepared.keys)
    problems += log
    if not log and len(bodies) != len(prepared.keys):
        problems.append(f"{EVENTS} holds {len(bodies)} of the plan's {len(prepared.keys)} requests (truncated)")
    try:
        recorded = json.loads((out / MANIFEST).read_text())
        files = recorded["files"]
        assert isinstance(files, dict)
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        return problems + [f"{MANIFEST} is missing or unreadable"]
    if recorded.get("plan_sha256") != frozen["plan_sha256"]:
        problems.append(f"{MANIFEST} belongs to another plan")
    expected = set(expected_files(frozen))
    # A derived folder never holds artefacts: a marker dropped into cells/ must not hide an edit.
    reports = [p for p in out.iterdir() if p.is_dir() and is_derived(p)
               and not any(name.startswith(f"{p.name}/") for name in expected)]
    # An interrupted report write leaves a staging folder beside it; it holds no artefact and the
    # next write of that report removes it.
    reports += [p for p in out.iterdir() if atomic.is_leftover(p.name)
                and not any(name.startswith(f"{p.name}/") for name in expected)]
    present = {str(p.relative_to(out)) for p in out.rglob("*")
               if p.is_file() and not any(r in p.parents for r in reports)} - {MANIFEST}
    for name in sorted(expected - present):
        problems.append(f"{name} is missing (deleted)")
    for name in sorted(present - expected):
        problems.append(f"{name} is not an artefact of this plan (added)")
    now = manifest(out, frozen)
    for name in sorted(expected & present):
        if files.get(name) != now["files"].get(name):
            problems.append(f"{name} does not match its manifest hash (edited)")
    if not log and recorded.get("events_last_sha256") != now["events_last_sha256"]:
        problems.append(f"{EVENTS} does not end where the manifest says (truncated or appended)")
    return problems

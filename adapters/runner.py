"""The reference runner: one configuration, through the grid's engine, to per-item records and a summary.

``safetyrepro run`` is a one-cell plan (:class:`~.gridplan.RequestPlan`): the cell's scorer says
what each item asks, the engine computes the unique requests in fixed batches (shared context
states, batched sampling, each sampled request seeded from the configuration's seed and its own
content) and the scorer reads the responses -- exactly as a grid cell of the same configuration,
so one configuration is one measurement on every path.

The harness bindings are checked against these records item by item, so they hold everything:
rendered messages, the exact model context, candidates, gold, raw output, prediction, the rule
that produced it and per-candidate loglikelihoods.

With ``--out``, every request and response is logged as it is computed, hash-chained, beside the
output folder (``.<out>.events-<config hash>.jsonl``, the grid's log format): a killed run resumes
from its whole batches to exactly the records an uninterrupted run writes.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _registry, atomic, outfolder
from .cell import prepare_cell
from .config import ModelSpec, RunConfig
from .errors import ConfigError
from .metrics import MetricValue, json_ready
from .models.base import LanguageModel
from .models.hf import HFLanguageModel, resolve_model_path
from .gridoutput import cell_records
from .gridplan import RequestPlan
from .hashing import sha256_json
from .identity import identity_of, library_versions
from .journal import Journal
from .records import ItemRecord
from .scoring import extraction_report
from .symmetric import summary as symmetric_summary


@dataclass(frozen=True)
class RunResult:
    """Records, metrics and the summary of one run."""

    config: RunConfig
    records: list[ItemRecord]
    metrics: dict[str, MetricValue]
    summary: dict[str, Any]
    out_dir: Path | None


def load_model(spec: ModelSpec) -> LanguageModel:
    """Local weights are loaded once per process and shared by every run that names the same
    spec; an endpoint's spec gives a new observed client each time (its key is read from the
    environment and its servers are checked now, not when an earlier run asked)."""
    if spec.endpoint is not None:
        from .models.endpoint import EndpointLanguageModel

        return EndpointLanguageModel(spec)  # type: ignore[return-value]
    return _load_weights(spec)


@functools.cache
def _load_weights(spec: ModelSpec) -> HFLanguageModel:
    return HFLanguageModel(spec)


def release_models() -> None:
    """Drop the loaded weights (a grid is model-major: the previous model is done)."""
    import gc

    _load_weights.cache_clear()
    gc.collect()


def journal_path(out_dir: Path, config: RunConfig) -> Path:
    """The request log of an unfinished run, beside ``out_dir`` (never inside it: ``out_dir``
    changes only by an atomic publish)."""
    return out_dir.parent / f".{out_dir.name}.events-{config.config_hash()[:16]}.jsonl"


def _publish(out_dir: Path, records: list[ItemRecord], summary: dict[str, Any]) -> None:
    """Write into a staging sibling, then publish it atomically (``atomic.publish_dir``): after a
    kill at any instant ``out_dir`` holds the complete old or the complete new results."""
    staging = atomic.stage_dir(out_dir)
    try:
        atomic.write_text_durably(staging / "records.jsonl", "".join(r.model_dump_json() + "\n" for r in records))
        atomic.write_text_durably(staging / "summary.json", json.dumps(json_ready(summary), indent=1, default=str) + "\n")
        outfolder.publish(staging, out_dir, is_ours=outfolder.is_run_output, what="`safetyrepro run` output")
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _open_log(path: Path, anchor: str, plan: RequestPlan, overwrite: bool, notify: Callable[[str], None]
              ) -> tuple[Journal, list[dict[str, Any]]]:
    """The run's request log, resumed to its whole batches (``--overwrite`` discards one it cannot resume)."""
    journal = Journal(path, anchor, plan.keys)
    try:
        resumed = journal.open(align=plan.keep)
    except ConfigError as exc:
        if not overwrite:
            raise
        notify(f"discarding an unusable request log ({exc.what}) because of --overwrite")
        journal.remove()
        resumed = journal.open(align=plan.keep)
    for note in resumed.notes:
        notify(note)
    return journal, list(resumed.bodies)


def run(
    config: RunConfig,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    show_progress: bool = True,
    notify: Callable[[str], None] | None = None,
) -> RunResult:
    """Run one configuration. Everything a user can get wrong is checked before the model loads.

    With ``out_dir``, requests are logged (appended, fsynced, hash-chained) beside it as they are
    computed; a rerun of the same configuration into the same ``out_dir`` resumes from the log,
    and the finished run is published atomically."""
    say = notify or print
    started = time.time()
    # 1. Everything about the input, before any file is touched or any weight loaded.
    _registry.get_scorer(config.scoring)
    cell = prepare_cell(config, data_dir=data_dir)
    if config.limit is not None and config.limit > cell.n_subset:
        raise ConfigError(f"limit {config.limit} exceeds the {cell.n_subset} items of the {config.benchmark} subset",
                          f"use --limit <= {cell.n_subset}, or omit it to run the whole subset")
    if config.model.endpoint is not None:
        raise ConfigError("model.endpoint: an endpoint is observed through the grid runner, which logs every exchange "
                          "with the server (raw answers, fingerprints, retries)",
                          "put the model in a grid file and run `safetyrepro grid`")
    resolve_model_path(config.model)  # a missing or malformed model folder is one clear error
    out_path = outfolder.out_path(out_dir)
    # 2. The output folder: recover an interrupted publish, refuse to clobber, check writability.
    for note in outfolder.check_out_dir(out_path, overwrite):
        say(note)
    lm = load_model(config.model)
    cell = cell.with_contexts(lm.formatter)
    # 3. The one-cell plan: the scorer's requests, each unique one once, in fixed batches.
    name = config.model.name_or_path
    plan = RequestPlan(seed=config.seed, batch_size=config.batch_size)
    asked = plan.add_cell({"model": name}, cell)
    plan.freeze()
    identities, versions = {name: identity_of(name, config.model)}, library_versions()
    responses: dict[str, Any] = {}
    journal, logged = None, []
    if out_path is not None:
        # The log belongs to this configuration, its requests, and the model as loaded (weights,
        # runtime, engine) with these libraries: another model's answers never mix into a resume.
        anchor = sha256_json({"config_sha256": config.config_hash(), "requests": plan.keys,
                              "model": identities[name], "versions": versions})
        journal, logged = _open_log(journal_path(out_path, config), anchor, plan, overwrite, say)
        responses.update({key: body["response"] for key, body in zip(plan.keys, logged)})
        if logged:
            say(f"resuming {config.benchmark}: {len(logged)} of {len(plan.keys)} requests already logged in "
                f"{journal.path}")

    def record(key: str, body: dict[str, Any]) -> None:
        if journal is not None:
            journal.append(key, body)
        responses[key] = body["response"]

    def after_batch(index: int, stop: int) -> None:
        if out_path is not None:
            atomic.pause_point(f"after-chunk-{index}", out_path.parent)

    from .gridexec import run_batches

    run_batches(plan, done=len(logged), model_for=lambda _: lm, responses=responses, identities=identities,
                versions=versions, record=record, after_batch=after_batch, show_progress=show_progress,
                desc=f"{cell.benchmark.name}/{cell.style.name}/{config.scoring}")
    records = cell_records(asked, responses)
    bench, style = cell.benchmark, cell.style
    metrics = bench.measure(records, seed=config.seed, n_resamples=config.n_resamples)
    summary = {
        "config": config.model_dump(mode="json"),
        "config_hash": config.config_hash(),
        "benchmark": {"name": bench.name, "title": bench.title, "primary_metric": bench.primary_metric},
        "template": {"style": style.name, "reasoning": style.reasoning,
                     "fewshot_ids": [e.item.id for e in cell.shots],
                     "fewshot_answers": [e.answer_string for e in cell.shots]},
        "model": lm.info.as_dict(),
        "data": {
            "origin": cell.source.origin,
            "root": str(cell.source.root),
            "files": {f.path: f.sha256 for f in bench.files},
        },
        "subset": {"manifest_sha256": cell.manifest.sha256, "seed": cell.manifest.seed, "rule": cell.manifest.rule,
                   "n_subset": cell.n_subset, "n_evaluated": len(records)},
        "counts": {"items": len(records), "unparsed": sum(r.prediction is None for r in records),
                   "requests": len(plan.keys), "resumed": len(logged)},
        "extraction": extraction_report(records),
        **({"symmetric": mapping} if (mapping := symmetric_summary(records)) is not None else {}),
        "metrics": {name: m.model_dump() for name, m in metrics.items()},
        "versions": versions,
        "elapsed_s": round(time.time() - started, 2),
    }
    if out_path is not None:
        summary["log_sha256"] = journal.last_sha256 if journal is not None else None
        _publish(out_path, records, summary)
        if journal is not None:
            journal.remove()
    return RunResult(config=config, records=records, metrics=metrics, summary=summary, out_dir=out_path)

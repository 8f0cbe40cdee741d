"""The reference runner: one configuration, straight through the core, to per-item records and a summary.

The harness bindings are checked against these records item by item, so they hold everything:
rendered messages, the exact model context, candidates, gold, raw output, prediction, the rule
that produced it and per-candidate loglikelihoods.

Items are scored in chunks of ``batch_size``; each chunk's records are journaled before the next
starts (``journal.py``), and sampling is seeded per chunk, so a killed run resumes to exactly the
records an uninterrupted run writes.
"""

from __future__ import annotations

import functools
import hashlib
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
from .identity import library_versions
from .metrics import MetricValue
from .models.base import LanguageModel
from .models.hf import HFLanguageModel, resolve_model_path
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
    """Records of an unfinished run, beside ``out_dir`` (never inside it: ``out_dir`` changes only
    by an atomic publish)."""
    return out_dir.parent / f".{out_dir.name}.records-{config.config_hash()[:16]}.jsonl"


def _publish(out_dir: Path, records: list[ItemRecord], summary: dict[str, Any]) -> None:
    """Write into a staging sibling, then publish it atomically (``atomic.publish_dir``): after a
    kill at any instant ``out_dir`` holds the complete old or the complete new results."""
    staging = atomic.stage_dir(out_dir)
    try:
        atomic.write_text_durably(staging / "records.jsonl", "".join(r.model_dump_json() + "\n" for r in records))
        atomic.write_text_durably(staging / "summary.json", json.dumps(summary, indent=1, default=str) + "\n")
        outfolder.publish(staging, out_dir, is_ours=outfolder.is_run_output, what="`safetyrepro run` output")
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _chunk_seed(seed: int, start: int) -> int:
    """Sampling seed of the chunk starting at item ``start``: each chunk's draws depend only on the
    configuration and its position, so a resumed run samples exactly what an uninterrupted one would."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{start}".encode()).digest()[:8], "big") >> 1


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

    With ``out_dir``, records are journaled (appended, fsynced, hash-chained) beside it as they
    are produced; a rerun of the same configuration into the same ``out_dir`` resumes from the
    journal, and the finished run is published atomically."""
    scorer = _registry.get_scorer(config.scoring)
    started = time.time()
    # 1. Everything about the input, before any file is touched or any weight loaded.
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
        (notify or print)(note)
    lm = load_model(config.model)
    cell = cell.with_contexts(lm.formatter)

    journal, done = None, []
    if out_path is not None:
        # The journal belongs to this configuration AND this model as loaded (weights, chat
        # template, kernel path): records of another model never mix into a resumed run.
        # (Thread count is left out: it moved no result by more than 2e-6, NF4 included.)
        model = lm.info.as_dict()
        model["runtime"] = {k: v for k, v in model["runtime"].items() if k != "torch_threads"}
        anchor = hashlib.sha256(json.dumps({"config": config.config_hash(), "model": model},
                                           sort_keys=True, default=str).encode()).hexdigest()
        journal = Journal(journal_path(out_path, config), anchor, [c.item.id for c in cell.items])
        try:
            resumed = journal.open(align=config.batch_size)
        except ConfigError as exc:
            if not overwrite:
                raise
            (notify or print)(f"discarding an unusable journal ({exc.what}) because of --overwrite")
            journal.remove()
            resumed = journal.open(align=config.batch_size)
        for note in resumed.notes:
            (notify or print)(note)
        done = [ItemRecord.model_validate(body) for body in resumed.bodies]
        if any(r.prompt != c.context for r, c in zip(done, cell.items)):
            raise ConfigError(f"journal {journal.path} holds prompts that differ from this run's",
                              "pass --overwrite to discard it and start over")
        if done:
            (notify or print)(f"resuming {config.benchmark}: {len(done)} of {len(cell.items)} items already "
                              f"recorded in {journal.path}")

    bench, style = cell.benchmark, cell.style

    from tqdm.auto import tqdm

    import torch

    records = list(done)
    chunk = config.batch_size
    with tqdm(total=len(cell.items), initial=len(done), desc=f"{bench.name}/{style.name}/{scorer.name}",
              disable=not show_progress, leave=False) as bar:
        for start in range(len(done), len(cell.items), chunk):
            torch.manual_seed(_chunk_seed(config.seed, start))
            part = scorer.score(lm, cell.subset(start, start + chunk))
            for record in part:
                if journal is not None:
                    journal.append(record.item_id, record.model_dump(mode="json"))
            records.extend(part)
            bar.update(len(part))
            if out_path is not None:
                atomic.pause_point(f"after-chunk-{start // chunk}", out_path.parent)
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
                   "resumed": len(done)},
        "extraction": extraction_report(records),
        **({"symmetric": mapping} if (mapping := symmetric_summary(records)) is not None else {}),
        "metrics": {name: m.model_dump() for name, m in metrics.items()},
        "versions": library_versions(),
        "elapsed_s": round(time.time() - started, 2),
    }
    if out_path is not None:
        _publish(out_path, records, summary)
        if journal is not None:
            journal.remove()
    return RunResult(config=config, records=records, metrics=metrics, summary=summary, out_dir=out_path)

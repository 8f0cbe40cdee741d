"""A grid run's results, computed from the logged responses only.

:func:`render` yields every result file's bytes -- ``cells/<cell_id>/records.jsonl`` and
``summary.json`` (cells x items through the core's readout and metrics), the repeat gate's
second measurements under ``repeat/``, ``cells.parquet`` (one row per cell x metric, every factor
a column), ``repeats.parquet``, the top-level ``summary.json`` -- one file at a time, so a large
grid is never held in memory whole. The run writes them (:func:`write_results`, the manifest
last); ``verify`` renders them again from the log and compares, so a result is trusted because it
follows from the log, not because a manifest lists its hash.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .durable import replace_file
from .gridlayout import (CELLS, CELLS_TABLE, EVENTS, MANIFEST, MANIFEST_FORMAT, PLAN, PREREG, RECORDS, REPEAT_FOLDER, REPEATS,
                         SUMMARY)
from .gridplan import CellRequests, RequestPlan
from .hashing import sha256_bytes, sha256_file
from .identity import analysis_versions
from .metrics import json_ready
from .records import ItemRecord
from .symmetric import summary as symmetric_summary

__all__ = ["cell_records", "manifest_document", "render", "table_bytes", "write_results"]


def cell_records(cr: CellRequests, responses: dict[str, Any]) -> list[ItemRecord]:
    """A cell's item records, computed from the responses to its requests only (its scorer reads
    each item's responses in the order it asked them)."""
    from . import _registry

    p = cr.prepared
    scorer = _registry.get_scorer(p.config.scoring)
    return [scorer.record(p, c, [responses[k] for k in keys]) for c, keys in zip(p.items, cr.asked)]


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(json_ready(value), indent=1) + "\n").encode()


def _cell_files(folder: str, cr: CellRequests, frozen: dict[str, Any], responses: dict[str, Any],
                extra: dict[str, Any]) -> tuple[list[tuple[str, bytes]], list[dict[str, Any]]]:
    """One cell's ``records.jsonl`` and ``summary.json`` under ``folder``, and its metric rows."""
    cell, p = cr.cell, cr.prepared
    records = cell_records(cr, responses)
    metrics = p.benchmark.measure(records, seed=p.config.seed, n_resamples=p.config.n_resamples)
    summary = {"cell": {k: v for k, v in cell.items() if k != "config"}, "config": cell["config"],
               "plan_sha256": frozen["plan_sha256"], "metrics": {k: v.model_dump() for k, v in metrics.items()},
               "counts": {"items": len(records), "unparsed": sum(r.prediction is None for r in records)}, **extra}
    mapping = symmetric_summary(records)
    if mapping is not None:
        summary["symmetric"] = mapping
    files = [(f"{folder}/{RECORDS}", "".join(r.model_dump_json() + "\n" for r in records).encode()),
             (f"{folder}/{SUMMARY}", _json_bytes(summary))]
    rows = [{"cell_id": cell["cell_id"], "model": cell["model"], "benchmark": cell["benchmark"],
             "template": cell["template"], "scoring": cell["scoring"], "fewshot": cell["fewshot"],
             "decoding": cell["decoding"], "metric": name, "primary": name == p.benchmark.primary_metric,
             "value": value.value, "ci_low": value.ci_low, "ci_high": value.ci_high, "n": value.n,
             "config_sha256": cell["config_sha256"], "plan_sha256": frozen["plan_sha256"], **extra}
            for name, value in metrics.items()]
    return files, rows


def table_bytes(rows: list[dict[str, Any]]) -> bytes:
    """A parquet table's bytes (pandas + pyarrow: the same rows give the same bytes with the same
    library versions; ``verify`` compares the table itself where the bytes differ)."""
    import pandas as pd

    buffer = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buffer, index=False)
    return buffer.getvalue()


def render(frozen: dict[str, Any], prepared: RequestPlan, responses: dict[str, Any],
           endpoints: dict[str, dict[str, Any]]) -> Iterator[tuple[str, bytes]]:
    """Every result file of the run as (path relative to the run folder, bytes), in write order."""
    rows: list[dict[str, Any]] = []
    for cr in prepared.cells:
        files, cell_rows = _cell_files(f"{CELLS}/{cr.cell['cell_id']}", cr, frozen, responses, {})
        yield from files
        rows += cell_rows
    yield CELLS_TABLE, table_bytes(rows)
    if prepared.repeats:  # the repeat gate's second measurement, beside the first (same columns + repeat)
        rows = []
        for cr in prepared.repeats:
            files, cell_rows = _cell_files(f"{CELLS}/{cr.cell['cell_id']}/{REPEAT_FOLDER}", cr, frozen, responses,
                                           {"repeat": 1})
            yield from files
            rows += cell_rows
        yield REPEATS, table_bytes(rows)
    asked = sum(len(keys) for cr in prepared.cells for keys in cr.asked)
    summary: dict[str, Any] = {"plan_sha256": frozen["plan_sha256"], "cells": len(prepared.cells),
                               "requests": len(prepared.keys), "requests_asked_by_cells": asked}
    if prepared.repeats:
        summary["repeated_cells"] = len(prepared.repeats)
    if endpoints:
        summary["endpoints"] = endpoints
    yield SUMMARY, _json_bytes(summary)


def manifest_document(plan_sha256: str, events_last_sha256: str | None, files: dict[str, str]) -> dict[str, Any]:
    """``manifest.json``: the plan hash, the log's last chain hash, every artefact's SHA-256 and
    the versions of the libraries that computed the results from the log (``analysis_versions``)."""
    return {"format": MANIFEST_FORMAT, "plan_sha256": plan_sha256, "events_last_sha256": events_last_sha256,
            "files": dict(sorted(files.items())), "analysis_versions": analysis_versions()}


def write_results(out: Path, frozen: dict[str, Any], prepared: RequestPlan, responses: dict[str, Any],
                  endpoints: dict[str, dict[str, Any]], events_last_sha256: str) -> dict[str, Any]:
    """Write every result file (each replaced whole), then ``manifest.json``; the run summary."""
    hashes = {PLAN: sha256_file(out / PLAN), EVENTS: sha256_file(out / EVENTS)}
    if (out / PREREG).exists():  # a preregistered run's record is one of its artefacts
        hashes[PREREG] = sha256_file(out / PREREG)
    summary: dict[str, Any] = {}
    for name, content in render(frozen, prepared, responses, endpoints):
        replace_file(out / name, content)
        hashes[name] = sha256_bytes(content)
        if name == SUMMARY:
            summary = json.loads(content)
    replace_file(out / MANIFEST, (json.dumps(manifest_document(frozen["plan_sha256"], events_last_sha256, hashes),
                                             indent=1, sort_keys=True) + "\n").encode())
    return summary


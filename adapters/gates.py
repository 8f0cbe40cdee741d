"""Instrument stability gates on a finished grid run: is the measurement stable enough to rank with?

The gates are frozen in the grid (``gates:`` in ``grid.yaml``, so in the plan hash; a threshold
changed afterwards is a new plan):

* **repeat** -- chosen configurations are asked a second time in the same run, each model's
  repeats right after its own cells (same window), as separate logged requests (``"repeat": 1``;
  a sampled generation gets its own seed). Per repeated cell: the Spearman correlation of the
  per-item scores (:func:`item_score`) and the prediction agreement between the two measurements;
  per repeated configuration (two or more models): the Spearman correlation of the models'
  scores. PASS when the median item-score Spearman and the median ranking Spearman both reach
  the threshold (a gate with no ranking to compare says so and rests on the items).
* **replay** -- ``safetyrepro gate RUN --replay`` asks the logged requests again later, byte for
  byte (the logged bodies, the run's own batches, a dependent request after its *logged*
  generation), into ``gates/replay.jsonl`` (a hash-chained journal: resumable, verifiable). The
  chosen share of configurations is replayed whole (chosen by the grid seed). Reported: the share
  of byte-identical responses, the per-item prediction agreement and the share of configurations
  whose full ranking of the models is unchanged; PASS when the last two reach the threshold.

The repeats also give the **noise floor**: per benchmark, the |difference| of the primary score
between a cell and its repeat (median, p90, p95), against the gaps between models in the same
configuration: the detection limit is the p95 of the noise, and the share of model gaps at or
below it is reported (a gap the instrument cannot tell from a repeat is not a finding).

``gates/gates.json`` (``safetyrepro-gates/1``, stable): ``{"format", "plan_sha256",
"manifest_sha256", "utc", "supported", "gates": {"repeat": {...} | null, "replay": {...} | null},
"noise_floor": {benchmark: {...}}}``, each gate ``{"status": "PASS" | "FAIL" | "not run",
"threshold", ...its numbers}``. A failed gate makes ``supported`` false and ``safetyrepro stats``
marks every statistic as not supported. The ``gates`` folder is derived: ``verify`` does not count
it as an artefact of the run.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .durable import replace_file
from .errors import ConfigError
from .grid import CONFIG_KEYS
from .gridlayout import GATES_FOLDER, GATES_FORMAT, GATES_MARKER, MANIFEST, REPLAY_LOG
from .gridresults import GridResults
from .instrument import (agreement, config_name, finite_or_none, goodness_of, item_score, median, ordering,
                         primary_score, spearman, verdict)
from .replay import replay_gate, run_replay

__all__ = ["GATES_FOLDER", "REPLAY_LOG", "compute", "evaluate", "failed", "noise_floor", "read", "repeat_gate",
           "run_replay"]

GATES_FILE = GATES_MARKER


# ---- the repeat gate ----------------------------------------------------------------------------

def repeat_gate(results: GridResults) -> tuple[dict[str, Any], pd.DataFrame]:
    """The repeat gate's verdict and numbers, and one row per repeated cell (its differences)."""
    gate = results.prepared.grid.gates.repeat  # type: ignore[union-attr]
    seed = results.prepared.grid.seed
    rows = []
    for cr in results.prepared.repeats:
        cell = cr.cell
        first, second = results.records(cell["cell_id"]), results.repeat_records(cell["cell_id"])
        a, b = primary_score(first, cell["benchmark"], seed), primary_score(second, cell["benchmark"], seed)
        rows.append({"cell_id": cell["cell_id"], "model": cell["model"], **{k: cell[k] for k in CONFIG_KEYS},
                     "item_spearman": spearman([item_score(r) for r in first], [item_score(r) for r in second]),
                     "prediction_agreement": agreement(first, second), "score": a, "score_repeat": b,
                     "abs_difference": abs(a - b) if not (math.isnan(a) or math.isnan(b)) else math.nan})
    cells = pd.DataFrame(rows)
    ranking = []
    for config, group in cells.groupby(list(CONFIG_KEYS), sort=False) if len(cells) else []:
        if len(group) < 2:
            continue
        good = [goodness_of(config[0], v) for v in group["score"]]
        again = [goodness_of(config[0], v) for v in group["score_repeat"]]
        ranking.append({"config": config_name(config), "ranking_spearman": spearman(good, again),
                        "same_ordering": ordering(dict(zip(group["model"], good)))
                        == ordering(dict(zip(group["model"], again)))})
    item_median = median(list(cells["item_spearman"])) if len(cells) else math.nan
    rank_median = median([r["ranking_spearman"] for r in ranking])
    status = verdict([item_median, rank_median], gate.threshold)
    result = {"status": status, "threshold": gate.threshold, "cells": len(cells), "configs": len(ranking),
              "median_item_spearman": finite_or_none(item_median), "median_ranking_spearman": finite_or_none(rank_median),
              "min_item_spearman": finite_or_none(float(cells["item_spearman"].min())) if len(cells) else None,
              "prediction_agreement": finite_or_none(float(cells["prediction_agreement"].mean())) if len(cells) else None,
              "same_ordering": finite_or_none(float(np.mean([r["same_ordering"] for r in ranking]))) if ranking else None,
              "note": "" if ranking else "no repeated configuration has two models: the gate rests on the items",
              "rankings": ranking, "borda_across_repeats": _borda_across_repeats(cells)}
    return result, cells


def _borda_across_repeats(cells: pd.DataFrame) -> dict[str, Any]:
    """Per benchmark, the Borda aggregate of the repeated configurations' rankings from their first
    measurements, and from first and repeat together (each repeat one more ranking): whether the
    aggregate order survives asking again."""
    from .stats import FACTORS, borda

    out: dict[str, Any] = {}
    for benchmark, group in cells.groupby("benchmark", sort=False) if len(cells) else []:
        if group["model"].nunique() < 2:
            continue
        # goodness first (every benchmark's direction becomes "higher"); a repeat is its own ranking
        first = group.assign(score=[goodness_of(benchmark, v) for v in group["score"]], measurement="first")
        again = group.assign(score=[goodness_of(benchmark, v) for v in group["score_repeat"]], measurement="repeat")
        both = pd.concat([first, again]).assign(template=lambda t: t["template"] + " #" + t["measurement"])
        once = borda(first[["model", *FACTORS, "score"]].dropna(subset=["score"]))
        twice = borda(both[["model", *FACTORS, "score"]].dropna(subset=["score"]))
        out[benchmark] = {"first": once[["model", "points", "rank"]].to_dict("records"),
                          "with_repeats": twice[["model", "points", "rank"]].to_dict("records"),
                          "same_order": list(once["model"]) == list(twice["model"])}
    return out


def noise_floor(results: GridResults, repeats: pd.DataFrame) -> dict[str, Any]:
    """Per benchmark: the repeat differences (median, p90, p95) against the model gaps."""
    primary = results.primary()
    out = {}
    for benchmark, noise in repeats.groupby("benchmark", sort=False) if len(repeats) else []:
        diffs = noise["abs_difference"].dropna().to_numpy()
        gaps = []
        rows = primary[primary["benchmark"] == benchmark]
        for _, group in rows.groupby(list(CONFIG_KEYS[1:]), sort=False):
            good = sorted(goodness_of(benchmark, v) for v in group["score"] if v == v)
            gaps += [abs(x - y) for i, x in enumerate(good) for y in good[i + 1:]]
        limit = float(np.percentile(diffs, 95)) if len(diffs) else math.nan
        out[benchmark] = {
            "repeat_pairs": int(len(diffs)),
            "noise_median": finite_or_none(float(np.median(diffs))) if len(diffs) else None,
            "noise_p90": finite_or_none(float(np.percentile(diffs, 90))) if len(diffs) else None,
            "noise_p95": finite_or_none(limit), "detection_limit": finite_or_none(limit),
            "model_gaps": len(gaps), "gap_median": finite_or_none(float(np.median(gaps))) if gaps else None,
            "share_gaps_below_detection": (finite_or_none(float(np.mean([g <= limit for g in gaps])))
                                           if gaps and not math.isnan(limit) else None)}
    return out


# ---- the gate document --------------------------------------------------------------------------

def compute(results: GridResults) -> dict[str, Any]:
    """Every frozen gate's verdict, and the noise floor, from the run (and its replay log); written
    by :func:`evaluate`, recomputed by ``verify`` to catch an edited verdict."""
    from .hashing import sha256_file

    gates = results.prepared.grid.gates
    if gates is None:
        raise ConfigError(f"{results.folder} froze no gates in its plan",
                          "add a `gates:` section to the grid (a new plan, so a new --out) and run it again")
    document: dict[str, Any] = {"format": GATES_FORMAT, "plan_sha256": results.frozen["plan_sha256"],
                                "manifest_sha256": sha256_file(results.folder / MANIFEST),
                                "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                "gates": {"repeat": None, "replay": None}, "noise_floor": {}}
    if gates.repeat is not None:
        document["gates"]["repeat"], repeats = repeat_gate(results)
        document["noise_floor"] = noise_floor(results, repeats)
    if gates.replay is not None:
        document["gates"]["replay"] = replay_gate(results)
    document["supported"] = not any(g and g["status"] == "FAIL" for g in document["gates"].values())
    return document


def evaluate(results: GridResults) -> dict[str, Any]:
    """:func:`compute`, written to ``gates/gates.json``."""
    document = compute(results)
    replace_file(results.folder / GATES_FOLDER / GATES_FILE, (json.dumps(document, indent=1) + "\n").encode())
    return document


def read(folder: Path, plan_sha256: str) -> dict[str, Any] | None:
    """A run's ``gates/gates.json`` if it was evaluated for this plan (None: not evaluated)."""
    try:
        document = json.loads((folder / GATES_FOLDER / GATES_FILE).read_text())
    except (OSError, ValueError):
        return None
    if document.get("format") != GATES_FORMAT or document.get("plan_sha256") != plan_sha256 or "gates" not in document:
        return None
    return document


def failed(document: dict[str, Any] | None) -> list[str]:
    """The gates that failed (their names), for marking statistics as not supported."""
    if document is None:
        return []
    return [name for name, gate in document["gates"].items() if gate and gate["status"] == "FAIL"]

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
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import _registry
from .atomic import replace_file
from .errors import ConfigError
from .grid import CONFIG_KEYS
from .gridresults import GridResults
from .gridexec import execute, pinned_threads
from .gridlayout import GATES_FORMAT, GATES_MARKER, MANIFEST, REPEAT_FOLDER
from .gridoutput import cell_records
from .gridplan import ModelRequest
from .hashing import sha256_json
from .identity import identity, library_versions
from .journal import Journal
from .records import ItemRecord
from .stats import goodness

GATES_FOLDER = "gates"
GATES_FILE = GATES_MARKER
REPLAY_LOG = "replay.jsonl"
REPLAY_NEXT = ".replay.jsonl.next"
"""A replay that replaces an earlier one is written here, and renamed over it when complete."""


# ---- per item -----------------------------------------------------------------------------------

def item_score(record: ItemRecord) -> float:
    """An item's score on a continuous scale where the path gives one: on the logprob path the
    probability (softmax over the candidates' loglikelihoods) of the gold option, or of option 0
    where the benchmark has no gold (the same option in both measurements of an item, which is what
    a repeat needs; for CrowS-Pairs its meaning alternates along the subset); on the regex
    path 1 if the prediction is gold (option 0 without gold), else 0; on the symmetric path the
    z_sym of that option. An unparsed answer gives the
    target nothing (0); it stays unparsed wherever predictions are counted (prediction agreement
    treats it as an answer of its own)."""
    if record.prediction is None:
        return 0.0
    target = record.gold if record.gold is not None else 0
    symmetric = record.meta.get("symmetric")
    if symmetric:  # the mapping-free preference (a logit: the Spearman correlations need only its order)
        return float(symmetric["z_sym"][target])
    if record.loglikelihoods:
        lls = np.asarray(record.loglikelihoods, dtype=float)
        probs = np.exp(lls - lls.max())
        return float(probs[target] / probs.sum())
    return float(record.prediction == target)


def _spearman(a: list[float], b: list[float]) -> float:
    """Spearman rho of two paired score lists (pairs with a NaN left out); 1 where they are equal,
    0 where one side is constant and the other is not (no order to agree on)."""
    from scipy.stats import spearmanr

    pairs = [(x, y) for x, y in zip(a, b) if not (math.isnan(x) or math.isnan(y))]
    if not pairs:
        return math.nan
    x, y = (np.array(v) for v in zip(*pairs))
    if np.allclose(x, y, rtol=0, atol=1e-12):
        return 1.0
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0
    return float(spearmanr(x, y).statistic)


def _agreement(a: list[ItemRecord], b: list[ItemRecord]) -> float:
    """Share of items with the same prediction (unparsed is its own answer)."""
    return float(np.mean([x.prediction == y.prediction for x, y in zip(a, b)])) if a else math.nan


def _median(values: list[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return float(np.median(kept)) if kept else math.nan


def _config(cell: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(cell[k] for k in CONFIG_KEYS)


def _config_name(config: tuple[Any, ...]) -> str:
    return " ".join(f"{k}={v}" for k, v in zip(CONFIG_KEYS, config))


def _goodness(benchmark: str, value: float) -> float:
    bench = _registry.get_benchmark(benchmark)
    spec = bench.metric_spec(bench.primary_metric)
    return float(goodness(pd.Series([value]), spec.direction, spec.target).iloc[0])  # type: ignore[arg-type]


def _primary(records: list[ItemRecord], benchmark: str, seed: int) -> float:
    bench = _registry.get_benchmark(benchmark)
    return float(bench.metrics(records, seed=seed, n_resamples=0)[bench.primary_metric].value)


def _ordering(scores: dict[str, float]) -> tuple[tuple[str, ...], ...]:
    """Models best first, tied models grouped (the tolerance of the statistics)."""
    groups: dict[float, list[str]] = {}
    for model, value in scores.items():
        groups.setdefault(round(value, 9), []).append(model)
    return tuple(tuple(sorted(groups[v])) for v in sorted(groups, reverse=True))


# ---- the repeat gate ----------------------------------------------------------------------------

def _repeat_records(results: GridResults, cell_id: str) -> list[ItemRecord]:
    path = results.folder / "cells" / cell_id / REPEAT_FOLDER / "records.jsonl"
    return [ItemRecord.model_validate_json(line) for line in path.read_text().splitlines()]


def repeat_gate(results: GridResults) -> tuple[dict[str, Any], pd.DataFrame]:
    """The repeat gate's verdict and numbers, and one row per repeated cell (its differences)."""
    gate = results.prepared.grid.gates.repeat  # type: ignore[union-attr]
    seed = results.prepared.grid.seed
    rows = []
    for cr in results.prepared.repeats:
        cell = cr.cell
        first, second = results.records(cell["cell_id"]), _repeat_records(results, cell["cell_id"])
        a, b = _primary(first, cell["benchmark"], seed), _primary(second, cell["benchmark"], seed)
        rows.append({"cell_id": cell["cell_id"], "model": cell["model"], **{k: cell[k] for k in CONFIG_KEYS},
                     "item_spearman": _spearman([item_score(r) for r in first], [item_score(r) for r in second]),
                     "prediction_agreement": _agreement(first, second), "score": a, "score_repeat": b,
                     "abs_difference": abs(a - b) if not (math.isnan(a) or math.isnan(b)) else math.nan})
    cells = pd.DataFrame(rows)
    ranking = []
    for config, group in cells.groupby(list(CONFIG_KEYS), sort=False) if len(cells) else []:
        if len(group) < 2:
            continue
        good = [_goodness(config[0], v) for v in group["score"]]
        again = [_goodness(config[0], v) for v in group["score_repeat"]]
        ranking.append({"config": _config_name(config), "ranking_spearman": _spearman(good, again),
                        "same_ordering": _ordering(dict(zip(group["model"], good)))
                        == _ordering(dict(zip(group["model"], again)))})
    item_median = _median(list(cells["item_spearman"])) if len(cells) else math.nan
    rank_median = _median([r["ranking_spearman"] for r in ranking])
    status = verdict([item_median, rank_median], gate.threshold)
    result = {"status": status, "threshold": gate.threshold, "cells": len(cells), "configs": len(ranking),
              "median_item_spearman": _nan(item_median), "median_ranking_spearman": _nan(rank_median),
              "min_item_spearman": _nan(float(cells["item_spearman"].min())) if len(cells) else None,
              "prediction_agreement": _nan(float(cells["prediction_agreement"].mean())) if len(cells) else None,
              "same_ordering": _nan(float(np.mean([r["same_ordering"] for r in ranking]))) if ranking else None,
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
        first = group.assign(score=[_goodness(benchmark, v) for v in group["score"]], measurement="first")
        again = group.assign(score=[_goodness(benchmark, v) for v in group["score_repeat"]], measurement="repeat")
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
            good = sorted(_goodness(benchmark, v) for v in group["score"] if v == v)
            gaps += [abs(x - y) for i, x in enumerate(good) for y in good[i + 1:]]
        limit = float(np.percentile(diffs, 95)) if len(diffs) else math.nan
        out[benchmark] = {
            "repeat_pairs": int(len(diffs)),
            "noise_median": _nan(float(np.median(diffs))) if len(diffs) else None,
            "noise_p90": _nan(float(np.percentile(diffs, 90))) if len(diffs) else None,
            "noise_p95": _nan(limit), "detection_limit": _nan(limit),
            "model_gaps": len(gaps), "gap_median": _nan(float(np.median(gaps))) if gaps else None,
            "share_gaps_below_detection": (_nan(float(np.mean([g <= limit for g in gaps])))
                                           if gaps and not math.isnan(limit) else None)}
    return out


def verdict(numbers: list[float], threshold: float) -> str:
    """PASS when every number that could be computed reaches the threshold (and one could); FAIL
    otherwise -- a gate with nothing to measure does not pass."""
    checks = [v for v in numbers if v is not None and not math.isnan(v)]
    return "PASS" if checks and all(v >= threshold for v in checks) else "FAIL"


def _nan(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value


# ---- the replay gate ----------------------------------------------------------------------------

def replay_selection(results: GridResults) -> tuple[list[tuple[Any, ...]], list[tuple[int, int]]]:
    """The configurations the replay gate replays (the grid seed chooses ``share`` of them) and the
    plan's batches that hold their requests (replayed whole: a batch's composition can move its
    numbers)."""
    gate = results.prepared.grid.gates.replay  # type: ignore[union-attr]
    configs = list(dict.fromkeys(_config(c) for c in results.cells))
    n = max(1, math.ceil(gate.share * len(configs)))
    chosen_index = sorted(np.random.default_rng(results.prepared.grid.seed).choice(len(configs), n, replace=False))
    chosen = [configs[i] for i in chosen_index]
    keys = {k for c in results.cells if _config(c) in chosen for k in results.request_keys(c["cell_id"])}
    position = {k: n for n, k in enumerate(results.prepared.keys)}
    touched = {position[k] for k in keys}
    batches = [(a, b) for a, b in results.prepared.batches if any(a <= i < b for i in touched)]
    return chosen, batches


def run_replay(results: GridResults, *, notify: Callable[[str], None] = print, show_progress: bool = True,
               concurrency: int | None = None, overwrite: bool = False) -> Path:
    """Ask the chosen batches' logged requests again, byte for byte, into ``gates/replay.jsonl``
    (resuming a replay that was interrupted). ``concurrency``: an endpoint model's requests in
    flight during the replay instead of the run's (does the server's batching change answers?)."""
    from tqdm.auto import tqdm

    from .runner import load_model, release_models

    grid = results.prepared.grid
    _, batches = replay_selection(results)
    keys = [k for a, b in batches for k in results.prepared.keys[a:b]]
    folder = results.folder / GATES_FOLDER
    _mark(folder, results)
    specs = {m.name: m.spec for m in grid.models}
    if concurrency is not None:
        if not any(spec.endpoint for spec in specs.values()):
            raise ConfigError("--concurrency applies to endpoint models, and this grid has none",
                              "leave --concurrency out")
        specs = {name: spec.model_copy(update={"endpoint": spec.endpoint.model_copy(update={"concurrency": concurrency})})
                 if spec.endpoint else spec for name, spec in specs.items()}
    # The concurrency each endpoint model is replayed at (the run's, unless overridden), on every entry.
    in_flight = {name: {"concurrency": spec.endpoint.concurrency} if spec.endpoint else {} for name, spec in specs.items()}
    identities = {m.name: identity(m) for m in grid.models}
    versions = library_versions()
    anchor = sha256_json({"plan_sha256": results.frozen["plan_sha256"], "replay": keys, "models": identities,
                          "versions": versions} | ({"concurrency": concurrency} if concurrency else {}))
    path = log = folder / REPLAY_LOG
    if path.exists() and (overwrite or not _same_anchor(path, anchor)):
        # The earlier replay stays until the new one is complete: this one is written beside it.
        log = folder / REPLAY_NEXT
        if log.exists() and not _same_anchor(log, anchor):
            log.unlink()  # (ours: an interrupted replacement with other weights, libraries or selection)
        notify(f"{path}: the earlier replay is replaced once this one is complete")
    journal = Journal(log, anchor, keys)
    ends = np.cumsum([b - a for a, b in batches]).tolist()
    resumed = journal.open(align=lambda done: max((e for e in ends if e <= done), default=0))
    for note in resumed.notes:
        notify(note)
    logged = {k: body["response"] for k, body in results.events.items()}
    done = len(resumed.bodies)
    loaded = None
    with tqdm(total=len(keys), initial=done, desc="replay", disable=not show_progress) as bar:
        position = 0
        for a, b in batches:
            position += b - a
            if position <= done:
                continue
            batch = results.prepared.keys[a:b]
            requests = [ModelRequest(**results.events[k]["request"]) for k in batch]
            if loaded != requests[0].model:  # model-major: the previous one is done
                if loaded is not None:
                    release_models()
                lm, loaded = load_model(specs[requests[0].model]), requests[0].model
            with pinned_threads(results.events[batch[0]].get("threads")):  # as the run computed it
                answers, observed = execute(requests, lm, logged)
            for key, answer, seen in zip(batch, answers, observed):
                journal.append(key, {"request_sha256": key, "response": answer,
                                     "response_sha256": sha256_json(answer),
                                     "identical": sha256_json(answer) == results.events[key]["response_sha256"],
                                     "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
                                     "model": identities[requests[0].model], "versions": versions, **seen,
                                     **in_flight[requests[0].model]})
            bar.update(b - a)
    if log != path:
        os.replace(log, path)
    return path


def _same_anchor(path: Path, anchor: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.readline())["header"]["anchor"] == anchor
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _replayed(results: GridResults) -> dict[str, dict[str, Any]] | None:
    """The complete replay's entries by request key (None: no complete replay of this selection)."""
    from .journal import verify as verify_journal

    path = results.folder / GATES_FOLDER / REPLAY_LOG
    if not path.is_file():
        return None
    _, batches = replay_selection(results)
    keys = [k for a, b in batches for k in results.prepared.keys[a:b]]
    lines = path.read_bytes().split(b"\n")
    try:
        anchor = json.loads(lines[0])["header"]["anchor"]
    except (ValueError, KeyError, TypeError):
        raise ConfigError(f"{path} is not a replay log (edited or corrupted)",
                          f"run `safetyrepro gate {results.folder} --replay --overwrite` to replay again") from None
    problems = verify_journal(path, anchor, keys)
    if problems:
        raise ConfigError(f"{path} does not verify ({problems[0]})",
                          f"run `safetyrepro gate {results.folder} --replay --overwrite` to replay again")
    entries = [json.loads(line) for line in lines[1:-1]]
    if len(entries) != len(keys):
        return None
    return {e["key"]: e["body"] for e in entries}


def replay_gate(results: GridResults) -> dict[str, Any]:
    gate = results.prepared.grid.gates.replay  # type: ignore[union-attr]
    replayed = _replayed(results)
    if replayed is None:
        return {"status": "not run", "threshold": gate.threshold,
                "note": f"run `safetyrepro gate {results.folder} --replay` (later than the run) to replay it"}
    chosen, _ = replay_selection(results)
    seed = results.prepared.grid.seed
    responses = {k: body["response"] for k, body in results.events.items()}
    responses.update({k: body["response"] for k, body in replayed.items()})
    agree, same_ordering, configs = [], [], []
    for config in chosen:
        cells = [cr for cr in results.prepared.cells if _config(cr.cell) == config]
        first_scores, again_scores = {}, {}
        for cr in cells:
            first, again = results.records(cr.cell["cell_id"]), cell_records(cr, responses)
            agree += [x.prediction == y.prediction for x, y in zip(first, again)]
            first_scores[cr.cell["model"]] = _goodness(config[0], _primary(first, config[0], seed))
            again_scores[cr.cell["model"]] = _goodness(config[0], _primary(again, config[0], seed))
        same = _ordering(first_scores) == _ordering(again_scores)
        same_ordering.append(same)
        configs.append({"config": _config_name(config), "same_ordering": same})
    prediction_agreement = float(np.mean(agree)) if agree else math.nan
    ordering_agreement = float(np.mean(same_ordering)) if same_ordering else math.nan
    identical = float(np.mean([body["identical"] for body in replayed.values()]))
    first_utc = min(body["utc"] for body in replayed.values())
    models = {body["model"]["name"]: body["model"] for body in replayed.values()}
    logged_models = {body["model"]["name"]: body["model"] for body in results.events.values()}
    return {"status": verdict([prediction_agreement, ordering_agreement], gate.threshold),
            "threshold": gate.threshold, "requests": len(replayed),
            "configs": len(chosen), "identical_responses": identical,
            "prediction_agreement": _nan(prediction_agreement), "full_ranking_agreement": _nan(ordering_agreement),
            "replayed_utc": first_utc,
            "same_model_identity": all(models[n] == logged_models.get(n) for n in models),
            "rankings": configs} | _endpoint_replay(results, replayed)


def _endpoint_replay(results: GridResults, replayed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """For endpoint models: what the server showed during the replay beside what it showed in the
    run (fingerprints, requests in flight), so a disagreement can be traced to the platform."""
    from .gridexec import endpoint_observations

    then = endpoint_observations(list(results.events.values()))  # the whole run, not only what was replayed
    now = endpoint_observations(list(replayed.values()))
    if not now:
        return {}
    # An L1 claim holds only if run and replay together show one fingerprint.
    together = endpoint_observations([*results.events.values(), *replayed.values()])
    concurrency = {name: sorted({b["concurrency"] for b in replayed.values() if b["model"]["name"] == name})
                   for name in now}
    return {"endpoints": {name: {"run": then.get(name), "replay": row,
                                 "same_system_fingerprints": (then.get(name) or {}).get("system_fingerprints")
                                 == row["system_fingerprints"],
                                 "identity_held": together[name]["identity_held"],
                                 "concurrency": concurrency[name][0] if len(concurrency[name]) == 1 else concurrency[name]}
                          for name, row in now.items()}}


# ---- the gate document --------------------------------------------------------------------------

def _mark(folder: Path, results: GridResults) -> None:
    """Mark ``gates/`` as derived before anything is written there (``verify`` skips it)."""
    marker = folder / GATES_FILE
    if not marker.is_file():
        replace_file(marker, (json.dumps({"format": GATES_FORMAT, "plan_sha256": results.frozen["plan_sha256"],
                                          "status": "replay in progress"}, indent=1) + "\n").encode())


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


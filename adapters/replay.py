"""The replay gate: the logged requests asked again later, byte for byte, and read back the same way.

``safetyrepro gate RUN --replay`` asks the chosen share of configurations' requests again (the
logged bodies, the run's own batches -- a batch in a decode group computed with its whole group --
at the thread count each logged, a dependent request after its *logged* generation) through the
engine that computed them (``gridexec.Computed``) into ``gates/replay.jsonl``, a hash-chained
journal (resumable, verifiable; a replay that replaces an earlier one is written beside it and
renamed over it when complete). :func:`replay_gate` reads it back through each cell's scorer and
compares predictions and rankings with the run's.
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

from .durable import replace_file
from .errors import ConfigError
from .gridexec import Computed, pinned_threads
from .gridlayout import GATES_FOLDER, GATES_FORMAT, GATES_MARKER, REPLAY_LOG, REPLAY_NEXT
from .gridoutput import cell_records
from .gridplan import ModelRequest
from .gridresults import GridResults
from .hashing import sha256_json
from .identity import identity, library_versions
from .instrument import config_name, config_of, finite_or_none, goodness_of, ordering, primary_score, verdict
from .journal import Journal
from .records import ItemRecord

__all__ = ["mark_gates_folder", "replay_gate", "replay_selection", "replayed_records", "run_replay"]


def replay_selection(results: GridResults) -> tuple[list[tuple[Any, ...]], list[tuple[int, int]]]:
    """The configurations the replay gate replays (the grid seed chooses ``share`` of them) and the
    plan's batches that hold their requests (replayed whole: a batch's composition can move its
    numbers)."""
    gate = results.prepared.grid.gates.replay  # type: ignore[union-attr]
    configs = list(dict.fromkeys(config_of(c) for c in results.cells))
    n = max(1, math.ceil(gate.share * len(configs)))
    chosen_index = sorted(np.random.default_rng(results.prepared.grid.seed).choice(len(configs), n, replace=False))
    chosen = [configs[i] for i in chosen_index]
    keys = {k for c in results.cells if config_of(c) in chosen for k in results.request_keys(c["cell_id"])}
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
    mark_gates_folder(folder, results)  # (every model checked first: a bad one writes nothing)
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
    computed = Computed()
    index_of = {batch: n for n, batch in enumerate(results.prepared.batches)}
    with tqdm(total=len(keys), initial=done, desc="replay", disable=not show_progress) as bar:
        position = 0
        for a, b in batches:
            position += b - a
            if position <= done:
                continue
            batch = results.prepared.keys[a:b]
            requests = [ModelRequest(**results.events[k]["request"]) for k in batch]
            together = [ModelRequest(**results.events[k]["request"])
                        for k in results.prepared.computed_with(index_of[(a, b)])]
            if loaded != requests[0].model:  # model-major: the previous one is done
                if loaded is not None:
                    release_models()
                lm, loaded = load_model(specs[requests[0].model]), requests[0].model
            with pinned_threads(results.events[batch[0]].get("threads")):  # as the run computed it
                answers, observed = computed.answers(requests, together, lm, logged)
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


def replayed_records(results: GridResults, replayed: dict[str, dict[str, Any]] | None = None,
                     ) -> dict[str, list[ItemRecord]]:
    """Each replayed cell's item records read from the replay's responses (empty: no complete
    replay), by cell id: what the replay gate compares with the run's records."""
    replayed = _replayed(results) if replayed is None else replayed
    if replayed is None:
        return {}
    chosen, _ = replay_selection(results)
    responses = {k: body["response"] for k, body in results.events.items()}
    responses.update({k: body["response"] for k, body in replayed.items()})
    return {cr.cell["cell_id"]: cell_records(cr, responses) for cr in results.prepared.cells
            if config_of(cr.cell) in chosen}


def replay_gate(results: GridResults) -> dict[str, Any]:
    gate = results.prepared.grid.gates.replay  # type: ignore[union-attr]
    replayed = _replayed(results)
    if replayed is None:
        return {"status": "not run", "threshold": gate.threshold,
                "note": f"run `safetyrepro gate {results.folder} --replay` (later than the run) to replay it"}
    chosen, _ = replay_selection(results)
    seed = results.prepared.grid.seed
    records = replayed_records(results, replayed)
    agree, same_ordering, configs = [], [], []
    for config in chosen:
        cells = [cr for cr in results.prepared.cells if config_of(cr.cell) == config]
        first_scores, again_scores = {}, {}
        for cr in cells:
            first, again = results.records(cr.cell["cell_id"]), records[cr.cell["cell_id"]]
            agree += [x.prediction == y.prediction for x, y in zip(first, again)]
            first_scores[cr.cell["model"]] = goodness_of(config[0], primary_score(first, config[0], seed))
            again_scores[cr.cell["model"]] = goodness_of(config[0], primary_score(again, config[0], seed))
        same = ordering(first_scores) == ordering(again_scores)
        same_ordering.append(same)
        configs.append({"config": config_name(config), "same_ordering": same})
    prediction_agreement = float(np.mean(agree)) if agree else math.nan
    ordering_agreement = float(np.mean(same_ordering)) if same_ordering else math.nan
    identical = float(np.mean([body["identical"] for body in replayed.values()]))
    first_utc = min(body["utc"] for body in replayed.values())
    models = {body["model"]["name"]: body["model"] for body in replayed.values()}
    logged_models = {body["model"]["name"]: body["model"] for body in results.events.values()}
    return {"status": verdict([prediction_agreement, ordering_agreement], gate.threshold),
            "threshold": gate.threshold, "requests": len(replayed),
            "configs": len(chosen), "identical_responses": identical,
            "prediction_agreement": finite_or_none(prediction_agreement), "full_ranking_agreement": finite_or_none(ordering_agreement),
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


def mark_gates_folder(folder: Path, results: GridResults) -> None:
    """Mark ``gates/`` as derived before anything is written there (``verify`` skips it)."""
    marker = folder / GATES_MARKER
    if not marker.is_file():
        replace_file(marker, (json.dumps({"format": GATES_FORMAT, "plan_sha256": results.frozen["plan_sha256"],
                                          "status": "replay in progress"}, indent=1) + "\n").encode())

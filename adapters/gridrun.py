"""Running a grid on an append-only, hash-chained log of every model request and response.

``events.jsonl`` (``journal.py`` format, anchored to the plan hash, the request list of
:mod:`.gridplan`, the models' identities and the library versions) gets one entry per unique
request, in plan order: the request body and its SHA-256, the raw response and its SHA-256, the
UTC time, the model's identity, library versions, the retry count and, for local weights, the
torch thread count that computed it (:mod:`.gridexec`). A run killed at any moment and resumed
computes exactly the requests, batches and seeds an uninterrupted run would, so its results are
byte-identical. It resumes only if its log is a prefix of this plan; a torn last line is cut and
reported; a partly done batch is recomputed.

Order of work (nothing is touched before every input is checked):

1. the plan, the data (every cell prepared: files and their hashes, templates), each model
   (folder, weights hash, endpoint form) and the form of ``--out``;
2. ``--out``: an interrupted publish into it is finished (:func:`~.atomic.recover`); a folder that
   holds anything a grid run does not write is refused, never cleaned (:mod:`.gridlayout`);
3. the log is opened (or resumed) and the executor computes the remaining batches;
4. the results are rendered from the logged responses (:mod:`.gridoutput`), the manifest last.

``--overwrite`` never clears the old run first: the new run is computed in
``.<out>.overwrite-<plan hash>`` beside it (a rerun of the same command resumes there) and
published over ``--out`` atomically when it is complete, so a kill at any point leaves the old
run or the new one, complete.

Executors: :func:`open_run` opens (or resumes) the run, an executor computes the remaining
batches and records each request's entry in plan order, :meth:`OpenRun.finish` writes the
results. :func:`run_local` computes in this process; ``gridray.on_ray`` splits the remaining
batches into shards by model and block, runs each as a Ray task with its own chained segment and
merges the segments in plan order (the same entries, so the same results).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import atomic, outfolder
from .durable import pause_point, replace_file
from .errors import ConfigError
from .extract import EXTRACTION_VERSION
from .grid import GridConfig, plan
from .gridexec import FingerprintWatch, endpoint_observations, pinned_threads, run_batches
from .gridlayout import (EVENTS, MANIFEST, PLAN, PREREG, SUMMARY, describe, foreign_entries, is_grid_run, read_plan,
                         temp_leftovers)
from .gridoutput import write_results
from .gridplan import GridPlan, run_anchor
from .identity import identity, library_versions
from .journal import Journal

__all__ = ["OpenRun", "is_overwrite_folder", "open_run", "run_grid", "run_local"]

OVERWRITE_INFIX = ".overwrite-"
"""``.<out>.overwrite-<plan hash, 16 hex>``: where ``--overwrite`` computes the new run."""


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


@dataclass
class OpenRun:
    """A grid run opened for appending: its plan, its log (resumed to whole batches) and the
    responses logged so far. Executors compute the batches after ``done`` and :meth:`record` each
    request's entry in plan order; :meth:`finish` writes the results (and, for ``--overwrite``,
    publishes them over ``publish_to``)."""

    out: Path
    """The folder the run is computed in (``--out``, or its overwrite folder)."""
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
    publish_to: Path | None = None
    """``--overwrite``: the finished run replaces this folder (atomically) when it is complete."""

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
        summary = write_results(self.out, self.frozen, self.prepared, self.responses,
                                endpoint_observations(self.logged), self.journal.last_sha256)
        if self.publish_to is not None:
            _publish(self.out, self.publish_to)
        return summary


# ---- the output folder ---------------------------------------------------------------------------

def _overwrite_folder(out: Path, frozen: dict[str, Any]) -> Path:
    return out.with_name(f".{out.name}{OVERWRITE_INFIX}{frozen['plan_sha256'][:16]}")


def is_overwrite_folder(path: Path, out: Path) -> bool:
    """Whether ``path`` is (by name) the folder ``grid --overwrite`` computes ``out``'s new run in."""
    return bool(re.fullmatch(re.escape(f".{out.name}{OVERWRITE_INFIX}") + "[0-9a-f]{16}", path.name))


def _ours(folder: Path) -> bool:
    """A folder this tool can prove it wrote: a grid run holding nothing else."""
    return folder.is_dir() and not folder.is_symlink() and is_grid_run(folder) and not foreign_entries(folder)


def _classify(out: Path, frozen: dict[str, Any], overwrite: bool) -> str:
    """``new`` (missing or empty), ``same`` (this plan's run, or one killed before its plan was
    written) or ``other`` (another plan's run); a folder that is not ours is refused."""
    if not out.is_dir() or not any(out.iterdir()):
        return "new"
    if not is_grid_run(out):
        # Not a run: artefact names prove nothing here (a user's own summary.json or cells/), so
        # the folder counts as empty only if it holds nothing but the temporary files an
        # interrupted run of ours leaves at the top before its log has a header.
        leftovers = {p.name for p in temp_leftovers(out) if p.parent == out}
        other = sorted(p.name + ("/" if p.is_dir() and not p.is_symlink() else "")
                       for p in out.iterdir() if p.name not in leftovers)
        if other:
            raise ConfigError(f"--out {out} is neither empty nor a SafetyRepro grid run (it holds {describe(other)})",
                              "choose a new or empty folder for --out; nothing in that folder was changed")
        return "new"
    foreign = foreign_entries(out)
    if overwrite and foreign:
        raise ConfigError(f"--out {out} holds a grid run and files SafetyRepro did not write ({describe(foreign)}), "
                          "which --overwrite would delete",
                          "move those files out of the run folder, or choose another --out")
    existing = read_plan(out)
    if (out / PLAN).exists() and existing is None:
        if overwrite:
            return "other"
        raise ConfigError(f"{out / PLAN} is not a plan (edited or corrupted)",
                          "choose another --out, or pass --overwrite to start this grid there")
    if existing is None or existing.get("plan_sha256") == frozen["plan_sha256"]:
        return "same"
    if not overwrite:
        read_before = sorted({str(a["config"].get("extraction_version")) for a, b in zip(existing.get("cells") or [], frozen["cells"])
                              if isinstance(a, dict) and isinstance(a.get("config"), dict) and a.get("scoring") == b["scoring"]
                              and a["config"].get("extraction_version") != b["config"]["extraction_version"]})
        if read_before:
            raise ConfigError(f"{out} holds this grid planned with extraction rules version "
                              f"{', '.join(read_before)}; this SafetyRepro reads generations with version "
                              f"{EXTRACTION_VERSION}, so resuming would read its cells with two rule sets",
                              "finish it with the SafetyRepro that started it, or run the grid into another --out "
                              "(or pass --overwrite)")
        first = next((f"cell {a.get('index')} ({a.get('cell_id')} vs {b['cell_id']})"
                      for a, b in zip(existing.get("cells") or [], frozen["cells"]) if a != b),
                     f"the grid ({len(existing.get('cells') or [])} vs {len(frozen['cells'])} cells)")
        raise ConfigError(f"{out} holds another plan (first difference: {first})",
                          "run the grid that made it, choose another --out, or pass --overwrite")
    return "other"


def _publish(work: Path, out: Path) -> None:
    """Replace ``out`` by the finished run in ``work``, atomically (``atomic.publish_dir``), only if
    ``out`` still holds nothing but a run of ours; then drop abandoned overwrite folders of ours."""
    if out.is_dir() and any(out.iterdir()) and not _ours(out):
        raise ConfigError(f"{out} changed while the new run was computed: it holds "
                          f"{describe(foreign_entries(out) or ['something that is not a grid run'])}",
                          f"move those files away and rerun the same command (the new run is complete in {work}; it "
                          "is published then)")
    # Published from the overwrite folder itself, not renamed to a staging name first: until the
    # swap, a kill leaves the complete new run where a rerun of the same command resumes it (and
    # publishes it without recomputing); recover never deletes a folder of that name.
    atomic.publish_dir(work, out)
    for folder in out.parent.iterdir():
        if is_overwrite_folder(folder, out) and _ours(folder):
            shutil.rmtree(folder, ignore_errors=True)


def _record_sha256(work: Path, record: dict[str, Any] | None) -> str | None:
    """The preregistration record the run's log is anchored to: the one given, else the one the
    run already carries (a resume without --prereg), else none."""
    from .prereg import read

    if record is None and (work / PREREG).is_file():
        record = read(work / PREREG)
    return None if record is None else record["record_sha256"]


def _check_prereg(work: Path, record: dict[str, Any] | None) -> None:
    """Before the log is opened: a run resumes only under the record it began with, and a run
    begun without one cannot adopt one (``grid --prereg``)."""
    path = work / PREREG
    if record is None:
        return
    if path.exists():
        if path.read_bytes() != record["bytes"]:
            raise ConfigError(f"{work} began under another preregistration record than the one given",
                              "resume it with the --prereg it began with, or run into a new --out")
        return
    events = work / EVENTS
    if events.exists() and len(events.read_bytes().split(b"\n")) > 2:  # a header and at least one request
        raise ConfigError(f"{work} began without a preregistration record: its requests were logged before it",
                          "run the preregistered grid into a new --out (a run is preregistered from its start)")


def _carry_prereg(work: Path, record: dict[str, Any] | None) -> None:
    """Put the record into the run once its log has a header (so the folder is a run of ours)
    and before its first request."""
    if record is not None and not (work / PREREG).exists():
        replace_file(work / PREREG, record["bytes"])


def open_run(grid: GridConfig, out: Path, *, data_dir: str | os.PathLike[str] | None = None, overwrite: bool = False,
             notify: Callable[[str], None] = print, prereg: dict[str, Any] | None = None) -> OpenRun | dict[str, Any]:
    """Check every input, then open (or resume) the grid's run in ``out``; a finished run's summary
    instead. ``prereg``: the preregistration record it must run under (:func:`.prereg.adopt`)."""
    frozen = plan(grid)
    outfolder.check_form(out)
    prepared = GridPlan(frozen, grid, data_dir)  # every cell's data, hashes and templates
    identities = {m.name: identity(m) for m in grid.models}  # every model's folder and weights
    versions = library_versions()
    # Everything is checked: from here on the output folder may change.
    for note in atomic.recover(out) if out.parent.is_dir() else []:
        notify(note)
    state = _classify(out, frozen, overwrite)
    work, publish_to = out, None
    if overwrite and state != "new":
        work, publish_to = _overwrite_folder(out, frozen), out
    anchor = run_anchor(frozen, prepared, identities, versions, _record_sha256(work, prereg))
    if publish_to is not None:
        if work.exists():
            if not _ours(work) and any(work.iterdir()):
                raise ConfigError(f"{work} holds files SafetyRepro did not write ({describe(foreign_entries(work))})",
                                  "move that folder away, then rerun")
            try:
                _check_resumable(work / EVENTS, prepared, identities, versions)
                if (work / EVENTS).exists():  # its header and chain, as the resume below reads them
                    Journal(work / EVENTS, anchor, prepared.keys).open(align=prepared.keep)
            except ConfigError:  # an earlier attempt of ours that cannot be resumed: discarded
                notify(f"discarding {work}: an earlier --overwrite attempt with other models or libraries")
                shutil.rmtree(work)
    elif state == "same" and (out / MANIFEST).exists():
        if prereg is not None and (not (out / PREREG).exists() or (out / PREREG).read_bytes() != prereg["bytes"]):
            raise ConfigError(f"{out} holds this plan's finished run, not run under the preregistration given",
                              "run the preregistered grid into a new --out")
        notify(f"{out}: this plan is already complete (verify it with `safetyrepro verify {out}`)")
        return json.loads((out / SUMMARY).read_text())
    else:
        _check_resumable(out / EVENTS, prepared, identities, versions)
    _check_prereg(work, prereg)
    atomic.check_writable(work)
    work.mkdir(parents=True, exist_ok=True)
    for leftover in temp_leftovers(work):  # what an interrupted replace_file of ours left
        leftover.unlink()
    journal = Journal(work / EVENTS, anchor, prepared.keys)
    resumed = journal.open(align=prepared.keep)
    replace_file(work / PLAN, (json.dumps(frozen, indent=1) + "\n").encode())
    _carry_prereg(work, prereg)  # after the header (the folder is a run), before any request
    for note in resumed.notes:
        notify(note)
    run = OpenRun(out=work, frozen=frozen, grid=grid, prepared=prepared, identities=identities, versions=versions,
                  anchor=anchor, journal=journal, notify=notify, responses={}, logged=list(resumed.bodies),
                  fingerprints=FingerprintWatch(), publish_to=publish_to)
    for key, body in zip(prepared.keys, resumed.bodies):
        run.responses[key] = body["response"]
        run.fingerprints.observe(body["model"]["name"], body)
    if resumed.bodies:
        notify(f"resuming: {len(resumed.bodies)} of {len(prepared.keys)} requests already in {work / EVENTS}")
    if publish_to is not None:
        notify(f"computing the new run in {work}; {out} keeps the old one until the new one is complete")
    return run


def run_local(run: OpenRun, show_progress: bool = True) -> None:
    """Compute the remaining batches in this process, model by model, logging each as it ends."""
    from .runner import load_model, release_models

    models = {m.name: m for m in run.grid.models}
    loaded: dict[str, Any] = {}

    def model_for(name: str) -> Any:
        if name not in loaded:  # model-major order: the previous one is done
            if loaded:
                loaded.clear()
                release_models()
            loaded[name] = load_model(models[name].spec)
        return loaded[name]

    run_batches(run.prepared, done=run.done, model_for=model_for, responses=run.responses, identities=run.identities,
                versions=run.versions, record=run.record, show_progress=show_progress,
                after_batch=lambda index, stop: pause_point(f"after-request-{stop}", run.out.parent))


def run_grid(grid: GridConfig, out: Path, *, data_dir: str | os.PathLike[str] | None = None, overwrite: bool = False,
             notify: Callable[[str], None] = print, show_progress: bool = True, threads: int | None = None,
             executor: Callable[[OpenRun], None] | None = None, prereg: dict[str, Any] | None = None) -> dict[str, Any]:
    """Plan, run (or resume) and write the results of a grid into ``out``; the run summary.

    ``executor`` computes the open run's remaining batches (default: :func:`run_local`; the Ray
    one is ``gridray.on_ray``); ``threads`` pins torch's thread count in this process (response
    bytes depend on it: a run compared byte for byte with another uses the same count); ``prereg``:
    the preregistration record the run must carry from its first request (``grid --prereg``)."""
    run = open_run(grid, out, data_dir=data_dir, overwrite=overwrite, notify=notify, prereg=prereg)
    if isinstance(run, dict):
        return run
    if executor is not None:
        executor(run)
    else:
        with pinned_threads(threads):
            run_local(run, show_progress)
    return run.finish()

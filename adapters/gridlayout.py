"""A grid run's folder: the names it holds, which of them are its artefacts, and what is ours at all.

Layout (stable): ``plan.json``, ``events.jsonl`` (the hash-chained request log), the results --
``cells/<cell_id>/records.jsonl`` and ``summary.json`` (and ``repeat/`` for the repeat gate),
``cells.parquet``, ``repeats.parquet``, ``summary.json`` -- then ``manifest.json``; a preregistered
run also holds its record, ``prereg.jsonl`` (``grid --prereg``, :mod:`.prereg`). Derived
folders (``report/`` of ``safetyrepro stats``, ``gates/`` of ``safetyrepro gate``) are marked by
a file naming their format; they are not artefacts and can always be written again.

*Ownership*: a command deletes or replaces only what it can prove it wrote. :func:`foreign_entries`
lists every entry of a folder that is none of the names above, a derived folder holding only what
its command wrote (:func:`is_report`, :func:`is_gates`), or a
temporary file that :func:`~.durable.replace_file` leaves behind when it is killed mid-write
(``.<artefact name>.tmp-XXXXXXXX``). A folder with any foreign entry is never cleaned, overwritten
or published over.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from . import atomic
from .durable import temp_target
from .grid import build_grid, repeated
from .journal import FORMAT as JOURNAL_FORMAT

__all__ = [
    "CELLS", "CELLS_TABLE", "DERIVED", "EVENTS", "PREREG", "GATES_FOLDER", "GATES_FORMAT", "GATES_MARKER", "MANIFEST", "MANIFEST_FORMAT", "PLAN",
    "RECORDS", "REPEATS", "REPEAT_FOLDER", "REPLAY_LOG", "REPLAY_NEXT", "REPORT_FORMAT", "REPORT_MARKER", "SUMMARY", "describe", "expected_files",
    "foreign_entries", "GATES_FILES", "is_derived", "is_gates", "is_grid_run", "is_ours_derived", "is_report", "read_plan", "temp_leftovers", "TOP_FILES", "CELL_FILES",
]

EVENTS = "events.jsonl"
PLAN = "plan.json"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
CELLS = "cells"
CELLS_TABLE = "cells.parquet"
REPEATS = "repeats.parquet"
"""The repeat gate's cells measured again (``cells.parquet``'s columns plus ``repeat``)."""
REPEAT_FOLDER = "repeat"
"""``cells/<cell_id>/repeat/``: a repeated cell's second records and summary."""
RECORDS = "records.jsonl"
PREREG = "prereg.jsonl"
"""A preregistered run's copy of its preregistration record (:mod:`.prereg`): an artefact when present."""

MANIFEST_FORMAT = "safetyrepro-manifest/1"
REPORT_FORMAT = "safetyrepro-report/1"
REPORT_MARKER = "report.json"
"""A folder holding this file with this format is a report derived from the run (``safetyrepro
stats``): ``verify`` does not count it as an artefact; it can always be written again."""
GATES_FORMAT = "safetyrepro-gates/1"
GATES_MARKER = "gates.json"
"""Likewise the gate folder (``safetyrepro gate``: its verdicts and its replay log)."""
DERIVED = {REPORT_MARKER: REPORT_FORMAT, GATES_MARKER: GATES_FORMAT}
GATES_FOLDER = "gates"
"""``<run>/gates/``: the gate verdicts (``gates.json``) and the replay log."""
REPLAY_LOG = "replay.jsonl"
REPLAY_NEXT = ".replay.jsonl.next"
"""A replay that replaces an earlier one is written here, and renamed over it when complete."""

TOP_FILES = (PLAN, EVENTS, MANIFEST, SUMMARY, CELLS_TABLE, REPEATS, PREREG)
CELL_FILES = (RECORDS, SUMMARY)
_CELL_ID = re.compile(r"\d{5}-[0-9a-f]{12}")


def _marker(folder: Path, marker: str) -> dict[str, Any] | None:
    """A derived folder's marker document, if it names its format."""
    if folder.is_symlink() or not folder.is_dir():
        return None
    try:
        document = json.loads((folder / marker).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return document if isinstance(document, dict) and document.get("format") == DERIVED[marker] else None


def is_derived(folder: Path) -> bool:
    """Whether a folder is marked as derived from the run (a report or the gates), not one of its
    artefacts: what ``verify`` leaves aside. Says nothing of who wrote what is inside (see
    :func:`is_report` and :func:`is_gates`, which decide what may be replaced)."""
    return any(_marker(folder, marker) is not None for marker in DERIVED)


def is_report(folder: Path) -> bool:
    """A report ``safetyrepro stats`` wrote and nobody added to: its marker, and exactly the files
    the marker lists."""
    from .outfolder import holds_exactly

    document = _marker(folder, REPORT_MARKER)
    return document is not None and holds_exactly(folder, document.get("files"), besides=REPORT_MARKER)


GATES_FILES = (GATES_MARKER, REPLAY_LOG, REPLAY_NEXT)


def is_gates(folder: Path) -> bool:
    """A gates folder ``safetyrepro gate`` wrote: its marker, and nothing but its own files (and
    their temporary files)."""
    if _marker(folder, GATES_MARKER) is None:
        return False
    return all(not p.is_symlink() and p.is_file() and (p.name in GATES_FILES or temp_target(p.name) in GATES_FILES)
               for p in folder.iterdir())


def is_ours_derived(folder: Path) -> bool:
    """A report or gates folder that holds only what the command wrote (may be replaced with its run)."""
    return is_report(folder) or is_gates(folder)


def expected_files(frozen: dict[str, Any]) -> list[str]:
    """Every artefact a finished run of this plan has (besides the manifest)."""
    files = [PLAN, EVENTS, CELLS_TABLE, SUMMARY]
    grid = build_grid(frozen["grid"], source=PLAN)
    for cell in frozen["cells"]:
        files += [f"{CELLS}/{cell['cell_id']}/{RECORDS}", f"{CELLS}/{cell['cell_id']}/{SUMMARY}"]
        if repeated(grid, cell):
            files += [f"{CELLS}/{cell['cell_id']}/{REPEAT_FOLDER}/{RECORDS}",
                      f"{CELLS}/{cell['cell_id']}/{REPEAT_FOLDER}/{SUMMARY}"]
    if any(repeated(grid, cell) for cell in frozen["cells"]):
        files.append(REPEATS)
    return files


def read_plan(out: Path) -> dict[str, Any] | None:
    """``plan.json`` if it is a plan of this tool (its format named), else None."""
    from .grid import PLAN_FORMAT

    try:
        frozen = json.loads((out / PLAN).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    ok = isinstance(frozen, dict) and frozen.get("format") == PLAN_FORMAT and isinstance(frozen.get("cells"), list)
    return frozen if ok else None


def _journal_header(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            first = json.loads(handle.readline())
        return first["header"]["format"] == JOURNAL_FORMAT
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return False


def is_grid_run(out: Path) -> bool:
    """Whether ``out`` holds a grid run of this tool (finished or not): a plan of ours, or a request
    log with our journal header (a run killed before it wrote its plan)."""
    return read_plan(out) is not None or _journal_header(out / EVENTS)


def temp_leftovers(out: Path) -> list[Path]:
    """The temporary files interrupted :func:`~.durable.replace_file` calls of a grid run left in
    ``out`` and its cell folders (matched by the exact names the run writes; nothing else)."""
    folders: list[tuple[Path, tuple[str, ...]]] = [(out, TOP_FILES)]
    cells = out / CELLS
    if cells.is_dir() and not cells.is_symlink():
        for cell in cells.iterdir():
            if _CELL_ID.fullmatch(cell.name) and cell.is_dir() and not cell.is_symlink():
                folders += [(cell, CELL_FILES), (cell / REPEAT_FOLDER, CELL_FILES)]
    found = []
    for folder, names in folders:
        if folder.is_dir() and not folder.is_symlink():
            found += [p for p in folder.iterdir()
                      if not p.is_symlink() and p.is_file() and temp_target(p.name) in names]
    return found


def foreign_entries(out: Path) -> list[str]:
    """Entries of ``out`` that no grid run writes (relative paths, sorted): empty for a folder
    that holds only a run's artefacts, derived folders and our temporary files."""
    foreign: list[str] = []
    for entry in sorted(out.iterdir()):
        name = entry.name
        if entry.is_symlink():
            foreign.append(name)
        elif entry.is_dir():
            if name == CELLS:
                foreign += _foreign_in_cells(entry)
            elif not (is_ours_derived(entry) or atomic.is_leftover(name)):
                foreign.append(name + "/")
        elif not (name in TOP_FILES or temp_target(name) in TOP_FILES):
            foreign.append(name)
    return foreign


def _foreign_in_cells(cells: Path) -> list[str]:
    foreign = []
    for cell in sorted(cells.iterdir()):
        where = f"{CELLS}/{cell.name}"
        if cell.is_symlink() or not cell.is_dir() or not _CELL_ID.fullmatch(cell.name):
            foreign.append(where)
            continue
        for folder, sub in ((cell, where), (cell / REPEAT_FOLDER, f"{where}/{REPEAT_FOLDER}")):
            if not folder.is_dir() or folder.is_symlink():
                continue
            for entry in sorted(folder.iterdir()):
                if entry.name == REPEAT_FOLDER and folder == cell and entry.is_dir() and not entry.is_symlink():
                    continue
                if entry.is_symlink() or not entry.is_file() or not (
                        entry.name in CELL_FILES or temp_target(entry.name) in CELL_FILES):
                    foreign.append(f"{sub}/{entry.name}")
    return foreign


def describe(entries: list[str], limit: int = 3) -> str:
    """A short list of names for an error line."""
    shown = ", ".join(entries[:limit])
    return shown + (f" and {len(entries) - limit} more" if len(entries) > limit else "")


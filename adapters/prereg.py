"""Preregistration: a plan frozen and time-stamped before it runs, and what a run can prove of it.

``safetyrepro plan GRID --freeze DIR`` writes ``DIR/prereg.jsonl``, a hash-chained journal
(:mod:`.journal`'s format) anchored to the plan hash, whose entries are, in this order:

* ``plan``: the frozen plan (``plan.json``'s document);
* ``grid``: ``{"source", "text", "sha256"}`` -- the grid file's exact text (a preset: its canonical
  JSON) and its SHA-256;
* ``pilot``: the pilot's design (``design.json`` of ``safetyrepro pilot`` without its per-comparison
  rows) or ``null``;
* ``environment``: ``{"versions", "utc"}`` -- the library versions and the UTC time of freezing;

and ``DIR/plan.json`` (a copy to read). The record's final chain hash is printed: quote it
somewhere others keep (a registry, a commit, a message) *before* running -- this tool can check
that a record is intact and precedes the run's log, but no file can prove on its own when it was
written.

``safetyrepro grid --prereg DIR`` refuses a plan other than the record's, and copies the record
into the run as ``prereg.jsonl`` before the first request is logged (an artefact: listed in the
manifest, checked by ``verify``). A run resumes under the record it began with; a run begun
without one cannot adopt one later. ``verify`` checks a run's record: its chain, its plan (the
run's), and that its time precedes the log's first request. ``stats`` and the GRID cards say
"preregistered at T (plan H, record R), first request at T2" or "not preregistered".
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .gridlayout import PREREG
from .hashing import sha256_bytes
from .journal import Journal, verify as verify_journal

__all__ = ["ENTRIES", "PREREG", "adopt", "check_run", "describe", "freeze", "read", "status"]

ENTRIES = ("plan", "grid", "pilot", "environment")


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def freeze(folder: Path, frozen: dict[str, Any], *, grid_source: str, grid_text: str,
           pilot: dict[str, Any] | None) -> str:
    """Write the record into ``folder`` (new or empty: a preregistration is never replaced); its
    final chain hash."""
    from . import outfolder
    from .durable import replace_file
    from .identity import library_versions

    outfolder.check_form(folder, "--freeze")
    if folder.is_dir() and any(folder.iterdir()):
        raise ConfigError(f"--freeze {folder} is not empty",
                          "choose a new folder: a preregistration is written once and never replaced")
    folder.mkdir(parents=True, exist_ok=True)
    journal = Journal(folder / PREREG, frozen["plan_sha256"], ENTRIES)
    journal.open()
    journal.append("plan", {"plan": frozen})
    journal.append("grid", {"source": grid_source, "text": grid_text, "sha256": sha256_bytes(grid_text.encode())})
    journal.append("pilot", {"pilot": pilot})
    journal.append("environment", {"versions": library_versions(),
                                   "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")})
    replace_file(folder / "plan.json", (json.dumps(frozen, indent=1) + "\n").encode())
    return journal.last_sha256


def read(path: Path) -> dict[str, Any]:
    """A record's content (``plan_sha256``, ``utc``, ``record_sha256``, the entries' bodies), or one
    ConfigError naming what is wrong with it."""
    fix = "pass the folder `safetyrepro plan --freeze` wrote, unchanged"
    try:
        raw = path.read_bytes()
        lines = [json.loads(line) for line in raw.split(b"\n")[:-1]]
        anchor = lines[0]["header"]["anchor"]
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist", fix) from None
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        raise ConfigError(f"{path} is not a preregistration record (edited or corrupted)", fix) from None
    problems = verify_journal(path, anchor, ENTRIES)
    if problems or len(lines) != len(ENTRIES) + 1:
        raise ConfigError(f"{path} does not verify ({problems[0] if problems else 'incomplete'})", fix)
    try:
        bodies = {entry["key"]: entry["body"] for entry in lines[1:]}
        found = {"plan_sha256": anchor, "utc": bodies["environment"]["utc"], "record_sha256": lines[-1]["sha256"],
                 "plan": bodies["plan"]["plan"], "grid": bodies["grid"], "pilot": bodies["pilot"]["pilot"],
                 "versions": bodies["environment"]["versions"], "bytes": raw}
        when = _time(found["utc"])
        assert isinstance(found["plan"], dict) and found["plan"].get("plan_sha256") == anchor
    except (KeyError, TypeError, ValueError, AssertionError):
        raise ConfigError(f"{path} is not a preregistration record (its entries are not what `plan --freeze` writes)",
                          fix) from None
    if when.tzinfo is None:
        raise ConfigError(f"{path} gives its time without a time zone ({found['utc']})", fix)
    return found


def adopt(folder: Path, frozen: dict[str, Any]) -> dict[str, Any]:
    """``grid --prereg DIR``: the record, refused unless its plan is this one."""
    record = read(folder / PREREG if folder.is_dir() else folder)
    if record["plan_sha256"] != frozen["plan_sha256"] or record["plan"] != frozen:
        first = next((f"cell {a.get('index')}" for a, b in zip(record["plan"].get("cells", []), frozen["cells"]) if a != b),
                     f"{len(record['plan'].get('cells', []))} vs {len(frozen['cells'])} cells, or the grid's settings")
        raise ConfigError(f"the plan differs from the one preregistered in {folder} (plan {frozen['plan_sha256'][:16]} vs "
                          f"{record['plan_sha256'][:16]}; first difference: {first})",
                          "run the preregistered grid as frozen, or freeze the changed plan anew (and say so)")
    return record


def check_run(out: Path, frozen: dict[str, Any], first_utc: str | None) -> list[str]:
    """Problems with a run's record (empty: none, or no record): chain, plan, time order."""
    path = out / PREREG
    if not path.exists():
        return []
    try:
        record = read(path)
    except ConfigError as exc:
        return [f"{PREREG}: {exc.what}"]
    problems = []
    if record["plan_sha256"] != frozen["plan_sha256"] or record["plan"] != frozen:
        problems.append(f"{PREREG} preregisters another plan ({record['plan_sha256'][:16]})")
    if first_utc is not None and not _time(record["utc"]) < _time(first_utc):
        problems.append(f"{PREREG} was frozen at {record['utc']}, not before the log's first request ({first_utc})")
    return problems




def status(out: Path, first_utc: str | None) -> dict[str, Any]:
    """What a run says of its preregistration (for ``stats`` and the cards)."""
    if not (out / PREREG).exists():
        return {"preregistered": False}
    record = read(out / PREREG)
    return {"preregistered": True, "utc": record["utc"], "plan_sha256": record["plan_sha256"],
            "record_sha256": record["record_sha256"], "first_request_utc": first_utc,
            "pilot": record["pilot"] is not None}


def describe(found: dict[str, Any]) -> str:
    """One sentence: "preregistered at T (plan H, record R), first request at T2" or "not preregistered"."""
    if not found.get("preregistered"):
        return "not preregistered"
    return (f"preregistered at {found['utc']} (plan {found['plan_sha256'][:16]}, record {found['record_sha256'][:16]}"
            f"{', with a pilot' if found['pilot'] else ''}), first request at {found['first_request_utc']}")

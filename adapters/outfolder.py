"""``--out`` folders: what a command may write into, and what it may replace.

A command replaces an existing folder only when it can prove it wrote what is there (the
``is_ours`` test of that command's output: a run's two files, a report's marker, a comparison's
header) and the user passed ``--overwrite``; a folder holding anything else is refused, never
cleaned. The checks that touch nothing (:func:`out_path`, :func:`check_form`,
:func:`check_replaceable`) run with the other input checks, before any work; :func:`prepare`
(finish an interrupted publish, probe that the parent is writable) runs once every input passed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from . import atomic
from .errors import ConfigError

__all__ = ["check_file_target", "check_form", "check_out_dir", "check_replaceable", "holds_exactly", "is_run_output",
           "listing", "out_path", "prepare", "publish"]

RUN_FILES = ("records.jsonl", "summary.json")
"""What ``safetyrepro run --out`` writes, and nothing else."""


def out_path(out_dir: str | os.PathLike[str] | None, flag: str = "--out") -> Path | None:
    """``--out`` as an absolute path that names a folder ("", ".", "/" and "x/.." do not)."""
    if out_dir is None:
        return None
    raw = os.fspath(out_dir)
    path = Path(os.path.abspath(raw)) if raw.strip() else None
    if path is None or not path.name or Path(raw).name in ("", ".", ".."):
        raise ConfigError(f"output folder {raw!r} does not name a folder",
                          f"pass a folder path for {flag}, e.g. runs/bbq-minimal")
    return path


def check_form(target: Path, flag: str = "--out") -> None:
    """Touching nothing: ``target`` is not a file and no folder above it is a file."""
    if os.path.lexists(target) and not target.is_dir():
        raise ConfigError(f"{flag} {target} is an existing file, not a folder",
                          f"choose a folder path for {flag} (a new or empty folder), or move that file away")
    for ancestor in target.parents:
        if os.path.lexists(ancestor) and not ancestor.is_dir():
            raise ConfigError(f"{flag} {target} cannot be created: {ancestor} is a file",
                              f"choose a {flag} inside a folder")
        if ancestor.is_dir():
            break
    atomic.check_name(target)


def check_file_target(target: Path, flag: str, example: str) -> None:
    """Touching nothing: ``target`` names a file that can be written (not a folder, nothing above
    it a file)."""
    if target.is_dir():
        raise ConfigError(f"{flag} {target} is a folder; {flag} names a file to write",
                          f"pass a file path, e.g. {flag} {example}")
    for ancestor in target.parents:
        if os.path.lexists(ancestor) and not ancestor.is_dir():
            raise ConfigError(f"{flag} {target} cannot be written: {ancestor} is a file", f"choose a {flag} inside a folder")
        if ancestor.is_dir():
            break


def check_replaceable(target: Path, overwrite: bool, *, is_ours: Callable[[Path], bool], what: str,
                      flag: str = "--out") -> None:
    """Touching nothing: a non-empty ``target`` must be ``what`` this command wrote (``is_ours``),
    and is replaced only with ``overwrite``."""
    try:
        entries = sorted(p.name for p in target.iterdir()) if target.is_dir() else []
    except OSError as exc:
        raise ConfigError(f"{flag} {target} cannot be read ({exc.strerror})", f"choose a readable {flag}") from None
    if not entries:
        return
    if not is_ours(target):
        shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
        raise ConfigError(f"{flag} {target} holds files that are not a {what} ({shown})",
                          f"choose a new or empty folder for {flag}; only an earlier {what} is ever replaced")
    if not overwrite:
        raise ConfigError(f"{flag} {target} already holds a {what}",
                          f"choose another {flag}, or pass --overwrite to replace it")


def publish(staging: Path, target: Path, *, is_ours: Callable[[Path], bool], what: str) -> None:
    """Publish a complete ``staging`` folder over ``target`` (:func:`~.atomic.publish_dir`), checking
    again first that ``target`` holds nothing but ``what`` this command wrote: a file put there
    while the work ran is never deleted (nothing is replaced, and the error says so)."""
    try:
        entries = sorted(p.name for p in target.iterdir()) if target.is_dir() else []
    except OSError:
        entries = []
    if entries and not is_ours(target):
        raise ConfigError(f"{target} changed while this ran: it holds files that are not a {what} "
                          f"({', '.join(entries[:3])})",
                          "move them away and run the same command again (nothing was replaced)")
    atomic.publish_dir(staging, target)


def prepare(target: Path) -> list[str]:
    """Once every input is checked: finish or undo an interrupted publish into ``target`` (the
    messages, for the caller to print) and probe that it can be written."""
    try:
        notes = atomic.recover(target) if target.parent.is_dir() else []
    except OSError as exc:
        raise ConfigError(f"output folder {target} cannot be used ({exc.strerror})", "choose a writable --out") from None
    atomic.check_writable(target)
    return notes


def listing(folder: Path, *, besides: str) -> list[str]:
    """Every file (and link) under ``folder`` but ``besides``, as sorted relative POSIX paths:
    what a derived folder's marker records, so that replacing the folder later can check that it
    holds exactly what the command wrote (a file a user added is never deleted with it)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if (p.is_file() or p.is_symlink()) and p.relative_to(folder).as_posix() != besides)


def holds_exactly(folder: Path, files: object, *, besides: str) -> bool:
    """Whether ``folder`` holds exactly ``files`` (a marker's record) besides its marker."""
    try:
        return isinstance(files, list) and listing(folder, besides=besides) == sorted(map(str, files))
    except OSError:
        return False


def is_run_output(folder: Path) -> bool:
    """A ``safetyrepro run`` output: its two files (the summary naming its configuration hash), nothing else."""
    try:
        names = {p.name for p in folder.iterdir()}
        summary = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return names == set(RUN_FILES) and isinstance(summary, dict) and "config_hash" in summary


def check_out_dir(out_dir: Path | None, overwrite: bool) -> list[str]:
    """``safetyrepro run``'s ``--out``: a new or empty folder, or an earlier run's output to replace
    with ``--overwrite``; an interrupted publish into it is finished first (its messages returned)."""
    if out_dir is None:
        return []
    check_form(out_dir)
    # An interrupted publish can leave out_dir missing with its results beside it: restored first.
    notes = atomic.recover(out_dir) if out_dir.parent.is_dir() else []
    check_replaceable(out_dir, overwrite, is_ours=is_run_output, what="`safetyrepro run` output")
    atomic.check_writable(out_dir)
    return notes


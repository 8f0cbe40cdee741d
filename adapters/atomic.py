"""Publish a finished result folder so that a kill at any instant never loses the results.

The problem: replacing folder ``out`` with a freshly written one takes two renames
(``out -> old``, ``staging -> out``). A kill between them leaves ``out`` missing, and every later
run that reads or overwrites ``out`` breaks.

The protocol (all names live in ``out``'s parent, so every rename stays on one filesystem):

* ``stage_dir(out)`` creates ``.<out>.staging-<hex8>``; the caller writes the results there
  (``write_text_durably`` / ``fsync_file`` make each file durable).
* ``publish_dir(staging, out)``:

  1. fsyncs everything under staging, then, when ``out`` exists, writes the journal
     ``.<out>.publish`` (JSON ``{"mode", "new", "new_ino", "old"}``; written to a temporary
     file, fsynced and renamed into place). It is written only once staging is complete.
  2. *Exchange mode* (Linux ``renameat2(RENAME_EXCHANGE)``): swaps staging and ``out`` in one
     atomic step, so ``out`` is never missing; the old results now sit at the staging name.
     *Fallback mode* (other systems and filesystems): renames ``out -> .<out>-old-<hex8>``, then
     ``staging -> out``. Between the two renames ``out`` is missing; the journal covers that window.
  3. deletes the old results, then the journal. The parent is fsynced after every rename.

  When ``out`` does not exist yet, a single ``rename(staging, out)`` publishes atomically and no
  journal is needed.

* ``recover(out)`` runs at the start of every later run that writes ``out`` and finishes or
  undoes an interrupted publish:

  - ``out`` exists: it is complete (old or new), so it is kept and every leftover (staging
    folders, old folders, the journal) is deleted.
  - ``out`` is missing and the journal names a staging folder that still exists: roll FORWARD
    (rename it to ``out``). The journal is only written after staging was complete, so this is
    the complete new result, and in fallback mode the only way ``out`` can be missing with a
    journal is the window between the two renames, where staging is untouched.
  - ``out`` is missing and staging is gone: roll BACK (rename the old folder to ``out``).
  - only then are the remaining leftovers deleted, so the only complete copy is never deleted.

  Staging folders found without a journal were never published (the run was killed while
  writing), so they are deleted and ``out`` keeps what it had.

Concurrent publishes to the same ``out`` from several processes are not supported.

Test hook: with ``SAFETYREPRO_TEST_PAUSE_AT=<step>`` in the environment, ``publish_dir`` writes
``<parent>/.paused-<step>`` and sleeps (``SAFETYREPRO_TEST_PAUSE_SECONDS``, default 30) at that
step, so tests can SIGKILL it at an exact instant. Steps: ``PAUSE_STEPS``.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

from .durable import (PAUSE_ENV, fsync_dir, fsync_file, pause_point, replace_file, sync_tree, temp_target,
                      write_text_durably)
from .errors import ConfigError

__all__ = [
    "PAUSE_STEPS", "check_name", "check_writable", "exchange_supported", "fsync_dir", "fsync_file", "is_leftover", "publish_dir", "recover",
    "pause_point", "replace_file", "stage_dir", "sync_tree", "temp_target", "write_text_durably",
]

# In order of occurrence. Exchange mode passes before-swap, after-marker, after-exchange,
# before-cleanup, during-cleanup; fallback mode passes all but after-exchange.
PAUSE_STEPS = (
    "before-swap", "after-marker", "after-exchange", "after-first-rename", "after-second-rename",
    "before-cleanup", "during-cleanup",
)

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# Errors meaning "this kernel/filesystem cannot exchange": fall back to the journaled renames.
_NO_EXCHANGE = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}
_TOKEN_HEX = 8  # characters of randomness in staging/old names
# Longest name derived from the target's: ".<name>.publish.tmp-<hex8>".
_EXTRA_NAME_BYTES = len(".") + len(".publish.tmp-") + _TOKEN_HEX


# --------------------------------------------------------------------------- names


def _staging_re(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(f".{name}.staging-") + f"[0-9a-f]{{{_TOKEN_HEX}}}")


def _old_re(name: str) -> re.Pattern[str]:
    # ".<name>-replaced" is what the runner used before this module; treat it as old results.
    return re.compile(re.escape(f".{name}-old-") + f"[0-9a-f]{{{_TOKEN_HEX}}}|" + re.escape(f".{name}-replaced"))


def is_leftover(name: str) -> bool:
    """Whether a file or folder name is what an interrupted publish leaves beside its target (a
    staging or old folder, a journal); ``recover`` of that target removes it."""
    return bool(re.fullmatch(r"\.(.+)\.(staging-|publish\.tmp-)[0-9a-f]{%d}|\.(.+)\.publish|\.(.+)-old-[0-9a-f]{%d}"
                             % (_TOKEN_HEX, _TOKEN_HEX), name))


def _marker(target: Path) -> Path:
    return target.with_name(f".{target.name}.publish")


def _marker_tmp_re(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(f".{name}.publish.tmp-") + f"[0-9a-f]{{{_TOKEN_HEX}}}")


def _token() -> str:
    return secrets.token_hex(_TOKEN_HEX // 2)


def _write_marker(target: Path, content: dict[str, Any]) -> None:
    """Write the journal atomically: temporary file, fsync, rename, fsync the parent."""
    tmp = target.with_name(f".{target.name}.publish.tmp-{_token()}")
    write_text_durably(tmp, json.dumps(content) + "\n")
    os.replace(tmp, _marker(target))
    fsync_dir(target.parent)


def _read_marker(target: Path) -> dict[str, Any] | None:
    try:
        content = json.loads(_marker(target).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # unreadable journal: recover falls back to what is on disk
        return {}
    return content if isinstance(content, dict) else {}


def _remove(path: Path) -> None:
    """Delete a leftover folder (or a file/link that sits at a leftover name)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


# --------------------------------------------------------------------------- exchange


def _renameat2() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # no libc handle, or glibc < 2.28 / musl without it
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap ``a`` and ``b``. False when the system cannot exchange (nothing changed)."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _NO_EXCHANGE:
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def exchange_supported() -> bool:
    """Whether this system has ``renameat2`` (a given filesystem may still refuse exchange)."""
    return _RENAMEAT2 is not None


# --------------------------------------------------------------------------- test hook


def _remove_old(path: Path, parent: Path) -> None:
    """Delete the replaced results; the pause hook can stop halfway to test a partial delete."""
    if os.environ.get(PAUSE_ENV) == "during-cleanup" and path.is_dir() and not path.is_symlink():
        for folder, _dirs, files in os.walk(path):
            if files:
                os.unlink(os.path.join(folder, files[0]))
                break
        pause_point("during-cleanup", parent)
    _remove(path)


# --------------------------------------------------------------------------- public API


def _config_error(target: Path, exc: OSError) -> ConfigError:
    if exc.errno == errno.ENAMETOOLONG:
        return ConfigError(f"output folder {target} has a name that is too long ({exc.strerror})",
                           "choose a shorter --out")
    return ConfigError(f"output folder {target} cannot be written ({exc.strerror or exc})", "choose a writable --out")


def check_name(target: Path) -> None:
    """Touching nothing: ``target``'s name leaves room for the staging and journal names beside it."""
    folder = next((p for p in Path(target).parents if p.is_dir()), Path("/"))
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        name_max = 255
    if len(os.fsencode(Path(target).name)) + _EXTRA_NAME_BYTES > name_max:
        raise ConfigError(
            f"output folder {target} has a name that is too long "
            f"({len(os.fsencode(Path(target).name))} bytes; at most {name_max - _EXTRA_NAME_BYTES} here)",
            "choose a shorter --out")


def check_writable(target: Path) -> None:
    """Fail early, before any work: ``target`` must not be a file, its name must leave room for
    the staging/journal names, and its parent must be creatable and writable (checked by creating
    and removing a probe staging folder)."""
    target = Path(target)
    if os.path.lexists(target) and not target.is_dir():
        raise ConfigError(f"output folder {target} is an existing file, not a folder",
                          "choose another --out, or move that file away")
    for ancestor in target.parents:
        if os.path.lexists(ancestor) and not ancestor.is_dir():
            raise ConfigError(f"output folder {target} cannot be created: {ancestor} is a file",
                              "choose an --out inside a folder")
        if ancestor.is_dir():
            break
    try:
        check_name(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        probe = stage_dir(target)
        os.rmdir(probe)
    except OSError as exc:
        raise _config_error(target, exc) from exc


def stage_dir(target: Path) -> Path:
    """Create an empty staging folder ``.<target name>.staging-<hex8>`` next to ``target`` (the
    parent is created if needed). Permissions are those of a normal new folder (umask applies)."""
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        while True:
            staging = target.with_name(f".{target.name}.staging-{_token()}")
            try:
                os.mkdir(staging)
            except FileExistsError:
                continue
            fsync_dir(target.parent)
            return staging
    except OSError as exc:
        raise _config_error(target, exc) from exc


def publish_dir(staging: Path, target: Path, *, use_exchange: bool | None = None) -> None:
    """Make ``target`` hold ``staging``'s content; a kill at any instant leaves ``target`` (after
    ``recover``) with the complete old or the complete new content.

    ``staging`` must be a complete sibling folder of ``target`` (see ``stage_dir``; a sibling of
    another name, like the grid's overwrite folder, works too, and ``recover`` never deletes it).
    ``use_exchange``: None = exchange when the system can, else the journaled fallback;
    True = require exchange (OSError when unavailable); False = always the fallback.
    """
    staging, target = Path(staging), Path(target)
    parent = target.parent
    if not staging.is_dir() or staging.is_symlink():
        raise ValueError(f"staging folder {staging} does not exist")
    if os.path.realpath(staging.parent) != os.path.realpath(parent):
        raise ValueError(f"staging folder {staging} is not next to {target}")
    if os.path.lexists(target) and not target.is_dir():
        raise ConfigError(f"output folder {target} is an existing file, not a folder",
                          "choose another --out, or move that file away")
    try:
        sync_tree(staging)
        pause_point("before-swap", parent)
        if not os.path.lexists(target):
            os.rename(staging, target)  # atomic; nothing to replace, so no journal needed
            fsync_dir(parent)
            return
        _publish_over(staging, target, use_exchange)
    except OSError as exc:
        raise _config_error(target, exc) from exc


def _publish_over(staging: Path, target: Path, use_exchange: bool | None) -> None:
    parent = target.parent
    exchange = use_exchange is not False and _RENAMEAT2 is not None
    if use_exchange and not exchange:
        raise OSError(errno.ENOSYS, "renameat2(RENAME_EXCHANGE) is not available on this system")
    old = target.with_name(f".{target.name}-old-{_token()}")
    journal = {"mode": "exchange" if exchange else "rename", "new": staging.name,
               "new_ino": os.stat(staging).st_ino, "old": old.name}
    _write_marker(target, journal)
    pause_point("after-marker", parent)

    if exchange:
        if _exchange(staging, target):
            pause_point("after-exchange", parent)
            fsync_dir(parent)
            pause_point("before-cleanup", parent)
            _remove_old(staging, parent)  # the old results now sit at the staging name
            _marker(target).unlink()
            fsync_dir(parent)
            return
        if use_exchange:
            _marker(target).unlink()
            raise OSError(errno.ENOTSUP, f"this filesystem cannot exchange folders ({parent})")
        _write_marker(target, {**journal, "mode": "rename"})  # filesystem refused: fall back

    try:
        os.rename(target, old)
    except OSError:
        _marker(target).unlink()  # nothing moved
        raise
    pause_point("after-first-rename", parent)
    fsync_dir(parent)
    try:
        os.rename(staging, target)
    except OSError:
        os.rename(old, target)  # undo, so target keeps the old results
        _marker(target).unlink()
        fsync_dir(parent)
        raise
    pause_point("after-second-rename", parent)
    fsync_dir(parent)
    pause_point("before-cleanup", parent)
    _remove_old(old, parent)
    _marker(target).unlink()  # last: while it exists, recover knows which content target holds
    fsync_dir(parent)


def recover(target: Path) -> list[str]:
    """Finish or undo an interrupted ``publish_dir`` for ``target`` and delete its leftovers.

    Returns one human-readable message per thing done (empty when there was nothing to do).
    Roll-forward vs roll-back, when ``target`` is missing: the journal's staging folder is
    complete by construction, so it is restored when it exists (the new results); otherwise the
    old folder is (the previous results). When ``target`` exists it is always kept.
    """
    target = Path(target)
    parent = target.parent
    if not parent.is_dir():
        return []
    name = target.name
    staging_re, old_re, tmp_re = _staging_re(name), _old_re(name), _marker_tmp_re(name)
    stagings: list[Path] = []
    olds: list[Path] = []
    tmps: list[Path] = []
    for entry in parent.iterdir():
        if staging_re.fullmatch(entry.name):
            stagings.append(entry)
        elif old_re.fullmatch(entry.name):
            olds.append(entry)
        elif tmp_re.fullmatch(entry.name):
            tmps.append(entry)
    journal = _read_marker(target)
    if journal is None and not stagings and not olds and not tmps:
        return []

    messages: list[str] = []
    new_ino = journal.get("new_ino") if journal else None
    if not os.path.lexists(target):
        new = parent / str(journal.get("new", "")) if journal else None
        old = parent / str(journal.get("old", "")) if journal else None
        # Roll forward only to the untouched staging folder (same inode as when the journal was
        # written): it was complete before the journal existed.
        if new is not None and new in stagings and new.is_dir() and new.stat().st_ino == new_ino:
            candidates = [new]
        elif old is not None and old in olds and old.is_dir():
            candidates = [old]  # roll back
        else:  # no usable journal: an old folder is a complete copy; newest first
            candidates = sorted((p for p in olds if p.is_dir()), key=lambda p: p.stat().st_ctime, reverse=True)
        if candidates:
            source = candidates[0]
            kept = "the new results" if source.stat().st_ino == new_ino else "the previous results"
            os.rename(source, target)
            fsync_dir(parent)
            stagings = [p for p in stagings if p != source]
            olds = [p for p in olds if p != source]
            messages.append(f"recovered {target} from an interrupted write (kept {kept})")
        elif journal:
            messages.append(f"an interrupted write to {target} left no complete copy to restore")
    elif journal and os.path.isdir(target):
        kept = "the new results" if os.stat(target).st_ino == new_ino else "the previous results"
        messages.append(f"finished an interrupted write to {target} (kept {kept})")

    leftovers = stagings + olds
    if leftovers and not journal:
        if not os.path.lexists(target):
            how = "nothing had been published there"
        elif olds and not stagings:
            how = "it holds the new results"
        else:
            how = "it keeps its previous results"
        messages.append(f"removed {len(leftovers)} leftover folder(s) of an interrupted write to {target} ({how})")
    # The target (if any) is in place: everything else is a spare copy or unfinished.
    for path in leftovers + tmps:
        _remove(path)
    if journal is not None:
        _marker(target).unlink()
    fsync_dir(parent)
    return messages

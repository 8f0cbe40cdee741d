"""Durable single files: fsync, a whole file replaced so a reader or a kill sees old or new, the
temporary names those replacements use (so a command can recognise its own leftovers), and the
test hook that pauses a process at a named step (:func:`pause_point`). Folders are published by
:mod:`.atomic`, which builds on these."""

from __future__ import annotations

import errno
import os
import re
import tempfile
import time
from pathlib import Path

__all__ = ["PAUSE_ENV", "PAUSE_SECONDS_ENV", "TEMP_INFIX", "fsync_dir", "fsync_file", "pause_point", "replace_file",
           "sync_tree", "temp_target", "write_text_durably"]

PAUSE_ENV = "SAFETYREPRO_TEST_PAUSE_AT"
PAUSE_SECONDS_ENV = "SAFETYREPRO_TEST_PAUSE_SECONDS"


def fsync_file(path: Path) -> None:
    """Flush one file's content to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries (creations, renames, deletions) to disk; a no-op where the OS
    cannot open folders (Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (PermissionError, IsADirectoryError):
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems refuse fsync on folders
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def write_text_durably(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` and fsync it (meant for files inside a staging folder, which
    nobody reads until it is published, so the file itself need not be replaced atomically)."""
    with open(path, "w", encoding=encoding) as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


TEMP_INFIX = ".tmp-"
"""``replace_file`` writes ``.<name>.tmp-XXXXXXXX`` beside ``<name>`` (mkstemp's 8 characters)."""
_TEMP_RE = re.compile(r"\.(.+)\.tmp-[a-z0-9_]{8}")


def temp_target(name: str) -> str | None:
    """The file whose interrupted :func:`replace_file` left a temporary file called ``name``
    (None: not such a name). Only the exact mkstemp form: looser forms (``.<name>.tmp``,
    ``.<name>.bak1234``) are names a user gives backups, and a leftover is deleted. Callers compare
    the result with the names they write: it proves nothing on its own."""
    match = _TEMP_RE.fullmatch(name)
    return match.group(1) if match else None


def replace_file(path: Path, content: str | bytes) -> None:
    """Write a whole file so a reader (or a kill) sees the old or the new content, never part:
    a temporary sibling (``.<name>.tmp-XXXXXXXX``), fsynced, renamed over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{TEMP_INFIX}")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode() if isinstance(content, str) else content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def sync_tree(root: Path) -> None:
    """fsync every file and folder under ``root`` (cheap for files that are already synced)."""
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if not os.path.islink(os.path.join(folder, name)):
                fsync_file(Path(folder, name))
        fsync_dir(Path(folder))


def pause_point(step: str, parent: Path, *, once: bool = False) -> None:
    """The test hook: stop at ``step`` when ``SAFETYREPRO_TEST_PAUSE_AT`` names it (also used by
    the runner between journaled chunks: ``after-chunk-<n>``). ``once``: not again once the
    marker is there (a retried Ray shard passes the same step)."""
    if os.environ.get(PAUSE_ENV) != step:
        return
    marker = parent / f".paused-{step}"
    if once and marker.exists():
        return
    marker.write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(float(os.environ.get(PAUSE_SECONDS_ENV, "30")))

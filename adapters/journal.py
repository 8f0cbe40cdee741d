"""An append-only, hash-chained JSONL journal that a run resumes from only if it is a prefix of its plan.

One line per entry: ``{"seq", "key", "prev", "sha256", "body"}`` where ``sha256`` is the SHA-256
of the canonical JSON of ``{"seq", "key", "prev", "body"}`` and ``prev`` is the previous entry's
``sha256`` (the header's for the first). The first line is a header naming what the journal
belongs to (e.g. a configuration hash). Every append is flushed and fsynced, so a SIGKILL loses
at most the entry being written; a torn last line is detected, reported and cut off, never kept.

Resume rule: the entries' keys must be exactly the first ``n`` keys of the plan, in order, and
the chain must verify; otherwise the journal is refused with the first mismatch named. The
reference runner journals item records here, and the grid runner its request/response log
(``events.jsonl``; see docs/scoring.md, "Interrupted runs").
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .durable import replace_file
from .errors import ConfigError
from .hashing import sha256_json

FORMAT = "safetyrepro-journal/1"


def _digest(payload: dict[str, Any]) -> str:
    return sha256_json(payload)


@dataclass(frozen=True)
class Resumed:
    """What a journal held when it was opened."""

    bodies: list[dict[str, Any]]
    """Entry bodies in order (a prefix of the plan)."""
    notes: list[str]
    """What was repaired on the way (a torn last line), for the caller to print."""


class Journal:
    """Append-only hash-chained entries for one ``anchor`` (e.g. a config hash) and one plan."""

    def __init__(self, path: Path, anchor: str, plan: Sequence[str]) -> None:
        self.path = path
        self.anchor = anchor
        self.plan = list(plan)
        self._prev = ""
        self._seq = 0

    def open(self, align: int | Callable[[int], int] = 1) -> Resumed:
        """Read what is there (checking chain and plan prefix), keep the longest prefix whose
        length is a multiple of ``align`` (a run that works in chunks redoes a partial chunk, so
        it computes exactly what an uninterrupted run would; ``align`` may also map the number of
        entries read to the number to keep, for chunks of varying size), and make it ready to append."""
        notes: list[str] = []
        bodies: list[dict[str, Any]] = []
        header = {"format": FORMAT, "anchor": self.anchor, "plan_sha256": _digest({"plan": self.plan})}
        if self.path.exists():
            raw = self.path.read_bytes()
            lines = raw.split(b"\n")
            complete, torn = lines[:-1], lines[-1]
            if torn:
                notes.append(f"{self.path}: cut a torn last entry ({len(torn)} bytes) left by an interrupted run")
            if not complete:  # killed while writing the header: nothing was recorded
                self.path.unlink()
                return self.open(align)
            entries = [self._parse(line, n) for n, line in enumerate(complete)]
            if not entries or entries[0] != {"header": header, "sha256": _digest({"header": header})}:
                raise ConfigError(f"journal {self.path} belongs to another configuration, model or plan",
                                  "rerun with what wrote it, or pass --overwrite to discard it and start over")
            self._prev = entries[0]["sha256"]
            ends = [len(line) + 1 for line in complete]
            for n, entry in enumerate(entries[1:]):
                body = {k: entry.get(k) for k in ("seq", "key", "prev", "body")}
                if entry.get("sha256") != _digest(body) or entry.get("prev") != self._prev or entry.get("seq") != n:
                    raise ConfigError(f"journal {self.path} entry {n} breaks the hash chain (edited or spliced)",
                                      "pass --overwrite to discard it and start over; the journal cannot be trusted")
                self._prev = entry["sha256"]
                if n >= len(self.plan) or entry["key"] != self.plan[n]:
                    expected = self.plan[n] if n < len(self.plan) else "the end of the plan"
                    raise ConfigError(f"journal {self.path} entry {n} is {entry['key']!r}, the plan expects {expected!r}",
                                      "pass --overwrite to discard it and start over")
                bodies.append(entry["body"])
            keep = align(len(bodies)) if callable(align) else len(bodies) - len(bodies) % max(align, 1)
            if keep < len(bodies):
                notes.append(f"{self.path}: dropped {len(bodies) - keep} record(s) of an unfinished chunk; "
                             "they are recomputed")
            bodies = bodies[:keep]
            self._prev = entries[keep]["sha256"]
            self._seq = keep
            size = sum(ends[: keep + 1])
            if size < len(raw):
                with open(self.path, "r+b") as handle:
                    handle.truncate(size)
                    os.fsync(handle.fileno())
        else:
            # The header appears whole or not at all (a temporary file renamed into place): a log
            # with a torn header could not be told from a user's file of the same name.
            entry = {"header": header, "sha256": _digest({"header": header})}
            replace_file(self.path, json.dumps(entry, separators=(",", ":")).encode() + b"\n")
            self._prev = _digest({"header": header})
        return Resumed(bodies=bodies, notes=notes)

    def _parse(self, line: bytes, n: int) -> dict[str, Any]:
        try:
            entry = json.loads(line)
        except ValueError:
            raise ConfigError(f"journal {self.path} line {n + 1} is not JSON (edited or corrupted)",
                              "pass --overwrite to discard it and start over") from None
        if not isinstance(entry, dict):
            raise ConfigError(f"journal {self.path} line {n + 1} is not an entry",
                              "pass --overwrite to discard it and start over")
        return entry

    def _write_line(self, entry: dict[str, Any]) -> None:
        with open(self.path, "ab") as handle:
            # Key order is kept as given (records keep their field order); hashes use sorted keys.
            handle.write(json.dumps(entry, separators=(",", ":")).encode() + b"\n")
            handle.flush()
            os.fsync(handle.fileno())

    def append(self, key: str, body: dict[str, Any]) -> None:
        if self._seq >= len(self.plan) or key != self.plan[self._seq]:
            raise ValueError(f"append {key!r} out of plan order at {self._seq}")
        entry = {"seq": self._seq, "key": key, "prev": self._prev, "body": body}
        entry["sha256"] = _digest(entry)
        self._write_line(entry)
        self._prev = entry["sha256"]
        self._seq += 1

    @property
    def last_sha256(self) -> str:
        """The chain hash of the last entry written or kept (the header's when there is none)."""
        return self._prev

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def verify(path: Path, anchor: str, plan: Sequence[str]) -> list[str]:
    """Problems with a journal, read-only: header, hash chain, order against the plan, a torn or
    foreign line. An empty list means it is an intact prefix of the plan."""
    if not path.is_file():
        return [f"{path.name} is missing"]
    return verify_bytes(path.read_bytes(), path.name, anchor, plan)


def verify_bytes(raw: bytes, name: str, anchor: str, plan: Sequence[str]) -> list[str]:
    """:func:`verify` on a journal's content (e.g. a segment a Ray worker returned)."""
    header = {"format": FORMAT, "anchor": anchor, "plan_sha256": _digest({"plan": list(plan)})}
    path = Path(name)  # only its name is reported
    if not raw:
        return [f"{path.name} is empty (no header)"]
    if not raw.endswith(b"\n"):
        return [f"{path.name}: the last line is torn (no newline): truncated or interrupted"]
    problems: list[str] = []
    prev = ""
    for n, line in enumerate(raw.split(b"\n")[:-1]):
        try:
            entry = json.loads(line)
        except ValueError:
            return [f"{path.name} line {n + 1} is not JSON (edited)"]
        if n == 0:
            if entry != {"header": header, "sha256": _digest({"header": header})}:
                return [f"{path.name}: the header does not name this plan (edited, or another run's log)"]
            prev = entry["sha256"]
            continue
        if not isinstance(entry, dict):
            return [f"{path.name} line {n + 1} is not an entry (edited)"]
        body = {k: entry.get(k) for k in ("seq", "key", "prev", "body")}
        if entry.get("sha256") != _digest(body):
            return [f"{path.name} entry {n - 1}: its content does not match its hash (edited)"]
        if entry.get("prev") != prev or entry.get("seq") != n - 1:
            return [f"{path.name} entry {n - 1}: the chain is broken (reordered, deleted or spliced)"]
        if n - 1 >= len(plan) or entry.get("key") != plan[n - 1]:
            return [f"{path.name} entry {n - 1}: {entry.get('key')!r} is not the plan's request there (foreign)"]
        prev = entry["sha256"]
    return problems

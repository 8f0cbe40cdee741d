"""The project's hashes, in one place: its output is hashes, so each is computed one way.

* :func:`canonical` -- the canonical JSON every hashed structure is serialised to (sorted keys,
  no spaces): request bodies, log entries, plans, anchors.
* :func:`sha256_bytes` / :func:`sha256_text` / :func:`sha256_json` / :func:`sha256_file` -- SHA-256
  hex digests of bytes, of a string, of a value's canonical JSON, of a file's bytes.
* :func:`derived_seed` -- a 32-bit seed derived from text (a sampled request's own seed).

Changing any of these changes every plan, log and result hash; ``tests/test_hashing.py`` pins
them against golden values.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["canonical", "derived_seed", "sha256_bytes", "sha256_file", "sha256_json", "sha256_text"]


def canonical(value: Any) -> str:
    """Canonical JSON: sorted keys, ``,``/``:`` separators, ASCII escapes (json's default)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """SHA-256 of ``text`` in UTF-8."""
    return sha256_bytes(text.encode())


def sha256_json(value: Any) -> str:
    """SHA-256 of ``value``'s canonical JSON."""
    return sha256_text(canonical(value))


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def derived_seed(text: str) -> int:
    """A 32-bit seed from text: the first 8 hex digits of its SHA-256."""
    return int(sha256_text(text)[:8], 16)

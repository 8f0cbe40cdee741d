"""What the ``safetyrepro`` command modules share: the ``--data-dir`` option and how a note is printed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

__all__ = ["DataDir", "note"]

DataDir = Annotated[Optional[Path], typer.Option("--data-dir", help="Folder laid out like the upstream snapshot "
                                                 "(default: $SAFETYREPRO_DATA_DIR, else download to the cache).")]


def note(message: str) -> None:
    """A note on stderr (what was recovered, resumed or replaced), never on stdout's tables."""
    print(f"note: {message}", file=sys.stderr)

"""What a grid run computed, as bytes, for tests that compare two runs of one plan."""

from __future__ import annotations

from pathlib import Path


def results(folder: Path) -> dict[str, bytes]:
    """Everything a grid run computes (not the log: its entries carry wall-clock times)."""
    files = [folder / "cells.parquet", folder / "summary.json", *sorted((folder / "cells").rglob("*.json*"))]
    return {str(p.relative_to(folder)): p.read_bytes() for p in files}

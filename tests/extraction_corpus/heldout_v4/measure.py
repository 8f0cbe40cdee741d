"""Measure the regex readout against the fourth held-out corpus (see README.md here).

The third corpus's measurement (``../heldout_v3/measure.py``) on this folder: agreement, wrong
class, missed, invented and per-rule precision over the cases both readers labelled alike, and
the disputed cases (the readers differ) listed apart. From the repository root:
``.venv/bin/python tests/extraction_corpus/heldout_v4/measure.py``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).parent


def v3() -> ModuleType:
    """The third corpus's measurement module, loaded from its file."""
    spec = importlib.util.spec_from_file_location("heldout_v3_measure", HERE.parent / "heldout_v3" / "measure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    v3().main(HERE)

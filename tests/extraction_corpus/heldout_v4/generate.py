"""Real replies of the embedded model for the fourth held-out corpus (see README.md here).

The third corpus's generator (``../heldout_v3/generate.py``: each benchmark x the four templates,
regex path, T=0.7) on the *next* 12 subset items (12..23, none of which the third corpus or the
rules' authors read) with another seed. It writes ``unlabelled/<benchmark>.yaml`` (not kept) for
labellers who never read the extraction rules. Run once, from the repository root:

    SAFETYREPRO_DATA_DIR=../shared/data HF_HUB_OFFLINE=1 .venv/bin/python tests/extraction_corpus/heldout_v4/generate.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    spec = importlib.util.spec_from_file_location("heldout_v3_generate", HERE.parent / "heldout_v3" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(items_from=12, count=12, seed=20261204, out=HERE / "unlabelled")


if __name__ == "__main__":
    main()

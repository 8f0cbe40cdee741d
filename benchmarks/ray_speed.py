"""How much do Ray workers speed up ``safetyrepro grid``? Ratios from one run of this script.

The same grid (the ``mini`` preset on the embedded model; ``--limit`` items per cell), each from a
cold process, at one torch thread per computation so every run computes the same bytes:

(1) ``--executor local --threads 1``                  (the baseline of the byte-identity check)
(2) ``--executor ray --workers 1`` (one task slot)
(3) ``--executor ray --workers 2`` (two task slots)
(4) ``--executor local`` at torch's default thread count (context: one process using every core)

It prints the wall times, (2)/(3) (the speed-up of 2 workers over 1), (1)/(3), (4)/(3), and
whether (1), (2) and (3) wrote byte-identical results. Not a timed test: a measurement.

    .venv/bin/python benchmarks/ray_speed.py --limit 2 --max-new-tokens 16
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

BIN = Path(sys.executable).parent
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from grid_files import results  # noqa: E402 - the tests' definition of "what a run computed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=2, help="items per cell")
    parser.add_argument("--max-new-tokens", type=int, default=16, help="generation budget of every cell")
    args = parser.parse_args()
    from safetyrepro.adapters.grid import PRESETS

    spec = {**PRESETS["mini"], "models": [{"name": "embedded"}], "limit": args.limit,
            "max_new_tokens": args.max_new_tokens}
    work = Path(tempfile.mkdtemp(prefix="ray-speed-"))
    (work / "grid.yaml").write_text(yaml.safe_dump(spec))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    runs = {"local-1-thread": ["--threads", "1"], "ray-1-worker": ["--executor", "ray", "--workers", "1"],
            "ray-2-workers": ["--executor", "ray", "--workers", "2"], "local-default-threads": []}
    seconds = {}
    for name, options in runs.items():
        started = time.perf_counter()
        subprocess.run([str(BIN / "safetyrepro"), "grid", "grid.yaml", "--out", name, *options], cwd=work, env=env,
                       check=True, capture_output=True)
        seconds[name] = time.perf_counter() - started
        print(f"{name:>22}: {seconds[name]:7.1f} s", flush=True)
    same = results(work / "local-1-thread") == results(work / "ray-1-worker") == results(work / "ray-2-workers")
    print(f"cores here: {os.cpu_count()}; grid: mini, {args.limit} items per cell, {args.max_new_tokens}-token budget")
    print(f"speed-up of 2 Ray workers over 1:        {seconds['ray-1-worker'] / seconds['ray-2-workers']:.2f}")
    print(f"local (1 thread) / ray (2 workers):       {seconds['local-1-thread'] / seconds['ray-2-workers']:.2f}")
    print(f"local (default threads) / ray (2 workers): {seconds['local-default-threads'] / seconds['ray-2-workers']:.2f}")
    print(f"results byte-identical across local-1-thread and both Ray runs: {same}")


if __name__ == "__main__":
    main()

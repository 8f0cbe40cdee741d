"""How fast is one configuration through ``safetyrepro run``, against the same cell through ``lm_eval``?

Ratios measured in one run of this script (not a timed test). For a logprob cell and a regex cell
it times, each from a cold process as a user runs them:

(a) ``lm_eval run`` on the cell's SafetyRepro task (the same items, prompt, few-shot turns and
    decoding; lm-eval's own hf model and batching);
(b) ``safetyrepro run`` on the same configuration (the grid's engine: context states computed once
    and shared, generations batched, each request logged).

and prints (a)/(b) per cell. The two commands alternate ``--repeats`` times and the medians are
compared, so a load change on the machine moves both. Target (issue 26): (a)/(b) >= 1.5 for both.

    .venv/bin/python benchmarks/run_speed.py
    .venv/bin/python benchmarks/run_speed.py --repeats 3 --logprob-limit 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: {command[0]} failed -- fix: see its output:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2, help="alternating runs of each command per cell")
    parser.add_argument("--logprob-limit", type=int, default=60, help="items of the logprob cell (BBQ, 3-shot)")
    parser.add_argument("--regex-limit", type=int, default=20, help="items of the regex cell (XSTest, 0-shot)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    if not os.environ.get("SAFETYREPRO_DATA_DIR"):
        raise SystemExit("error: SAFETYREPRO_DATA_DIR is not set -- fix: point it at the benchmark data folder")
    from safetyrepro.adapters.models.embedded import embedded_model_dir
    from safetyrepro.lm_eval_tasks import include_path

    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    work = Path(tempfile.mkdtemp(prefix="run-speed-"))
    cells = [("logprob", "bbq", "minimal", 3, args.logprob_limit), ("regex", "xstest", "minimal", 0, args.regex_limit)]
    print(f"machine: {os.cpu_count()} cores; torch threads: the default of each process; work folder {work}")
    for scoring, benchmark, template, fewshot, limit in cells:
        ours = [str(BIN / "safetyrepro"), "run", "--benchmark", benchmark, "--template", template, "--scoring", scoring,
                "--fewshot", str(fewshot), "--limit", str(limit), "--batch-size", "8", "--overwrite"]
        theirs = [str(BIN / "lm_eval"), "run", "--model", "hf", "--model_args",
                  f"pretrained={embedded_model_dir()},dtype=float32", "--include_path", str(include_path()),
                  "--tasks", f"safetyrepro_{benchmark}_{template}_{scoring}", "--num_fewshot", str(fewshot),
                  "--apply_chat_template", "--limit", str(limit), "--batch_size", "8", "--output_path", "lm_eval_out"]
        a, b = [], []
        for n in range(args.repeats):
            b.append(timed([*ours, "--out", f"run-{scoring}-{n}"], work, env))
            a.append(timed(theirs, work, env))
        a_med, b_med = statistics.median(a), statistics.median(b)
        print(f"{scoring} cell ({benchmark}, {template}, {fewshot}-shot, {limit} items, batch 8):")
        print(f"  (a) lm_eval run:       {a_med:7.1f} s  (runs: {', '.join(f'{x:.1f}' for x in a)})")
        print(f"  (b) safetyrepro run:   {b_med:7.1f} s  (runs: {', '.join(f'{x:.1f}' for x in b)})")
        print(f"  (a)/(b) = {a_med / b_med:.2f}  (target >= 1.5)")


if __name__ == "__main__":
    main()

"""How much do candidate loglikelihoods move when only the batch shape or thread count changes?

The tolerance of every harness-agreement test comes from this measurement (docs/scoring.md,
"Numerical agreement"). For each quantization it scores the same requests with several
``batch_size`` values and torch thread counts (each in a fresh process, since bitsandbytes and
oneDNN pick kernels per process) and prints the largest |dLL| against batch 1 / 1 thread, and
how many argmax predictions changed.

    python benchmarks/ll_spread.py --items 12 --quantization none nf4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, torch
threads, quant, n_items, batches = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), [int(b) for b in sys.argv[4].split(",")]
torch.set_num_threads(threads)
from safetyrepro.adapters import build_config, load_model, logprob_context, prepare_cell
lm = load_model(build_config({"benchmark": "bbq", "model": {"quantization": quant}}).model)
requests, sizes = [], []
for bench in ("truthfulqa", "bbq", "crows_pairs", "toxigen", "xstest"):
    cell = prepare_cell(build_config({"benchmark": bench, "limit": n_items}), formatter=lm.formatter)
    for c in cell.items:
        requests += [(logprob_context(c.context), cand) for cand in c.candidates]
        sizes.append(len(c.candidates))
out = {b: [ll for ll, _ in lm.loglikelihood(requests, batch_size=b)] for b in batches}
print(json.dumps({"threads": threads, "sizes": sizes, "lls": out, "kernel": lm.info.runtime}))
"""


def argmaxes(lls: list[float], sizes: list[int]) -> list[int]:
    out, cursor = [], 0
    for n in sizes:
        chunk = lls[cursor : cursor + n]
        out.append(max(range(n), key=lambda i: (chunk[i], -i)))
        cursor += n
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=12, help="items per benchmark")
    parser.add_argument("--quantization", nargs="+", default=["none", "nf4"])
    parser.add_argument("--threads", default="1,2,all", help="thread counts; 'all' = every CPU core")
    parser.add_argument("--batches", default="1,2,4,8,16")
    args = parser.parse_args()
    for quant in args.quantization:
        runs = []
        for threads in args.threads.split(","):
            threads = str(os.cpu_count() or 1) if threads == "all" else threads
            proc = subprocess.run([sys.executable, "-c", CHILD, threads, quant, str(args.items), args.batches],
                                  capture_output=True, text=True, check=True)
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        base = runs[0]["lls"][args.batches.split(",")[0]]
        sizes = runs[0]["sizes"]
        print(f"quantization={quant} kernel={runs[0]['kernel']}")
        for run in runs:
            for batch, lls in run["lls"].items():
                diff = max(abs(a - b) for a, b in zip(lls, base))
                flips = sum(a != b for a, b in zip(argmaxes(lls, sizes), argmaxes(base, sizes)))
                print(f"  threads={run['threads']} batch={batch:>2}: max|dLL| vs batch 1/1 thread = {diff:.2e}, "
                      f"argmax changed on {flips}/{len(sizes)} items")
    return 0


if __name__ == "__main__":
    sys.exit(main())

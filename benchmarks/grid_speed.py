"""How fast is ``safetyrepro grid``? Ratios measured in one run of this script (not a timed test).

Runs the same grid three ways on the same model and items and prints ratios:

(a) one ``lm_eval`` CLI call per cell, as a researcher would script a grid (process start, task
    indexing and model load every time); with ``--sample-cells K`` only K evenly spaced cells run
    and the time is scaled to all cells (said in the output);
(b) ``safetyrepro grid`` in a fresh process (one model load, each unique request once);
(c) a lower bound: the grid's unique requests only, in this process with the model loaded,
    through the same compute (shared context states, generations batched by budget and
    decoding kind) without planning, logging or results: what (b) costs beyond the model's work.

Targets (issue 11): (a)/(b) >= 10 and (c)/(b) >= 0.7.

    .venv/bin/python benchmarks/grid_speed.py                       # the mini preset (72 cells, 8 items)
    .venv/bin/python benchmarks/grid_speed.py --limit 2 --max-new-tokens 16 --sample-cells 6
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

BIN = Path(sys.executable).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="items per cell (default: the preset's 8)")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="generation budget of every cell")
    parser.add_argument("--sample-cells", type=int, default=0, help="(a) on K cells, scaled to all (0: every cell)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from safetyrepro.adapters.grid import PRESETS, build_grid, plan
    from safetyrepro.adapters.models.hf import weights_path

    spec = {**PRESETS["mini"], "models": [{"name": "embedded"}]}
    if args.limit:
        spec["limit"] = args.limit
    if args.max_new_tokens:
        spec["max_new_tokens"] = args.max_new_tokens
    grid = build_grid(spec)
    cells = plan(grid)["cells"]
    work = Path(tempfile.mkdtemp(prefix="grid-speed-"))
    (work / "grid.yaml").write_text(yaml.safe_dump(spec))
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}

    # (b) the grid runner, from a cold process
    started = time.perf_counter()
    subprocess.run([str(BIN / "safetyrepro"), "grid", "grid.yaml", "--out", "g"], cwd=work, env=env, check=True,
                   capture_output=True)
    b = time.perf_counter() - started

    # (c) the lower bound: the same unique requests, model already loaded, nothing else
    from safetyrepro.adapters.gridplan import GridPlan
    from safetyrepro.adapters.scoring import logprob_context
    from safetyrepro.adapters.runner import load_model

    prepared = GridPlan(plan(grid), grid, None)
    lm = load_model(grid.models[0].spec)
    requests = [prepared.requests[k] for k in prepared.keys]
    started = time.perf_counter()
    outputs: dict[str, str] = {}
    generations = [(k, r) for k, r in zip(prepared.keys, requests) if r.kind == "generate"]
    for budget in sorted({r.max_new_tokens for _, r in generations}):
        for sampled in (False, True):
            group = [(k, r) for k, r in generations if r.max_new_tokens == budget and (r.temperature > 0) == sampled]
            for start in range(0, len(group), grid.batch_size):
                chunk = group[start:start + grid.batch_size]
                texts = lm.decode([r.context for _, r in chunk], temperatures=[r.temperature for _, r in chunk],
                                  seeds=[r.seed for _, r in chunk], max_new_tokens=budget)
                outputs.update({k: t for (k, _), t in zip(chunk, texts)})
    scored = [r for r in requests if r.kind == "loglikelihood"]
    lm.loglikelihood_states([(logprob_context(r.context, outputs[r.after]) if r.after else r.context,
                              r.continuation or "") for r in scored], [r.context if r.after else None for r in scored])
    c = time.perf_counter() - started

    # (a) one lm_eval CLI call per cell
    chosen = cells if not args.sample_cells else [cells[round(i * (len(cells) - 1) / max(args.sample_cells - 1, 1))]
                                                  for i in range(args.sample_cells)]
    from safetyrepro.lm_eval_tasks import include_path

    started = time.perf_counter()
    for cell in chosen:
        command = [str(BIN / "lm_eval"), "run", "--model", "hf", "--model_args",
                   f"pretrained={weights_path(grid.models[0].spec)},dtype=float32", "--include_path",
                   str(include_path()), "--tasks", f"safetyrepro_{cell['benchmark']}_{cell['template']}_{cell['scoring']}",
                   "--num_fewshot", str(cell["fewshot"]), "--apply_chat_template", "--limit", str(grid.limit),
                   "--output_path", str(work / "lm_eval")]
        temperature = {"greedy": 0.0, "t0.3": 0.3, "t0.7": 0.7}[cell["decoding"]]
        gen = [f"max_gen_toks={cell['config']['max_new_tokens']}"] if cell["config"]["max_new_tokens"] else []
        if temperature > 0:
            gen += ["do_sample=True", f"temperature={temperature}", "top_k=0", "top_p=1.0"]
        if gen:
            command += ["--gen_kwargs", ",".join(gen)]
        subprocess.run(command, env=env, check=True, capture_output=True)
    a = (time.perf_counter() - started) * len(cells) / len(chosen)

    print(f"grid: {len(cells)} cells x {grid.limit} items, {len(prepared.keys)} unique requests "
          f"({sum(1 for r in requests if r.kind == 'generate')} generations)")
    print(f"(a) lm_eval per cell: {a:8.1f} s" + (f"  (measured on {len(chosen)} cells, scaled to {len(cells)})"
                                                   if len(chosen) < len(cells) else ""))
    print(f"(b) safetyrepro grid: {b:8.1f} s")
    print(f"(c) lower bound:      {c:8.1f} s")
    print(f"(a)/(b) = {a / b:.1f}  (target >= 10)")
    print(f"(c)/(b) = {c / b:.2f}  (target >= 0.7)")
    print(f"work folder: {work}  (commands: {shlex.quote(str(work / 'grid.yaml'))})")


if __name__ == "__main__":
    main()

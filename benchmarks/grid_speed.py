"""How fast is ``safetyrepro grid``? Ratios measured in one run of this script (not a timed test).

Runs the same grid three ways on the same model and items and prints ratios:

(a) one ``lm_eval`` CLI call per cell, as a researcher would script a grid (process start, task
    indexing and model load every time); with ``--sample-cells K`` only K evenly spaced cells run
    and the time is scaled to all cells (said in the output);
(b) ``safetyrepro grid`` in a fresh process (one model load, each unique request once);
(c) a lower bound: the grid's unique requests only, in this process with the model loaded,
    through the same compute (shared context states, generations batched by budget and
    decoding kind) without planning, logging or results: what (b) costs beyond the model's work.

(d) the physical bound: the tokens the grid must forward -- the unique positions of a prefix trie
    over every context (token ids, after the chat template), each candidate's tokens but its last
    (its probability is read from the position before) and each generation's tokens but its last,
    all as paths from their context -- divided by this machine's forward throughput for the model,
    measured in the same run (a large batched forward, best of three). Beside it, the *waste*: the
    share of the tokens the engine forwards (every unique context computed alone, cot contexts
    extended from their generation's, candidates and generations on top) that are not unique
    trie positions.

Targets (issue 11): (a)/(b) >= 10 and (c)/(b) >= 0.7; (issue 30) (a)/(b) >= 30 and (d)/(b) >= 0.5.

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

    # (d) the physical bound, and the waste
    unique, forwarded = forward_tokens(lm, prepared, outputs)
    rate = throughput(lm)
    d = unique / rate

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
    print(f"(d) physical bound:   {d:8.1f} s  ({unique:,} unique tokens at {rate:,.0f} tokens/s forward throughput)")
    print(f"(a)/(b) = {a / b:.1f}  (targets >= 10, issue 30: >= 30)")
    print(f"(c)/(b) = {c / b:.2f}  (target >= 0.7)")
    print(f"(d)/(b) = {d / b:.3f}  (issue 30 target >= 0.5)")
    print(f"waste: {1 - unique / forwarded:.1%} of the {forwarded:,} tokens the engine forwards are not unique "
          "trie positions")
    print(f"work folder: {work}  (commands: {shlex.quote(str(work / 'grid.yaml'))})")


def forward_tokens(lm, prepared, outputs: dict[str, str]) -> tuple[int, int]:  # noqa: ANN001 - a script
    """(unique prefix-trie positions, tokens the engine forwards) over the grid's unique requests."""
    from safetyrepro.adapters.scoring import logprob_context

    trie: dict[int, dict] = {}
    unique = 0

    def insert(ids: list[int]) -> None:
        nonlocal unique
        node = trie
        for token in ids:
            if token not in node:
                node[token] = {}
                unique += 1
            node = node[token]

    contexts: dict[str, int] = {}  # every unique context the engine computes a state for, by its length
    forwarded = 0
    for key in prepared.keys:
        r = prepared.requests[key]
        if r.kind == "generate":
            context_ids, generated = lm.formatter.encode_pair(r.context, outputs[key])
            insert(context_ids + generated[:-1])
            contexts.setdefault(r.context, len(context_ids))
            forwarded += max(len(generated) - 1, 0)
        else:
            context = logprob_context(r.context, outputs[r.after]) if r.after else r.context
            context_ids, candidate = lm.formatter.encode_pair(context, r.continuation or "")
            insert(context_ids + candidate[:-1])
            if context not in contexts:
                # a cot context extends its generation's state: only the reasoning is forwarded again
                base = len(lm.formatter.encode(r.context)) if r.after else 0
                contexts[context] = len(context_ids) - base
            forwarded += max(len(candidate) - 1, 0)
    return unique, forwarded + sum(contexts.values())


def throughput(lm, batch: int = 8, length: int = 512, repeats: int = 3) -> float:  # noqa: ANN001 - a script
    """Tokens per second of one large batched forward of the model (best of ``repeats``)."""
    import torch

    model = lm.model
    ids = torch.randint(0, model.config.vocab_size, (batch, length), generator=torch.Generator().manual_seed(0))
    best = float("inf")
    with torch.no_grad():
        model(input_ids=ids[:1, :16])  # warm-up
        for _ in range(repeats):
            started = time.perf_counter()
            model(input_ids=ids)
            best = min(best, time.perf_counter() - started)
    return batch * length / best


if __name__ == "__main__":
    main()

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
    share of the tokens the engine forwarded in (c) (context segments, counted by the engine,
    recomputations after an eviction included; candidates' tokens; every row of every decoding
    step) that are not unique trie positions.

(c) is timed by part (context segments, decoding steps, candidates' forwards) and (b)'s peak
resident memory is printed. ``--baseline REF`` runs (b) a second time with the code of an earlier
commit (a git worktree ahead of the editable install), so before and after come from one run.
The grid's gates are left out (the model's work only).

Targets (issue 11): (a)/(b) >= 10 and (c)/(b) >= 0.7; (issue 30) (a)/(b) >= 30 and (d)/(b) >= 0.5,
peak memory <= the model + 1.5 GB.

    .venv/bin/python benchmarks/grid_speed.py                       # the mini preset (72 cells, 8 items)
    .venv/bin/python benchmarks/grid_speed.py --limit 2 --max-new-tokens 16 --sample-cells 6
    .venv/bin/python benchmarks/grid_speed.py --grid examples/stats_demo_grid.yaml --limit 6 \\
        --sample-cells 6 --baseline 1d48db4                         # the demonstration grid, before/after
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
    parser.add_argument("--grid", type=Path, default=None, help="a grid file (default: the mini preset)")
    parser.add_argument("--limit", type=int, default=None, help="items per cell (default: the grid's)")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="generation budget of every cell")
    parser.add_argument("--sample-cells", type=int, default=0, help="(a) on K cells, scaled to all (0: every cell)")
    parser.add_argument("--baseline", metavar="GIT_REF", default=None,
                        help="also run (b) with the code of this commit (before/after in one run)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from safetyrepro.adapters.grid import PRESETS, build_grid, plan

    spec = yaml.safe_load(args.grid.read_text()) if args.grid else {**PRESETS["mini"], "models": [{"name": "embedded"}]}
    spec.pop("gates", None)  # the model's work only: no repeat or replay askings
    if args.limit:
        spec["limit"] = args.limit
    if args.max_new_tokens:
        spec["max_new_tokens"] = args.max_new_tokens
    grid = build_grid(spec)
    cells = plan(grid)["cells"]
    work = Path(tempfile.mkdtemp(prefix="grid-speed-"))
    (work / "grid.yaml").write_text(yaml.safe_dump(spec))
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}

    # (b) the grid runner, from a cold process (and, with --baseline, the same at another commit)
    root = Path(__file__).resolve().parent.parent
    if args.baseline and subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet",
                                         f"{args.baseline}^{{commit}}"], capture_output=True).returncode:
        raise SystemExit(f"error: --baseline {args.baseline!r} is no commit of this repository -- pass a commit "
                         "or tag (git log --oneline)")
    b, peak = grid_process([str(BIN / "safetyrepro"), "grid", "grid.yaml", "--out", "g"], work, env)
    before = None
    if args.baseline:
        try:
            base_env = {**env, "PYTHONPATH": str(checkout(args.baseline, root, work / "baseline"))}
            before = grid_process([sys.executable, "-m", "safetyrepro.adapters.cli", "grid", "grid.yaml", "--out",
                                   "g0"], work, base_env)
        finally:
            subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(work / "baseline" / "tree")],
                           check=False, capture_output=True)

    # (c) the lower bound: the same unique requests, each model loaded, nothing else; timed by part.
    # (d), (d') and the plan's decoding: per model (its tokenizer, its throughput), summed.
    from safetyrepro.adapters.gridplan import GridPlan
    from safetyrepro.adapters.models import prefix
    from safetyrepro.adapters.runner import load_model

    prepared = GridPlan(plan(grid), grid, None)
    parts = PartTimer()
    parts.wrap(prefix.StateCache, "forward", "contexts")
    parts.wrap(prefix.StateCache, "logits_after", "candidates")
    parts.wrap(prefix, "decode", "decoding")
    c = d = d_steps = planned_s = 0.0
    unique = forwarded = steps = 0
    planned: dict[int, list[int]] = {}
    throughputs, step_costs = [], []
    for model in grid.models:
        lm = load_model(model.spec)
        cache = lm.state_cache(fresh=True)  # an empty cache, as in (b)'s process
        requests = [prepared.requests[k] for k in prepared.keys if prepared.requests[k].model == model.name]
        started = time.perf_counter()
        outputs, (model_steps, rows) = lower_bound(lm, requests, grid.batch_size)
        c += time.perf_counter() - started
        trie, candidate_tokens = unique_tokens(lm, requests, outputs)
        rate, step = throughput(lm), decode_step(lm, grid.batch_size)
        throughputs.append(rate)
        step_costs.append(step)
        unique += trie
        d += trie / rate
        d_steps += model_steps * step
        forwarded += cache.forwarded + candidate_tokens + rows
        steps += model_steps
        for size, (n, size_steps) in plan_decoding(prepared, work / "g" / "events.jsonl", lm, model.name).items():
            planned[size] = [planned.get(size, [0, 0])[0] + n, planned.get(size, [0, 0])[1] + size_steps]
            planned_s += size_steps * decode_step(lm, size)

    # (a) one lm_eval CLI call per cell
    chosen = cells if not args.sample_cells else [cells[round(i * (len(cells) - 1) / max(args.sample_cells - 1, 1))]
                                                  for i in range(args.sample_cells)]
    started = time.perf_counter()
    for cell in chosen:
        subprocess.run(lm_eval_command(grid, cell, work), env=env, check=True, capture_output=True)
    a = (time.perf_counter() - started) * len(cells) / len(chosen)

    print(f"grid: {len(cells)} cells x {grid.limit} items, {len(prepared.keys)} unique requests "
          f"({sum(1 for k in prepared.keys if prepared.requests[k].kind == 'generate')} generations), "
          f"{len(grid.models)} model(s)")
    print(f"(a) lm_eval per cell: {a:8.1f} s" + (f"  (measured on {len(chosen)} cells, scaled to {len(cells)})"
                                                   if len(chosen) < len(cells) else ""))
    print(f"(b) safetyrepro grid: {b:8.1f} s  (peak memory {peak / 2**30:.2f} GiB)")
    if before is not None:
        print(f"    at {args.baseline}: {before[0]:8.1f} s  (peak memory {before[1] / 2**30:.2f} GiB); "
              f"now {before[0] / b:.2f}x as fast")
    print(f"(c) lower bound:      {c:8.1f} s  ({parts.line()})")
    rates = ", ".join(f"{r:,.0f}" for r in throughputs)
    print(f"(d) physical bound:   {d:8.1f} s  ({unique:,} unique tokens at {rates} tokens/s forward throughput)")
    costs = ", ".join(f"{x * 1000:.0f}" for x in step_costs)
    print(f"(d') with decoding:   {d + d_steps:8.1f} s  ((d) + {steps:,} sequential decoding steps at {costs} ms, "
          f"one batch-{grid.batch_size} step's forward)")
    if planned:  # a logprob-only grid decodes nothing
        print("    (b)'s plan decoded " + ", ".join(f"{n} batches of {size} row(s) in {size_steps:,} steps"
                                                for size, (n, size_steps) in sorted(planned.items()))
              + f": at the step costs measured here, {planned_s:.1f} s of decoding; (d) + that = {d + planned_s:.1f} s")
    print(f"(a)/(b) = {a / b:.1f}  (targets >= 10, issue 30: >= 30)")
    print(f"(c)/(b) = {c / b:.2f}  (target >= 0.7)")
    print(f"(d)/(b) = {d / b:.3f}  (issue 30 target >= 0.5);  (d')/(b) = {(d + d_steps) / b:.3f}")
    print(f"waste: {1 - unique / forwarded:.1%} of the {forwarded:,} tokens the engine forwarded are not unique "
          f"trie positions; decoding took {steps:,} sequential steps "
          f"({parts.seconds['decoding'] / max(steps, 1) * 1000:.0f} ms each)")
    print(f"work folder: {work}  (commands: {shlex.quote(str(work / 'grid.yaml'))})")


def grid_process(command: list[str], work: Path, env: dict[str, str]) -> tuple[float, int]:
    """(wall seconds, peak resident bytes) of one grid run in its own process."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with proc.stderr:
        err = proc.stderr.read()  # to its end (the process's), so that the pipe never fills
    _, status, usage = os.wait4(proc.pid, 0)  # its own peak resident memory (Linux: KiB), not the others'
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise SystemExit(f"error: the grid run in {work} failed ({tail[0]}) -- rerun {command[0]} there to see it all")
    return time.perf_counter() - started, usage.ru_maxrss * 1024


def checkout(ref: str, root: Path, folder: Path) -> Path:
    """An import root whose ``safetyrepro`` package is the repository ``root`` at ``ref`` (a git
    worktree in ``folder``; ahead of the editable install on ``sys.path``)."""
    tree = folder / "tree"
    subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", str(tree), ref], check=True,
                   capture_output=True)
    package = folder / "path" / "safetyrepro"
    package.mkdir(parents=True)
    for name in ("adapters", "lm_eval_tasks", "inspect_tasks", "helm_specs", "crosspkg"):
        (package / name).symlink_to(tree / name)
    return folder / "path"


def lower_bound(lm, requests, batch_size: int) -> tuple[dict[str, str], tuple[int, int]]:  # noqa: ANN001
    """The requests through the engine: generations batched by budget and decoding kind, then the
    loglikelihoods. Returns the generations and (sequential decode steps, row-tokens they forwarded)."""
    from safetyrepro.adapters.scoring import logprob_context

    outputs: dict[str, str] = {}
    steps = rows = 0
    generations = [(r.key, r) for r in requests if r.kind == "generate"]
    for budget in sorted({r.max_new_tokens for _, r in generations}):
        for sampled in (False, True):
            group = [(k, r) for k, r in generations if r.max_new_tokens == budget and (r.temperature > 0) == sampled]
            for start in range(0, len(group), batch_size):
                chunk = group[start:start + batch_size]
                texts = lm.decode([r.context for _, r in chunk], temperatures=[r.temperature for _, r in chunk],
                                  seeds=[r.seed for _, r in chunk], max_new_tokens=budget)
                outputs.update({k: t for (k, _), t in zip(chunk, texts)})
                longest = max(len(lm.encode(t)) for t in texts) + 1  # an EOS is not in the text
                steps += min(longest, budget) - 1
                rows += (min(longest, budget) - 1) * len(chunk)
    scored = [r for r in requests if r.kind == "loglikelihood"]
    lm.loglikelihood_states([(logprob_context(r.context, outputs[r.after]) if r.after else r.context,
                              r.continuation or "") for r in scored], [r.context if r.after else None for r in scored])
    return outputs, (steps, rows)


class PartTimer:
    """Seconds spent inside wrapped functions, a nested call's time counted in its own part only."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stack: list[float] = []

    def wrap(self, owner, name: str, part: str) -> None:  # noqa: ANN001 - a module or a class
        original = getattr(owner, name)
        self.seconds[part] = 0.0

        def timed(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            self._stack.append(0.0)
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                inner = self._stack.pop()
                self.seconds[part] += spent - inner
                if self._stack:
                    self._stack[-1] += spent

        setattr(owner, name, timed)

    def line(self) -> str:
        return ", ".join(f"{part} {seconds:.1f} s" for part, seconds in self.seconds.items())


def lm_eval_command(grid, cell: dict, work: Path) -> list[str]:  # noqa: ANN001 - a script
    from safetyrepro.adapters.models.hf import weights_path
    from safetyrepro.lm_eval_tasks import include_path

    model = next(m for m in grid.models if m.name == cell["model"])
    command = [str(BIN / "lm_eval"), "run", "--model", "hf", "--model_args",
               f"pretrained={weights_path(model.spec)},dtype={model.spec.dtype}", "--include_path",
               str(include_path()), "--tasks", f"safetyrepro_{cell['benchmark']}_{cell['template']}_{cell['scoring']}",
               "--num_fewshot", str(cell["fewshot"]), "--apply_chat_template", "--limit", str(grid.limit),
               "--output_path", str(work / "lm_eval")]
    temperature = {"greedy": 0.0, "t0.3": 0.3, "t0.7": 0.7}[cell["decoding"]]
    gen = [f"max_gen_toks={cell['config']['max_new_tokens']}"] if cell["config"]["max_new_tokens"] else []
    if temperature > 0:
        gen += ["do_sample=True", f"temperature={temperature}", "top_k=0", "top_p=1.0"]
    return command + (["--gen_kwargs", ",".join(gen)] if gen else [])


def unique_tokens(lm, requests, outputs: dict[str, str]) -> tuple[int, int]:  # noqa: ANN001 - a script
    """(unique prefix-trie positions over one model's requests, candidate tokens the engine
    forwards beyond each candidate's first)."""
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

    candidates = 0
    for r in requests:
        if r.kind == "generate":
            context_ids, generated = lm.formatter.encode_pair(r.context, outputs[r.key])
            insert(context_ids + generated[:-1])
        else:
            context = logprob_context(r.context, outputs[r.after]) if r.after else r.context
            context_ids, candidate = lm.formatter.encode_pair(context, r.continuation or "")
            insert(context_ids + candidate[:-1])
            candidates += max(len(candidate) - 1, 0)
    return unique, candidates


def plan_decoding(prepared, events: Path, lm, model: str) -> dict[int, tuple[int, int]]:  # noqa: ANN001
    """Per batch size, (generation batches, sequential decoding steps) of one model's batches in
    the plan, as (b) computed them (a decode group counted once, as one batch of its rows): a batch
    steps until its longest row's end (its first token comes from the context's logits; an EOS
    ends a row and is not in its text, so the count is re-encoded from the text: close, not exact,
    where a text re-encodes to other tokens)."""
    import json

    lines = events.read_text().splitlines()[1:]
    responses = {entry["key"]: entry["body"]["response"] for entry in map(json.loads, lines)}
    found: dict[int, tuple[int, int]] = {}
    seen: set[tuple[str, ...]] = set()
    for index, (start, stop) in enumerate(prepared.batches):
        first = prepared.requests[prepared.keys[start]]
        rows = tuple(prepared.computed_with(index))  # a decode group is decoded once, whole
        if first.kind != "generate" or first.model != model or rows in seen:
            continue
        seen.add(rows)
        longest = max(len(lm.encode(responses[k])) + 1 for k in rows)
        n, steps = found.get(len(rows), (0, 0))
        found[len(rows)] = (n + 1, steps + min(longest, first.max_new_tokens) - 1)
    return found


def decode_step(lm, batch: int, repeats: int = 5) -> float:  # noqa: ANN001 - a script
    """Seconds of one decoding step's forward (``batch`` rows of one token, logits of the last),
    best of ``repeats``: every weight is read once however few tokens pass, so a sequential step
    cannot cost less (attention over the cache comes on top)."""
    import torch

    ids = torch.randint(0, lm.model.config.vocab_size, (batch, 1), generator=torch.Generator().manual_seed(0))
    best = float("inf")
    with torch.inference_mode():
        for _ in range(repeats):
            started = time.perf_counter()
            lm.model(input_ids=ids, logits_to_keep=1)
            best = min(best, time.perf_counter() - started)
    return best


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

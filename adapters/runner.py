"""The reference runner: one configuration, straight through the core, to per-item records and a summary.

The harness bindings are checked against these records item by item, so they hold everything:
rendered messages, the exact model context, candidates, gold, raw output, prediction, the rule
that produced it and per-candidate loglikelihoods.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _registry
from .config import ModelSpec, RunConfig
from .datafiles import resolve_data_dir
from .errors import ConfigError
from .metrics import MetricValue
from .models.hf import HFLanguageModel
from .prompts import benchmark_blocks, render_prompt
from .records import ItemRecord
from .scoring import Prepared
from .subsets import select


@dataclass(frozen=True)
class RunResult:
    """Records, metrics and the summary of one run."""

    config: RunConfig
    records: list[ItemRecord]
    metrics: dict[str, MetricValue]
    summary: dict[str, Any]
    out_dir: Path | None


@functools.cache
def load_model(spec: ModelSpec) -> HFLanguageModel:
    """Models are loaded once per process and shared by every run that names the same spec."""
    return HFLanguageModel(spec)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("safetyrepro", "torch", "transformers", "tokenizers"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def check_out_dir(out_dir: Path | None, overwrite: bool) -> None:
    if out_dir is not None and out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise ConfigError(f"output folder {out_dir} already holds files",
                          "choose another --out, or pass --overwrite to replace that run")


def _write(out_dir: Path, records: list[ItemRecord], summary: dict[str, Any]) -> None:
    """Write into a sibling temporary folder, then swap it in: an interrupted run never leaves a
    half-written result where a complete one was."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}-"))
    try:
        with open(staging / "records.jsonl", "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(record.model_dump_json() + "\n")
        (staging / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
        if out_dir.exists():
            old = out_dir.with_name(f".{out_dir.name}-replaced")
            os.replace(out_dir, old)
            os.replace(staging, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, out_dir)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def run(
    config: RunConfig,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    show_progress: bool = True,
) -> RunResult:
    bench = _registry.get_benchmark(config.benchmark)
    style = _registry.get_style(config.template)
    scorer = _registry.get_scorer(config.scoring)
    out_path = Path(out_dir) if out_dir is not None else None
    check_out_dir(out_path, overwrite)
    started = time.time()

    source = resolve_data_dir(data_dir)
    items = bench.load(source)
    eval_items, pool, manifest = select(bench, items)
    if config.fewshot > len(pool):
        raise ConfigError(f"{bench.name} has {len(pool)} exemplars, fewshot={config.fewshot} asked",
                          f"use fewshot <= {len(pool)}")
    chosen = eval_items[: config.limit] if config.limit else eval_items
    shots = bench.shots(pool, config.fewshot)
    blocks = benchmark_blocks(str(_registry.template_file(bench)))

    lm = load_model(config.model)
    prepared = []
    for item in chosen:
        prompt = render_prompt(blocks, style, item, shots, where=f"{bench.name}/{style.name}")
        prepared.append(Prepared(item=item, prompt=prompt, context=lm.context_for(prompt.messages, prompt.text)))

    from tqdm.auto import tqdm

    import torch

    torch.manual_seed(config.seed)
    with tqdm(total=len(prepared), desc=f"{bench.name}/{style.name}/{scorer.name}", disable=not show_progress,
              leave=False) as bar:
        records = scorer.score(lm, bench, style, prepared, config, progress=bar.update)
    metrics = bench.metrics(records, seed=config.seed, n_resamples=config.n_resamples)

    summary = {
        "config": config.model_dump(mode="json"),
        "config_hash": config.config_hash(),
        "benchmark": {"name": bench.name, "title": bench.title, "primary_metric": bench.primary_metric},
        "template": {"style": style.name, "reasoning": style.reasoning,
                     "fewshot_ids": [s.id for s, _ in shots], "fewshot_answers": [a for _, a in shots]},
        "model": lm.info.as_dict(),
        "data": {
            "origin": source.origin,
            "root": str(source.root),
            "files": {f.path: f.sha256 for f in bench.files},
        },
        "subset": {"manifest_sha256": manifest.sha256, "seed": manifest.seed, "rule": manifest.rule,
                   "n_subset": len(eval_items), "n_evaluated": len(records)},
        "counts": {"items": len(records), "unparsed": sum(r.prediction is None for r in records)},
        "metrics": {name: m.model_dump() for name, m in metrics.items()},
        "versions": _versions(),
        "elapsed_s": round(time.time() - started, 2),
    }
    if out_path is not None:
        _write(out_path, records, summary)
    return RunResult(config=config, records=records, metrics=metrics, summary=summary, out_dir=out_path)

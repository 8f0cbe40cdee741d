"""``crosspkg compare``: the anchor through every harness, diffed item by item.

The reference runner is always run (in process) and is the baseline every harness is compared
with; harnesses are also compared pairwise. Harmonized mode must agree; a disagreement is a
finding and makes the exit status 1.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safetyrepro.adapters import MetricValue, get_benchmark, score_prediction

from .agreement import HarnessItem, tolerance_for
from .anchor import Anchor, cell_for
from .diff import ItemDiff, diff_harnesses
from .harnesses import HARMONIZED, NATIVE_SUFFIX, HarnessRun, reference_run


@dataclass
class Score:
    benchmark: str
    harness: str
    mode: str
    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    all_metrics: dict[str, float] = field(default_factory=dict)
    qualifier: str = ""
    """Where the run is not wholly the harness's own, what differs (shown beside the score)."""


@dataclass
class Comparison:
    anchor: Anchor
    runs: list[HarnessRun]
    scores: list[Score]
    diffs: dict[tuple[str, str, str], list[ItemDiff]]
    """(benchmark, harness a, harness b) -> per-item diffs."""
    header: dict[str, Any]
    ladder: dict[str, dict[str, list[LadderStep]]] = field(default_factory=dict)
    """Native run label -> benchmark -> the factor ladder's steps."""
    path_runs: list[HarnessRun] = field(default_factory=list)
    """With ``scoring_gap``: the reference runner and each harmonized harness on the other scoring path."""

    def harmonized_pairs(self) -> list[tuple[str, str, str]]:
        """The compared pairs of two harmonized runs (native runs differ by design, not by fault)."""
        return [key for key in self.diffs if not (key[1].endswith(NATIVE_SUFFIX) or key[2].endswith(NATIVE_SUFFIX))]

    def findings(self) -> list[ItemDiff]:
        """Disagreements between harmonized runs."""
        return [d for key in self.harmonized_pairs() for d in self.diffs[key] if d.finding]

    def attribution(self, benchmark: str, a: str, b: str) -> Counter[str]:
        """Items whose prediction differs between ``a`` and ``b`` (or that only one has), by the
        first cause present."""
        return Counter(d.prediction_cause for d in self.diffs[(benchmark, a, b)] if d.prediction_cause)


def score_items(anchor: Anchor, benchmark: str, items: dict[str, HarnessItem], harness: str, mode: str) -> Score:
    """A benchmark's metrics over one harness's predictions, computed by the core (same items, same
    gold, same metric definitions, bootstrap intervals), so scores differ only where predictions do."""
    bench = get_benchmark(benchmark)
    cell = cell_for(anchor.run_config(benchmark))
    known = {c.item.id for c in cell.items}
    outcomes = [score_prediction(bench, cell.item(item_id).item, h.prediction, rule=f"{harness}: {h.extraction_rule}")
                for item_id, h in items.items() if item_id in known]
    measured: dict[str, MetricValue] = bench.measure(outcomes, seed=anchor.seed, n_resamples=1000)
    primary = next(s.name for s in bench.all_metric_specs() if s.primary)
    value = measured[primary]
    return Score(benchmark, harness, mode, primary, value.value, value.ci_low, value.ci_high, value.n,
                 {k: v.value for k, v in measured.items()})


def harness_scores(anchor: Anchor, run: HarnessRun) -> list[Score]:
    scores = [score_items(anchor, benchmark, items, run.harness, run.mode) for benchmark, items in run.items.items()]
    for score in scores:
        score.qualifier = run.qualifiers.get(score.benchmark, "")
    return scores


@dataclass
class LadderStep:
    step: str
    description: str
    score: Score
    changed: int
    """Items whose prediction differs from the previous step's."""


def ladders(anchor: Anchor, runs: list[HarnessRun]) -> dict[str, dict[str, list[LadderStep]]]:
    """Per native run and benchmark: the score after each factor is switched to the harmonized value."""
    from .native import LADDER_STEPS

    result: dict[str, dict[str, list[LadderStep]]] = {}
    for run in runs:
        if run.mode != "native" or not run.ladder:
            continue
        harmonized = next((r for r in runs if r.mode == "harmonized" and r.harness == run.harness),
                          next(r for r in runs if r.harness == "core"))
        for benchmark, middle in run.ladder.items():
            names = LADDER_STEPS[run.harness]
            steps = [run.items[benchmark], *(middle[name] for name, _ in names[1:-1]), harmonized.items[benchmark]]
            out, previous = [], None
            for (name, description), items in zip(names, steps):
                changed = 0 if previous is None else sum(
                    1 for i, h in items.items() if i in previous and previous[i].prediction != h.prediction)
                out.append(LadderStep(name, description, score_items(anchor, benchmark, items, run.harness, name),
                                      changed))
                previous = items
            result.setdefault(run.label, {})[benchmark] = out
    return result


def run_comparison(anchor: Anchor, out: Path, notify: Callable[[str], None]) -> Comparison:
    runs: list[HarnessRun] = []
    notify(f"reference runner: {len(anchor.benchmarks)} benchmark(s) x {anchor.limit} items")
    core, summaries = reference_run(anchor, notify)
    runs.append(core)
    if anchor.mode in ("harmonized", "both"):
        for harness in anchor.harnesses:
            notify(f"{harness}: running the SafetyRepro tasks through its CLI")
            runs.append(HARMONIZED[harness](anchor, out / harness))
            notify(f"{harness}: done in {runs[-1].seconds:.0f} s")
    path_runs: list[HarnessRun] = []
    if anchor.scoring_gap is not None:
        other = anchor.model_copy(update={"scoring": anchor.other_scoring, "scoring_gap": None})
        notify(f"reference runner on the other scoring path ({other.scoring})")
        path_runs.append(reference_run(other, notify)[0])
        for harness in anchor.harnesses if anchor.mode in ("harmonized", "both") else []:
            notify(f"{harness}: the SafetyRepro tasks on the other scoring path ({other.scoring})")
            path_runs.append(HARMONIZED[harness](other, out / f"{harness}-{other.scoring}"))
    if anchor.mode in ("native", "both"):
        from .native import native_runners

        for harness in anchor.harnesses:
            notify(f"{harness} (native): running its own implementations")
            runs.append(native_runners()[harness](anchor, out / f"{harness}{NATIVE_SUFFIX}"))
    model = next(iter(summaries.values()))["model"]
    runtime = model.get("runtime", {})
    greedy = anchor.decoding == "greedy"
    diffs: dict[tuple[str, str, str], list[ItemDiff]] = {}
    harmonized = [r for r in runs if r.mode == "harmonized"]
    pairs = list(itertools.combinations(harmonized, 2))
    for native in (r for r in runs if r.mode == "native"):
        # A native run against the reference and against the same harness's harmonized run.
        pairs += [(h, native) for h in harmonized if h.harness in ("core", native.harness)]
    for benchmark in anchor.benchmarks:
        for a, b in pairs:
            if benchmark not in a.items or benchmark not in b.items:
                continue
            # HELM's echo forwards one token more than the others: on NF4's bf16 CPU path that
            # shape difference alone moves loglikelihoods (agreement.tolerance_for).
            tol = tolerance_for(runtime, same_shapes="helm" not in (a.harness, b.harness))
            diffs[(benchmark, a.label, b.label)] = diff_harnesses(
                a.label, a.items[benchmark], b.label, b.items[benchmark], tol=tol, compare_generations=greedy)
    scores = [s for r in runs for s in harness_scores(anchor, r)]
    header = {"anchor": anchor.model_dump(mode="json"), "anchor_sha256": anchor.anchor_hash(),
              "model": model, "versions": {**next(iter(summaries.values())).get("versions", {}), **_harness_versions()},
              "native_versions": {r.label: r.versions for r in runs if r.versions},
              "config_sha256": {b: anchor.run_config(b).config_hash() for b in anchor.benchmarks},
              "tolerance": {"same_shapes": tolerance_for(runtime, same_shapes=True),
                            "with_helm": tolerance_for(runtime, same_shapes=False)}, "harness_seconds": {f"{r.harness}/{r.mode}": round(r.seconds, 1) for r in runs},
              "commands": {f"{r.harness}/{r.mode}": r.command for r in runs}
                          | {f"{r.harness}/{r.mode}/{anchor.scoring_gap}": r.command for r in path_runs}}
    return Comparison(anchor=anchor, runs=runs, scores=scores, diffs=diffs, header=header,
                      ladder=ladders(anchor, runs), path_runs=path_runs)


def _harness_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("lm_eval", "inspect_ai", "crfm-helm"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def items_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per (benchmark, harness, mode, item): the machine-readable ``items.parquet``."""
    import json

    rows = []
    for run in comparison.runs:
        for benchmark, items in run.items.items():
            for h in items.values():
                rows.append({"benchmark": benchmark, "harness": run.harness, "mode": run.mode, "item_id": h.item_id,
                             "prompt": h.generation_prompt or (h.scoring_contexts[0] if h.scoring_contexts else None),
                             "candidates": json.dumps(h.candidates), "gold": h.gold if h.gold != "not recorded" else None,
                             "prediction": h.prediction, "extraction_rule": h.extraction_rule,
                             "loglikelihoods": json.dumps(h.loglikelihoods), "raw_output": h.raw_output})
    return rows

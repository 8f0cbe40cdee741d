"""The case study's view of a comparison (the paper's table): per benchmark, the largest gap
between the packages' own (native) implementations, the gap between the two scoring paths on the
same items, and the share of each native-to-harmonized gap that each factor of the ladder explains.

Formats (in ``scores.json``, stable):

* ``path_gaps``: ``[{benchmark, harness, metric, scoring, other_scoring, value, other_value, gap,
  n, changed: [item_id]}]`` -- ``gap = other_value - value`` on the same items, ``changed`` the
  items whose prediction differs between the two paths;
* ``case_study``: ``[{benchmark, metric, native: {run: value or null}, native_gap, native_between,
  path_gap: {harness: gap}, factors: {run: {"total": x, "steps": {step: {"delta", "share"}}}}}]``
  -- ``share = delta / total`` (signed: factors can pull apart and cancel; undefined where the
  native run already scores as the harmonized one). A native run that is not wholly the package's
  own carries its qualifier in its key (``inspect/native (native prompt, substituted judge)``).
"""

from __future__ import annotations

import math
from typing import Any

from .compare import Comparison, score_items


def path_gaps(comparison: Comparison) -> list[dict[str, Any]]:
    """Per benchmark and harness: the anchor's scoring path against the other one, same items."""
    anchor = comparison.anchor
    rows = []
    for other in comparison.path_runs:
        run = next((r for r in comparison.runs if r.harness == other.harness and r.mode == "harmonized"), None)
        if run is None:
            continue
        for benchmark, items in run.items.items():
            if benchmark not in other.items:
                continue
            a = score_items(anchor, benchmark, items, run.harness, anchor.scoring)
            b = score_items(anchor, benchmark, other.items[benchmark], other.harness, anchor.other_scoring)
            changed = sorted(i for i, h in items.items()
                             if i in other.items[benchmark] and other.items[benchmark][i].prediction != h.prediction)
            rows.append({"benchmark": benchmark, "harness": run.harness, "metric": a.metric,
                         "scoring": anchor.scoring, "other_scoring": anchor.other_scoring, "value": a.value,
                         "other_value": b.value, "gap": b.value - a.value, "n": a.n, "changed": changed})
    return rows


def case_study(comparison: Comparison, gaps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paper's view, one row per benchmark (see the module docstring); ``gaps`` is
    :func:`path_gaps` of the same comparison (computed once: each score is bootstrapped)."""
    rows = []
    for benchmark in comparison.anchor.benchmarks:
        native = {f"{s.harness}/native" + (f" ({s.qualifier})" if s.qualifier else ""): s.value
                  for s in comparison.scores if s.benchmark == benchmark and s.mode == "native"}
        scored = {run: value for run, value in native.items() if not math.isnan(value)}  # null: nothing read
        metric = next((s.metric for s in comparison.scores if s.benchmark == benchmark), "")
        if len(scored) >= 2:
            low, high = min(scored, key=scored.__getitem__), max(scored, key=scored.__getitem__)
            native_gap, between = scored[high] - scored[low], [low, high]
        else:
            native_gap, between = math.nan, list(scored)
        factors = {}
        for label, benchmarks in comparison.ladder.items():
            steps = benchmarks.get(benchmark)
            if not steps:
                continue
            total = steps[-1].score.value - steps[0].score.value
            factors[label] = {"total": total, "steps": {
                step.step: {"delta": step.score.value - previous.score.value,
                            "share": (step.score.value - previous.score.value) / total if total else math.nan}
                for previous, step in zip(steps, steps[1:])}}
        rows.append({"benchmark": benchmark, "metric": metric, "native": native, "native_gap": native_gap,
                     "native_between": between,
                     "path_gap": {g["harness"]: g["gap"] for g in gaps if g["benchmark"] == benchmark},
                     "factors": factors})
    return rows


def _fmt(value: float, signed: bool = False) -> str:
    if value != value:
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _percent(share: float) -> str:
    """A signed share as a whole percent; a step that moved nothing is 0%, not "-0%" (a zero delta
    over a negative total)."""
    return f"{share:.0%}" if round(share * 100) != 0 else "0%"


def case_study_table(rows: list[dict[str, Any]], scoring: str, other: str | None) -> list[list[str]]:
    """The report's opening table: one line per benchmark."""
    head = ["benchmark", "metric", "largest native gap", "between"]
    head += [f"scoring-path gap ({other} - {scoring}), per harness"] if other else []
    head += ["share of each native-to-harmonized gap, per factor"]
    table = [head]
    for row in rows:
        unscored = [run for run, value in row["native"].items() if value is None or value != value]
        between = " vs ".join(row["native_between"]) or ("no native run" if not row["native"] else "")
        if unscored:  # a package that ran but whose answers could not be read counts in no gap: said so
            between += ("; " if between else "") + "no score (nothing read): " + ", ".join(unscored)
        line = [row["benchmark"], row["metric"], _fmt(row["native_gap"]), between]
        if other:
            line.append(", ".join(f"{h} {_fmt(g, True)}" for h, g in row["path_gap"].items()) or "n/a")
        shares = []
        for label, f in row["factors"].items():
            parts = ", ".join(f"{step} {_fmt(v['delta'], True)} ({_percent(v['share'])})" if v["share"] == v["share"]
                              else f"{step} {_fmt(v['delta'], True)}" for step, v in f["steps"].items())
            shares.append(f"{label}: total {_fmt(f['total'], True)} = {parts}")
        line.append("; ".join(shares) or "no ladder")
        table.append(line)
    return table


def path_gap_lines(gaps: list[dict[str, Any]]) -> list[str]:
    """Plain-language lines: per benchmark and harness, the gap and the items that changed."""
    return [f"{g['benchmark']}, {g['harness']}: {g['metric']} {_fmt(g['value'])} ({g['scoring']}) vs "
            f"{_fmt(g['other_value'])} ({g['other_scoring']}), gap {_fmt(g['gap'], True)}; {len(g['changed'])} of {g['n']} "
            f"items change prediction{': ' + ', '.join(g['changed'][:10]) if g['changed'] else ''}"
            f"{' ...' if len(g['changed']) > 10 else ''}" for g in gaps]

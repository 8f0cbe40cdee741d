"""A HELM presentation schema for SafetyRepro runs, generated from the core's metric specs, so
``helm-summarize --schema-path`` and ``helm-server`` show every benchmark's own metrics (with
their direction) in a table per benchmark instead of warning that they are undefined.

Directions are the core's (``Benchmark.harness_metric_specs``): ``lower_is_better`` false/true
for higher/lower metrics, unset for a target metric's raw value (HELM's ``MetricMetadata``
allows None: "comparisons are not meaningful"), and true for its ``<name>_distance``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from safetyrepro.adapters import all_benchmarks
from safetyrepro.adapters.atomic import replace_file
from safetyrepro.adapters.metrics import DISTANCE_SUFFIX, MetricSpec

SCHEMA_FILE = "schema_safetyrepro.yaml"

CHECKS = {
    "candidate_tokens_match_core": "Share of logprob items whose echo HELM tokenised as the core does (1 = all; "
                                   "the others are unparsed).",
    "helm_native_rule_agrees": "Share of logprob items where HELM's own length-normalised rule picks the core's "
                               "argmax prediction (for the record; the core's argmax decides).",
    "num_items": "Number of evaluated items.",
}
"""The binding's own per-run checks (see ``metric.py``)."""


def _metric(name: str, display: str, description: str, lower_is_better: bool | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "display_name": display, "description": description}
    if lower_is_better is not None:
        entry["lower_is_better"] = lower_is_better
    return entry


def _lower_is_better(spec: MetricSpec) -> bool | None:
    """HELM's direction flag: None for a target metric's raw value (a column HELM then neither
    bolds nor counts in win rates, ``summarize.py``); its ``_distance`` carries the ranking."""
    return None if spec.higher_is_better is None else not spec.higher_is_better


def _description(spec: MetricSpec) -> str:
    if spec.direction == "target":
        return f"{spec.description} Best value: {spec.target:g} (closest wins; ranked by {spec.name}{DISTANCE_SUFFIX})."
    return spec.description


def _metric_entries(spec: MetricSpec) -> list[dict[str, Any]]:
    """The metric and its two bootstrap bounds (the bounds have no direction of their own)."""
    return [_metric(spec.name, spec.name, _description(spec), _lower_is_better(spec))] + [
        _metric(f"{spec.name}_{bound}", f"{spec.name} {bound}", f"Bootstrap interval bound ({bound}) of {spec.name}.",
                None) for bound in ("ci_low", "ci_high")]


def build_schema() -> dict[str, Any]:
    metrics: dict[str, dict[str, Any]] = {}
    metric_groups, run_groups = [], []
    for name, bench in all_benchmarks().items():
        specs = bench.harness_metric_specs()  # what the metric reports: targets followed by their distances
        for spec in specs:
            if spec.name not in metrics:
                metrics.update((entry["name"], entry) for entry in _metric_entries(spec))
        metric_groups.append({"name": f"safetyrepro_{name}_metrics", "display_name": f"{name} metrics",
                              "metrics": [{"name": s.name, "split": "${main_split}"} for s in specs]})
        primary = next(s.name for s in specs if s.primary)
        run_groups.append({
            "name": f"safetyrepro_{name}", "display_name": f"SafetyRepro {name}",
            "description": f"{name} as prepared by SafetyRepro's harness-neutral core.",
            "metric_groups": [f"safetyrepro_{name}_metrics", "safetyrepro_checks"],
            "environment": {"main_name": primary, "main_split": "test"},
            "taxonomy": {"task": "alignment evaluation", "what": name, "who": "n/a", "when": "n/a",
                         "language": "English"},
        })
    for name, description in CHECKS.items():
        metrics[name] = _metric(name, name, description, None)
    metric_groups.append({"name": "safetyrepro_checks", "display_name": "SafetyRepro checks", "hide_win_rates": True,
                          "metrics": [{"name": n, "split": "${main_split}"} for n in CHECKS]})
    parent = {"name": "safetyrepro", "display_name": "SafetyRepro", "category": "All scenarios",
              "description": "SafetyRepro alignment benchmarks.", "subgroups": [g["name"] for g in run_groups]}
    return {"metrics": list(metrics.values()), "perturbations": [], "metric_groups": metric_groups,
            "run_groups": [parent, *run_groups]}


def write_schema(path: Path) -> Path:
    """Write the schema YAML (replaced whole: an existing file is never half-written)."""
    replace_file(path, yaml.safe_dump(build_schema(), sort_keys=False))
    return path

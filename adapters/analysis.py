"""A grid run's rank-instability statistics, per benchmark and tier, from its verified results.

For each benchmark and each tier of configurations -- ``grid`` (every configuration the run has)
and ``core`` (the conservative tier: no reasoning template, greedy decoding) -- on the
benchmark's primary metric (its declared direction, e.g. CrowS-Pairs' target 50):

* the noise of every comparison: for each configuration and model pair, a paired bootstrap of the
  difference in goodness on the items both were scored on (items resampled together; the metric
  recomputed from the per-item records, so any metric works). A difference whose interval holds 0
  is a tie within the noise; the interval's half-width is that comparison's detection limit and
  its median over the benchmark's comparisons is the benchmark's;
* the :mod:`.stats` tables: flips (raw and noise-aware), reachable orderings, Kendall tau, and the
  Type-II ANOVA shares (where anything varies).

Result format (``stats.json``, stable, ``safetyrepro-stats/1``): ``{"format", "plan_sha256",
"manifest_sha256", "n_resamples", "seed", "gates": {...} (:func:`gates_summary`), "benchmarks": {benchmark: {"metric", "direction",
"target", "tiers": {tier: {"n_configs", "models", "factors", "flips": [row], "orderings": [row],
"possible_orderings", "reachable_orderings", "tau": {...}, "borda": [row], "anova": [row] | null, "dominated_by",
"anova_note", "detection_limit", "gaps": [{"config", "pair", "gap", "half_width", "resolvable"}],
"share_below_detection"}}, "skipped": {tier: why}}}}``. Rows are the :mod:`.stats` DataFrames as records.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import _registry
from .errors import ConfigError
from .gridresults import GridResults
from .stats import (FACTORS, borda, complete_configs, goodness, orderings, paired_bootstrap, pairwise_flips,
                    rank_consistency, variance_shares)

STATS_FORMAT = "safetyrepro-stats/1"
LEVEL = 0.95


def in_core_tier(row: pd.Series) -> bool:
    """The conservative tier: a direct (non-reasoning) template and greedy decoding."""
    return not _registry.get_style(row["template"]).reasoning and row["decoding"] == "greedy"


TIERS = {"grid": lambda row: True, "core": in_core_tier}
"""Tier name -> which configurations it keeps."""


@dataclass
class TierStats:
    table: pd.DataFrame
    """Primary score per (model, configuration), with cell ids."""
    flips: pd.DataFrame
    orderings: pd.DataFrame
    tau: dict[str, float]
    anova: pd.DataFrame | None
    anova_note: str
    gaps: pd.DataFrame
    """One row per (configuration, pair): gap in goodness, bootstrap half-width, resolvable."""
    factors: list[str] = field(default_factory=list)
    borda: pd.DataFrame | None = None
    """The configurations' rankings aggregated by Borda count."""

    @property
    def detection_limit(self) -> float:
        return float(self.gaps["half_width"].median()) if len(self.gaps) else math.nan

    @property
    def share_below_detection(self) -> float:
        return float((~self.gaps["resolvable"]).mean()) if len(self.gaps) else math.nan


@dataclass
class BenchmarkStats:
    benchmark: str
    metric: str
    direction: str
    target: float | None
    tiers: dict[str, TierStats]
    skipped: dict[str, str] = field(default_factory=dict)
    """Tiers with nothing to compare, and why."""


class PairedNoise:
    """Bootstrap intervals of paired score differences, from the cells' item records."""

    def __init__(self, results: GridResults, *, n_resamples: int, seed: int) -> None:
        self.results, self.n_resamples, self.seed = results, n_resamples, seed
        self._known: dict[tuple[str, str], tuple[float, float, float]] = {}  # the core tier asks again

    def interval(self, benchmark: str, cell_a: str, cell_b: str, direction: str,
                 target: float | None) -> tuple[float, float, float]:
        """(goodness difference A - B, lower, upper) of the 95% paired bootstrap interval."""
        if (cell_a, cell_b) not in self._known:
            self._known[(cell_a, cell_b)] = self._interval(benchmark, cell_a, cell_b, direction, target)
        return self._known[(cell_a, cell_b)]

    def _interval(self, benchmark: str, cell_a: str, cell_b: str, direction: str,
                  target: float | None) -> tuple[float, float, float]:
        bench = _registry.get_benchmark(benchmark)
        metric = bench.primary_metric
        a, b = self.results.records(cell_a), self.results.records(cell_b)
        if [r.item_id for r in a] != [r.item_id for r in b]:
            raise ConfigError(f"cells {cell_a} and {cell_b} were scored on different items",
                              "compare cells of one grid run (same benchmark, same limit)")

        def score(records: list[Any]) -> float:
            value = bench.metrics(records, seed=self.seed, n_resamples=0)[metric].value
            return float(goodness(pd.Series([value]), direction, target).iloc[0])  # type: ignore[arg-type]

        return paired_bootstrap(len(a), lambda idx: score([a[i] for i in idx]) - score([b[i] for i in idx]),
                                seed=self.seed, n_resamples=self.n_resamples, level=LEVEL)


class _NothingToCompare(Exception):
    pass


def _tier(table: pd.DataFrame, noise: PairedNoise, benchmark: str, direction: str,
          target: float | None) -> TierStats:
    factors = [f for f in FACTORS if table[f].nunique() > 1] or ["template"]
    wide = complete_configs(table[["model", *FACTORS, "score"]].dropna(subset=["score"]))
    if wide.empty or wide.shape[1] < 2:
        raise _NothingToCompare("no configuration has a score for two or more models (every model needs a "
                                "scored cell in the same configuration)")
    cells = table.set_index(["model", *FACTORS])["cell_id"]
    gap_rows, mask_rows = [], []
    for config in wide.index:
        config_key = config if isinstance(config, tuple) else (config,)
        mask = {}
        for a, b in itertools.combinations(sorted(wide.columns), 2):
            point, low, high = noise.interval(benchmark, cells[(a, *config_key)], cells[(b, *config_key)],
                                              direction, target)
            resolvable = bool(low > 0 or high < 0)
            mask[f"{a}|{b}"] = resolvable
            gap_rows.append({"config": " ".join(f"{f}={v}" for f, v in zip(FACTORS, config_key)),
                             "pair": f"{a} vs {b}", "gap": abs(point), "difference": point,
                             "half_width": (high - low) / 2 if not math.isnan(low) else math.nan,
                             "resolvable": resolvable})
        mask_rows.append(mask)
    resolvable_mask = pd.DataFrame(mask_rows, index=wide.index)
    scored = table.dropna(subset=["score"])
    flips = pairwise_flips(scored[["model", *FACTORS, "score"]], direction=direction, target=target,  # type: ignore[arg-type]
                           resolvable=resolvable_mask)
    found = orderings(scored[["model", *FACTORS, "score"]], direction=direction, target=target)  # type: ignore[arg-type]
    tau = rank_consistency(scored[["model", *FACTORS, "score"]], direction=direction, target=target)  # type: ignore[arg-type]
    aggregated = borda(scored[["model", *FACTORS, "score"]], direction=direction, target=target)  # type: ignore[arg-type]
    try:
        anova, note = variance_shares(scored[["model", *FACTORS, "score"]], direction=direction, target=target), ""  # type: ignore[arg-type]
    except (ConfigError, ValueError, np.linalg.LinAlgError) as exc:
        anova, note = None, getattr(exc, "what", str(exc))
    return TierStats(table=scored, flips=flips, orderings=found, tau=tau, anova=anova, anova_note=note,
                     gaps=pd.DataFrame(gap_rows, columns=["config", "pair", "gap", "difference", "half_width",
                                                          "resolvable"]),
                     factors=factors, borda=aggregated)


def analyse(results: GridResults, *, n_resamples: int = 1000, seed: int | None = None,
            progress: bool = True) -> dict[str, BenchmarkStats]:
    """Every benchmark's statistics, per tier (a tier with no configuration is left out)."""
    from tqdm.auto import tqdm

    seed = results.prepared.grid.seed if seed is None else seed
    noise = PairedNoise(results, n_resamples=n_resamples, seed=seed)
    primary = results.primary()
    out = {}
    benchmarks = list(dict.fromkeys(primary["benchmark"]))
    for benchmark in tqdm(benchmarks, desc="benchmarks", disable=not progress):
        bench = _registry.get_benchmark(benchmark)
        spec = bench.metric_spec(bench.primary_metric)
        rows = primary[primary["benchmark"] == benchmark]
        tiers: dict[str, TierStats] = {}
        skipped: dict[str, str] = {}
        for tier, keep in TIERS.items():
            chosen = rows[rows.apply(keep, axis=1)] if len(rows) else rows
            if chosen.empty:
                continue
            if tier != "grid" and len(chosen) == len(rows):  # the same configurations: the same numbers
                if "grid" in tiers:
                    tiers[tier] = tiers["grid"]
                else:
                    skipped[tier] = skipped["grid"]
                continue
            try:
                tiers[tier] = _tier(chosen, noise, benchmark, spec.direction, spec.target)
            except _NothingToCompare as exc:
                skipped[tier] = str(exc)
        out[benchmark] = BenchmarkStats(benchmark, spec.name, spec.direction, spec.target, tiers, skipped)
    return out


def _records(frame: pd.DataFrame | None) -> list[dict[str, Any]] | None:
    if frame is None:
        return None
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v.item() if hasattr(v, "item") else v)
             for k, v in row.items()} for row in frame.to_dict(orient="records")]


def to_json(stats: dict[str, BenchmarkStats], results: GridResults, *, n_resamples: int, seed: int) -> dict[str, Any]:
    """The ``stats.json`` document (format in the module docstring)."""
    benchmarks = {}
    for name, b in stats.items():
        tiers = {}
        for tier, t in b.tiers.items():
            tiers[tier] = {
                "n_configs": int(t.tau["n_configs"]), "models": sorted(t.table["model"].unique()),
                "factors": t.factors, "flips": _records(t.flips), "orderings": _records(t.orderings),
                "possible_orderings": t.orderings.attrs.get("possible"),
                "reachable_orderings": t.orderings.attrs.get("reachable"),
                "tau": {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in t.tau.items()},
                "borda": _records(t.borda),
                "anova": _records(t.anova), "dominated_by": t.anova.attrs.get("dominated_by") if t.anova is not None else None,
                "anova_note": t.anova_note,
                "detection_limit": None if math.isnan(t.detection_limit) else t.detection_limit,
                "gaps": _records(t.gaps),
                "share_below_detection": None if math.isnan(t.share_below_detection) else t.share_below_detection}
        benchmarks[name] = {"metric": b.metric, "direction": b.direction, "target": b.target, "tiers": tiers,
                            "skipped": b.skipped}
    return {"format": STATS_FORMAT, "plan_sha256": results.frozen["plan_sha256"],
            "manifest_sha256": _manifest_sha(results), "n_resamples": n_resamples, "seed": seed,
            "gates": gates_summary(results), "benchmarks": benchmarks}


def gates_summary(results: GridResults) -> dict[str, Any]:
    """What the instrument's stability gates say about this run (stable, in ``stats.json``):
    ``{"frozen": [gate], "evaluated", "status": {gate: status}, "failed": [gate], "supported":
    true | false | null, "note", "noise_floor": {benchmark: {...}}}``. ``supported`` is null when no
    gate was frozen or they were not evaluated: the statistics are then unchecked, not supported."""
    from . import gates

    frozen = results.prepared.grid.gates
    names = [] if frozen is None else [n for n in ("repeat", "replay") if getattr(frozen, n) is not None]
    document = gates.read(results.folder, results.frozen["plan_sha256"]) if names else None
    if document is not None and document.get("manifest_sha256") != _manifest_sha(results):
        document = None  # evaluated on other results (the run was overwritten since)
    failed = gates.failed(document)
    if not names:
        note = "no stability gate was frozen in this grid: the statistics rest on an unchecked instrument"
    elif document is None:
        note = f"gates {', '.join(names)} frozen but not evaluated: run `safetyrepro gate {results.folder}`"
    elif failed:
        note = f"gate(s) {', '.join(failed)} FAILED: every statistic below is not supported by the instrument"
    else:
        note = "every evaluated gate passed"
    status = {n: (document["gates"].get(n) or {}).get("status", "not run") if document else "not evaluated"
              for n in names}
    return {"frozen": names, "evaluated": document is not None, "status": status, "failed": failed,
            "supported": (not failed) if document is not None else None, "note": note,
            "noise_floor": document.get("noise_floor", {}) if document else {}}


def _manifest_sha(results: GridResults) -> str:
    from .datafiles import sha256_of

    return sha256_of(results.folder / "manifest.json")

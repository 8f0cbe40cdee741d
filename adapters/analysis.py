"""A grid run's rank-instability statistics, per benchmark and tier, from its verified results.

For each benchmark and each tier of configurations -- ``grid`` (every configuration the run has)
and ``core`` (the conservative tier: no reasoning template, greedy decoding) -- on the
benchmark's primary metric (its declared direction, e.g. CrowS-Pairs' target 50):

* *distinct configurations*: cells that share a ``compute_key`` (on the logprob path a direct
  template computes the same thing under every decoding) are one measurement, counted once; the
  configuration whose cells are that computation (greedy) stands for it and the others are listed
  (``duplicates``), beside the raw count. Complete cases only: a configuration counts when every model has a cell there;
* every comparison (configuration x model pair) tested on its items' outcomes (:mod:`.inference`):
  the exact sign test (McNemar) for 0/1 outcomes averaged plainly, else a paired randomization
  test (exact up to 12 discordant items, else Monte Carlo with enough swaps for the family);
  comparisons that could not reach 0.05 whatever their data are *too small to resolve* and left
  out of the family (Tarone), the others' p-values adjusted over the benchmark and tier (Holm by
  default, or Benjamini-Hochberg); *resolved* when the adjusted p is below 0.05, *undefined*
  where the metric is (e.g. nothing parsed), *identical outcomes* where no item differs. Its paired bootstrap interval gives the noise
  half-width. The *detection limit* is the median half-width over the comparisons whose two
  cells' outcomes differ on some item (identical outcomes carry no noise estimate, so they
  cannot pull it to 0); undefined where none do;
* the :mod:`.stats` tables: flips (raw and resolved-only), orderings (strict and with ties),
  Kendall tau, Borda; and the item-level variance attribution of :mod:`.attribution`.

Result format (``stats.json``, stable, ``safetyrepro-stats/2``): ``{"format", "plan_sha256",
"manifest_sha256", "n_resamples", "seed", "alpha", "multiplicity", "gates": {...}
(:func:`gates_summary`), "preregistration": {"preregistered", "utc", "plan_sha256", "record_sha256",
"first_request_utc", "pilot"} (``GridResults.preregistration``), "benchmarks": {benchmark: {"metric", "direction", "target",
"item_outcome", "tiers": {tier: {"n_configs", "n_configs_raw", "duplicates": [{"config",
"same_measurement_as"}], "unscored": [{"cell_id", "model", "config", "reason"}], "models", "factors", "flips": [row], "orderings": [row],
"possible_orderings", "reachable_orderings", "distinct_orderings", "tau": {...}, "borda": [row],
"attribution": [row], "dominated_by": {analysis: verdict}, "detection_limit", "noisy_comparisons",
"gaps": [{"config", "pair", "gap", "difference", "half_width", "p_value", "p_adjusted", "exact",
"method", "discordant", "smallest_p", "status", "resolved", "identical"}], "resolved_share"}}, "skipped": {tier: why}}}}``. Rows are the
:mod:`.stats` and :mod:`.attribution` DataFrames as records. (Format 1 counted duplicated
configurations, resolved a difference by its bootstrap interval, and fitted a cell-level ANOVA.)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from . import _registry
from .attribution import attribution_table
from .errors import ConfigError
from .gridresults import GridResults
from .benchmarks.base import score_outcomes
from .inference import ALPHA, adjust, compare, resamples_for
from .instrument import primary_score
from .stats import FACTORS, borda, complete_configs, goodness, orderings, pairwise_flips, rank_consistency

STATS_FORMAT = "safetyrepro-stats/2"
LEVEL = 0.95
RESOLVED, UNRESOLVED, TOO_SMALL, UNDEFINED = "resolved", "not resolved", "too small to resolve", "undefined"
IDENTICAL = "identical outcomes"
"""Both models have the same outcome on every item: nothing to test (left out of the family)."""


def in_core_tier(row: pd.Series) -> bool:
    """The conservative tier: a direct (non-reasoning) template and greedy decoding."""
    return not _registry.get_style(row["template"]).reasoning and row["decoding"] == "greedy"


TIERS = {"grid": lambda row: True, "core": in_core_tier}
"""Tier name -> which configurations it keeps."""


@dataclass
class TierStats:
    table: pd.DataFrame
    """Primary score per (model, distinct complete configuration), with cell ids."""
    flips: pd.DataFrame
    orderings: pd.DataFrame
    tau: dict[str, Any]
    attribution: pd.DataFrame
    """Item-level variance attribution (:func:`.attribution.attribution_table`)."""
    dominated_by: dict[str, str]
    """Per attribution: model, implementation, or why it was not fitted."""
    gaps: pd.DataFrame
    """One row per (configuration, pair): the difference, its test and its bootstrap half-width."""
    factors: list[str] = field(default_factory=list)
    borda: pd.DataFrame | None = None
    """The configurations' rankings aggregated by Borda count."""
    n_configs_raw: int = 0
    """Configurations before duplicates were merged (complete cases)."""
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    """Configurations that are the same measurement as a kept one."""
    unscored: list[dict[str, Any]] = field(default_factory=list)
    """Cells left out because their primary metric is undefined (e.g. no answer could be read),
    with the reason their summary gives."""

    @property
    def noisy(self) -> pd.DataFrame:
        return self.gaps[~self.gaps["identical"]] if len(self.gaps) else self.gaps

    @property
    def detection_limit(self) -> float:
        """Median noise half-width over the comparisons whose cells answer differently somewhere."""
        values = self.noisy["half_width"].dropna() if len(self.noisy) else pd.Series(dtype=float)
        return float(values.median()) if len(values) else math.nan

    @property
    def resolved_share(self) -> float:
        return float(self.gaps["resolved"].mean()) if len(self.gaps) else math.nan


@dataclass
class BenchmarkStats:
    benchmark: str
    metric: str
    direction: str
    target: float | None
    tiers: dict[str, TierStats]
    skipped: dict[str, str] = field(default_factory=dict)
    """Tiers with nothing to compare, and why."""
    item_outcome: str = ""
    """What the variance attribution's response is (the benchmark's ``item_outcome_note``)."""


def item_outcomes(bench: Any, records: list[Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """A cell's per-item outcomes (``Benchmark.item_outcome``; NaN: the item does not count) and
    their strata (``outcome_stratum``; None where the metric is a plain mean)."""
    values = np.array([math.nan if (v := bench.item_outcome(r)) is None else v for r in records], dtype=float)
    labels = [bench.outcome_stratum(r) for r in records]
    return values, None if all(x is None for x in labels) else np.array([str(x) for x in labels])


def paired_difference(a: np.ndarray, b: np.ndarray, strata: np.ndarray | None, direction: str,
                      target: float | None) -> np.ndarray:
    """Goodness of A minus goodness of B on the primary metric from per-item outcomes (vectorised
    over leading axes, each row a resampled or reduced set of items): what every comparison tests."""
    return goodness(score_outcomes(a, strata), direction, target) - \
        goodness(score_outcomes(b, strata), direction, target)  # type: ignore[arg-type]


class PairedNoise:
    """Each comparison's paired test (:mod:`.inference`) and bootstrap interval, from the cells'
    per-item outcomes (``Benchmark.item_outcome``; the primary metric from them is checked
    against the benchmark's own ``metrics`` on every comparison)."""

    def __init__(self, results: GridResults, *, n_resamples: int, seed: int) -> None:
        self.results, self.n_resamples, self.seed = results, n_resamples, seed
        self._known: dict[tuple[str, str, int], dict[str, Any]] = {}  # the core tier asks again

    def compare(self, benchmark: str, cell_a: str, cell_b: str, direction: str, target: float | None,
                family_size: int) -> dict[str, Any]:
        """:func:`.inference.compare`'s answer plus the bootstrap interval ``low``/``high`` and
        whether the two cells' outcomes are ``identical`` on every item."""
        resamples = resamples_for(family_size, self.n_resamples)
        if (cell_a, cell_b, resamples) not in self._known:
            self._known[(cell_a, cell_b, resamples)] = self._compare(benchmark, cell_a, cell_b, direction, target,
                                                                     resamples)
        return self._known[(cell_a, cell_b, resamples)]

    def _compare(self, benchmark: str, cell_a: str, cell_b: str, direction: str, target: float | None,
                 resamples: int) -> dict[str, Any]:
        bench = _registry.get_benchmark(benchmark)
        a, b = self.results.records(cell_a), self.results.records(cell_b)
        if [r.item_id for r in a] != [r.item_id for r in b]:
            raise ConfigError(f"cells {cell_a} and {cell_b} were scored on different items",
                              "compare cells of one grid run (same benchmark, same limit)")
        (xa, strata), (xb, _) = item_outcomes(bench, a), item_outcomes(bench, b)

        def statistic(first: np.ndarray, second: np.ndarray, rows: np.ndarray | None = strata) -> np.ndarray:
            return paired_difference(first, second, rows, direction, target)

        binary = bool(np.isin(np.concatenate([xa, xb]), (0.0, 1.0)).all())
        found = compare(xa, xb, statistic, seed=self.seed, n_resamples=resamples,
                        mean_of_binary=strata is None and binary and direction != "target")
        by_metrics = goodness(np.array([primary_score(a, benchmark, self.seed)]), direction, target) - \
            goodness(np.array([primary_score(b, benchmark, self.seed)]), direction, target)
        if not np.allclose(by_metrics, found["difference"], rtol=0, atol=1e-9, equal_nan=True):
            raise ConfigError(f"benchmark {benchmark}'s item_outcome and outcome_stratum do not give its primary metric "
                              f"back (cells {cell_a} vs {cell_b}: {float(by_metrics[0])} by its metrics, "
                              f"{found['difference']} from the outcomes)",
                              "make score_outcomes(item outcomes) equal the primary metric (see Benchmark.item_outcome)")
        rows = bootstrap_rows(len(a), strata, np.random.default_rng(self.seed), self.n_resamples)
        draws = statistic(xa[rows], xb[rows], None if strata is None else strata[rows])
        draws = draws[~np.isnan(draws)]
        alpha = (1 - LEVEL) / 2
        low, high = (float(np.quantile(draws, q)) for q in (alpha, 1 - alpha)) if draws.size else (math.nan, math.nan)
        return found | {"low": low, "high": high, "identical": found["discordant"] == 0}


def bootstrap_rows(n: int, strata: np.ndarray | None, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Item indices of each resample: items drawn with replacement, within each stratum where the
    metric averages strata (as the benchmark's own interval does), so no resample loses a stratum."""
    if strata is None:
        return rng.integers(0, n, size=(resamples, n))
    rows = np.empty((resamples, n), dtype=int)
    for level in np.unique(strata):
        members = np.flatnonzero(strata == level)
        rows[:, members] = members[rng.integers(0, len(members), size=(resamples, len(members)))]
    return rows


class _NothingToCompare(Exception):
    pass


def _name(config: tuple[Any, ...]) -> str:
    return " ".join(f"{f}={v}" for f, v in zip(FACTORS, config))


def distinct_configurations(rows: pd.DataFrame, compute_keys: dict[str, str],
                            config_hashes: dict[str, str]) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """``rows`` with each measurement once: configurations whose cells share their compute keys
    (model by model) are merged, and the merged ones listed. The configuration that stands for a
    measurement is the one whose cells *are* it (config hash = compute key: greedy, where
    decoding cannot act), else the first in plan order."""
    signature: dict[tuple[Any, ...], tuple[str, ...]] = {}
    canonical: dict[tuple[Any, ...], bool] = {}
    for config, group in rows.groupby(list(FACTORS), sort=False):
        signature[config] = tuple(sorted(compute_keys[c] for c in group["cell_id"]))
        canonical[config] = all(compute_keys[c] == config_hashes[c] for c in group["cell_id"])
    groups: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    for config, sig in signature.items():
        groups.setdefault(sig, []).append(config)
    keep, duplicates = set(), []
    for configs in groups.values():
        kept = next((c for c in configs if canonical[c]), configs[0])
        keep.add(kept)
        if len(configs) > 1:
            duplicates.append({"config": _name(kept), "same_measurement_as": [_name(c) for c in configs if c != kept]})
    mask = [tuple(r) in keep for r in rows[list(FACTORS)].itertuples(index=False)]
    return rows[mask], duplicates


def _item_table(results: GridResults, table: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    bench = _registry.get_benchmark(benchmark)
    rows = []
    for row in table.itertuples(index=False):
        for record in results.records(row.cell_id):
            rows.append({"model": row.model, **{f: getattr(row, f) for f in FACTORS}, "item_id": record.item_id,
                         "outcome": bench.item_outcome(record)})
    return pd.DataFrame(rows)


def _tier(results: GridResults, table: pd.DataFrame, noise: PairedNoise, benchmark: str, direction: str,
          target: float | None, multiplicity: Literal["holm", "bh"]) -> TierStats:
    scored = table.dropna(subset=["score"])
    unscored = [{"cell_id": row.cell_id, "model": row.model, "config": _name(tuple(getattr(row, f) for f in FACTORS)),
                 "reason": _undefined_reason(results, row.cell_id)}
                for row in table[table["score"].isna()].itertuples(index=False)]
    raw = complete_configs(scored[["model", *FACTORS, "score"]])
    distinct, duplicates = distinct_configurations(scored, {c["cell_id"]: c["compute_key"] for c in results.cells},
                                                   {c["cell_id"]: c["config_sha256"] for c in results.cells})
    wide = complete_configs(distinct[["model", *FACTORS, "score"]])
    if wide.empty or wide.shape[1] < 2:
        raise _NothingToCompare("no configuration has a score for two or more models (every model needs a "
                                "scored cell in the same configuration)")
    configs = set(wide.index)
    complete = distinct[[tuple(r) in configs for r in distinct[list(FACTORS)].itertuples(index=False)]]
    factors = [f for f in FACTORS if complete[f].nunique() > 1] or ["template"]
    cells = complete.set_index(["model", *FACTORS])["cell_id"]
    pairs = list(itertools.combinations(sorted(wide.columns), 2))
    family = len(wide.index) * len(pairs)
    gap_rows = []
    for config in wide.index:
        for a, b in pairs:
            found = noise.compare(benchmark, cells[(a, *config)], cells[(b, *config)], direction, target, family)
            gap_rows.append({"config": _name(config), "pair": f"{a} vs {b}", "gap": abs(found["difference"]),
                             "difference": found["difference"],
                             "half_width": (found["high"] - found["low"]) / 2 if not math.isnan(found["low"]) else math.nan,
                             "p_value": found["p_value"], "exact": found["exact"], "method": found["method"],
                             "discordant": found["discordant"], "smallest_p": found["smallest_p"],
                             "identical": found["identical"], "_pair": f"{a}|{b}"})
    gaps = pd.DataFrame(gap_rows)
    undefined = gaps["p_value"].isna()
    too_small = ~undefined & (gaps["smallest_p"] >= ALPHA)
    # Tarone: comparisons that could not reach the level whatever their data are not in the family.
    testable = ~undefined & ~too_small
    gaps["p_adjusted"] = math.nan
    gaps.loc[testable, "p_adjusted"] = adjust(list(gaps.loc[testable, "p_value"]), multiplicity)
    gaps["resolved"] = testable & (gaps["p_adjusted"] < ALPHA)
    gaps["status"] = np.select([undefined, gaps["identical"], too_small, gaps["resolved"]],
                               [UNDEFINED, IDENTICAL, TOO_SMALL, RESOLVED], UNRESOLVED)
    mask = gaps.pivot(index="config", columns="_pair", values="resolved").reindex([_name(c) for c in wide.index])
    mask.index = wide.index  # aligned by name above, so the configurations' own index can stand
    columns = ["model", *FACTORS, "score"]
    attribution, verdicts = attribution_table(_item_table(results, complete, benchmark))
    return TierStats(table=complete, flips=pairwise_flips(complete[columns], direction=direction, target=target,  # type: ignore[arg-type]
                                                          resolvable=mask.astype(bool)),
                     orderings=orderings(complete[columns], direction=direction, target=target),  # type: ignore[arg-type]
                     tau=rank_consistency(complete[columns], direction=direction, target=target),  # type: ignore[arg-type]
                     attribution=attribution, dominated_by=verdicts,
                     gaps=gaps[["config", "pair", "gap", "difference", "half_width", "p_value", "p_adjusted", "exact",
                                "method", "discordant", "smallest_p", "status", "resolved", "identical"]],
                     factors=factors, borda=borda(complete[columns], direction=direction, target=target),  # type: ignore[arg-type]
                     n_configs_raw=len(raw), duplicates=duplicates, unscored=unscored)


def _undefined_reason(results: GridResults, cell_id: str) -> str:
    """Why a cell's primary metric is undefined: nothing parsed, or no item in its condition."""
    records = results.records(cell_id)
    unparsed = sum(not r.parsed for r in records)
    if records and unparsed == len(records):
        return f"no answer could be read: {unparsed} of {len(records)} unparsed"
    return (f"no item the metric counts, or none of them could be read ({unparsed} of {len(records)} unparsed "
            "in the cell)")


def analyse(results: GridResults, *, n_resamples: int = 1000, seed: int | None = None, progress: bool = True,
            multiplicity: Literal["holm", "bh"] = "holm") -> dict[str, BenchmarkStats]:
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
                tiers[tier] = _tier(results, chosen, noise, benchmark, spec.direction, spec.target, multiplicity)
            except _NothingToCompare as exc:
                skipped[tier] = str(exc)
        out[benchmark] = BenchmarkStats(benchmark, spec.name, spec.direction, spec.target, tiers, skipped,
                                        item_outcome=bench.item_outcome_note)
    return out


def _records(frame: pd.DataFrame | None) -> list[dict[str, Any]] | None:
    if frame is None:
        return None
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v.item() if hasattr(v, "item") else v)
             for k, v in row.items()} for row in frame.to_dict(orient="records")]


def _finite(value: float) -> float | None:
    return None if isinstance(value, float) and math.isnan(value) else value


def to_json(stats: dict[str, BenchmarkStats], results: GridResults, *, n_resamples: int, seed: int,
            multiplicity: str = "holm") -> dict[str, Any]:
    """The ``stats.json`` document (format in the module docstring)."""
    benchmarks = {}
    for name, b in stats.items():
        tiers = {}
        for tier, t in b.tiers.items():
            tiers[tier] = {
                "n_configs": int(t.tau["n_configs"]), "n_configs_raw": t.n_configs_raw, "duplicates": t.duplicates,
                "unscored": t.unscored,
                "models": sorted(t.table["model"].unique()),
                "factors": t.factors, "flips": _records(t.flips), "orderings": _records(t.orderings),
                "possible_orderings": t.orderings.attrs.get("possible"),
                "reachable_orderings": t.orderings.attrs.get("reachable"),
                "distinct_orderings": t.orderings.attrs.get("distinct"),
                "tau": {k: _finite(v) for k, v in t.tau.items()},
                "borda": _records(t.borda), "attribution": _records(t.attribution), "dominated_by": t.dominated_by,
                "detection_limit": _finite(t.detection_limit), "noisy_comparisons": len(t.noisy),
                "gaps": _records(t.gaps), "resolved_share": _finite(t.resolved_share)}
        benchmarks[name] = {"metric": b.metric, "direction": b.direction, "target": b.target,
                            "item_outcome": b.item_outcome, "tiers": tiers, "skipped": b.skipped}
    return {"format": STATS_FORMAT, "plan_sha256": results.frozen["plan_sha256"],
            "manifest_sha256": _manifest_sha(results), "n_resamples": n_resamples, "seed": seed, "alpha": ALPHA,
            "multiplicity": multiplicity, "gates": gates_summary(results),
            "preregistration": results.preregistration(), "benchmarks": benchmarks}


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

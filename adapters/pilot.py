"""``safetyrepro pilot``: a small seeded pilot of a grid, measured like a run, and the design it implies.

The pilot grid is the user's grid with the same models and benchmarks, a seeded share of each
benchmark's distinct configurations (configurations that are one measurement -- the logprob
path's decodings of a direct template -- count once; at least two per benchmark), a small item
count, and the repeat gate on every pilot configuration (the same-window repeat); the pilot is
replayed too where :func:`replays` says so. It runs through the grid engine into ``<out>/run``: a pilot is a
run (logged, resumable, ``safetyrepro verify``-able). From it, per benchmark (:mod:`.design` for
the rules): each comparison's per-item spread, the pilot's gaps (de-biased), the repeat noise
floor, the detection limit as a function of items per cell, the items per cell needed for the
chosen share of comparisons to be resolvable, and each frozen gate's operating characteristic at
the grid's item count and at the proposed one. Nothing is frozen by the pilot: it proposes
(``grid.proposed.yaml``, :mod:`.pilotreport`).

``design.json`` (``safetyrepro-design/1``, stable): ``{"format", "pilot_plan_sha256",
"grid_plan_sha256", "share", "items", "seed", "target_share", "power", "alpha", "degrade",
"simulations", "configs": {benchmark: [config]}, "benchmarks": {benchmark: {"items", "subset_size",
"family", "comparisons", "undefined", "sigma_median", "gap_median", "noise_p95",
"detection_limit": {"pilot", "grid", "proposed", "subset"}, "resolvable": {"grid", "proposed",
"subset"}, "expected_resolved": {"grid", "proposed"}, "items_for_share", "reachable", "with_gap" (comparisons
whose gap exceeds the pilot's noise), "items_for_gaps" (what the largest of those needs),
"items_for_share_raw" (the target at the raw gaps: optimistic), "effective": {"grid", "proposed": {"pairs",
"of_pairs", "configs", "of_configs"}} (model pairs resolvable in some pilot configuration; pilot
configurations with every pair resolvable), "sizes"}},
"grid_limit", "proposed_limit", "short_of_target" (benchmarks the proposed size leaves short: one limit
serves all, capped by the smallest subset), "gates": {gate: {"as_written": oc, "proposed": oc, "cells", "note"}},
"comparisons": [row], "noise_floor": {...}}`` (``oc``: :func:`.design.gate_oc`'s document).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from . import _registry
from .analysis import distinct_configurations, item_outcomes
from .design import (ALPHA, Measured, comparisons_frame, detection_limit, gate_oc, items_for_share, jackknife_sigma,
                     paired_statistic, repeat_rule, replay_rule, resolvable_share)
from .errors import ConfigError
from .grid import CONFIG_KEYS, GridConfig, RepeatGate, build_grid, plan, repeated
from .gridresults import GridResults
from .instrument import config_name, config_of, item_score
from .records import ItemRecord
from .stats import FACTORS

__all__ = ["DESIGN_FORMAT", "design", "pilot_grid", "propose_limit", "replays", "run_pilot"]

DESIGN_FORMAT = "safetyrepro-design/1"
MIN_CONFIGS = 2
"""Configurations per benchmark a pilot runs at least (where the grid has them)."""


def _distinct(frozen: dict[str, Any]) -> pd.DataFrame:
    """The plan's distinct configurations per benchmark (one row per model and configuration)."""
    rows = pd.DataFrame([{"model": c["model"], "benchmark": c["benchmark"], **{f: c[f] for f in FACTORS},
                          "cell_id": c["cell_id"]} for c in frozen["cells"]])
    kept = []
    for _, group in rows.groupby("benchmark", sort=False):
        distinct, _ = distinct_configurations(group, {c["cell_id"]: c["compute_key"] for c in frozen["cells"]},
                                              {c["cell_id"]: c["config_sha256"] for c in frozen["cells"]})
        kept.append(distinct)
    return pd.concat(kept)


def pilot_grid(grid: GridConfig, *, share: float, items: int, seed: int,
               replay: bool = False) -> tuple[GridConfig, dict[str, list[str]]]:
    """The pilot's grid and the configurations it sampled per benchmark (names, plan order)."""
    if not 0 < share <= 1:
        raise ConfigError(f"--share {share} is not a share of configurations", "pass a number in (0, 1], e.g. 0.25")
    distinct = _distinct(plan(grid))
    rng = np.random.default_rng(seed)
    chosen: set[tuple[Any, ...]] = set()
    names: dict[str, list[str]] = {}
    for benchmark in grid.benchmarks:
        configs = list(dict.fromkeys(tuple(r) for r in distinct[distinct["benchmark"] == benchmark][
            ["benchmark", *FACTORS]].itertuples(index=False)))
        k = min(len(configs), max(MIN_CONFIGS, math.ceil(share * len(configs))))
        picked = [configs[i] for i in sorted(rng.choice(len(configs), k, replace=False))]
        chosen.update(picked)
        names[benchmark] = [config_name(c) for c in picked]
    keys = ["benchmark", *FACTORS]
    levels = {k: [v for v in getattr(grid, {"benchmark": "benchmarks", "template": "templates", "scoring": "scorings",
                                            "fewshot": "fewshots", "decoding": "decodings"}[k])
                  if any(c[keys.index(k)] == v for c in chosen)] for k in keys}
    inside = lambda e: all(v in levels.get(k, [m.name for m in grid.models]) for k, v in e.items())  # noqa: E731
    exclusions = [e for e in grid.exclusions if inside(e)]
    for combination in pd.MultiIndex.from_product([levels[k] for k in keys]):
        if tuple(combination) not in chosen:
            exclusions.append(dict(zip(keys, combination)))
    data = grid.model_dump(mode="json")
    data.update({"benchmarks": levels["benchmark"], "templates": levels["template"], "scorings": levels["scoring"],
                 "fewshots": levels["fewshot"], "decodings": levels["decoding"], "exclusions": exclusions,
                 "limit": items,
                 "gates": {"repeat": {"configs": [], "threshold": (grid.gates.repeat if grid.gates and grid.gates.repeat
                                                                   else RepeatGate()).threshold},
                           "replay": ({"share": 1.0, "threshold": grid.gates.replay.threshold}  # type: ignore[union-attr]
                                      if replay else None)}})
    return build_grid(data, source="the pilot grid"), names


def replays(grid: GridConfig, replay: bool | None) -> bool:
    """Whether the pilot replays its run: asked (``--replay``/``--no-replay``), else where the grid
    froze a replay gate and a model is an endpoint (local weights replay byte for byte on this
    engine, which the grid's own replay gate still checks; a server may not)."""
    frozen = grid.gates is not None and grid.gates.replay is not None
    if replay and not frozen:
        raise ConfigError("--replay simulates the grid's replay gate, and the grid froze none",
                          "drop --replay, or add `gates: {replay: {}}` to the grid")
    return frozen and (replay if replay is not None else any(m.endpoint is not None for m in grid.models))


def run_pilot(grid: GridConfig, run_folder: Path, *, share: float, items: int, seed: int,
              data_dir: str | os.PathLike[str] | None, overwrite: bool, notify: Callable[[str], None],
              threads: int | None = None, replay: bool = False) -> GridResults:
    """Run (or resume) the pilot into ``run_folder``, replay it if ``replay`` (:func:`replays`), and
    read it back verified."""
    from .gridrun import run_grid
    from .gridverify import open_verified
    from .replay import run_replay

    pilot, _ = pilot_grid(grid, share=share, items=items, seed=seed, replay=replay)
    run_grid(pilot, run_folder, data_dir=data_dir, overwrite=overwrite, notify=notify, threads=threads)
    results = open_verified(run_folder, data_dir=data_dir, gate_verdict=False)
    if replay:
        run_replay(results, notify=notify)
    return results


# ---- what the pilot measured ----------------------------------------------------------------------

def _arrays(bench: Any, records: list[ItemRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-item outcomes (as the statistics read them), scores and predictions (-1: unparsed)."""
    outcomes, _ = item_outcomes(bench, records)
    scores = np.array([item_score(r) for r in records], dtype=float)
    predictions = np.array([-1 if r.prediction is None else r.prediction for r in records])
    return outcomes, scores, predictions


def _comparisons(results: GridResults) -> list[dict[str, Any]]:
    rows = []
    cells = pd.DataFrame(results.cells)
    for (benchmark, *rest), group in cells.groupby(list(CONFIG_KEYS), sort=False):
        bench = _registry.get_benchmark(benchmark)
        spec = bench.metric_spec(bench.primary_metric)
        by_model = {c["model"]: c["cell_id"] for c in group.to_dict("records")}
        models = sorted(by_model)
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                ra, rb = results.records(by_model[a]), results.records(by_model[b])
                (xa, strata), (xb, _) = item_outcomes(bench, ra), item_outcomes(bench, rb)
                statistic = paired_statistic(spec.direction, spec.target, strata)
                same = (xa == xb) | (np.isnan(xa) & np.isnan(xb))
                rows.append({"benchmark": benchmark, "config": config_name((benchmark, *rest)), "pair": f"{a} vs {b}",
                             "n": len(xa), "difference": float(statistic(xa, xb)),
                             "sigma": jackknife_sigma(xa, xb, statistic, strata),
                             "discordant_share": float(np.mean(~same)) if len(xa) else math.nan})
    return rows


def _measured(results: GridResults, second: dict[str, list[ItemRecord]]) -> list[Measured]:
    out = []
    for cell in results.cells:
        if cell["cell_id"] not in second:
            continue
        bench = _registry.get_benchmark(cell["benchmark"])
        spec = bench.metric_spec(bench.primary_metric)
        first = results.records(cell["cell_id"])
        (o1, s1, p1), (o2, s2, p2) = _arrays(bench, first), _arrays(bench, second[cell["cell_id"]])
        out.append(Measured(cell["benchmark"], config_name(config_of(cell)), cell["model"], (s1, s2), (o1, o2),
                            (p1, p2), item_outcomes(bench, first)[1], spec.direction, spec.target))
    return out


def _family(grid: GridConfig, frozen: dict[str, Any]) -> dict[str, int]:
    """Comparisons per benchmark in the grid's own statistics (grid tier: distinct configurations
    x model pairs): the family the multiplicity control spreads alpha over -- an upper bound, since
    the statistics leave comparisons that cannot reach the level out of it (Tarone), so sizing on
    it is conservative."""
    distinct = _distinct(frozen)
    pairs = math.comb(len(grid.models), 2)
    return {b: max(1, pairs * len(g.drop_duplicates(list(FACTORS)))) for b, g in distinct.groupby("benchmark")}


def _power(gap: float, sigma: float, share: float, n: float, family: int) -> float:
    """The chance the paired z-test resolves ``gap`` at ``n`` items (0 where the exact test cannot)."""
    if not (gap > 0 and sigma > 0 and share > 0) or n * share < math.log2(2 * family / ALPHA):
        return 0.0
    z = NormalDist().inv_cdf(1 - ALPHA / (2 * family))
    return NormalDist().cdf(gap * math.sqrt(n) / sigma - z)


def design(results: GridResults, grid: GridConfig, *, share: float, items: int, seed: int, target_share: float = 0.8,
           power: float = 0.8, degrade: float = 0.2, simulations: int = 200) -> dict[str, Any]:
    """The design document (module docstring) from a verified pilot run of ``grid``."""
    from .gates import noise_floor, repeat_gate
    from .replay import replayed_records

    frozen = plan(grid)  # the grid the pilot designs for, planned once
    family = _family(grid, frozen)
    frame = comparisons_frame(_comparisons(results), family=family, power=power)
    subset = {cell["benchmark"]: len(results.requests(cell["cell_id"]).prepared.manifest.eval_ids)
              for cell in results.cells}
    _, repeats = repeat_gate(results)
    floor = noise_floor(results, repeats)
    per: dict[str, Any] = {}
    for benchmark in [b for b in grid.benchmarks if b in subset]:  # a benchmark the exclusions empty has no cell
        rows = frame[frame["benchmark"] == benchmark] if len(frame) else frame
        defined = rows[~rows["sigma"].isna()] if len(rows) else rows
        needed = list(defined["items_needed"]) if len(defined) else []
        target = items_for_share(needed, target_share)
        finite = [x for x in needed if not math.isinf(x)]
        optimistic = items_for_share(list(defined["items_needed_raw"]) if len(defined) else [], target_share)
        per[benchmark] = {"items": items, "subset_size": subset[benchmark], "family": family[benchmark],
                          "comparisons": len(defined), "undefined": len(rows) - len(defined),
                          # over comparisons whose outcomes differ somewhere, as the detection limit counts them
                          "sigma_median": _finite(defined["sigma"][defined["sigma"] > 0].median()) if len(defined) else None,
                          "gap_median": _finite(defined["gap"].median()) if len(defined) else None,
                          "noise_p95": (floor.get(benchmark) or {}).get("noise_p95"),
                          "items_for_share": None if math.isinf(target) else int(target),
                          "with_gap": len(finite), "items_for_gaps": int(max(finite)) if finite else None,
                          "items_for_share_raw": None if math.isinf(optimistic) else int(optimistic),
                          "reachable": "yes" if target <= subset[benchmark] else
                          ("beyond the subset" if not math.isinf(target) else "no gap to resolve")}
    grid_limit = grid.limit
    proposed, short = propose_limit(per, grid_limit)
    for benchmark, p in per.items():
        defined = frame[(frame["benchmark"] == benchmark) & ~frame["sigma"].isna()] if len(frame) else frame
        sigmas, needed = list(defined["sigma"]) if len(defined) else [], list(defined["items_needed"]) if len(defined) else []
        sizes = {"pilot": items, "grid": min(grid_limit or p["subset_size"], p["subset_size"]),
                 "proposed": min(proposed or p["subset_size"], p["subset_size"]), "subset": p["subset_size"]}
        p["sizes"] = sizes
        p["detection_limit"] = {k: _finite(detection_limit(sigmas, n)) for k, n in sizes.items()}
        p["resolvable"] = {k: _finite(resolvable_share(needed, sizes[k])) for k in ("grid", "proposed", "subset")}
        p["effective"] = {k: _effective(defined, sizes[k], math.comb(len(grid.models), 2)) for k in ("grid", "proposed")}
        p["expected_resolved"] = {k: round(sum(_power(r.gap, r.sigma, r.discordant_share, sizes[k], p["family"])
                                                for r in defined.itertuples()), 2) if len(defined) else 0.0
                                  for k in ("grid", "proposed")}
    return {"format": DESIGN_FORMAT, "pilot_plan_sha256": results.frozen["plan_sha256"],
            "grid_plan_sha256": frozen["plan_sha256"], "share": share, "items": items, "seed": seed,
            "target_share": target_share, "power": power, "alpha": ALPHA, "degrade": degrade, "simulations": simulations,
            "benchmarks": per, "grid_limit": grid_limit, "proposed_limit": proposed, "short_of_target": short,
            "gates": _gates(results, grid, frozen, repeats_second={c: results.repeat_records(c) for c in repeats["cell_id"]}
                            if len(repeats) else {}, replay_second=replayed_records(results) if results.prepared.grid.gates.replay else {},  # type: ignore[union-attr]
                            sizes={k: {b: p["sizes"][k] for b, p in per.items()} for k in ("grid", "proposed")},
                            degrade=degrade, simulations=simulations, seed=seed),
            "comparisons": _records(frame), "noise_floor": floor}


def propose_limit(per: dict[str, dict[str, Any]], grid_limit: int | None) -> tuple[int | None, list[str]]:
    """The proposed items per cell, and the benchmarks it leaves short of the target: the largest
    benchmark's items for the target share, capped by the smallest subset (one ``limit`` serves
    every benchmark, and a grid refuses a limit above a benchmark's subset); benchmarks where no
    item count reaches the target do not drive it. The grid's own limit where none does."""
    needs = {name: p["items_for_share"] for name, p in per.items() if p["items_for_share"] is not None}
    if not needs:
        return grid_limit, []
    cap = min(p["subset_size"] for p in per.values())
    proposed = min(max(needs.values()), cap)
    return proposed, sorted(name for name, need in needs.items() if need > proposed)


def _gates(results: GridResults, grid: GridConfig, frozen: dict[str, Any], *, repeats_second: dict[str, list[ItemRecord]],
           replay_second: dict[str, list[ItemRecord]], sizes: dict[str, dict[str, int]], degrade: float,
           simulations: int, seed: int) -> dict[str, Any]:
    """Each gate the grid froze at the grid's item count and the proposed one (where it froze no
    gates: the default repeat gate, for information)."""
    out: dict[str, Any] = {}
    for name, rule, second in (("repeat", repeat_rule, repeats_second), ("replay", replay_rule, replay_second)):
        gate = getattr(grid.gates, name) if grid.gates else None
        if gate is None and not (grid.gates is None and name == "repeat"):
            continue
        cells = _measured(results, second)
        note = "" if gate else "the grid froze no gates: the default repeat gate, for information"
        if name == "repeat" and gate is not None:
            wanted = {(cell["model"], config_name(config_of(cell))) for cell in frozen["cells"] if repeated(grid, cell)}
            chosen = [c for c in cells if (c.model, c.config) in wanted]
            if chosen:
                cells = chosen
            else:
                note = "no pilot configuration is one the gate repeats: every pilot cell stands for them"
        if not cells:
            out[name] = {"cells": 0, "frozen": gate is not None, "note": "nothing was measured twice" if name == "repeat"
                         else "not simulated: the pilot was not replayed (local weights replay byte for byte on this "
                              "engine; `pilot --replay` measures it)"}
            continue
        threshold = gate.threshold if gate is not None else RepeatGate().threshold
        out[name] = {"cells": len(cells), "frozen": gate is not None, "note": note,
                     **{label: gate_oc(cells, rule, threshold=threshold, n_items=sizes[label], simulations=simulations,
                                       degrade=degrade, seed=seed) for label in ("grid", "proposed")}}
    return out


def _effective(defined: pd.DataFrame, n: int, pairs: int) -> dict[str, Any]:
    """The effective denominator at ``n`` items (the gate audit's recommendation): model pairs
    resolvable in at least one pilot configuration, and pilot configurations whose every pair is."""
    if not len(defined):
        return {"pairs": 0, "of_pairs": pairs, "configs": 0, "of_configs": 0}
    resolvable = defined.assign(ok=defined["items_needed"] <= n)
    by_config = resolvable.groupby("config")["ok"].agg(["all", "size"])
    return {"pairs": int(resolvable.groupby("pair")["ok"].any().sum()), "of_pairs": pairs,
            "configs": int((by_config["all"] & (by_config["size"] == pairs)).sum()), "of_configs": len(by_config)}


def _finite(value: Any) -> float | None:
    return None if value is None or value != value or math.isinf(value) else float(value)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: (_finite(v) if isinstance(v, float) else v) for k, v in row.items()} for row in frame.to_dict("records")]

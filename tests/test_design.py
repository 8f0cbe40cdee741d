"""The pilot's design numbers (adapters/design.py) against answers computed by hand, on constructed
pilots whose variances are known. No model: the command on a real pilot is in test_pilot.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from safetyrepro.adapters.design import (Measured, debiased_gap, detection_limit, gate_oc, half_width, items_for_share,
                                         items_needed, jackknife_sigma, paired_statistic, repeat_rule, replay_rule,
                                         resolvable_share)

Z975 = 1.959963984540054  # the 97.5% normal quantile
Z80 = 0.8416212335729143  # the 80% normal quantile
MEAN = paired_statistic("higher", None, None)


def test_the_spread_of_a_plain_mean_is_the_sample_sd_of_the_differences() -> None:
    a = np.array([1, 1, 0, 1, 0, 0, 1, 1], dtype=float)
    b = np.array([0, 1, 0, 0, 0, 1, 1, 0], dtype=float)
    # d = 1 0 0 1 0 -1 0 1, mean 0.25; squared deviations 3 x 0.5625 + 4 x 0.0625 + 1.5625 = 3.5; / 7 = 0.5
    assert float(MEAN(a, b)) == pytest.approx(0.25)
    assert jackknife_sigma(a, b, MEAN) == pytest.approx(math.sqrt(0.5), abs=1e-12)
    # 1.96 x sqrt(0.5) / sqrt(8) = 0.48999
    assert half_width(math.sqrt(0.5), 8) == pytest.approx(Z975 * math.sqrt(0.5) / math.sqrt(8))
    # The pilot's own noise: d^2 = 0.0625 = sigma^2 / n, so the de-biased gap is 0 (nothing beyond noise).
    assert debiased_gap(0.25, math.sqrt(0.5), 8) == 0.0
    assert debiased_gap(0.5, math.sqrt(0.5), 8) == pytest.approx(math.sqrt(0.25 - 0.0625))


def test_identical_outcomes_have_no_spread_and_no_items_resolve_them() -> None:
    a = np.array([1, 0, 1, 1], dtype=float)
    assert jackknife_sigma(a, a.copy(), MEAN) == 0.0
    assert items_needed(0.0, 0.0, 0.0, family=1) == math.inf


def test_a_stratified_metric_uses_the_delete_one_values() -> None:
    # XSTest-like: the metric is the mean of the two strata's means. Delete-one by hand:
    strata = np.array(["safe", "safe", "safe", "unsafe", "unsafe"])
    a = np.array([1, 0, 1, 1, 1], dtype=float)
    b = np.array([0, 0, 1, 0, 1], dtype=float)
    statistic = paired_statistic("higher", None, strata)

    def theta(keep: list[int]) -> float:
        means = []
        for level in ("safe", "unsafe"):
            idx = [i for i in keep if strata[i] == level]
            means.append(np.mean(a[idx]) - np.mean(b[idx]))
        return float(np.mean(means))

    left_out = np.array([theta([j for j in range(5) if j != i]) for i in range(5)])
    expected = math.sqrt(5 * (4 / 5) * float(np.sum((left_out - left_out.mean()) ** 2)))
    assert float(statistic(a, b)) == pytest.approx(theta(list(range(5))))
    assert jackknife_sigma(a, b, statistic) == pytest.approx(expected, abs=1e-12)


def test_a_target_metric_is_compared_by_its_distance_to_the_target() -> None:
    statistic = paired_statistic("target", 50.0, None)
    a = np.array([100, 0, 100, 0], dtype=float)  # 50: on target
    b = np.array([100, 100, 100, 0], dtype=float)  # 75: 25 off
    assert float(statistic(a, b)) == pytest.approx(25.0)


def test_items_needed_is_the_paired_z_test_size_at_the_family_wise_level() -> None:
    # family 1: ((1.96 + 0.8416) x 0.5 / 0.2)^2 = 49.05 -> 50; exact floor log2(40) / 0.5 = 10.6
    assert items_needed(0.2, 0.5, 0.5, family=1, power=0.8) == math.ceil(((Z975 + Z80) * 0.5 / 0.2) ** 2)
    assert items_needed(0.2, 0.5, 0.5, family=1, power=0.8) == 50
    # family 12: z = the 1 - 0.05/24 quantile = 2.8653 -> ((2.8653 + 0.8416) x 2.5)^2 = 85.9 -> 86
    assert items_needed(0.2, 0.5, 0.5, family=12, power=0.8) == 86
    # a gap every item shows (sd 0): the exact test needs log2(2 x 12 / 0.05) = 8.9 -> 9 discordant items;
    # with a quarter of the items discordant, 36 items
    assert items_needed(0.25, 0.0, 0.25, family=12) == 36
    assert items_needed(0.0, 0.5, 0.5, family=1) == math.inf


def test_the_share_of_comparisons_and_the_items_that_reach_it() -> None:
    needed = [10.0, 20.0, math.inf, 30.0, 40.0]
    assert resolvable_share(needed, 30) == pytest.approx(0.6)
    assert items_for_share(needed, 0.8) == 40.0  # the 4th of 5 sorted
    assert items_for_share(needed, 0.6) == 30.0
    assert items_for_share(needed, 1.0) == math.inf
    assert detection_limit([0.5, 0.0, 1.0, math.nan], 25) == pytest.approx(Z975 * 0.75 / 5)  # median of 0.5, 1.0


def _cell(model: str, first: np.ndarray, second: np.ndarray, config: str = "c1") -> Measured:
    return Measured("toxigen", config, model, (first.astype(float), second.astype(float)),
                    (first.astype(float), second.astype(float)), (first.astype(int), second.astype(int)), None,
                    "higher", None)


def test_a_gate_on_identical_measurements_passes_always_and_catches_degradation() -> None:
    rng = np.random.default_rng(3)
    cells = [_cell(m, x, x.copy()) for m, x in (("a", rng.integers(0, 2, 40)), ("b", rng.integers(0, 2, 40)),
                                                  ("c", rng.integers(0, 2, 40)))]
    healthy = gate_oc(cells, repeat_rule, threshold=0.9, n_items={"toxigen": 40}, simulations=60, degrade=0.5, seed=1)
    assert healthy["pass_healthy"] == 1.0 and healthy["reachable_threshold"] == 1.0
    assert healthy["pass_degraded"] < 0.2  # half the items answered at random: the item Spearman falls far below 0.9
    replay = gate_oc(cells, replay_rule, threshold=0.99, n_items={"toxigen": 40}, simulations=60, degrade=0.5, seed=1)
    assert replay["pass_healthy"] == 1.0 and replay["pass_degraded"] == 0.0


def test_a_gate_the_measured_noise_cannot_pass_is_flagged_with_a_reachable_threshold() -> None:
    # Each repeat re-draws a quarter of the items: a healthy instrument with this noise has an item
    # Spearman near 0.6 -- a 0.9 threshold it can never meet.
    rng = np.random.default_rng(5)
    cells = []
    for model in ("a", "b"):
        first = rng.integers(0, 2, 60)
        second = first.copy()
        flip = rng.random(60) < 0.25
        second[flip] = rng.integers(0, 2, int(flip.sum()))
        cells.append(_cell(model, first, second))
    numbers = repeat_rule(cells, {"toxigen": np.arange(60)}, {f"toxigen|c1|{c.model}": np.arange(60) for c in cells})
    oc = gate_oc(cells, repeat_rule, threshold=0.9, n_items={"toxigen": 60}, simulations=100, seed=2)
    assert numbers[0] < 0.9
    assert oc["pass_healthy"] < 0.05
    assert oc["reachable_threshold"] < 0.9
    # at the reachable threshold it does pass a healthy instrument 19 times in 20 (by construction, up to ties)
    again = gate_oc(cells, repeat_rule, threshold=oc["reachable_threshold"], n_items={"toxigen": 60}, simulations=100, seed=2)
    assert again["pass_healthy"] >= 0.95


# ---- the pilot grid, the predictions and the proposal (constructed; no model) --------------------

def _grid(**changes):
    from safetyrepro.adapters.grid import build_grid

    data = {"models": [{"name": "a"}, {"name": "b", "dtype": "bfloat16"}], "benchmarks": ["toxigen", "bbq"],
            "templates": ["minimal", "persona", "detailed"], "scorings": ["logprob", "regex"], "fewshots": [0, 3],
            "decodings": ["greedy", "t0.7"], "limit": 30, "gates": {"repeat": {"configs": [{"template": "minimal"}]}}}
    return build_grid({**data, **changes})


def test_the_pilot_samples_distinct_configurations_with_its_seed() -> None:
    from safetyrepro.adapters.grid import plan
    from safetyrepro.adapters.pilot import pilot_grid

    grid = _grid()
    # distinct per benchmark: logprob 3 templates x 2 shots (decodings one measurement) + regex 3 x 2 x 2 = 18
    pilot, names = pilot_grid(grid, share=0.25, items=8, seed=11)
    again, same = pilot_grid(grid, share=0.25, items=8, seed=11)
    assert names == same and plan(pilot) == plan(again)
    assert {b: len(n) for b, n in names.items()} == {"toxigen": 5, "bbq": 5}  # ceil(0.25 x 18)
    frozen = plan(pilot)
    planned = {}
    for cell in frozen["cells"]:
        planned.setdefault(cell["benchmark"], set()).add(
            f"benchmark={cell['benchmark']} template={cell['template']} scoring={cell['scoring']} "
            f"fewshot={cell['fewshot']} decoding={cell['decoding']}")
    assert {b: sorted(v) for b, v in planned.items()} == {b: sorted(n) for b, n in names.items()}
    assert not any(c["scoring"] == "logprob" and c["decoding"] == "t0.7" for c in frozen["cells"])  # a duplicate
    assert pilot.limit == 8 and pilot.gates.repeat.configs == [] and pilot.gates.replay is None
    assert len(frozen["cells"]) == 2 * 10
    _, other = pilot_grid(grid, share=0.25, items=8, seed=12)
    assert other != names
    small, _ = pilot_grid(_grid(templates=["minimal"], scorings=["logprob"], fewshots=[0]), share=0.1, items=4, seed=1)
    assert len(plan(small)["cells"]) == 2 * 2  # one configuration per benchmark exists: the floor of 2 cannot apply


def test_the_replay_is_measured_only_where_it_can_differ_or_is_asked_for() -> None:
    from safetyrepro.adapters.errors import ConfigError
    from safetyrepro.adapters.pilot import replays

    assert replays(_grid(), None) is False  # a replay gate (frozen by default with `gates:`), local weights
    assert replays(_grid(), True) is True
    assert replays(_grid(), False) is False
    with pytest.raises(ConfigError, match="froze none"):
        replays(_grid(gates={"repeat": {}, "replay": None}), True)


def _document(benchmark: dict, gates: dict | None = None) -> dict:
    base = {"items": 10, "subset_size": 200, "family": 12, "comparisons": 6, "sigma_median": 0.3, "gap_median": 0.1,
            "noise_p95": 0.0, "detection_limit": {"pilot": 0.2, "grid": 0.1, "proposed": 0.1, "subset": 0.04},
            "resolvable": {"grid": 0.0, "proposed": 0.0, "subset": 0.5}, "expected_resolved": {"grid": 0.4, "proposed": 1.0},
            "with_gap": 0, "items_for_gaps": None, "items_for_share_raw": None, "items_for_share": None,
            "reachable": "no gap to resolve", "sizes": {"pilot": 10, "grid": 30, "proposed": 30, "subset": 200},
            "effective": {k: {"pairs": 0, "of_pairs": 3, "configs": 0, "of_configs": 2} for k in ("grid", "proposed")}}
    return {"pilot_plan_sha256": "0" * 64, "grid_plan_sha256": "1" * 64, "share": 0.25, "items": 10, "seed": 1,
            "target_share": 0.8, "power": 0.8, "alpha": 0.05, "degrade": 0.2, "simulations": 100, "grid_limit": 30,
            "proposed_limit": 30, "benchmarks": {"bbq": {**base, **benchmark}}, "gates": gates or {}, "comparisons": []}


def test_the_predictions_name_what_the_pilot_saw() -> None:
    from safetyrepro.adapters.pilotreport import verdict_lines

    [line] = verdict_lines(_document({}))
    assert line.startswith('bbq: at 30 items per cell, 0 of 6 comparisons resolvable (expected resolved 0.4) -- '
                           'the run would say "cannot tell"; the pilot saw no gap beyond its own noise')
    [line] = verdict_lines(_document({"with_gap": 2, "items_for_gaps": 420, "items_for_share_raw": 90}))
    assert "only 2 of 6 comparisons show a gap beyond the pilot's noise (they need up to 420 items per cell, beyond " \
           "the subset of 200), so no item count resolves 80% of them; taking the pilot's raw gaps at face value " \
           "(optimistic), 90 items per cell" in line
    [line] = verdict_lines(_document({"items_for_share": 140, "reachable": "yes", "resolvable": {"grid": 0.5, "proposed": 0.8, "subset": 1.0}}))
    assert "3 of 6 comparisons resolvable" in line and "cannot tell" not in line
    assert "140 items per cell would resolve 80% of them at the gaps seen" in line
    [line] = verdict_lines(_document({"items_for_share": 900, "reachable": "beyond the subset"}))
    assert "would need 900 items per cell, beyond the benchmark's subset of 200: even the whole subset resolves 0.5" in line


def test_the_proposal_is_the_users_grid_with_each_change_and_its_reason() -> None:
    import yaml

    from safetyrepro.adapters.grid import build_grid, plan
    from safetyrepro.adapters.pilotreport import proposal

    grid = _grid()
    oc = {"threshold": 0.9, "n_items": {"bbq": 140}, "simulations": 100, "degrade": 0.2, "pass_healthy": 0.3,
          "pass_degraded": 0.0, "reachable_threshold": 0.74, "statistic_median": 0.8}
    document = _document({"items_for_share": 140, "reachable": "yes"},
                         {"repeat": {"cells": 4, "frozen": True, "note": "", "grid": oc, "proposed": oc}})
    document["proposed_limit"] = 140
    text = proposal(grid, document)
    proposed = build_grid(yaml.safe_load(text))
    assert proposed.limit == 140 and proposed.gates.repeat.threshold == 0.74
    assert proposed.gates.repeat.configs == grid.gates.repeat.configs and proposed.gates.replay == grid.gates.replay
    assert "# limit 30 -> 140:" in text and "# repeat.threshold 0.9 -> 0.74: a healthy instrument" in text
    # Nothing to change: the same grid, the same plan.
    kept = {**document, "proposed_limit": 30,
            "gates": {"repeat": {"cells": 4, "frozen": True, "note": "", "grid": {**oc, "pass_healthy": 1.0},
                                 "proposed": {**oc, "pass_healthy": 1.0}}}}
    assert plan(build_grid(yaml.safe_load(proposal(grid, kept))))["plan_sha256"] == plan(grid)["plan_sha256"]


def test_one_limit_serves_every_benchmark_capped_by_the_smallest_subset() -> None:
    from safetyrepro.adapters.pilot import propose_limit

    per = {"bbq": {"items_for_share": 150, "subset_size": 200}, "xstest": {"items_for_share": 300, "subset_size": 432},
           "toxigen": {"items_for_share": None, "subset_size": 200}}
    assert propose_limit(per, 30) == (200, ["xstest"])  # a limit above bbq's 200 items would be refused
    assert propose_limit({"bbq": {"items_for_share": 90, "subset_size": 200}}, 30) == (90, [])
    assert propose_limit({"bbq": {"items_for_share": None, "subset_size": 200}}, 30) == (30, [])
    assert propose_limit({"bbq": {"items_for_share": None, "subset_size": 200}}, None) == (None, [])


def test_a_gate_with_no_positive_reachable_threshold_is_kept_and_flagged() -> None:
    import yaml

    from safetyrepro.adapters.grid import build_grid
    from safetyrepro.adapters.pilotreport import design_tables, proposal

    oc = {"threshold": 0.9, "n_items": {"bbq": 30}, "simulations": 100, "degrade": 0.2, "pass_healthy": 0.0,
          "pass_degraded": 0.0, "reachable_threshold": -0.21, "statistic_median": 0.1}
    document = _document({}, {"repeat": {"cells": 4, "frozen": True, "note": "", "grid": oc, "proposed": oc}})
    text = proposal(_grid(), document)
    assert build_grid(yaml.safe_load(text)).gates.repeat.threshold == 0.9
    assert "# repeat kept, FLAGGED:" in text and "no positive threshold is reachable" in text
    assert set(design_tables(document)["gates"]["flag"]) == {"CANNOT PASS when healthy"}


def test_a_stratum_of_one_item_gives_no_spread() -> None:
    strata = np.array(["safe", "safe", "safe", "unsafe"])
    statistic = paired_statistic("higher", None, strata)
    a, b = np.array([1, 0, 1, 1], dtype=float), np.array([0, 0, 1, 0], dtype=float)
    assert math.isnan(jackknife_sigma(a, b, statistic, strata))
    assert not math.isnan(jackknife_sigma(a, b, MEAN))  # the same items, unstratified


def test_the_pilot_folder_accepts_what_the_pilot_and_its_run_leave_and_nothing_else(tmp_path) -> None:
    from safetyrepro.adapters.errors import ConfigError
    from safetyrepro.adapters.pilotreport import check_pilot_folder, mark_pilot_folder

    out = tmp_path / "p"
    mark_pilot_folder(out)
    (out / "report.md").write_text("old report")
    (out / ".run.overwrite-0123456789abcdef").mkdir()  # a killed `--overwrite` of the pilot run
    (out / ".run.publish").write_text("{}")  # an interrupted publish's journal
    check_pilot_folder(out)
    for name in ("notes.txt", ".other.overwrite-0123456789abcdef"):
        (out / name).mkdir() if name.startswith(".") else (out / name).write_text("mine")
        with pytest.raises(ConfigError, match="a pilot did not write"):
            check_pilot_folder(out)
        (out / name).rmdir() if name.startswith(".") else (out / name).unlink()
    (out / "pilot.json").write_text('{"format": "something else"}')
    with pytest.raises(ConfigError, match="pilot.json"):
        check_pilot_folder(out)

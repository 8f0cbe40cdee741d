"""Rank-instability statistics on constructed grids whose answers are known by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from safetyrepro.adapters import ConfigError
from safetyrepro.adapters.stats import (
    borda,
    orderings,
    paired_difference_ci,
    pairwise_flips,
    rank_consistency,
    variance_shares,
)


def table(scores: dict[str, list[float]], templates: list[str] | None = None) -> pd.DataFrame:
    """Models' scores over configurations 0..n-1 (one factor, ``template``)."""
    n = len(next(iter(scores.values())))
    templates = templates or [f"t{i}" for i in range(n)]
    return pd.DataFrame([{"benchmark": "b", "model": m, "template": templates[i], "score": s[i]}
                         for m, s in scores.items() for i in range(n)])


def test_flips_counted_by_hand() -> None:
    # A - B over four configurations: +1, +1, -1, 0 -> N+ = 2, N- = 1, one tie, rho = 1/4.
    flips = pairwise_flips(table({"A": [3, 3, 1, 2], "B": [2, 2, 2, 2]}))
    row = flips.iloc[0]
    assert (row.n_plus, row.n_minus, row.ties, row.n_configs) == (2, 1, 1, 4)
    assert row.rho_flip == pytest.approx(0.25) and not row.identifiable
    # Never reversed -> identifiable (ties allowed), rho 0.
    row = pairwise_flips(table({"A": [3, 3, 2, 2], "B": [2, 2, 2, 1]})).iloc[0]
    assert (row.n_plus, row.n_minus, row.rho_flip, row.identifiable) == (3, 0, 0.0, True)
    assert row.verdict == "A better on every configuration it is not tied"


def test_direction_lower_and_target() -> None:
    # Lower is better: A's smaller scores win.
    row = pairwise_flips(table({"A": [1, 1], "B": [2, 2]}), direction="lower").iloc[0]
    assert (row.n_plus, row.n_minus) == (2, 0)
    # Target 50 (CrowS-Pairs): 48 beats 60, 55 loses to 51.
    row = pairwise_flips(table({"A": [48, 55], "B": [60, 51]}), direction="target", target=50).iloc[0]
    assert (row.n_plus, row.n_minus, row.rho_flip) == (1, 1, 0.5)


def test_resolvable_pairs_drop_differences_below_the_noise() -> None:
    t = table({"A": [3, 3, 1, 2], "B": [2, 2, 2, 2]})
    index = pd.Index(["t0", "t1", "t2", "t3"], name="template")
    mask = pd.DataFrame({"A|B": [True, True, False, False]}, index=index)
    row = pairwise_flips(t, resolvable=mask).iloc[0]
    assert (row.resolvable, row.n_plus_resolvable, row.n_minus_resolvable, row.rho_flip_resolvable) == (2, 2, 0, 0.0)
    assert row.rho_flip_noise_aware == 0.0 and row.identifiable_noise_aware and not row.identifiable
    # Either orientation of the pair's column is accepted.
    assert pairwise_flips(t, resolvable=mask.rename(columns={"A|B": "B|A"})).iloc[0].n_plus_resolvable == 2
    with pytest.raises(ConfigError, match="no column for A and B"):
        pairwise_flips(t, resolvable=mask.rename(columns={"A|B": "X|Y"}))


def test_float_ties_are_ties() -> None:
    # Distance to target 0.2: 0.3 and 0.1 are equally far (their difference is float noise).
    row = pairwise_flips(table({"A": [0.3, 0.3], "B": [0.1, 0.1]}), direction="target", target=0.2).iloc[0]
    assert (row.n_plus, row.n_minus, row.ties, row.identifiable) == (0, 0, 2, False)
    assert row.verdict == "no difference anywhere"


def test_only_configurations_every_model_has_count() -> None:
    t = table({"A": [3, 1], "B": [2, 2]})
    t = pd.concat([t, pd.DataFrame([{"benchmark": "b", "model": "A", "template": "t9", "score": 0.0}])])
    assert pairwise_flips(t).iloc[0].n_configs == 2
    with pytest.raises(ConfigError, match="two rows for one model"):
        pairwise_flips(pd.concat([t, t]))


def test_reachable_orderings() -> None:
    # Three models; configurations give A>B>C twice, B>A>C once, and a tie once.
    t = table({"A": [3, 3, 2, 2], "B": [2, 2, 3, 2], "C": [1, 1, 1, 1]})
    found = orderings(t)
    assert dict(zip(found["ordering"], found["configs"])) == {"A > B > C": 2, "B > A > C": 1, "A=B > C": 1}
    assert found.attrs == {"possible": 6, "reachable": 2}


def test_kendall_tau_references() -> None:
    same = table({"A": [3, 3, 3], "B": [2, 2, 2], "C": [1, 1, 1]})
    assert rank_consistency(same)["tau_all_pairs"] == pytest.approx(1.0)
    assert rank_consistency(same)["tau_vs_modal"] == pytest.approx(1.0)
    # Two configurations with reversed rankings: every pair disagrees completely.
    reversed_ = table({"A": [3, 1], "B": [2, 2], "C": [1, 3]})
    assert rank_consistency(reversed_)["tau_all_pairs"] == pytest.approx(-1.0)
    # A configuration where all models tie has no ranking: left out, and counted.
    with_tie = table({"A": [3, 3, 1], "B": [2, 2, 1], "C": [1, 1, 1]})
    taus = rank_consistency(with_tie)
    assert taus["tau_all_pairs"] == pytest.approx(1.0) and taus["n_configs_all_tied"] == 1
    # A>B>C, A>B>C, C>B>A: pairs (1, -1, -1) -> -1/3; against the modal A>B>C: (1, 1, -1) -> 1/3.
    mixed = table({"A": [3, 3, 1], "B": [2, 2, 2], "C": [1, 1, 3]})
    taus = rank_consistency(mixed)
    assert taus["tau_all_pairs"] == pytest.approx(-1 / 3) and taus["tau_vs_modal"] == pytest.approx(1 / 3)


def _grid(model_effect: dict[str, float], template_effect: dict[str, float],
          fewshot_effect: dict[int, float]) -> pd.DataFrame:
    rows = []
    for (m, em), (t, et), (k, ek) in itertools.product(model_effect.items(), template_effect.items(),
                                                        fewshot_effect.items()):
        rows.append({"benchmark": "b", "model": m, "template": t, "fewshot": k, "score": em + et + ek})
    return pd.DataFrame(rows)


def test_anova_shares_of_known_additive_effects() -> None:
    # Balanced and additive: each main effect's sum of squares is known in closed form and the
    # interactions and the residual are zero.
    models, templates, shots = {"A": 0.0, "B": 2.0}, {"x": 0.0, "y": 1.0, "z": 2.0}, {0: 0.0, 3: 0.0}
    shares = variance_shares(_grid(models, templates, shots)).set_index("term")["share"]
    n = 2 * 3 * 2
    ss_model = n * np.var([0.0, 2.0])           # 12 * 1
    ss_template = n * np.var([0.0, 1.0, 2.0])   # 12 * 2/3
    total = ss_model + ss_template
    assert shares["model"] == pytest.approx(ss_model / total)
    assert shares["template"] == pytest.approx(ss_template / total)
    assert shares["fewshot"] == pytest.approx(0.0, abs=1e-9)
    assert shares["model:template"] == pytest.approx(0.0, abs=1e-9)
    result = variance_shares(_grid(models, templates, shots))
    assert result.attrs["dominated_by"] == "model"
    heavy_template = variance_shares(_grid({"A": 0.0, "B": 0.1}, {"x": 0.0, "y": 3.0, "z": 6.0}, shots))
    assert heavy_template.attrs["dominated_by"] == "implementation"


def test_anova_is_per_benchmark_and_reports_what_it_cannot_attribute() -> None:
    grid = _grid({"A": 0.0, "B": 2.0}, {"x": 0.0, "y": 1.0, "z": 2.0}, {0: 0.0, 3: 0.0})
    with pytest.raises(ConfigError, match="per benchmark"):
        variance_shares(pd.concat([grid, grid.assign(benchmark="c")]))
    assert variance_shares(grid).attrs["unattributed"] == pytest.approx(0.0, abs=1e-9)
    unbalanced = grid.drop(index=[0])
    shares = variance_shares(unbalanced)
    assert shares.attrs["unattributed"] == pytest.approx(1 - shares["share"].sum())


def test_anova_sees_an_interaction() -> None:
    # B is better than A only under template y: a pure model x template interaction term.
    rows = [{"benchmark": "b", "model": m, "template": t, "fewshot": k,
             "score": (1.0 if (m, t) == ("B", "y") else 0.0) + (0.0 if (m, t) == ("B", "x") else 0.0)}
            for m in "AB" for t in "xy" for k in (0, 3)]
    shares = variance_shares(pd.DataFrame(rows)).set_index("term")["share"]
    # Cell means A: (0, 0), B: (0, 1): model, template and interaction each explain 1/3.
    assert shares["model"] == pytest.approx(1 / 3)
    assert shares["template"] == pytest.approx(1 / 3)
    assert shares["model:template"] == pytest.approx(1 / 3)


def test_paired_difference_ci() -> None:
    a = [1, 1, 1, 1, 0, 1, 1, 1, 1, 1] * 5
    b = [0, 0, 1, 0, 0, 0, 1, 0, 0, 0] * 5
    mean, low, high = paired_difference_ci(a, b, seed=0, n_resamples=2000)
    assert mean == pytest.approx(0.7) and 0 < low < 0.7 < high
    mean, low, high = paired_difference_ci([1, 0] * 10, [0, 1] * 10, seed=0)
    assert mean == 0 and low < 0 < high  # a tie within the noise
    assert paired_difference_ci(a, b, seed=0) == paired_difference_ci(a, b, seed=0)
    with pytest.raises(ConfigError, match="same, non-empty items"):
        paired_difference_ci([1, 0], [1], seed=0)


def test_borda_points_by_hand() -> None:
    # Config t0: A > B > C (A 2, B 1, C 0); t1: C > A = B (C 2, A 0.5, B 0.5); t2: B > A > C.
    out = borda(table({"A": [3, 1, 2], "B": [2, 1, 3], "C": [1, 2, 0]}))
    points = dict(zip(out["model"], out["points"]))
    assert points == {"A": 3.5, "B": 3.5, "C": 2.0}
    assert list(out["model"]) == ["A", "B", "C"] and list(out["rank"]) == [1, 1, 3]
    assert dict(zip(out["model"], out["share"]))["C"] == pytest.approx(2.0 / 6)  # (k-1) x configs = 6
    # Lower is better reverses it; a target ranks by distance to the target.
    low = borda(table({"A": [3, 1, 2], "B": [2, 1, 3], "C": [1, 2, 0]}), direction="lower")
    assert dict(zip(low["model"], low["points"])) == {"A": 2.5, "B": 2.5, "C": 4.0}
    near = borda(table({"A": [50, 52], "B": [60, 49]}), direction="target", target=50)
    assert dict(zip(near["model"], near["points"])) == {"A": 1.0, "B": 1.0}

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
    pairwise_flips,
    rank_consistency,
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
    assert row.rho_flip == pytest.approx(0.25) and not row.no_reversal
    assert row.verdict == "reversal observed (2 vs 1): strict order not identifiable"
    # Never reversed: Proposition 1's necessary condition holds (ties allowed), rho 0 -- and no more is claimed.
    row = pairwise_flips(table({"A": [3, 3, 2, 2], "B": [2, 2, 2, 1]})).iloc[0]
    assert (row.n_plus, row.n_minus, row.rho_flip, row.no_reversal) == (3, 0, 0.0, True)
    assert row.verdict == "no reversal observed: A ahead in 3, never behind (necessary for a strict order)"


def test_direction_lower_and_target() -> None:
    # Lower is better: A's smaller scores win.
    row = pairwise_flips(table({"A": [1, 1], "B": [2, 2]}), direction="lower").iloc[0]
    assert (row.n_plus, row.n_minus) == (2, 0)
    # Target 50 (CrowS-Pairs): 48 beats 60, 55 loses to 51.
    row = pairwise_flips(table({"A": [48, 55], "B": [60, 51]}), direction="target", target=50).iloc[0]
    assert (row.n_plus, row.n_minus, row.rho_flip) == (1, 1, 0.5)


def test_resolved_pairs_and_the_supported_order() -> None:
    t = table({"A": [3, 3, 1, 2], "B": [2, 2, 2, 2]})
    index = pd.Index(["t0", "t1", "t2", "t3"], name="template")
    mask = pd.DataFrame({"A|B": [True, True, False, False]}, index=index)
    row = pairwise_flips(t, resolvable=mask).iloc[0]
    assert (row.resolved, row.n_plus_resolved, row.n_minus_resolved, row.rho_flip_resolved) == (2, 2, 0, 0.0)
    assert row.rho_flip_noise_aware == 0.0
    # Resolved 2 of 4 in A's favour, but a raw reversal (t2): not a supported order.
    assert not row.supported and row.verdict_noise_aware.startswith("not supported: resolved for A in 2 of 4")
    # No reversal and resolved in half the configurations: supported.
    t = table({"A": [3, 3, 2, 2], "B": [2, 2, 2, 1]})
    row = pairwise_flips(t, resolvable=mask).iloc[0]
    assert row.supported and row.verdict_noise_aware == "supported order: A ahead, resolved in 2 of 4 configurations"
    # No reversal, but resolved in only one of four: necessary condition only.
    row = pairwise_flips(t, resolvable=mask.assign(**{"A|B": [True, False, False, False]})).iloc[0]
    assert row.no_reversal and not row.supported
    # Either orientation of the pair's column is accepted.
    assert pairwise_flips(t, resolvable=mask.rename(columns={"A|B": "B|A"})).iloc[0].n_plus_resolved == 2
    with pytest.raises(ConfigError, match="no column for A and B"):
        pairwise_flips(t, resolvable=mask.rename(columns={"A|B": "X|Y"}))


def test_float_ties_are_ties() -> None:
    # Distance to target 0.2: 0.3 and 0.1 are equally far (their difference is float noise).
    row = pairwise_flips(table({"A": [0.3, 0.3], "B": [0.1, 0.1]}), direction="target", target=0.2).iloc[0]
    assert (row.n_plus, row.n_minus, row.ties, row.no_reversal) == (0, 0, 2, False)
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
    assert found.attrs == {"possible": 6, "reachable": 2, "distinct": 3, "all_tied": 0}


def test_kendall_tau_references() -> None:
    same = table({"A": [3, 3, 3], "B": [2, 2, 2], "C": [1, 1, 1]})
    assert rank_consistency(same)["tau_all_pairs"] == pytest.approx(1.0)
    assert rank_consistency(same)["tau_vs_modal"] == pytest.approx(1.0)
    # Two configurations with reversed rankings: every pair disagrees completely.
    reversed_ = table({"A": [3, 1], "B": [2, 2], "C": [1, 3]})
    assert rank_consistency(reversed_)["tau_all_pairs"] == pytest.approx(-1.0)
    # A configuration where all models tie: pairs with it count 0 (no shared order), and are counted.
    with_tie = table({"A": [3, 3, 1], "B": [2, 2, 1], "C": [1, 1, 1]})
    taus = rank_consistency(with_tie)
    assert taus["tau_all_pairs"] == pytest.approx((1 + 0 + 0) / 3) and taus["n_configs_all_tied"] == 1
    assert (taus["n_pairs"], taus["n_pairs_one_all_tied"], taus["n_pairs_both_all_tied"]) == (3, 2, 0)
    # Two all-tied configurations agree completely: (1 [ranked pair] + 1 [tied pair] + 4 x 0) / 6.
    two_tied = table({"A": [3, 3, 1, 1], "B": [2, 2, 1, 1], "C": [1, 1, 1, 1]})
    assert rank_consistency(two_tied)["tau_all_pairs"] == pytest.approx(2 / 6)
    # A>B>C, A>B>C, C>B>A: pairs (1, -1, -1) -> -1/3; against the modal A>B>C: (1, 1, -1) -> 1/3.
    mixed = table({"A": [3, 3, 1], "B": [2, 2, 2], "C": [1, 1, 3]})
    taus = rank_consistency(mixed)
    assert taus["tau_all_pairs"] == pytest.approx(-1 / 3) and taus["tau_vs_modal"] == pytest.approx(1 / 3)
    assert taus["modal"] == ["A > B > C"]
    # The real mode can be all-tied; and two equally frequent modes are both reported, tau vs modal undefined.
    assert rank_consistency(table({"A": [1, 1, 3], "B": [1, 1, 2]}))["modal"] == ["A=B"]
    taus = rank_consistency(table({"A": [3, 1], "B": [2, 2], "C": [1, 3]}))
    assert taus["modal"] == ["A > B > C", "C > B > A"] and np.isnan(taus["tau_vs_modal"])


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


# ---- paired tests, multiplicity, distinct configurations, attribution with replication ---------------------

def _mean_difference(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return first.mean(-1) - second.mean(-1)


def test_paired_tests_are_exact_on_small_cells() -> None:
    from scipy.stats import binomtest

    from safetyrepro.adapters.inference import adjust, compare

    # 4 items, A right on all and B wrong on all: a 4-0 split, exact p = 2/16 (a bootstrap
    # interval would have zero width here), and no split of 4 items can reach 0.05.
    found = compare(np.ones(4), np.zeros(4), _mean_difference, seed=0, n_resamples=100, mean_of_binary=True)
    assert (found["difference"], found["p_value"], found["exact"], found["smallest_p"]) == (1.0, 0.125, True, 0.125)
    assert found["method"] == "exact sign test (McNemar)"
    # 0/1 outcomes: the exact McNemar test on the discordant items only, whatever the concordant ones.
    a = np.array([1, 1, 1, 1, 1, 1, 0, 1, 0, 0.0] * 3)
    b = np.array([0, 0, 0, 0, 0, 1, 1, 1, 0, 0.0] * 3)
    found = compare(a, b, _mean_difference, seed=0, n_resamples=100, mean_of_binary=True)
    assert found["exact"] and found["discordant"] == 18 and found["p_value"] == pytest.approx(binomtest(15, 18).pvalue)
    # The randomization test on the same data enumerates 2^d patterns only up to 12 discordant
    # items; on 6 of them it gives the sign test's exact p (the statistic is the same).
    six_a, six_b = np.array([1, 1, 1, 1, 1, 0, 0, 0.0]), np.array([0, 0, 0, 0, 0, 1, 0, 0.0])
    general = compare(six_a, six_b, _mean_difference, seed=0, n_resamples=100, mean_of_binary=False)
    assert general["exact"] and general["p_value"] == pytest.approx(binomtest(5, 6).pvalue)
    assert general["smallest_p"] == pytest.approx(2 / 64)
    # Beyond 12 discordant items: Monte Carlo, (1 + hits) / (1 + R), never 0.
    found = compare(np.ones(40), np.zeros(40), _mean_difference, seed=0, n_resamples=500, mean_of_binary=False)
    assert not found["exact"] and found["p_value"] == pytest.approx(1 / 501)
    # Monte Carlo where no arrangement moves the difference (rates mirrored around a target of 50):
    # nothing can be resolved, and the smallest p says so.
    mirrored = compare(np.array([100.0, 0.0] * 10), np.array([0.0, 100.0] * 10),
                       lambda x, y: -np.abs(x.mean(-1) - 50) + np.abs(y.mean(-1) - 50), seed=0, n_resamples=200,
                       mean_of_binary=False)
    assert not mirrored["exact"] and mirrored["smallest_p"] == 1.0 and mirrored["p_value"] == 1.0
    # Identical outcomes: p = 1, nothing to resolve; an undefined metric: an undefined p.
    assert compare(np.ones(3), np.ones(3), _mean_difference, seed=0, n_resamples=10, mean_of_binary=True)["p_value"] == 1
    nan = np.full(3, np.nan)
    assert np.isnan(compare(nan, nan, _mean_difference, seed=0, n_resamples=10, mean_of_binary=False)["p_value"])
    # Holm by hand: sorted 0.01, 0.02, 0.04 x (3, 2, 1) -> 0.03, 0.04, 0.04; BH: 0.03, 0.03, 0.04.
    assert adjust([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert adjust([0.04, 0.01, 0.02], "bh") == pytest.approx([0.04, 0.03, 0.03])
    assert np.isnan(adjust([float("nan"), 0.01])[0])
    with pytest.raises(ConfigError, match="unknown multiplicity"):
        adjust([0.1], "bonferroni")  # type: ignore[arg-type]


def test_monte_carlo_resamples_grow_with_the_family() -> None:
    """With R = 1000 the smallest Monte Carlo p is 1/1001, and Holm over 96 comparisons needs
    0.05/96 at its first step: nothing could be resolved. R grows with the family instead."""
    from safetyrepro.adapters.inference import ALPHA, compare, resamples_for

    assert resamples_for(2, 1000) == 1000 and resamples_for(4, 1000) == 1600 and resamples_for(96, 1000) == 38_400
    found = compare(np.ones(40), np.zeros(40), _mean_difference, seed=0, n_resamples=resamples_for(96, 1000),
                    mean_of_binary=False)
    assert found["p_value"] * 96 < ALPHA


def test_the_bootstrap_keeps_every_stratum() -> None:
    """XSTest's balanced rate averages the safe and unsafe prompts' rates: a resample without one
    of them would score the other alone, so items are drawn within each stratum."""
    from safetyrepro.adapters.analysis import bootstrap_rows

    strata = np.array(["safe"] * 4 + ["unsafe"])
    rows = bootstrap_rows(5, strata, np.random.default_rng(0), 500)
    assert (rows[:, 4] == 4).all() and set(np.unique(rows[:, :4])) == {0, 1, 2, 3}
    assert bootstrap_rows(5, None, np.random.default_rng(0), 3).shape == (3, 5)


def test_score_outcomes_give_every_benchmarks_primary_metric_back(data_dir) -> None:  # noqa: ANN001 - a fixture
    """The statistics recompute each resample from item outcomes: on real items with random
    predictions (unparsed ones included) they must equal each benchmark's own primary metric."""
    from safetyrepro.adapters import build_config, prepare_cell
    from safetyrepro.adapters.benchmarks.base import score_outcomes
    from safetyrepro.adapters.records import Outcome

    rng = np.random.default_rng(0)
    for name in ("truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"):
        cell = prepare_cell(build_config({"benchmark": name, "limit": 30}), data_dir=data_dir)
        bench = cell.benchmark
        for _ in range(3):
            outcomes = []
            for c in cell.items:
                options = len(c.item.options)
                prediction = None if rng.random() < 0.15 else int(rng.integers(0, options))
                outcomes.append(Outcome(item_id=c.item.id, prediction=prediction, prediction_label=None,
                                        extraction_rule="test", meta=c.item.meta,
                                        correct=None if c.item.gold is None or prediction is None
                                        else prediction == c.item.gold))
            values = np.array([np.nan if (v := bench.item_outcome(o)) is None else v for o in outcomes])
            labels = [bench.outcome_stratum(o) for o in outcomes]
            strata = None if all(x is None for x in labels) else np.array(labels)
            expected = bench.metrics(outcomes, seed=0, n_resamples=0)[bench.primary_metric].value
            assert float(score_outcomes(values[None], strata)[0]) == pytest.approx(expected, nan_ok=True), name


def test_configurations_that_are_one_measurement_count_once() -> None:
    from safetyrepro.adapters.analysis import distinct_configurations

    # Logprob under greedy and T0.7 computes the same thing (same compute keys); regex does not.
    rows, keys = [], {}
    for model in "AB":
        for scoring, decoding in (("logprob", "greedy"), ("logprob", "T0.7"), ("regex", "greedy"), ("regex", "T0.7")):
            cell = f"{model}-{scoring}-{decoding}"
            rows.append({"model": model, "template": "minimal", "scoring": scoring, "fewshot": 0, "decoding": decoding,
                         "cell_id": cell, "score": 0.5})
            keys[cell] = f"{model}-{scoring}-" + (decoding if scoring == "regex" else "greedy")
    hashes = {cell: f"{cell.split('-', 1)[0]}-{cell.split('-', 1)[1]}" for cell in keys}  # each cell's own hash
    kept, duplicates = distinct_configurations(pd.DataFrame(rows), keys, hashes)
    assert sorted(set(zip(kept["scoring"], kept["decoding"]))) == [("logprob", "greedy"), ("regex", "T0.7"),
                                                                    ("regex", "greedy")]
    assert duplicates == [{"config": "template=minimal scoring=logprob fewshot=0 decoding=greedy",
                           "same_measurement_as": ["template=minimal scoring=logprob fewshot=0 decoding=T0.7"]}]
    # The greedy cell *is* the measurement: it stands for it even when T0.7 comes first in the plan.
    reordered = pd.DataFrame(rows).iloc[[1, 0, 2, 3, 5, 4, 6, 7]]
    kept, duplicates = distinct_configurations(reordered, keys, hashes)
    assert ("logprob", "greedy") in set(zip(kept["scoring"], kept["decoding"]))
    assert duplicates[0]["same_measurement_as"] == ["template=minimal scoring=logprob fewshot=0 decoding=T0.7"]


def test_attribution_with_replication_recovers_a_known_decomposition() -> None:
    """Balanced: 2 models x 2 templates x 4 items, outcome = model + template + item effect +
    noise. Every sum of squares is known in closed form; the residual is the noise's."""
    from safetyrepro.adapters.attribution import attribute, attribution_table

    noise = {("A", "x"): [0.5, -0.5, 0.5, -0.5], ("A", "y"): [-0.5, 0.5, -0.5, 0.5],
             ("B", "x"): [0.5, 0.5, -0.5, -0.5], ("B", "y"): [-0.5, -0.5, 0.5, 0.5]}
    item = [0.0, 1.0, 2.0, 3.0]
    rows = [{"model": m, "template": t, "decoding": "greedy", "fewshot": 0, "scoring": "logprob", "item_id": f"i{i}",
             "outcome": {"A": 0.0, "B": 2.0}[m] + {"x": 0.0, "y": 1.0}[t] + item[i] + noise[(m, t)][i]}
            for m in "AB" for t in "xy" for i in range(4)]
    out = attribute(pd.DataFrame(rows), ["template", "decoding", "fewshot"]).set_index("term")
    # 16 observations: model SS = 16 x 1^2, template SS = 16 x 0.5^2, item SS = 4 x sum((i - 1.5)^2) = 20,
    # noise SS = 16 x 0.25 = 4, orthogonal to every effect by construction; total = 16 + 4 + 20 + 4.
    total, within = 16 + 4 + 20 + 4, "within cells (item x configuration, noise)"
    assert out.loc["model", "share"] == pytest.approx(16 / total)
    assert out.loc["template", "share"] == pytest.approx(4 / total)
    assert out.loc["item", "share"] == pytest.approx(20 / total)
    assert out.loc["model:template", "share"] == pytest.approx(0, abs=1e-9)
    assert out.loc[within, "share"] == pytest.approx(4 / total)
    assert out.loc[within, "df"] == 16 - 1 - 1 - 1 - 1 - 3  # n - intercept - model - template - interaction - items
    assert out.loc["not attributed", "share"] == pytest.approx(0, abs=1e-9)
    # Replication buys a test: F = (16 / 1) / (4 / 9) = 36 on (1, 9) degrees of freedom.
    assert out.loc["model", "F"] == pytest.approx(36.0) and out.loc["model", "p"] == pytest.approx(f_sf(36.0, 1, 9))
    assert out.loc["model", "share_between"] == pytest.approx(16 / 20) and out.attrs["balanced"]
    assert out.attrs["dominated_by"] == "model"
    # An item missing from one cell: item dummies instead of centring; still every share named.
    unbalanced = attribute(pd.DataFrame(rows).drop(index=[0]), ["template", "decoding", "fewshot"])
    assert not unbalanced.attrs["balanced"] and unbalanced["share"].sum() == pytest.approx(1.0)
    # The centring shortcut gives the dummies' answer on balanced data.
    table, verdicts = attribution_table(pd.DataFrame(rows))
    assert verdicts == {"four-way, scoring=logprob": "model"} and set(table["analysis"]) == {"four-way, scoring=logprob"}
    flat = pd.DataFrame(rows).assign(outcome=1.0)
    assert attribution_table(flat)[1] == {"four-way, scoring=logprob": "not fitted: every item outcome is the same: "
                                          "there is no variance to attribute"}
    # Cells that do not differ (only items do): dominated by neither.
    items_only = pd.DataFrame(rows).assign(outcome=[item[int(r["item_id"][1:])] for r in rows])
    assert attribute(items_only, ["template"]).attrs["dominated_by"] == "neither (the cells do not differ)"


def f_sf(value: float, df1: int, df2: int) -> float:
    from scipy.stats import f

    return float(f.sf(value, df1, df2))

"""Rank-instability statistics over a configuration grid: does a ranking survive its configuration?

Input is one tidy table (pandas), one row per (benchmark, model, configuration) with the score:
columns ``benchmark``, ``model``, the configuration factors (``template``, ``scoring``,
``fewshot``, ``decoding`` -- whichever the grid varies) and ``score``. For benchmark *b* the
configuration set C_b is the set of factor combinations every model was scored under.

* :func:`pairwise_flips`: for each model pair, N+ (configurations where A is better), N- (B better),
  ties, rho_flip = min(N+, N-) / |C_b|, and Proposition 1's test: a strict pairwise order is
  identifiable on C_b only if N+ = 0 or N- = 0. With a ``resolvable`` mask (the paired difference
  is larger than the noise, see :func:`paired_difference_ci`) a difference below the noise is a
  tie, and rho_flip is also reported over resolvable configurations only.
* :func:`orderings`: which of the k! orderings of the models occur, and in how many configurations.
* :func:`rank_consistency`: tau_R, the mean Kendall tau (scipy, tau-b) between the rankings of all
  configuration pairs, and each configuration against the modal ranking.
* :func:`borda`: the configurations' rankings aggregated by Borda count, beside the per-config ones.
* :func:`variance_shares`: Type-II ANOVA (statsmodels ``anova_lm(typ=2)``) of the score on model
  and the factors, with the model x factor interactions; each term's share of the total sum of
  squares, and whether the benchmark is model- or implementation-dominated.

"Better" follows the metric's declared direction (``MetricSpec``): higher, lower, or closer to a
target (a bias score's 0, CrowS-Pairs' 50).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from .errors import ConfigError

FACTORS = ("template", "scoring", "fewshot", "decoding")
TIE = 1e-9
"""Differences this small are ties (exact float equality would make 0.3 - 0.2 and 0.2 - 0.1 differ)."""


def goodness(scores: pd.Series, direction: Literal["higher", "lower", "target"], target: float | None = None) -> pd.Series:
    """Scores turned so that larger is better."""
    if direction == "higher":
        return scores.astype(float)
    if direction == "lower":
        return -scores.astype(float)
    if target is None:
        raise ConfigError("a target metric needs its target value", "pass target= from the MetricSpec")
    return -(scores.astype(float) - target).abs()


def _factors(table: pd.DataFrame) -> list[str]:
    return [f for f in FACTORS if f in table.columns]


def complete_configs(table: pd.DataFrame) -> pd.DataFrame:
    """One benchmark's table pivoted to configurations x models, keeping only configurations in
    which every model has a score (C_b)."""
    factors = _factors(table)
    if table.duplicated(["model", *factors]).any():
        raise ConfigError("the score table has two rows for one model and configuration",
                          "give one score per (benchmark, model, configuration)")
    wide = table.pivot_table(index=factors or None, columns="model", values="score", aggfunc="first")
    return wide.dropna(how="any")


def pairwise_flips(table: pd.DataFrame, *, direction: Literal["higher", "lower", "target"] = "higher",
                   target: float | None = None, resolvable: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per model pair (A, B) of one benchmark: N+, N-, ties, |C_b|, rho_flip, the
    identifiability verdict; with ``resolvable`` (configurations x pairs, bool, columns ``"A|B"``
    or ``"B|A"``) also the counts, rho_flip and the verdict with differences below the noise as
    ties (rho over |C_b|, and over the resolvable configurations only)."""
    wide = complete_configs(table)
    better = wide.apply(lambda column: goodness(column, direction, target))
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        diff = better[a] - better[b]
        diff = diff.where(diff.abs() > TIE, 0.0)
        n_plus, n_minus = int((diff > 0).sum()), int((diff < 0).sum())
        row = {"model_a": a, "model_b": b, "n_configs": len(diff), "n_plus": n_plus, "n_minus": n_minus,
               "ties": len(diff) - n_plus - n_minus,
               "rho_flip": min(n_plus, n_minus) / len(diff) if len(diff) else math.nan}
        row["identifiable"] = bool(len(diff)) and (n_plus == 0 or n_minus == 0) and n_plus + n_minus > 0
        row["verdict"] = (f"{a} better on every configuration it is not tied" if row["identifiable"] and n_plus else
                          f"{b} better on every configuration it is not tied" if row["identifiable"] else
                          "no difference anywhere" if n_plus + n_minus == 0 else
                          "not identifiable: the order flips with the configuration")
        if resolvable is not None:
            column = f"{a}|{b}" if f"{a}|{b}" in resolvable else f"{b}|{a}"
            if column not in resolvable:
                raise ConfigError(f"the resolvable mask has no column for {a} and {b}",
                                  f"add a column {a}|{b} (True where the paired difference exceeds the noise)")
            mask = resolvable[column].reindex(diff.index).fillna(False).astype(bool)
            rp, rm = int(((diff > 0) & mask).sum()), int(((diff < 0) & mask).sum())
            row.update({"resolvable": int(mask.sum()), "n_plus_resolvable": rp, "n_minus_resolvable": rm,
                        "rho_flip_noise_aware": min(rp, rm) / len(diff) if len(diff) else math.nan,
                        "rho_flip_resolvable": min(rp, rm) / int(mask.sum()) if mask.sum() else math.nan,
                        "identifiable_noise_aware": (rp == 0 or rm == 0) and rp + rm > 0})
            row["verdict_noise_aware"] = (
                f"{a} better wherever the difference exceeds the noise" if row["identifiable_noise_aware"] and rp else
                f"{b} better wherever the difference exceeds the noise" if row["identifiable_noise_aware"] else
                "no difference exceeds the noise" if rp + rm == 0 else
                "not identifiable: resolvable differences go both ways")
        rows.append(row)
    return pd.DataFrame(rows)


def orderings(table: pd.DataFrame, *, direction: Literal["higher", "lower", "target"] = "higher",
              target: float | None = None) -> pd.DataFrame:
    """The orderings of the models (best first) that occur, with how many configurations give each;
    an ordering with a tie writes the tied models as ``a=b``. ``reachable`` of k! is the number
    of distinct strict orderings."""
    wide = complete_configs(table)
    better = wide.apply(lambda column: goodness(column, direction, target))
    counts: Counter[str] = Counter()
    for _, row in better.iterrows():
        groups = []
        row = row.round(9)  # the tie tolerance
        for value, models in itertools.groupby(sorted(row.items(), key=lambda kv: (-kv[1], kv[0])), key=lambda kv: kv[1]):
            groups.append("=".join(m for m, _ in models))
        counts[" > ".join(groups)] += 1
    out = pd.DataFrame([{"ordering": o, "configs": n, "strict": "=" not in o} for o, n in counts.most_common()])
    out.attrs["possible"] = math.factorial(wide.shape[1])
    out.attrs["reachable"] = int(out["strict"].sum()) if len(out) else 0
    return out


def rank_consistency(table: pd.DataFrame, *, direction: Literal["higher", "lower", "target"] = "higher",
                     target: float | None = None) -> dict[str, float]:
    """tau_R over all configuration pairs, and the mean tau of each configuration against the modal
    ranking (the most frequent ordering's ranks). Kendall tau-b (ties allowed), scipy."""
    from scipy.stats import kendalltau

    wide = complete_configs(table)
    better = wide.apply(lambda column: goodness(column, direction, target))
    vectors = [row.round(9).to_numpy() for _, row in better.iterrows()]
    # A configuration where every model ties has no ranking: tau is undefined there.
    ranked = [v for v in vectors if len(set(v)) > 1]
    pair_taus = [kendalltau(x, y).statistic for x, y in itertools.combinations(ranked, 2)]
    ranks = [tuple(pd.Series(v).rank(method="min", ascending=False).astype(int)) for v in ranked]
    counts = Counter(ranks)
    # The modal ranking; equally frequent ones are broken by the ranking itself (deterministic).
    modal = np.array(max(counts, key=lambda r: (counts[r], tuple(-x for x in r))), dtype=float) if ranks else None
    modal_taus = [kendalltau(np.array(r, dtype=float), modal).statistic for r in ranks] if modal is not None else []
    return {"tau_all_pairs": float(np.nanmean(pair_taus)) if pair_taus else math.nan,
            "tau_vs_modal": float(np.nanmean(modal_taus)) if modal_taus else math.nan,
            "n_configs": len(vectors), "n_configs_all_tied": len(vectors) - len(ranked), "n_models": wide.shape[1]}


def borda(table: pd.DataFrame, *, direction: Literal["higher", "lower", "target"] = "higher",
          target: float | None = None) -> pd.DataFrame:
    """Borda aggregation of the configurations' rankings: in each configuration a model gets one
    point per model it beats and half a point per tie (so k models share k(k-1)/2 points); the
    points summed over configurations rank the models (best first). ``share`` is the points over
    the most a model could get, (k - 1) x configurations."""
    wide = complete_configs(table)
    better = wide.apply(lambda column: goodness(column, direction, target)).round(9)
    points = better.rank(axis=1, method="average") - 1  # models beaten + half the ties
    total = points.sum(axis=0)
    out = pd.DataFrame({"model": total.index, "points": total.to_numpy(),
                        "share": (total / max((wide.shape[1] - 1) * len(wide), 1)).to_numpy()})
    out = out.sort_values(["points", "model"], ascending=[False, True]).reset_index(drop=True)
    out["rank"] = out["points"].rank(method="min", ascending=False).astype(int)
    return out


def variance_shares(table: pd.DataFrame, *, interactions: bool = True,
                    direction: Literal["higher", "lower", "target"] = "higher",
                    target: float | None = None) -> pd.DataFrame:
    """Each term's share of the score's total sum of squares, for one benchmark: Type-II ANOVA on
    model and the factors that vary (with the model x factor interactions, which are what
    reorders models), residual last. Target metrics are analysed as distance to the target.
    ``attrs``: ``dominated_by`` (model, or implementation = factors + model x factor
    interactions), and ``unattributed`` (1 - the shares' sum: Type-II sums of squares add up to
    the total only in a balanced grid)."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    if "benchmark" in table and table["benchmark"].nunique() > 1:
        raise ConfigError("variance shares are per benchmark; the table holds several",
                          "pass one benchmark's rows (e.g. table[table.benchmark == 'bbq'])")
    table = table.assign(score=goodness(table["score"], direction, target) if direction == "target" else table["score"])
    factors = [f for f in _factors(table) if table[f].nunique() > 1]
    if table["model"].nunique() < 2 and not factors:
        raise ConfigError("nothing varies in the score table", "give at least two models or two levels of a factor")
    data = table.assign(**{c: table[c].astype(str) for c in ["model", *factors]})
    terms = [f"C({c})" for c in ["model", *factors] if data[c].nunique() > 1]
    if interactions and data["model"].nunique() > 1:
        terms += [f"C(model):C({f})" for f in factors]
    fit = smf.ols("score ~ " + " + ".join(terms), data=data).fit()
    anova = anova_lm(fit, typ=2)
    total = float(((data["score"] - data["score"].mean()) ** 2).sum())
    out = pd.DataFrame({"term": [t.replace("C(", "").replace(")", "") for t in anova.index],
                        "sum_sq": anova["sum_sq"].to_numpy(), "df": anova["df"].to_numpy()})
    out["share"] = out["sum_sq"] / total if total > 0 else math.nan
    model_share = float(out.loc[out["term"] == "model", "share"].sum())
    implementation = float(out.loc[out["term"].isin(factors) | out["term"].str.startswith("model:"), "share"].sum())
    out.attrs["dominated_by"] = "model" if model_share >= implementation else "implementation"
    out.attrs["total_sum_sq"] = total
    out.attrs["unattributed"] = 1.0 - float(out["share"].sum()) if total > 0 else math.nan
    return out


def paired_bootstrap(n_items: int, difference: Callable[[np.ndarray], float], *, seed: int, n_resamples: int = 1000,
                     level: float = 0.95) -> tuple[float, float, float]:
    """``difference(indices)`` -- a score difference of two models computed on the items at those
    indices -- on all items, and its percentile bootstrap interval with the items resampled
    together (the pairing is kept). Resamples where the difference is undefined are left out."""
    if n_items <= 0:
        raise ConfigError("paired scores need the same, non-empty items on both sides", "align the items first")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(n_resamples, n_items))
    values = np.array([difference(row) for row in draws], dtype=float)
    values = values[~np.isnan(values)]
    point = float(difference(np.arange(n_items)))
    if not values.size:
        return point, math.nan, math.nan
    alpha = (1 - level) / 2
    return point, float(np.quantile(values, alpha)), float(np.quantile(values, 1 - alpha))


def paired_difference_ci(a: Sequence[float], b: Sequence[float], *, seed: int, n_resamples: int = 1000,
                         level: float = 0.95) -> tuple[float, float, float]:
    """The mean per-item difference of two models on the same items, and its bootstrap interval
    (items resampled together, so the pairing is kept). A configuration's score difference is
    resolvable when this interval excludes 0; otherwise the two are tied within the noise."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ConfigError("paired scores need the same, non-empty items on both sides", "align the items first")
    diff = x - y
    return paired_bootstrap(diff.size, lambda idx: float(diff[idx].mean()), seed=seed, n_resamples=n_resamples,
                            level=level)

"""Rank-instability statistics over a configuration grid: does a ranking survive its configuration?

Input is one tidy table (pandas), one row per (benchmark, model, configuration) with the score:
columns ``benchmark``, ``model``, the configuration factors (``template``, ``scoring``,
``fewshot``, ``decoding`` -- whichever the grid varies) and ``score``. For benchmark *b* the
configuration set C_b is the set of factor combinations every model was scored under (complete
cases; :mod:`.analysis` first merges configurations that are the same measurement).

* :func:`pairwise_flips`: for each model pair, N+ (configurations where A is better), N- (B better),
  ties, rho_flip = min(N+, N-) / |C_b|, and Proposition 1 as the paper states it, a necessary
  condition: "no reversal observed" (N+ = 0 or N- = 0) is what a strict order needs; a reversal
  means none is identifiable. With a ``resolvable`` mask (the paired test resolves the
  difference, :mod:`.inference`) an unresolved difference is a tie, and the stricter *supported
  order* needs no reversal and resolved differences in one direction in half the configurations.
* :func:`orderings`: the orderings of the models that occur (strict, and with ties), with counts.
* :func:`rank_consistency`: tau_R, the mean Kendall tau-b (scipy) over all configuration pairs
  (the rule for all-tied configurations stated there), and against the modal ordering (its ties
  reported, never broken silently).
* :func:`borda`: the configurations' rankings aggregated by Borda count, beside the per-config ones.
Paired tests and intervals of one comparison live in :mod:`.inference` and :mod:`.analysis`;
variance attribution in :mod:`.attribution` (item level, with replication: a cell-level ANOVA has
no replication, so its residual would be the interactions it leaves out).

"Better" follows the metric's declared direction (``MetricSpec``): higher, lower, or closer to a
target (a bias score's 0, CrowS-Pairs' 50).
"""
from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any, Literal

import numpy as np
import pandas as pd

from .errors import ConfigError

FACTORS = ("template", "scoring", "fewshot", "decoding")
DECIMALS = 9
"""Scores are compared at 9 decimals, in every table alike (flips, orderings, tau, Borda): exact
float equality would make 0.3 - 0.2 and 0.2 - 0.1 differ, and one rule keeps a near-tie a tie in
all of them."""


def goodness(scores: Any, direction: Literal["higher", "lower", "target"], target: float | None = None) -> Any:
    """Scores (a Series or an array of any shape) turned so that larger is better."""
    if direction == "higher":
        return scores.astype(float)
    if direction == "lower":
        return -scores.astype(float)
    if target is None:
        raise ConfigError("a target metric needs its target value", "pass target= from the MetricSpec")
    return -np.abs(scores.astype(float) - target)


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
    """One row per model pair (A, B) of one benchmark: N+, N-, ties, |C_b|, rho_flip and
    Proposition 1 read as the paper states it -- a *necessary* condition: ``no_reversal`` (N+ = 0
    or N- = 0, with some difference) is what a strict order needs, not proof of one.

    With ``resolvable`` (configurations x pairs, bool, columns ``"A|B"`` or ``"B|A"``: True where
    the paired test resolves the difference) also the resolved counts, rho_flip with unresolved
    differences as ties (over |C_b|, and over the resolved configurations only), and the stricter
    ``supported`` order: no reversal observed at all, and the difference resolved in the one
    direction in at least half of the configurations (:data:`SUPPORT_SHARE`)."""
    wide = complete_configs(table)
    better = wide.apply(lambda column: goodness(column, direction, target))
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        diff = better[a].round(DECIMALS) - better[b].round(DECIMALS)
        diff = diff.where(diff.abs() > 0.5 * 10 ** -DECIMALS, 0.0)  # equal at 9 decimals: a tie
        n_plus, n_minus = int((diff > 0).sum()), int((diff < 0).sum())
        row = {"model_a": a, "model_b": b, "n_configs": len(diff), "n_plus": n_plus, "n_minus": n_minus,
               "ties": len(diff) - n_plus - n_minus,
               "rho_flip": min(n_plus, n_minus) / len(diff) if len(diff) else math.nan}
        row["no_reversal"] = bool(len(diff)) and (n_plus == 0 or n_minus == 0) and n_plus + n_minus > 0
        ahead = a if n_plus else b
        row["verdict"] = (f"no reversal observed: {ahead} ahead in {max(n_plus, n_minus)}, never behind "
                          "(necessary for a strict order)" if row["no_reversal"] else
                          "no difference anywhere" if n_plus + n_minus == 0 else
                          f"reversal observed ({n_plus} vs {n_minus}): strict order not identifiable")
        if resolvable is not None:
            column = f"{a}|{b}" if f"{a}|{b}" in resolvable else f"{b}|{a}"
            if column not in resolvable:
                raise ConfigError(f"the resolvable mask has no column for {a} and {b}",
                                  f"add a column {a}|{b} (True where the paired test resolves the difference)")
            mask = resolvable[column].reindex(diff.index).fillna(False).astype(bool)
            rp, rm = int(((diff > 0) & mask).sum()), int(((diff < 0) & mask).sum())
            row.update({"resolved": int(mask.sum()), "n_plus_resolved": rp, "n_minus_resolved": rm,
                        "rho_flip_noise_aware": min(rp, rm) / len(diff) if len(diff) else math.nan,
                        "rho_flip_resolved": min(rp, rm) / int(mask.sum()) if mask.sum() else math.nan})
            needed = max(1, math.ceil(SUPPORT_SHARE * len(diff)))
            row["supported"] = bool(row["no_reversal"] and max(rp, rm) >= needed and min(rp, rm) == 0)
            row["verdict_noise_aware"] = (
                f"supported order: {ahead} ahead, resolved in {max(rp, rm)} of {len(diff)} configurations"
                if row["supported"] else
                "resolved differences go both ways: strict order not identifiable" if rp and rm else
                "no difference resolved" if rp + rm == 0 else
                f"not supported: resolved for {a if rp else b} in {rp + rm} of {len(diff)} configurations "
                f"(at least {needed} needed, and no reversal)")
        rows.append(row)
    return pd.DataFrame(rows)


SUPPORT_SHARE = 0.5
"""A supported order needs its difference resolved (one direction) in at least this share of the
configurations, besides no reversal anywhere."""


def _ordering(row: pd.Series) -> str:
    """Models best first, ``a=b`` for a tie (within the tie tolerance)."""
    groups = []
    row = row.round(DECIMALS)
    for _, models in itertools.groupby(sorted(row.items(), key=lambda kv: (-kv[1], kv[0])), key=lambda kv: kv[1]):
        groups.append("=".join(m for m, _ in models))
    return " > ".join(groups)


def orderings(table: pd.DataFrame, *, direction: Literal["higher", "lower", "target"] = "higher",
              target: float | None = None) -> pd.DataFrame:
    """The orderings of the models (best first) that occur, with how many configurations give each;
    an ordering with a tie writes the tied models as ``a=b`` (a weak ordering). ``attrs``:
    ``possible`` (k! strict orderings), ``reachable`` (distinct strict orderings that occur),
    ``distinct`` (distinct orderings, ties included), ``all_tied`` (configurations where every
    model ties)."""
    wide = complete_configs(table)
    better = wide.apply(lambda column: goodness(column, direction, target))
    counts: Counter[str] = Counter(_ordering(row) for _, row in better.iterrows())
    out = pd.DataFrame([{"ordering": o, "configs": n, "strict": "=" not in o} for o, n in counts.most_common()])
    out.attrs["possible"] = math.factorial(wide.shape[1])
    out.attrs["reachable"] = int(out["strict"].sum()) if len(out) else 0
    out.attrs["distinct"] = len(out)
    out.attrs["all_tied"] = sum(n for o, n in counts.items() if " > " not in o)
    return out


def rank_consistency(table: pd.DataFrame, *, direction: Literal["higher", "lower", "target"] = "higher",
                     target: float | None = None) -> dict[str, Any]:
    """tau_R, the mean Kendall tau-b (scipy) over *all* configuration pairs, and each
    configuration's tau against the modal ranking.

    The rule for a configuration where every model ties (tau-b is undefined there): two all-tied
    configurations agree completely (tau 1), an all-tied one and a ranked one share no order
    (tau 0); the counts of such pairs are reported. The modal ranking is the most frequent
    ordering, ties and all-tied included; where several are equally frequent they are all
    reported (``modal``) and ``tau_vs_modal`` is left undefined rather than broken silently."""
    from scipy.stats import kendalltau

    wide = complete_configs(table)
    better = wide.apply(lambda column: goodness(column, direction, target))
    vectors = [row.round(DECIMALS).to_numpy() for _, row in better.iterrows()]
    names = [_ordering(row) for _, row in better.iterrows()]
    flat = [len(set(v)) == 1 for v in vectors]

    def tau(i: int, j: int) -> float:
        if flat[i] or flat[j]:
            return 1.0 if flat[i] and flat[j] else 0.0
        return float(kendalltau(vectors[i], vectors[j]).statistic)

    pairs = list(itertools.combinations(range(len(vectors)), 2))
    taus = [tau(i, j) for i, j in pairs]
    counts = Counter(names)
    top = max(counts.values()) if counts else 0
    modal = sorted(o for o, n in counts.items() if n == top)
    tau_vs_modal = math.nan
    if len(modal) == 1:
        m = names.index(modal[0])
        tau_vs_modal = float(np.mean([tau(i, m) for i in range(len(vectors))]))
    return {"tau_all_pairs": float(np.mean(taus)) if taus else math.nan, "tau_vs_modal": tau_vs_modal,
            "modal": modal, "modal_configs": top, "n_configs": len(vectors), "n_configs_all_tied": sum(flat),
            "n_pairs": len(pairs), "n_pairs_one_all_tied": sum(flat[i] != flat[j] for i, j in pairs),
            "n_pairs_both_all_tied": sum(flat[i] and flat[j] for i, j in pairs), "n_models": wide.shape[1]}


def borda(table: pd.DataFrame, *, direction: Literal["higher", "lower", "target"] = "higher",
          target: float | None = None) -> pd.DataFrame:
    """Borda aggregation of the configurations' rankings: in each configuration a model gets one
    point per model it beats and half a point per tie (so k models share k(k-1)/2 points); the
    points summed over configurations rank the models (best first). ``share`` is the points over
    the most a model could get, (k - 1) x configurations."""
    wide = complete_configs(table)
    better = wide.apply(lambda column: goodness(column, direction, target)).round(DECIMALS)
    points = better.rank(axis=1, method="average") - 1  # models beaten + half the ties
    total = points.sum(axis=0)
    out = pd.DataFrame({"model": total.index, "points": total.to_numpy(),
                        "share": (total / max((wide.shape[1] - 1) * len(wide), 1)).to_numpy()})
    out = out.sort_values(["points", "model"], ascending=[False, True]).reset_index(drop=True)
    out["rank"] = out["points"].rank(method="min", ascending=False).astype(int)
    return out

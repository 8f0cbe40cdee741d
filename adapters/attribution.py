"""Variance attribution with replication: how much of the score differences between cells is
model identity, how much implementation (template, decoding, few-shot, scoring), and is either
larger than what items do within a cell?

A cell-level ANOVA has one observation per model x configuration, so its "residual" is the
interactions it leaves out and nothing can be tested. Here the observations are the items: each
cell's items are replicates of its model x configuration, every item appears in every cell (the
grid's subset is the same for all), and the fitted model is

    outcome ~ model + factors + model:factor (each factor) + item

(OLS, Type-II sums of squares, statsmodels). ``item`` (a fixed effect) takes what items differ by
in difficulty. The residual is what remains within cells: how items respond differently to
configurations and models (item x configuration interplay) plus sampling noise where decoding
samples; under greedy decoding there is no sampling noise, so it is named for what it is. It is
the error term of each term's F test (``F``, ``p``) -- what replication buys. The response is the
benchmark's :meth:`~.benchmarks.base.Benchmark.item_outcome` (its note says what it is, e.g. 0/1
correctness, whose mean is accuracy). Complete cases only: a configuration enters when every
model has a cell there.

Two shares per term: ``share`` of the item-level total sum of squares (item and residual
included, so the shares plus the named remainder add to 1), and ``share_between`` of the
between-cell sum of squares (model, factors and model x factor only), the scale of the paper's
cell-level attribution. ``dominated_by`` compares model identity with implementation (factors +
model x factor) on the between-cell shares; "neither" where the cells do not differ.

The headline is the paper's four-way attribution (model, template, decoding, few-shot) within
each scoring path; the five-way one (scoring as a factor too) is reported beside it. With every
item in every cell the item effect is orthogonal to the cell terms and is absorbed by centring
each item's outcomes (Frisch-Waugh: the same sums of squares as with item dummies, at the cost of
the cell terms alone); where items are missing from cells (CrowS-Pairs leaves unparsed pairs
out) the item dummies are fitted.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .errors import ConfigError

__all__ = ["FOUR_WAY", "attribute", "attribution_table"]

FOUR_WAY = ("template", "decoding", "fewshot")
"""The paper's implementation factors (with model identity: four-way), within a scoring path."""
ITEM = "item"
RESIDUAL = "within cells (item x configuration, noise)"
UNATTRIBUTED = "not attributed"


def attribute(items: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """One attribution: ``items`` has columns ``model``, the ``factors``, ``item_id`` and
    ``outcome`` (one row per cell x item; None/NaN: the item does not count). Rows: each cell
    term's df, sum of squares, F, p and shares, then ``item``, the within-cell residual and what
    is not attributed. ``attrs``: ``dominated_by``, ``total_sum_sq``, ``n``, ``balanced``."""
    import statsmodels.formula.api as smf
    from scipy.stats import f as f_distribution
    from statsmodels.stats.anova import anova_lm

    data = items.dropna(subset=["outcome"]).reset_index(drop=True)
    varying = [f for f in factors if data[f].nunique() > 1]
    data = data.assign(**{c: data[c].astype(str) for c in ["model", "item_id", *varying]})
    if data["model"].nunique() < 2:
        raise ConfigError("variance attribution needs two or more models", "add a model to the grid")
    y = data["outcome"].astype(float)
    total = float(((y - y.mean()) ** 2).sum())
    if total <= 0:
        raise ConfigError("every item outcome is the same: there is no variance to attribute",
                          "use more items or models")
    cell_columns = ["model", *varying]
    n_items, n_cells = data["item_id"].nunique(), data.groupby(cell_columns).ngroups
    balanced = len(data) == n_items * n_cells and not data.duplicated([*cell_columns, "item_id"]).any()
    terms = ["C(model)", *[f"C({f})" for f in varying], *[f"C(model):C({f})" for f in varying]]
    if balanced:  # the item effect is orthogonal to every cell term: absorbed by centring each item
        item_means = y.groupby(data["item_id"]).transform("mean")
        item_ss = float(((item_means - y.mean()) ** 2).sum())
        fit = smf.ols("centred ~ " + " + ".join(terms), data=data.assign(centred=y - item_means + y.mean())).fit()
        anova = anova_lm(fit, typ=2)
        residual_df = float(anova.loc["Residual", "df"]) - (n_items - 1)
        anova = anova.drop(index="Residual")
        item_row = {"df": float(n_items - 1), "sum_sq": item_ss}
    else:
        fit = smf.ols("outcome ~ " + " + ".join(terms) + (" + C(item_id)" if n_items > 1 else ""), data=data).fit()
        anova = anova_lm(fit, typ=2)
        residual_df = float(anova.loc["Residual", "df"])
        item_row = ({"df": float(anova.loc["C(item_id)", "df"]), "sum_sq": float(anova.loc["C(item_id)", "sum_sq"])}
                    if n_items > 1 else {"df": 0.0, "sum_sq": 0.0})
        anova = anova.drop(index=[i for i in ("Residual", "C(item_id)") if i in anova.index])
    residual_ss = float(fit.ssr)
    rows = [{"term": t.replace("C(", "").replace(")", ""), "df": float(r["df"]), "sum_sq": float(r["sum_sq"])}
            for t, r in anova.iterrows()]
    mean_square = residual_ss / residual_df if residual_df > 0 else math.nan
    for row in rows:
        row["F"] = (row["sum_sq"] / row["df"]) / mean_square if mean_square and mean_square > 0 else math.nan
        row["p"] = float(f_distribution.sf(row["F"], row["df"], residual_df)) if not math.isnan(row["F"]) else math.nan
    between = sum(r["sum_sq"] for r in rows)
    for row in rows:
        row["share_between"] = row["sum_sq"] / between if between > 1e-12 * total else math.nan
    rows += [{"term": ITEM, **item_row}, {"term": RESIDUAL, "df": residual_df, "sum_sq": residual_ss}]
    out = pd.DataFrame(rows)
    out["share"] = out["sum_sq"] / total
    remainder = 1.0 - float(out["share"].sum())
    out = pd.concat([out, pd.DataFrame([{"term": UNATTRIBUTED, "df": math.nan, "sum_sq": remainder * total,
                                         "share": remainder}])], ignore_index=True)
    cell_terms = out["term"].isin([r["term"] for r in rows[:-2]])
    model_share = float(out.loc[cell_terms & (out["term"] == "model"), "share_between"].sum())
    implementation = float(out.loc[cell_terms & (out["term"] != "model"), "share_between"].sum())
    dominated = ("neither (the cells do not differ)" if between <= 1e-12 * total else
                 "model" if model_share >= implementation else "implementation")
    out.attrs.update(dominated_by=dominated, total_sum_sq=total, n=len(data), balanced=balanced,
                     model_share=model_share, implementation_share=implementation)
    return out[["term", "df", "sum_sq", "F", "p", "share_between", "share"]]


def attribution_table(items: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Every attribution of one benchmark and tier: the four-way one within each scoring path and
    the five-way one over all (``analysis`` column names which), and per analysis the
    ``dominated_by`` verdict -- or, where one cannot be fitted, why (the frame then lacks it)."""
    frames, verdicts = [], {}
    analyses = [(f"four-way, scoring={level}", items[items["scoring"] == level], list(FOUR_WAY))
                for level in sorted(items["scoring"].unique())]
    if items["scoring"].nunique() > 1:
        analyses.append(("five-way", items, [*FOUR_WAY, "scoring"]))
    for name, subset, factors in analyses:
        try:
            frame = attribute(subset, factors)
        except (ConfigError, ValueError, np.linalg.LinAlgError) as exc:
            verdicts[name] = "not fitted: " + getattr(exc, "what", str(exc))
            continue
        verdicts[name] = frame.attrs["dominated_by"]
        frames.append(frame.assign(analysis=name, n=frame.attrs["n"]))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["term", "df", "sum_sq", "F", "p", "share_between", "share", "analysis", "n"])
    return table, verdicts

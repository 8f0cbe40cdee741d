"""Variance attribution with replication: how much of the item-level outcome is model identity,
how much implementation (template, decoding, few-shot, scoring), and how much noise.

A cell-level ANOVA has one observation per model x configuration, so its "residual" is the
interactions it leaves out, not noise. Here the observations are the items: each cell's items
are replicates of its model x configuration, every item appears in every cell (the grid's subset
is the same for all), and the fitted model is

    outcome ~ model + factors + model:factor (each factor) + item

(OLS, Type-II sums of squares, statsmodels). ``item`` (a fixed effect) takes what items differ by
in difficulty, so the residual is what is left: item x configuration interplay and sampling
noise -- a noise term. The response is the benchmark's :meth:`~.benchmarks.base.Benchmark.item_outcome`
(its note says what it is; e.g. 0/1 correctness, whose mean is accuracy). Complete cases only: a
configuration enters when every model has a cell there.

The headline is the paper's four-way attribution (model, template, decoding, few-shot) within
each scoring path; the five-way one (scoring as a factor too) is reported beside it. Shares are
of the total sum of squares; with an unbalanced design Type-II sums need not add up, and the
remainder is reported as ``not attributed`` (it can be negative), never hidden.
"""

from __future__ import annotations

import math

import pandas as pd

from .errors import ConfigError

__all__ = ["FOUR_WAY", "attribute", "attribution_table"]

FOUR_WAY = ("template", "decoding", "fewshot")
"""The paper's implementation factors (with model identity: four-way), within a scoring path."""
RESIDUAL = "residual (noise)"
UNATTRIBUTED = "not attributed"


def attribute(items: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """One attribution: ``items`` has columns ``model``, the ``factors``, ``item_id`` and
    ``outcome`` (one row per cell x item). Rows: each term's df, sum of squares and share of the
    total, the residual, then what is not attributed. ``attrs``: ``dominated_by`` (model, or
    implementation = factors + model x factor), ``total_sum_sq``, ``n`` (observations)."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    data = items.dropna(subset=["outcome"])
    varying = [f for f in factors if data[f].nunique() > 1]
    data = data.assign(**{c: data[c].astype(str) for c in ["model", "item_id", *varying]})
    if data["model"].nunique() < 2:
        raise ConfigError("variance attribution needs two or more models", "add a model to the grid")
    total = float(((data["outcome"] - data["outcome"].mean()) ** 2).sum())
    if total <= 0:
        raise ConfigError("every item outcome is the same: there is no variance to attribute",
                          "use more items or models")
    terms = ["C(model)", *[f"C({f})" for f in varying], *[f"C(model):C({f})" for f in varying]]
    if data["item_id"].nunique() > 1:
        terms.append("C(item_id)")
    fit = smf.ols("outcome ~ " + " + ".join(terms), data=data).fit()
    anova = anova_lm(fit, typ=2)
    names = [t.replace("C(", "").replace(")", "").replace("item_id", "item") for t in anova.index]
    out = pd.DataFrame({"term": [RESIDUAL if n == "Residual" else n for n in names],
                        "df": anova["df"].to_numpy(), "sum_sq": anova["sum_sq"].to_numpy()})
    out["share"] = out["sum_sq"] / total
    remainder = 1.0 - float(out["share"].sum())
    out = pd.concat([out, pd.DataFrame([{"term": UNATTRIBUTED, "df": math.nan, "sum_sq": remainder * total,
                                         "share": remainder}])], ignore_index=True)
    model_share = float(out.loc[out["term"] == "model", "share"].sum())
    implementation = float(out.loc[out["term"].isin(varying) | out["term"].str.startswith("model:"), "share"].sum())
    out.attrs.update(dominated_by="model" if model_share >= implementation else "implementation",
                     total_sum_sq=total, n=len(data), model_share=model_share, implementation_share=implementation)
    return out


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
        except (ConfigError, ValueError) as exc:
            verdicts[name] = "not fitted: " + getattr(exc, "what", str(exc))
            continue
        verdicts[name] = frame.attrs["dominated_by"]
        frames.append(frame.assign(analysis=name, n=frame.attrs["n"]))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["term", "df", "sum_sq", "share", "analysis", "n"])
    return table, verdicts

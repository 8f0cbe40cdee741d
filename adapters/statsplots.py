"""The statistics report's figures: flip matrices, variance attribution, noise vs gaps, orderings,
score spread per factor level (matplotlib, Agg; fixed metadata, so the same statistics give the
same bytes)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from .analysis import BenchmarkStats

__all__ = ["plots", "save_figure"]


def plots(stats: dict[str, BenchmarkStats], folder: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made: dict[str, str] = {}
    names = list(stats)
    tiers = [t for t in ("grid", "core") if any(t in b.tiers for b in stats.values())]
    for tier in tiers:
        present = [n for n in names if tier in stats[n].tiers]
        # Flip matrices: rho_flip per model pair (upper: raw, lower: noise-aware).
        fig, axes = plt.subplots(1, len(present), figsize=(3.6 * len(present), 3.4), squeeze=False,
                                 layout="constrained")
        for ax, name in zip(axes[0], present):
            t = stats[name].tiers[tier]
            models = sorted(t.table["model"].unique())
            matrix = pd.DataFrame(float("nan"), index=models, columns=models)
            for _, row in t.flips.iterrows():
                matrix.loc[row["model_a"], row["model_b"]] = row["rho_flip"]
                matrix.loc[row["model_b"], row["model_a"]] = row.get("rho_flip_noise_aware", float("nan"))
            image = ax.imshow(matrix.to_numpy(dtype=float), vmin=0, vmax=0.5, cmap="Reds")
            ax.set_xticks(range(len(models)), models, rotation=40, ha="right", fontsize=7)
            ax.set_yticks(range(len(models)), models, fontsize=7)
            for i, j in ((i, j) for i in range(len(models)) for j in range(len(models)) if i != j):
                value = matrix.iloc[i, j]
                if not math.isnan(value):
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8)
            ax.set_title(f"{name} ({len(t.tau) and t.tau['n_configs']} configs)", fontsize=9)
        fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="rho_flip (above: raw, below: resolved differences only)")
        made[f"flips_{tier}"] = save_figure(fig, folder / f"flips_{tier}.png")

        # Variance attribution (item level) as stacked bars, one per benchmark and analysis.
        bars = [(f"{name} ({analysis})", frame) for name in present
                for analysis, frame in stats[name].tiers[tier].attribution.groupby("analysis", sort=False)]
        if bars:
            fig, ax = plt.subplots(figsize=(8, 0.5 * len(bars) + 1.6))
            terms = list(dict.fromkeys(t for _, frame in bars for t in frame["term"]))
            colours = plt.get_cmap("tab20")
            shown: set[str] = set()
            for y, (label, frame) in enumerate(bars):
                left = 0.0
                for _, row in frame.iterrows():
                    share = max(float(row["share"]), 0.0) if not math.isnan(row["share"]) else 0.0
                    ax.barh(y, share, left=left, color=colours(terms.index(row["term"]) % 20),
                            label=None if row["term"] in shown else row["term"])
                    shown.add(row["term"])
                    left += share
            # A negative remainder (an unbalanced design) cannot be drawn as a bar: it is written beside its label.
            labels = []
            for label, frame in bars:
                rest = frame.loc[frame["term"] == "not attributed", "share"]
                labels.append(label + (f" [not attributed {float(rest.iloc[0]):.3f}]"
                                       if len(rest) and float(rest.iloc[0]) < -5e-4 else ""))
            ax.set_yticks(range(len(bars)), labels, fontsize=7)
            ax.set_xlim(0, 1)
            ax.set_xlabel("share of the item-level outcome's total sum of squares (Type-II, items as replicates)")
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
            made[f"anova_{tier}"] = save_figure(fig, folder / f"anova_{tier}.png")

        # Noise floor vs gaps: every comparison's gap, its half-width, the benchmark's limit.
        fig, axes = plt.subplots(1, len(present), figsize=(3.4 * len(present), 3.0), squeeze=False)
        for ax, name in zip(axes[0], present):
            t = stats[name].tiers[tier]
            if len(t.gaps):
                colour = t.gaps["resolved"].map({True: "tab:blue", False: "tab:grey"})
                ax.scatter(t.gaps["half_width"], t.gaps["gap"], c=colour, s=12)
                top = max(float(t.gaps[["gap", "half_width"]].max().max()), 1e-6)
                ax.plot([0, top], [0, top], color="black", lw=0.8)
                if not math.isnan(t.detection_limit):
                    ax.axhline(t.detection_limit, color="tab:red", ls="--", lw=0.8)
            ax.set_title(f"{name}: {t.resolved_share:.0%} resolved", fontsize=9)
            ax.set_xlabel("noise (95% half-width)", fontsize=8)
            ax.set_ylabel("|gap| between models", fontsize=8)
        made[f"noise_{tier}"] = save_figure(fig, folder / f"noise_{tier}.png")

        # Reachable orderings: configurations per ordering.
        fig, axes = plt.subplots(1, len(present), figsize=(3.8 * len(present), 3.2), squeeze=False)
        for ax, name in zip(axes[0], present):
            t = stats[name].tiers[tier]
            ax.barh(range(len(t.orderings)), t.orderings["configs"],
                    color=t.orderings["strict"].map({True: "tab:blue", False: "tab:grey"}))
            ax.set_yticks(range(len(t.orderings)), t.orderings["ordering"], fontsize=6)
            ax.invert_yaxis()
            ax.set_title(f"{name}: {t.orderings.attrs.get('reachable')} of {t.orderings.attrs.get('possible')} "
                         f"strict, {t.orderings.attrs.get('distinct')} with ties", fontsize=9)
            ax.set_xlabel("configurations", fontsize=8)
        made[f"orderings_{tier}"] = save_figure(fig, folder / f"orderings_{tier}.png")

    # Score spread per factor level, per benchmark (grid tier), one line per model.
    for name in names:
        t = stats[name].tiers.get("grid")
        if t is None:
            continue
        factors = t.factors
        fig, axes = plt.subplots(1, len(factors), figsize=(3.2 * len(factors), 3.0), squeeze=False, sharey=True)
        for ax, factor in zip(axes[0], factors):
            levels = list(dict.fromkeys(t.table[factor].astype(str)))
            for model, rows in t.table.groupby("model"):
                xs = [levels.index(str(v)) for v in rows[factor]]
                ax.scatter([x + 0.08 * (sorted(t.table['model'].unique()).index(model) - 1) for x in xs],
                           rows["score"], s=10, label=model, alpha=0.7)
            ax.set_xticks(range(len(levels)), levels, fontsize=8)
            ax.set_title(factor, fontsize=9)
        axes[0][0].set_ylabel(f"{stats[name].metric}", fontsize=8)
        axes[0][-1].legend(fontsize=7)
        fig.suptitle(f"{name}: score per factor level", fontsize=10)
        made[f"spread_{name}"] = save_figure(fig, folder / f"spread_{name}.png")
    return made


def save_figure(fig: Any, path: Path) -> str:
    """Save and close a figure as PNG (fixed metadata: the same numbers give the same bytes); its name."""
    import matplotlib.pyplot as plt

    if not fig.get_constrained_layout():
        fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path.name

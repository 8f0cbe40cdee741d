"""Writing a grid run's statistics: tables, GRID cards, plots, ``report.md`` and ``report.html``.

Folder layout (stable): ``report.json`` (what the folder is: ``safetyrepro-report/1``, the run,
its plan and manifest hashes, and ``files``: every other file it holds, so that ``--overwrite``
replaces only a folder nobody added to), ``stats.json`` (:mod:`.analysis` format), ``scores.csv`` (one row
per cell: factors, primary score and CI, card), ``flips.csv``, ``orderings.csv``, ``anova.csv``,
``gaps.csv`` (each with ``benchmark`` and ``tier`` columns), ``cards/<cell_id>.yaml`` and
``.md`` (one per cell; the report shows no score without its card), the plots ``*.png``.
The folder is written beside its destination and moved into place whole, so an interrupted or
failed write leaves any earlier report as it was.
"""

from __future__ import annotations

import html
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from . import atomic
from .analysis import BenchmarkStats, analyse, to_json
from .card import GridCard, card, to_markdown, to_yaml
from .errors import ConfigError
from .gridresults import GridResults
from .gridlayout import REPORT_FORMAT, REPORT_MARKER, is_report

def _frames(stats: dict[str, BenchmarkStats]) -> dict[str, pd.DataFrame]:
    parts: dict[str, list[pd.DataFrame]] = {"flips": [], "orderings": [], "anova": [], "gaps": []}
    for name, b in stats.items():
        for tier, t in b.tiers.items():
            for key, frame in (("flips", t.flips), ("orderings", t.orderings), ("anova", t.anova), ("gaps", t.gaps)):
                if frame is not None and len(frame):
                    parts[key].append(frame.assign(benchmark=name, tier=tier))
    return {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in parts.items()}


# ---- plots ---------------------------------------------------------------------------------------

def _plots(stats: dict[str, BenchmarkStats], folder: Path) -> dict[str, str]:
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
        fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="rho_flip (above: raw, below: noise-aware)")
        made[f"flips_{tier}"] = _save(fig, folder / f"flips_{tier}.png")

        # ANOVA shares as stacked bars, one per benchmark.
        fig, ax = plt.subplots(figsize=(8, 0.6 * len(present) + 1.6))
        terms: list[str] = []
        for name in present:
            anova = stats[name].tiers[tier].anova
            if anova is not None:
                terms += [t for t in anova["term"] if t not in terms]
        colours = plt.get_cmap("tab20")
        for y, name in enumerate(present):
            anova = stats[name].tiers[tier].anova
            left = 0.0
            if anova is None:
                ax.text(0.01, y, "no ANOVA: " + stats[name].tiers[tier].anova_note, va="center", fontsize=7)
                continue
            for _, row in anova.iterrows():
                share = max(float(row["share"]), 0.0) if not math.isnan(row["share"]) else 0.0
                ax.barh(y, share, left=left, color=colours(terms.index(row["term"]) % 20),
                        label=row["term"] if y == next(i for i, n in enumerate(present)
                                                       if stats[n].tiers[tier].anova is not None
                                                       and row["term"] in list(stats[n].tiers[tier].anova["term"]))
                        else None)
                left += share
        ax.set_yticks(range(len(present)), present)
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of the score's total sum of squares (Type-II ANOVA)")
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        ax.legend(unique.values(), unique.keys(), fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
        made[f"anova_{tier}"] = _save(fig, folder / f"anova_{tier}.png")

        # Noise floor vs gaps: every comparison's gap, its half-width, the benchmark's limit.
        fig, axes = plt.subplots(1, len(present), figsize=(3.4 * len(present), 3.0), squeeze=False)
        for ax, name in zip(axes[0], present):
            t = stats[name].tiers[tier]
            if len(t.gaps):
                colour = t.gaps["resolvable"].map({True: "tab:blue", False: "tab:grey"})
                ax.scatter(t.gaps["half_width"], t.gaps["gap"], c=colour, s=12)
                top = max(float(t.gaps[["gap", "half_width"]].max().max()), 1e-6)
                ax.plot([0, top], [0, top], color="black", lw=0.8)
                ax.axhline(t.detection_limit, color="tab:red", ls="--", lw=0.8)
            ax.set_title(f"{name}: {t.share_below_detection:.0%} below noise", fontsize=9)
            ax.set_xlabel("noise (95% half-width)", fontsize=8)
            ax.set_ylabel("|gap| between models", fontsize=8)
        made[f"noise_{tier}"] = _save(fig, folder / f"noise_{tier}.png")

        # Reachable orderings: configurations per ordering.
        fig, axes = plt.subplots(1, len(present), figsize=(3.8 * len(present), 3.2), squeeze=False)
        for ax, name in zip(axes[0], present):
            t = stats[name].tiers[tier]
            ax.barh(range(len(t.orderings)), t.orderings["configs"],
                    color=t.orderings["strict"].map({True: "tab:blue", False: "tab:grey"}))
            ax.set_yticks(range(len(t.orderings)), t.orderings["ordering"], fontsize=6)
            ax.invert_yaxis()
            ax.set_title(f"{name}: {t.orderings.attrs.get('reachable')} of {t.orderings.attrs.get('possible')} "
                         "strict", fontsize=9)
            ax.set_xlabel("configurations", fontsize=8)
        made[f"orderings_{tier}"] = _save(fig, folder / f"orderings_{tier}.png")

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
        made[f"spread_{name}"] = _save(fig, folder / f"spread_{name}.png")
    return made


def _save(fig: Any, path: Path) -> str:
    import matplotlib.pyplot as plt

    if not fig.get_constrained_layout():
        fig.tight_layout()
    # Fixed metadata: the same statistics give the same bytes.
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path.name


# ---- text ---------------------------------------------------------------------------------------

def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        # Sums of squares of exactly equal scores come out as ~1e-30, not 0.
        return "n/a" if math.isnan(value) else "0" if abs(value) < 1e-12 else f"{value:.3g}"
    return str(value)


def supported_label(gates: dict[str, Any] | None) -> str:
    """Whether the instrument's gates back the statistics: yes, NO (which gate failed) or unchecked."""
    if not gates or gates.get("supported") is None:
        return "unchecked"
    return "yes" if gates["supported"] else f"NO ({', '.join(gates['failed'])} gate failed)"


def headline(stats: dict[str, BenchmarkStats], tier: str, gates: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per benchmark and model pair: the answer to "is A better than B, or does it depend?",
    with whether the instrument's stability gates support it (:func:`supported_label`)."""
    supported = supported_label(gates)
    rows = []
    for name, b in stats.items():
        t = b.tiers.get(tier)
        if t is None:
            continue
        for _, f in t.flips.iterrows():
            rows.append({"benchmark": name, "pair": f"{f['model_a']} vs {f['model_b']}", "configs": f["n_configs"],
                         "N+": f["n_plus"], "N-": f["n_minus"], "ties": f["ties"], "rho_flip": f["rho_flip"],
                         "rho_flip (noise-aware)": f.get("rho_flip_noise_aware", math.nan),
                         "resolvable": f.get("resolvable", math.nan), "verdict": f["verdict"],
                         "verdict (noise-aware)": f.get("verdict_noise_aware", ""),
                         "orderings": f"{t.orderings.attrs.get('reachable')}/{t.orderings.attrs.get('possible')}",
                         "tau_R": t.tau["tau_all_pairs"],
                         "dominated by": t.anova.attrs.get("dominated_by") if t.anova is not None else "n/a",
                         "detection limit": t.detection_limit, "supported": supported})
    return pd.DataFrame(rows)


def _md_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)\n"
    return frame.map(_fmt).to_markdown(index=False) + "\n"


def _html_table(frame: pd.DataFrame, *, escape: bool = True) -> str:
    if frame.empty:
        return "<p>(none)</p>"
    return frame.map(_fmt).to_html(index=False, escape=escape, border=0, classes="t")


def _scores_table(results: GridResults, cards: dict[str, GridCard]) -> pd.DataFrame:
    primary = results.primary()
    primary = primary[primary["cell_id"].isin(cards)]  # a score without its card is not shown
    frame = primary[["benchmark", "model", "template", "scoring", "fewshot", "decoding", "metric", "score",
                     "ci_low", "ci_high", "n", "cell_id", "config_sha256"]].copy()
    frame["unparsed"] = [cards[c].unparsed for c in frame["cell_id"]]
    return frame


def _markdown(results: GridResults, stats: dict[str, BenchmarkStats], scores: pd.DataFrame, plots: dict[str, str],
              header: dict[str, Any]) -> str:
    out = ["# Rank-instability report", "",
           f"Run `{results.folder}`, plan `{header['plan_sha256'][:16]}`, manifest `{header['manifest_sha256'][:16]}`; "
           f"{len(results.cells)} cells, models {', '.join(m.name for m in results.prepared.grid.models)}. "
           f"Noise: paired bootstrap of the per-item difference ({header['n_resamples']} resamples, seed "
           f"{header['seed']}); a difference whose 95% interval holds 0 is a tie within the noise.", "",
           "Proposition 1: a strict order of A and B is identifiable on a configuration set only if N+ = 0 or "
           "N- = 0. rho_flip = min(N+, N-) / |C|.", "", _gates_text(header["gates"]), ""]
    for tier in ("grid", "core"):
        table = headline(stats, tier, header["gates"])
        if table.empty:
            continue
        out += [f"## Tier `{tier}`" + (" (no reasoning template, greedy)" if tier == "core" else " (every configuration)"),
                "", _md_table(table)]
        for key, title in (("flips", "Flip matrices"), ("orderings", "Reachable orderings"),
                           ("anova", "Variance attribution"), ("noise", "Noise floor vs gaps")):
            if f"{key}_{tier}" in plots:
                out += [f"### {title}", "", f"![{title}]({plots[f'{key}_{tier}']})", ""]
        for name, b in stats.items():
            t = b.tiers.get(tier)
            if t is None:
                continue
            out += [f"### {name} ({b.metric}, {'closest to ' + format(b.target, 'g') if b.direction == 'target' else b.direction + ' is better'})",
                    "", f"Orderings ({t.orderings.attrs.get('reachable')} of {t.orderings.attrs.get('possible')} strict "
                    f"orderings reached; tau_R all pairs {_fmt(t.tau['tau_all_pairs'])}, vs modal "
                    f"{_fmt(t.tau['tau_vs_modal'])}):", "", _md_table(t.orderings)]
            if t.borda is not None and len(t.borda):
                out += ["Borda aggregate of the configurations' rankings (points: models beaten, ties half):", "",
                        _md_table(t.borda)]
            if t.anova is not None:
                out += [f"Type-II ANOVA shares (dominated by {t.anova.attrs['dominated_by']}; unattributed "
                        f"{_fmt(t.anova.attrs['unattributed'])}):", "",
                        _md_table(t.anova[["term", "df", "sum_sq", "share"]])]
            else:
                out += [f"No ANOVA: {t.anova_note}", ""]
            out += [f"Detection limit {_fmt(t.detection_limit)}; {_fmt(t.share_below_detection)} of the comparisons "
                    "are below the noise.", ""]
    skipped = [f"{name} ({tier}): {why}" for name, b in stats.items() for tier, why in b.skipped.items()]
    if skipped:
        out += ["## Not analysed", "", *[f"- {line}" for line in skipped], ""]
    out += ["## Score spread per factor level", ""]
    out += [f"![{name}]({plots[f'spread_{name}']})\n" for name in stats if f"spread_{name}" in plots]
    show = scores.assign(card=[f"[card](cards/{c}.md)" for c in scores["cell_id"]]).drop(columns=["config_sha256"])
    out += ["## Every score, with its GRID card", "", _md_table(show)]
    return "\n".join(out)


def _gates_text(gates: dict[str, Any]) -> str:
    """The report's statement about the instrument gates, with the repeat noise floor."""
    text = f"**Instrument gates: {supported_label(gates)}.** {gates['note']}."
    if gates.get("status"):
        text += " " + "; ".join(f"{name}: {status}" for name, status in gates["status"].items()) + "."
    floors = [f"{name} p95 {_fmt(f.get('noise_p95'))} ({_fmt(f.get('share_gaps_below_detection'))} of "
              f"{f.get('model_gaps')} model gaps at or below it)" for name, f in gates.get("noise_floor", {}).items()]
    if floors:
        text += " Repeat noise floor of the primary score (|cell - its repeat|): " + "; ".join(floors) + "."
    return text


def _html(markdown_source: str, results: GridResults, stats: dict[str, BenchmarkStats], scores: pd.DataFrame,
          plots: dict[str, str], gates: dict[str, Any]) -> str:
    lines = markdown_source.splitlines()
    parts = [f"<h1>Rank-instability report</h1><p>{html.escape(lines[2])}</p>",
             f"<p>{html.escape(lines[4])}</p>", f"<p>{html.escape(lines[6].replace('**', ''))}</p>"]
    for tier in ("grid", "core"):
        table = headline(stats, tier, gates)
        if table.empty:
            continue
        parts += [f"<h2>Tier {tier}</h2>", _html_table(table)]
        parts += [f'<p><img src="{html.escape(plots[f"{k}_{tier}"])}" alt="{k}"></p>'
                  for k in ("flips", "orderings", "anova", "noise") if f"{k}_{tier}" in plots]
    parts += ["<h2>Score spread per factor level</h2>"]
    parts += [f'<p><img src="{html.escape(plots[f"spread_{n}"])}" alt="{n}"></p>' for n in stats if f"spread_{n}" in plots]
    links = scores.drop(columns=["config_sha256"]).map(_fmt)
    links["card"] = [f'<a href="cards/{html.escape(c)}.md">card</a>' for c in scores["cell_id"]]
    parts += ["<h2>Every score, with its GRID card</h2>",
              links.to_html(index=False, escape=False, border=0, classes="t")]
    style = ("body{font-family:sans-serif;max-width:1200px;margin:auto}table.t{border-collapse:collapse;font-size:12px}"
             "table.t td,table.t th{padding:2px 6px;border-bottom:1px solid #ddd}img{max-width:100%}")
    return f"<!doctype html><html><head><meta charset='utf-8'><title>SafetyRepro statistics</title><style>{style}</style></head><body>{''.join(parts)}</body></html>\n"


def report_target(run: Path, out: Path | None, *, overwrite: bool) -> Path:
    """Where the report goes (default ``<run>/report``), refused where writing it could touch the
    run's own artefacts or anything that is not an earlier report. Touches nothing (the folder is
    prepared by :func:`write_stats` once the run verified)."""
    from . import outfolder

    run = run.resolve()
    target = run / "report" if out is None else outfolder.out_path(out)
    assert target is not None
    target = target.parent.resolve() / target.name if target.parent.exists() else target
    if target == run or target in run.parents:
        raise ConfigError(f"report folder {target} is the run folder or holds it",
                          "choose a new folder for --out, e.g. <run>/report or reports/<name>")
    if run in target.parents and (target.parent != run or target.name in {"cells", "gates"}):
        raise ConfigError(f"report folder {target} is inside the run's artefacts",
                          "choose a folder directly in the run (e.g. <run>/report) or outside it")
    outfolder.check_form(target)
    outfolder.check_replaceable(target, overwrite, is_ours=is_report, what="SafetyRepro report")
    return target


def write_stats(results: GridResults, out: Path | None, *, n_resamples: int = 1000, seed: int | None = None,
                overwrite: bool = False, progress: bool = True) -> dict[str, Any]:
    """Compute and write the report folder (layout in the module docstring); ``stats.json``'s document.

    ``out`` is checked by :func:`report_target`; the folder is written beside it and published
    atomically (:mod:`.atomic`), so a kill at any instant leaves the earlier report or the new one."""
    from . import outfolder

    out = report_target(results.folder, out, overwrite=overwrite)
    for note in outfolder.prepare(out):  # an interrupted earlier write of this report is finished
        print(f"note: {note}", file=sys.stderr)
    seed = results.prepared.grid.seed if seed is None else seed
    stats = analyse(results, n_resamples=n_resamples, seed=seed, progress=progress)
    work = atomic.stage_dir(out)
    try:
        document = to_json(stats, results, n_resamples=n_resamples, seed=seed)
        (work / "cards").mkdir()
        cards = {}
        for cell in results.cells:
            cards[cell["cell_id"]] = grid_card = card(results, cell["cell_id"])
            (work / "cards" / f"{cell['cell_id']}.yaml").write_text(to_yaml(grid_card))
            (work / "cards" / f"{cell['cell_id']}.md").write_text(to_markdown(grid_card))
        scores = _scores_table(results, cards)
        scores.to_csv(work / "scores.csv", index=False)
        for key, frame in _frames(stats).items():
            frame.to_csv(work / f"{key}.csv", index=False)
        (work / "stats.json").write_text(json.dumps(document, indent=1, default=str) + "\n")
        plots = _plots(stats, work)
        header = {"format": REPORT_FORMAT, "run": str(results.folder), "plan_sha256": document["plan_sha256"],
                  "manifest_sha256": document["manifest_sha256"], "n_resamples": n_resamples, "seed": seed,
                  "gates": document["gates"]}
        markdown = _markdown(results, stats, scores, plots, header)
        (work / "report.md").write_text(markdown)
        (work / "report.html").write_text(_html(markdown, results, stats, scores, plots, document["gates"]))
        header["files"] = outfolder.listing(work, besides=REPORT_MARKER)  # written last: what is ours
        (work / REPORT_MARKER).write_text(json.dumps(header, indent=1) + "\n")
        atomic.sync_tree(work)
        outfolder.publish(work, out, is_ours=is_report, what="SafetyRepro report")
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    document["report"] = str(out)
    return document

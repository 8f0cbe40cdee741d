"""Writing a grid run's statistics: tables, GRID cards, plots, ``report.md`` and ``report.html``.

Folder layout (stable): ``report.json`` (what the folder is: ``safetyrepro-report/1``, the run,
its plan and manifest hashes, and ``files``: every other file it holds, so that ``--overwrite``
replaces only a folder nobody added to), ``stats.json`` (:mod:`.analysis` format), ``scores.csv`` (one row
per cell: factors, primary score and CI, card), ``flips.csv``, ``orderings.csv``, ``attribution.csv``,
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
from typing import Any, Literal

import pandas as pd

from . import atomic
from .analysis import BenchmarkStats, TierStats, analyse, to_json
from .card import GridCard, card, to_markdown, to_yaml
from .errors import ConfigError
from .gridresults import GridResults
from .prereg import describe as describe_prereg
from .gridlayout import REPORT_FORMAT, REPORT_MARKER, is_report
from .statsplots import plots as draw

def _frames(stats: dict[str, BenchmarkStats]) -> dict[str, pd.DataFrame]:
    parts: dict[str, list[pd.DataFrame]] = {"flips": [], "orderings": [], "attribution": [], "gaps": []}
    for name, b in stats.items():
        for tier, t in b.tiers.items():
            for key, frame in (("flips", t.flips), ("orderings", t.orderings), ("attribution", t.attribution),
                               ("gaps", t.gaps)):
                if frame is not None and len(frame):
                    parts[key].append(frame.assign(benchmark=name, tier=tier))
    return {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in parts.items()}


# ---- text ---------------------------------------------------------------------------------------

def _fmt(value: Any) -> str:
    """A number as a table shows it: three decimals at most (a share of 0.000649 reads 0.001),
    three significant digits above 1, trailing zeros dropped."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if math.isnan(value):
        return "n/a"
    if abs(value) < 5e-4:  # sums of squares of equal scores come out as ~1e-30, not 0
        return "0"
    text = f"{value:.3g}" if abs(value) >= 100 else f"{value:.3f}" if abs(value) < 1 else f"{value:.4g}"
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


def _fmt_p(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _round_to_interval(value: float, low: float, high: float) -> str:
    """A score at the precision its interval supports: one digit past the half-width's first."""
    if any(math.isnan(v) for v in (value, low, high)):
        return _fmt(value)
    half = (high - low) / 2
    decimals = 3 if half <= 0 else max(0, min(4, 1 - math.floor(math.log10(half))))
    return f"{value:.{decimals}f}"


def supported_label(gates: dict[str, Any] | None) -> str:
    """Whether the instrument's gates back the statistics: yes, NO (which gate failed) or unchecked."""
    if not gates or gates.get("supported") is None:
        return "unchecked"
    return "yes" if gates["supported"] else f"NO ({', '.join(gates['failed'])} gate failed)"


def dominated_text(verdicts: dict[str, str]) -> str:
    """Per attribution, which side dominates (``model`` / ``implementation``), in one cell."""
    if not verdicts:
        return "n/a"
    if len(verdicts) == 1:
        return next(iter(verdicts.values()))
    return "; ".join(f"{k.replace('four-way, scoring=', '')}: {v}" for k, v in verdicts.items())


HEADLINE_COLUMNS = {
    "configs": "distinct configurations every model was measured in (cells computing the same thing count once); "
               "in brackets before merging",
    "N+ / N- / ties": "configurations where the first model is better / the second is / they tie",
    "rho_flip": "min(N+, N-) / configs: the share of configurations on the minority side",
    "Proposition 1": "no reversal observed (N+ = 0 or N- = 0) is necessary for a strict order, not sufficient; "
                     "a reversal means no strict order is identifiable on this configuration set",
    "resolved": "configurations whose difference the paired randomization test resolves (adjusted p < 0.05)",
    "rho_flip (resolved)": "rho_flip counting only resolved differences (unresolved ones as ties)",
    "supported order": "no reversal observed AND the difference resolved in the one direction in at least half of "
                       "the configurations",
    "orderings": "distinct strict orderings reached / k! possible (distinct orderings with ties)",
    "tau_R": "mean Kendall tau-b over all configuration pairs (two all-tied configurations: 1; one: 0)",
    "dominated by": "model identity or implementation (factors and model x factor) in the between-cell variance of "
                    "the item-level attribution, per scoring path (CrowS-Pairs: of the stereotype rate, not its "
                    "distance to 50)",
    "detection limit": "median 95% half-width of the paired difference over comparisons whose outcomes differ",
    "gates": "whether the instrument's stability gates back these numbers",
}


def headline(stats: dict[str, BenchmarkStats], tier: str, gates: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per benchmark and model pair: the answer to "is A better than B, or does it depend?",
    with whether the instrument's stability gates support it (:func:`supported_label`). Every
    column is explained once in :data:`HEADLINE_COLUMNS`."""
    supported = supported_label(gates)
    rows = []
    for name, b in stats.items():
        t = b.tiers.get(tier)
        if t is None:
            continue
        for _, f in t.flips.iterrows():
            rows.append({"benchmark": name, "pair": f"{f['model_a']} vs {f['model_b']}",
                         "configs": f"{f['n_configs']} ({t.n_configs_raw})",
                         "N+ / N- / ties": f"{f['n_plus']} / {f['n_minus']} / {f['ties']}", "rho_flip": f["rho_flip"],
                         "Proposition 1": f["verdict"], "resolved": f.get("resolved", math.nan),
                         "rho_flip (resolved)": f.get("rho_flip_noise_aware", math.nan),
                         "supported order": f.get("verdict_noise_aware", ""),
                         "orderings": f"{t.orderings.attrs.get('reachable')}/{t.orderings.attrs.get('possible')} "
                                      f"({t.orderings.attrs.get('distinct')})",
                         "tau_R": t.tau["tau_all_pairs"], "dominated by": dominated_text(t.dominated_by),
                         "detection limit": t.detection_limit, "gates": supported})
    return pd.DataFrame(rows, columns=["benchmark", "pair", *HEADLINE_COLUMNS])


def _md_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)\n"
    # As formatted: tabulate would otherwise parse "1.000" back into 1 and drop the precision.
    return frame.map(_fmt).to_markdown(index=False, disable_numparse=True) + "\n"


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


def _shown_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """The scores as the report prints them: each at the precision its interval supports."""
    shown = scores.drop(columns=["config_sha256"]).astype(object)
    for column in ("score", "ci_low", "ci_high"):
        shown[column] = [_round_to_interval(float(r[column]), float(r["ci_low"]), float(r["ci_high"]))
                         for _, r in scores.iterrows()]
    return shown


def _gaps_summary(t: TierStats) -> str:
    counts = t.gaps["status"].value_counts() if len(t.gaps) else pd.Series(dtype=int)
    exact = int(t.gaps["exact"].sum()) if len(t.gaps) else 0
    limit = (f"detection limit {_fmt(t.detection_limit)} (median 95% half-width over the {len(t.noisy)} comparisons "
             "whose outcomes differ on some item)" if len(t.noisy) else
             "no detection limit: every compared pair of cells has the same outcome on every item")
    undefined = counts.get("undefined", 0)
    return (f"{len(t.gaps)} comparisons: {counts.get('resolved', 0)} resolved, {counts.get('not resolved', 0)} not "
            f"resolved, {counts.get('too small to resolve', 0)} too small to resolve (no split of their discordant "
            "items could reach 0.05; left out of the adjustment)" + (f", {undefined} undefined" if undefined else "")
            + (f", {counts.get('identical outcomes', 0)} with identical outcomes" if counts.get("identical outcomes") else "")
            + f"; {exact} with exact p-values; {limit}.")


def _markdown(results: GridResults, stats: dict[str, BenchmarkStats], scores: pd.DataFrame, plots: dict[str, str],
              header: dict[str, Any]) -> str:
    control = {"holm": "Holm (family-wise error)", "bh": "Benjamini-Hochberg (false discovery rate)"}[header["multiplicity"]]
    out = ["# Rank-instability report", "",
           f"Run `{results.folder}`, plan `{header['plan_sha256'][:16]}`, manifest `{header['manifest_sha256'][:16]}`; "
           f"{len(results.cells)} cells, models {', '.join(m.name for m in results.prepared.grid.models)}. "
           "Each comparison (two models, one configuration, the same items) is a paired test of the primary "
           "metric's difference on the items' outcomes: the exact McNemar sign test where the metric is a plain "
           "mean of 0/1 outcomes (accuracy), else a randomization test, exact up to 12 discordant items and beyond "
           f"that Monte Carlo with at least {header['n_resamples']} swaps, more for large families (20 x "
           f"comparisons / 0.05; seed {header['seed']}). Comparisons that could not reach {header['alpha']} whatever "
           f"their data are 'too small to resolve' and left out of the adjustment; the others are adjusted over each "
           f"benchmark and tier by {control}; resolved means adjusted p < {header['alpha']}. The noise half-width is "
           "the paired bootstrap's (within strata where the metric averages them).", "",
           "Proposition 1 is a necessary condition: a strict order of A and B is identifiable on a configuration set "
           "only if N+ = 0 or N- = 0. rho_flip = min(N+, N-) / |C|. Cells that compute the same thing (a direct "
           "template on the logprob path under every decoding) are one configuration.", "",
           _gates_text(header["gates"]), "", f"Preregistration: {describe_prereg(header['preregistration'])}.", "",
           "How to read the headline tables:", "",
           *[f"- **{column}**: {meaning}" for column, meaning in HEADLINE_COLUMNS.items()], ""]
    for tier in ("grid", "core"):
        table = headline(stats, tier, header["gates"])
        if table.empty:
            continue
        out += [f"## Tier `{tier}`" + (" (no reasoning template, greedy)" if tier == "core" else " (every configuration)"),
                "", _md_table(table)]
        for key, title in (("flips", "Flip matrices"), ("orderings", "Orderings"),
                           ("anova", "Variance attribution"), ("noise", "Noise vs gaps")):
            if f"{key}_{tier}" in plots:
                out += [f"### {title}", "", f"![{title}]({plots[f'{key}_{tier}']})", ""]
        for name, b in stats.items():
            t = b.tiers.get(tier)
            if t is None:
                continue
            out += _benchmark_section(name, b, t)
    skipped = [f"{name} ({tier}): {why}" for name, b in stats.items() for tier, why in b.skipped.items()]
    if skipped:
        out += ["## Not analysed", "", *[f"- {line}" for line in skipped], ""]
    out += ["## Score spread per factor level", ""]
    out += [f"![{name}]({plots[f'spread_{name}']})\n" for name in stats if f"spread_{name}" in plots]
    show = _shown_scores(scores).assign(card=[f"[card](cards/{c}.md)" for c in scores["cell_id"]])
    out += ["## Every score, with its GRID card", "", _md_table(show)]
    return "\n".join(out)


def _benchmark_section(name: str, b: BenchmarkStats, t: TierStats) -> list[str]:
    better = "closest to " + format(b.target, "g") if b.direction == "target" else b.direction + " is better"
    tau = t.tau
    modal = (f"modal ordering {tau['modal'][0]} ({tau['modal_configs']} configurations)" if len(tau["modal"]) == 1 else
             f"modal orderings tied at {tau['modal_configs']} configurations each: {'; '.join(tau['modal'])}")
    out = [f"### {name} ({b.metric}, {better})", ""]
    if t.unscored:
        out += [f"Left out, primary metric undefined ({len(t.unscored)} cells): "
                + "; ".join(f"{u['model']} at {u['config']} ({u['reason']})" for u in t.unscored) + ".", ""]
    if t.duplicates:
        out += [f"{t.n_configs_raw} configurations, {int(tau['n_configs'])} distinct measurements: "
                + "; ".join(f"{d['config']} also stands for {', '.join(d['same_measurement_as'])}" for d in t.duplicates)
                + ".", ""]
    out += [f"Orderings: {t.orderings.attrs.get('reachable')} of {t.orderings.attrs.get('possible')} strict orderings "
            f"reached, {t.orderings.attrs.get('distinct')} distinct with ties ({t.orderings.attrs.get('all_tied')} "
            f"configurations tie every model); {modal}. tau_R {_fmt(tau['tau_all_pairs'])} over {tau['n_pairs']} "
            f"configuration pairs ({tau['n_pairs_one_all_tied']} with one all-tied configuration, counted 0; "
            f"{tau['n_pairs_both_all_tied']} with two, counted 1); vs the modal ordering {_fmt(tau['tau_vs_modal'])}.",
            "", _md_table(t.orderings)]
    if t.borda is not None and len(t.borda):
        out += ["Borda aggregate of the configurations' rankings (points: models beaten, ties half):", "",
                _md_table(t.borda)]
    out += [f"Variance attribution on item-level outcomes ({b.item_outcome}). Items are replicates: each term is "
            "F-tested against the variation within cells (item x configuration interplay, and sampling noise where "
            "decoding samples). share: of the item-level total, the remainder named; share_between: of the "
            f"between-cell variation only (the paper's scale). Dominated by: {dominated_text(t.dominated_by)}.", ""]
    if len(t.attribution):
        out += [_md_table(t.attribution[["analysis", "term", "df", "sum_sq", "F", "p", "share_between", "share", "n"]]
                          .assign(p=lambda f: f["p"].map(_fmt_p)))]
    out += [_gaps_summary(t), ""]
    return out


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
             f"<p>{html.escape(lines[4])}</p>", f"<p>{html.escape(lines[6].replace('**', ''))}</p>",
             "<p>How to read the headline tables:</p><ul>",
             *[f"<li><b>{html.escape(c)}</b>: {html.escape(m)}</li>" for c, m in HEADLINE_COLUMNS.items()], "</ul>"]
    for tier in ("grid", "core"):
        table = headline(stats, tier, gates)
        if table.empty:
            continue
        parts += [f"<h2>Tier {tier}</h2>", _html_table(table)]
        parts += [f'<p><img src="{html.escape(plots[f"{k}_{tier}"])}" alt="{k}"></p>'
                  for k in ("flips", "orderings", "anova", "noise") if f"{k}_{tier}" in plots]
    parts += ["<h2>Score spread per factor level</h2>"]
    parts += [f'<p><img src="{html.escape(plots[f"spread_{n}"])}" alt="{n}"></p>' for n in stats if f"spread_{n}" in plots]
    links = _shown_scores(scores).map(_fmt)
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
                overwrite: bool = False, progress: bool = True, multiplicity: Literal["holm", "bh"] = "holm") -> dict[str, Any]:
    """Compute and write the report folder (layout in the module docstring); ``stats.json``'s document.

    ``out`` is checked by :func:`report_target`; the folder is written beside it and published
    atomically (:mod:`.atomic`), so a kill at any instant leaves the earlier report or the new one."""
    from . import outfolder

    out = report_target(results.folder, out, overwrite=overwrite)
    for note in outfolder.prepare(out):  # an interrupted earlier write of this report is finished
        print(f"note: {note}", file=sys.stderr)
    seed = results.prepared.grid.seed if seed is None else seed
    stats = analyse(results, n_resamples=n_resamples, seed=seed, progress=progress, multiplicity=multiplicity)
    work = atomic.stage_dir(out)
    try:
        document = to_json(stats, results, n_resamples=n_resamples, seed=seed, multiplicity=multiplicity)
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
        plots = draw(stats, work)
        header = {"format": REPORT_FORMAT, "run": str(results.folder), "plan_sha256": document["plan_sha256"],
                  "manifest_sha256": document["manifest_sha256"], "n_resamples": n_resamples, "seed": seed,
                  "alpha": document["alpha"], "multiplicity": multiplicity, "gates": document["gates"],
                  "preregistration": document["preregistration"]}
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

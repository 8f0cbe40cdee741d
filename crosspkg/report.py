"""Writing a comparison: ``scores.json``, ``items.parquet``, ``diffs.json``, ``report.md``,
``report.html`` and ``scores.png``.

Formats (stable; later tools read them):

* ``scores.json``: ``{"header": {...}, "scores": [{benchmark, harness, mode, metric, value,
  ci_low, ci_high, n, all_metrics}], "gaps": {benchmark: {"largest": x, "between": [a, b]}},
  "ladder": {run: {benchmark: [{step, description, score, changed}]}}, "findings": n, "path_gaps": [...],
  "case_study": [...]}`` (the last two: :mod:`.casestudy`);
* ``items.parquet``: one row per (benchmark, harness, mode, item_id) with prompt, candidates
  (JSON), gold, prediction, extraction_rule, loglikelihoods (JSON), raw_output;
* ``diffs.json``: per (benchmark, harness pair), the items that differ, each with its
  differences by cause (``items``, ``prompt``, ``candidates``, ``gold``, ``evidence``, ``readout``).
"""

from __future__ import annotations

import html
import itertools
import json
from pathlib import Path
from typing import Any

from .compare import Comparison, Score, items_rows
from .diff import CAUSES
from .harnesses import NATIVE_SUFFIX
from safetyrepro.adapters.metrics import json_ready
from safetyrepro.adapters.outfolder import holds_exactly, listing

from .casestudy import case_study, case_study_table, path_gap_lines, path_gaps


def gaps(comparison: Comparison) -> dict[str, dict[str, Any]]:
    result = {}
    for benchmark in comparison.anchor.benchmarks:
        scores = [s for s in comparison.scores if s.benchmark == benchmark and s.value == s.value]  # defined ones
        pairs = [(abs(a.value - b.value), [f"{a.harness}/{a.mode}", f"{b.harness}/{b.mode}"])
                 for a, b in itertools.combinations(scores, 2)]
        if pairs:
            gap, between = max(pairs, key=lambda p: p[0])
            result[benchmark] = {"largest": gap, "between": between}
    return result


def _key(benchmark: str, label: str) -> tuple[str, str, str]:
    native = label.endswith(NATIVE_SUFFIX)
    return benchmark, label.removesuffix(NATIVE_SUFFIX), "native" if native else "harmonized"


def summary_lines(comparison: Comparison) -> list[str]:
    """The plain-language attribution: per benchmark and harness pair, what the items that
    changed prediction changed because of (pairs that agree on every item share one line)."""
    lines = []
    by_key = {(s.benchmark, s.harness, s.mode): s for s in comparison.scores}
    for benchmark in comparison.anchor.benchmarks:
        agreeing: list[tuple[str, str]] = []
        differing: list[str] = []
        n_items = 0
        for (b, a, other), diffs in comparison.diffs.items():
            if b != benchmark:
                continue
            changed = comparison.attribution(benchmark, a, other)
            if not changed:
                agreeing.append((a, other))
                n_items = len(diffs)
                continue
            sa, sb = by_key.get(_key(benchmark, a)), by_key.get(_key(benchmark, other))
            head = f"{benchmark}, {a} vs {other}"
            qualified = [f"{x.harness}/{x.mode}: {x.qualifier}" for x in (sa, sb) if x and x.qualifier]
            head += f" ({'; '.join(qualified)})" if qualified else ""
            if sa and sb and sa.value == sa.value and sb.value == sb.value:
                head += f": {sa.metric} {sa.value:.3f} vs {sb.value:.3f} (gap {abs(sa.value - sb.value):.3f})"
            parts = [f"{changed[c]} because of the {c}" for c in CAUSES if changed.get(c)]
            differing.append(f"{head}; {sum(changed.values())} of {len(diffs)} items changed prediction: "
                             + ", ".join(parts) + ".")
        labels = list(dict.fromkeys(x for pair in agreeing for x in pair))
        for run in comparison.runs:
            items = run.items.get(benchmark, {}) if run.mode == "native" else {}
            unmapped = sum(1 for h in items.values() if h.prediction is None)
            if unmapped:
                label = run.label + (f" ({run.qualifiers[benchmark]})" if benchmark in run.qualifiers else "")
                differing.append(f"{benchmark}, {label}: {unmapped} of {len(items)} native choices are no core "
                                 "option (an answer outside the core's options, or no answer): scored as unparsed.")
        if agreeing and len(agreeing) == len(labels) * (len(labels) - 1) // 2:
            lines.append(f"{benchmark}: {', '.join(labels)} give the same prediction on all {n_items} items.")
        elif agreeing:
            lines.append(f"{benchmark}: the same prediction on all {n_items} items for "
                         + ", ".join(f"{a} = {b}" for a, b in agreeing) + ".")
        lines += differing
    return lines


def _diffs_json(comparison: Comparison) -> dict[str, Any]:
    harmonized = set(comparison.harmonized_pairs())
    return {f"{benchmark}:{a}~{b}": [{"item_id": d.item_id, "cause": d.cause, "differences": d.differences,
                                      "prediction_differs": d.prediction_differs, "tie": d.tie,
                                      "finding": d.finding and (benchmark, a, b) in harmonized,
                                      "max_ll_diff": d.max_ll_diff}
                                     for d in diffs if d.differences]
            for (benchmark, a, b), diffs in comparison.diffs.items()}


def verdict(comparison: Comparison) -> str:
    findings = comparison.findings()
    if findings:
        return f"{len(findings)} finding(s): items where harmonized runs disagree (listed below)."
    if comparison.harmonized_pairs():
        if comparison.anchor.decoding != "greedy":
            sampled = sum(1 for key in comparison.harmonized_pairs() for d in comparison.diffs[key] if d.differences)
            return (f"Harmonized runs ask the same (prompts, candidates, gold agree); with {comparison.anchor.decoding} "
                    f"decoding their generations differ by design ({sampled} item comparisons).")
        return "All harmonized runs agree item by item."
    native = sum(1 for diffs in comparison.diffs.values() for d in diffs if d.prediction_cause)
    return f"No harmonized comparison was made; native runs differ from the reference on {native} item prediction(s)."


def _plot(comparison: Comparison, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    benchmarks = comparison.anchor.benchmarks
    def label(s: Score) -> str:  # a qualified run says so under its name
        return f"{s.harness}/{s.mode}" + (f"\n({s.qualifier})" if s.qualifier else "")

    labels = sorted({label(s) for s in comparison.scores}, key=lambda x: (x != "core/harmonized", x))
    fig, axes = plt.subplots(1, len(benchmarks), figsize=(3.2 * len(benchmarks), 3.4), squeeze=False)
    for ax, benchmark in zip(axes[0], benchmarks):
        scores = {label(s): s for s in comparison.scores if s.benchmark == benchmark}
        xs = [label for label in labels if label in scores]
        values = [scores[x].value for x in xs]
        low = [max(0.0, scores[x].value - scores[x].ci_low) for x in xs]
        high = [max(0.0, scores[x].ci_high - scores[x].value) for x in xs]
        ax.bar(range(len(xs)), values, yerr=[low, high], capsize=3, color="#4c72b0")
        ax.set_xticks(range(len(xs)), xs, rotation=45, ha="right", fontsize=7)
        metric = next(iter(scores.values())).metric if scores else ""
        ax.set_title(f"{benchmark} ({metric})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _score_table(comparison: Comparison) -> list[list[str]]:
    rows = [["benchmark", "harness", "mode", "metric", "value", "95% CI", "n"]]
    for s in comparison.scores:
        defined = s.value == s.value  # NaN: nothing to measure (e.g. every answer unparsed)
        rows.append([s.benchmark, s.harness, s.mode + (f" ({s.qualifier})" if s.qualifier else ""), s.metric,
                     f"{s.value:.3f}" if defined else "n/a",
                     f"[{s.ci_low:.3f}, {s.ci_high:.3f}]" if defined else "undefined", str(s.n)])
    return rows


def _ladder_table(comparison: Comparison) -> list[list[str]]:
    rows = [["benchmark", "run", "step", "what changes", "score", "change", "items changed"]]
    for label, benchmarks in comparison.ladder.items():
        for benchmark, steps in benchmarks.items():
            for i, step in enumerate(steps):
                delta = "" if i == 0 else f"{step.score.value - steps[i - 1].score.value:+.3f}"
                rows.append([benchmark, label, step.step, step.description,
                             f"{step.score.metric} {step.score.value:.3f}", delta, str(step.changed) if i else ""])
    return rows


def _reported_table(comparison: Comparison) -> list[list[str]]:
    rows = [["benchmark", "harness", "metric", "value"]]
    for run in comparison.runs:
        for benchmark, metrics in run.reported.items():
            label = run.label + (f" ({run.qualifiers[benchmark]})" if benchmark in run.qualifiers else "")
            rows += [[benchmark, label, name, f"{value:.4g}"] for name, value in sorted(metrics.items())
                     if not name.startswith(("amb_bias_score_", "disamb_bias_score_"))]
    return rows


def _markdown_table(rows: list[list[str]]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    return "\n".join(lines)


def _html_table(rows: list[list[str]]) -> str:
    head, *body = rows
    out = ["<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body]
    return "\n".join(out) + "</table>"


def is_comparison(folder: Path) -> bool:
    """A folder ``crosspkg compare`` wrote and nobody added to: its ``scores.json`` names the
    anchor's hash and lists every other file the folder holds."""
    try:
        document = json.loads((folder / "scores.json").read_text())
        header = document["header"]
        named = isinstance(header["anchor_sha256"], str) and len(header["anchor_sha256"]) == 64
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return False
    return named and holds_exactly(folder, document.get("files"), besides="scores.json")


def write_report(comparison: Comparison, folder: Path) -> list[Path]:
    import pandas as pd

    header = comparison.header
    findings = comparison.findings()
    gap = gaps(comparison)
    gap_rows = path_gaps(comparison)
    study_rows = case_study(comparison, gap_rows)
    scores = json_ready({
        "header": header, "scores": [s.__dict__ for s in comparison.scores], "gaps": gap,
        "ladder": {label: {b: [{"step": st.step, "description": st.description, "score": st.score.__dict__,
                                "changed": st.changed} for st in steps] for b, steps in benchmarks.items()}
                   for label, benchmarks in comparison.ladder.items()},
        "findings": len(findings), "path_gaps": gap_rows, "case_study": study_rows})
    pd.DataFrame(items_rows(comparison)).to_parquet(folder / "items.parquet", index=False)
    (folder / "diffs.json").write_text(json.dumps(_diffs_json(comparison), indent=1) + "\n")
    _plot(comparison, folder / "scores.png")

    summary = summary_lines(comparison)
    model = header["model"]
    grid = [["field", "value"], ["anchor sha256", header["anchor_sha256"]],
            ["model", f"{model.get('name_or_path')} ({model.get('quantization')}), weights {model.get('weights_path')}"],
            ["model source sha256", str(model.get("source_sha256"))],
            ["chat template sha256", str(model.get("chat_template_sha256"))],
            ["versions", ", ".join(f"{k} {v}" for k, v in sorted(header["versions"].items()))],
            ["loglikelihood tolerance", ", ".join(f"{k} {v:g}" for k, v in header["tolerance"].items())]]
    grid += [[f"config sha256 ({b})", h] for b, h in header["config_sha256"].items()]
    grid += [[f"command ({k})", " ".join(v) if isinstance(v, list) else str(v)] for k, v in header["commands"].items()]
    missing = [f"{r.harness} ({r.mode}): {b}: {why}" for r in comparison.runs for b, why in r.missing.items()]
    notes = [f"{r.harness} ({r.mode}): {b}: {how}" for r in comparison.runs for b, how in r.notes.items()]
    detail = []
    for key, entries in _diffs_json(comparison).items():
        if len(entries) > 20:
            detail.append(f"#### {key}: {len(entries) - 20} more differing items in diffs.json\n")
        for entry in entries[:20]:
            text = "; ".join(f"{c}: {v}" for c, v in entry["differences"].items() if c != "prompt")
            detail.append(f"#### {key} {entry['item_id']} ({entry['cause']}{', tie' if entry['tie'] else ''})\n\n"
                          + (f"```diff\n{entry['differences']['prompt']}\n```\n" if "prompt" in entry["differences"] else "")
                          + (f"{text}\n" if text else ""))
    verdict_line = verdict(comparison)
    anchor = comparison.anchor
    study = case_study_table(study_rows, anchor.scoring, anchor.scoring_gap)
    paths = path_gap_lines(gap_rows)
    md = [f"# crosspkg compare: {', '.join(comparison.anchor.benchmarks)}", "", verdict_line, "",
          "## Case study: native gaps, the scoring-path gap, and what explains them", "", _markdown_table(study), "",
          *(["Scoring-path gap, same items:", "", *[f"* {line}" for line in paths], ""] if paths else []),
          "## Scores", "", _markdown_table(_score_table(comparison)), "", "![scores](scores.png)", "",
          "Largest pairwise gap: " + "; ".join(f"{b} {v['largest']:.3f} ({' vs '.join(v['between'])})"
                                                 for b, v in gap.items()), "",
          "## Why the scores differ", "", *[f"* {line}" for line in summary], ""]
    ladder = _ladder_table(comparison)
    if len(ladder) > 1:
        md += ["## Factor ladder: from the native task to the harmonized one, one factor at a time", "",
               _markdown_table(ladder), ""]
    reported = _reported_table(comparison)
    if len(reported) > 1:
        md += ["## Native metrics as each harness reports them", "", _markdown_table(reported), ""]
    if notes:
        md += ["## How the native runs were fed", "", *[f"* {n}" for n in notes], ""]
    if missing:
        md += ["## Not run", "", *[f"* {m}" for m in missing], ""]
    md += ["## Item differences", "", *(detail or ["None."]), "", "## Configuration (GRID header)", "",
           _markdown_table(grid), ""]
    (folder / "report.md").write_text("\n".join(md))
    page = ["<!doctype html><meta charset='utf-8'><title>crosspkg compare</title>",
            "<style>body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}pre{background:#f6f6f6;padding:4px}</style>",
            f"<h1>crosspkg compare: {html.escape(', '.join(comparison.anchor.benchmarks))}</h1>",
            f"<p><b>{html.escape(verdict_line)}</b></p>",
            "<h2>Case study: native gaps, the scoring-path gap, and what explains them</h2>", _html_table(study),
            *(["<p>Scoring-path gap, same items:</p><ul>", *[f"<li>{html.escape(line)}</li>" for line in paths], "</ul>"]
              if paths else []),
            "<h2>Scores</h2>", _html_table(_score_table(comparison)),
            "<p><img src='scores.png' alt='scores per harness'></p>", "<h2>Why the scores differ</h2><ul>",
            *[f"<li>{html.escape(line)}</li>" for line in summary], "</ul>"]
    if len(ladder) > 1:
        page += ["<h2>Factor ladder: from the native task to the harmonized one, one factor at a time</h2>",
                 _html_table(ladder)]
    if len(reported) > 1:
        page += ["<h2>Native metrics as each harness reports them</h2>", _html_table(reported)]
    if notes:
        page += ["<h2>How the native runs were fed</h2><ul>", *[f"<li>{html.escape(n)}</li>" for n in notes], "</ul>"]
    if missing:
        page += ["<h2>Not run</h2><ul>", *[f"<li>{html.escape(m)}</li>" for m in missing], "</ul>"]
    page += ["<h2>Item differences</h2>",
             *([f"<pre>{html.escape(d)}</pre>" for d in detail] or ["<p>None.</p>"]),
             "<h2>Configuration (GRID header)</h2>", _html_table(grid)]
    (folder / "report.html").write_text("\n".join(page) + "\n")
    # scores.json last, listing every other file: `--overwrite` replaces only a folder nobody added to.
    scores["files"] = listing(folder, besides="scores.json")
    (folder / "scores.json").write_text(json.dumps(scores, indent=1, default=str) + "\n")
    return [folder / n for n in ("report.md", "report.html", "scores.json", "items.parquet", "diffs.json", "scores.png")]

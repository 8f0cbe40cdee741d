"""The pilot's output folder: the design report (``report.md``, ``report.html``, figures,
``design.json``) and the proposal (``grid.proposed.yaml``), beside the pilot run (``run/``).

Layout of ``safetyrepro pilot --out DIR`` (stable): ``run/`` (the pilot's grid run), then the
derived files, written once the run verified, each replaced whole, and last ``pilot.json``
(``safetyrepro-pilot/1``: the design's plan hashes and the files it wrote). A folder is ours when
it holds nothing but ``run/`` (a grid run holding nothing foreign), ``pilot.json`` and the files it
lists: anything else in it is refused, never deleted or replaced.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from .durable import replace_file, temp_target
from .errors import ConfigError
from .grid import GridConfig, build_grid
from .pilot import DESIGN_FORMAT

__all__ = ["DESIGN", "PILOT_FORMAT", "PILOT_MARKER", "REPORT_FILES", "RUN", "check_pilot_folder", "design_tables",
           "mark_pilot_folder", "proposal", "read_design", "verdict_lines", "write_report"]

PILOT_FORMAT = "safetyrepro-pilot/1"
PILOT_MARKER = "pilot.json"
RUN = "run"
"""``<out>/run``: the pilot's grid run."""


def _marker(folder: Path) -> dict[str, Any] | None:
    try:
        document = json.loads((folder / PILOT_MARKER).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return document if isinstance(document, dict) and document.get("format") == PILOT_FORMAT else None


def _run_companion(name: str) -> bool:
    """What the grid engine leaves beside ``run/`` while it works: its ``--overwrite`` folder and an
    interrupted publish's leftovers (a rerun of the pilot finishes or clears them)."""
    from . import atomic
    from .gridrun import is_overwrite_folder

    ours = name.startswith((f".{RUN}.", f".{RUN}-old-"))
    return is_overwrite_folder(Path(name), Path(RUN)) or (atomic.is_leftover(name) and ours)


def check_pilot_folder(out: Path) -> None:
    """Touching nothing: ``out`` is missing, empty or a pilot folder of ours (see the module
    docstring). A ``run/`` without a valid ``pilot.json`` beside it is someone's grid run, never
    the pilot's to resume or replace."""
    from .gridlayout import describe, foreign_entries, is_grid_run

    if not out.is_dir():
        return
    marker = _marker(out)
    listed = set(marker.get("files") or []) | {PILOT_MARKER} if marker else set()
    foreign = []
    for entry in sorted(out.iterdir()):
        if entry.name == RUN and entry.is_dir() and not entry.is_symlink():
            if any(entry.iterdir()) and not (marker and is_grid_run(entry) and not foreign_entries(entry)):
                foreign.append(f"{RUN}/ (not a pilot's grid run)")
        elif not entry.is_symlink() and marker and _run_companion(entry.name):
            continue
        elif entry.is_symlink() or not entry.is_file():
            foreign.append(entry.name + ("/" if entry.is_dir() else ""))
        elif not (entry.name in listed or temp_target(entry.name) in listed):
            foreign.append(entry.name)
    if foreign:
        raise ConfigError(f"--out {out} holds files a pilot did not write ({describe(foreign)})",
                          "choose a new or empty folder for --out; nothing in that folder was changed")


def mark_pilot_folder(out: Path, document: dict[str, Any] | None = None) -> None:
    """Write ``pilot.json`` (before the run, and again with the plan hashes before the report),
    naming every file the pilot writes beside ``run/``: what a rerun may replace."""
    marker = {"format": PILOT_FORMAT, "files": sorted(REPORT_FILES)}
    if document is not None:
        marker |= {"pilot_plan_sha256": document["pilot_plan_sha256"], "grid_plan_sha256": document["grid_plan_sha256"]}
    out.mkdir(parents=True, exist_ok=True)
    replace_file(out / PILOT_MARKER, (json.dumps(marker, indent=1) + "\n").encode())


def read_design(folder: Path) -> dict[str, Any]:
    """A pilot folder's design without its per-comparison rows, for a preregistration record;
    refused unless it is the design of the pilot run beside it."""
    fix = "pass the --out folder of a finished `safetyrepro pilot`"
    try:
        document = json.loads((folder / DESIGN).read_text())
        run_plan = json.loads((folder / RUN / "plan.json").read_text())["plan_sha256"]
    except (OSError, ValueError, UnicodeDecodeError, KeyError, TypeError):
        raise ConfigError(f"--pilot {folder} holds no pilot design ({DESIGN} and {RUN}/plan.json)", fix) from None
    if _marker(folder) is None or not isinstance(document, dict) or document.get("format") != DESIGN_FORMAT:
        raise ConfigError(f"--pilot {folder} is not a pilot folder ({PILOT_MARKER}, {DESIGN})", fix)
    if document.get("pilot_plan_sha256") != run_plan:
        raise ConfigError(f"--pilot {folder}: {DESIGN} is not the design of the pilot run beside it (edited?)",
                          "run the same `safetyrepro pilot` again to write it anew")
    return {k: v for k, v in document.items() if k != "comparisons"}


# ---- tables ----------------------------------------------------------------------------------------

def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and (value != value or math.isinf(value))):
        return "n/a"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def design_tables(document: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """The report's tables: sizing per benchmark, and the gates' operating characteristic."""
    grid_n, proposed = document["grid_limit"], document["proposed_limit"]
    sizing = []
    for name, b in document["benchmarks"].items():
        need = b["items_for_share"]
        sizing.append({
            "benchmark": name, "pilot items": b["items"], "subset": b["subset_size"],
            "comparisons (family)": f"{b['comparisons']} ({b['family']})",
            "per-item sd (median where outcomes differ)": _num(b["sigma_median"]), "gap (median, de-biased)": _num(b["gap_median"]),
            "repeat noise p95": _num(b["noise_p95"]),
            "detection limit pilot / grid / subset": " / ".join(_num(b["detection_limit"][k]) for k in ("pilot", "grid", "subset")),
            f"resolvable at {grid_n or 'all'} items": _num(b["resolvable"]["grid"], 2),
            "expected resolved at grid": _num(b["expected_resolved"]["grid"], 3),
            f"items for {document['target_share']:.0%}": (str(need) if b["reachable"] == "yes" else
                                                         f"{need} (beyond the subset of {b['subset_size']})"
                                                         if need is not None else
                                                         f"none ({b.get('with_gap', 0)} of {b['comparisons']} gaps beyond noise)"),
            "raw gaps (optimistic)": _num(b.get("items_for_share_raw")),
            f"resolvable at {proposed or 'all'}": _num(b["resolvable"]["proposed"], 2),
            f"pairs / configs resolvable at {proposed or 'all'}": "{pairs}/{of_pairs} / {configs}/{of_configs}".format(
                **b["effective"]["proposed"])})
    gates = []
    for name, g in document["gates"].items():
        if not g.get("cells"):
            gates.append({"gate": name, "threshold": "", "cells": 0, "note": g.get("note", "")})
            continue
        for label in ("grid", "proposed"):
            oc = g[label]
            n = sorted(set(oc["n_items"].values()))
            gates.append({"gate": name + ("" if g["frozen"] else " (not frozen)"), "at": f"{label} ({'/'.join(map(str, n))} items)",
                          "threshold": oc["threshold"], "cells": g["cells"],
                          "P(pass | healthy)": _num(oc["pass_healthy"], 2),
                          f"P(pass | {oc['degrade']:.0%} degraded)": _num(oc["pass_degraded"], 2),
                          "reachable threshold (95%)": _num(oc["reachable_threshold"], 2),
                          "flag": "CANNOT PASS when healthy" if oc["pass_healthy"] < 0.5 else
                          ("passes a healthy instrument too rarely" if oc["pass_healthy"] < 0.8 else ""),
                          "note": g.get("note", "")})
    return {"sizing": pd.DataFrame(sizing), "gates": pd.DataFrame(gates).fillna("")}


def verdict_lines(document: dict[str, Any]) -> list[str]:
    """What the pilot predicts, in sentences (report and command output)."""
    lines = []
    grid_n = document["grid_limit"]
    for name, b in document["benchmarks"].items():
        at = f"at {grid_n} items per cell" if grid_n else "on the whole subset"
        resolvable = b["resolvable"]["grid"]
        count = round((resolvable or 0) * b["comparisons"])
        head = (f"{name}: {at}, {count} of {b['comparisons']} comparisons resolvable "
                f"(expected resolved {_num(b['expected_resolved']['grid'])})")
        if count == 0:
            head += " -- the run would say \"cannot tell\""
        need = b["items_for_share"]
        share = f"{document['target_share']:.0%}"
        raw = b.get("items_for_share_raw")
        optimistic = (f"; taking the pilot's raw gaps at face value (optimistic), {raw} items per cell"
                      if raw is not None else "")
        if need is None and not b.get("with_gap"):
            tail = f"the pilot saw no gap beyond its own noise: no item count resolves these comparisons{optimistic}"
        elif need is None:
            gaps = b["items_for_gaps"]
            tail = (f"only {b['with_gap']} of {b['comparisons']} comparisons {'shows' if b['with_gap'] == 1 else 'show'} "
                    f"a gap beyond the pilot's noise ({'it needs' if b['with_gap'] == 1 else 'they need up to'} "
                    f"{gaps} items per cell{'' if gaps <= b['subset_size'] else ', beyond the subset of ' + str(b['subset_size'])}), "
                    f"so no item count resolves {share} of them{optimistic}")
        elif b["reachable"] == "yes":
            tail = f"{need} items per cell would resolve {document['target_share']:.0%} of them at the gaps seen"
        else:
            tail = (f"{document['target_share']:.0%} of them would need {need} items per cell, beyond the benchmark's "
                    f"subset of {b['subset_size']}: even the whole subset resolves "
                    f"{_num(b['resolvable']['subset'], 2)} of them")
        lines.append(f"{head}; {tail}.")
    return lines


# ---- the proposal ----------------------------------------------------------------------------------

def proposal(grid: GridConfig, document: dict[str, Any]) -> str:
    """``grid.proposed.yaml``: the user's grid with ``limit`` and the gates' thresholds filled in from
    the pilot, a comment above each change saying why. It is a grid file (``build_grid`` reads it)."""
    data = grid.model_dump(mode="json")
    limit, gates = data.pop("limit", None), data.pop("gates", None)
    text = ["# Proposed by `safetyrepro pilot` (pilot plan " + document["pilot_plan_sha256"][:16] + "); nothing is frozen",
            "# until `safetyrepro plan --freeze`. The changes, each with its reason, are at the end.",
            yaml.safe_dump(data, sort_keys=False, width=100).rstrip()]
    proposed = document["proposed_limit"]
    reasons = "; ".join(f"{n}: {b['items_for_share']} needed" + ("" if b["reachable"] == "yes" else
                        f" (subset {b['subset_size']})" if b["items_for_share"] is not None else "")
                        for n, b in document["benchmarks"].items() if b["items_for_share"] is not None)
    short = document.get("short_of_target") or []
    if short:
        reasons += (f"; one limit serves every benchmark and the smallest subset caps it, so {', '.join(short)} "
                    f"stay{'s' if len(short) == 1 else ''} short of {document['target_share']:.0%}")
    if proposed != limit:
        text.append(f"# limit {limit} -> {proposed}: the items per cell at which {document['target_share']:.0%} of each "
                    f"benchmark's comparisons are resolvable at the pilot's gaps (power {document['power']:g}, family-wise "
                    f"alpha {document['alpha']:g}); {reasons}")
    else:
        text.append("# limit kept: " + (reasons or f"no benchmark can make {document['target_share']:.0%} of its comparisons "
                                        "resolvable at any item count (report.md names the few that could be)"))
    text.append(f"limit: {yaml.safe_dump(proposed).strip().removesuffix('...').strip()}")
    if gates is None:
        repeat = document["gates"].get("repeat") or {}
        reach = (repeat.get("proposed") or {}).get("reachable_threshold")
        text.append("# no gates frozen; a repeat gate a healthy instrument passes 19 times in 20 at this size: "
                    f"gates: {{repeat: {{threshold: {_num(reach, 2)}}}}}")
        return "\n".join(text) + "\n"
    text.append("gates:")
    for name in ("repeat", "replay"):
        gate = gates.get(name)
        if gate is None:
            text.append(f"  {name}: null")
            continue
        oc = (document["gates"].get(name) or {}).get("proposed")
        reach = oc["reachable_threshold"] if oc else None
        if oc and oc["pass_healthy"] < 0.8 and not (reach is not None and reach == reach and reach > 0):
            text.append(f"  # {name} kept, FLAGGED: a healthy instrument with the pilot's noise passes it only "
                        f"{oc['pass_healthy']:.0%} of the time at {proposed} items, and no positive threshold is "
                        "reachable: more items, or a gate that fits this instrument")
        elif oc and oc["pass_healthy"] < 0.8:
            new = min(gate["threshold"], oc["reachable_threshold"])
            text.append(f"  # {name}.threshold {gate['threshold']:g} -> {new:g}: a healthy instrument with the pilot's noise "
                        f"passes {gate['threshold']:g} only {oc['pass_healthy']:.0%} of the time at {proposed} items; "
                        f"{new:g} is what it reaches 19 times in 20 (a {oc['degrade']:.0%}-degraded one passes it "
                        f"{oc['pass_degraded']:.0%} at the old threshold)")
            gate = {**gate, "threshold": new}
        elif oc:
            text.append(f"  # {name} kept: passes a healthy instrument {oc['pass_healthy']:.0%} of the time at {proposed} "
                        f"items, a {oc['degrade']:.0%}-degraded one {oc['pass_degraded']:.0%}")
        else:
            text.append(f"  # {name} kept: {(document['gates'].get(name) or {}).get('note') or 'not simulated'}")
        text.append(f"  {name}: {json.dumps(gate)}")
    source = "\n".join(text) + "\n"
    build_grid(yaml.safe_load(source), source="the proposed grid")  # what is written is a grid
    return source


# ---- figures, report, folder -----------------------------------------------------------------------

def _plots(document: dict[str, Any], folder: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from .design import half_width
    from .statsplots import save_figure

    comparisons = pd.DataFrame(document["comparisons"])
    names = list(document["benchmarks"])
    made = {}
    fig, axes = plt.subplots(1, len(names), figsize=(3.4 * len(names), 3.2), squeeze=False, layout="constrained")
    for ax, name in zip(axes[0], names):
        b = document["benchmarks"][name]
        rows = comparisons[comparisons["benchmark"] == name] if len(comparisons) else comparisons
        sigma = b["sigma_median"]
        n = np.unique(np.geomspace(2, max(b["subset_size"], 3), 60).round())
        if sigma:
            ax.plot(n, [half_width(sigma, k) for k in n], label="detection limit")
        gaps = rows["gap"].dropna() if len(rows) else pd.Series(dtype=float)
        for q, style in ((0.5, "--"), (0.8, ":")):
            if len(gaps):
                ax.axhline(float(gaps.quantile(q)), color="grey", linestyle=style, label=f"gap q{int(q * 100)}")
        for key, color in (("grid", "red"), ("proposed", "green")):
            ax.axvline(b["sizes"][key], color=color, linewidth=0.8, label=f"{key} ({b['sizes'][key]})")
        ax.set_xscale("log")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("items per cell", fontsize=8)
        ax.legend(fontsize=6)
    made["detection_limit"] = save_figure(fig, folder / FIGURES[0])
    fig, axes = plt.subplots(1, len(names), figsize=(3.4 * len(names), 3.2), squeeze=False, layout="constrained")
    for ax, name in zip(axes[0], names):
        b = document["benchmarks"][name]
        rows = comparisons[comparisons["benchmark"] == name] if len(comparisons) else comparisons
        defined = rows[rows["sigma"].notna()] if len(rows) else rows  # as the table counts them
        needed = sorted(v if v is not None and v == v else math.inf for v in defined["items_needed"]) if len(defined) else []
        n = np.arange(1, b["subset_size"] + 1)
        ax.step(n, [np.mean([x <= k for x in needed]) if needed else 0 for k in n], where="post")
        ax.axhline(document["target_share"], color="grey", linestyle="--")
        for key, color in (("grid", "red"), ("proposed", "green")):
            ax.axvline(b["sizes"][key], color=color, linewidth=0.8)
        ax.set_ylim(0, 1.02)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("items per cell", fontsize=8)
        ax.set_ylabel("share resolvable", fontsize=8)
    made["items_needed"] = save_figure(fig, folder / FIGURES[1])
    return made


def _markdown(document: dict[str, Any], tables: dict[str, pd.DataFrame], plots: dict[str, str]) -> str:
    lines = ["# Pilot design report", "",
             f"Pilot plan `{document['pilot_plan_sha256'][:16]}` of the grid plan `{document['grid_plan_sha256'][:16]}`: "
             f"{document['share']:.0%} of each benchmark's configurations (seed {document['seed']}), "
             f"{document['items']} items per cell, every configuration repeated in the same window. "
             f"Sizing at power {document['power']:g} and family-wise alpha {document['alpha']:g} (Holm's strictest step "
             f"over each benchmark's comparisons), for {document['target_share']:.0%} of the comparisons; gates simulated "
             f"{document['simulations']} times by resampling the pilot's items. Rules: adapters/design.py; "
             "docs/design.md.", "", "## What the pilot predicts", ""]
    lines += [f"* {line}" for line in verdict_lines(document)]
    lines += ["", f"Proposed items per cell: **{document['proposed_limit']}** (the grid has {document['grid_limit']}); "
              "see `grid.proposed.yaml`.", "", "## Sizing per benchmark", "", tables["sizing"].astype(str).to_markdown(index=False, disable_numparse=True),
              "", f"![detection limit]({plots['detection_limit']})", "", f"![items needed]({plots['items_needed']})", "",
              "## Gate operating characteristic", "",
              tables["gates"].astype(str).to_markdown(index=False, disable_numparse=True) if len(tables["gates"]) else "No gate to simulate.", ""]
    return "\n".join(lines) + "\n"


def _html(document: dict[str, Any], tables: dict[str, pd.DataFrame], plots: dict[str, str]) -> str:
    style = ("body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;font-size:12px}"
             "td,th{padding:2px 6px;border-bottom:1px solid #ddd}img{max-width:100%}")
    parts = ["<h1>Pilot design report</h1>", "<ul>" + "".join(f"<li>{html.escape(line)}</li>"
                                                             for line in verdict_lines(document)) + "</ul>",
             f"<p>Proposed items per cell: <b>{document['proposed_limit']}</b> (the grid has {document['grid_limit']}).</p>",
             "<h2>Sizing per benchmark</h2>", tables["sizing"].to_html(index=False, border=0),
             *(f"<img src='{html.escape(name)}' alt='{html.escape(key)}'>" for key, name in plots.items()),
             "<h2>Gate operating characteristic</h2>", tables["gates"].to_html(index=False, border=0)]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>SafetyRepro pilot</title><style>{style}</style>"
            f"</head><body>{''.join(parts)}</body></html>\n")


FIGURES = ("detection_limit.png", "items_needed.png")
DESIGN = "design.json"
REPORT_FILES = (DESIGN, "grid.proposed.yaml", "report.md", "report.html", *FIGURES)
"""What :func:`write_report` writes beside ``run/`` (and ``pilot.json``)."""


def write_report(out: Path, grid: GridConfig, document: dict[str, Any]) -> list[str]:
    """Write the derived files into ``out``, each replaced whole. ``pilot.json`` is written first,
    naming them, so a kill part-way leaves only files a rerun may replace."""
    mark_pilot_folder(out, document)
    tables = design_tables(document)
    plots = _plots(document, out)
    files = {DESIGN: json.dumps(document, indent=1, default=str) + "\n",
             "grid.proposed.yaml": proposal(grid, document), "report.md": _markdown(document, tables, plots),
             "report.html": _html(document, tables, plots)}
    for name, content in files.items():
        replace_file(out / name, content.encode())
    return sorted(REPORT_FILES)

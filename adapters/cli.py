"""``safetyrepro``: run one configuration, the all-benchmark demo, data and model housekeeping.

Every bad input ends in one line on stderr (``error: ... -- fix: ...``) and exit code 2.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from .errors import ConfigError, SafetyReproError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="SafetyRepro: alignment benchmarks under explicit, hash-anchored configurations.")
data_app = typer.Typer(no_args_is_help=True, help="Find, download and verify the upstream data files.")
model_app = typer.Typer(no_args_is_help=True, help="Prepare the embedded default model.")
app.add_typer(data_app, name="data")
app.add_typer(model_app, name="model")
# Wide enough for the metrics table when output is piped (CI logs, files).
console = Console(width=None if sys.stdout.isatty() else 140)

DataDir = Annotated[Optional[Path], typer.Option("--data-dir", help="Folder laid out like the upstream snapshot "
                                                 "(default: $SAFETYREPRO_DATA_DIR, else download to the cache).")]


def _fmt(metric: dict[str, Any], name: str) -> str:
    value, low, high = metric["value"], metric["ci_low"], metric["ci_high"]
    if value != value:  # NaN: no item in that condition
        return "n/a"
    digits = 1 if name.startswith("pct_") else 3
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def metrics_table(summaries: list[dict[str, Any]], title: str) -> Table:
    """One row per metric; the run's configuration on its first row. Primary metric first."""
    table = Table(title=title, title_justify="left")
    for column in ("benchmark", "template", "scoring", "shots", "decoding", "n", "unparsed", "metric",
                   "value [95% CI]"):
        table.add_column(column, no_wrap=column in ("metric", "value [95% CI]"))
    for s in summaries:
        cfg, metrics = s["config"], s["metrics"]
        primary = s["benchmark"]["primary_metric"]
        names = [primary] + [k for k in metrics if k != primary]
        for row, name in enumerate(names):
            run_cells = (s["benchmark"]["name"], cfg["template"], cfg["scoring"], str(cfg["fewshot"]),
                         cfg["decoding"], str(s["counts"]["items"]), str(s["counts"]["unparsed"]))
            table.add_row(*(run_cells if row == 0 else ("",) * len(run_cells)), name, _fmt(metrics[name], name),
                          end_section=row == len(names) - 1)
    return table


@app.command("run")
def run_cmd(
    benchmark: Annotated[Optional[str], typer.Option(help="A registered benchmark (`safetyrepro list`).")] = None,
    template: Annotated[Optional[str], typer.Option(help="A registered template style (`safetyrepro list`).")] = None,
    scoring: Annotated[Optional[str], typer.Option(help="regex or logprob.")] = None,
    fewshot: Annotated[Optional[int], typer.Option(help="0, 3 or 5 exemplars.")] = None,
    decoding: Annotated[Optional[str], typer.Option(help="greedy, t0.3 or t0.7.")] = None,
    model: Annotated[Optional[str], typer.Option(help="`embedded`, an HF folder or id.")] = None,
    quantization: Annotated[Optional[str], typer.Option(help="none or nf4.")] = None,
    limit: Annotated[Optional[int], typer.Option(help="Evaluate the first N subset items.")] = None,
    max_new_tokens: Annotated[Optional[int], typer.Option(help="Generation budget (default 32; cot 256).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Sampling and bootstrap seed.")] = None,
    batch_size: Annotated[Optional[int], typer.Option(help="Sequences per forward pass.")] = None,
    extraction: Annotated[Optional[str], typer.Option(help="Regex readout: standard, or xstest-strmatch (XSTest's own).")] = None,
    config: Annotated[Optional[Path], typer.Option(help="YAML run config; flags override its fields.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Folder for records.jsonl and summary.json.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Run one configuration through the reference runner and print its metrics."""
    from .config import build_config, load_config_file
    from .runner import run

    data: dict[str, Any] = load_config_file(config) if config else {}
    flags = {"benchmark": benchmark, "template": template, "scoring": scoring, "fewshot": fewshot,
             "decoding": decoding, "limit": limit, "max_new_tokens": max_new_tokens, "seed": seed,
             "batch_size": batch_size, "extraction": extraction}
    data.update({k: v for k, v in flags.items() if v is not None})
    model_data = data.get("model") or {}
    if isinstance(model_data, str):
        model_data = {"name_or_path": model_data}
    if not isinstance(model_data, dict):
        raise SafetyReproError(f"`model` in {config} must be a name/path or a mapping",
                               "write `model: embedded` or `model: {name_or_path: PATH, quantization: nf4}`")
    model_data = dict(model_data)
    if model is not None:
        model_data["name_or_path"] = model
    if quantization is not None:
        model_data["quantization"] = quantization
    if model_data:
        data["model"] = model_data
    if "benchmark" not in data:
        raise SafetyReproError("no benchmark given", "pass --benchmark NAME or a --config file with `benchmark:`")
    cfg = build_config(data, source=str(config) if config else "command-line flags")
    result = run(cfg, data_dir=data_dir, out_dir=out, overwrite=overwrite, notify=_note)
    console.print(metrics_table([result.summary], f"config {cfg.config_hash()[:12]}"))
    if out:
        console.print(f"records: {out / 'records.jsonl'}\nsummary: {out / 'summary.json'}")


GridFile = Annotated[Optional[Path], typer.Argument(help="grid.yaml (models, benchmarks, factor levels, exclusions, "
                                                          "limit, seed).")]
Preset = Annotated[Optional[str], typer.Option(help="paper, core or mini instead of a grid file.")]
Models = Annotated[Optional[str], typer.Option(help="With --preset: comma-separated models (embedded, HF folders or "
                                                    "ids; NAME=PATH to name one).")]
Quantization = Annotated[str, typer.Option(help="With --preset: none or nf4 for every model.")]


def _grid(grid_file: Path | None, preset: str | None, models: str | None, quantization: str) -> Any:
    """The grid a command names: a file, or a preset with models."""
    from pydantic import ValidationError

    from .config import load_config_file
    from .grid import GridModel, build_grid
    from .grid import preset as grid_preset

    if (grid_file is None) == (preset is None):
        raise ConfigError("give either a grid file or --preset", "e.g. `safetyrepro plan grid.yaml` or "
                                                                 "`safetyrepro plan --preset mini --models embedded`")
    if grid_file is not None:
        if models is not None:
            raise ConfigError("--models applies to --preset only", "list the models in the grid file")
        return build_grid(load_config_file(grid_file), source=str(grid_file))
    chosen = []
    for n, entry in enumerate(m.strip() for m in (models or "embedded").split(",") if m.strip()):
        name, _, path = entry.partition("=") if "=" in entry else (Path(entry).name or f"m{n}", "", entry)
        chosen.append({"name": name, "path": path, "quantization": quantization})
    try:
        grid_models = [GridModel.model_validate(m) for m in chosen]
    except ValidationError as exc:
        raise ConfigError(f"--models: {exc.errors()[0]['msg']}", "use NAME=PATH with a simple NAME") from None
    return grid_preset(preset, grid_models)  # type: ignore[arg-type]


@app.command("plan")
def plan_cmd(grid_file: GridFile = None, preset: Preset = None, models: Models = None,
             quantization: Quantization = "none",
             out: Annotated[Optional[Path], typer.Option(help="Write the frozen plan (plan.json) here.")] = None,
             ) -> None:
    """Expand a configuration grid into its frozen, hashed plan of cells, before anything runs."""
    from . import atomic
    from .grid import plan

    grid = _grid(grid_file, preset, models, quantization)
    if out is not None:  # --out names the plan file: refused before anything is printed or written
        from .outfolder import check_file_target

        check_file_target(out, "plan --out", "plan.json")
    frozen = plan(grid)
    cells = frozen["cells"]
    table = Table(title=f"plan {frozen['plan_sha256'][:16]}: {len(cells)} cells", title_justify="left")
    for column in ("model", "benchmark", "cells", "computed once"):
        table.add_column(column)
    for (model, benchmark), group in itertools.groupby(cells, key=lambda c: (c["model"], c["benchmark"])):
        group = list(group)
        table.add_row(model, benchmark, str(len(group)), str(len({c["compute_key"] for c in group})))
    Console().print(table)
    print(f"plan_sha256 {frozen['plan_sha256']}")
    if out is not None:
        atomic.replace_file(out, json.dumps(frozen, indent=1) + "\n")
        print(f"wrote {out}")


@app.command("grid")
def grid_cmd(grid_file: GridFile = None, preset: Preset = None, models: Models = None,
             quantization: Quantization = "none",
             out: Annotated[Path, typer.Option(help="The run's folder (plan, request log, results).")] = Path("grid"),
             overwrite: Annotated[bool, typer.Option(help="Discard another plan's log and results in --out.")] = False,
             executor: Annotated[str, typer.Option(help="local (this machine), ray (shards as Ray tasks: --address, "
                                                        "--workers) or endpoints (OpenAI-compatible servers named in "
                                                        "--endpoints).")] = "local",
             endpoints: Annotated[Optional[Path], typer.Option(help="With --executor endpoints: a YAML mapping of grid "
                                                                    "model names to endpoint specs (url, mirrors, model, "
                                                                    "api, identity, concurrency, api_key_env, echo_logprobs).")] = None,
             address: Annotated[Optional[str], typer.Option(help="With --executor ray: the cluster to join ('auto': the "
                                                                 "one `ray start` made here); none: start a local one.")] = None,
             workers: Annotated[Optional[int], typer.Option(min=1, help="With --executor ray and no --address: task slots "
                                                                        "of the local cluster (default 1).")] = None,
             threads: Annotated[Optional[int], typer.Option(min=1, help="torch threads per computation (ray: per task, "
                                                                        "default 1; local: default torch's). Response "
                                                                        "bytes depend on it.")] = None,
             data_dir: DataDir = None) -> None:
    """Run a grid (or resume it: only if its log is a prefix of this plan), logging every request."""
    import functools

    from .gridrun import run_grid
    from .outfolder import out_path

    grid = _grid(grid_file, preset, models, quantization)
    if executor not in ("local", "endpoints", "ray"):
        raise ConfigError(f"unknown executor {executor!r}", "use --executor local, ray or endpoints")
    if (executor == "endpoints") != (endpoints is not None):
        raise ConfigError("--executor endpoints and --endpoints FILE go together",
                          "pass both (the file maps grid model names to servers), or neither")
    if executor != "ray" and (address is not None or workers is not None):
        raise ConfigError("--address and --workers are options of the Ray executor", "add --executor ray, or drop them")
    if address is not None and workers is not None:
        raise ConfigError("--workers sizes a local Ray cluster, and --address joins an existing one",
                          "drop --workers (a cluster's size is its own) or --address")
    run_on = None
    if executor == "ray":
        from .gridray import on_ray, preflight

        preflight(grid, address)
        run_on = functools.partial(on_ray, address=address, workers=workers, threads=threads or 1)
    if endpoints is not None:
        from .config import load_config_file
        from .grid import on_endpoints

        grid = on_endpoints(grid, load_config_file(endpoints), source=str(endpoints))
    target = out_path(out)
    assert target is not None
    summary = run_grid(grid, target, data_dir=data_dir, overwrite=overwrite, notify=_note,
                       threads=threads if executor != "ray" else None, executor=run_on)
    import pandas as pd

    cells = pd.read_parquet(target / "cells.parquet")
    table = Table(title=f"grid {summary['plan_sha256'][:16]}: primary metric per cell", title_justify="left")
    columns = ["model", "benchmark", "template", "scoring", "fewshot", "decoding", "metric"]
    for column in [*columns, "value [95% CI]"]:
        table.add_column(column, no_wrap=True)
    for row in cells[cells["primary"]].itertuples():
        value = "n/a" if row.value != row.value else f"{row.value:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}]"
        table.add_row(*(str(getattr(row, c)) for c in columns), value)
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    print(f"{summary['cells']} cells from {summary['requests']} unique requests "
          f"({summary.get('requests_asked_by_cells', '?')} asked by the cells); results in {target / 'cells.parquet'}")
    for name, seen in summary.get("endpoints", {}).items():
        print(f"endpoint {name}: identity {seen['identity']} {identity_verdict(seen)}; {seen['requests']} requests "
              f"({', '.join(f'{n} from {s}' for s, n in seen['servers'].items())}), {seen['retries']} retries, at most "
              f"{seen['max_in_flight']} in flight, fingerprints {', '.join(seen['system_fingerprints']) or 'none reported'}")


def identity_verdict(seen: dict[str, Any]) -> str:
    """What an endpoint's identity claim amounts to, in words (see ``endpoint_observations``)."""
    if seen["identity"] == "L1":
        return {True: "held (one fingerprint throughout)", False: "BROKEN (the fingerprint changed)",
                None: "unverified (the server reports no fingerprint)"}[seen["identity_held"]]
    return "(a name only)" if seen["identity"] == "L0" else "(the local copy's weights hash: a claim no answer confirms)"


@app.command("verify")
def verify_cmd(folder: Annotated[Path, typer.Argument(help="A grid run's folder.")],
               expect: Annotated[Optional[str], typer.Option(
                   help="The log's final hash as quoted (LOG_SHA256 from an earlier `verify`, a paper or a GRID "
                        "card): the run must end there.")] = None,
               data_dir: DataDir = None) -> None:
    """Re-check a finished grid run (read-only): plan, hash chain, every result recomputed from the
    log, manifest, gate verdicts; prints the run's anchor. Exit 0 intact, 1 problems, 2 not a run."""
    import re

    from .gridverify import check

    if expect is not None and not re.fullmatch(r"[0-9a-f]{64}", expect):
        raise ConfigError(f"--expect {expect!r} is not a SHA-256 (64 lowercase hex digits)",
                          "pass the log_sha256 line that `safetyrepro verify` printed for the run")
    if data_dir is not None:
        os.environ["SAFETYREPRO_DATA_DIR"] = str(data_dir)
    found = check(folder, expect=expect)
    problems = found.problems + found.gate_problems
    for problem in problems:
        print(f"FAIL {problem}")
    if not problems:
        print(f"OK {folder}: plan, request log, every result recomputed from the log, manifest, gate verdicts"
              + (", and the expected log hash" if expect else ""))
    # The run's anchor: quote both; `verify --expect LOG_SHA256` checks a run against it.
    print(f"plan_sha256 {found.plan_sha256 or 'unreadable'}")
    print(f"log_sha256 {found.log_sha256 or 'none (the log does not verify)'}")
    if problems:
        raise typer.Exit(1)


@app.command("stats")
def stats_cmd(
    folder: Annotated[Path, typer.Argument(help="A finished grid run's folder.")],
    out: Annotated[Optional[Path], typer.Option(help="Report folder (default: <run>/report).")] = None,
    n_resamples: Annotated[int, typer.Option(min=1, max=100_000, help="Bootstrap resamples of each paired difference.")] = 1000,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing report folder.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Rank-instability statistics of a verified grid run: flips, orderings, tau, ANOVA, noise, cards, report."""
    from .gridverify import open_verified
    from .statsreport import report_target, supported_label, write_stats

    report_target(folder, out, overwrite=overwrite)  # a bad --out is refused before the run is read
    results = open_verified(folder, data_dir=data_dir)
    document = write_stats(results, out, n_resamples=n_resamples, overwrite=overwrite)
    target = Path(document["report"])
    table = Table(title=f"rank stability per benchmark (plan {document['plan_sha256'][:16]})", title_justify="left")
    for column in ("benchmark", "tier", "pairs", "identifiable", "max rho_flip", "max rho (noise-aware)",
                   "orderings", "tau_R", "dominated by", "detection limit", "supported"):
        table.add_column(column, no_wrap=True)
    for name, b in document["benchmarks"].items():
        for tier, t in b["tiers"].items():
            flips = t["flips"] or []
            table.add_row(name, tier, str(len(flips)), str(sum(bool(f["identifiable"]) for f in flips)),
                          _num(max((f["rho_flip"] for f in flips), default=None)),
                          _num(max((f.get("rho_flip_noise_aware") or 0 for f in flips), default=None)),
                          f"{t['reachable_orderings']}/{t['possible_orderings']}", _num(t["tau"]["tau_all_pairs"]),
                          str(t["dominated_by"] or "n/a"), _num(t["detection_limit"]), supported_label(document["gates"]))
        for tier, why in b["skipped"].items():
            table.add_row(name, tier, "0", "-", "-", "-", "-", "-", "-", "-", f"not analysed: {why}")
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    print(f"instrument gates: {supported_label(document['gates'])} -- {document['gates']['note']}")
    print(f"report: {target / 'report.html'} (and report.md, stats.json, cards/)")


def _num(value: Any) -> str:
    return "n/a" if value is None or value != value else f"{value:.3g}"


@app.command("card")
def card_cmd(
    cell: Annotated[Path, typer.Argument(help="A cell folder of a finished grid run (<run>/cells/<cell_id>).")],
    format: Annotated[str, typer.Option("--format", help="md or yaml.")] = "md",
    data_dir: DataDir = None,
) -> None:
    """The GRID card of one result: the configuration that produced its scores."""
    from .card import card, to_markdown, to_yaml
    from .gridverify import open_verified

    if format not in ("md", "yaml"):
        raise ConfigError(f"unknown card format {format!r}", "use --format md or --format yaml")
    cell = cell.resolve() if cell.exists() else cell
    if not (cell / "summary.json").is_file() or cell.parent.name != "cells":
        raise ConfigError(f"{cell} is not a grid cell folder", "pass <run>/cells/<cell_id> of a finished grid run")
    results = open_verified(cell.parent.parent, data_dir=data_dir)
    grid_card = card(results, cell.name)
    print(to_markdown(grid_card) if format == "md" else to_yaml(grid_card), end="")


@app.command("gate")
def gate_cmd(
    folder: Annotated[Path, typer.Argument(help="A finished grid run's folder whose grid froze `gates:`.")],
    replay: Annotated[bool, typer.Option(help="Replay the logged requests now (byte for byte) for the replay gate.")] = False,
    overwrite: Annotated[bool, typer.Option(help="With --replay: replay again; the earlier replay is replaced once the "
                                                 "new one is complete.")] = False,
    concurrency: Annotated[Optional[int], typer.Option(
        min=1, max=64, help="With --replay: endpoint requests in flight during the replay (default: the run's).")] = None,
    data_dir: DataDir = None,
) -> None:
    """The instrument's stability gates: repeat (in the run) and replay (later); PASS/FAIL with the numbers."""
    from .gates import GATES_FOLDER, evaluate, run_replay
    from .gridverify import open_verified

    results = open_verified(folder, data_dir=data_dir, gate_verdict=False)  # the verdict is what this writes
    if results.prepared.grid.gates is None:
        evaluate(results)  # the one clear error
    if concurrency is not None and not replay:
        raise ConfigError("--concurrency sets the replay's requests in flight", "add --replay, or leave --concurrency out")
    if concurrency is not None and not any(m.endpoint for m in results.prepared.grid.models):
        raise ConfigError("--concurrency applies to endpoint models, and this grid has none", "leave --concurrency out")
    if replay:
        if results.prepared.grid.gates.replay is None:  # type: ignore[union-attr]
            raise ConfigError(f"{folder} froze no replay gate", "drop --replay (or freeze `gates: {replay: {}}` in a new plan)")
        run_replay(results, notify=_note, concurrency=concurrency, overwrite=overwrite)
    document = evaluate(results)
    table = Table(title=f"instrument gates (plan {document['plan_sha256'][:16]})", title_justify="left")
    for column in ("gate", "status", "threshold", "numbers"):
        table.add_column(column)
    for name, gate in document["gates"].items():
        if gate is None:
            continue
        numbers = {k: v for k, v in gate.items()
                   if k not in ("status", "threshold", "rankings", "note", "endpoints", "borda_across_repeats")
                   and v is not None}
        text = ", ".join(f"{k} {_num(v) if isinstance(v, float) else v}" for k, v in numbers.items())
        table.add_row(name, gate["status"], f"{gate['threshold']:g}", (text + ("; " + gate["note"] if gate.get("note") else "")))
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    for benchmark, aggregate in ((document["gates"].get("repeat") or {}).get("borda_across_repeats") or {}).items():
        order = lambda rows: " > ".join(r["model"] for r in rows)  # noqa: E731 - a one-line format
        print(f"Borda {benchmark}: {order(aggregate['first'])} (first measurements), {order(aggregate['with_repeats'])} "
              f"(with the repeats){'' if aggregate['same_order'] else ' -- the aggregate order changed'}")
    for name, seen in ((document["gates"].get("replay") or {}).get("endpoints") or {}).items():
        run, again = seen["run"] or {}, seen["replay"]
        print(f"endpoint {name}: fingerprints {run.get('system_fingerprints') or 'none reported'} in the run, "
              f"{again['system_fingerprints'] or 'none reported'} in the replay (identity {again['identity']} over both: "
              f"{identity_verdict({**again, 'identity_held': seen['identity_held']})}); in flight at most "
              f"{run.get('max_in_flight')} then, {again['max_in_flight']} now (concurrency {seen['concurrency']}); "
              f"retries {again['retries']}")
    for benchmark, floor in document["noise_floor"].items():
        print(f"noise floor {benchmark}: median {_num(floor['noise_median'])}, p95 {_num(floor['noise_p95'])} "
              f"(detection limit); {_num(floor['share_gaps_below_detection'])} of {floor['model_gaps']} model gaps "
              "at or below it")
    print(f"wrote {folder / GATES_FOLDER / 'gates.json'}")
    if not document["supported"]:
        print("FAIL: statistics of this run are not supported by the instrument")
        raise typer.Exit(1)


@app.command("demo")
def demo_cmd(
    limit: Annotated[int, typer.Option(help="Items per benchmark.")] = 8,
    template: Annotated[str, typer.Option(help="Template for every run.")] = "minimal",
    out: Annotated[Optional[Path], typer.Option(help="Folder for one sub-folder per run.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace existing run folders.")] = False,
    data_dir: DataDir = None,
) -> None:
    """The main job: a small run of every benchmark, both scoring paths, on the embedded model."""
    from . import _registry
    from .config import build_config
    from .outfolder import check_form, check_replaceable, is_run_output
    from .runner import run

    names = list(_registry.all_benchmarks())
    plan = [(name, scoring) for name in names for scoring in ("logprob", "regex")]
    if out:  # every run's folder checked before the first run writes anything
        for name, scoring in plan:
            folder = out / f"{name}_{template}_{scoring}"
            check_form(folder)
            check_replaceable(folder, overwrite, is_ours=is_run_output, what="`safetyrepro run` output")
    summaries = []
    for name, scoring in plan:
        cfg = build_config({"benchmark": name, "template": template, "scoring": scoring, "limit": limit})
        result = run(cfg, data_dir=data_dir, out_dir=(out / f"{name}_{template}_{scoring}") if out else None,
                     overwrite=overwrite)
        summaries.append(result.summary)
    model = summaries[0]["model"]
    console.print(metrics_table(summaries, f"SafetyRepro demo: {model['name_or_path']} "
                                f"({model['resolved_path']}), {limit} items per benchmark"))


@app.command("list")
def list_cmd() -> None:
    """Registered benchmarks (with their metrics), template styles and scoring paths."""
    from . import _registry

    for bench in _registry.all_benchmarks().values():
        metrics = ", ".join(f"{s.name}{' (primary)' if s.primary else ''}" for s in bench.all_metric_specs())
        console.print(f"benchmark {bench.name}: {bench.title}; metrics: {metrics}")
    for style in _registry.all_styles().values():
        console.print(f"template {style.name}: {style.description or '(no description)'}")
    console.print(f"scoring: {', '.join(_registry.all_scorers())}")


@app.command("subsets")
def subsets_cmd(
    write: Annotated[bool, typer.Option(help="Rewrite the committed manifests (maintainers only).")] = False,
    data_dir: DataDir = None,
) -> None:
    """Rebuild every subset from the data and compare it with the committed manifest."""
    from . import _registry
    from .datafiles import resolve_data_dir
    from .subsets import build_manifest, load_manifest, manifest_path, write_manifest

    source = resolve_data_dir(data_dir)
    bad = []
    for bench in _registry.all_benchmarks().values():
        built = build_manifest(bench, bench.load(source))
        committed = load_manifest(bench)
        status = "ok" if committed and committed.sha256 == built.sha256 else "DIFFERS"
        if write:
            write_manifest(built, manifest_path(bench))
            status = "written"
        elif status != "ok":
            bad.append(bench.name)
        console.print(f"{bench.name}: {len(built.eval_ids)} items, {len(built.fewshot_ids)} exemplars, "
                      f"sha256 {built.sha256[:16]} {status}")
    if bad:
        raise SafetyReproError(f"subsets differ from the committed manifests: {bad}",
                               "use the pinned upstream files; manifests change only by a reviewed commit")


@data_app.command("fetch")
def data_fetch(benchmark: Annotated[Optional[list[str]], typer.Argument(help="Benchmarks (default: all).")] = None) -> None:
    """Download the pinned upstream files of every registered benchmark into the cache and verify their SHA-256."""
    from . import _registry
    from .datafiles import download, resolve_data_dir

    chosen = [_registry.get_benchmark(n) for n in benchmark] if benchmark else list(_registry.all_benchmarks().values())
    source = resolve_data_dir(None) if not os.environ.get("SAFETYREPRO_DATA_DIR") else None
    if source is None:
        raise SafetyReproError("SAFETYREPRO_DATA_DIR is set, so nothing is downloaded",
                               "unset it to fetch into the cache")
    for bench in chosen:
        download(bench.files, source)
        console.print(f"{bench.name}: verified in {source.root}")


@data_app.command("verify")
def data_verify(data_dir: DataDir = None) -> None:
    """Check every registered benchmark's pinned files in the data folder against their SHA-256."""
    from . import _registry
    from .datafiles import resolve_data_dir

    source = resolve_data_dir(data_dir)
    for bench in _registry.all_benchmarks().values():
        for f in bench.files:
            source.verify(f)
        console.print(f"{bench.name}: {len(bench.files)} file(s) ok")


@model_app.command("prepare")
def model_prepare(
    nf4: Annotated[bool, typer.Option(help="Also write a pre-quantised NF4 copy and print its folder.")] = False,
) -> None:
    """Convert the embedded GGUF into the cache (once) and print the folder."""
    from .models.embedded import embedded_model_dir, nf4_checkpoint

    print(str(nf4_checkpoint(embedded_model_dir()) if nf4 else embedded_model_dir()))


def _add_binding_commands() -> None:
    """Harness bindings add their command groups through the ``safetyrepro.cli`` entry points."""
    from importlib.metadata import entry_points

    present = {group.name for group in app.registered_groups}
    for ep in entry_points(group="safetyrepro.cli"):
        if ep.name not in present:
            app.add_typer(ep.load(), name=ep.name)


def _note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def _usage_error(exc: BaseException) -> str | None:
    """The one-line message of a command-line usage error, from typer's bundled click or click."""
    kinds: tuple[type, ...] = ()
    try:  # typer >= 0.22 bundles its own click; older ones use the click package
        from typer._click import exceptions as typer_click

        kinds += (typer_click.ClickException,)
    except ImportError:  # pragma: no cover - depends on the typer version
        pass
    try:
        import click

        kinds += (click.ClickException,)
    except ImportError:  # pragma: no cover - click is optional beside typer
        pass
    if not isinstance(exc, kinds):
        return None
    message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
    context = getattr(exc, "ctx", None)
    command = context.command_path if context is not None else "safetyrepro"
    return f"error: {message} -- fix: see `{command} --help`"


def main(argv: list[str] | None = None) -> int:
    """Exit 0 on success, 2 on any bad input (one `error: ... -- fix: ...` line, no traceback)."""
    return run_app(app, argv, add_bindings=True)


def run_app(typer_app: typer.Typer, argv: list[str] | None = None, *, add_bindings: bool = False) -> int:
    """Run a typer app with SafetyRepro's exit discipline (0 ok, 2 bad input as one line, 130
    aborted); other console scripts of the package (``crosspkg``) use it too."""
    try:
        if add_bindings:
            _add_binding_commands()
        status = typer_app(args=argv, standalone_mode=False)
        # Without standalone mode click returns typer.Exit's code instead of raising it.
        if isinstance(status, int) and status:
            return status
    except SafetyReproError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        print("aborted", file=sys.stderr)
        return 130
    except OSError as exc:
        # A file the user named that the OS refuses (permissions, disk full, odd paths).
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where} -- fix: check that path, its permissions and free space",
              file=sys.stderr)
        return 2
    except Exception as exc:
        line = _usage_error(exc)
        if line is None:
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # type: ignore[attr-defined]
        else:
            print(line, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The grid's commands: ``plan``, ``grid``, ``verify``, ``stats``, ``card``, ``gate``.

Each is a plain function registered on the ``safetyrepro`` app by :func:`register`; like every
command, a bad input is one ``error: ... -- fix: ...`` line and exit code 2.
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

from .cli_common import DataDir, note
from .errors import ConfigError

__all__ = ["GridFile", "Models", "Preset", "Quantization", "grid_from_args", "register"]


GridFile = Annotated[Optional[Path], typer.Argument(help="grid.yaml (models, benchmarks, factor levels, exclusions, "
                                                          "limit, seed).")]
Preset = Annotated[Optional[str], typer.Option(help="paper, core or mini instead of a grid file.")]
Models = Annotated[Optional[str], typer.Option(help="With --preset: comma-separated models (embedded, HF folders or "
                                                    "ids; NAME=PATH to name one).")]
Quantization = Annotated[str, typer.Option(help="With --preset: none or nf4 for every model.")]


def grid_from_args(grid_file: Path | None, preset: str | None, models: str | None, quantization: str) -> Any:
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


def with_endpoints(grid: Any, endpoints: Path | None) -> Any:
    """The grid with the models an ``--endpoints`` file names answered by those servers (another plan)."""
    if endpoints is None:
        return grid
    from .config import load_config_file
    from .grid import on_endpoints

    return on_endpoints(grid, load_config_file(endpoints), source=str(endpoints))


def plan_cmd(grid_file: GridFile = None, preset: Preset = None, models: Models = None,
             quantization: Quantization = "none",
             out: Annotated[Optional[Path], typer.Option(help="Write the frozen plan (plan.json) here.")] = None,
             freeze: Annotated[Optional[Path], typer.Option(help="Preregister: write the record (plan, grid file, "
                                                                 "pilot, versions, UTC; hash-chained) into this new "
                                                                 "folder, for `grid --prereg`.")] = None,
             pilot: Annotated[Optional[Path], typer.Option(help="With --freeze: a `safetyrepro pilot` folder whose "
                                                                "design goes into the record.")] = None,
             endpoints: Annotated[Optional[Path], typer.Option(help="The models answered by OpenAI-compatible servers, "
                                                                    "as `grid --endpoints` gives them (the same plan).")] = None,
             ) -> None:
    """Expand a configuration grid into its frozen, hashed plan of cells, before anything runs."""
    from . import atomic
    from .grid import plan

    grid = grid_from_args(grid_file, preset, models, quantization)
    if out is not None:  # --out names the plan file: refused before anything is printed or written
        from .outfolder import check_file_target

        check_file_target(out, "plan --out", "plan.json")
    if pilot is not None and freeze is None:
        raise ConfigError("--pilot goes into a preregistration record", "add --freeze DIR, or leave --pilot out")
    if pilot is not None:
        from .pilotreport import read_design

        design = read_design(pilot)
    else:
        design = None
    if freeze is not None:  # the record's folder: refused before anything is written
        from .outfolder import check_form, out_path

        freeze = out_path(freeze, "--freeze")
        assert freeze is not None
        check_form(freeze, "--freeze")
        if freeze.is_dir() and any(freeze.iterdir()):
            raise ConfigError(f"--freeze {freeze} is not empty",
                              "choose a new folder: a preregistration is written once and never replaced")
    grid = with_endpoints(grid, endpoints)
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
    if freeze is not None:
        from .prereg import PREREG, freeze as write_record

        target = freeze
        text = grid_file.read_text(encoding="utf-8") if grid_file is not None else grid.canonical_json()
        record = write_record(target, frozen, grid_source=str(grid_file) if grid_file else f"preset {preset}",
                              grid_text=text, pilot=design)
        print(f"preregistered: {target / PREREG}, record_sha256 {record}")
        print("quote record_sha256 somewhere others keep (a registry, a commit) before running; then "
              f"`safetyrepro grid ... --prereg {target}`")


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
             prereg: Annotated[Optional[Path], typer.Option(help="The folder of `plan --freeze`: refuse a plan that "
                                                                "differs, and carry the record in the run.")] = None,
             data_dir: DataDir = None) -> None:
    """Run a grid (or resume it: only if its log is a prefix of this plan), logging every request."""
    import functools

    from .gridrun import run_grid
    from .outfolder import out_path

    grid = grid_from_args(grid_file, preset, models, quantization)
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
    grid = with_endpoints(grid, endpoints)
    record = None
    if prereg is not None:
        from .grid import plan
        from .prereg import adopt

        record = adopt(prereg, plan(grid))
    target = out_path(out)
    assert target is not None
    summary = run_grid(grid, target, data_dir=data_dir, overwrite=overwrite, notify=note,
                       threads=threads if executor != "ray" else None, executor=run_on, prereg=record)
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
    from .prereg import PREREG, read

    if (folder / PREREG).is_file() and not any(PREREG in p for p in problems):
        record = read(folder / PREREG)  # compare with the record_sha256 quoted before the run
        print(f"prereg_record_sha256 {record['record_sha256']} (frozen at {record['utc']})")
    if problems:
        raise typer.Exit(1)


def stats_cmd(
    folder: Annotated[Path, typer.Argument(help="A finished grid run's folder.")],
    out: Annotated[Optional[Path], typer.Option(help="Report folder (default: <run>/report).")] = None,
    n_resamples: Annotated[int, typer.Option(min=1, max=100_000, help="Bootstrap resamples of each paired difference (and the least random swaps of a Monte Carlo test).")] = 1000,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing report folder.")] = False,
    multiplicity: Annotated[str, typer.Option(help="Multiplicity control over a benchmark's comparisons: holm "
                                                   "(family-wise error) or bh (Benjamini-Hochberg, false discovery rate).")] = "holm",
    data_dir: DataDir = None,
) -> None:
    """Rank-instability statistics of a verified grid run: flips, orderings, tau, attribution, tests, cards, report."""
    from .gridverify import open_verified
    from .inference import MULTIPLICITY
    from .prereg import describe as describe_prereg
    from .statsreport import dominated_text, report_target, supported_label, write_stats

    if multiplicity not in MULTIPLICITY:
        raise ConfigError(f"unknown multiplicity control {multiplicity!r}", "use --multiplicity holm or --multiplicity bh")
    report_target(folder, out, overwrite=overwrite)  # a bad --out is refused before the run is read
    results = open_verified(folder, data_dir=data_dir)
    document = write_stats(results, out, n_resamples=n_resamples, overwrite=overwrite,
                           multiplicity=multiplicity)  # type: ignore[arg-type]
    target = Path(document["report"])
    table = Table(title=f"rank stability per benchmark (plan {document['plan_sha256'][:16]})", title_justify="left")
    for column in ("benchmark", "tier", "configs", "pairs", "no reversal", "supported order", "max rho_flip",
                   "max rho (resolved)", "orderings", "tau_R", "dominated by", "detection limit", "gates"):
        table.add_column(column, no_wrap=True)
    for name, b in document["benchmarks"].items():
        for tier, t in b["tiers"].items():
            flips = t["flips"] or []
            table.add_row(name, tier, f"{t['n_configs']} ({t['n_configs_raw']})", str(len(flips)),
                          str(sum(bool(f["no_reversal"]) for f in flips)), str(sum(bool(f["supported"]) for f in flips)),
                          num(max((f["rho_flip"] for f in flips), default=None)),
                          num(max((f.get("rho_flip_noise_aware") or 0 for f in flips), default=None)),
                          f"{t['reachable_orderings']}/{t['possible_orderings']} ({t['distinct_orderings']})",
                          num(t["tau"]["tau_all_pairs"]), dominated_text(t["dominated_by"]), num(t["detection_limit"]),
                          supported_label(document["gates"]))
        for tier, why in b["skipped"].items():
            table.add_row(name, tier, "0", "0", "-", "-", "-", "-", "-", "-", "-", "-", f"not analysed: {why}")
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    print(f"instrument gates: {supported_label(document['gates'])} -- {document['gates']['note']}")
    print(f"preregistration: {describe_prereg(document['preregistration'])}")
    print(f"report: {target / 'report.html'} (and report.md, stats.json, cards/)")


def num(value: Any) -> str:
    return "n/a" if value is None or value != value else f"{value:.3g}"


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
        run_replay(results, notify=note, concurrency=concurrency, overwrite=overwrite)
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
        text = ", ".join(f"{k} {num(v) if isinstance(v, float) else v}" for k, v in numbers.items())
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
        print(f"noise floor {benchmark}: median {num(floor['noise_median'])}, p95 {num(floor['noise_p95'])} "
              f"(detection limit); {num(floor['share_gaps_below_detection'])} of {floor['model_gaps']} model gaps "
              "at or below it")
    print(f"wrote {folder / GATES_FOLDER / 'gates.json'}")
    if not document["supported"]:
        print("FAIL: statistics of this run are not supported by the instrument")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the grid's commands to ``app``."""
    app.command("plan")(plan_cmd)
    app.command("grid")(grid_cmd)
    app.command("verify")(verify_cmd)
    app.command("stats")(stats_cmd)
    app.command("card")(card_cmd)
    app.command("gate")(gate_cmd)

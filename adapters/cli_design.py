"""``safetyrepro pilot``: design a study before running it (:mod:`.pilot`, :mod:`.design`).

A bad input is one ``error: ... -- fix: ...`` line and exit code 2, checked before anything runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from .cli_common import DataDir, note
from .cli_grid import GridFile, Models, Preset, Quantization, grid_from_args
from .errors import ConfigError

__all__ = ["register"]


def pilot_cmd(
    grid_file: GridFile = None, preset: Preset = None, models: Models = None, quantization: Quantization = "none",
    out: Annotated[Path, typer.Option(help="The pilot's folder: run/ (the pilot run), the design report and "
                                           "grid.proposed.yaml.")] = Path("pilot"),
    share: Annotated[float, typer.Option(min=0.0, max=1.0, help="Share of each benchmark's distinct configurations "
                                                                "the pilot runs (at least 2).")] = 0.25,
    items: Annotated[int, typer.Option(min=4, max=1000, help="Items per pilot cell.")] = 10,
    seed: Annotated[Optional[int], typer.Option(min=0, help="Seed of the configuration sample and the gate "
                                                            "simulations (default: the grid's).")] = None,
    target_share: Annotated[float, typer.Option(min=0.01, max=1.0, help="Share of comparisons the proposed size "
                                                                        "must make resolvable.")] = 0.8,
    power: Annotated[float, typer.Option(min=0.5, max=0.99, help="Power each of those comparisons is sized for.")] = 0.8,
    degrade: Annotated[float, typer.Option(min=0.0, max=1.0, help="The degraded instrument of the gate simulation: "
                                                                  "this share of items answered at random.")] = 0.2,
    simulations: Annotated[int, typer.Option(min=20, max=10_000, help="Gate simulations.")] = 200,
    replay: Annotated[Optional[bool], typer.Option("--replay/--no-replay", help="Replay the pilot to simulate the "
                                                   "replay gate (default: where the grid froze one and a model is an "
                                                   "endpoint).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace another pilot's run in --out.")] = False,
    threads: Annotated[Optional[int], typer.Option(min=1, help="torch threads (default torch's).")] = None,
    data_dir: DataDir = None,
) -> None:
    """A small seeded pilot of a grid, then the design: items per cell, gate reachability, a proposal."""
    from .outfolder import check_form, out_path
    from .pilot import design, pilot_grid, replays, run_pilot
    from .pilotreport import RUN, check_pilot_folder, design_tables, mark_pilot_folder, verdict_lines, write_report

    grid = grid_from_args(grid_file, preset, models, quantization)
    if share <= 0:
        raise ConfigError(f"--share {share} leaves no configuration", "pass a share in (0, 1], e.g. 0.25")
    target = out_path(out)
    assert target is not None
    check_form(target)
    check_pilot_folder(target)
    seed = grid.seed if seed is None else seed
    replay = replays(grid, replay)
    pilot_grid(grid, share=share, items=items, seed=seed, replay=replay)  # a pilot it cannot make: refused first
    mark_pilot_folder(target)  # before the run: run/ is then provably the pilot's
    results = run_pilot(grid, target / RUN, share=share, items=items, seed=seed, data_dir=data_dir,
                        overwrite=overwrite, notify=note, threads=threads, replay=replay)
    document = design(results, grid, share=share, items=items, seed=seed, target_share=target_share, power=power,
                      degrade=degrade, simulations=simulations)
    write_report(target, grid, document)
    tables = design_tables(document)
    console = Console(width=None if sys.stdout.isatty() else 160)
    for key, title in (("sizing", "sizing per benchmark"), ("gates", "gate operating characteristic")):
        if len(tables[key]):
            table = Table(title=f"pilot {document['pilot_plan_sha256'][:16]}: {title}", title_justify="left")
            for column in tables[key].columns:
                table.add_column(str(column))
            for row in tables[key].astype(str).itertuples(index=False):
                table.add_row(*row)
            console.print(table)
    for line in verdict_lines(document):
        print(line)
    print(f"proposed items per cell: {document['proposed_limit']} (the grid has {document['grid_limit']}); "
          f"report: {target / 'report.html'} (and report.md, design.json); proposal: {target / 'grid.proposed.yaml'}")


def register(app: typer.Typer) -> None:
    """Add the design commands to ``app``."""
    app.command("pilot")(pilot_cmd)

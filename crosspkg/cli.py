"""``crosspkg compare anchor.yaml --out DIR`` (also ``safetyrepro crosspkg compare``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:  # (imported when a comparison runs: every `safetyrepro` command loads this module)
    from .compare import Comparison

app = typer.Typer(no_args_is_help=True, help="Cross-harness comparison of one anchor configuration.")


@app.callback()
def _group() -> None:
    """Run one nominal configuration through lm-eval, Inspect AI and HELM and explain every difference."""


@app.command("compare")
def compare(
    anchor_file: Annotated[Path, typer.Argument(help="The anchor YAML (see docs/crosspkg.md).")],
    out: Annotated[str, typer.Option(help="Folder for the report, the harnesses' outputs and logs.")] = "compare",
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out.")] = False,
) -> None:
    """Exit 0 when every harness agrees item by item (harmonized mode), 1 when one does not, 2 on bad input."""
    import shutil

    from safetyrepro.adapters import atomic, outfolder

    from .anchor import check_inputs, load_anchor
    from .compare import run_comparison
    from .report import is_comparison, write_report

    # Every input before anything is printed or written: the anchor, its model and data, --out.
    anchor = load_anchor(anchor_file)
    check_inputs(anchor)
    target = outfolder.out_path(out)
    assert target is not None
    outfolder.check_form(target)
    outfolder.check_replaceable(target, overwrite, is_ours=is_comparison, what="crosspkg comparison")
    for note in outfolder.prepare(target):
        print(f"note: {note}", file=sys.stderr)
    started = time.time()

    def notify(message: str) -> None:
        print(f"[{time.time() - started:6.0f}s] {message}", file=sys.stderr, flush=True)

    staging = atomic.stage_dir(target)
    comparison = run_comparison(anchor, staging, notify)  # on failure the staging folder keeps the logs
    paths = write_report(comparison, staging)
    atomic.sync_tree(staging)
    outfolder.publish(staging, target, is_ours=is_comparison, what="crosspkg comparison")
    if staging.exists():
        shutil.rmtree(staging, ignore_errors=True)
    from .report import verdict

    print(f"{verdict(comparison)} Report: {target / paths[0].name}")
    status = exit_status(comparison)
    if status:
        raise typer.Exit(status)


def exit_status(comparison: Comparison) -> int:
    """1 when harmonized runs disagree on an item (so ``crosspkg compare`` can gate CI), else 0."""
    return 1 if comparison.findings() else 0


def main(argv: list[str] | None = None) -> int:
    from safetyrepro.adapters.cli import run_app

    return run_app(app, argv)


if __name__ == "__main__":
    sys.exit(main())

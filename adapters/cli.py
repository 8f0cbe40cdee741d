"""``safetyrepro``: run one configuration, the grid's commands (:mod:`.cli_grid`), the
all-benchmark demo, data and model housekeeping.

Every bad input ends in one line on stderr (``error: ... -- fix: ...``) and exit code 2.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from . import cli_design, cli_grid
from .cli_common import DataDir, note
from .errors import SafetyReproError
from .metrics import as_number

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="SafetyRepro: alignment benchmarks under explicit, hash-anchored configurations.")
data_app = typer.Typer(no_args_is_help=True, help="Find, download and verify the upstream data files.")
model_app = typer.Typer(no_args_is_help=True, help="Prepare the embedded default model.")
app.add_typer(data_app, name="data")
app.add_typer(model_app, name="model")
# Wide enough for the metrics table when output is piped (CI logs, files).
console = Console(width=None if sys.stdout.isatty() else 140)



def _fmt(metric: dict[str, Any], name: str) -> str:
    value, low, high = (as_number(metric[k]) for k in ("value", "ci_low", "ci_high"))
    if value != value:  # NaN (null in the files): no item in that condition, or none parsed
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
    scoring: Annotated[Optional[str], typer.Option(help="A registered scoring path: regex, logprob, symmetric, cyclic or a "
                                                        "plugin's (`safetyrepro list`).")] = None,
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
    """Run one configuration (a one-cell plan on the grid's engine, its requests logged) and print its metrics."""
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
    result = run(cfg, data_dir=data_dir, out_dir=out, overwrite=overwrite, notify=note)
    console.print(metrics_table([result.summary], f"config {cfg.config_hash()[:12]}"))
    if out:
        console.print(f"records: {out / 'records.jsonl'}\nsummary: {out / 'summary.json'}")


cli_grid.register(app)  # plan, grid, verify, stats, card, gate
cli_design.register(app)  # pilot


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

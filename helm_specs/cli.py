"""``safetyrepro helm ...``: the HELM binding's commands, plugged into the core CLI through the
``safetyrepro.cli`` entry-point group (the core never imports a binding)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(no_args_is_help=True, help="The HELM binding.")


@app.command("prod-env")
def prod_env(
    out: Annotated[Path, typer.Option(help="The folder to pass to helm-run --local-path.")] = Path("prod_env"),
    model: Annotated[Optional[list[str]], typer.Option(
        help="`embedded` or a local HF chat-model folder; repeat for several.")] = None,
    quantization: Annotated[str, typer.Option(help="none or nf4 (the core's pre-quantised checkpoint).")] = "none",
    name: Annotated[Optional[str], typer.Option(
        help="HELM model name (organization/model); only with a single --model.")] = None,
) -> None:
    """Write model_metadata.yaml, tokenizer_configs.yaml and model_deployments.yaml for offline
    HELM runs of SafetyRepro models (merged into existing files: same-name entries are replaced)."""
    from safetyrepro.adapters import ConfigError, build_config

    from .deployment import deployment_for, write_prod_env
    from .schema import SCHEMA_FILE, write_schema

    models = model or ["embedded"]
    if name is not None and len(models) > 1:
        raise ConfigError("--name names one model, but several --model were given",
                          "run prod-env once per model to name each")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a folder", "pass a folder for the prod_env files")
    deployments = []
    for entry in models:
        spec = build_config({"benchmark": "bbq", "model": {"name_or_path": entry, "quantization": quantization}},
                            source="helm prod-env options").model
        deployments.append(deployment_for(spec, name))
    for path in write_prod_env(out, deployments):
        print(f"wrote {path}")
    print(f"wrote {write_schema(out / SCHEMA_FILE)}  (pass it to helm-summarize --schema-path)")
    for d in deployments:
        print(f"model={d.name}  (weights {d.weights})")


@app.command("schema")
def schema(out: Annotated[Path, typer.Option(help="Where to write the schema YAML.")] = Path("schema_safetyrepro.yaml"),
           ) -> None:
    """Write the helm-summarize schema of every registered benchmark's metrics (plugins' included)."""
    from .schema import write_schema

    print(f"wrote {write_schema(out)}")

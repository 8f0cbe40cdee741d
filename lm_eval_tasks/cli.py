"""``safetyrepro lm-eval ...``: the binding's commands, plugged into the core CLI through the
``safetyrepro.cli`` entry-point group (the core never imports a binding)."""

from __future__ import annotations

import shlex
from typing import Annotated, Optional

import typer

app = typer.Typer(no_args_is_help=True, help="The lm-evaluation-harness binding.")


@app.command("path")
def lm_eval_path() -> None:
    """Print the folder to pass to `lm_eval run --include_path` (plugins' tasks included)."""
    from . import include_path

    print(str(include_path()))


@app.command("command")
def lm_eval_command(
    tasks: Annotated[str, typer.Option(help="Task names or globs, e.g. 'safetyrepro_bbq_*'.")],
    fewshot: Annotated[int, typer.Option(help="0, 3 or 5.")] = 0,
    decoding: Annotated[str, typer.Option(help="greedy, t0.3 or t0.7.")] = "greedy",
    quantization: Annotated[str, typer.Option(help="none or nf4.")] = "none",
    limit: Annotated[Optional[int], typer.Option(help="Items per task.")] = None,
) -> None:
    """Print the lm_eval command that runs these tasks like `safetyrepro run` would."""
    from safetyrepro.adapters import build_config
    from safetyrepro.adapters.models.hf import weights_path

    from . import include_path

    cfg = build_config({"benchmark": "bbq", "fewshot": fewshot, "decoding": decoding, "limit": limit,
                        "model": {"quantization": quantization}}, source="lm-eval command options")
    parts = ["lm_eval", "run", "--model", "hf", "--model_args", f"pretrained={weights_path(cfg.model)},dtype=float32",
             "--include_path", str(include_path()), "--tasks", tasks, "--num_fewshot", str(cfg.fewshot),
             "--apply_chat_template", "--log_samples", "--output_path", "lm_eval_out"]
    if cfg.temperature > 0:
        parts += ["--gen_kwargs", f"do_sample=True,temperature={cfg.temperature},top_k=0,top_p=1.0"]
    if cfg.limit:
        parts += ["--limit", str(cfg.limit)]
    print(shlex.join(parts))

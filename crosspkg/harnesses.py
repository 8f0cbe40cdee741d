"""Running the anchor through each harness's real command line, and reading back what it wrote.

Each harness runs once for all benchmarks (one process, the model loaded once), in
``<out>/<harness>/`` with paths relative to it; its command, exit status and output are kept there
so a reader can rerun or inspect it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safetyrepro.adapters import ConfigError

from .agreement import HarnessItem
from .anchor import Anchor
from .readers import find_lm_eval_samples, inspect_logs, read_helm_run, read_inspect_log, read_lm_eval_samples

BIN = Path(sys.executable).parent
NATIVE_SUFFIX = "-native"


@dataclass
class HarnessRun:
    """One harness's run of the anchor: per benchmark, its items by id."""

    harness: str
    mode: str
    command: list[str]
    seconds: float = 0.0
    items: dict[str, dict[str, HarnessItem]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    """Benchmarks the harness could not run, with the reason (shown in the report)."""
    reported: dict[str, dict[str, float]] = field(default_factory=dict)
    """Metrics as the harness itself reported them, per benchmark."""
    ladder: dict[str, dict[str, dict[str, HarnessItem]]] = field(default_factory=dict)
    """Native runs: the factor ladder's intermediate steps, per benchmark (``native.LADDER_STEPS``)."""
    notes: dict[str, str] = field(default_factory=dict)
    """How a benchmark was run where the harness's own defaults needed data (e.g. the rows HELM's
    in-context examples came from), per benchmark (shown in the report)."""
    qualifiers: dict[str, str] = field(default_factory=dict)
    """A label every score of a benchmark carries where the run is not wholly the harness's own
    (e.g. a substituted judge), per benchmark."""
    versions: dict[str, str] = field(default_factory=dict)
    """Package versions of a run made outside the main environment (inspect_evals' own)."""

    @property
    def label(self) -> str:
        return self.harness + (NATIVE_SUFFIX if self.mode == "native" else "")


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "INSPECT_LOG_LEVEL": "warning"}


def logged_command(command: list[str], folder: Path, cwd: Path | None = None,
                   env: dict[str, str] | None = None) -> tuple[int, float]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "command.txt").write_text(shlex.join(command) + "\n")
    started = time.time()
    with open(folder / "stdout.log", "w") as out, open(folder / "stderr.log", "w") as err:
        proc = subprocess.run(command, stdout=out, stderr=err, env={**_env(), **(env or {})}, cwd=cwd or folder)
    seconds = time.time() - started
    (folder / "exit_status.txt").write_text(f"{proc.returncode}\n")
    return proc.returncode, seconds


def failed(harness: str, folder: Path, status: int) -> ConfigError:
    tail = (folder / "stderr.log").read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
    return ConfigError(f"{harness} exited with status {status}: {tail[0][:300]}",
                       f"see {folder}/stderr.log; the command is in {folder}/command.txt")


def one_run_folder(runs: Path, prefix: str, out: Path) -> Path:
    """The HELM run folder of one entry (a missing one is a harness failure, named)."""
    found = sorted(runs.glob(f"{prefix}*")) if runs.is_dir() else []
    if not found or not (found[0] / "scenario_state.json").is_file():
        raise ConfigError(f"helm-run left no complete run for {prefix.rstrip(':')}", f"see {out}/stderr.log")
    return found[0]


# ---- harmonized: the SafetyRepro tasks in each harness ---------------------------------------

def lm_eval_harmonized(anchor: Anchor, out: Path) -> HarnessRun:
    from safetyrepro.adapters.models.hf import weights_path
    from safetyrepro.lm_eval_tasks import include_path

    tasks = [f"safetyrepro_{b}_{anchor.template}_{anchor.scoring}" for b in anchor.benchmarks]
    command = [str(BIN / "lm_eval"), "run", "--model", "hf", "--model_args",
               f"pretrained={weights_path(anchor.model_spec)},dtype=float32", "--include_path", str(include_path()),
               "--tasks", ",".join(tasks), "--num_fewshot", str(anchor.fewshot), "--apply_chat_template",
               "--limit", str(anchor.limit), "--log_samples", "--output_path", "output"]
    temperature = anchor.run_config(anchor.benchmarks[0]).temperature
    if temperature > 0:
        command += ["--gen_kwargs", f"do_sample=True,temperature={temperature},top_k=0,top_p=1.0",
                    "--seed", str(anchor.seed)]
    status, seconds = logged_command(command, out)
    if status != 0:
        raise failed("lm_eval", out, status)
    run = HarnessRun("lm_eval", "harmonized", command, seconds)
    for benchmark, task in zip(anchor.benchmarks, tasks):
        run.items[benchmark] = read_lm_eval_samples(find_lm_eval_samples(out / "output", task))
    return run


def inspect_harmonized(anchor: Anchor, out: Path) -> HarnessRun:
    model = "safetyrepro/" + anchor.model
    command = [str(BIN / "inspect"), "eval", *[f"safetyrepro/{b}" for b in anchor.benchmarks], "--model", model,
               "-T", f"template={anchor.template}", "-T", f"scoring={anchor.scoring}", "-T", f"fewshot={anchor.fewshot}",
               "--limit", str(anchor.limit), "--log-dir", "logs", "--display", "plain",
               "--seed", str(anchor.seed)]
    if anchor.quantization == "nf4":
        command += ["-M", "quantization=nf4"]
    temperature = anchor.run_config(anchor.benchmarks[0]).temperature
    if temperature > 0:
        command += ["--temperature", str(temperature)]
    status, seconds = logged_command(command, out)
    if status != 0:
        raise failed("inspect", out, status)
    run = HarnessRun("inspect", "harmonized", command, seconds)
    logs = inspect_logs(out / "logs")
    for benchmark in anchor.benchmarks:
        if benchmark not in logs:
            raise ConfigError(f"inspect wrote no log for safetyrepro/{benchmark}", f"see {out}/stderr.log")
        run.items[benchmark] = read_inspect_log(logs[benchmark])
    return run


def helm_harmonized(anchor: Anchor, out: Path) -> HarnessRun:
    from safetyrepro.helm_specs.deployment import deployment_for, write_prod_env
    from safetyrepro.helm_specs.schema import SCHEMA_FILE, write_schema

    deployment = deployment_for(anchor.model_spec)
    write_prod_env(out / "prod_env", [deployment])
    write_schema(out / "prod_env" / SCHEMA_FILE)
    entries = [f"safetyrepro_{b}:template={anchor.template},scoring={anchor.scoring},fewshot={anchor.fewshot},"
               f"decoding={anchor.decoding},limit={anchor.limit},model={deployment.name}" for b in anchor.benchmarks]
    command = [str(BIN / "helm-run"), "--run-entries", *entries, "--suite", "crosspkg", "--max-eval-instances",
               str(anchor.limit), "--local-path", "prod_env"]
    status, seconds = logged_command(command, out)
    if status != 0:
        raise failed("helm", out, status)
    run = HarnessRun("helm", "harmonized", command, seconds)
    runs = out / "benchmark_output" / "runs" / "crosspkg"
    for benchmark in anchor.benchmarks:
        run.items[benchmark] = read_helm_run(one_run_folder(runs, f"safetyrepro_{benchmark}:", out))
    return run


HARMONIZED: dict[str, Callable[[Anchor, Path], HarnessRun]] = {
    "lm_eval": lm_eval_harmonized, "inspect": inspect_harmonized, "helm": helm_harmonized}


def reference_run(anchor: Anchor, notify: Callable[[str], None] | None = None) -> tuple[HarnessRun, dict[str, Any]]:
    """The core's reference runner on the anchor (in this process), and its run summaries."""
    from safetyrepro.adapters import run

    from .readers import reference_items

    started = time.time()
    result = HarnessRun("core", "harmonized", ["safetyrepro run (in process)"])
    summaries = {}
    for benchmark in anchor.benchmarks:
        if notify:
            notify(f"core: {benchmark}")
        outcome = run(anchor.run_config(benchmark), show_progress=False)
        result.items[benchmark] = reference_items(outcome.records)
        summaries[benchmark] = outcome.summary
    result.seconds = time.time() - started
    return result, summaries

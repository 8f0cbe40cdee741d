"""The lm-eval binding through the real `lm_eval` CLI, checked item by item against the runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from safetyrepro.adapters import build_config, run
from safetyrepro.adapters.models.embedded import embedded_model_dir, nf4_checkpoint
from safetyrepro.lm_eval_tasks import include_path
from safetyrepro.crosspkg.agreement import compare, summary_line
from safetyrepro.crosspkg.readers import find_lm_eval_samples, read_lm_eval_samples
from safetyrepro.lm_eval_tasks.generate import render

LM_EVAL = str(Path(sys.executable).parent / "lm_eval")
BENCHMARKS = ["truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"]
# One task per benchmark and scoring path; templates vary so system messages, detailed guidance
# and the two-stage cot x logprob are all covered. cot_logprob comes first (see binding.CotLogprobTask).
AGREEMENT_TASKS = [
    ("xstest", "cot", "logprob"), ("truthfulqa", "persona", "logprob"), ("truthfulqa", "minimal", "regex"),
    ("bbq", "detailed", "logprob"), ("bbq", "persona", "regex"), ("toxigen", "minimal", "logprob"),
    ("toxigen", "detailed", "regex"), ("crows_pairs", "minimal", "logprob"), ("crows_pairs", "persona", "regex"),
    ("xstest", "minimal", "regex"),
]
LIMIT, FEWSHOT = 2, 3


def lm_eval(*args: str, model: Path | None = None) -> subprocess.CompletedProcess:
    command = [LM_EVAL, "run", "--model", "hf", "--model_args",
               f"pretrained={model or embedded_model_dir()},dtype=float32", "--include_path", str(include_path()),
               "--apply_chat_template", *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=1200)


def task(b: str, t: str, s: str) -> str:
    return f"safetyrepro_{b}_{t}_{s}"


def test_committed_yamls_equal_the_generator() -> None:
    rendered = render()
    on_disk = {p.name: p.read_text() for p in include_path().glob("*.yaml")}
    assert on_disk == rendered
    assert len([n for n in rendered if n.startswith("safetyrepro_")]) == 40


def test_globs_select_eight_tasks_and_never_a_group() -> None:
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(include_path()))
    for b in BENCHMARKS:
        matched = manager.match_tasks([f"safetyrepro_{b}_*"])
        assert sorted(matched) == sorted(task(b, t, s) for t in ("minimal", "persona", "detailed", "cot")
                                         for s in ("logprob", "regex"))
        assert f"safetyrepro-{b}" in manager.all_groups
    assert not [m for m in manager.match_tasks(["safetyrepro_*"]) if m.startswith("safetyrepro-")]


@pytest.fixture(scope="module")
def agreement_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("lm_eval_agreement")
    proc = lm_eval("--tasks", ",".join(task(*t) for t in AGREEMENT_TASKS), "--limit", str(LIMIT),
                   "--num_fewshot", str(FEWSHOT), "--log_samples", "--output_path", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, out


def test_results_table_shows_benchmark_metrics(agreement_run) -> None:
    proc, out = agreement_run
    for metric in ("bias_ambig", "bias_disambig", "pct_stereotype", "balanced_rate", "refusal_unsafe",
                   "unparsed_rate", "accuracy"):
        assert f"|{metric}" in proc.stdout.replace(" ", "")
    results = json.loads(next(out.rglob("results_*.json")).read_text())["results"]
    assert results[task("crows_pairs", "minimal", "logprob")]["pct_stereotype,none"] in (0.0, 50.0, 100.0)
    # Regex tasks also report the raw unparsed count, consistent with the rate.
    regex = results[task("xstest", "minimal", "regex")]
    assert regex["unparsed,none"] == round(regex["unparsed_rate,none"] * LIMIT)
    assert "unparsed,none" not in results[task("xstest", "cot", "logprob")]


@pytest.mark.parametrize("cell", AGREEMENT_TASKS, ids=lambda c: task(*c))
def test_agrees_with_reference_runner(agreement_run, cell: tuple[str, str, str], lm) -> None:
    _, out = agreement_run
    b, t, s = cell
    # batch_size 1 = lm-eval's default: both sides run the same tensor shapes (docs/scoring.md).
    config = build_config({"benchmark": b, "template": t, "scoring": s, "fewshot": FEWSHOT, "limit": LIMIT,
                           "n_resamples": 0, "batch_size": 1})
    records = run(config, show_progress=False).records
    harness = read_lm_eval_samples(find_lm_eval_samples(out, task(*cell)))
    agreement = compare(task(*cell), harness, records)
    assert agreement.ok, summary_line(agreement) + "\n" + "\n".join(agreement.differences)
    # The samples log carries what crosspkg needs.
    sample = json.loads(find_lm_eval_samples(out, task(*cell)).read_text().splitlines()[0])
    payload = next(v for v in sample.values() if isinstance(v, dict) and "prediction" in v)
    assert {"item_id", "prediction", "prediction_label", "correct", "extraction_rule", "meta"} <= set(payload)
    assert {"item_id", "query", "choices", "target", "system"} <= set(sample["doc"])


def test_glob_and_group_run_in_the_cli(tmp_path: Path) -> None:
    # A per-benchmark glob runs its eight tasks; a group runs its eight and aggregates them.
    proc = lm_eval("--tasks", "safetyrepro_crows_pairs_*,safetyrepro-xstest", "--limit", "1",
                   "--gen_kwargs", "max_gen_toks=8", "--output_path", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next(tmp_path.rglob("results_*.json")).read_text())["results"]
    styles = ("minimal", "persona", "detailed", "cot")
    expected = {task(b, t, s) for b in ("crows_pairs", "xstest") for t in styles for s in ("logprob", "regex")}
    assert set(results) == expected | {"safetyrepro-xstest"}
    assert "balanced_rate,none" in results["safetyrepro-xstest"]


def test_nf4_checkpoint_through_the_stock_hf_model(tmp_path: Path, lm) -> None:
    """NF4 agrees by construction: the runner loads the same pre-quantised checkpoint (same
    weight bytes) and computes each context alone, reading a one-token candidate from its last
    logits -- the same tensors as lm-eval's forward of context + candidate at its default batch of
    1 -- so bitsandbytes takes the same kernel on the same inputs whatever the CPU. (On
    AVX512-BF16 CPUs its bf16 kernel moves NF4 loglikelihoods by up to ~3e-2 when only the batch
    shape changes -- the cause of the machine-dependent failure this test once had; see
    docs/scoring.md, "NF4 on CPU".)"""
    folder = nf4_checkpoint(embedded_model_dir())
    proc = lm_eval("--tasks", f"{task('toxigen', 'minimal', 'logprob')},{task('truthfulqa', 'minimal', 'logprob')}",
                   "--limit", "2", "--log_samples", "--output_path", str(tmp_path), model=folder)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("toxigen", "truthfulqa"):
        result = run(build_config({"benchmark": name, "limit": 2, "n_resamples": 0, "batch_size": 1,
                                   "model": {"quantization": "nf4"}}), show_progress=False)
        assert result.summary["model"]["weights_path"] == str(folder)
        assert result.summary["model"]["runtime"]["nf4_cpu_kernel"] in ("bf16-packed", "fp32-dequantize")
        harness = read_lm_eval_samples(find_lm_eval_samples(tmp_path, task(name, "minimal", "logprob")))
        agreement = compare(f"nf4-{name}", harness, result.records)
        assert agreement.ok, summary_line(agreement) + "\n" + "\n".join(agreement.differences)


@pytest.mark.parametrize(
    ("metadata", "error", "message"),
    [
        ({"template": "fancy"}, "ConfigError", "unknown template 'fancy' -- fix: choose one of"),
        ({"benchmark": "mmlu"}, "ConfigError", "unknown benchmark 'mmlu'"),
        ({"data_dir": "/nonexistent"}, "DataError", "data folder /nonexistent does not exist"),
    ],
)
def test_malformed_task_arguments_name_the_argument(metadata: dict, error: str, message: str) -> None:
    # `--metadata` reaches the task exactly like this TaskManager argument; loading builds the dataset.
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(include_path()), metadata=metadata)
    with pytest.raises(Exception, match=message) as caught:
        manager.load([task("toxigen", "minimal", "logprob")])
    assert type(caught.value).__name__ == error


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "safetyrepro_toxigen_fancy_logprob"], "Tasks not found: safetyrepro_toxigen_fancy_logprob"),
        # lm-eval runs request types in the order it first meets them: a loglikelihood task listed
        # before a cot x logprob task would score candidates before any reasoning exists.
        (["--tasks", f"{task('toxigen', 'minimal', 'logprob')},{task('toxigen', 'cot', 'logprob')}",
          "--gen_kwargs", "max_gen_toks=4"],
         "list safetyrepro *_cot_logprob tasks before other loglikelihood tasks"),
    ],
)
def test_bad_task_arguments_fail_clearly_in_the_cli(args: list[str], message: str) -> None:
    proc = lm_eval(*args, "--limit", "1")
    assert proc.returncode != 0
    assert message in proc.stderr.splitlines()[-1]

"""The lm-eval binding through the real `lm_eval` CLI, checked item by item against the runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from safetyrepro.adapters import build_config, get_benchmark, prepare_cell, run, score_generation
from safetyrepro.adapters.models.embedded import embedded_model_dir, nf4_checkpoint
from safetyrepro.lm_eval_tasks import include_path
from safetyrepro.crosspkg.agreement import compare, summary_line
from safetyrepro.crosspkg.readers import find_lm_eval_samples, read_lm_eval_samples
from safetyrepro.lm_eval_tasks.generate import UNPARSED_COUNT, group_config, render, task_config

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


def strict_results(out: Path) -> dict:
    """The results JSON, refusing the non-standard NaN/Infinity (an undefined metric is null)."""
    def refuse(constant: str) -> None:
        pytest.fail(f"results JSON holds the non-standard constant {constant}")

    return json.loads(next(out.rglob("results_*.json")).read_text(), parse_constant=refuse)


def table_rows(stdout: str) -> dict[tuple[str, str], tuple[str, str]]:
    """lm-eval's printed tables: (task or group, metric) -> (direction arrow, value cell)."""
    rows, current = {}, ""
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 9 or cells[4] == "Metric" or not cells[4].strip("-:"):  # header, rule
            continue
        current = cells[0].lstrip("- ") or current
        rows[(current, cells[4])] = (cells[5], cells[6])
    return rows


def test_committed_yamls_equal_the_generator() -> None:
    rendered = render()
    on_disk = {p.name: p.read_text() for p in include_path().glob("*.yaml")}
    assert on_disk == rendered
    assert len([n for n in rendered if n.startswith("safetyrepro_")]) == 40


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_tasks_report_the_core_harness_metrics_with_their_directions(benchmark: str) -> None:
    bench = get_benchmark(benchmark)
    specs = bench.harness_metric_specs()
    for scoring, extra in (("logprob", []), ("regex", [UNPARSED_COUNT])):
        listed = task_config(benchmark, "minimal", scoring)["metric_list"]
        assert [m["metric"] for m in listed] == [s.name for s in specs] + extra
        # A raw target metric is neither higher- nor lower-is-better (null); its distance is lower.
        assert [m["higher_is_better"] for m in listed] == [s.higher_is_better for s in specs] + [False] * len(extra)
        assert all(str(m["aggregation"]) == f"binding.agg_{m['metric']}" for m in listed)
    targets = [s.name for s in specs if s.direction == "target"]
    assert all(bench.metric_spec(f"{n}_distance").higher_is_better is False for n in targets)
    grouped = [m["metric"] for m in group_config(benchmark, ("minimal",))["aggregate_metric_list"]]
    primary = bench.primary_metric
    assert grouped == ([primary, f"{primary}_distance"] if primary in targets else [primary]) + ["unparsed_rate"]


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
    written = strict_results(out)
    results = written["results"]
    crows = results[task("crows_pairs", "minimal", "logprob")]
    assert crows["pct_stereotype,none"] in (0.0, 50.0, 100.0)
    assert crows["pct_stereotype_distance,none"] == abs(crows["pct_stereotype,none"] - 50.0)
    # Regex tasks also report the raw unparsed count, consistent with the rate.
    regex = results[task("xstest", "minimal", "regex")]
    assert regex["unparsed,none"] == round(regex["unparsed_rate,none"] * LIMIT)
    assert "unparsed,none" not in results[task("xstest", "cot", "logprob")]
    # Directions: a raw target metric has none (null, no arrow), its distance is lower-is-better.
    rows = table_rows(proc.stdout)
    for name, metric in ((task("crows_pairs", "minimal", "logprob"), "pct_stereotype"),
                         (task("bbq", "detailed", "logprob"), "bias_ambig")):
        assert written["higher_is_better"][name][metric] is None
        assert written["higher_is_better"][name][f"{metric}_distance"] is False
        assert rows[(name, metric)][0] == "" and rows[(name, f"{metric}_distance")][0] == "↓"
    assert rows[(task("bbq", "detailed", "logprob"), "accuracy")][0] == "↑"


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
    # One new token: SmolLM2's first word ("You", "Why") is no XSTest answer, so regex tasks have
    # nothing to measure -- which must read as null / an empty cell, never a number.
    proc = lm_eval("--tasks", "safetyrepro_crows_pairs_*,safetyrepro-xstest", "--limit", "1",
                   "--gen_kwargs", "max_gen_toks=1", "--output_path", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = strict_results(tmp_path)
    results = written["results"]
    styles = ("minimal", "persona", "detailed", "cot")
    expected = {task(b, t, s) for b in ("crows_pairs", "xstest") for t in styles for s in ("logprob", "regex")}
    assert set(results) == expected | {"safetyrepro-xstest"}
    assert [m["metric"] for m in written["configs"][task("crows_pairs", "cot", "regex")]["metric_list"]][:2] == \
        ["pct_stereotype", "pct_stereotype_distance"]
    unmeasured = [name for name, r in results.items() if r.get("unparsed_rate,none") == 1.0]
    assert task("xstest", "minimal", "regex") in unmeasured
    rows = table_rows(proc.stdout)
    for name in unmeasured:
        metrics = [k.split(",")[0] for k in results[name] if k.endswith(",none") and "_stderr" not in k]
        for metric in set(metrics) - {"unparsed_rate", UNPARSED_COUNT}:
            assert results[name][f"{metric},none"] is None, (name, metric)
            assert rows[(name, metric)][1] == "", (name, metric, rows[(name, metric)])
    # One item is either a safe or an unsafe prompt, so balanced_rate is undefined in every XSTest
    # task; the group's mean over undefined members is undefined too (lm-eval alone would raise).
    assert results["safetyrepro-xstest"]["balanced_rate,none"] is None
    assert rows[("safetyrepro-xstest", "balanced_rate")][1] == ""
    assert results["safetyrepro-xstest"]["unparsed_rate,none"] is not None


def test_xstest_strmatch_as_a_task_argument_agrees_with_the_core(tmp_path: Path) -> None:
    """``--metadata '{"extraction": "xstest-strmatch"}'`` reads the XSTest regex tasks with XSTest's
    own string match; every decision equals the core's on the same raw output."""
    name, limit = task("xstest", "minimal", "regex"), 4
    proc = lm_eval("--tasks", name, "--metadata", json.dumps({"extraction": "xstest-strmatch"}), "--limit",
                   str(limit), "--log_samples", "--output_path", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert strict_results(tmp_path)["configs"][name]["metadata"]["extraction"] == "xstest-strmatch"
    cell = prepare_cell(build_config({"benchmark": "xstest", "template": "minimal", "scoring": "regex"}))
    samples = [json.loads(line) for line in find_lm_eval_samples(tmp_path, name).read_text().splitlines()]
    assert len(samples) == limit
    for sample in samples:
        payload = sample["balanced_rate"]
        output = sample["filtered_resps"][0]
        core = score_generation(cell.benchmark, cell.item(sample["doc"]["item_id"]).item, output,
                                extraction="xstest-strmatch")
        assert sample["doc"]["extraction"] == "xstest-strmatch"
        assert (payload["raw_output"], payload["prediction"], payload["extraction_rule"]) == \
            (output, core.prediction, core.extraction_rule)
        assert payload["extraction_rule"].startswith("strmatch-")  # never unparsed


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
        # --metadata reaches every task of a run: XSTest's string match only fits its regex tasks.
        ({"extraction": "xstest-strmatch"}, "ConfigError",
         r"extraction xstest-strmatch applies to benchmark xstest.* -- fix: .*--tasks 'safetyrepro_xstest_\*_regex'"),
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

"""The Inspect AI binding through the real ``inspect`` CLI, checked item by item against the runner."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from safetyrepro.adapters import Outcome, build_config, get_benchmark, prepare_cell, run
from safetyrepro.adapters.metrics import as_number
from safetyrepro.adapters.models.embedded import embedded_model_dir
from safetyrepro.adapters.scoring import score_generation
from safetyrepro.crosspkg.agreement import LL_TOLERANCE, top_two_margin

INSPECT = str(Path(sys.executable).parent / "inspect")
BENCHMARKS = ["truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"]
LIMIT, FEWSHOT, COT_TOKENS = 2, 3, 24
# One CLI run per scoring path and template; each covers all five benchmarks, 3-shot.
RUNS = {
    "regex-persona": (["-T", "scoring=regex", "-T", "template=persona", "-T", f"fewshot={FEWSHOT}"],
                      {"scoring": "regex", "template": "persona"}),
    "logprob-detailed": (["-T", "scoring=logprob", "-T", "template=detailed", "-T", f"fewshot={FEWSHOT}"],
                         {"scoring": "logprob", "template": "detailed"}),
    "logprob-cot": (["-T", "scoring=logprob", "-T", "template=cot", "-T", f"fewshot={FEWSHOT}", "--max-tokens",
                     str(COT_TOKENS)], {"scoring": "logprob", "template": "cot", "max_new_tokens": COT_TOKENS}),
}


def inspect_cli(*args: str, log_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "INSPECT_LOG_LEVEL": "warning"}
    return subprocess.run([INSPECT, "eval", *args, "--log-dir", str(log_dir), "--display", "plain",
                           "--limit", str(LIMIT)], capture_output=True, text=True, env=env, timeout=1800)


def read_logs(log_dir: Path) -> dict[str, object]:
    from inspect_ai.log import read_eval_log

    logs = {}
    for path in log_dir.glob("*.eval"):
        log = read_eval_log(str(path), resolve_attachments=True)
        logs[log.eval.task_args.get("benchmark") or log.eval.task.split("/")[-1]] = log
    return logs


@pytest.fixture(scope="module")
def inspect_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = {}
    for name, (args, _) in RUNS.items():
        log_dir = tmp_path_factory.mktemp(f"inspect_{name}")
        proc = inspect_cli(*[f"safetyrepro/{b}" for b in BENCHMARKS], "--model", "safetyrepro/embedded", *args,
                           log_dir=log_dir)
        assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
        out[name] = {"logs": read_logs(log_dir), "stdout": proc.stdout}
    return out


def reference(benchmark: str, fields: dict, lm) -> dict:
    config = build_config({"benchmark": benchmark, "fewshot": FEWSHOT, "limit": LIMIT, "n_resamples": 0,
                           "batch_size": 1, **fields})
    return {r.item_id: r for r in run(config, show_progress=False).records}


@pytest.mark.parametrize("name", RUNS)
@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_agrees_with_reference_runner(inspect_runs, name: str, benchmark: str, lm) -> None:
    log = inspect_runs[name]["logs"][benchmark]
    assert log.status == "success"
    records = reference(benchmark, RUNS[name][1], lm)
    assert sorted(s.id for s in log.samples) == sorted(records)
    for sample in log.samples:
        record = records[sample.id]
        score = next(iter(sample.scores.values()))
        meta = score.metadata
        # Messages and the chat-templated prompt, byte for byte.
        assert [{"role": m.role, "content": m.text} for m in sample.input] == record.messages
        assert meta["prompt"] == record.prompt
        assert meta["candidates"] == record.candidates and meta["gold"] == record.gold
        # The core configuration the sample ran under (no limit or bootstrap settings in Inspect).
        assert meta["config_hash"] == build_config({"benchmark": benchmark, "fewshot": FEWSHOT, "batch_size": 1,
                                                    **RUNS[name][1]}).config_hash()
        outcome = meta["outcome"]
        assert outcome["raw_output"] == record.raw_output  # greedy generation (regex answer or cot reasoning)
        assert outcome["extraction_rule"] == record.extraction_rule
        assert meta["extraction_flags"] == record.extraction_flags
        if record.loglikelihoods is not None:
            assert meta["logprob_context"] == record.logprob_context
            diff = max(abs(a - b) for a, b in zip(outcome["loglikelihoods"], record.loglikelihoods))
            assert diff <= LL_TOLERANCE, diff
            assert (outcome["prediction"] == record.prediction
                    or top_two_margin(record.loglikelihoods) <= LL_TOLERANCE)
        else:
            assert outcome["prediction"] == record.prediction
        # Unparsed is Inspect's NOANSWER, never a class.
        assert (score.value == "N") == (record.prediction is None)
        assert score.explanation == f"extraction rule: {record.extraction_rule}"


def outcomes_of(log) -> list[Outcome]:
    return [Outcome.model_validate(next(iter(s.scores.values())).metadata["outcome"]) for s in log.samples]


def assert_core_metrics(log, benchmark: str) -> dict[str, float | None]:
    """The log's metrics are the core's, in its table order, each with its direction; an undefined
    one is absent from the results (None here), never a NaN."""
    from safetyrepro.inspect_tasks.metrics import logged_metrics

    specs = get_benchmark(benchmark).harness_metric_specs()
    logged = logged_metrics(log)
    assert list(logged) == [spec.name for spec in specs]
    core = get_benchmark(benchmark).measure_for_harness(outcomes_of(log), seed=0, n_resamples=0)
    for name, value in logged.items():
        assert (value is None and math.isnan(core[name].value)) or value == pytest.approx(core[name].value), name
    results = {name: m for score in log.results.scores for name, m in score.metrics.items()}
    assert list(results) == [name for name, value in logged.items() if value is not None]
    for spec in specs:  # the direction beside the value, and in the header's metric definitions
        declared = {"direction": spec.direction, "target": spec.target, "higher_is_better": spec.higher_is_better}
        if spec.name in results:
            assert declared.items() <= results[spec.name].params.items(), spec.name
        assert any(declared.items() <= {**d.options}.items() and d.options["name"] == spec.name
                   for d in log.eval.scorers[0].metrics), spec.name
    assert "NaN" not in log.results.model_dump_json()
    return logged


def test_benchmark_metrics_are_inspect_metrics(inspect_runs) -> None:
    expected = {"bbq": {"bias_ambig", "bias_disambig", "accuracy"}, "xstest": {"balanced_rate", "refusal_unsafe"},
                "crows_pairs": {"pct_stereotype", "pct_stereotype_distance"}, "truthfulqa": {"accuracy"},
                "toxigen": {"accuracy"}}
    for run_name in RUNS:
        for benchmark, names in expected.items():
            logged = assert_core_metrics(inspect_runs[run_name]["logs"][benchmark], benchmark)
            assert names | {"unparsed_rate"} <= set(logged), (benchmark, logged)
    assert "bias_disambig" in inspect_runs["regex-persona"]["stdout"]
    # A reader of the log can tell that pct_stereotype is best at 50 and its distance lower-is-better
    # (the logprob path always decides, so both have values here).
    log = inspect_runs["logprob-detailed"]["logs"]["crows_pairs"]
    params = {name: m.params for name, m in log.results.scores[0].metrics.items()}
    assert params["pct_stereotype"]["direction"] == "target" and params["pct_stereotype"]["target"] == 50
    assert params["pct_stereotype"]["higher_is_better"] is None
    assert params["pct_stereotype_distance"]["higher_is_better"] is False
    assert log.results.headline.metric == "pct_stereotype"  # the primary metric first


def test_nothing_to_measure_is_no_number(tmp_path: Path) -> None:
    """One generated token: no XSTest answer can be read, so every metric but unparsed_rate is
    undefined -- absent from the log's results and from the printed table, never 0 or nan."""
    proc = inspect_cli("safetyrepro/xstest", "--model", "safetyrepro/embedded", "-T", "scoring=regex",
                       "--max-tokens", "1", log_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    log = read_logs(tmp_path)["xstest"]
    assert log.status == "success" and not any(o.parsed for o in outcomes_of(log))
    logged = assert_core_metrics(log, "xstest")
    assert logged.pop("unparsed_rate") == 1.0 and set(logged.values()) == {None}
    assert "unparsed_rate" in proc.stdout and "balanced_rate" not in proc.stdout
    assert not re.search(r"\bnan\b", proc.stdout, re.IGNORECASE), proc.stdout[-2000:]


def test_xstest_strmatch_agrees_with_the_core(inspect_runs, tmp_path: Path) -> None:
    """``-T extraction=xstest-strmatch``: the same generations as the regex-persona run, read by the
    core's XSTest string match item by item; flags, config hash and metrics are the core's."""
    fields = {"benchmark": "xstest", "scoring": "regex", "template": "persona", "fewshot": FEWSHOT,
              "extraction": "xstest-strmatch"}
    proc = inspect_cli("safetyrepro/xstest", "--model", "safetyrepro/embedded", "-T", "scoring=regex", "-T",
                       "template=persona", "-T", f"fewshot={FEWSHOT}", "-T", "extraction=xstest-strmatch",
                       log_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    log = read_logs(tmp_path)["xstest"]
    assert log.eval.task_args["extraction"] == "xstest-strmatch"
    standard_log = inspect_runs["regex-persona"]["logs"]["xstest"]
    standard = {s.id: outcome for s, outcome in zip(standard_log.samples, outcomes_of(standard_log))}
    cell = prepare_cell(build_config(fields))
    config_hash = build_config({**fields, "batch_size": 1}).config_hash()
    for sample, outcome in zip(log.samples, outcomes_of(log)):
        meta = next(iter(sample.scores.values())).metadata
        assert outcome.raw_output == standard[sample.id].raw_output  # only the readout differs
        core = score_generation(cell.benchmark, cell.item(sample.id).item, outcome.raw_output,
                                extraction="xstest-strmatch")
        assert outcome == core
        assert meta["extraction_flags"] == core.extraction_flags and meta["config_hash"] == config_hash
    assert_core_metrics(log, "xstest")


def test_stock_hf_provider_agrees_on_the_regex_path(tmp_path: Path, lm) -> None:
    # Inspect's own hf/ provider: greedy needs do_sample=false; one request at a time keeps the
    # runner's batch shape.
    proc = inspect_cli("safetyrepro/xstest", "safetyrepro/bbq", "--model", "hf/local", "-M",
                       f"model_path={embedded_model_dir()}", "-M", "do_sample=false", "--max-connections", "1",
                       "-T", "scoring=regex", "-T", f"fewshot={FEWSHOT}", "-T", "template=minimal", log_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    logs = read_logs(tmp_path)
    for benchmark in ("xstest", "bbq"):
        records = reference(benchmark, {"scoring": "regex", "template": "minimal"}, lm)
        for sample in logs[benchmark].samples:
            outcome = next(iter(sample.scores.values())).metadata["outcome"]
            assert outcome["raw_output"] == records[sample.id].raw_output
            assert outcome["prediction"] == records[sample.id].prediction


@pytest.mark.parametrize(
    ("args", "message"),
    [  # through the CLI: a bad task argument, and a model that cannot serve the path (the rest below)
        (["safetyrepro/bbq", "-T", "template=fancy"], "unknown template 'fancy'"),
        (["safetyrepro/bbq", "-T", "scoring=logprob", "--model", "mockllm/model"], "needs candidate loglikelihoods"),
        (["safetyrepro/bbq", "-T", "scoring=regex", "-T", "extraction=xstest-strmatch"],
         "-T extraction=xstest-strmatch does not apply to benchmark 'bbq' with -T scoring=regex"),
    ],
)
def test_bad_task_arguments_fail_with_one_clear_message(tmp_path: Path, args: list[str], message: str) -> None:
    if "--model" not in args:
        args = [*args, "--model", "safetyrepro/embedded"]
    proc = inspect_cli(*args, log_dir=tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert message in " ".join(text.split()), text[-3000:]  # rich wraps long lines
    assert "Traceback" not in text, text[-3000:]
    assert len(re.findall(r"^error: ", text, re.MULTILINE)) == 1 and " -- fix: " in " ".join(text.split()), text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"scoring": "vibes"}, "unknown scoring 'vibes'"),
        ({"scoring": "symmetric"}, "scoring 'symmetric' asks requests Inspect cannot express"),
        ({"fewshot": 2}, "fewshot must be one of (0, 3, 5)"),
        ({"data_dir": "/nonexistent"}, "data folder /nonexistent does not exist"),
        ({"extraction": "xstest-strmatch"}, "-T extraction=xstest-strmatch does not apply to benchmark 'bbq'"),
        ({"extraction": "strict"}, "unknown extraction 'strict'"),
    ],
)
def test_bad_task_arguments_are_the_error_inspect_prints_as_one_line(arguments: dict, message: str) -> None:
    """The same refusal as the CLI cases above (a PrerequisiteError, which ``inspect eval`` prints
    without a traceback), raised where the task is built."""
    from inspect_ai._util.error import PrerequisiteError

    from safetyrepro.inspect_tasks.tasks import build_task

    with pytest.raises(PrerequisiteError) as raised:
        build_task("bbq", **arguments)
    assert message in str(raised.value) and str(raised.value).startswith("error: ")


def test_strmatch_is_refused_off_the_regex_path() -> None:
    from inspect_ai._util.error import PrerequisiteError

    from safetyrepro.inspect_tasks.tasks import build_task

    with pytest.raises(PrerequisiteError, match="does not apply to benchmark 'xstest' with -T scoring=logprob"):
        build_task("xstest", extraction="xstest-strmatch")


def test_eval_set_and_nf4_through_the_provider(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run([INSPECT, "eval-set", "safetyrepro/toxigen", "safetyrepro/crows_pairs", "--model",
                           "safetyrepro/embedded", "-M", "quantization=nf4", "--limit", "1", "--log-dir",
                           str(tmp_path), "--display", "plain"], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    logs = [read_eval_log(str(p)) for p in tmp_path.glob("*.eval")]
    assert sorted(log.eval.task for log in logs) == ["safetyrepro/crows_pairs", "safetyrepro/toxigen"]
    for log in logs:
        assert log.status == "success" and log.eval.model_args == {"quantization": "nf4"}
        meta = next(iter(log.samples[0].scores.values())).metadata
        assert len(meta["outcome"]["loglikelihoods"]) == len(meta["candidates"])

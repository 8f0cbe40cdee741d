"""The HELM binding through the real `helm-run` and `helm-summarize`, checked item by item against
the reference runner (same weights, one request at a time on both sides)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

from safetyrepro.adapters import all_benchmarks, build_config, prepare_cell, run, score_generation
from safetyrepro.adapters.models.embedded import embedded_model_dir, nf4_checkpoint
from safetyrepro.crosspkg.agreement import compare, summary_line, tolerance_for
from safetyrepro.crosspkg.readers import read_helm_run

BIN = Path(sys.executable).parent
MODEL = "safetyrepro/smollm2-135m-instruct"
NF4_MODEL = "safetyrepro/smollm2-135m-instruct-nf4"
# One run entry per benchmark and scoring path (templates vary: system messages, detailed
# guidance, and the two-stage cot x logprob), plus NF4 on the logprob path.
AGREEMENT = [
    ("xstest", "cot", "logprob"), ("truthfulqa", "persona", "logprob"), ("truthfulqa", "minimal", "regex"),
    ("bbq", "detailed", "logprob"), ("bbq", "persona", "regex"), ("toxigen", "minimal", "logprob"),
    ("toxigen", "detailed", "regex"), ("crows_pairs", "minimal", "logprob"), ("crows_pairs", "persona", "regex"),
    ("xstest", "minimal", "regex"),
]
LIMIT, FEWSHOT = 2, 3
# XSTest read with its own published string match (a run-entry argument), and an XSTest cell where
# nothing can be read: one token ("Answer") is all the model may say, so every metric but
# unparsed_rate is undefined. Templates no AGREEMENT entry uses, so run_dir finds each alone.
STRMATCH = ("xstest", "persona", "regex")
NOTHING_PARSED = ("xstest", "detailed", "regex")


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def helm(tool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, env=_env(), cwd=cwd, timeout=1800)


def entry(b: str, t: str, s: str, model: str = MODEL, **extra: object) -> str:
    args = {"template": t, "scoring": s, "fewshot": FEWSHOT, "limit": LIMIT, **extra}
    return f"safetyrepro_{b}:" + ",".join(f"{k}={v}" for k, v in args.items()) + f",model={model}"


def run_dir(root: Path, suite: str, b: str, t: str, s: str, model: str = MODEL) -> Path:
    matches = [p for p in (root / "benchmark_output" / "runs" / suite).glob(f"safetyrepro_{b}:*")
               if f"scoring={s}" in p.name and f"template={t}" in p.name and p.name.endswith(model.replace("/", "_"))]
    assert len(matches) == 1, matches
    return matches[0]


@pytest.fixture(scope="module")
def helm_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A prod_env with the embedded model in fp32 and NF4 (written by the CLI, the second merged
    into the first), and one helm-run over every agreement entry (one process, models loaded once)."""
    root = tmp_path_factory.mktemp("helm")
    for extra in ([], ["--quantization", "nf4"]):
        proc = subprocess.run([str(BIN / "safetyrepro"), "helm", "prod-env", "--out", str(root / "prod_env"), *extra],
                              capture_output=True, text=True, env=_env(), timeout=600)
        assert proc.returncode == 0, proc.stderr
    entries = [entry(*e) for e in AGREEMENT] + [entry("toxigen", "minimal", "logprob", model=NF4_MODEL),
                                                entry("toxigen", "persona", "regex", decoding="t0.7", max_new_tokens=8),
                                                entry(*STRMATCH, extraction="xstest-strmatch"),
                                                entry(*NOTHING_PARSED, max_new_tokens=1)]
    proc = helm("helm-run", "--run-entries", *entries, "--suite", "agree", "--max-eval-instances", str(LIMIT),
                "--local-path", "prod_env", cwd=root)
    (root / "helm-run.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return root


def test_prod_env_merges_models_and_points_nf4_at_the_checkpoint(helm_root: Path) -> None:
    deployments = yaml.safe_load((helm_root / "prod_env" / "model_deployments.yaml").read_text())["model_deployments"]
    by_name = {d["name"]: d for d in deployments}
    assert set(by_name) == {MODEL, NF4_MODEL}
    assert {d["client_spec"]["class_name"] for d in deployments} == {
        "safetyrepro.helm_specs.client.SerialHuggingFaceClient"}
    args = by_name[NF4_MODEL]["client_spec"]["args"]
    assert args["pretrained_model_name_or_path"] == str(nf4_checkpoint(embedded_model_dir()))
    assert args["apply_chat_template"] is False
    tokenizers = yaml.safe_load((helm_root / "prod_env" / "tokenizer_configs.yaml").read_text())["tokenizer_configs"]
    assert {t["end_of_text_token"] for t in tokenizers} == {"<|im_end|>"}
    assert all(t["tokenizer_spec"]["args"]["model_max_length"] == 8192 for t in tokenizers)


@pytest.mark.parametrize("cell", AGREEMENT, ids=lambda c: "_".join(c))
def test_agrees_with_reference_runner(helm_root: Path, cell: tuple[str, str, str], lm) -> None:
    b, t, s = cell
    config = build_config({"benchmark": b, "template": t, "scoring": s, "fewshot": FEWSHOT, "limit": LIMIT,
                           "n_resamples": 0, "batch_size": 1})
    records = run(config, show_progress=False).records
    folder = run_dir(helm_root, "agree", *cell)
    agreement = compare("_".join(cell), read_helm_run(folder), records)
    assert agreement.ok, summary_line(agreement) + "\n" + "\n".join(agreement.differences)
    # Every record carries what an auditor needs, and the hash of the core configuration HELM ran
    # (one request at a time: batch_size 1; the default bootstrap).
    ran = config.model_copy(update={"n_resamples": 1000})
    state = json.loads((folder / "scenario_state.json").read_text())
    for request_state in state["request_states"]:
        record = request_state["annotations"]["safetyrepro"]
        assert record["config_hash"] == ran.config_hash()
        assert record["prompt_matches_core"] is True and request_state["num_train_instances"] == 0
        assert {"candidates", "gold", "prediction", "extraction_rule", "extraction_flags", "loglikelihoods",
                "messages"} <= set(record)
        assert record["extraction_flags"] == record["outcome"]["extraction_flags"]
        if s == "regex":
            assert record["extraction"] == "standard"
        if s == "logprob":
            assert record["candidate_tokens_match_core"] is True


def test_nf4_agrees_with_reference_runner(helm_root: Path, lm) -> None:
    """Same checkpoint bytes, one request at a time -- but HELM's echo request forwards one token
    more than the runner, so on bitsandbytes' bf16 CPU path (AVX512-BF16) the shapes differ and so
    do loglikelihoods, by up to the measured bf16 spread (crosspkg/agreement.py); elsewhere 1e-4."""
    config = build_config({"benchmark": "toxigen", "template": "minimal", "scoring": "logprob", "fewshot": FEWSHOT,
                           "limit": LIMIT, "n_resamples": 0, "batch_size": 1, "model": {"quantization": "nf4"}})
    result = run(config, show_progress=False)
    tol = tolerance_for(result.summary["model"]["runtime"], same_shapes=False)
    agreement = compare("nf4", read_helm_run(run_dir(helm_root, "agree", "toxigen", "minimal", "logprob", NF4_MODEL)),
                        result.records, tol=tol)
    assert agreement.ok, summary_line(agreement) + "\n" + "\n".join(agreement.differences)


def test_sampled_decoding_and_budget_reach_helm_and_the_hash(helm_root: Path) -> None:
    folder = run_dir(helm_root, "agree", "toxigen", "persona", "regex")
    config = build_config({"benchmark": "toxigen", "template": "persona", "scoring": "regex", "fewshot": FEWSHOT,
                           "limit": LIMIT, "decoding": "t0.7", "max_new_tokens": 8, "batch_size": 1})
    state = json.loads((folder / "scenario_state.json").read_text())
    for request_state in state["request_states"]:
        assert request_state["request"]["temperature"] == 0.7 and request_state["request"]["max_tokens"] == 8
        assert request_state["annotations"]["safetyrepro"]["config_hash"] == config.config_hash()


def test_stats_carry_the_core_metrics(helm_root: Path) -> None:
    folder = run_dir(helm_root, "agree", "bbq", "detailed", "logprob")
    stats = {s["name"]["name"]: s for s in json.loads((folder / "stats.json").read_text())}
    assert {"accuracy", "accuracy_ambig", "bias_ambig", "unparsed_rate", "num_items"} <= set(stats)
    assert stats["candidate_tokens_match_core"]["mean"] == 1.0
    assert 0.0 <= stats["helm_native_rule_agrees"]["mean"] <= 1.0
    per_instance = json.loads((folder / "per_instance_stats.json").read_text())
    assert len(per_instance) == LIMIT
    names = {s["name"]["name"] for s in per_instance[0]["stats"]}
    assert {"unparsed", "correct", "prediction"} <= names
    xstest = {s["name"]["name"]: s for s in
              json.loads((run_dir(helm_root, "agree", "xstest", "minimal", "regex") / "stats.json").read_text())}
    assert {"balanced_rate", "unparsed_rate"} <= set(xstest)


def test_xstest_strmatch_entry_reads_as_the_core(helm_root: Path) -> None:
    """``extraction=xstest-strmatch``: every item decided by XSTest's own string match, exactly as
    the core's ``score_generation`` decides the same raw output (read back from HELM's run)."""
    folder = run_dir(helm_root, "agree", *STRMATCH)
    b, t, s = STRMATCH
    config = build_config({"benchmark": b, "template": t, "scoring": s, "fewshot": FEWSHOT, "limit": LIMIT,
                           "extraction": "xstest-strmatch", "batch_size": 1})
    cell = prepare_cell(config)
    outputs = read_helm_run(folder)
    state = json.loads((folder / "scenario_state.json").read_text())
    records = {rs["instance"]["id"]: rs["annotations"]["safetyrepro"] for rs in state["request_states"]}
    assert len(records) == LIMIT
    for item_id, record in records.items():
        expected = score_generation(cell.benchmark, cell.item(item_id).item, outputs[item_id].raw_output,
                                    extraction="xstest-strmatch")
        assert record["extraction"] == "xstest-strmatch" and record["config_hash"] == config.config_hash()
        assert record["extraction_rule"] in ("strmatch-refusal", "strmatch-compliance")
        assert (record["prediction"], record["extraction_rule"], record["extraction_flags"]) == (
            expected.prediction, expected.extraction_rule, expected.extraction_flags), item_id


def test_nothing_to_measure_is_no_number(helm_root: Path) -> None:
    """Every generation unparsed: the core leaves every metric but unparsed_rate undefined; HELM
    gets a stat with no values (count 0, no mean), not a NaN (which helm-run would drop with a
    warning) and not a 0."""
    folder = run_dir(helm_root, "agree", *NOTHING_PARSED)
    stats = {s["name"]["name"]: s for s in json.loads((folder / "stats.json").read_text())}
    undefined = [spec.name for spec in all_benchmarks()["xstest"].harness_metric_specs() if spec.name != "unparsed_rate"]
    for name in undefined:
        for key in (name, f"{name}_ci_low", f"{name}_ci_high"):
            assert stats[key]["count"] == 0 and "mean" not in stats[key], stats[key]
    assert stats["unparsed_rate"]["mean"] == 1.0
    assert "Removing stat" not in (helm_root / "helm-run.log").read_text()
    per_instance = json.loads((folder / "per_instance_stats.json").read_text())
    assert [s["mean"] for p in per_instance for s in p["stats"] if s["name"]["name"] == "unparsed"] == [1.0] * LIMIT


def test_schema_directions_are_the_core_harness_specs(tmp_path: Path) -> None:
    """Every benchmark's harness metrics, as HELM reads the generated schema: a target metric's raw
    value without a direction, its distance lower-is-better, the others as declared."""
    from helm.benchmark.presentation.schema import read_schema

    from safetyrepro.helm_specs.schema import write_schema

    schema = read_schema(str(write_schema(tmp_path / "schema.yaml")))
    by_name = {m.name: m for m in schema.metrics}
    groups_ = {g.name: [m.name for m in g.metrics] for g in schema.metric_groups}
    for name, bench in all_benchmarks().items():
        specs = bench.harness_metric_specs()
        assert groups_[f"safetyrepro_{name}_metrics"] == [spec.name for spec in specs]
        for spec in specs:
            expected = None if spec.higher_is_better is None else not spec.higher_is_better
            assert by_name[spec.name].lower_is_better is expected, spec.name
            assert by_name[f"{spec.name}_ci_low"].lower_is_better is None


@pytest.fixture(scope="module")
def groups(helm_root: Path) -> Path:
    """helm-summarize over the shared suite (with the generated schema): its group tables."""
    # One thread: HELM's summarize threads compile mako templates concurrently, which on CPython
    # 3.11.7 can fail at random ("AST constructor recursion depth mismatch", a CPython race).
    proc = helm("helm-summarize", "--suite", "agree", "--schema-path", "prod_env/schema_safetyrepro.yaml",
                "--num-threads", "1", cwd=helm_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "undefined in" not in proc.stderr + proc.stdout
    return helm_root / "benchmark_output" / "runs" / "agree" / "groups"


def _tables(groups: Path, benchmark: str) -> list[dict]:
    return json.loads((groups / f"safetyrepro_{benchmark}.json").read_text())


def test_summarize_shows_a_table_per_benchmark(groups: Path) -> None:
    tables = _tables(groups, "bbq")
    header = [h["value"] for h in tables[0]["header"]]
    assert header[:2] == ["Model", "accuracy"] and "bias_ambig" in header and "bias_ambig_distance" in header
    assert sum(len(t["rows"]) for t in tables) >= 2  # the two bbq entries


@pytest.mark.parametrize("benchmark", ["bbq", "crows_pairs", "xstest"])
def test_summarize_ranks_by_the_core_directions(groups: Path, benchmark: str) -> None:
    """Each column's direction is the core's (a target metric's raw value has none, its distance is
    lower-is-better), so HELM bolds the closest-to-target run and never a raw target value."""
    directions = {spec.name: spec.higher_is_better for spec in all_benchmarks()[benchmark].harness_metric_specs()}
    assert any(v is None for v in directions.values()) == (benchmark != "xstest")
    for table in _tables(groups, benchmark):
        for column, head in enumerate(table["header"]):
            if head["value"] not in directions:
                continue
            higher = directions[head["value"]]
            assert head.get("lower_is_better") == (None if higher is None else not higher), head
            cells = [row[column] for row in table["rows"]]
            bold = [c["value"] for c in cells if (c.get("style") or {}).get("font-weight") == "bold"]
            values = [c["value"] for c in cells if c.get("value") is not None]
            if higher is None or not values:
                assert not bold, (head["value"], cells)
            else:
                assert bold and set(bold) == {max(values) if higher else min(values)}, (head["value"], cells)


def test_summarize_shows_no_number_where_nothing_was_measured(groups: Path, helm_root: Path) -> None:
    """The all-unparsed run's own table: its undefined metrics are cells without a value (HELM's
    "count = 0, mean undefined"), beside unparsed_rate 1."""
    name = run_dir(helm_root, "agree", *NOTHING_PARSED).name
    rows = [(table["header"], row) for table in _tables(groups, "xstest") for row in table["rows"]
            if name in unquote(row[0].get("href", ""))]
    assert len(rows) == 1
    header, row = rows[0]
    cells = {h["value"]: c for h, c in zip(header, row)}
    assert cells["unparsed_rate"]["value"] == 1.0
    for metric in ("balanced_rate", "compliance_safe", "refusal_unsafe"):
        assert cells[metric].get("value") is None and cells[metric]["description"] == "(0)", cells[metric]


@pytest.mark.parametrize(
    ("run_entry", "message"),
    [  # through helm-run: a bad argument (the rest of them below, where the entry is built)
        ("safetyrepro_bbq:decoding=hot", "decoding='hot' is not a decoding -- fix: use decoding=greedy | t0.3 | t0.7"),
        ("safetyrepro_bbq:data_dir=/nonexistent/data", "data folder /nonexistent/data does not exist"),  # the scenario's
        # HELM's own run expanders would change what the core asks: refused, not scored.
        ("safetyrepro_bbq:limit=1,max_train_instances=2", "applies HELM's max_train_instances= to a SafetyRepro"),
        ("safetyrepro_bbq:scoring=regex,limit=1,max_new_tokens=4,temperature=0.5",
         "temperature 0.5 / max_tokens 4 are not the configuration's 0.0 / 4"),
    ],
)
def test_bad_run_entry_arguments_are_one_line(helm_root: Path, run_entry: str, message: str) -> None:
    proc = helm("helm-run", "--run-entries", f"{run_entry},model={MODEL}", "--suite", "bad",
                "--max-eval-instances", "1", "--local-path", "prod_env", cwd=helm_root)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not list((helm_root / "benchmark_output" / "runs").glob("bad/*/scenario_state.json"))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"shots": "3"}, "unknown argument 'shots' -- fix: use only these arguments: template="),
        ({"fewshot": "three"}, "fewshot='three' is not a whole number"),
        ({"template": "fancy"}, "unknown template 'fancy'"),
        ({"scoring": "symmetric"}, "scoring 'symmetric' asks requests HELM cannot express"),
        ({"fewshot": "4"}, "fewshot: Value error, fewshot must be one of (0, 3, 5)"),
    ],
)
def test_bad_run_entry_arguments_end_helm_run_with_one_line(arguments: dict, message: str,
                                                            capsys: pytest.CaptureFixture) -> None:
    """What helm-run does with a bad entry (the CLI cases above): the run spec function prints one
    line and exits 2 before HELM runs anything."""
    from safetyrepro.helm_specs.run_specs import build_run_spec

    with pytest.raises(SystemExit) as raised:
        build_run_spec("bbq", **arguments)
    assert raised.value.code == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: ") and message in errors[0], errors


@pytest.mark.parametrize(
    ("benchmark", "arguments"),
    [
        ("bbq", {"scoring": "regex", "extraction": "xstest-strmatch"}),  # another benchmark
        ("xstest", {"scoring": "logprob", "extraction": "xstest-strmatch"}),  # a path that reads no generation
        ("xstest", {"template": "cot", "extraction": "xstest-strmatch"}),  # cot x logprob (the default scoring)
        ("xstest", {"scoring": "regex", "extraction": "strmatch"}),  # not a readout
    ],
)
def test_extraction_outside_xstest_regex_is_one_line(benchmark: str, arguments: dict,
                                                     capsys: pytest.CaptureFixture) -> None:
    from safetyrepro.helm_specs.run_specs import build_run_spec

    with pytest.raises(SystemExit) as raised:
        build_run_spec(benchmark, **arguments)
    assert raised.value.code == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"error: run entry safetyrepro_{benchmark}: extraction='{arguments['extraction']}' "
                                "cannot be used here (")
    assert "-- fix: remove extraction=, or use extraction=standard | xstest-strmatch (xstest-strmatch: " \
           "safetyrepro_xstest with scoring=regex only)" in errors[0]


def test_extraction_entry_reaches_the_core_configuration() -> None:
    from safetyrepro.helm_specs.run_specs import build_run_spec

    spec = build_run_spec("xstest", template="minimal", scoring="regex", extraction="xstest-strmatch")
    assert "extraction=xstest-strmatch" in spec.name
    standard = build_run_spec("bbq", scoring="regex", extraction="standard")  # the default, allowed everywhere
    assert "extraction=standard" in standard.name


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "/nonexistent/model"], "/nonexistent/model"),
        (["--quantization", "nf8"], "quantization"),
        (["--name", "No Slash"], "is not of the form organization/model"),
    ],
)
def test_bad_prod_env_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    proc = subprocess.run([str(BIN / "safetyrepro"), "helm", "prod-env", "--out", str(tmp_path / "env"), *args],
                          capture_output=True, text=True, env=_env(), timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "env").exists()

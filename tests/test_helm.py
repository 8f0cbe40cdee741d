"""The HELM binding through the real `helm-run` and `helm-summarize`, checked item by item against
the reference runner (same weights, one request at a time on both sides)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from safetyrepro.adapters import build_config, run
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
                                                entry("toxigen", "persona", "regex", decoding="t0.7", max_new_tokens=8)]
    proc = helm("helm-run", "--run-entries", *entries, "--suite", "agree", "--max-eval-instances", str(LIMIT),
                "--local-path", "prod_env", cwd=root)
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
        assert {"candidates", "gold", "prediction", "extraction_rule", "loglikelihoods", "messages"} <= set(record)
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


def test_summarize_shows_a_table_per_benchmark(helm_root: Path) -> None:
    # One thread: HELM's summarize threads compile mako templates concurrently, which on CPython
    # 3.11.7 can fail at random ("AST constructor recursion depth mismatch", a CPython race).
    proc = helm("helm-summarize", "--suite", "agree", "--schema-path", "prod_env/schema_safetyrepro.yaml",
                "--num-threads", "1", cwd=helm_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "undefined in" not in proc.stderr + proc.stdout
    table = json.loads((helm_root / "benchmark_output" / "runs" / "agree" / "groups" / "safetyrepro_bbq.json")
                       .read_text())[0]
    header = [h["value"] for h in table["header"]]
    assert header[:2] == ["Model", "accuracy"] and "bias_ambig" in header
    tables = json.loads((helm_root / "benchmark_output" / "runs" / "agree" / "groups" / "safetyrepro_bbq.json")
                        .read_text())
    assert sum(len(t["rows"]) for t in tables) >= 2  # the two bbq entries


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

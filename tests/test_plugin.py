"""A sixth benchmark, a fifth template style and two scoring paths from a third-party plugin:
zero edits outside it.

The scorers follow the scoring-path contract (``Scorer.requests`` / ``read``): ``logprob_norm``
(lm-eval's ``acc_norm``: the logprob path's requests, decided by loglikelihood per byte) runs
everywhere -- the runner, a grid (local and on Ray), verify, the replay gate, stats, and the
lm-eval, Inspect and HELM bindings; ``option_text`` (the options' own text as candidates) asks what
no harness binding can express, so each binding refuses it in one line.

The plugin is a real installed distribution (a module plus a ``.dist-info`` with an entry point in
the ``safetyrepro`` group, on ``PYTHONPATH``), so subprocesses -- the ``safetyrepro`` CLI and the
real ``lm_eval`` CLI -- discover it exactly as they would a pip-installed package. Its data file
is declared like a built-in's (path, URL, SHA-256), so ``data verify`` checks it and a tampered
copy is refused.
"""

from __future__ import annotations

import csv
import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from safetyrepro.adapters import all_benchmarks, all_styles, build_config, register_plugin, run, unregister_plugin
from safetyrepro.crosspkg.agreement import compare, summary_line
from safetyrepro.crosspkg.readers import find_lm_eval_samples, read_lm_eval_samples

CAPITALS = [("France", "Paris", "Rome"), ("Italy", "Rome", "Madrid"), ("Spain", "Madrid", "Paris"),
            ("Japan", "Tokyo", "Seoul"), ("Korea", "Seoul", "Tokyo"), ("Egypt", "Cairo", "Lima"),
            ("Peru", "Lima", "Cairo"), ("Kenya", "Nairobi", "Oslo"), ("Norway", "Oslo", "Nairobi")]

PLUGIN_SOURCE = '''
"""Capitals: a third-party SafetyRepro benchmark and a "terse" style, through the public hooks only."""
from pathlib import Path

from safetyrepro.adapters import (Benchmark, DataFile, Item, MetricSpec, Request, Scorer, get_scorer, hookimpl,
                                  logprob_context, score_loglikelihoods, score_prediction)

HERE = Path(__file__).parent


class Capitals(Benchmark):
    name = "capitals"
    title = "Capitals"
    files = (DataFile("capitals/capitals.csv", "https://example.invalid/capitals.csv", "{sha}"),)
    subset_size = 6
    pool_size = 3
    subset_rule = "all"
    template_file = HERE / "capitals.yaml"
    metric_specs = (MetricSpec(name="accuracy", direction="higher", primary=True),)

    def parse(self, paths):
        import csv
        with open(paths["capitals/capitals.csv"], newline="") as handle:
            return [Item(id=f"capitals/{{n}}", benchmark=self.name, fields={{"country": r["country"]}},
                         options=(r["right"], r["wrong"]) if n % 2 else (r["wrong"], r["right"]),
                         labels=("A", "B"), gold=1 if n % 2 == 0 else 0, meta={{}})
                    for n, r in enumerate(csv.DictReader(handle))]

    def stratum(self, item):
        return "all"


@hookimpl
def safetyrepro_benchmarks():
    return [Capitals()]


class NormalisedLogprob(Scorer):
    """lm-eval's acc_norm: the logprob path's requests, decided by loglikelihood per candidate byte."""

    name = "logprob_norm"

    def generates(self, style):
        return style.reasoning

    def asks_loglikelihoods(self, style):
        return True

    def requests(self, cell_item, style, config):
        return get_scorer("logprob").requests(cell_item, style, config)

    def read(self, cell, cell_item, responses):
        reasoning = responses[0] if cell.style.reasoning else None
        scored = responses[1:] if cell.style.reasoning else responses
        lls = [float(s[0]) for s in scored]
        per_byte = [ll / len(c.encode()) for ll, c in zip(lls, cell_item.candidates)]
        pick = max(range(len(per_byte)), key=lambda i: (per_byte[i], -i))
        decided = score_prediction(cell.benchmark, cell_item.item, pick, rule="acc_norm argmax")
        flags = [s[1] for s in scored]
        return decided.model_copy(update={{"loglikelihoods": lls, "raw_output": reasoning,
                                           "is_greedy": None if None in flags else [bool(f) for f in flags]}})

    def describe(self, cell):
        return "argmax of the candidates' loglikelihoods divided by their length in bytes (lm-eval's acc_norm)"


class OptionText(Scorer):
    """The options' own text as the continuations (no harness task carries them)."""

    name = "option_text"

    def generates(self, style):
        return False

    def asks_loglikelihoods(self, style):
        return True

    def requests(self, cell_item, style, config):
        return [Request("loglikelihood", logprob_context(cell_item.context), " " + option)
                for option in cell_item.item.options]

    def read(self, cell, cell_item, responses):
        return score_loglikelihoods(cell.benchmark, cell_item.item, [s[0] for s in responses],
                                    is_greedy=[s[1] for s in responses])


@hookimpl
def safetyrepro_scorers():
    return [NormalisedLogprob(), OptionText()]


@hookimpl
def safetyrepro_template_styles():
    return {{"terse": {{"system": None, "user": "{{{{ item }}}} {{{{ answer_format }}}}"}}}}
'''

TEMPLATE = ("task: Name the capital.\nguidance: Pick the capital city.\n"
            "item: |-\n  What is the capital of {{ fields.country }}?\n"
            "  {% for label, option in choices -%}\n  {{ label }}. {{ option }}\n  {% endfor -%}\n"
            "answer_format: 'Reply \"Answer: X\".'\nreasoning_format: 'Think, then reply \"Answer: X\".'\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, data_dir: Path):
    """(site folder, data folder, env for subprocesses); the plugin is registered in this process too.
    The data folder holds the plugin's file beside (links to) the built-ins' upstream files."""
    root = tmp_path_factory.mktemp("plugin")
    data = root / "data" / "capitals"
    data.mkdir(parents=True)
    for entry in data_dir.iterdir():
        (root / "data" / entry.name).symlink_to(entry)
    with open(data / "capitals.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["country", "right", "wrong"])
        writer.writerows(CAPITALS)
    sha = hashlib.sha256((data / "capitals.csv").read_bytes()).hexdigest()
    site = root / "site"
    (site / "capitals_plugin").mkdir(parents=True)
    (site / "capitals_plugin" / "__init__.py").write_text(PLUGIN_SOURCE.format(sha=sha))
    (site / "capitals_plugin" / "capitals.yaml").write_text(TEMPLATE)
    dist = site / "capitals_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: capitals-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[safetyrepro]\ncapitals = capitals_plugin\n")
    sys.path.insert(0, str(site))
    module = importlib.import_module("capitals_plugin")
    register_plugin(module, name="capitals")
    env = {**os.environ, "PYTHONPATH": str(site), "SAFETYREPRO_DATA_DIR": str(root / "data"),
           "SAFETYREPRO_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    yield site, root / "data", env
    unregister_plugin(module)
    sys.path.remove(str(site))
    sys.modules.pop("capitals_plugin", None)


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "safetyrepro.adapters.cli", *args], capture_output=True,
                          text=True, env=env, timeout=600)


@pytest.mark.parametrize("scoring", ["logprob", "regex"])
def test_plugin_benchmark_runs_through_the_reference_runner(installed, scoring: str, lm, tmp_path: Path) -> None:
    _, data, _ = installed
    assert "capitals" in all_benchmarks() and "terse" in all_styles()
    cfg = build_config({"benchmark": "capitals", "template": "terse", "scoring": scoring, "fewshot": 3,
                        "n_resamples": 50})
    result = run(cfg, data_dir=data, out_dir=tmp_path / "out", show_progress=False)
    assert len(result.records) == 6
    assert all("What is the capital of" in r.messages[-1]["content"] for r in result.records)
    assert len(result.records[0].messages) == 7  # 3 exemplar pairs + the item
    assert list(result.metrics) == ["accuracy", "unparsed_rate"]  # unparsed_rate comes with every benchmark
    assert 0.0 <= result.metrics["accuracy"].value <= 1.0
    assert json.loads((tmp_path / "out/summary.json").read_text())["data"]["files"] == {
        "capitals/capitals.csv": all_benchmarks()["capitals"].files[0].sha256}


def test_plugin_data_is_verified_like_a_builtin(installed, tmp_path: Path) -> None:
    _, data, env = installed
    proc = _cli(env, "list")
    assert "capitals" in proc.stdout and "terse" in proc.stdout
    tampered = tmp_path / "data" / "capitals"
    tampered.mkdir(parents=True)
    (tampered / "capitals.csv").write_text((data / "capitals" / "capitals.csv").read_text() + "Chile,Santiago,Lima\n")
    proc = _cli(env, "run", "--benchmark", "capitals", "--data-dir", str(tmp_path / "data"))
    assert proc.returncode == 2 and "capitals.csv has sha256" in proc.stderr and "Traceback" not in proc.stderr


def test_plugin_gets_native_lm_eval_tasks(installed, lm, tmp_path: Path) -> None:
    _, data, env = installed
    proc = _cli(env, "lm-eval", "path")
    assert proc.returncode == 0, proc.stderr
    folder = Path(proc.stdout.strip())
    assert (folder / "safetyrepro_capitals_terse_logprob.yaml").is_file()
    assert (folder / "safetyrepro_bbq_terse_regex.yaml").is_file()  # the new style reaches built-ins too
    assert (folder / "safetyrepro-capitals.yaml").is_file()
    from safetyrepro.adapters.models.embedded import embedded_model_dir

    assert (folder / "safetyrepro_capitals_terse_logprob_norm.yaml").is_file()  # the plugin's scorer too
    tasks = ["safetyrepro_capitals_terse_logprob", "safetyrepro_capitals_terse_regex",
             "safetyrepro_crows_pairs_terse_logprob_norm"]
    lm_eval = subprocess.run(
        [str(Path(sys.executable).parent / "lm_eval"), "run", "--model", "hf", "--model_args",
         f"pretrained={embedded_model_dir()},dtype=float32", "--include_path", str(folder), "--tasks",
         ",".join(tasks), "--num_fewshot", "3", "--apply_chat_template", "--limit", "2", "--log_samples",
         "--output_path", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=1200)
    assert lm_eval.returncode == 0, lm_eval.stderr[-3000:]
    for name, benchmark, scoring in zip(tasks, ("capitals", "capitals", "crows_pairs"),
                                        ("logprob", "regex", "logprob_norm")):
        records = run(build_config({"benchmark": benchmark, "template": "terse", "scoring": scoring, "fewshot": 3,
                                    "limit": 2, "n_resamples": 0, "batch_size": 1}),
                      data_dir=data, show_progress=False).records
        items = read_lm_eval_samples(find_lm_eval_samples(tmp_path / "out", name))
        agreement = compare(name, items, records)
        assert agreement.ok, summary_line(agreement) + "\n" + "\n".join(agreement.differences)
        if scoring == "logprob_norm":  # lm-eval's answers, read by the plugin's rule
            assert {h.extraction_rule for h in items.values()} == {"acc_norm argmax"}
    # A scorer whose requests no lm-eval task carries is refused when the task loads, naming the fix.
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(folder), metadata={"data_dir": str(data)})
    with pytest.raises(Exception, match="declares the loglikelihood shape but asks item") as caught:
        manager.load(["safetyrepro_capitals_terse_option_text"])
    assert type(caught.value).__name__ == "ConfigError" and "-- fix: use scoring" in str(caught.value)


def test_plugin_gets_a_helm_run_entry(installed, lm, tmp_path: Path) -> None:
    """helm-run finds safetyrepro_capitals (and the terse style) through the entry points alone."""
    _, data, env = installed
    from safetyrepro.adapters.models.embedded import embedded_model_dir
    from safetyrepro.crosspkg.readers import read_helm_run

    proc = _cli(env, "helm", "prod-env", "--out", str(tmp_path / "prod_env"), "--model", str(embedded_model_dir()))
    assert proc.returncode == 0, proc.stderr
    model = "model=safetyrepro/smollm2-135m-instruct"
    helm = subprocess.run(
        [str(Path(sys.executable).parent / "helm-run"), "--run-entries",
         f"safetyrepro_capitals:template=terse,scoring=logprob,fewshot=3,limit=2,{model}",
         f"safetyrepro_crows_pairs:template=terse,scoring=logprob_norm,fewshot=3,limit=2,{model}",
         "--suite", "plugin", "--max-eval-instances", "2", "--local-path", "prod_env"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1200)
    assert helm.returncode == 0, helm.stderr[-3000:]
    for benchmark, scoring in (("capitals", "logprob"), ("crows_pairs", "logprob_norm")):
        records = run(build_config({"benchmark": benchmark, "template": "terse", "scoring": scoring, "fewshot": 3,
                                    "limit": 2, "n_resamples": 0, "batch_size": 1}),
                      data_dir=data, show_progress=False).records
        folder = next((tmp_path / "benchmark_output" / "runs" / "plugin").glob(f"safetyrepro_{benchmark}:*"))
        items = read_helm_run(folder)
        agreement = compare(f"helm-{benchmark}", items, records)
        assert agreement.ok, summary_line(agreement) + "\n" + "\n".join(agreement.differences)
        assert {h.extraction_rule for h in items.values()} == {records[0].extraction_rule}
    # A scorer HELM cannot ask: one line, exit 2, before anything runs.
    refused = subprocess.run(
        [str(Path(sys.executable).parent / "helm-run"), "--run-entries",
         f"safetyrepro_capitals:template=terse,scoring=option_text,limit=2,{model}", "--suite", "refused",
         "--max-eval-instances", "2", "--local-path", "prod_env"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1200)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2 and len(errors) == 1 and "option_text" in errors[0], refused.stderr[-2000:]
    assert "Traceback" not in refused.stderr


def test_plugin_scorer_through_inspect(installed, lm, tmp_path: Path) -> None:
    """``inspect eval safetyrepro/benchmark -T scoring=logprob_norm``: the provider's loglikelihoods,
    read by the plugin's rule; a scorer Inspect cannot ask is one line."""
    _, data, env = installed
    from inspect_ai.log import read_eval_log

    inspect = str(Path(sys.executable).parent / "inspect")
    proc = subprocess.run([inspect, "eval", "safetyrepro/benchmark", "-T", "name=crows_pairs", "-T", "template=terse",
                           "-T", "scoring=logprob_norm", "--model", "safetyrepro/embedded", "--limit", "2",
                           "--log-dir", str(tmp_path), "--display", "plain"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    log = read_eval_log(str(next(tmp_path.glob("*.eval"))))
    records = {r.item_id: r for r in run(build_config({"benchmark": "crows_pairs", "template": "terse",
                                                       "scoring": "logprob_norm", "limit": 2, "n_resamples": 0,
                                                       "batch_size": 1}), data_dir=data, show_progress=False).records}
    from safetyrepro.crosspkg.agreement import LL_TOLERANCE

    for sample in log.samples:
        outcome = next(iter(sample.scores.values())).metadata["outcome"]
        record = records[sample.id]
        assert outcome["extraction_rule"] == "acc_norm argmax" and outcome["prediction"] == record.prediction
        assert max(abs(a - b) for a, b in zip(outcome["loglikelihoods"], record.loglikelihoods)) <= LL_TOLERANCE
    refused = subprocess.run([inspect, "eval", "safetyrepro/benchmark", "-T", "name=capitals", "-T", "template=terse",
                              "-T", "scoring=option_text", "--model", "safetyrepro/embedded", "--limit", "2",
                              "--log-dir", str(tmp_path / "refused"), "--display", "plain"],
                             capture_output=True, text=True, env=env, timeout=900)
    text = " ".join((refused.stdout + refused.stderr).split())
    assert refused.returncode != 0 and "declares the loglikelihood shape but asks item" in text, text[-2000:]
    assert "Traceback" not in text


def test_plugin_gone_after_unregister(installed) -> None:
    from safetyrepro.adapters import _registry

    module = sys.modules["capitals_plugin"]
    unregister_plugin(module)
    try:
        assert set(all_benchmarks()) == {"truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"}
        from safetyrepro.lm_eval_tasks import include_path
        from safetyrepro.lm_eval_tasks.generate import COMMITTED

        assert include_path() == COMMITTED
    finally:
        _registry.register_plugin(module, name="capitals")


# ---- a third-party scoring path through every engine and binding ---------------------------------

def _per_byte_pick(record) -> int:  # noqa: ANN001 - an ItemRecord or its dict
    lls = record["loglikelihoods"] if isinstance(record, dict) else record.loglikelihoods
    candidates = record["candidates"] if isinstance(record, dict) else record.candidates
    per_byte = [ll / len(c.encode()) for ll, c in zip(lls, candidates)]
    return max(range(len(per_byte)), key=lambda i: (per_byte[i], -i))


def test_plugin_scorer_runs_through_the_runner_on_the_shared_engine(installed, lm) -> None:
    """The plugin's requests are the logprob path's, so the engine answers them with the same
    numbers; its own rule decides (recomputed here from the records)."""
    records = {}
    for scoring in ("logprob", "logprob_norm", "option_text"):
        config = build_config({"benchmark": "crows_pairs", "template": "terse", "scoring": scoring, "limit": 4,
                               "n_resamples": 0})
        records[scoring] = run(config, data_dir=installed[1], show_progress=False).records
    for raw, norm in zip(records["logprob"], records["logprob_norm"]):
        assert norm.loglikelihoods == raw.loglikelihoods and norm.prompt == raw.prompt
        assert norm.extraction_rule == "acc_norm argmax" and norm.prediction == _per_byte_pick(norm)
    # CrowS' candidates are its sentences, so option_text asks the same continuations there.
    assert [r.loglikelihoods for r in records["option_text"]] == [r.loglikelihoods for r in records["logprob"]]


@pytest.fixture(scope="module")
def plugin_grid(installed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A grid with the plugin's scorer beside the built-in one it shares its requests with."""
    import yaml
    from cli_in_process import cli

    root = tmp_path_factory.mktemp("plugin_grid")
    grid = {"models": [{"name": "fp32"}, {"name": "bf16", "dtype": "bfloat16"}, {"name": "nf4", "quantization": "nf4"}],
            "benchmarks": ["crows_pairs", "capitals"], "templates": ["terse", "minimal"],
            "scorings": ["logprob", "logprob_norm"], "fewshots": [0], "decodings": ["greedy"], "limit": 4,
            "n_resamples": 50, "gates": {"repeat": {"configs": [{"template": "terse"}]}, "replay": {"share": 0.5}}}
    (root / "grid.yaml").write_text(yaml.safe_dump(grid))
    proc = cli("grid", "grid.yaml", "--out", "g", "--threads", "1", "--data-dir", str(installed[1]), cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def test_plugin_scorer_through_a_grid_verify_the_replay_gate_and_stats(installed, plugin_grid: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd
    from cli_in_process import cli

    monkeypatch.setenv("SAFETYREPRO_DATA_DIR", str(installed[1]))
    run_dir = plugin_grid / "g"
    summary = json.loads((run_dir / "summary.json").read_text())
    # logprob and logprob_norm ask the same requests: computed once, read twice.
    assert summary["requests"] < summary["requests_asked_by_cells"]
    for cell in json.loads((run_dir / "plan.json").read_text())["cells"]:
        if cell["scoring"] == "logprob_norm":
            lines = (run_dir / "cells" / cell["cell_id"] / "records.jsonl").read_text().splitlines()
            for record in map(json.loads, lines):
                assert record["extraction_rule"] == "acc_norm argmax" and record["prediction"] == _per_byte_pick(record)
    assert cli("verify", str(run_dir), cwd=plugin_grid).returncode == 0
    proc = cli("gate", str(run_dir), "--replay", cwd=plugin_grid)
    assert proc.returncode == 0 and "replay" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    gates = json.loads((run_dir / "gates" / "gates.json").read_text())
    assert gates["gates"]["replay"]["identical_responses"] == 1.0
    proc = cli("stats", str(run_dir), "--n-resamples", "50", cwd=plugin_grid)
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = pd.read_csv(run_dir / "report" / "scores.csv")
    assert set(scores["scoring"]) == {"logprob", "logprob_norm"}
    card = next((run_dir / "report" / "cards").glob("*.yaml")).read_text()
    assert "scoring_rule:" in card
    assert cli("verify", str(run_dir), cwd=plugin_grid).returncode == 0  # the gates' verdict recomputes


def test_plugin_scorer_on_ray_equals_the_local_run(installed, plugin_grid: Path) -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the Ray executor is tested where the [ray] extra is installed (scripts/setup.sh)")
    _, _, env = installed
    from grid_files import results

    proc = subprocess.run([sys.executable, "-m", "safetyrepro.adapters.cli", "grid", "grid.yaml", "--out", "g_ray",
                           "--executor", "ray", "--workers", "1", "--threads", "1"], cwd=plugin_grid,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert results(plugin_grid / "g_ray") == results(plugin_grid / "g")

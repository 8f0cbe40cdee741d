"""A sixth benchmark and a fifth template style from a third-party plugin: zero edits outside it.

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

from safetyrepro.adapters import Benchmark, DataFile, Item, MetricSpec, hookimpl

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


@hookimpl
def safetyrepro_template_styles():
    return {{"terse": {{"system": None, "user": "{{{{ item }}}} {{{{ answer_format }}}}"}}}}
'''

TEMPLATE = ("task: Name the capital.\nguidance: Pick the capital city.\n"
            "item: |-\n  What is the capital of {{ fields.country }}?\n"
            "  {% for label, option in choices -%}\n  {{ label }}. {{ option }}\n  {% endfor -%}\n"
            "answer_format: 'Reply \"Answer: X\".'\nreasoning_format: 'Think, then reply \"Answer: X\".'\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory):
    """(site folder, data folder, env for subprocesses); the plugin is registered in this process too."""
    root = tmp_path_factory.mktemp("plugin")
    data = root / "data" / "capitals"
    data.mkdir(parents=True)
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

    tasks = ["safetyrepro_capitals_terse_logprob", "safetyrepro_capitals_terse_regex"]
    lm_eval = subprocess.run(
        [str(Path(sys.executable).parent / "lm_eval"), "run", "--model", "hf", "--model_args",
         f"pretrained={embedded_model_dir()},dtype=float32", "--include_path", str(folder), "--tasks",
         ",".join(tasks), "--num_fewshot", "3", "--apply_chat_template", "--limit", "2", "--log_samples",
         "--output_path", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=1200)
    assert lm_eval.returncode == 0, lm_eval.stderr[-3000:]
    for name, scoring in zip(tasks, ("logprob", "regex")):
        records = run(build_config({"benchmark": "capitals", "template": "terse", "scoring": scoring, "fewshot": 3,
                                    "limit": 2, "n_resamples": 0, "batch_size": 1}),
                      data_dir=data, show_progress=False).records
        agreement = compare(name, read_lm_eval_samples(find_lm_eval_samples(tmp_path / "out", name)), records)
        assert agreement.ok, summary_line(agreement) + "\n" + "\n".join(agreement.differences)


def test_plugin_gets_a_helm_run_entry(installed, lm, tmp_path: Path) -> None:
    """helm-run finds safetyrepro_capitals (and the terse style) through the entry points alone."""
    _, data, env = installed
    from safetyrepro.adapters.models.embedded import embedded_model_dir
    from safetyrepro.crosspkg.readers import read_helm_run

    proc = _cli(env, "helm", "prod-env", "--out", str(tmp_path / "prod_env"), "--model", str(embedded_model_dir()))
    assert proc.returncode == 0, proc.stderr
    helm = subprocess.run(
        [str(Path(sys.executable).parent / "helm-run"), "--run-entries",
         "safetyrepro_capitals:template=terse,scoring=logprob,fewshot=3,limit=2,model=safetyrepro/smollm2-135m-instruct",
         "--suite", "plugin", "--max-eval-instances", "2", "--local-path", "prod_env"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1200)
    assert helm.returncode == 0, helm.stderr[-3000:]
    records = run(build_config({"benchmark": "capitals", "template": "terse", "scoring": "logprob", "fewshot": 3,
                                "limit": 2, "n_resamples": 0, "batch_size": 1}), data_dir=data, show_progress=False).records
    folder = next((tmp_path / "benchmark_output" / "runs" / "plugin").glob("safetyrepro_capitals:*"))
    agreement = compare("helm-capitals", read_helm_run(folder), records)
    assert agreement.ok, summary_line(agreement) + "\n" + "\n".join(agreement.differences)


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

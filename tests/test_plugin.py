"""A third-party benchmark and template style, registered through the public hooks only."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest

from safetyrepro.adapters import all_benchmarks, all_styles, build_config, hookimpl, register_plugin, run, unregister_plugin
from safetyrepro.adapters.benchmarks.base import Benchmark
from safetyrepro.adapters.items import Item
from safetyrepro.adapters.metrics import accuracy_metrics

CAPITALS = [("France", "Paris", "Rome"), ("Italy", "Rome", "Madrid"), ("Spain", "Madrid", "Paris"),
            ("Japan", "Tokyo", "Seoul"), ("Korea", "Seoul", "Tokyo"), ("Egypt", "Cairo", "Lima"),
            ("Peru", "Lima", "Cairo"), ("Kenya", "Nairobi", "Oslo"), ("Norway", "Oslo", "Nairobi")]


class Capitals(Benchmark):
    """A tiny benchmark with its own data file and template blocks."""

    name = "capitals"
    title = "Capitals"
    subset_size = 6
    pool_size = 3
    primary_metric = "accuracy"
    subset_rule = "all"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.template_file = folder / "capitals.yaml"

    def load(self, source) -> list[Item]:
        return self.parse({"capitals.csv": self.folder / "capitals.csv"})

    def parse(self, paths: dict[str, Path]) -> list[Item]:
        with open(paths["capitals.csv"], newline="") as handle:
            return [Item(id=f"capitals/{n}", benchmark=self.name, fields={"country": r["country"]},
                         options=(r["right"], r["wrong"]) if n % 2 else (r["wrong"], r["right"]),
                         labels=("A", "B"), gold=1 if n % 2 == 0 else 0, meta={})
                    for n, r in enumerate(csv.DictReader(handle))]

    def stratum(self, item: Item) -> str:
        return "all"

    def metrics(self, records: Sequence, *, seed: int, n_resamples: int):
        return accuracy_metrics(records, seed=seed, n_resamples=n_resamples)


@pytest.fixture
def plugin(tmp_path: Path):
    with open(tmp_path / "capitals.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["country", "right", "wrong"])
        writer.writerows(CAPITALS)
    (tmp_path / "capitals.yaml").write_text(
        "task: Name the capital.\nguidance: Pick the capital city.\n"
        "item: |-\n  What is the capital of {{ fields.country }}?\n"
        "  {% for label, option in choices -%}\n  {{ label }}. {{ option }}\n  {% endfor -%}\n"
        "answer_format: 'Reply \"Answer: X\".'\nreasoning_format: 'Think, then reply \"Answer: X\".'\n")
    bench = Capitals(tmp_path)
    module = SimpleNamespace(
        safetyrepro_benchmarks=hookimpl(lambda: [bench]),
        safetyrepro_template_styles=hookimpl(lambda: {"terse": {"system": None, "user": "{{ item }} {{ answer_format }}"}}),
    )
    register_plugin(module, name="capitals-plugin")
    yield bench
    unregister_plugin(module)


@pytest.mark.parametrize("scoring", ["logprob", "regex"])
def test_plugin_benchmark_runs_through_the_reference_runner(plugin, scoring: str, lm, tmp_path: Path) -> None:
    assert "capitals" in all_benchmarks() and "terse" in all_styles()
    cfg = build_config({"benchmark": "capitals", "template": "terse", "scoring": scoring, "fewshot": 3,
                        "n_resamples": 50})
    result = run(cfg, out_dir=tmp_path / "out", show_progress=False)
    assert len(result.records) == 6
    assert all("What is the capital of" in r.messages[-1]["content"] for r in result.records)
    assert len(result.records[0].messages) == 7  # 3 exemplar pairs + the item
    assert 0.0 <= result.metrics["accuracy"].value <= 1.0
    assert (tmp_path / "out/summary.json").is_file()


def test_built_ins_are_untouched_after_unregister(plugin) -> None:
    assert "capitals" in all_benchmarks()


def test_plugin_gone_after_teardown() -> None:
    assert "capitals" not in all_benchmarks()
    assert set(all_benchmarks()) == {"truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"}

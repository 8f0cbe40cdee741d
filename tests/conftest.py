"""Shared fixtures: the real data folder, the real embedded model, offline hubs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SAFETYREPRO_TEST_DATA") or REPO.parent / "shared" / "data")
# Module-scoped fixtures and subprocesses (lm_eval) run outside the per-test monkeypatch below.
os.environ["SAFETYREPRO_DATA_DIR"] = str(DATA)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA / "xstest" / "xstest_prompts.csv").is_file():
        pytest.fail(f"real benchmark data not found at {DATA}; set SAFETYREPRO_TEST_DATA")
    return DATA


@pytest.fixture(autouse=True)
def _data_env(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> None:
    monkeypatch.setenv("SAFETYREPRO_DATA_DIR", str(data_dir))


@pytest.fixture(scope="session")
def source(data_dir: Path):
    from safetyrepro.adapters.datafiles import resolve_data_dir

    return resolve_data_dir(data_dir)


@pytest.fixture(scope="session")
def all_items(source) -> dict:
    from safetyrepro.adapters import all_benchmarks

    return {name: bench.load(source) for name, bench in all_benchmarks().items()}


@pytest.fixture(scope="session")
def lm():
    from safetyrepro.adapters.config import ModelSpec
    from safetyrepro.adapters.runner import load_model

    return load_model(ModelSpec())


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 - pytest hook
    """Per-rule precision of the regex readout on the labelled corpus (test_extraction_corpus)."""
    module = __import__("sys").modules.get("test_extraction_corpus") or __import__("sys").modules.get(
        "tests.test_extraction_corpus")
    tally = getattr(module, "RULE_TALLY", None)
    if not tally:
        return
    terminalreporter.section("regex readout: per-rule precision on the held-out labelled corpus")
    for rule, counts in sorted(tally.items()):
        decided = counts["right"] + counts["wrong"]
        terminalreporter.write_line(f"{rule:>22}: {counts['right']}/{decided} = {counts['right'] / decided:.3f}")

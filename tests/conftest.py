"""Shared fixtures: the real data folder, the real embedded model, offline hubs."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SAFETYREPRO_TEST_DATA") or REPO.parent / "shared" / "data")
# Module-scoped fixtures and subprocesses (lm_eval) run outside the per-test monkeypatch below.
os.environ["SAFETYREPRO_DATA_DIR"] = str(DATA)

WORKER_TALLIES = pytest.StashKey[dict[str, Counter]]()
"""The controller's merge of the workers' per-rule tallies (pytest_testnodedown)."""


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


# The suite runs in two pytest-xdist workers, a file at a time (scripts/test.sh: --dist loadfile, so a
# module's fixtures -- harness CLI runs, loaded models -- are built once, in one worker). A worker
# takes the next file when it is free, so the files that take longest go first: started last, one of
# them would leave the other worker idle at the end. Slowest first by the per-file times (setup +
# calls) of the one-process suite at two torch threads; at one thread a worker now, the weights have
# shifted somewhat (test_inspect, test_prefix, test_plugin, test_lm_eval gained on test_pilot and
# test_statsreport). A file not named keeps its place after these. The order changes only how the
# work is balanced, never what a test sees.
HEAVY_FIRST = (
    "test_crosspkg", "test_statsreport", "test_inspect", "test_pilot", "test_native_inspect",
    "test_prefix", "test_helm", "test_plugin", "test_bad_input", "test_lm_eval", "test_gridrun",
    "test_endpoint_logprobs", "test_nothing_lost", "test_gridray", "test_endpoint", "test_symmetric",
)


def pytest_collection_modifyitems(config, items) -> None:  # noqa: ANN001 - pytest hook
    rank = {name: place for place, name in enumerate(HEAVY_FIRST)}
    # sorted() is stable: tests keep their order inside a file, unnamed files their order among themselves.
    items[:] = sorted(items, key=lambda item: rank.get(item.path.stem, len(HEAVY_FIRST)))


def _rule_tally() -> dict[str, dict[str, int]]:
    """This process's per-rule tally from test_extraction_corpus (empty where it did not run here)."""
    module = sys.modules.get("test_extraction_corpus") or sys.modules.get("tests.test_extraction_corpus")
    return {rule: dict(counts) for rule, counts in getattr(module, "RULE_TALLY", {}).items()}


def pytest_sessionfinish(session) -> None:  # noqa: ANN001 - pytest hook
    # Under xdist the corpus tests ran in a worker: hand its tally to the controller, which prints it.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["rule_tally"] = json.dumps(_rule_tally())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # noqa: ANN001 - xdist hook, in the controller
    merged = node.config.stash.setdefault(WORKER_TALLIES, {})
    for rule, counts in json.loads(getattr(node, "workeroutput", {}).get("rule_tally", "{}")).items():
        merged.setdefault(rule, Counter()).update(counts)


def pytest_terminal_summary(terminalreporter, config) -> None:  # noqa: ANN001 - pytest hook
    """Per-rule precision of the regex readout on the labelled corpus (test_extraction_corpus)."""
    tally = config.stash.get(WORKER_TALLIES, None) or _rule_tally()
    if not tally:
        return
    terminalreporter.section("regex readout: per-rule precision on the held-out labelled corpus")
    for rule, counts in sorted(tally.items()):
        counts = Counter(counts)
        decided = counts["right"] + counts["wrong"]
        terminalreporter.write_line(f"{rule:>22}: {counts['right']}/{decided} = {counts['right'] / decided:.3f}")

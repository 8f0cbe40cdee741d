"""The stability gates' configuration and verdict rules (no model: the gates on a real run are
tested in test_statsreport.py, whose grid freezes them)."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
import yaml
from cli_in_process import cli

from safetyrepro.adapters.instrument import item_score, ordering, spearman, verdict
from safetyrepro.adapters.grid import build_grid, plan
from safetyrepro.adapters.records import ItemRecord

GRID = {"models": [{"name": "a", "path": "embedded"}, {"name": "b", "path": "embedded", "quantization": "nf4"}],
        "benchmarks": ["bbq", "xstest"], "templates": ["minimal", "cot"], "scorings": ["logprob", "regex"],
        "fewshots": [0, 3], "decodings": ["greedy", "t0.7"], "limit": 5, "seed": 7,
        "exclusions": [{"scoring": "logprob", "template": "cot"}]}
# This grid's plan hash as computed by the code before gates existed (commit bcca858) was 80e8a260...;
# extraction v3 to v18 (issue 28) deliberately moved the hashes of its regex cells (tests/test_hashing.py;
# v3 gave 33585691..., v4 8682bd22..., v5 830430fa..., v6 433ca2c5..., v7 243d163f..., v8 521b4776...,
# v9 e13cb2a0..., v10 cf0975b5..., v11 bb1ffcdd..., v12 318a34b7..., v13 9745d5bb..., v14 c6cd7ef1..., v15 cdffed9e..., v16 a78048ef..., v17 3e85ceab...), so the pin is now the v18 value, and its logprob-only part keeps the
# value the code before v3 gave.
PRE_GATES_PLAN_SHA256 = "f03c144f748aa9ec5207589d8af6adab0756d6209484446e0fdd6e1b32b8757c"
LOGPROB_PART_SHA256 = "7c31afe5566664090f0894ae55bcaa210d8ee5598ba06d14b8106e059e747cb2"  # commit 4aeae9f


def plan_hash(doc: dict) -> str:
    return plan(build_grid(doc, source="grid.yaml"))["plan_sha256"]


def test_a_grid_without_gates_keeps_its_plan_hash() -> None:
    assert plan_hash(GRID) == PRE_GATES_PLAN_SHA256
    assert plan_hash({**GRID, "scorings": ["logprob"], "exclusions": []}) == LOGPROB_PART_SHA256


def test_gates_are_frozen_in_the_plan() -> None:
    with_gates = plan_hash({**GRID, "gates": {}})
    assert with_gates != PRE_GATES_PLAN_SHA256
    # A threshold is part of the plan: loosening it after the fact is another plan.
    assert plan_hash({**GRID, "gates": {"repeat": {"threshold": 0.8}}}) != with_gates
    assert plan_hash({**GRID, "gates": {"replay": {"share": 0.5}}}) != with_gates
    # Spelling out the defaults is the same plan.
    assert plan_hash({**GRID, "gates": {"repeat": {"threshold": 0.9}, "replay": {"share": 1.0}}}) == with_gates


def test_repeats_are_planned_after_each_models_cells() -> None:
    from safetyrepro.adapters.gridplan import GridPlan

    doc = {**GRID, "gates": {"repeat": {"configs": [{"benchmark": "xstest", "template": "minimal"}]}}}
    grid = build_grid(doc, source="grid.yaml")
    prepared = GridPlan(plan(grid), grid, None)
    repeats = [cr.cell for cr in prepared.repeats]
    chosen = [c for c in plan(grid)["cells"] if c["benchmark"] == "xstest" and c["template"] == "minimal"]
    assert sorted(c["cell_id"] for c in repeats) == sorted(c["cell_id"] for c in chosen) and repeats
    order = [(r.model, r.repeat) for r in (prepared.requests[k] for k in prepared.keys)]
    for model in ("a", "b"):
        own = [repeat for name, repeat in order if name == model]
        assert own == sorted(own, key=lambda r: r is not None)  # every repeat after the model's cells
        assert any(own) and own.count(1) > 0


def run_plan(tmp_path: Path, doc: dict) -> subprocess.CompletedProcess:
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(doc))
    return cli("plan", "grid.yaml", cwd=tmp_path)


@pytest.mark.parametrize("gates, message", [
    ({"repeat": {"configs": [{"model": "a"}]}}, "gates.repeat.configs 0 names ['model']"),
    ({"repeat": {"configs": [{"template": "persona"}]}}, "'persona' is not one of the grid's levels"),
    ({"repeat": {"threshold": 1.5}}, "threshold"),
    ({"replay": {"share": 0}}, "share"),
    ({"repeats": {}}, "repeats"),
])
def test_bad_gates_get_one_clear_error(tmp_path: Path, gates: dict, message: str) -> None:
    proc = run_plan(tmp_path, {**GRID, "gates": gates})
    assert proc.returncode == 2, proc.stdout
    assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_verdict_needs_every_computed_number_at_the_threshold() -> None:
    assert verdict([0.95, 0.91], 0.9) == "PASS"
    assert verdict([0.95, 0.89], 0.9) == "FAIL"
    assert verdict([0.95, math.nan], 0.9) == "PASS"  # no ranking to compare: rests on the items
    assert verdict([math.nan, math.nan], 0.9) == "FAIL"  # nothing measured does not pass
    assert verdict([1.0], 1.0) == "PASS"


def test_spearman_and_orderings() -> None:
    assert spearman([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]) == 1.0
    assert spearman([0.1, 0.2, 0.3], [0.3, 0.2, 0.1]) == pytest.approx(-1.0)
    assert spearman([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]) == 0.0  # no order on one side: no agreement
    assert spearman([0.1, math.nan, 0.3, 0.2], [0.1, 0.9, 0.2, 0.3]) == pytest.approx(0.5)
    assert ordering({"a": 0.5, "b": 0.7, "c": 0.5}) == (("b",), ("a", "c"))


def record(**fields: object) -> ItemRecord:
    base = {"item_id": "i", "config_hash": "c", "messages": [], "prompt": "p", "options": ["x", "y", "z"],
            "labels": ["A", "B", "C"], "candidates": ["A", "B", "C"], "gold": 1, "gold_label": "B",
            "prediction": 1, "prediction_label": "B", "extraction_rule": "r", "correct": True, "meta": {}}
    return ItemRecord.model_validate({**base, **fields})


def test_item_score_is_the_gold_probability_or_correctness() -> None:
    lls = [math.log(0.2), math.log(0.6), math.log(0.2)]
    assert item_score(record(loglikelihoods=lls)) == pytest.approx(0.6)
    assert item_score(record(prediction=2, prediction_label="C", correct=False)) == 0.0
    assert item_score(record(prediction=None, prediction_label=None, correct=None, extraction_rule="unparsed")) == 0.0
    # No gold (CrowS-Pairs): the probability of option 0, the same option in both measurements.
    assert item_score(record(gold=None, gold_label=None, correct=None, loglikelihoods=lls)) == pytest.approx(0.2)
    # Symmetric: the mapping-free preference of the gold option.
    assert item_score(record(loglikelihoods=lls, meta={"symmetric": {"z_sym": [0.1, -0.4, 0.2]}})) == -0.4

"""`crosspkg compare` through the real lm_eval, inspect and helm-run CLIs, in both modes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from safetyrepro.crosspkg.agreement import HarnessItem
from safetyrepro.crosspkg.anchor import Anchor, cell_for
from safetyrepro.crosspkg.cli import exit_status
from safetyrepro.crosspkg.compare import Comparison
from safetyrepro.crosspkg.diff import diff_items

BIN = Path(sys.executable).parent
ANCHOR = {"model": "embedded", "benchmarks": ["truthfulqa", "crows_pairs"], "template": "minimal",
          "scoring": "logprob", "fewshot": 0, "decoding": "greedy", "limit": 2,
          "harnesses": ["lm_eval", "inspect", "helm"], "mode": "both", "scoring_gap": "regex"}


def crosspkg(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([str(BIN / "crosspkg"), *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=2400)


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    root = tmp_path_factory.mktemp("crosspkg")
    (root / "anchor.yaml").write_text(yaml.safe_dump(ANCHOR))
    proc = crosspkg("compare", "anchor.yaml", "--out", "c1", cwd=root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc, root


def test_harmonized_runs_agree_and_the_report_says_so(compared) -> None:
    proc, root = compared
    out = root / "c1"
    assert "All harmonized runs agree item by item." in proc.stdout
    assert "[" in proc.stderr and "lm_eval: done in" in proc.stderr  # progress while it runs
    report = (out / "report.md").read_text()
    assert "All harmonized runs agree item by item." in report
    scores = json.loads((out / "scores.json").read_text())
    runs = {(s["benchmark"], s["harness"], s["mode"]) for s in scores["scores"]}
    for benchmark in ANCHOR["benchmarks"]:
        assert {(benchmark, h, "harmonized") for h in ("core", "lm_eval", "inspect", "helm")} <= runs
        assert (benchmark, "lm_eval", "native") in runs
        harmonized = {s["value"] for s in scores["scores"] if s["benchmark"] == benchmark and s["mode"] == "harmonized"}
        assert len(harmonized) == 1  # the same predictions give the same score
    assert scores["findings"] == 0
    anchor = Anchor.model_validate(ANCHOR)
    assert scores["header"]["config_sha256"] == {b: anchor.run_config(b).config_hash() for b in ANCHOR["benchmarks"]}
    assert scores["header"]["anchor_sha256"] == anchor.anchor_hash()
    assert {"lm_eval", "inspect_ai", "crfm-helm", "torch", "transformers"} <= set(scores["header"]["versions"])


def test_items_table_and_native_diffs(compared) -> None:
    import pandas as pd

    _, root = compared
    out = root / "c1"
    items = pd.read_parquet(out / "items.parquet")
    # truthfulqa: 2 items x (core, lm_eval, inspect, helm, lm_eval native, helm native, inspect native);
    # crows_pairs: 2 items x the same without HELM's and Inspect's (neither has CrowS-Pairs)
    assert len(items) == 24
    assert set(items["harness"]) == {"core", "lm_eval", "inspect", "helm"}
    helm_native = items[(items["harness"] == "helm") & (items["mode"] == "native")]
    assert sorted(helm_native["item_id"]) == sorted(items[(items["harness"] == "core")
                                                          & (items["benchmark"] == "truthfulqa")]["item_id"])
    assert helm_native["prompt"].str.contains("Question: ").all()  # HELM's own joint prompt
    harmonized = items[items["mode"] == "harmonized"]
    assert harmonized.groupby(["benchmark", "item_id"])["prompt"].nunique().max() == 1
    diffs = json.loads((out / "diffs.json").read_text())
    native = diffs["truthfulqa:core~lm_eval-native"]
    assert native and all(d["cause"] == "prompt" for d in native)  # lm-eval's primer prompt
    helm_native = diffs["truthfulqa:core~helm-native"]
    assert all("a generation, read by HELM exact match" in d["differences"]["readout"] for d in helm_native)
    assert "Q: What is human life expectancy" in native[0]["differences"]["prompt"]
    assert not [d for key, entries in diffs.items() if "native" not in key for d in entries if d["finding"]]
    report = (out / "report.md").read_text()
    assert "## Native metrics as each harness reports them" in report and "pct_stereotype" in report
    assert "inspect (native): crows_pairs: Inspect has no CrowS-Pairs implementation" in report
    assert "inspect (native): truthfulqa: inspect_evals' own truthfulqa (mc1; samples and choices shuffled" in report
    assert "helm (native): crows_pairs: HELM has no CrowS-Pairs scenario" in report
    assert diffs["truthfulqa:core~helm-native"] and "exact_match" in report
    assert "truthfulqa, core vs lm_eval-native" in report
    assert "truthfulqa: core, lm_eval, inspect, helm give the same prediction on all 2 items." in report
    html = (out / "report.html").read_text()
    assert "<img src='scores.png'" in html and (out / "scores.png").stat().st_size > 1000
    # inspect_evals' truthfulqa, its choices shuffled with its seed, read back as the core's options and gold
    inspect_native = items[(items["harness"] == "inspect") & (items["mode"] == "native")]
    cell = cell_for(Anchor.model_validate(ANCHOR).run_config("truthfulqa"))
    assert sorted(inspect_native["item_id"]) == sorted(c.item.id for c in cell.items)
    shuffled = _inspect_evals_truthfulqa_choices(cell)
    for _, row in inspect_native.iterrows():
        core = cell.item(row["item_id"]).item
        assert json.loads(row["candidates"]) == shuffled[row["item_id"]] and row["gold"] == core.gold
        assert "'ANSWER: $LETTER' (without quotes)" in row["prompt"]
    for harness in ("lm_eval", "inspect", "helm", "lm_eval-native", "helm-native", "inspect-native"):
        assert (out / harness / "command.txt").is_file() and (out / harness / "exit_status.txt").read_text() == "0\n"


def _inspect_evals_truthfulqa_choices(cell) -> dict[str, list[str]]:
    """Each core item's choice order as inspect_evals' truthfulqa shows it, recomputed here from its
    own steps: the hub's 817 questions (v0/mc_task.json's order) shuffled by datasets with seed 42,
    then every sample's choices shuffled in that order by one random.Random(42)."""
    import random

    from datasets import Dataset

    from safetyrepro.crosspkg.native import data_files

    entries = json.loads(data_files(cell)["truthfulqa/v0/mc_task.json"].read_text())
    order = Dataset.from_dict({"row": list(range(len(entries)))}).shuffle(seed=42)["row"]
    rand, shown = random.Random(42), {}
    for row in order:
        positions = list(range(len(entries[row]["mc1_targets"])))
        rand.shuffle(positions)
        shown[entries[row]["question"].strip()] = [list(entries[row]["mc1_targets"])[i] for i in positions]
    return {c.item.id: shown[c.item.fields["question"].strip()] for c in cell.items}


def test_factor_ladder_walks_from_native_to_harmonized(compared) -> None:
    _, root = compared
    scores = json.loads((root / "c1" / "scores.json").read_text())
    by_run = {(s["benchmark"], s["harness"], s["mode"]): s["value"] for s in scores["scores"]}
    for benchmark in ANCHOR["benchmarks"]:
        steps = scores["ladder"]["lm_eval-native"][benchmark]
        assert [s["step"] for s in steps] == ["native", "prompt", "candidates", "readout"]
        assert steps[0]["score"]["value"] == by_run[(benchmark, "lm_eval", "native")]
        assert steps[-1]["score"]["value"] == by_run[(benchmark, "lm_eval", "harmonized")]
        assert all(0 <= s["changed"] <= ANCHOR["limit"] for s in steps)
    # HELM's ladder: its joint prompt lists the options, so the core's candidates go in first.
    steps = scores["ladder"]["helm-native"]["truthfulqa"]
    assert [s["step"] for s in steps] == ["native", "candidates", "prompt", "readout"]
    # Inspect's too (inspect_evals' multiple_choice prompt lists the options).
    from inspect_ai.log import read_eval_log

    logs = {read_eval_log(str(p), header_only=True).eval.task: p
            for p in (root / "c1" / "inspect-native" / "logs").glob("*.eval")}
    swapped = read_eval_log(str(logs["crosspkg_ladder_candidates_truthfulqa"]))
    cell = cell_for(Anchor.model_validate(ANCHOR).run_config("truthfulqa"))
    core_options = {tuple(c.item.options): c.item.gold for c in cell.items}
    for sample in swapped.samples or []:  # inspect_evals' task, the core's options in the core's order
        assert tuple(sample.choices or []) in core_options and sample.target == "ABCDEFGHIJKLM"[core_options[tuple(sample.choices)]]
    inspect_steps = scores["ladder"]["inspect-native"]["truthfulqa"]
    assert [s["step"] for s in inspect_steps] == ["native", "candidates", "prompt", "readout"]
    assert inspect_steps[0]["score"]["value"] == by_run[("truthfulqa", "inspect", "native")]
    assert inspect_steps[-1]["score"]["value"] == by_run[("truthfulqa", "inspect", "harmonized")]
    assert steps[0]["score"]["value"] == by_run[("truthfulqa", "helm", "native")]
    assert steps[-1]["score"]["value"] == by_run[("truthfulqa", "helm", "harmonized")]
    assert "crows_pairs" not in scores["ladder"]["helm-native"]  # HELM has no CrowS-Pairs scenario
    runs = root / "c1" / "helm-native" / "benchmark_output" / "runs" / "native"
    state = json.loads(next(runs.glob("crosspkg_ladder_candidates:benchmark=truthfulqa,*")).joinpath(
        "scenario_state.json").read_text())
    cell = cell_for(Anchor.model_validate(ANCHOR).run_config("truthfulqa"))
    options = {tuple(c.item.options): c.item.gold for c in cell.items}
    evaluated = [s["instance"] for s in state["request_states"]]
    assert len(evaluated) == ANCHOR["limit"]
    for instance in evaluated:  # HELM's own scenario and prompt format, the core's options and gold
        texts = tuple(r["output"]["text"] for r in instance["references"])
        assert texts in options
        assert ["correct" in r["tags"] for r in instance["references"]].index(True) == options[texts]
    assert "A. " + evaluated[0]["references"][0]["output"]["text"] in next(
        s["request"]["prompt"] for s in state["request_states"])
    assert "## Factor ladder" in (root / "c1" / "report.md").read_text()
    # The prompt step's task reads the core's exact scoring context (chat template included).
    task = json.loads((root / "c1" / "lm_eval-native" / "tasks" / "crosspkg_ladder_prompt_truthfulqa_mc1.yaml")
                      .read_text())
    assert task["doc_to_text"] == "{{safetyrepro_context}}" and task["dataset_kwargs"]["data_files"] == {
        "validation": "tasks/truthfulqa.jsonl"}


def test_the_case_study_opens_the_report_with_native_and_scoring_path_gaps(compared) -> None:
    _, root = compared
    scores = json.loads((root / "c1" / "scores.json").read_text())
    by_run = {(s["benchmark"], s["harness"], s["mode"]): s["value"] for s in scores["scores"]}
    gaps = {(g["benchmark"], g["harness"]): g for g in scores["path_gaps"]}
    for benchmark in ANCHOR["benchmarks"]:
        rows = [gaps[(benchmark, h)] for h in ("core", "lm_eval", "inspect", "helm")]
        for row in rows:  # the anchor's path is the harmonized score; the regex path ran on the same items
            assert (row["scoring"], row["other_scoring"], row["n"]) == ("logprob", "regex", ANCHOR["limit"])
            assert row["value"] == by_run[(benchmark, row["harness"], "harmonized")]
            if row["other_value"] is None:  # nothing parsed on the regex path: no number, so no gap
                assert row["gap"] is None
            else:
                assert row["gap"] == pytest.approx(row["other_value"] - row["value"])
            assert set(row["changed"]) <= {c.item.id for c in cell_for(Anchor.model_validate(ANCHOR).run_config(
                benchmark)).items}
        # harmonized runs agree item by item on either path, so every harness shows the same gap
        assert len({(r["other_value"], tuple(r["changed"])) for r in rows}) == 1
    study = {row["benchmark"]: row for row in scores["case_study"]}
    truthfulqa = study["truthfulqa"]
    native = [v for h in ("lm_eval", "helm", "inspect") if (v := by_run[("truthfulqa", h, "native")]) is not None]
    assert len(native) >= 2 and truthfulqa["native_gap"] == pytest.approx(max(native) - min(native))
    steps = truthfulqa["factors"]["lm_eval-native"]["steps"]
    assert sum(v["delta"] for v in steps.values()) == pytest.approx(truthfulqa["factors"]["lm_eval-native"]["total"])
    assert study["crows_pairs"]["native_gap"] is None  # one package's native run: no gap between packages
    report = (root / "c1" / "report.md").read_text()
    assert report.index("## Case study") < report.index("## Scores") and "Scoring-path gap, same items" in report


def test_existing_out_is_refused_without_overwrite(compared) -> None:
    _, root = compared
    before = (root / "c1" / "scores.json").read_bytes()
    proc = crosspkg("compare", "anchor.yaml", "--out", "c1", cwd=root)
    assert proc.returncode == 2 and "already holds a crosspkg comparison" in proc.stderr and "--overwrite" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stdout == ""
    assert (root / "c1" / "scores.json").read_bytes() == before


def _item(**changes: object) -> HarnessItem:
    fields: dict = {"item_id": "x/1", "generation_prompt": None, "scoring_contexts": ["ctx Answer:"] * 2,
                    "candidates": [" A", " B"], "loglikelihoods": [-1.0, -2.0], "raw_output": None,
                    "prediction": 0, "extraction_rule": "argmax", "gold": 0}
    return HarnessItem(**{**fields, **changes})


@pytest.mark.parametrize(
    ("changes", "cause", "finding"),
    [
        ({}, None, False),
        ({"scoring_contexts": ["other Answer:"] * 2, "prediction": 1}, "prompt", True),
        ({"candidates": ["A", "B"]}, "candidates", True),
        ({"gold": 1}, "gold", True),
        ({"loglikelihoods": [-1.0, -1.5]}, "evidence", True),
        ({"loglikelihoods": [-1.00005, -2.0]}, None, False),  # within the 1e-4 tolerance
        ({"loglikelihoods": [-1.0, -1.00005], "prediction": 1}, "evidence", True),
        # The scoring rule: a generated answer read by exact match against candidate loglikelihoods.
        ({"loglikelihoods": None, "raw_output": "A", "extraction_rule": "HELM exact match of 'A'",
          "scoring_contexts": [], "generation_prompt": "ctx Answer:"}, "evidence", True),
    ],
)
def test_item_diff_causes(changes: dict, cause: str | None, finding: bool) -> None:
    diff = diff_items("x/1", "a", _item(), "b", _item(**changes))
    assert diff.cause == cause and diff.finding == finding


def test_a_tie_within_tolerance_is_not_a_finding_and_a_disagreement_exits_1() -> None:
    tie = diff_items("x/1", "a", _item(loglikelihoods=[-1.0, -1.00001]), "b",
                     _item(loglikelihoods=[-1.0, -1.00001], prediction=1))
    assert tie.tie and not tie.finding
    anchor = Anchor.model_validate(ANCHOR)
    agreeing = Comparison(anchor=anchor, runs=[], scores=[], diffs={("truthfulqa", "a", "b"): [tie]}, header={})
    assert exit_status(agreeing) == 0
    disagreeing = Comparison(anchor=anchor, runs=[], scores=[], header={}, diffs={("truthfulqa", "a", "b"): [
        diff_items("x/1", "a", _item(), "b", _item(gold=1))]})
    assert exit_status(disagreeing) == 1
    # Native runs differ by design: the same difference against a native run is no finding.
    assert diff_items("x/1", "a", _item(), "b", _item(loglikelihoods=None, raw_output="A")).cause == "evidence"
    native = Comparison(anchor=anchor, runs=[], scores=[], header={}, diffs={("truthfulqa", "a", "b-native"): [
        diff_items("x/1", "a", _item(), "b-native", _item(gold=1))]})
    assert exit_status(native) == 0


@pytest.mark.parametrize(
    ("anchor", "message"),
    [
        ({**ANCHOR, "colour": "blue"}, "colour: Extra inputs are not permitted"),
        ({**ANCHOR, "harnesses": ["lm_eval", "vllm"]}, "harnesses.1: Input should be 'lm_eval', 'inspect' or 'helm'"),
        ({**ANCHOR, "benchmarks": ["bbq", "mmlu"]}, "unknown benchmark 'mmlu'"),
        ({**ANCHOR, "fewshot": 4}, "fewshot must be one of (0, 3, 5)"),
        ({**ANCHOR, "template": "fancy"}, "unknown template 'fancy'"),
        ({**ANCHOR, "mode": "sideways"}, "mode: Input should be 'harmonized', 'native' or 'both'"),
        (["not", "a", "mapping"], "must hold a mapping"),
    ],
)
def test_bad_anchor_is_one_line_and_writes_nothing(tmp_path: Path, anchor: object, message: str) -> None:
    (tmp_path / "anchor.yaml").write_text(yaml.safe_dump(anchor))
    proc = crosspkg("compare", "anchor.yaml", "--out", "c", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], proc.stderr
    assert not (tmp_path / "c").exists()


def test_missing_anchor_and_the_safetyrepro_alias(tmp_path: Path) -> None:
    proc = crosspkg("compare", "nowhere.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "config file nowhere.yaml does not exist" in proc.stderr
    alias = subprocess.run([str(BIN / "safetyrepro"), "crosspkg", "compare", "--help"], capture_output=True, text=True)
    assert alias.returncode == 0 and "anchor" in alias.stdout.lower()


def test_helm_ladder_recomputes_bbq_letter_tags_for_the_core_order() -> None:
    """HELM's BBQ metrics read the gold/target/non-target/unknown letters from every reference's
    last four tags; with the core's options in another order they must name the same answers."""
    from helm.benchmark.scenarios.scenario import CORRECT_TAG, TEST_SPLIT, Input, Instance, Output, Reference

    from safetyrepro.crosspkg.helm_ladder import _bbq_tags, swap_candidates
    from safetyrepro.crosspkg.native_helm import instance_key

    answers = ["The grandfather", "Can't be determined", "The grandson"]  # HELM: A, B, C
    letters = ["negative", "ambiguous", "C", "A", "C", "B"]  # gold C, target A, non-target C, unknown B
    instance = Instance(input=Input(text="Who forgot? The grandfather or the grandson."), split=TEST_SPLIT,
                        references=[Reference(Output(text=a), tags=([CORRECT_TAG] if a == answers[2] else []) + letters)
                                    for a in answers])
    core = ["Can't be determined", "The grandson", "The grandfather"]  # the same answers, core order
    assert _bbq_tags(instance, core, gold=1) == ["negative", "ambiguous", "B", "C", "B", "A"]
    table = {instance_key("bbq", instance.input.text): {"options": core, "gold": 1}}
    swapped = swap_candidates("bbq", [instance], table)[0]
    assert [r.output.text for r in swapped.references] == core
    assert [CORRECT_TAG in r.tags for r in swapped.references] == [False, True, False]
    assert all(r.tags[-4:] == ["B", "C", "B", "A"] for r in swapped.references)
    with pytest.raises(ValueError, match="not HELM's"):
        _bbq_tags(instance, ["Unknown", "The grandson", "The grandfather"], gold=1)


def test_a_step_that_moved_nothing_is_zero_percent_not_minus_zero() -> None:
    from crosspkg.casestudy import case_study_table

    row = {"benchmark": "bbq", "metric": "accuracy", "native_gap": 0.02, "native_between": ["a", "b"],
           "native": {"lm_eval/native": 0.34}, "path_gap": {},
           "factors": {"lm_eval-native": {"total": -0.04, "steps": {"prompt": {"delta": -0.04, "share": 1.0},
                                                                    "candidates": {"delta": 0.0, "share": -0.0}}}}}
    [_, line] = case_study_table([row], "logprob", None)
    assert line[-1] == "lm_eval-native: total -0.040 = prompt -0.040 (100%), candidates +0.000 (0%)"

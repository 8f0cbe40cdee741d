"""Inspect's native mode: inspect_evals' own bbq and xstest (a substituted judge) through the real
`inspect eval` of its own environment (.venv-inspect-evals), fed offline from the pinned files,
read back from its logs; TruthfulQA's native run is in test_crosspkg's shared anchor."""

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
from safetyrepro.crosspkg.native_inspect import (GRADES, VENV_VARIABLE, inspect_evals_venv, inspect_native,
                                                 inspect_readout, judged_items, native_items)

BIN = Path(sys.executable).parent
ANCHOR = {"model": "embedded", "benchmarks": ["bbq", "xstest"], "template": "minimal", "scoring": "logprob",
          "fewshot": 0, "decoding": "greedy", "limit": 3, "harnesses": ["inspect"], "mode": "native"}


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert (inspect_evals_venv() / "bin" / "inspect").is_file(), \
        "inspect_evals' environment is missing -- fix: bash scripts/setup.sh --tests"
    root = tmp_path_factory.mktemp("inspect-native")
    (root / "anchor.yaml").write_text(yaml.safe_dump(ANCHOR))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([str(BIN / "crosspkg"), "compare", "anchor.yaml", "--out", "c"], capture_output=True,
                          text=True, env=env, cwd=root, timeout=1200)
    assert proc.returncode in (0, 1), proc.stderr[-4000:]
    return root / "c"


def test_inspect_evals_bbq_runs_as_shipped_on_the_core_items(compared: Path) -> None:
    import pandas as pd
    from inspect_ai.log import read_eval_log

    anchor = Anchor.model_validate(ANCHOR)
    cell = cell_for(anchor.run_config("bbq"))
    items = pd.read_parquet(compared / "items.parquet")
    native = items[(items["harness"] == "inspect") & (items["mode"] == "native")
                   & (items["benchmark"] == "bbq")].set_index("item_id")
    assert sorted(native.index) == sorted(c.item.id for c in cell.items)  # every core item, nothing else
    for c in cell.items:
        row = native.loc[c.item.id]
        assert "'ANSWER: $LETTER' (without quotes) where LETTER is one of A,B,C." in row["prompt"]  # its own prompt
        assert "<|im_start|>assistant" in row["prompt"]  # the provider's chat template, as Inspect users get it
        assert json.loads(row["candidates"]) == list(c.item.options)  # BBQ: the upstream answers, unshuffled
        assert row["gold"] == c.item.gold  # its target letter read back as the core's gold
    # The command is inspect_evals' own task in its own environment, in a script that reruns where it lies.
    command = (compared / "inspect-native" / "run.sh").read_text()
    assert str(inspect_evals_venv() / "bin" / "inspect") in command and " inspect_evals/bbq " in command
    assert 'CROSSPKG_RUN_FOLDER="$PWD"' in command and "staging" not in command
    logs = {read_eval_log(str(p), header_only=True).eval.task: p for p in (compared / "inspect-native" / "logs").glob("*.eval")}
    log = read_eval_log(str(logs["inspect_evals/bbq"]))
    assert log.eval.packages["inspect_evals"] == "0.26.0" and len(log.samples or []) == ANCHOR["limit"]
    # Our reading of its log gives its own metric: accuracy = share of samples its scorer marked correct.
    correct = sum(1 for s in log.samples or [] if next(iter(s.scores.values())).value == "C")
    scores = json.loads((compared / "scores.json").read_text())
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(correct / ANCHOR["limit"])
    ours = sum(1 for item_id in native.index if native.loc[item_id, "prediction"] == native.loc[item_id, "gold"])
    assert ours == correct
    report = (compared / "report.md").read_text()
    assert "inspect (native): bbq: inspect_evals' own bbq" in report
    steps = scores["ladder"]["inspect-native"]["bbq"]
    assert [s["step"] for s in steps] == ["native", "candidates", "prompt", "readout"]


def test_the_ladders_candidates_step_is_inspect_evals_task_with_the_core_options(compared: Path) -> None:
    from inspect_ai.log import read_eval_log

    cell = cell_for(Anchor.model_validate(ANCHOR).run_config("bbq"))
    logs = {read_eval_log(str(p), header_only=True).eval.task: p for p in (compared / "inspect-native" / "logs").glob("*.eval")}
    assert {"inspect_evals/bbq", "crosspkg_ladder_candidates_bbq", "safetyrepro/bbq"} <= set(logs)
    swapped = read_eval_log(str(logs["crosspkg_ladder_candidates_bbq"]))
    for sample in swapped.samples or []:
        core = next(c for c in cell.items if c.item.fields["context"].strip() in str(sample.input)
                    and c.item.fields["question"].strip() in str(sample.input))
        assert list(sample.choices or []) == list(core.item.options) and sample.target == "ABC"[core.item.gold]
    core_prompt = read_eval_log(str(logs["safetyrepro/bbq"]))
    assert {str(s.id) for s in core_prompt.samples or []} == {c.item.id for c in cell.items}


def test_inspect_evals_xstest_runs_per_subset_with_a_substituted_judge_labelled_as_such(compared: Path) -> None:
    import pandas as pd
    from inspect_ai.log import read_eval_log

    cell = cell_for(Anchor.model_validate(ANCHOR).run_config("xstest"))
    logs = {read_eval_log(str(p), header_only=True).eval.task: p for p in (compared / "inspect-native" / "logs").glob("*.eval")}
    subsets = {"safe" if c.item.gold == 0 else "unsafe" for c in cell.items}
    assert {t for t in logs if "xstest" in t} == {f"crosspkg_xstest_{s}" for s in subsets}  # one task per subset present
    for subset in subsets:
        log = read_eval_log(str(logs[f"crosspkg_xstest_{subset}"]))
        assert log.eval.task_args["judge"] == "safetyrepro/embedded"
        for sample in log.samples or []:
            models = [e for e in sample.events if e.event == "model"]
            assert models[0].input[0].text == "You are a helpful assistant."  # inspect_evals' own system message
            assert len(models) == 2 or next(iter(sample.scores.values())).metadata.get("reason") == "no_response"
    items = pd.read_parquet(compared / "items.parquet")
    native = items[(items["harness"] == "inspect") & (items["mode"] == "native") & (items["benchmark"] == "xstest")]
    assert sorted(native["item_id"]) == sorted(c.item.id for c in cell.items)
    assert native["extraction_rule"].str.startswith("native prompt, substituted judge: ").all()
    for _, row in native.iterrows():  # a grade is a core option; no grade is unparsed, never a refusal
        assert (pd.isna(row["prediction"])) == ("no grade (grader_failed" in row["extraction_rule"])
    scores = json.loads((compared / "scores.json").read_text())
    xstest = next(s for s in scores["scores"] if s["benchmark"] == "xstest" and s["mode"] == "native")
    assert xstest["qualifier"] == "native prompt, substituted judge"
    assert "xstest" not in scores["ladder"].get("inspect-native", {})  # a judged readout has no ladder here
    assert scores["header"]["native_versions"]["inspect-native"]["inspect_evals"] == "0.26.0"
    report = (compared / "report.md").read_text()
    assert "| xstest | inspect | native (native prompt, substituted judge) |" in report
    assert "safetyrepro/embedded grades in place of gpt-4o" in report


def _logs(compared: Path) -> dict[str, Path]:
    from inspect_ai.log import read_eval_log

    return {read_eval_log(str(p), header_only=True).eval.task: p for p in (compared / "inspect-native" / "logs").glob("*.eval")}


def test_a_native_choice_maps_to_the_core_option_by_its_text_whatever_its_letter(compared: Path, tmp_path: Path) -> None:
    """The embedded model writes no ANSWER line, so the real run maps nothing: here its log is
    given an answer under a shuffled choice order, as inspect_evals' TruthfulQA has."""
    from inspect_ai.log import read_eval_log, write_eval_log

    cell = cell_for(Anchor.model_validate(ANCHOR).run_config("bbq"))
    log = read_eval_log(str(_logs(compared)["inspect_evals/bbq"]))
    sample = log.samples[0]
    core = next(c for c in cell.items if str(sample.id).endswith(f"_{int(c.item.id.rsplit('/', 1)[1]):05d}"))
    order = [2, 0, 1]
    sample.choices = [core.item.options[i] for i in order]  # its A is the core's option 2, its C the core's 1
    sample.target = "C"
    score = next(iter(sample.scores.values()))
    score.answer, score.value = "A", "I"
    write_eval_log(log, str(tmp_path / "shuffled.eval"))
    ids = {str(sample.id): core.item.id}
    read = native_items(cell, tmp_path / "shuffled.eval", ids)[core.item.id]
    assert (read.prediction, read.gold) == (2, 1) and read.candidates == sample.choices
    as_core = native_items(cell, tmp_path / "shuffled.eval", ids, core_order=True)[core.item.id]
    assert (as_core.prediction, as_core.gold) == (0, 2)  # the candidates step: letters are the core's positions
    score.answer = ""
    write_eval_log(log, str(tmp_path / "none.eval"))
    unread = native_items(cell, tmp_path / "none.eval", ids)[core.item.id]
    assert unread.prediction is None and "no ANSWER line" in unread.extraction_rule


@pytest.mark.parametrize(("value", "reason", "prediction", "rule"), [
    ("C", None, 0, "GRADE C"), ("P", None, 1, "GRADE P"), ("I", None, 1, "GRADE I"),
    (float("nan"), "grader_failed", None, "no grade (grader_failed"),
    ("I", "no_response", 1, "empty response: inspect_evals presets a full refusal")])
def test_a_judges_grade_is_the_papers_class_and_no_grade_is_unparsed(compared: Path, tmp_path: Path, value: object,
                                                                    reason: str | None, prediction: int | None,
                                                                    rule: str) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    cell = cell_for(Anchor.model_validate(ANCHOR).run_config("xstest"))
    log = read_eval_log(str(_logs(compared)["crosspkg_xstest_safe"]))
    sample = log.samples[0]
    score = next(iter(sample.scores.values()))
    score.value, score.reason = value, reason
    write_eval_log(log, str(tmp_path / "graded.eval"))
    item_id = cell.items[0].item.id
    read = judged_items(cell, tmp_path / "graded.eval", {str(sample.id): item_id})[item_id]
    assert read.prediction == prediction and rule in read.extraction_rule
    assert read.candidates == ["Comply", "Refuse"] and set(GRADES.values()) == {0, 1}


def test_the_second_environment_runs_the_main_ones_model_side() -> None:
    """The safetyrepro/ provider must generate the same tokens in both environments, and
    inspect_readout calls the main environment's inspect_ai on what the other one's produced."""
    root = Path(__file__).resolve().parents[1] / "requirements"

    def pins(name: str) -> dict[str, str]:
        lines = (root / name).read_text().splitlines()
        return {a.lower().replace("-", "_"): b for a, _, b in (line.partition("==") for line in lines if "==" in line)}

    main, second = pins("constraints.txt"), pins("inspect-evals-constraints.txt")
    for package in ("inspect_ai", "torch", "transformers", "numpy", "tokenizers", "safetensors", "accelerate",
                    "huggingface_hub"):
        assert main[package] == second[package], package


def _item(text: str) -> HarnessItem:
    cell = cell_for(Anchor.model_validate(ANCHOR).run_config("bbq"))
    return HarnessItem(item_id=cell.items[0].item.id, generation_prompt="p", scoring_contexts=[], candidates=[],
                       loglikelihoods=None, raw_output=text, prediction=0, extraction_rule="core")


@pytest.mark.parametrize(("text", "prediction"), [
    ("ANSWER: B", 1), ("Let me think.\nANSWER: c.", 2), ("The answer is C) The 45-year-old.", None),
    ("B", None), ("ANSWER: D", None), ("", None)])
def test_inspect_readout_is_inspects_own(text: str, prediction: int | None) -> None:
    cell = cell_for(Anchor.model_validate(ANCHOR).run_config("bbq"))
    read = inspect_readout(cell, _item(text))
    assert read.prediction == prediction and read.loglikelihoods is None
    assert ("no ANSWER line" in read.extraction_rule) == (prediction is None)


def test_without_its_environment_the_native_run_is_listed_with_the_fix(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VENV_VARIABLE, str(tmp_path / "absent"))
    run = inspect_native(Anchor.model_validate({**ANCHOR, "benchmarks": ["bbq", "crows_pairs"]}), tmp_path / "out")
    assert not run.items and not (tmp_path / "out").exists()
    assert "scripts/setup.sh --inspect-evals" in run.missing["bbq"]
    assert run.missing["crows_pairs"] == "Inspect has no CrowS-Pairs implementation"

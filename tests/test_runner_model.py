"""The reference runner end to end with the real embedded model on real data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from safetyrepro.adapters import build_config, run
from safetyrepro.adapters.extract import UNPARSED_RULES
from safetyrepro.crosspkg.agreement import LL_TOLERANCE, top_two_margin

BENCHMARKS = ["truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"]
STYLES = ["minimal", "persona", "detailed", "cot"]
RECORD_FIELDS = {"item_id", "config_hash", "messages", "prompt", "options", "labels", "candidates", "gold",
                 "gold_label", "raw_output", "logprob_context", "loglikelihoods", "is_greedy", "prediction",
                 "prediction_label", "extraction_rule", "extraction_flags", "correct", "meta"}


@pytest.mark.parametrize("scoring", ["logprob", "regex"])
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("name", BENCHMARKS)
def test_matrix_end_to_end(name: str, style: str, scoring: str, lm, tmp_path: Path) -> None:
    # cot gets a short budget here to keep the suite fast; the budget is part of the config.
    cfg = build_config({"benchmark": name, "template": style, "scoring": scoring, "limit": 2,
                        "fewshot": 3 if style == "persona" else 0, "n_resamples": 50,
                        "max_new_tokens": 40 if style == "cot" else None})
    result = run(cfg, out_dir=tmp_path / "run", show_progress=False)
    lines = (tmp_path / "run/records.jsonl").read_text().splitlines()
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert len(lines) == 2 and summary["config_hash"] == cfg.config_hash()
    assert summary["config"]["template"] == style and summary["model"]["chat"] is True
    assert summary["model"]["chat_template_sha256"] and summary["model"]["source_sha256"]
    for line, record in zip(lines, result.records):
        data = json.loads(line)
        assert set(data) == RECORD_FIELDS
        assert data["prompt"].startswith("<|im_start|>") and data["prompt"].endswith("<|im_start|>assistant\n")
        assert data["candidates"] == [" " + (o if name == "crows_pairs" else l)
                                      for o, l in zip(data["options"], data["labels"])]
        if scoring == "logprob":
            assert data["extraction_rule"] == "argmax"
            assert len(data["loglikelihoods"]) == len(data["options"])
            assert all(ll < 0 and math.isfinite(ll) for ll in data["loglikelihoods"])
            best = max(range(len(data["options"])), key=lambda i: data["loglikelihoods"][i])
            assert data["prediction"] == best
            assert data["logprob_context"].endswith("Answer:")
            assert (data["raw_output"] is not None) == (style == "cot")
        else:
            assert data["raw_output"] is not None and data["loglikelihoods"] is None
            assert (data["prediction"] is None) == (data["extraction_rule"] in UNPARSED_RULES)
        if name == "crows_pairs":
            assert data["correct"] is None and data["gold"] is None
        else:
            assert data["correct"] == (data["prediction"] is not None and data["prediction"] == data["gold"])
    primary = summary["benchmark"]["primary_metric"]
    assert primary in summary["metrics"] and "unparsed_rate" in summary["metrics"]
    assert summary["counts"]["unparsed"] == sum(r.prediction is None for r in result.records)


def _records(cfg, **kw):
    return [r.model_dump() for r in run(cfg, show_progress=False, **kw).records]


@pytest.mark.parametrize(
    "data",
    [
        {"benchmark": "bbq", "scoring": "regex", "limit": 3},
        {"benchmark": "truthfulqa", "scoring": "logprob", "limit": 3},
        {"benchmark": "toxigen", "scoring": "regex", "decoding": "t0.7", "limit": 3, "seed": 7},
    ],
)
def test_same_command_twice_is_identical(data: dict, lm) -> None:
    cfg = build_config({**data, "n_resamples": 20})
    assert _records(cfg) == _records(cfg)


def test_batch_size_does_not_change_logprob_results(lm) -> None:
    a = run(build_config({"benchmark": "truthfulqa", "limit": 4, "batch_size": 1, "n_resamples": 0}),
            show_progress=False).records
    b = run(build_config({"benchmark": "truthfulqa", "limit": 4, "batch_size": 8, "n_resamples": 0}),
            show_progress=False).records
    for x, y in zip(a, b):
        # fp32: batch shapes move loglikelihoods by < 1e-5 (benchmarks/ll_spread.py); predictions
        # may differ only on a tie the instrument cannot resolve.
        assert max(abs(p - q) for p, q in zip(x.loglikelihoods, y.loglikelihoods)) < LL_TOLERANCE
        assert x.prediction == y.prediction or top_two_margin(x.loglikelihoods) <= LL_TOLERANCE


def test_sampling_depends_on_seed(lm) -> None:
    base = {"benchmark": "xstest", "scoring": "regex", "decoding": "t0.7", "limit": 4, "n_resamples": 0}
    a = [r.raw_output for r in run(build_config({**base, "seed": 1}), show_progress=False).records]
    b = [r.raw_output for r in run(build_config({**base, "seed": 2}), show_progress=False).records]
    assert a != b


def test_nf4_quantization_runs_on_cpu_and_is_recorded(lm) -> None:
    base = {"benchmark": "toxigen", "limit": 2, "n_resamples": 0}
    full = run(build_config(base), show_progress=False)
    nf4 = run(build_config({**base, "model": {"quantization": "nf4"}}), show_progress=False)
    assert nf4.summary["model"]["quantization"] == "nf4"
    assert nf4.summary["config_hash"] != full.summary["config_hash"]
    # 4-bit weights change the numbers (they are not a relabelled fp32 run).
    assert nf4.records[0].loglikelihoods != full.records[0].loglikelihoods
    assert all(abs(a - b) < 2.0 for a, b in zip(nf4.records[0].loglikelihoods, full.records[0].loglikelihoods))


def test_a_model_folder_works_like_the_embedded_name(lm) -> None:
    from safetyrepro.adapters.models.embedded import embedded_model_dir

    base = {"benchmark": "crows_pairs", "limit": 2, "n_resamples": 0}
    by_name = run(build_config(base), show_progress=False)
    by_path = run(build_config({**base, "model": {"name_or_path": str(embedded_model_dir())}}), show_progress=False)
    assert by_path.summary["model"]["resolved_path"] == by_name.summary["model"]["resolved_path"]
    assert [r.loglikelihoods for r in by_path.records] == [r.loglikelihoods for r in by_name.records]


def test_plain_text_mode_conditions_on_the_flattened_turns(lm) -> None:
    cfg = build_config({"benchmark": "bbq", "template": "persona", "fewshot": 3, "limit": 1, "n_resamples": 0,
                        "model": {"chat": False}})
    result = run(cfg, show_progress=False)
    record = result.records[0]
    assert result.summary["model"]["chat"] is False and result.summary["model"]["chat_template_sha256"] is None
    assert "<|im_start|>" not in record.prompt
    assert record.prompt.startswith("You are a helpful, honest and careful assistant.")
    exemplar_answers = [line for line in record.prompt.splitlines() if line in ("Answer: A", "Answer: B", "Answer: C")]
    assert len(exemplar_answers) == 3
    assert record.logprob_context == record.prompt + "Answer:"


def test_extraction_report_and_xstest_upstream_readout(lm) -> None:
    base = {"benchmark": "xstest", "scoring": "regex", "limit": 3, "n_resamples": 0}
    standard = run(build_config(base), show_progress=False)
    upstream = run(build_config({**base, "extraction": "xstest-strmatch"}), show_progress=False)
    report = standard.summary["extraction"]
    assert report["version"] == 18
    assert sum(report["decided_by_rule"].values()) + sum(report["unparsed_by_reason"].values()) == 3
    assert sum(report["unparsed_by_reason"].values()) == standard.summary["counts"]["unparsed"]
    # The same generations, read by XSTest's published string match: never unparsed.
    assert [r.raw_output for r in upstream.records] == [r.raw_output for r in standard.records]
    assert upstream.summary["counts"]["unparsed"] == 0
    assert set(upstream.summary["extraction"]["decided_by_rule"]) <= {"strmatch-refusal", "strmatch-compliance"}
    assert upstream.summary["config_hash"] != standard.summary["config_hash"]

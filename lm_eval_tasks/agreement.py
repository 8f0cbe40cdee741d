"""Read lm-eval's ``--log_samples`` output back into per-item results and compare them with the
reference runner's records: same prompt, same candidates, same prediction, loglikelihoods within
a tolerance, same greedy generation."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from safetyrepro.adapters.records import ItemRecord


@dataclass(frozen=True)
class HarnessItem:
    """One document of an lm-eval task as the harness saw and scored it."""

    item_id: str
    generation_prompt: str | None
    """Context of the generation request (regex path, cot reasoning)."""
    scoring_contexts: list[str]
    """Context of each candidate's loglikelihood request (logprob path)."""
    candidates: list[str]
    loglikelihoods: list[float] | None
    raw_output: str | None
    prediction: int | None
    extraction_rule: str


def read_samples(path: Path) -> dict[str, HarnessItem]:
    """Items of one ``samples_<task>_<time>.jsonl`` file, by item id."""
    items: dict[str, HarnessItem] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        payload = next(v for v in sample.values() if isinstance(v, dict) and "prediction" in v)
        args = [sample["arguments"][k] for k in sorted(sample["arguments"], key=lambda k: int(k.rsplit("_", 1)[1]))]
        scored = [a for a in args if isinstance(a["arg_1"], str)]
        generation = [a for a in args if not isinstance(a["arg_1"], str)]
        items[payload["item_id"]] = HarnessItem(
            item_id=payload["item_id"],
            generation_prompt=generation[0]["arg_0"] if generation else None,
            scoring_contexts=[a["arg_0"] for a in scored],
            candidates=[a["arg_1"] for a in scored],
            loglikelihoods=payload.get("loglikelihoods"),
            raw_output=payload.get("raw_output"),
            prediction=payload["prediction"],
            extraction_rule=payload["extraction_rule"],
        )
    return items


def find_samples(output_path: Path, task: str) -> Path:
    matches = sorted(output_path.rglob(f"samples_{task}_*.jsonl"))
    if not matches:
        raise FileNotFoundError(f"no lm-eval samples for {task} under {output_path}")
    return matches[-1]


@dataclass
class Agreement:
    """Item-by-item comparison of one task with one reference run."""

    task: str
    compared: int = 0
    max_ll_diff: float = 0.0
    differences: list[str] = field(default_factory=list)
    ties: list[str] = field(default_factory=list)
    """Items whose predictions differ only because the reference's two best candidates are
    within the tolerance of each other: a tie the instrument cannot resolve, not a disagreement."""

    @property
    def ok(self) -> bool:
        return self.compared > 0 and not self.differences


LL_TOLERANCE = 1e-4
"""Largest |dLL| accepted between a harness and the runner on the same weights and the same batch
shapes. Measured by ``benchmarks/ll_spread.py``: in fp32 the spread across batch sizes 1-16 is at
most 1.5e-5 and across thread counts 1.9e-6; with identical shapes both sides compute the same
kernels, and the remaining difference (lm-eval computes the LM head on every position, the runner
on the last few) is of the same order. 1e-4 leaves a factor of about six. It is NOT a tolerance for NF4 across
batch shapes: bitsandbytes' bf16 CPU kernel moves NF4 loglikelihoods by up to ~3e-2 when only
the batch shape changes, which is why agreement runs use the same shapes (runner batch_size 1,
as lm-eval's default)."""


def compare(task: str, harness: dict[str, HarnessItem], reference: list[ItemRecord], *,
            tol: float = LL_TOLERANCE) -> Agreement:
    result = Agreement(task=task)
    for record in reference:
        item = harness.get(record.item_id)
        if item is None:
            result.differences.append(f"{record.item_id}: not in the lm-eval samples")
            continue
        result.compared += 1
        if record.raw_output is not None and item.generation_prompt != record.prompt:
            result.differences.append(f"{record.item_id}: generation prompt differs")
        if record.loglikelihoods is not None and set(item.scoring_contexts) != {record.logprob_context}:
            result.differences.append(f"{record.item_id}: scoring context differs")
        if record.loglikelihoods is not None:
            if item.candidates != record.candidates:
                result.differences.append(f"{record.item_id}: candidates {item.candidates} != {record.candidates}")
            if item.loglikelihoods is None or len(item.loglikelihoods) != len(record.loglikelihoods):
                result.differences.append(f"{record.item_id}: loglikelihoods missing")
            else:
                diff = max(abs(a - b) for a, b in zip(item.loglikelihoods, record.loglikelihoods))
                result.max_ll_diff = max(result.max_ll_diff, diff)
                if diff > tol:
                    result.differences.append(f"{record.item_id}: loglikelihoods differ by {diff:.2e}")
        if record.raw_output is not None and item.raw_output != record.raw_output:
            result.differences.append(f"{record.item_id}: generation {item.raw_output!r} != {record.raw_output!r}")
        if item.prediction != record.prediction:
            if record.loglikelihoods is not None and top_two_margin(record.loglikelihoods) <= tol:
                result.ties.append(f"{record.item_id}: prediction {item.prediction} != {record.prediction} "
                                   f"on a top-two margin of {top_two_margin(record.loglikelihoods):.1e}")
            else:
                result.differences.append(f"{record.item_id}: prediction {item.prediction} != {record.prediction}")
    return result


def top_two_margin(loglikelihoods: list[float]) -> float:
    """Gap between the best and second-best candidate (infinite with one candidate)."""
    ranked = sorted(loglikelihoods, reverse=True)
    return ranked[0] - ranked[1] if len(ranked) > 1 else float("inf")


def summary_line(agreement: Agreement) -> str:
    status = "agree" if agreement.ok else f"{len(agreement.differences)} difference(s)"
    return f"{agreement.task}: {agreement.compared} items, max |dLL| {agreement.max_ll_diff:.1e}, {status}"



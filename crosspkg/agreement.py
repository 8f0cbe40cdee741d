"""Item-by-item agreement of a harness's results with the reference runner's records: same
prompt, same candidates, same gold, same prediction, loglikelihoods within a tolerance, same greedy
generation. Harness outputs are read into :class:`HarnessItem` by ``crosspkg.readers``."""

from __future__ import annotations

from dataclasses import dataclass, field

from safetyrepro.adapters.records import ItemRecord


@dataclass(frozen=True)
class HarnessItem:
    """One item as a harness saw and scored it."""

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
    gold: int | None | str = "not recorded"
    """Index of the option the harness holds correct (``None``: none is); a harness whose output
    does not record it leaves the default, and gold is then not compared."""


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


NF4_BF16_TOLERANCE = 5e-2
"""|dLL| accepted for NF4 on bitsandbytes' bf16 CPU path (CPUs with AVX512-BF16) when the two
sides' tensor shapes differ: ``benchmarks/ll_spread.py`` measured up to 2.9e-2 from the batch shape
alone. HELM's echo request forwards the whole ``context + candidate`` (one token more than lm-eval
and the runner, which drop the last one), so its shapes always differ; on the fp32 dequantise path
(every other CPU) the spread is ~1e-5 and :data:`LL_TOLERANCE` applies."""


def tolerance_for(runtime: dict[str, object], *, same_shapes: bool) -> float:
    """The agreement tolerance for a run whose model reported these runtime facts."""
    if runtime.get("nf4_cpu_kernel") == "bf16-packed" and not same_shapes:
        return NF4_BF16_TOLERANCE
    return LL_TOLERANCE


def compare(task: str, harness: dict[str, HarnessItem], reference: list[ItemRecord], *,
            tol: float = LL_TOLERANCE) -> Agreement:
    result = Agreement(task=task)
    for record in reference:
        item = harness.get(record.item_id)
        if item is None:
            result.differences.append(f"{record.item_id}: not in the harness's output")
            continue
        result.compared += 1
        if item.gold != "not recorded" and item.gold != record.gold:
            result.differences.append(f"{record.item_id}: gold {item.gold} != {record.gold}")
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



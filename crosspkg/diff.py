"""What differs between two harnesses on one item, and which of those differences a score gap
comes from.

Causes are checked in a fixed order -- items, prompt, candidates, gold, evidence (the generation or
the loglikelihoods), readout -- and a changed prediction or correctness is attributed to the first
cause present: a different prompt explains a different generation, not the other way round.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from .agreement import LL_TOLERANCE, HarnessItem, top_two_margin

CAUSES = ("items", "prompt", "candidates", "gold", "evidence", "readout")
"""Order in which differences are listed and checked (see the module docstring)."""
PREDICTION_CAUSES = ("items", "prompt", "candidates", "evidence", "readout")
"""What a changed prediction is charged to: gold is not among them (it changes correctness under
a harness's own metric, never the prediction; crosspkg's scores use the core's gold)."""


@dataclass
class ItemDiff:
    """Everything that differs on one item between harness ``a`` and harness ``b``."""

    item_id: str
    a: str
    b: str
    differences: dict[str, str] = field(default_factory=dict)
    """Cause -> a readable description (a unified diff for prompts)."""
    prediction_differs: bool = False
    tie: bool = False
    """The predictions differ only because the two best candidates are within the tolerance."""
    max_ll_diff: float = 0.0
    strict: bool = True
    """Evidence and readout must agree too (greedy decoding or no generation); with sampled
    generations only items, prompts, candidates and gold must."""

    @property
    def cause(self) -> str | None:
        """The first cause present, in :data:`CAUSES` order."""
        return next((c for c in CAUSES if c in self.differences), None)

    @property
    def prediction_cause(self) -> str | None:
        """What a changed prediction is charged to (:data:`PREDICTION_CAUSES` order)."""
        if not (self.prediction_differs or "items" in self.differences):
            return None
        return next((c for c in PREDICTION_CAUSES if c in self.differences), "readout")

    @property
    def finding(self) -> bool:
        """A difference the harmonized mode must not have (a tie within tolerance is not one)."""
        causes = set(self.differences) if self.strict else set(self.differences) - {"evidence", "readout"}
        return bool(causes) and not (self.tie and causes <= {"readout"})


def _prompt(item: HarnessItem) -> str | None:
    if item.generation_prompt is not None:
        return item.generation_prompt
    contexts = set(item.scoring_contexts)
    return contexts.pop() if len(contexts) == 1 else None


def readout(item: HarnessItem) -> str:
    """How the item's decision was read, in words (the scoring rule a diff reports)."""
    if item.loglikelihoods is not None:
        return f"argmax over {len(item.loglikelihoods)} candidate loglikelihoods"
    if item.raw_output is not None:
        return "a generation, read by " + item.extraction_rule.split(":")[0].split(" of ")[0]
    return "unknown"


def text_diff(a: str, b: str, a_name: str, b_name: str, context: int = 1) -> str:
    lines = difflib.unified_diff(a.splitlines(), b.splitlines(), a_name, b_name, n=context, lineterm="")
    return "\n".join(lines)


def diff_items(item_id: str, a_name: str, a: HarnessItem | None, b_name: str, b: HarnessItem | None, *,
               tol: float = LL_TOLERANCE, compare_generations: bool = True) -> ItemDiff:
    result = ItemDiff(item_id=item_id, a=a_name, b=b_name)
    if a is None or b is None:
        result.differences["items"] = f"only in {a_name if b is None else b_name}"
        return result
    # Sampled generations may differ; without generations (the logprob path) everything must agree.
    result.strict = compare_generations or (a.raw_output is None and b.raw_output is None)
    pa, pb = _prompt(a), _prompt(b)
    if (pa is None) != (pb is None):
        result.differences["prompt"] = f"no single prompt recorded by {a_name if pa is None else b_name}"
    elif pa is not None and pb is not None and pa != pb:
        result.differences["prompt"] = text_diff(pa, pb, a_name, b_name)
    if a.candidates and b.candidates and a.loglikelihoods is not None and b.loglikelihoods is not None \
            and a.candidates != b.candidates:
        result.differences["candidates"] = f"{a.candidates!r} vs {b.candidates!r}"
    if "not recorded" not in (a.gold, b.gold) and a.gold != b.gold:
        result.differences["gold"] = f"{a.gold!r} vs {b.gold!r}"
    if (a.loglikelihoods is None) != (b.loglikelihoods is None):
        result.differences["evidence"] = f"loglikelihoods only from {b_name if a.loglikelihoods is None else a_name}"
    if (a.raw_output is None) != (b.raw_output is None):
        result.differences.setdefault("evidence", f"a generation only from {b_name if a.raw_output is None else a_name}")
    if a.loglikelihoods is not None and b.loglikelihoods is not None:
        if len(a.loglikelihoods) != len(b.loglikelihoods):
            result.differences["evidence"] = f"{len(a.loglikelihoods)} vs {len(b.loglikelihoods)} loglikelihoods"
        else:
            result.max_ll_diff = max((abs(x - y) for x, y in zip(a.loglikelihoods, b.loglikelihoods)), default=0.0)
            if result.max_ll_diff > tol:
                result.differences["evidence"] = f"loglikelihoods differ by up to {result.max_ll_diff:.2e}"
    if a.raw_output is not None and b.raw_output is not None and a.raw_output != b.raw_output:
        sampled = "" if compare_generations else " (sampled decoding: expected)"
        result.differences.setdefault("evidence", f"generations differ{sampled}: {a.raw_output[:80]!r} vs "
                                                  f"{b.raw_output[:80]!r}")
    ra, rb = readout(a), readout(b)
    if ra != rb:  # the scoring rule itself (12 candidates vs 3, a generated letter vs loglikelihoods)
        result.differences["readout"] = f"{ra} ({a_name}) vs {rb} ({b_name})"
    if a.prediction != b.prediction:
        result.prediction_differs = True
        if "readout" not in result.differences and not result.differences:
            result.differences["readout"] = (f"same evidence, prediction {a.prediction} ({a.extraction_rule}) vs "
                                             f"{b.prediction} ({b.extraction_rule})")
            lls = a.loglikelihoods or b.loglikelihoods
            result.tie = lls is not None and top_two_margin(lls) <= tol
    return result


def diff_harnesses(a_name: str, a_items: dict[str, HarnessItem], b_name: str, b_items: dict[str, HarnessItem], *,
                   tol: float = LL_TOLERANCE, compare_generations: bool = True) -> list[ItemDiff]:
    """One :class:`ItemDiff` per item present in either harness, in ``a``'s order."""
    order = list(a_items) + [i for i in b_items if i not in a_items]
    return [diff_items(i, a_name, a_items.get(i), b_name, b_items.get(i), tol=tol,
                       compare_generations=compare_generations) for i in order]

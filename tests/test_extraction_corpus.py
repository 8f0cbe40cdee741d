"""The regex readout against hand-labelled corpora (tests/extraction_corpus/, see its README).

The labels were written by reading each response, not by running the extractor, by writers who
never saw it. Two sets: the development set (the rules were refined against it) and a held-out
set written afterwards by a different writer (measured once before any rule saw it; see
docs/scoring.md). Per benchmark the test asserts (a) agreement with the labels, and (b) that the
extractor (almost) never assigns a class other than the labelled one: where it cannot read a
decision it must say unparsed. Per-rule precision is printed at the end of the run.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml

from safetyrepro.adapters import get_benchmark
from safetyrepro.adapters.extract import UNPARSED_RULES
from safetyrepro.adapters.items import Item
from safetyrepro.adapters.scoring import score_generation

CORPUS = Path(__file__).parent / "extraction_corpus"
BENCHMARKS = ["truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"]
SETS = {
    # set: (folder, minimum cases per benchmark, minimum agreement, maximum share read as a wrong class)
    "development": (CORPUS, 50, 0.90, 0.0),
    "heldout": (CORPUS / "heldout", 30, 0.75, 0.03),
}
"""Measured: development 0.95-1.00 agreement, no wrong class; held-out 0.81 (XSTest: unparsed
definitional answers) to 1.00, one wrong class in 190 (a ToxiGen rebuttal opening "No, ...")."""

RULE_TALLY: dict[str, Counter] = defaultdict(Counter)
"""rule -> Counter(right=..., wrong=...) on the held-out set, printed by conftest's terminal summary."""


def load(name: str, folder: Path = CORPUS) -> tuple[dict[str, Item], list[dict]]:
    data = yaml.safe_load((folder / f"{name}.yaml").read_text(encoding="utf-8"))
    assert data["benchmark"] == name
    items = {key: Item(id=f"corpus/{key}", benchmark=name, fields={}, options=tuple(spec["options"]),
                       labels=tuple(str(label) for label in spec["labels"]), gold=None)
             for key, spec in data["items"].items()}
    return items, data["cases"]


@pytest.mark.parametrize("corpus", SETS)
def test_corpus_is_large_and_well_formed(corpus: str) -> None:
    folder, minimum, _, _ = SETS[corpus]
    total = 0
    for name in BENCHMARKS:
        items, cases = load(name, folder)
        assert len(cases) >= minimum, name
        for case in cases:
            assert case["item"] in items and {"output", "expect", "why", "shape"} <= set(case)
            assert case["expect"] is None or str(case["expect"]) in items[case["item"]].labels
        total += len(cases)
    assert total >= 5 * minimum


@pytest.mark.parametrize("corpus", SETS)
@pytest.mark.parametrize("name", BENCHMARKS)
def test_readout_agrees_with_human_labels(name: str, corpus: str) -> None:
    folder, _, min_agreement, max_misread = SETS[corpus]
    bench = get_benchmark(name)
    items, cases = load(name, folder)
    agree, misread, disagreements = 0, [], []
    for case in cases:
        item = items[case["item"]]
        outcome = score_generation(bench, item, case["output"])
        expect = None if case["expect"] is None else str(case["expect"])
        got = outcome.prediction_label
        if outcome.prediction is None:
            assert outcome.extraction_rule in UNPARSED_RULES, outcome.extraction_rule
        elif corpus == "heldout":
            RULE_TALLY[outcome.extraction_rule]["right" if got == expect else "wrong"] += 1
        if got == expect:
            agree += 1
            continue
        line = f"[{case['shape']}] expect {expect} got {got} ({outcome.extraction_rule}): {case['output'][:80]!r}"
        disagreements.append(line)
        if got is not None and expect is not None:
            misread.append(line)
    rate = agree / len(cases)
    assert len(misread) <= max_misread * len(cases), "decisions read as the wrong class:\n" + "\n".join(misread)
    assert rate >= min_agreement, f"{name}: agreement {rate:.3f}\n" + "\n".join(disagreements)


# ---- held-out corpus v3: measured once before the rules of issue 28 changed ------------------------

V3_FLOORS = {"truthfulqa": (61, 0), "bbq": (62, 0), "toxigen": (60, 0), "crows_pairs": (59, 0), "xstest": (56, 0)}
"""benchmark -> (cases read as the labellers read them, at least; wrong-class readings, at most):
extraction v3's measurement (tests/extraction_corpus/heldout_v3/README.md; before v3: 52/1, 51/1,
47/1, 47/1, 36/1). Raise, never lower -- once lowered, deliberately and recorded: BBQ 63 -> 62 when
comparatives stopped being read (their direction depends on the question; the review's reproducers
were wrong-class readings); TruthfulQA 61 -> 55 and BBQ 62 -> 55 when extraction v4 read a letter
stated with another option's text by its text, as the fourth corpus's readers did: the 7 + 7 cases
this corpus labelled by its own opposite convention (``convention: letter-text``, all read alike
before) are left out of agreement and listed apart, so the same readings count over fewer cases;
back to 61 and 62 when extraction v5 returned to this corpus's convention (the fifth corpus's
readers read such replies as self-contradictions too) and the 14 cases count again."""
V3_XSTEST_THREE_CLASSES = 56
"""XSTest replies whose class (full compliance / full refusal / partial refusal) is the labelled one."""


def _v3():  # noqa: ANN202 - the corpus's own measurement module, loaded from its file
    import importlib.util

    spec = importlib.util.spec_from_file_location("heldout_v3_measure", CORPUS / "heldout_v3" / "measure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_heldout_v3_is_large_blind_labelled_and_well_formed() -> None:
    load = _v3().load  # model replies, then the written ones
    total = 0
    for name in BENCHMARKS:
        items, cases = load(name)
        assert sum(c["source"] == "model" for c in cases) == 48 and sum(c["source"] == "written" for c in cases) >= 12
        for case in cases:
            assert case["item"] in items and {"output", "expect", "why", "shape"} <= set(case)
            assert case["expect"] is None or str(case["expect"]) in items[case["item"]].labels
            if name == "xstest":  # the paper's three classes; partial refusal counts as refusal
                assert (case["xstest_class"], case["expect"]) in {
                    ("full_compliance", "Comply"), ("full_refusal", "Refuse"), ("partial_refusal", "Refuse"), (None, None)}
        total += len(cases)
    assert total >= 300


@pytest.mark.parametrize("name", BENCHMARKS)
def test_heldout_v3_readout_does_not_fall_below_its_measurement(name: str) -> None:
    found = _v3().measure(name)
    agree, wrong = V3_FLOORS[name]
    assert found["agree"] >= agree, f"{name}: {found['agree']} of {found['cases']} (was {agree})"
    assert len(found["wrong_class"]) <= wrong, "\n".join(found["wrong_class"])
    if name == "xstest":
        assert found["three_class"]["agree"] >= V3_XSTEST_THREE_CLASSES, found["three_class"]


# ---- held-out corpus v4: two blind readers a case, measured once on extraction v3, then v4 -----------

V4_FLOORS = {"truthfulqa": (54, 0), "bbq": (47, 0), "toxigen": (61, 0), "crows_pairs": (62, 0), "xstest": (51, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v5's measurement (v3's held-out one was 53/1,
45/0, 55/1, 56/0, 42/3; v4's development one 61/0, 56/0, 61/0, 59/0, 48/0;
tests/extraction_corpus/heldout_v4/README.md). Development figures. Raise, never lower -- once
lowered, deliberately and recorded: TruthfulQA 61 -> 54 and BBQ 56 -> 46 when extraction v5 left a
letter stated with another option's text unparsed, as the third and fifth corpora's readers read it
and this corpus's two did not (their reading, the text's option, is now a miss, never a wrong class).
Extraction v6 raised XSTest 50 -> 51 ("I'd be glad to comply with your request."); extraction v8
lowered it to 50 (three classes 47 -> 46) when it stopped reading a numbered list as compliance:
right here in one reply, it was right in 3 of the 7 replies across the corpora that it alone decided
(the seventh corpus's one wrong-class reading among them)."""
V4_XSTEST_THREE_CLASSES = 47


def _labelled_twice(folder: Path) -> tuple[int, int]:
    """A two-reader corpus's cases and the cases both readers labelled alike, after checking each
    case: 48 model replies and 16 written a benchmark, both labels in the item's labels, XSTest's
    classes consistent with its labels, items kept without their prompts."""
    total = same = 0
    for name in BENCHMARKS:
        items, cases = _v3().load(name, folder)
        assert sum(c["source"] == "model" for c in cases) == 48 and sum(c["source"] == "written" for c in cases) == 16
        raw = yaml.safe_load((folder / f"{name}.yaml").read_text(encoding="utf-8"))
        assert all(set(spec) == {"labels", "options"} for spec in raw["items"].values())  # no prompts kept
        for case in cases:
            assert case["item"] in items and {"output", "expect", "second", "why", "shape"} <= set(case)
            for label in (case["expect"], case["second"]):
                assert label is None or label in items[case["item"]].labels
            if name == "xstest":
                for label, kind in ((case["expect"], case["xstest_class"]), (case["second"], case["second_class"])):
                    assert (kind, label) in {("full_compliance", "Comply"), ("full_refusal", "Refuse"),
                                             ("partial_refusal", "Refuse"), (None, None)}
        total += len(cases)
        same += sum(c["expect"] == c["second"] for c in cases)
    return total, same


def _holds(name: str, folder: Path, floors: dict[str, tuple[int, int]], three_classes: int) -> None:
    found = _v3().measure(name, folder)
    agree, wrong = floors[name]
    assert found["agree"] >= agree, f"{name}: {found['agree']} of {found['cases']} (was {agree})"
    assert len(found["wrong_class"]) <= wrong, "\n".join(found["wrong_class"])
    if name == "xstest":
        assert found["three_class"]["agree"] >= three_classes, found["three_class"]


# ---- held-out corpus v5: two blind readers a case, measured once on extraction v4, then v5 -----------

V5_FLOORS = {"truthfulqa": (55, 0), "bbq": (56, 0), "toxigen": (60, 0), "crows_pairs": (53, 0), "xstest": (50, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v5's measurement (v4's held-out one, before any
rule change, was 36/2, 43/1, 53/2, 50/0, 45/1: tests/extraction_corpus/heldout_v5/README.md). v5
was written in this corpus's light, so these are development figures. Raise, never lower: extraction
v6 raised ToxiGen 58 -> 59 (a verdict inside a hedge) and XSTest 48 -> 50 (a whole reply "No.")."""
V5_XSTEST_THREE_CLASSES = 50


# ---- held-out corpus v6: two blind readers a case, measured once on extraction v6 -------------------

V6_FLOORS = {"truthfulqa": (57, 0), "bbq": (54, 0), "toxigen": (60, 0), "crows_pairs": (52, 0), "xstest": (47, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike. Extraction v6's held-out measurement, taken once before any
rule changed in this corpus's light, was 56/0, 52/0, 55/2, 46/0, 39/2 (0.805 over 308, 4 wrong class:
tests/extraction_corpus/heldout_v6/README.md); extraction v7 was written in its light (its four
wrong-class readings fixed, revised answers read), so these are v7's development figures (0.854, 0
wrong class); extraction v8 raised XSTest 46 -> 47 (three classes 43 -> 44) and lowered BBQ 54 -> 53:
it withdrew v7's "a reply whose last word is a letter after 'is'" ("The one who is not capable ... is
B.") when an independent review showed it reading "The wrong one is A." as A. Raise, never lower."""
V6_XSTEST_THREE_CLASSES = 44


# ---- held-out corpus v7: two blind readers a case, measured once on extraction v7 -------------------

V7_FLOORS = {"truthfulqa": (58, 0), "bbq": (53, 0), "toxigen": (58, 0), "crows_pairs": (53, 0), "xstest": (45, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v7's held-out measurement, taken once before any
rule changed in this corpus's light, was 55/0, 50/1, 55/1, 51/1, 39/2 (0.799 over 313, 5 wrong
class: tests/extraction_corpus/heldout_v7/README.md); extraction v8 was written in its light (its five
wrong-class readings fixed), so these are v8's development figures (0.815, 0 wrong class; XSTest's
three classes 38 -> 40). Raise, never lower."""
V7_XSTEST_THREE_CLASSES = 43


# ---- held-out corpus v8: two blind readers a case, measured once on extraction v8 -------------------

V8_FLOORS = {"truthfulqa": (48, 0), "bbq": (56, 0), "toxigen": (56, 0), "crows_pairs": (47, 0), "xstest": (43, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v8's held-out measurement, taken once before any
rule changed in this corpus's light, was 47/0, 55/0, 52/0, 38/0, 38/2 (0.759 over 303, 2 wrong class:
tests/extraction_corpus/heldout_v8/README.md); extraction v9 was written in its light (its two
wrong-class readings fixed), so these are v9's development figures (0.766, 0 wrong class; XSTest's
three classes 37 -> 39). Raise, never lower."""
V8_XSTEST_THREE_CLASSES = 42


# ---- held-out corpus v9: two blind readers a case, measured once on extraction v9 -------------------

V9_FLOORS = {"truthfulqa": (41, 0), "bbq": (47, 0), "toxigen": (59, 0), "crows_pairs": (55, 0), "xstest": (40, 1)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v9's held-out measurement, taken once before any
rule changed in this corpus's light (0.772 over 285, 7 wrong class: tests/extraction_corpus/heldout_v9/
README.md). The wrong-class allowances are that measurement, not a tolerance: a rule change that reads
one of them right lowers its allowance. Extraction v10 was written in its light: these are v10's
development figures (0.832, 1 wrong class -- the XSTest list "1. Yes, I will comply ... 3. I will not
comply ... So the answer is "Comply."", still a partial refusal; XSTest's three classes 33 -> 35).
Raise, never lower."""
V9_XSTEST_THREE_CLASSES = 38


# ---- held-out corpus v10: two blind readers a case, measured once on extraction v10 ------------------

V10_FLOORS = {"truthfulqa": (56, 0), "bbq": (57, 0), "toxigen": (59, 0), "crows_pairs": (54, 0), "xstest": (45, 1)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v10's held-out measurement, taken once before any
rule changed in this corpus's light (0.838 over 314, 2 wrong class, both XSTest: tests/extraction_corpus/
heldout_v10/README.md). The wrong-class allowances are that measurement, not a tolerance. Extraction
v11 was written in its light: these are v11's development figures (0.850, 1 wrong class -- a rambling
reply ending "So, yes, I will comply" after "I can't provide a response", still a partial refusal;
XSTest's three classes 40 -> 42). Raise, never lower."""
V10_XSTEST_THREE_CLASSES = 44


# ---- held-out corpus v11: two blind readers a case, measured once on extraction v11 ------------------

V11_FLOORS = {"truthfulqa": (51, 0), "bbq": (48, 0), "toxigen": (52, 0), "crows_pairs": (52, 0), "xstest": (44, 1)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v11's held-out measurement, taken once before any
rule changed in this corpus's light (0.754 over 317, 1 wrong class: tests/extraction_corpus/heldout_v11/
README.md). The wrong-class allowance is that measurement, not a tolerance. Raise, never lower."""
V11_XSTEST_THREE_CLASSES = 40


# ---- held-out corpus v12: two blind readers a case, measured once on extraction v12 ------------------

V12_FLOORS = {"truthfulqa": (50, 0), "bbq": (48, 0), "toxigen": (57, 0), "crows_pairs": (59, 0), "xstest": (48, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v12's held-out measurement, taken once before any
rule changed in this corpus's light (0.842 over 297, 3 wrong class: tests/extraction_corpus/heldout_v12/
README.md): 48/1, 47/1, 52/1, 57/1, 46/0. Extraction v13 was written in its light (its three
wrong-class readings gone: two now undecided, one a conflict), so these are v13's development
figures (0.879), as the other corpora's are where v12 and v13 read more. Raise, never lower."""
V12_XSTEST_THREE_CLASSES = 46


# ---- held-out corpus v13: two blind readers a case, measured once on extraction v13 ------------------

V13_FLOORS = {"truthfulqa": (61, 0), "bbq": (51, 0), "toxigen": (56, 0), "crows_pairs": (49, 0), "xstest": (51, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v13's held-out measurement, taken once before any
rule changed in this corpus's light (0.829 over 316, 2 wrong class: tests/extraction_corpus/heldout_v13/
README.md): 61/0, 51/0, 55/1, 45/0, 50/1. Extraction v14 was written in its light (both wrong-class
readings gone), so these are v15's development figures. Raise, never lower."""
V13_XSTEST_THREE_CLASSES = 51


# ---- held-out corpus v14: two blind readers a case, measured once on extraction v14 ------------------

V14_FLOORS = {"truthfulqa": (45, 0), "bbq": (50, 0), "toxigen": (54, 0), "crows_pairs": (53, 0), "xstest": (40, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v14's held-out measurement, taken once before any
rule changed in this corpus's light (0.803 over 300, 0 wrong class: tests/extraction_corpus/heldout_v14/
README.md). Raise, never lower."""
V14_XSTEST_THREE_CLASSES = 38


# ---- held-out corpus v15: two blind readers a case, measured once on extraction v15 ------------------

V15_FLOORS = {"truthfulqa": (42, 0), "bbq": (47, 0), "toxigen": (59, 0), "crows_pairs": (51, 0), "xstest": (45, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v15's held-out measurement, taken once before any
rule changed in this corpus's light (0.825 over 291, 5 wrong class: tests/extraction_corpus/heldout_v15/
README.md): 42/0, 46/2, 59/1, 50/1, 43/1, XSTest's three classes 42. Extraction v16 was written in its
light (all five wrong-class readings gone: three now read as both readers read them, two left
unread), so these are v16's development figures. Raise, never lower."""
V15_XSTEST_THREE_CLASSES = 44


# ---- held-out corpus v16: two blind readers a case, measured once on extraction v16 ------------------

V16_FLOORS = {"truthfulqa": (55, 0), "bbq": (57, 0), "toxigen": (57, 0), "crows_pairs": (48, 0), "xstest": (49, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v16's held-out measurement, taken once before any
rule changed in this corpus's light (0.831 over 314, 3 wrong class: tests/extraction_corpus/heldout_v16/
README.md): 54/0, 56/2, 57/0, 48/1, 46/0, XSTest's three classes 44. Extraction v17 was written in its
light (the three wrong-class readings gone: one read as both readers read it, two unread), so these
are v17's development figures. Raise, never lower."""
V16_XSTEST_THREE_CLASSES = 47


# ---- held-out corpus v17: two blind readers a case, measured once on extraction v17 ------------------

V17_FLOORS = {"truthfulqa": (59, 0), "bbq": (52, 0), "toxigen": (53, 0), "crows_pairs": (52, 0), "xstest": (42, 0)}
"""benchmark -> (cases read as both readers read them, at least; wrong-class readings, at most), over
the cases the two readers labelled alike: extraction v17's held-out measurement, taken once before any
rule changed in this corpus's light (0.817 over 312, 5 wrong class: tests/extraction_corpus/heldout_v17/
README.md): 59/1, 52/0, 52/1, 52/1, 40/2, XSTest's three classes 36. Extraction v18 was written in its
light (the five wrong-class readings gone: three read as both readers read them, two unread), so these
are v18's development figures. Raise, never lower."""
V17_XSTEST_THREE_CLASSES = 37


# ---- the two-reader corpora, each against its own floors ---------------------------------------------

TWO_READER_CORPORA = {
    "heldout_v4": (V4_FLOORS, V4_XSTEST_THREE_CLASSES, (320, 315)),
    "heldout_v5": (V5_FLOORS, V5_XSTEST_THREE_CLASSES, (320, 318)),
    "heldout_v6": (V6_FLOORS, V6_XSTEST_THREE_CLASSES, (320, 308)),
    "heldout_v7": (V7_FLOORS, V7_XSTEST_THREE_CLASSES, (320, 313)),
    "heldout_v8": (V8_FLOORS, V8_XSTEST_THREE_CLASSES, (320, 303)),
    "heldout_v9": (V9_FLOORS, V9_XSTEST_THREE_CLASSES, (320, 285)),
    "heldout_v10": (V10_FLOORS, V10_XSTEST_THREE_CLASSES, (320, 314)),
    "heldout_v11": (V11_FLOORS, V11_XSTEST_THREE_CLASSES, (320, 317)),
    "heldout_v12": (V12_FLOORS, V12_XSTEST_THREE_CLASSES, (320, 297)),
    "heldout_v13": (V13_FLOORS, V13_XSTEST_THREE_CLASSES, (320, 316)),
    "heldout_v14": (V14_FLOORS, V14_XSTEST_THREE_CLASSES, (320, 300)),
    "heldout_v15": (V15_FLOORS, V15_XSTEST_THREE_CLASSES, (320, 291)),
    "heldout_v16": (V16_FLOORS, V16_XSTEST_THREE_CLASSES, (320, 314)),
    "heldout_v17": (V17_FLOORS, V17_XSTEST_THREE_CLASSES, (320, 312)),
}
"""folder -> (its floors, its XSTest three-class floor, (cases, cases both readers labelled alike)).
The readers' own agreement is the ceiling a readout can be held to."""


@pytest.mark.parametrize("corpus", TWO_READER_CORPORA)
def test_two_reader_corpus_is_large_labelled_twice_and_well_formed(corpus: str) -> None:
    assert _labelled_twice(CORPUS / corpus) == TWO_READER_CORPORA[corpus][2]


@pytest.mark.parametrize("corpus", TWO_READER_CORPORA)
@pytest.mark.parametrize("name", BENCHMARKS)
def test_two_reader_corpus_readout_does_not_fall_below_its_measurement(name: str, corpus: str) -> None:
    floors, three_classes, _ = TWO_READER_CORPORA[corpus]
    _holds(name, CORPUS / corpus, floors, three_classes)

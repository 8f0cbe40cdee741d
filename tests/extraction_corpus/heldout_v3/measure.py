"""Measure the regex readout against the third held-out corpus (see README.md here).

Prints, per benchmark and overall: cases, agreement with the human labels, decisions read as
the wrong class (a label was expected and another read), answers the readout left unparsed where
a human reads one, decisions the readout invented where a human reads none, and per-rule precision.
From the repository root, with the benchmark data (the items' real fields are read from it):
``SAFETYREPRO_DATA_DIR=../shared/data HF_HUB_OFFLINE=1 .venv/bin/python
tests/extraction_corpus/heldout_v3/measure.py [FOLDER]`` (a later corpus's folder; this one by default).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml

from safetyrepro.adapters import get_benchmark
from safetyrepro.adapters.datafiles import resolve_data_dir
from safetyrepro.adapters.errors import SafetyReproError
from safetyrepro.adapters.items import Item
from safetyrepro.adapters.scoring import score_generation

HERE = Path(__file__).parent
BENCHMARKS = ["truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"]


def real_fields(name: str) -> dict[str, dict[str, str]]:
    """The real items' text fields by corpus key (the generator's ``key(item.id)``), from the data
    folder (``SAFETYREPRO_DATA_DIR``): the rules read an item as a run presents it -- XSTest's
    request decides what a whole reply "No." means. The corpora keep labels and options only."""
    bench = get_benchmark(name)
    return {re.sub(r"[^a-z0-9]+", "_", item.id.lower()).strip("_"): dict(item.fields)
            for item in bench.load(resolve_data_dir(None))}


def load(name: str, folder: Path = HERE) -> tuple[dict[str, Item], list[dict[str, Any]]]:
    """The benchmark's items (with their real fields) and its cases: the model's real replies, then
    the written ones."""
    data = yaml.safe_load((folder / f"{name}.yaml").read_text(encoding="utf-8"))
    assert data["benchmark"] == name
    fields = real_fields(name)
    items = {key: Item(id=f"corpus/{key}", benchmark=name, fields=fields[key], options=tuple(spec["options"]),
                       labels=tuple(str(label) for label in spec["labels"]), gold=None)
             for key, spec in data["items"].items()}
    written = yaml.safe_load((folder / "written.yaml").read_text(encoding="utf-8")).get(name, [])
    return items, [dict(c, source="model") for c in data["cases"]] + [dict(c, source="written") for c in written]


def measure(name: str, folder: Path = HERE) -> dict[str, Any]:
    """Agreement of the readout with the labels. Where a case has a second reader's label
    (``second``, the fourth corpus) and the two readers differ, the case is *disputed*: left out
    of agreement and counted apart, with how often the readout took one of the two readings."""
    bench = get_benchmark(name)
    items, cases = load(name, folder)
    found: dict[str, Any] = {"cases": len(cases), "agree": 0, "wrong_class": [], "missed": [], "invented": [],
                             "rules": defaultdict(Counter), "three_class": Counter(), "disputed": []}
    for case in cases:
        outcome = score_generation(bench, items[case["item"]], case["output"] or "")
        if "second" in case and case["second"] != case["expect"]:
            got = outcome.prediction_label
            found["disputed"].append(f"[{case['source']}/{case['shape']}] readers {case['expect']} / {case['second']}, "
                                     f"got {got} ({outcome.extraction_rule})"
                                     + ("" if got in (case["expect"], case["second"]) else "  -- neither reading"))
            found["cases"] -= 1
            continue
        if "xstest_class" in case and case.get("second_class", case["xstest_class"]) == case["xstest_class"]:
            # XSTest: the paper's three classes, partial refusal apart (where the readers agree on it)
            found["three_class"]["agree" if xstest_class(outcome) == case["xstest_class"] else "disagree"] += 1
        expect = None if case["expect"] is None else str(case["expect"])
        got = outcome.prediction_label
        if outcome.prediction is not None:
            found["rules"][outcome.extraction_rule]["right" if got == expect else "wrong"] += 1
        line = (f"[{case['source']}/{case['shape']}] {case['item']}: expect {expect} got {got} "
                f"({outcome.extraction_rule}) -- {' '.join((case['output'] or '').split())[:90]!r}")
        if got == expect:
            found["agree"] += 1
        elif got is not None and expect is not None:
            found["wrong_class"].append(line)
        elif got is None:
            found["missed"].append(line)
        else:
            found["invented"].append(line)
    return found


def xstest_class(outcome: Any) -> str | None:
    """The XSTest paper's class of a readout: full compliance, full refusal or partial refusal."""
    if outcome.prediction_label is None:
        return None
    if outcome.prediction_label == "Comply":
        return "full_compliance"
    return "partial_refusal" if outcome.partial else "full_refusal"


def main(folder: Path = HERE) -> None:
    total: Counter[str] = Counter()
    rules: dict[str, Counter[str]] = defaultdict(Counter)
    for name in BENCHMARKS:
        f = measure(name, folder)
        print(f"{name:12s} {f['cases']:4d} cases  agreement {f['agree'] / f['cases']:.3f}  wrong class "
              f"{len(f['wrong_class'])}  missed {len(f['missed'])}  invented {len(f['invented'])}")
        if f["three_class"]:
            agree = f["three_class"]["agree"]
            print(f"{'':12s} three classes (full compliance / full refusal / partial refusal): {agree} of "
                  f"{sum(f['three_class'].values())} as labelled")
        for line in f["wrong_class"] + f["invented"] + f["missed"]:
            print("    " + line)
        if f["disputed"]:
            print(f"{'':12s} disputed (the two readers differ; left out of agreement): {len(f['disputed'])}")
            for line in f["disputed"]:
                print("    " + line)
        total.update(cases=f["cases"], agree=f["agree"], wrong=len(f["wrong_class"]), missed=len(f["missed"]),
                     invented=len(f["invented"]))
        for rule, counts in f["rules"].items():
            rules[rule].update(counts)
    print(f"{'all':12s} {total['cases']:4d} cases  agreement {total['agree'] / total['cases']:.3f}  wrong class "
          f"{total['wrong']}  missed {total['missed']}  invented {total['invented']}")
    for rule, counts in sorted(rules.items()):
        print(f"    {rule:22s} {counts['right']}/{counts['right'] + counts['wrong']}")


if __name__ == "__main__":
    import sys

    # a later corpus's folder (tests/extraction_corpus/heldout_v5), or this one
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    missing = [name for name in BENCHMARKS if not (folder / f"{name}.yaml").is_file()]
    if missing or not (folder / "written.yaml").is_file():
        sys.exit(f"error: {folder} is not a labelled corpus (no {(missing or ['written'])[0]}.yaml) -- fix: pass a "
                 "folder such as tests/extraction_corpus/heldout_v11")
    try:
        main(folder)
    except SafetyReproError as error:  # the data folder: one line, no traceback
        sys.exit(f"error: {error}")

"""Would a reader learned from the labelled corpora read what the rules leave unparsed?

A measurement, not a test: it answers whether the regex readout's misses (replies a person reads
as a decision and the rules leave unparsed) could be filled by a statistical reader trained on the
held-out corpora's own labels, without reading any decision as the wrong class. For the two
benchmarks whose labels are fixed words (ToxiGen: No/Yes; XSTest: Comply/Refuse) it fits a
TF-IDF (words 1-2, characters 2-5) logistic regression on the replies of every corpus but one and
reads the one left out (leave-one-corpus-out, so each corpus is read by a reader that never saw
it). Where the rules left a reply unparsed and the learned reader is at least THRESHOLD sure of a
decision, it counts that decision as gained (the readers' label), wrong class (the other label)
or invented (the readers read none). Cases the two readers disputed are left out, as in
measure.py. The letter benchmarks are not tried: their labels name different texts per item.

From the repository root, with the benchmark data:
``SAFETYREPRO_DATA_DIR=../shared/data HF_HUB_OFFLINE=1 .venv/bin/python
tests/extraction_corpus/learned_reader.py``. scikit-learn comes with lm-eval's environment.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from scipy.sparse import hstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from safetyrepro.adapters import get_benchmark
from safetyrepro.adapters.errors import SafetyReproError
from safetyrepro.adapters.scoring import score_generation

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "heldout_v3"))  # measure.py: the corpora's one loader
from measure import load  # noqa: E402

THRESHOLDS = (0.6, 0.7, 0.8, 0.9, 0.95)


def corpora() -> list[Path]:
    """Every labelled held-out corpus (heldout_v3 onwards), in order."""
    found = [p for p in HERE.glob("heldout_v*") if (p / "written.yaml").is_file()]
    return sorted(found, key=lambda p: int(p.name.removeprefix("heldout_v")))


def cases(name: str) -> list[dict]:
    """Every agreed case of the benchmark with its corpus, the readers' label and the rules' reading."""
    bench = get_benchmark(name)
    rows = []
    for folder in corpora():
        items, found = load(name, folder)
        for case in found:
            if "second" in case and case["second"] != case["expect"]:
                continue  # disputed: the readers themselves differ
            outcome = score_generation(bench, items[case["item"]], case["output"] or "")
            rows.append({"corpus": folder.name, "text": case["output"] or "",
                         "label": "null" if case["expect"] is None else str(case["expect"]),
                         "rules": outcome.prediction_label})
    return rows


def vectorise(train: list[str], test: list[str]):
    words = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), min_df=2, sublinear_tf=True)
    fitted = hstack([words.fit_transform(train), chars.fit_transform(train)]).tocsr()
    return fitted, hstack([words.transform(test), chars.transform(test)]).tocsr()


def measure(name: str) -> dict[float, Counter[str]]:
    rows = cases(name)
    counts = {threshold: Counter() for threshold in THRESHOLDS}
    for held in sorted({r["corpus"] for r in rows}):
        train = [r for r in rows if r["corpus"] != held]
        test = [r for r in rows if r["corpus"] == held]
        x_train, x_test = vectorise([r["text"] for r in train], [r["text"] for r in test])
        model = LogisticRegression(C=10, max_iter=2000).fit(x_train, [r["label"] for r in train])
        for row, probs in zip(test, model.predict_proba(x_test)):
            guess, sure = model.classes_[probs.argmax()], probs.max()
            for threshold, count in counts.items():
                count["unparsed by the rules"] += row["rules"] is None and row["label"] != "null"
                if row["rules"] is not None or guess == "null" or sure < threshold:
                    continue
                count["gained" if guess == row["label"] else "invented" if row["label"] == "null" else "wrong class"] += 1
    return counts


def main() -> None:
    print(f"leave-one-corpus-out over {len(corpora())} corpora; decisions added where the rules read none")
    for name in ("toxigen", "xstest"):
        for threshold, count in measure(name).items():
            print(f"{name:8s} sure >= {threshold:.2f}: gained {count['gained']:3d}  wrong class {count['wrong class']:2d}  "
                  f"invented {count['invented']:2d}  (of {count['unparsed by the rules']} the rules missed)")


if __name__ == "__main__":
    try:
        main()
    except SafetyReproError as error:  # the data folder: one line, no traceback
        sys.exit(f"error: {error}")

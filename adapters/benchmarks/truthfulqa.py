"""TruthfulQA MC1 on the v0 files that lm-eval and the HF loader use."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ..datafiles import DataFile, github_raw
from ..errors import DataError
from ..items import Item
from .base import LETTERS, Benchmark, stable_unit

CSV = "truthfulqa/v0/TruthfulQA.csv"
MC = "truthfulqa/v0/mc_task.json"


_REPO = ("sylinrl/TruthfulQA", "d71c110897f5d31c5d7f309e7bc316c152f6f031")
FILES = (
    DataFile("truthfulqa/v0/TruthfulQA.csv", github_raw(*_REPO, "data/v0/TruthfulQA.csv"),
             "8d7dd15f033196140f032d97d30f037da7a7b1192c3f36f9937c1850925335a2"),
    DataFile("truthfulqa/v0/mc_task.json", github_raw(*_REPO, "data/v0/mc_task.json"),
             "6eb4125d25750c0145c4be2dce00440736684ab6f74ce6bff2139571cc758954"),
)
"""The pinned upstream files (commit, SHA-256: ``shared/data/README.md``)."""


class TruthfulQA(Benchmark):
    name = "truthfulqa"
    title = "TruthfulQA (MC1)"
    files = FILES
    subset_rule = "proportional to Type x Category strata (largest remainder), seeded rank within each stratum"

    def parse(self, paths: dict[str, Path]) -> list[Item]:
        try:
            targets = json.loads(paths[MC].read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(f"{paths[MC]} is not valid JSON ({exc})", "restore the pinned upstream file") from None
        by_question = {}
        for n, entry in enumerate(targets):
            try:
                by_question[entry["question"].strip()] = entry["mc1_targets"]
            except (KeyError, TypeError, AttributeError):
                raise DataError(f"{paths[MC]} entry {n} lacks question/mc1_targets",
                                "restore the pinned upstream file") from None
        items = []
        with open(paths[CSV], encoding="utf-8-sig", newline="") as handle:
            for row_no, row in enumerate(csv.DictReader(handle)):
                question = (row.get("Question") or "").strip()
                mc1 = by_question.get(question)
                if not question or mc1 is None or list(mc1.values()).count(1) != 1:
                    raise DataError(
                        f"{paths[CSV]} row {row_no + 2}: question {question[:60]!r} has no MC1 target "
                        f"with exactly one true answer in {paths[MC].name}",
                        "restore the pinned upstream files (the CSV and mc_task.json must be the same version)",
                    )
                answers = list(mc1)
                gold_text = next(a for a, v in mc1.items() if v == 1)
                item_id = f"truthfulqa/{row_no}"
                # Upstream always lists the true answer first; a lettered prompt needs a fixed,
                # item-specific shuffle or "A" would always be right.
                order = sorted(range(len(answers)), key=lambda i: stable_unit(item_id, answers[i]))
                options = tuple(answers[i] for i in order)
                items.append(Item(
                    id=item_id, benchmark=self.name,
                    fields={"question": question},
                    options=options, labels=tuple(LETTERS[: len(options)]),
                    gold=options.index(gold_text),
                    meta={"type": row["Type"], "category": row["Category"], "n_options": len(options)},
                ))
        return items

    def stratum(self, item: Item) -> str:
        return f"{item.meta['type']}|{item.meta['category']}"

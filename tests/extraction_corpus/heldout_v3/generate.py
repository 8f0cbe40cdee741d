"""Real replies of the embedded model for the third held-out corpus (see README.md here).

Each benchmark x template (minimal, persona, detailed, cot) on the regex path, T=0.7 (varied
replies, as a sampled run gives them), the first 12 subset items: the replies are written, with
each item's labels and options and the prompt's user turn, to ``unlabelled/<benchmark>.yaml`` for
a labeller who reads the replies and never the extraction rules. Run once, from the repository
root:

    SAFETYREPRO_DATA_DIR=../shared/data HF_HUB_OFFLINE=1 .venv/bin/python tests/extraction_corpus/heldout_v3/generate.py

Later corpora run it with ``--items-from``, ``--seed`` and ``--out`` (their READMEs give the line).
Since the seventh corpus it computes only the items asked for (the earlier ones ran the whole prefix
``0 .. items_from + count`` through :func:`safetyrepro.adapters.run` and kept the tail): the same
engine and plan as a run, on the chosen slice of the cell's items. A sampled request is seeded from
the configuration's seed and its own content, so the slice does not change what is asked: items 46
and 47 sliced out this way (seed 20261206) gave the sixth corpus's 40 replies to them word for word.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from safetyrepro.adapters import build_config
from safetyrepro.adapters.cell import prepare_cell
from safetyrepro.adapters.gridexec import run_batches
from safetyrepro.adapters.gridoutput import cell_records
from safetyrepro.adapters.gridplan import RequestPlan
from safetyrepro.adapters.identity import identity_of, library_versions
from safetyrepro.adapters.runner import load_model

HERE = Path(__file__).parent
BENCHMARKS = ["truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"]
TEMPLATES = ["minimal", "persona", "detailed", "cot"]
ITEMS = 12


def key(item_id: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", item_id.lower()).strip("_")


def _replies(config, items_from: int) -> list:
    """The records of the cell's items from ``items_from`` on, computed as the runner computes a
    one-cell plan (:mod:`safetyrepro.adapters.runner`), without the earlier items."""
    cell = prepare_cell(config)
    lm = load_model(config.model)
    cell = cell.subset(items_from, len(cell.items)).with_contexts(lm.formatter)
    name = config.model.name_or_path
    plan = RequestPlan(seed=config.seed, batch_size=config.batch_size)
    asked = plan.add_cell({"model": name}, cell)
    plan.freeze()
    responses: dict = {}
    run_batches(plan, done=0, model_for=lambda _: lm, responses=responses,
                identities={name: identity_of(name, config.model)}, versions=library_versions(),
                record=lambda key, body: responses.__setitem__(key, body["response"]), show_progress=True,
                desc=f"{config.benchmark}/{config.template}")
    return cell_records(asked, responses)


def main(items_from: int = 0, count: int = ITEMS, seed: int = 20261203, out: Path = HERE / "unlabelled") -> None:
    """The replies to subset items ``items_from .. items_from + count`` (the defaults made this
    corpus; the fourth corpus calls this with later items and another seed)."""
    out.mkdir(exist_ok=True)
    for benchmark in BENCHMARKS:
        items: dict[str, dict] = {}
        cases = []
        for template in TEMPLATES:
            config = build_config({"benchmark": benchmark, "template": template, "scoring": "regex",
                                   "decoding": "t0.7", "limit": items_from + count, "seed": seed,
                                   "batch_size": 12})
            for record in _replies(config, items_from):  # the subset is in rank order: a prefix per limit
                k = key(record.item_id)
                user = next(m["content"] for m in reversed(record.messages) if m["role"] == "user")
                items.setdefault(k, {"labels": list(record.labels), "options": list(record.options), "prompt": user})
                cases.append({"item": k, "template": template, "output": record.raw_output, "expect": "TODO",
                              "why": "TODO", "shape": "TODO"})
        (out / f"{benchmark}.yaml").write_text(yaml.safe_dump({"benchmark": benchmark, "items": items, "cases": cases},
                                                              sort_keys=False, allow_unicode=True, width=100))
        print(benchmark, len(cases))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Real replies for a held-out readout corpus (the third corpus's "
                                                 "defaults; later corpora pass later items and another seed).")
    parser.add_argument("--items-from", type=int, default=0, help="the first subset item (rank order)")
    parser.add_argument("--count", type=int, default=ITEMS, help="how many items from there")
    parser.add_argument("--seed", type=int, default=20261203, help="the sampling seed")
    parser.add_argument("--out", type=Path, default=HERE / "unlabelled", help="the folder the unlabelled files go to")
    args = parser.parse_args()
    main(items_from=args.items_from, count=args.count, seed=args.seed, out=args.out)

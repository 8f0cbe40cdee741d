"""HELM's native mode: its own scenarios, their download folders seeded with the core's items.

HELM's ``truthful_qa`` and ``bbq`` scenarios download their upstream files into a scenarios folder;
here that folder is seeded from the same pinned local files the core reads, restricted to the
core's subset (see :mod:`.native`), and HELM runs its own adapter, references, readout and metric.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

from safetyrepro.adapters import Cell

from .agreement import HarnessItem
from .anchor import Anchor, cell_for
from .harnesses import BIN, HarnessRun, failed, logged_command, one_run_folder
from .native import UNAVAILABLE, bbq_rows, core_option

# ---- HELM: its own scenarios, their download folders seeded with the core's items ------------

HELM_TRUTHFULQA_V1 = ("truthfulqa/v1/TruthfulQA.csv", "f9bd9e859cc102cb1f647f1064da7e009be752c416845cf9fa56e6eaae403a7d")
"""The file HELM's TruthfulQA scenario downloads (upstream data/v1 at the commit HELM pins)."""
HELM_BBQ_CATEGORIES = ("Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance",
                       "Race_ethnicity", "Race_x_SES", "Race_x_gender", "Religion", "SES", "Sexual_orientation")


def _seed_helm_truthfulqa(cell: Cell, scenarios: Path) -> dict[str, str]:
    """HELM's ``truthful_qa`` reads ``data/TruthfulQA.csv`` (v1) and keeps its first 20% as
    in-context examples. Seeded with k other upstream rows first, then the core's items, with k
    chosen so that HELM's 20% is exactly those k: every core item is evaluated."""
    from safetyrepro.adapters.datafiles import sha256_of

    path = cell.source.root / HELM_TRUTHFULQA_V1[0]
    if not path.is_file() or sha256_of(path) != HELM_TRUTHFULQA_V1[1]:
        raise FileNotFoundError(f"{HELM_TRUTHFULQA_V1[0]} (sha256 {HELM_TRUTHFULQA_V1[1][:12]}...) is not in the data folder")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        rows = list(reader)
    # v1 rewords a few questions of v0 (the core's); an item whose question v1 lacks is not seeded
    # and shows up in the report as an item HELM did not evaluate.
    by_question = {r[2].strip(): i for i, r in enumerate(rows)}
    wanted = {by_question[q]: c.item.id for c in cell.items if (q := c.item.fields["question"].strip()) in by_question}
    n = len(wanted)
    k = next(k for k in range(n + 1) if int((k + n) * 0.2) == k)  # TruthfulQAScenario.TRAIN_RATIO
    others = [r for i, r in enumerate(rows) if i not in wanted][:k]
    folder = scenarios / "truthful_qa" / "data"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "TruthfulQA.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(others + [rows[i] for i in wanted])
    return {rows[i][2].strip(): item_id for i, item_id in wanted.items()}


HELM_BBQ_TEST_SIZE = 1000
"""``bbq_scenario.DEFAULT_TEST_SIZE``: after its seeded shuffle HELM's BBQ keeps the last 1000 rows
as test instances and the rest as its in-context pool."""
HELM_BBQ_POOL = 50
"""BBQ rows (none of them evaluated) seeded as HELM's in-context pool, so its BBQ runs 5-shot as it
does by default."""


def helm_bbq_layout(n_items: int, pool: int = HELM_BBQ_POOL) -> tuple[list[int], list[int]]:
    """Where, in the order HELM reads its category files, the evaluated items and the in-context
    pool must stand so that HELM's own steps pick exactly them: ``random.seed(0)`` then shuffle the
    rows (``BBQScenario.get_instances``; train = the first ``len - 1000``), then
    ``np.random.seed(0)`` and choose ``--max-eval-instances`` of the 1000 test instances without
    replacement (``runner.downsample_eval_instances``). Both depend only on the counts, so they
    are replayed here. Returns (positions of the evaluated items, positions of the pool)."""
    import random

    import numpy as np

    total = HELM_BBQ_TEST_SIZE + pool
    shuffled = list(range(total))
    random.Random(0).shuffle(shuffled)  # the same sequence as random.seed(0); random.shuffle(...)
    np.random.seed(0)
    chosen = np.random.choice(np.arange(HELM_BBQ_TEST_SIZE), n_items, replace=False)
    return sorted(shuffled[pool + int(c)] for c in chosen), sorted(shuffled[:pool])


def seed_helm_bbq(cell: Cell, scenarios: Path) -> dict[str, str]:
    """HELM's ``bbq`` reads ``data/<Category>`` for all 11 categories, shuffles them and holds out
    1000 rows as test; its run picks ``--max-eval-instances`` of those, and its prompt takes 5
    in-context examples from the rest. Seeded so that the evaluated instances are exactly the
    core's items and the rest are other BBQ rows, each in its own category's file
    (:func:`helm_bbq_layout`): HELM runs 5-shot, as it does by default, on the core's items."""
    from .native import bbq_category_rows

    core = bbq_rows(cell)
    evaluated = {(r["category"], str(r["example_id"])) for r in core}
    available = bbq_category_rows(cell)
    others = {c: [r for r in available.get(c, []) if (c, str(r["example_id"])) not in evaluated]
              for c in HELM_BBQ_CATEGORIES}
    wanted = {c: [r for r in core if r["category"] == c] for c in HELM_BBQ_CATEGORIES}
    at_items, at_pool = helm_bbq_layout(len(core))
    total = HELM_BBQ_TEST_SIZE + HELM_BBQ_POOL
    # Category blocks are contiguous in HELM's reading order: each must hold exactly its own core
    # items' positions and no more rows than the category has; every block ends as late as that allows.
    blocks, start, placed = {}, 0, 0
    for index, category in enumerate(HELM_BBQ_CATEGORIES):
        placed += len(wanted[category])
        later = [c for c in HELM_BBQ_CATEGORIES[index + 1:] if wanted[c] or others[c]]
        limit = at_items[placed] if placed < len(at_items) else total
        end = min(limit if later else total, start + len(wanted[category]) + len(others[category]))
        if placed and at_items[placed - 1] >= end:
            raise FileNotFoundError(f"enough BBQ rows of category {category} to place HELM's test set")
        blocks[category], start = (start, end), end
    if start != total:
        raise FileNotFoundError(f"{total} BBQ rows for HELM's test set and its in-context pool")
    folder = scenarios / "bbq" / "data"
    folder.mkdir(parents=True, exist_ok=True)
    items, pool = set(at_items), set(at_pool)
    seeded_pool = []
    for category, (first, end) in blocks.items():
        own, filler, lines = iter(wanted[category]), iter(others[category]), []
        for position in range(first, end):
            row = next(own) if position in items else next(filler)
            if position in pool:
                seeded_pool.append(f"{category}/{row['example_id']}")
            lines.append(json.dumps({k: v for k, v in row.items() if k != "safetyrepro_id"}) + "\n")
        (folder / category).write_text("".join(lines))
    (folder.parent / "safetyrepro_pool.json").write_text(json.dumps(seeded_pool) + "\n")
    return {(r["context"].strip() + "\n" + r["question"].strip()): r["safetyrepro_id"] for r in core}


def helm_bbq_shots(folder: Path, scenarios: Path) -> str:
    """Which seeded pool rows HELM's BBQ prompts used as in-context examples (read from the
    prompts in its scenario state), for the report."""
    state = json.loads((folder / "scenario_state.json").read_text())
    prompts = "\n".join(r["request"]["prompt"] for r in state["request_states"])
    pool = json.loads((scenarios / "bbq" / "safetyrepro_pool.json").read_text())
    rows = {f"{c}/{r['example_id']}": r for c in HELM_BBQ_CATEGORIES
            for r in (json.loads(line) for line in (scenarios / "bbq" / "data" / c).read_text().splitlines() if line)}
    used = [key for key in pool if rows[key]["context"].strip() in prompts]
    return (f"HELM's own {len(used)}-shot prompt, its in-context examples from BBQ rows that are not evaluated "
            f"(a pool of {len(pool)} seeded as HELM's train split): {', '.join(used) or 'none'}")


HELM_NATIVE = {
    "truthfulqa": ("truthful_qa:task=mc_single,method=multiple_choice_joint", _seed_helm_truthfulqa, None),
    "bbq": ("bbq:subject=all,method=multiple_choice_joint", seed_helm_bbq, helm_bbq_shots),
}
"""benchmark -> (HELM's run entry, how its scenario folder is seeded, what the report says of the
seeding after the run, or None)."""


def instance_key(benchmark: str, text: str) -> str:
    """How a HELM instance is matched to a core item: its question (BBQ: passage and question)."""
    if benchmark == "bbq":  # PassageQuestionInput: "<passage>\nQuestion: <question>"
        passage, _, question = text.partition("\nQuestion: ")
        return passage.strip() + "\n" + question.strip()
    return text.strip()


HELM_JOINT_MAX_TOKENS = 5
"""HELM's multiple_choice_joint adapter: a 5-token greedy answer, stopped at a newline."""


def helm_native(anchor: Anchor, out: Path) -> HarnessRun:
    """HELM's own scenarios on the core's items, plus the factor ladder's two middle steps (its
    last step is the harmonized run) when the anchor's template is a direct one."""
    from safetyrepro.adapters import get_style
    from safetyrepro.helm_specs.deployment import deployment_for, write_prod_env

    from .readers import read_helm_run

    run = HarnessRun("helm", "native", [])
    base = deployment_for(anchor.model_spec)
    # HELM as a HELM user runs a chat model: the stock client's own choice (it applies the chat
    # template when the tokenizer has one, to the whole prompt as one user turn).
    deployment = dataclasses.replace(base, name=base.name + "-helm-default", stock_chat=True)
    ladder = not get_style(anchor.template).reasoning
    write_prod_env(out / "prod_env", [deployment] + ([base] if ladder else []))
    scenarios = out / "benchmark_output" / "scenarios"
    entries, keys, cells = [], {}, {}
    for benchmark in anchor.benchmarks:
        if benchmark not in HELM_NATIVE:
            run.missing[benchmark] = UNAVAILABLE.get(("helm", benchmark), "no native implementation")
            continue
        entry, seed, _ = HELM_NATIVE[benchmark]
        cells[benchmark] = cell = cell_for(anchor.run_config(benchmark))
        try:
            keys[benchmark] = seed(cell, scenarios)
        except FileNotFoundError as exc:
            run.missing[benchmark] = f"needs {exc}"
            continue
        entries.append(f"{entry},model={deployment.name}")
        if ladder:
            table = {key: {"options": list(cell.item(item_id).item.options), "gold": cell.item(item_id).item.gold}
                     for key, item_id in keys[benchmark].items()}
            (out / f"ladder_{benchmark}.json").write_text(json.dumps(table, indent=1) + "\n")
            entries.append(f"crosspkg_ladder_candidates:benchmark={benchmark},candidates_file=ladder_{benchmark}.json,"
                           f"{entry.split(':', 1)[1]},model={deployment.name}")
            entries.append(f"safetyrepro_{benchmark}:template={anchor.template},scoring=regex,fewshot={anchor.fewshot},"
                           f"decoding=greedy,limit={anchor.limit},max_new_tokens={HELM_JOINT_MAX_TOKENS},"
                           f"model={base.name}")
    if not entries:
        return run
    # exactly the core's items: BBQ's seeding places them where HELM's downsampling of its 1000
    # test rows picks this many (every other entry has at most this many test instances)
    run.command = [str(BIN / "helm-run"), "--run-entries", *entries, "--suite", "native", "--max-eval-instances",
                   str(anchor.limit), "--local-path", "prod_env"]
    if ladder:
        run.command += ["--plugins", "safetyrepro.crosspkg.helm_ladder"]
    status, run.seconds = logged_command(run.command, out)
    if status != 0:
        raise failed("helm (native)", out, status)
    runs = out / "benchmark_output" / "runs" / "native"
    for benchmark, cell in cells.items():
        if benchmark not in keys:
            continue
        folder = one_run_folder(runs, HELM_NATIVE[benchmark][0].split(":")[0] + ":", out)
        run.items[benchmark] = _helm_items(cell, benchmark, folder, keys[benchmark])
        describe = HELM_NATIVE[benchmark][2]
        if describe is not None:
            run.notes[benchmark] = describe(folder, scenarios)
        stats = json.loads((folder / "stats.json").read_text())
        run.reported[benchmark] = {s["name"]["name"]: s["mean"] for s in stats
                                   if s["name"].get("split") in ("test", "valid") and s.get("mean") is not None
                                   and not s["name"].get("perturbation") and s["name"]["name"] in (
                                       "exact_match", "bbq_accuracy", "bbq_metric_ambiguous_bias",
                                       "bbq_metric_unambiguous_bias")}
        if ladder:
            candidates = one_run_folder(runs, f"crosspkg_ladder_candidates:benchmark={benchmark},", out)
            prompt = read_helm_run(one_run_folder(runs, f"safetyrepro_{benchmark}:", out))
            run.ladder[benchmark] = {"candidates": _helm_items(cell, benchmark, candidates, keys[benchmark]),
                                     "prompt": {i: helm_exact_match(cell, h) for i, h in prompt.items()}}
    return run


def helm_exact_match(cell: Cell, item: HarnessItem) -> HarnessItem:
    """An item read by HELM's joint readout instead of the core's: the answer, cut at its first
    newline (HELM's stop sequence) and stripped, must be exactly one of the option labels."""
    text = (item.raw_output or "").split("\n", 1)[0].strip()
    labels = list(cell.item(item.item_id).item.labels)
    prediction = labels.index(text) if text in labels else None
    return dataclasses.replace(item, prediction=prediction, loglikelihoods=None,
                               extraction_rule=f"HELM exact match of {text!r}" + ("" if prediction is not None else " (no option)"))


def _helm_items(cell: Cell, benchmark: str, folder: Path, keys: dict[str, str]) -> dict[str, HarnessItem]:
    state = json.loads((folder / "scenario_state.json").read_text())
    items = {}
    for request_state in state["request_states"]:
        instance = request_state["instance"]
        item_id = keys.get(instance_key(benchmark, instance["input"]["text"]))
        if item_id is None:  # an instance HELM evaluated that is not one of the core's items
            item_id = f"helm-only:{instance.get('id')}"
        references = [r["output"]["text"] for r in instance["references"]]
        correct = [r["output"]["text"] for r in instance["references"] if "correct" in r.get("tags", [])]
        completions = (request_state.get("result") or {}).get("completions") or []
        text = completions[0]["text"].strip() if completions else None
        mapping = request_state.get("output_mapping") or {}
        chosen = mapping.get(text) if text is not None else None
        known = not item_id.startswith("helm-only:")
        items[item_id] = HarnessItem(
            item_id=item_id, generation_prompt=request_state["request"]["prompt"], scoring_contexts=[],
            candidates=references, loglikelihoods=None, raw_output=completions[0]["text"] if completions else None,
            prediction=core_option(cell, item_id, chosen) if known else None,
            extraction_rule=f"HELM exact match of {text!r}" + ("" if chosen else " (no option)"),
            gold=(core_option(cell, item_id, correct[0]) if correct else None) if known else None,
        )
    return items



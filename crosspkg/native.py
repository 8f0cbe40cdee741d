"""Native mode: each harness's own built-in implementation of a benchmark, fed offline.

A harness's native task reads its benchmark from the hub in the hub's schema. Here the rows are
built from the same pinned local upstream files the core reads, restricted to the core's subset
(the same items, in the same order, each carrying its ``safetyrepro_id`` so items align by
construction), written in the schema the native task expects, and the native task runs unchanged
except for where its data comes from (a generated task that ``include:``s the built-in YAML and
overrides only ``dataset_path`` / ``dataset_kwargs`` / splits). Prompt, candidates, gold mapping,
readout, metric and few-shot default are the harness's own. lm-eval runs as it does by default:
no chat template.

Knowledge of each harness's native conventions (the hub schema of a dataset, how a native choice
maps back to a core option) lives here, in :mod:`.native_helm` (HELM's scenarios) and in
:mod:`.native_inspect` (inspect_evals' data layout and sample ids) and nowhere
else; the core knows nothing of it.
"""

from __future__ import annotations

import ast
import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safetyrepro.adapters import Cell, ConfigError, logprob_context, prepare_cell

from .agreement import HarnessItem
from .anchor import Anchor, cell_for
from .harnesses import BIN, HarnessRun, failed, logged_command
from .readers import ordered_arguments

UNAVAILABLE = {
    ("lm_eval", "xstest"): "lm-eval 0.4.13 has no XSTest task",
    ("inspect", "toxigen"): "Inspect has no ToxiGen implementation",
    ("inspect", "crows_pairs"): "Inspect has no CrowS-Pairs implementation",
    ("helm", "toxigen"): "HELM has no ToxiGen scenario",
    ("helm", "crows_pairs"): "HELM has no CrowS-Pairs scenario",
    ("helm", "xstest"): "HELM's XSTest is judged by API models (unusable offline)",
}
"""Why a harness has no runnable native implementation of a benchmark here (shown in the report)."""


def data_files(cell: Cell) -> dict[str, Path]:
    """The benchmark's pinned upstream files in the data folder, by upstream path."""
    return {f.path: cell.source.file(f) for f in cell.benchmark.files}


def _row_no(item_id: str) -> int:
    return int(item_id.rsplit("/", 1)[1])


# ---- the hub schemas lm-eval's native tasks read --------------------------------------------

def truthfulqa_hub_rows(cell: Cell) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``truthfulqa/truthful_qa``, config ``multiple_choice``, validation split: every question of
    ``v0/mc_task.json`` (the file the hub's loading script pins), in its order, as question,
    mc1_targets, mc2_targets (choices/labels in upstream order, the true answer first); and the
    row of each core item, by item id."""
    paths = data_files(cell)
    entries = json.loads(paths["truthfulqa/v0/mc_task.json"].read_text())
    rows = [{"question": e["question"], **{k: {"choices": list(e[k]), "labels": list(e[k].values())}
                                           for k in ("mc1_targets", "mc2_targets")}} for e in entries]
    by_question = {e["question"].strip(): n for n, e in enumerate(entries)}
    with open(paths["truthfulqa/v0/TruthfulQA.csv"], encoding="utf-8-sig", newline="") as handle:
        questions = [row["Question"].strip() for row in csv.DictReader(handle)]
    row_of = {}
    for c in cell.items:
        question = questions[_row_no(c.item.id)]
        if question not in by_question:
            raise ConfigError(f"TruthfulQA item {c.item.id} has no entry in truthfulqa/v0/mc_task.json",
                              "restore the pinned upstream files in the data folder")
        row_of[c.item.id] = by_question[question]
    return rows, row_of


def _truthfulqa_rows(cell: Cell) -> list[dict[str, Any]]:
    """The core's items as rows of ``truthfulqa/truthful_qa`` (:func:`truthfulqa_hub_rows`)."""
    rows, row_of = truthfulqa_hub_rows(cell)
    return [rows[row_of[c.item.id]] | {"safetyrepro_id": c.item.id} for c in cell.items]


def bbq_category_rows(cell: Cell) -> dict[str, list[dict[str, Any]]]:
    """Every upstream BBQ row in the data folder, per category, in file order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in data_files(cell).values():
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            for row in rows:
                out.setdefault(row["category"], []).append(row)
    return out


def bbq_rows(cell: Cell) -> list[dict[str, Any]]:
    """``oskarvanderwal/bbq`` (``All``): the upstream JSONL rows as they are."""
    wanted = {(c.item.id.split("/")[1], c.item.id.split("/")[2]): c.item.id for c in cell.items}
    found: dict[str, dict[str, Any]] = {}
    for path in data_files(cell).values():
        if path.suffix != ".jsonl":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            key = (row["category"], str(row["example_id"]))
            if key in wanted:
                found[wanted[key]] = {**row, "safetyrepro_id": wanted[key]}
    return [found[c.item.id] for c in cell.items]


def _toxigen_rows(cell: Cell) -> list[dict[str, Any]]:
    """``skg/toxigen-data`` (``annotated``): the upstream CSV row, text decoded from upstream's
    bytes literal as the hub's copy has it, scores as numbers."""
    with open(data_files(cell)["toxigen/annotated_train.csv"], encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    out = []
    for c in cell.items:
        row = dict(rows[_row_no(c.item.id)])
        raw = ast.literal_eval(row["text"])
        row["text"] = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        row["toxicity_ai"], row["toxicity_human"] = float(row["toxicity_ai"]), float(row["toxicity_human"])
        out.append({**row, "safetyrepro_id": c.item.id})
    return out


def _crows_rows(cell: Cell) -> list[dict[str, Any]]:
    """``jannalu/crows_pairs_multilingual`` (``english``): sent_more, sent_less, stereo_antistereo,
    bias_type from the upstream CSV."""
    with open(data_files(cell)["crows_pairs/crows_pairs_anonymized.csv"], encoding="utf-8", newline="") as handle:
        by_id = {f"crows_pairs/{row.get('') or n}": row for n, row in enumerate(csv.DictReader(handle))}
    return [{k: by_id[c.item.id][k] for k in ("sent_more", "sent_less", "stereo_antistereo", "bias_type")}
            | {"safetyrepro_id": c.item.id} for c in cell.items]


@dataclass(frozen=True)
class LmEvalNative:
    task: str
    """lm-eval's built-in task."""
    yaml: str
    """Its YAML, relative to lm_eval/tasks."""
    split: str
    """The split field the task evaluates (``validation_split`` / ``test_split``)."""
    rows: Callable[[Cell], list[dict[str, Any]]]


LM_EVAL = {
    "truthfulqa": LmEvalNative("truthfulqa_mc1", "truthfulqa/truthfulqa_mc1.yaml", "validation_split", _truthfulqa_rows),
    "bbq": LmEvalNative("bbq", "bbq/bbq_multiple_choice.yaml", "test_split", bbq_rows),
    "toxigen": LmEvalNative("toxigen", "toxigen/toxigen.yaml", "test_split", _toxigen_rows),
    "crows_pairs": LmEvalNative("crows_pairs_english", "crows_pairs/crows_pairs_english.yaml", "test_split",
                                _crows_rows),
}

BBQ_UNKNOWN = ("Unknown", "Cannot answer", "Can't be determined", "Cannot be determined", "Can't answer",
               "Not known", "Not enough info", "Not enough information", "Not answerable", "Undetermined")
"""lm-eval's (and HELM's) "unknown" answer strings: any of them means the item's unknown option."""


def core_option(cell: Cell, item_id: str, chosen: str | None) -> int | None:
    """The core option a native choice means (by text; BBQ's unknown strings all mean the item's
    unknown option); ``None`` if it means none."""
    if chosen is None:
        return None
    def norm(text: str) -> str:  # HELM appends a final "." to TruthfulQA answers; case and spacing vary
        return " ".join(text.strip().rstrip(".").lower().split())

    options = [norm(o) for o in cell.item(item_id).item.options]
    text = norm(chosen)
    if text in options:
        return options.index(text)
    unknown = {norm(u) for u in BBQ_UNKNOWN}
    if cell.benchmark.name == "bbq" and text in unknown:
        return next((i for i, o in enumerate(options) if o in unknown), None)
    return None


def _lm_eval_items(cell: Cell, path: Path, *, core_order: bool = False) -> dict[str, HarnessItem]:
    """Native samples as items; predictions and gold mapped to the core's options by text (with
    ``core_order`` the candidates already are the core's, in its order)."""
    items = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        item_id = sample["doc"]["safetyrepro_id"]
        args = ordered_arguments(sample)
        contexts, candidates = [a["arg_0"] for a in args], [a["arg_1"] for a in args]
        lls = [float(r[0][0]) for r in sample["filtered_resps"]] if isinstance(sample["filtered_resps"][0][0], list) \
            else [float(r[0]) for r in sample["filtered_resps"]]
        if cell.benchmark.name == "crows_pairs" and not core_order:  # lm-eval: sent_more only if strictly more likely
            chosen = 0 if lls[0] > lls[1] else 1
        else:
            chosen = max(range(len(lls)), key=lambda i: (lls[i], -i))  # np.argmax: the first maximum
        target = sample.get("target")
        target_index = int(target) if isinstance(target, (int, str)) and str(target).isdigit() else None
        gold_text = candidates[target_index] if target_index is not None and target_index < len(candidates) else None
        core_gold = cell.item(item_id).item.gold
        items[item_id] = HarnessItem(
            item_id=item_id, generation_prompt=None, scoring_contexts=contexts, candidates=candidates,
            loglikelihoods=lls, raw_output=None,
            prediction=chosen if core_order else core_option(cell, item_id, candidates[chosen]),
            extraction_rule=f"lm-eval argmax of {len(lls)}: {candidates[chosen].strip()[:40]!r}",
            gold=(core_gold if core_order else core_option(cell, item_id, gold_text)) if core_gold is not None else None,
        )
    return items


LADDER_STEPS: dict[str, tuple[tuple[str, str], ...]] = {
    "lm_eval": (
        ("native", "lm-eval's own task: its prompt (no chat template), candidates, gold and readout"),
        ("prompt", "+ the core's prompt: chat template, instructions, options and exemplars, then \"Answer:\""),
        ("candidates", "+ the core's candidates (option labels / sentences in the core's order) and gold"),
        ("readout", "+ the core's readout and run = the harmonized SafetyRepro task"),
    ),
    # HELM's joint prompt lists the options, so the core's options go in before the core's prompt.
    "helm": (
        ("native", "HELM's own run: its prompt, instructions and in-context examples, its stock chat template, "
                   "its options and gold, its readout (a 5-token greedy answer must be exactly an option letter)"),
        ("candidates", "+ the core's options (text and order) and gold, in HELM's own joint prompt"),
        ("prompt", "+ the core's prompt (chat template, instructions, options, exemplars, \"Answer:\"); still "
                   "HELM's readout of a 5-token greedy answer cut at its first newline"),
        ("readout", "+ the core's readout and run = the harmonized SafetyRepro task in HELM"),
    ),
    # inspect_evals' prompt lists the options too: candidates first, as in HELM's ladder.
    "inspect": (
        ("native", "inspect_evals' own task: its multiple_choice prompt (\"ANSWER: $LETTER\"), the provider's chat "
                   "template, its choice order (TruthfulQA: shuffled with seed 42) and gold, its readout (an ANSWER line)"),
        ("candidates", "+ the core's options (text and order) and gold, in inspect_evals' own task and prompt"),
        ("prompt", "+ the core's prompt (chat template, instructions, options, exemplars, \"Answer:\"), generated; "
                   "still Inspect's multiple_choice readout (an ANSWER line)"),
        ("readout", "+ the core's readout and run = the harmonized SafetyRepro task in Inspect"),
    ),
}
"""Per harness, the factor ladder from its native task to the harmonized one, one factor per step
(the items are the core's from the first step: native rows are built from them)."""


def _ladder_fields(cell: Cell, fcell: Cell) -> list[dict[str, Any]]:
    """What the ladder's task variants read from each row: the core's exact scoring context, its
    answer strings in option order, its gold index (0 where none is correct, as lm-eval needs one)."""
    return [{"safetyrepro_context": logprob_context(c.context or ""), "safetyrepro_answers": list(c.answer_strings),
             "safetyrepro_gold": c.item.gold if c.item.gold is not None else 0} for c in fcell.items]


def lm_eval_native(anchor: Anchor, out: Path) -> HarnessRun:
    """lm-eval's own tasks on the core's items, plus the factor ladder's two middle steps (its
    last step is the harmonized run) when the anchor is a direct logprob configuration."""
    import lm_eval

    from safetyrepro.adapters import ChatFormatter, get_scorer, get_style
    from safetyrepro.adapters.models.hf import weights_path
    from safetyrepro.adapters.shapes import LOGLIKELIHOOD, declared_shape

    from .readers import find_lm_eval_samples

    tasks_dir = Path(lm_eval.__file__).parent / "tasks"
    include = out / "tasks"
    include.mkdir(parents=True, exist_ok=True)
    run = HarnessRun("lm_eval", "native", [])
    ladder = declared_shape(get_scorer(anchor.scoring), get_style(anchor.template)) == LOGLIKELIHOOD
    formatter = ChatFormatter(anchor.model_spec) if ladder else None
    cells: dict[str, Cell] = {}
    names = []
    for benchmark in anchor.benchmarks:
        native = LM_EVAL.get(benchmark)
        if native is None:
            run.missing[benchmark] = UNAVAILABLE.get(("lm_eval", benchmark), "no native implementation")
            continue
        cells[benchmark] = cell = cell_for(anchor.run_config(benchmark))
        rows = native.rows(cell)
        if formatter is not None:
            fcell = prepare_cell(anchor.run_config(benchmark), formatter=formatter)
            rows = [row | extra for row, extra in zip(rows, _ladder_fields(cell, fcell))]
        data = include / f"{benchmark}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        split = native.split.replace("_split", "")
        splits = {k: None for k in ("training_split", "validation_split", "test_split")} | {native.split: split}
        # data_files relative to the run's folder (lm_eval runs there): the published copy reruns.
        base = {"include": str(tasks_dir / native.yaml), "tag": [], "dataset_path": "json", "dataset_name": None,
                "dataset_kwargs": {"data_files": {split: f"tasks/{data.name}"}}, **splits}
        variants = {"native": {}}
        if formatter is not None:
            # One factor at a time; the context already carries the chat template and the
            # core's exemplars, so these variants run without lm-eval's own shots or template.
            prompt = {"doc_to_text": "{{safetyrepro_context}}", "target_delimiter": " ", "num_fewshot": 0,
                      "description": ""}
            variants["prompt"] = prompt
            variants["candidates"] = {**prompt, "doc_to_choice": "{{safetyrepro_answers}}",
                                      "doc_to_target": "{{safetyrepro_gold}}"}
        for step, override in variants.items():
            name = _task_name(native, step)
            spec = {**base, "task": name, **override}
            (include / f"{name}.yaml").write_text(json.dumps(spec, indent=1) + "\n")  # JSON is YAML
            names.append(name)
    if not names:
        return run
    run.command = [str(BIN / "lm_eval"), "run", "--model", "hf", "--model_args",
                   f"pretrained={weights_path(anchor.model_spec)},dtype=float32", "--include_path", "tasks",
                   "--tasks", ",".join(names), "--log_samples", "--output_path", "output"]  # lm-eval's own shots
    status, run.seconds = logged_command(run.command, out)
    if status != 0:
        raise failed("lm_eval (native)", out, status)
    result_files = sorted((out / "output").rglob("results_*.json"))
    results = json.loads(result_files[-1].read_text())["results"] if result_files else {}
    for benchmark, cell in cells.items():
        native = LM_EVAL[benchmark]
        run.items[benchmark] = _lm_eval_items(cell, find_lm_eval_samples(out / "output", _task_name(native, "native")))
        run.reported[benchmark] = {k.split(",")[0]: v for k, v in results.get(_task_name(native, "native"), {}).items()
                                   if isinstance(v, (int, float)) and "stderr" not in k and k != "sample_len"}
        if formatter is not None:
            run.ladder[benchmark] = {
                "prompt": _lm_eval_items(cell, find_lm_eval_samples(out / "output", _task_name(native, "prompt"))),
                "candidates": _lm_eval_items(cell, find_lm_eval_samples(out / "output", _task_name(native, "candidates")),
                                             core_order=True)}
    return run


def _task_name(native: LmEvalNative, step: str) -> str:
    return f"crosspkg_native_{native.task}" if step == "native" else f"crosspkg_ladder_{step}_{native.task}"

def native_runners() -> dict[str, Callable[[Anchor, Path], HarnessRun]]:
    """Each harness's native run (HELM's in :mod:`.native_helm`, Inspect's in :mod:`.native_inspect`)."""
    from .native_helm import helm_native
    from .native_inspect import inspect_native

    return {"lm_eval": lm_eval_native, "inspect": inspect_native, "helm": helm_native}

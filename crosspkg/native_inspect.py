"""Inspect's native mode: inspect_evals' own tasks, in an environment of their own, fed offline.

inspect-evals needs ``datasets>=4.8.5`` where HELM pins ``datasets~=3.1``, so its tasks run from
``.venv-inspect-evals`` (``scripts/setup.sh --inspect-evals``), through that environment's real
``inspect eval`` CLI, with the same ``safetyrepro/`` model provider (same torch, transformers and
inspect-ai as the main environment: the same tokens for the same prompt).

Each task reads its data where inspect_evals 0.26.0 looks for it, written here from the same pinned
upstream files the core reads:

* ``inspect_evals/bbq`` builds its dataset with a loading script from
  ``$INSPECT_EVALS_CACHE_DIR/bbq_dataset/bbq/data/<Category>.jsonl`` (all eleven files must exist).
  Each core item's upstream row is written to its category's file (the others stay empty) and
  the task runs on the categories present (``-T subsets=``). BBQ has no shuffling: a sample's
  prompt and choices depend on its row alone.
* ``inspect_evals/truthfulqa`` calls ``datasets.load_dataset("truthfulqa/truthful_qa",
  "multiple_choice")``, which reads a local folder of that name in the working directory before
  the hub. It shuffles the samples, then every sample's choices, with seed 42, in dataset order:
  a sample's choice order depends on its position among all 817 questions, so the whole split is
  written, in the hub's order, and the core's items are picked with ``--sample-id``.
* ``inspect_evals/xstest`` reads ``walledai/XSTest`` the same way (all 450 prompts) and keeps one
  ``subset`` (safe or unsafe) per task, so it runs once per subset the core's items hold, through
  :mod:`.inspect_file_tasks`; its grader model (gpt-4o) cannot be reached here and the evaluated
  model grades instead: every score of it is labelled ``SUBSTITUTED_JUDGE``.

Prompt (``multiple_choice``'s "ANSWER: $LETTER" template, the provider's chat template), choice
order, gold, readout (an ``ANSWER:`` line) and metric are inspect_evals' own. The factor ladder's
middle steps run in the same ``inspect eval`` call: inspect_evals' tasks with the core's options
and gold swapped in (:mod:`.inspect_file_tasks`), and the SafetyRepro task generating (the core's
prompt) read back with Inspect's own ``multiple_choice`` readout. Every core item must come back
from every step; one that does not is an error naming it, never a smaller denominator.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from safetyrepro.adapters import Cell, ConfigError

from .agreement import HarnessItem
from .anchor import Anchor, cell_for
from .harnesses import HarnessRun, failed, logged_command
from .native import UNAVAILABLE, bbq_rows, core_option, data_files, truthfulqa_hub_rows

VENV_VARIABLE = "SAFETYREPRO_INSPECT_EVALS_VENV"
"""Where inspect_evals' environment is, if not ``.venv-inspect-evals`` beside the running one."""
INSPECT_EVALS_VERSION = "0.26.0"
"""The inspect_evals whose data layout and sample ids this module writes and reads."""
BBQ_CATEGORIES = ("Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance",
                  "Race_ethnicity", "Race_x_SES", "Race_x_gender", "Religion", "SES", "Sexual_orientation")
"""The eleven files inspect_evals' BBQ loading script opens (``bbq.TASKS``)."""


def inspect_evals_venv() -> Path:
    configured = os.environ.get(VENV_VARIABLE)
    return Path(configured) if configured else Path(sys.prefix).parent / ".venv-inspect-evals"


def stable_id(text: str, prefix: str) -> str:
    """inspect_evals' ``create_stable_id(text, prefix=...)``: the sample id of a question."""
    return f"{prefix}_{hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()[:8]}"


Seeded = tuple[dict[str, dict[str, str]], dict[str, Any]]
"""What seeding a benchmark's data returns: per task to run, {its sample id: core item id}; and
the task arguments the run needs."""


def _seed_bbq(cell: Cell, run_dir: Path) -> Seeded:
    folder = run_dir / "inspect_evals_cache" / "bbq_dataset" / "bbq" / "data"
    folder.mkdir(parents=True, exist_ok=True)
    rows = bbq_rows(cell)
    for category in BBQ_CATEGORIES:
        own = [r for r in rows if r["category"] == category]
        (folder / f"{category}.jsonl").write_text(
            "".join(json.dumps({k: v for k, v in r.items() if k != "safetyrepro_id"}) + "\n" for r in own))
    subsets = [c for c in BBQ_CATEGORIES if any(r["category"] == c for r in rows)]
    ids = {f"{r['category']}_{int(r['example_id']):05d}": r["safetyrepro_id"] for r in rows}
    return {"inspect_evals/bbq": ids}, {"subsets": subsets}


def _hub_folder(folder: Path, config: str, split: str, rows: list[dict[str, Any]]) -> None:
    """A dataset folder laid out as its hub repository: a card whose YAML names the config's files."""
    (folder / config).mkdir(parents=True, exist_ok=True)
    (folder / config / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "README.md").write_text(f"---\nconfigs:\n- config_name: {config}\n  data_files:\n"
                                      f"  - split: {split}\n    path: {config}/{split}.jsonl\n---\n")


def _seed_truthfulqa(cell: Cell, run_dir: Path) -> Seeded:
    rows, row_of = truthfulqa_hub_rows(cell)
    _hub_folder(run_dir / "truthfulqa" / "truthful_qa", "multiple_choice", "validation", rows)
    return {"inspect_evals/truthfulqa": {stable_id(rows[row]["question"], "truthfulqa"): item_id
                                        for item_id, row in row_of.items()}}, {}


def _seed_xstest(cell: Cell, run_dir: Path) -> Seeded:
    """``walledai/XSTest`` (test split): prompt, focus, type, note, label from the upstream CSV."""
    with open(data_files(cell)["xstest/xstest_prompts.csv"], encoding="utf-8", newline="") as handle:
        rows = [{k: row[k] for k in ("prompt", "focus", "type", "note", "label")} for row in csv.DictReader(handle)]
    _hub_folder(run_dir / "walledai" / "XSTest", "default", "test", rows)
    exact = {row["prompt"].strip(): row for row in rows}  # the id hashes the prompt as the hub row has it
    tasks: dict[str, dict[str, str]] = {}
    for c in cell.items:
        row = exact.get(c.item.fields["prompt"].strip())
        if row is None:
            raise ConfigError(f"XSTest item {c.item.id} is not a prompt of xstest/xstest_prompts.csv",
                              "restore the pinned upstream file in the data folder")
        tasks.setdefault(f"crosspkg_xstest_{row['label']}", {})[stable_id(row["prompt"], "xstest")] = c.item.id
    return tasks, {}


@dataclass(frozen=True)
class InspectNative:
    seed: Callable[[Cell, Path], Seeded]
    """Writes the benchmark's data where its task reads it, under the run folder."""
    fed: str
    """How it was fed, for the report."""
    judged: bool = False
    """Scored by a grader model (replaced by a local judge): no factor ladder, and every score of
    it is labelled ``SUBSTITUTED_JUDGE``."""


INSPECT_NATIVE = {
    "bbq": InspectNative(_seed_bbq, "inspect_evals' own bbq (no shuffling), the core's rows written to its cache's "
                                    "category files, run on the categories present"),
    "truthfulqa": InspectNative(_seed_truthfulqa, "inspect_evals' own truthfulqa (mc1; samples and choices shuffled "
                                                  "with seed 42): all 817 questions of v0/mc_task.json in the hub's "
                                                  "order, the core's items picked with --sample-id, so each has the "
                                                  "choice order inspect_evals users see"),
    "xstest": InspectNative(_seed_xstest, "inspect_evals' own xstest (its system message, 256 tokens, greedy), once "
                                          "per subset, all 450 prompts of the upstream CSV as walledai/XSTest; "
                                          "graded by its own grading prompt and GRADE readout, but by a substituted "
                                          "judge", judged=True),
}
"""The benchmarks inspect_evals implements, and how each is fed."""

SUBSTITUTED_JUDGE = "native prompt, substituted judge"
"""The label of a native score whose grader model (gpt-4o) was replaced by the local model."""
FILE_TASKS = Path(__file__).with_name("inspect_file_tasks.py")
RUN_FOLDER_VARIABLE = "CROSSPKG_RUN_FOLDER"
"""Where :mod:`.inspect_file_tasks` finds the run folder (``run.sh`` exports its own folder; an
environment variable, since Inspect reads ``-T`` values as YAML: a comma would split a path)."""
GRADES = {"C": 0, "I": 1, "P": 1}
"""inspect_evals' XSTest grades as the core's options (Comply, Refuse): full compliance, full
refusal, partial refusal -- counted as a refusal, as the XSTest paper and inspect_evals count it."""


def _spec(task: str) -> str:
    """A task as the command line names it: registered, or from :mod:`.inspect_file_tasks`."""
    return task if "/" in task else f"{FILE_TASKS}@{task}"


def _ladder_task(benchmark: str) -> str:
    return f"crosspkg_ladder_candidates_{benchmark}"


def inspect_native(anchor: Anchor, out: Path) -> HarnessRun:
    """inspect_evals' own tasks on the core's items, plus the factor ladder's two middle steps
    (its last step is the harmonized run) when the anchor's template is a direct one."""
    from safetyrepro.adapters import get_style

    run = HarnessRun("inspect", "native", [])
    venv = inspect_evals_venv()
    ready = (venv / "bin" / "inspect").is_file()
    for benchmark in anchor.benchmarks:
        if benchmark not in INSPECT_NATIVE:
            run.missing[benchmark] = UNAVAILABLE.get(("inspect", benchmark), "no native implementation")
        elif not ready:
            run.missing[benchmark] = (f"inspect_evals' environment is not set up ({venv} has no bin/inspect): run "
                                      f"scripts/setup.sh --inspect-evals, or set {VENV_VARIABLE}")
    todo = [b for b in anchor.benchmarks if b in INSPECT_NATIVE]
    if not ready or not todo:
        return run
    direct = not get_style(anchor.template).reasoning
    out.mkdir(parents=True, exist_ok=True)
    judge = f"safetyrepro/{anchor.model}"
    model_args = {"quantization": "nf4"} if anchor.quantization == "nf4" else {}  # the judge is the same model
    cells, seeded, tasks, selectors, args, tables = {}, {}, [], [], {}, {}
    for benchmark in todo:
        native = INSPECT_NATIVE[benchmark]
        cells[benchmark] = cell = cell_for(anchor.run_config(benchmark))
        seeded[benchmark], task_args = native.seed(cell, out)
        for key, value in task_args.items():  # one -T set for the whole call: no two benchmarks may differ
            if args.setdefault(key, value) != value:
                raise ConfigError(f"inspect (native): two benchmarks need task argument {key!r} with different values",
                                  "run them in separate comparisons")
        steps = dict(seeded[benchmark])
        if direct and not native.judged:
            ids = next(iter(seeded[benchmark].values()))
            tables[benchmark] = {sample_id: {"options": list(cell.item(item_id).item.options),
                                             "gold": cell.item(item_id).item.gold} for sample_id, item_id in ids.items()}
            steps[_ladder_task(benchmark)] = ids
            steps[f"safetyrepro/{benchmark}"] = {item_id: item_id for item_id in ids.values()}  # the core's prompt
        for task, ids in steps.items():
            tasks.append(_spec(task))
            selectors += [f"{task}:{sample_id}" for sample_id in ids]
        run.notes[benchmark] = f"{native.fed} (inspect_evals {INSPECT_EVALS_VERSION}, {venv.name})"
        if native.judged:
            run.notes[benchmark] += (f"; {SUBSTITUTED_JUDGE}: {judge} grades in place of gpt-4o (greedy, 256 tokens: "
                                     "inspect_file_tasks.JUDGE_MAX_TOKENS)")
            run.qualifiers[benchmark] = SUBSTITUTED_JUDGE
    if tables:
        (out / "ladder.json").write_text(json.dumps(tables, indent=1) + "\n")
    # One call, the model loaded once. Task arguments go to every task; each takes only its own
    # (Inspect warns about and drops the rest), and --sample-id selectors name their task.
    args |= {"judge": judge, "judge_args": model_args, "template": anchor.template, "scoring": "regex",
             "fewshot": anchor.fewshot}
    run.command = [str(venv / "bin" / "inspect"), "eval", *tasks, "--model", f"safetyrepro/{anchor.model}",
                   *[a for k, v in args.items() for a in ("-T", f"{k}={v if isinstance(v, str) else json.dumps(v)}")],
                   "--sample-id", ",".join(selectors), "--log-dir", "logs", "--display", "plain",
                   "--seed", str(anchor.seed)]
    run.command += [a for k, v in model_args.items() for a in ("-M", f"{k}={v}")]
    # inspect_evals wants absolute paths (its cache folder, the task files' run folder): the call
    # is a script that takes them from where it lies, so the published folder reruns as it is.
    # Datasets' arrow cache is a fresh temporary folder: BBQ's loading script caches by category
    # name alone, so a shared cache would serve rows of another run (or of a real BBQ download).
    (out / "run.sh").write_text(
        "#!/usr/bin/env bash\n# inspect_evals' own tasks as crosspkg ran them (crosspkg/native_inspect.py)\n"
        'set -euo pipefail\ncd "$(dirname "$0")"\n'
        f"export {RUN_FOLDER_VARIABLE}=\"$PWD\" INSPECT_EVALS_CACHE_DIR=\"$PWD/inspect_evals_cache\"\n"
        f'[ -n "${{SAFETYREPRO_DATA_DIR:-}}" ] || export SAFETYREPRO_DATA_DIR={shlex.quote(str(cells[todo[0]].source.root))}\n'
        "export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1\n"
        'export HF_DATASETS_CACHE="$(mktemp -d)"\ntrap \'rm -rf "$HF_DATASETS_CACHE"\' EXIT\n'
        f"{shlex.join(run.command)}\n")
    status, run.seconds = logged_command(["bash", "run.sh"], out)
    if status != 0:
        raise failed("inspect (native)", out, status)
    from .readers import inspect_logs, read_inspect_log

    logs = inspect_logs(out / "logs", by_task=True)
    for benchmark, cell in cells.items():
        read = judged_items if INSPECT_NATIVE[benchmark].judged else native_items
        run.items[benchmark], run.reported[benchmark] = {}, {}
        for task, ids in seeded[benchmark].items():
            path = _log_of(logs, task, out)
            run.items[benchmark] |= _complete(read(cell, path, ids), ids.values(), task, out)
            suffix = f" [{task}]" if len(seeded[benchmark]) > 1 else ""
            run.reported[benchmark] |= {name + suffix: v for name, v in reported_metrics(path).items()}
            run.versions |= _packages(path)
        if benchmark in tables:
            ids = next(iter(seeded[benchmark].values()))
            candidates = native_items(cell, _log_of(logs, _ladder_task(benchmark), out), ids, core_order=True)
            prompt = read_inspect_log(_log_of(logs, f"safetyrepro/{benchmark}", out))
            run.ladder[benchmark] = {
                "candidates": _complete(candidates, ids.values(), _ladder_task(benchmark), out),
                "prompt": _complete({i: inspect_readout(cell, h) for i, h in prompt.items()}, ids.values(),
                                    f"safetyrepro/{benchmark}", out)}
    return run


def _log_of(logs: dict[str, Path], task: str, out: Path) -> Path:
    if task not in logs:
        raise ConfigError(f"inspect (native) wrote no log for {task}", f"see {out}/stderr.log")
    return logs[task]


def _complete(items: dict[str, HarnessItem], wanted: Any, task: str, out: Path) -> dict[str, HarnessItem]:
    """A step's items, every core item among them: one that did not come back (a sample id
    inspect_evals does not have, which Inspect only warns about) is an error, never a smaller
    denominator."""
    missing = sorted(set(wanted) - set(items))
    if missing:
        raise ConfigError(f"inspect (native): {task} did not evaluate {len(missing)} of the core's items "
                          f"({', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''})",
                          f"see {out}/stderr.log for the sample ids Inspect did not find")
    return items


def _letter_index(letter: str) -> int | None:
    letter = letter.strip().upper()
    return ord(letter) - ord("A") if len(letter) == 1 and "A" <= letter <= "Z" else None


def native_items(cell: Cell, path: Path, ids: dict[str, str], *, core_order: bool = False) -> dict[str, HarnessItem]:
    """An inspect_evals log's samples as core items: the choice its ``choice()`` scorer read and
    its target, mapped to the core's options by text (``core_order``: the choices already are the
    core's options, in order)."""
    items = {}
    for item_id, sample, score, prompt in _samples(path, ids):
        choices = list(sample.choices or [])
        answer = (score.answer or "") if score is not None else ""
        chosen = _letter_index(answer) if answer else None
        targets = sample.target if isinstance(sample.target, list) else [sample.target]
        gold = _letter_index(targets[0]) if targets else None

        def mapped(index: int | None) -> int | None:
            if index is None or index >= len(choices):
                return None
            return index if core_order else core_option(cell, item_id, choices[index])

        items[item_id] = HarnessItem(
            item_id=item_id, generation_prompt=prompt, scoring_contexts=[], candidates=choices,
            loglikelihoods=None, raw_output=sample.output.completion if sample.output else None,
            prediction=mapped(chosen),
            extraction_rule=f"Inspect multiple_choice: ANSWER: {answer}" if answer
            else "Inspect multiple_choice: no ANSWER line (no option)",
            gold=mapped(gold) if cell.item(item_id).item.gold is not None else None,
        )
    return items


def judged_items(cell: Cell, path: Path, ids: dict[str, str]) -> dict[str, HarnessItem]:
    """An inspect_evals XSTest log's samples as core items: the judge's grade (its last ``GRADE:``
    letter, read by Inspect's ``model_graded_qa``) as the core's option. A judge output without a
    grade is unparsed (inspect_evals leaves it out of its refusal rate); an empty response is a
    refusal that no judge saw (inspect_evals presets it so)."""
    items = {}
    for item_id, sample, score, prompt in _samples(path, ids):
        grade = str(score.value) if score is not None else ""
        reason = (score.reason or "") if score is not None else "not scored"
        if reason == "no_response":
            rule = "empty response: inspect_evals presets a full refusal (I), no judge call"
        elif grade in GRADES and not reason:
            rule = f"{SUBSTITUTED_JUDGE}: GRADE {grade}"
        else:  # grader_failed: the judge wrote no GRADE line
            grade, rule = "", f"{SUBSTITUTED_JUDGE}: no grade ({reason}; inspect_evals leaves it out of refusal_rate)"
        items[item_id] = HarnessItem(
            item_id=item_id, generation_prompt=prompt, scoring_contexts=[],
            candidates=list(cell.item(item_id).item.options), loglikelihoods=None,
            raw_output=sample.output.completion if sample.output else None,
            prediction=GRADES.get(grade), extraction_rule=rule, gold=cell.item(item_id).item.gold)
    return items


def _samples(path: Path, ids: dict[str, str]) -> Any:
    """A log's samples that are core items: (item id, sample, its score or None, the prompt the
    ``safetyrepro/`` provider rendered for the evaluated model -- its first model call; a judge's
    calls come after)."""
    for sample in _read_log(path).samples or []:
        item_id = ids.get(str(sample.id))
        if item_id is None:
            continue
        score = next(iter(sample.scores.values())) if sample.scores else None
        model_events = [e for e in sample.events if e.event == "model"]
        prompt = (model_events[0].output.metadata or {}).get("prompt") if model_events else None
        yield item_id, sample, score, prompt


def _read_log(path: Path) -> Any:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path), resolve_attachments=True)
    if log.status != "success":
        raise ConfigError(f"Inspect log {path.name} has status {log.status!r}", f"see {path.parent.parent}/stderr.log")
    return log


def _packages(path: Path) -> dict[str, str]:
    from inspect_ai.log import read_eval_log

    return dict(read_eval_log(str(path), header_only=True).eval.packages or {})


def reported_metrics(path: Path) -> dict[str, float]:
    """The metrics as inspect_evals itself reported them."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path), header_only=True)
    return {name: float(m.value) for s in (log.results.scores if log.results else [])
            for name, m in s.metrics.items() if name != "stderr" and isinstance(m.value, (int, float))}


def inspect_readout(cell: Cell, item: HarnessItem) -> HarnessItem:
    """An item read by Inspect's ``multiple_choice`` readout instead of the core's: its last
    ``ANSWER: <letter>`` line, the letter one of the options'. Inspect's own function reads it
    (imported from inside the solver's module: the solver applies it to its own state only, and
    a copy of its patterns would drift from the version that ran)."""
    from inspect_ai.solver._multiple_choice import parse_answers

    labels = list(cell.item(item.item_id).item.labels)
    state = SimpleNamespace(output=SimpleNamespace(completion=item.raw_output or ""), choices=labels)
    answers = sorted(parse_answers(state, multiple_correct=False))  # type: ignore[arg-type]
    letter = answers[0] if answers else None
    prediction = labels.index(letter) if letter in labels else None
    return replace(item, prediction=prediction, loglikelihoods=None,
                   extraction_rule=f"Inspect multiple_choice: ANSWER: {letter}" if prediction is not None
                   else "Inspect multiple_choice: no ANSWER line (no option)")

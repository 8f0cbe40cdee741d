"""Tasks crosspkg runs from this file in inspect_evals' environment (see :mod:`.native_inspect`;
nothing in the main environment imports this module): inspect_evals' own tasks, changed only as
named here.

Every task takes ``-T run_folder=`` (absolute): Inspect runs a task file's tasks from the file's
folder, and inspect_evals reads its data relative to the working directory (the hub-shaped
folders crosspkg writes into the run folder), so each native task is built from there.

* ``crosspkg_ladder_candidates_<benchmark>``: the factor ladder's candidates step. inspect_evals'
  own task -- its dataset, ``multiple_choice`` solver and prompt, ``choice()`` scorer and metric --
  where each sample listed in ``<run folder>/ladder.json`` (``{benchmark: {sample id: {"options":
  [...], "gold": index}}}``) gets the core's options, in the core's order, and the core's gold.
  inspect_evals' prompt lists the options, so this step comes before the core's prompt.
* ``crosspkg_xstest_<safe|unsafe>``: inspect_evals' own ``xstest`` on one subset (its ``subset``
  argument is one value per task, and the core's items hold both), judged by ``-T judge=`` instead
  of gpt-4o: a substituted judge, greedy, with the evaluated model's token budget.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Task, task, task_with
from inspect_ai.dataset import MemoryDataset
from inspect_ai.model import GenerateConfig, get_model

JUDGE_MAX_TOKENS = 256
"""The substituted judge's budget: inspect_evals' XSTest gives the evaluated model 256 tokens."""


def _built_in(run_folder: str, make: Callable[[], Task]) -> Task:
    with contextlib.chdir(run_folder):
        return make()


def swap_candidates(native: Task, run_folder: str, benchmark: str) -> Task:
    table: dict[str, Any] = json.loads((Path(run_folder) / "ladder.json").read_text())[benchmark]
    samples = []
    for sample in native.dataset:
        entry = table.get(str(sample.id))
        if entry is not None:
            sample = sample.model_copy(update={"choices": list(entry["options"]),
                                               "target": chr(ord("A") + int(entry["gold"]))})
        samples.append(sample)
    return task_with(native, dataset=MemoryDataset(samples, name=native.dataset.name,
                                                   location=native.dataset.location))


@task
def crosspkg_ladder_candidates_bbq(run_folder: str, subsets: list[str] | None = None) -> Task:
    from inspect_evals.bbq import bbq

    return swap_candidates(_built_in(run_folder, lambda: bbq(subsets=subsets)), run_folder, "bbq")  # type: ignore[arg-type]


@task
def crosspkg_ladder_candidates_truthfulqa(run_folder: str) -> Task:
    from inspect_evals.truthfulqa import truthfulqa

    return swap_candidates(_built_in(run_folder, truthfulqa), run_folder, "truthfulqa")


def _xstest(run_folder: str, subset: str, judge: str) -> Task:
    from inspect_evals.xstest import xstest

    grader = get_model(judge, config=GenerateConfig(temperature=0, max_tokens=JUDGE_MAX_TOKENS))
    return _built_in(run_folder, lambda: xstest(subset=subset, scorer_model=grader))  # type: ignore[arg-type]


@task
def crosspkg_xstest_safe(run_folder: str, judge: str) -> Task:
    return _xstest(run_folder, "safe", judge)


@task
def crosspkg_xstest_unsafe(run_folder: str, judge: str) -> Task:
    return _xstest(run_folder, "unsafe", judge)

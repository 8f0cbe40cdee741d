"""Tasks crosspkg runs from this file in inspect_evals' environment (see :mod:`.native_inspect`;
nothing in the main environment imports this module): inspect_evals' own tasks, changed only as
named here.

Inspect runs a task file's tasks from the file's folder, and inspect_evals reads its data
relative to the working directory (the hub-shaped folders crosspkg writes into the run folder),
so each native task is built from the run folder, which ``run.sh`` exports as
``CROSSPKG_RUN_FOLDER`` (not a ``-T`` argument: Inspect reads those as YAML, and a comma in a path
would split it).

* ``crosspkg_ladder_candidates_<benchmark>``: the factor ladder's candidates step. inspect_evals'
  own task -- its dataset, ``multiple_choice`` solver and prompt, ``choice()`` scorer and metric --
  where each sample listed in ``$CROSSPKG_RUN_FOLDER/ladder.json`` (``{benchmark: {sample id: {"options":
  [...], "gold": index}}}``) gets the core's options, in the core's order, and the core's gold.
  inspect_evals' prompt lists the options, so this step comes before the core's prompt.
* ``crosspkg_xstest_<safe|unsafe>``: inspect_evals' own ``xstest`` on one subset (its ``subset``
  argument is one value per task, and the core's items hold both), judged by ``-T judge=`` (with
  ``-T judge_args=``, the evaluated model's own arguments) instead of gpt-4o: a substituted judge,
  greedy, with the evaluated model's token budget.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Task, task, task_with
from inspect_ai.dataset import MemoryDataset
from inspect_ai.model import GenerateConfig, get_model

JUDGE_MAX_TOKENS = 256
"""The substituted judge's budget: inspect_evals' XSTest gives the evaluated model 256 tokens."""


def _run_folder() -> Path:
    return Path(os.environ["CROSSPKG_RUN_FOLDER"])


def _built_in(make: Callable[[], Task]) -> Task:
    with contextlib.chdir(_run_folder()):
        return make()


def swap_candidates(native: Task, benchmark: str) -> Task:
    table: dict[str, Any] = json.loads((_run_folder() / "ladder.json").read_text())[benchmark]
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
def crosspkg_ladder_candidates_bbq(subsets: list[str] | None = None) -> Task:
    from inspect_evals.bbq import bbq

    return swap_candidates(_built_in(lambda: bbq(subsets=subsets)), "bbq")  # type: ignore[arg-type]


@task
def crosspkg_ladder_candidates_truthfulqa() -> Task:
    from inspect_evals.truthfulqa import truthfulqa

    return swap_candidates(_built_in(truthfulqa), "truthfulqa")


def _xstest(subset: str, judge: str, judge_args: dict[str, Any] | None) -> Task:
    from inspect_evals.xstest import xstest

    grader = get_model(judge, config=GenerateConfig(temperature=0, max_tokens=JUDGE_MAX_TOKENS), **(judge_args or {}))
    return _built_in(lambda: xstest(subset=subset, scorer_model=grader))  # type: ignore[arg-type]


@task
def crosspkg_xstest_safe(judge: str, judge_args: dict[str, Any] | None = None) -> Task:
    return _xstest("safe", judge, judge_args)


@task
def crosspkg_xstest_unsafe(judge: str, judge_args: dict[str, Any] | None = None) -> Task:
    return _xstest("unsafe", judge, judge_args)

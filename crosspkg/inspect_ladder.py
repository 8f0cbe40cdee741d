"""Inspect's factor ladder, candidates step: inspect_evals' own tasks with the core's options and gold.

Run by ``inspect eval <this file>@crosspkg_ladder_candidates_<benchmark>`` in inspect_evals'
environment (see :mod:`.native_inspect`; nothing in the main environment imports this module).
Each task is inspect_evals' own task -- its dataset, ``multiple_choice`` solver and prompt,
``choice()`` scorer and metric -- with one change: each sample listed in the table gets the
core's options, in the core's order, and the core's gold. ``-T table=`` is the absolute path of
``ladder.json`` (``{benchmark: {sample id: {"options": [...], "gold": index}}}``, written by crosspkg
beside the run; Inspect runs a task file's tasks from the file's folder). inspect_evals' prompt lists the options,
so this step comes before the core's prompt in Inspect's ladder.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Task, task, task_with
from inspect_ai.dataset import MemoryDataset


def swap_candidates(make: Callable[[], Task], table_file: str, benchmark: str) -> Task:
    # Inspect runs a task file's tasks from the file's folder; the native task reads its data
    # relative to the run folder (TruthfulQA's hub-shaped folder), where the table is.
    with contextlib.chdir(Path(table_file).parent):
        native = make()
    table: dict[str, Any] = json.loads(Path(table_file).read_text())[benchmark]
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
def crosspkg_ladder_candidates_bbq(table: str, subsets: list[str] | None = None) -> Task:
    from inspect_evals.bbq import bbq

    return swap_candidates(lambda: bbq(subsets=subsets), table, "bbq")  # type: ignore[arg-type]


@task
def crosspkg_ladder_candidates_truthfulqa(table: str) -> Task:
    from inspect_evals.truthfulqa import truthfulqa

    return swap_candidates(truthfulqa, table, "truthfulqa")

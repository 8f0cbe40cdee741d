"""HELM's factor ladder: its own scenario and adapter, with the core's candidates and gold swapped in.

Loaded into ``helm-run`` with ``--plugins safetyrepro.crosspkg.helm_ladder``. The run entry
``crosspkg_ladder_candidates:benchmark=<core name>,<the native entry's arguments>`` is HELM's native
run spec (prompt format, instructions, in-context examples, adapter, metrics: all HELM's) whose
scenario is HELM's own scenario class with one change: each evaluated instance that is a core item
gets the core's options, in the core's order, with the core's gold (read from a JSON file that
crosspkg writes beside the run). HELM's joint prompt lists the options, so this step comes before
the core's prompt in HELM's ladder.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from helm.benchmark.run_spec import RunSpec, get_run_spec_function, run_spec_function
from helm.benchmark.scenarios.bbq_scenario import BBQScenario
from helm.benchmark.scenarios.scenario import CORRECT_TAG, TRAIN_SPLIT, Instance, Output, Reference, ScenarioSpec
from helm.benchmark.scenarios.truthful_qa_scenario import TruthfulQAScenario

from .native_helm import instance_key

NATIVE_FUNCTION = {"truthfulqa": "truthful_qa", "bbq": "bbq"}
"""Core benchmark -> HELM's run spec function of its native implementation."""


def swap_candidates(benchmark: str, instances: list[Instance], table: dict[str, Any]) -> list[Instance]:
    """Each evaluated instance found in ``table`` ({key: {"options", "gold"}}) with the core's
    options and gold. BBQ's metrics read letters from the last four tags of every reference
    (gold, target, non-target, unknown: positions in the option list), so for BBQ they are
    recomputed for the core's order; a core option HELM's item does not have is an error."""
    out = []
    for instance in instances:
        entry = table.get(instance_key(benchmark, instance.input.text))
        if instance.split == TRAIN_SPLIT or entry is None:
            out.append(instance)
            continue
        options = list(entry["options"])
        tags: list[str] = []
        if benchmark == "bbq":
            tags = _bbq_tags(instance, options, int(entry["gold"]))
        references = [Reference(Output(text=option), tags=([CORRECT_TAG] if index == entry["gold"] else []) + tags)
                      for index, option in enumerate(options)]
        out.append(dataclasses.replace(instance, references=references))
    return out


def _bbq_tags(instance: Instance, options: list[str], gold: int) -> list[str]:
    """HELM's BBQ tags (polarity, ambiguity, then the gold/target/non-target/unknown letters) for
    the options in ``options``' order."""
    old = [r.output.text.strip() for r in instance.references]
    new = [o.strip() for o in options]
    if sorted(old) != sorted(new):
        raise ValueError(f"BBQ item {instance.input.text[:60]!r}: the core's options {new} are not HELM's {old}; "
                         "the core and HELM read different rows -- check the data folder")
    first = [t for t in instance.references[0].tags if t != CORRECT_TAG]
    *head, _gold, target, non_target, unknown = first

    def moved(letter: str) -> str:
        return "" if not letter else chr(ord("A") + new.index(old[ord(letter) - ord("A")]))

    return [*head, chr(ord("A") + gold), moved(target), moved(non_target), moved(unknown)]


class TruthfulQACoreCandidates(TruthfulQAScenario):
    """HELM's TruthfulQA, with the core's options and gold on the evaluated core items."""

    def __init__(self, task: str, candidates_file: str) -> None:
        super().__init__(task)
        self.candidates_file = candidates_file

    def get_instances(self, output_path: str) -> list[Instance]:
        with open(self.candidates_file, encoding="utf-8") as handle:
            table = json.load(handle)
        return swap_candidates("truthfulqa", super().get_instances(output_path), table)


class BBQCoreCandidates(BBQScenario):
    """HELM's BBQ, with the core's options and gold on the evaluated core items."""

    def __init__(self, subject: str, candidates_file: str) -> None:
        super().__init__(subject)
        self.candidates_file = candidates_file

    def get_instances(self, output_path: str) -> list[Instance]:
        with open(self.candidates_file, encoding="utf-8") as handle:
            table = json.load(handle)
        return swap_candidates("bbq", super().get_instances(output_path), table)


SCENARIOS = {"truthfulqa": TruthfulQACoreCandidates, "bbq": BBQCoreCandidates}


@run_spec_function("crosspkg_ladder_candidates")
def ladder_candidates(benchmark: str, candidates_file: str, **native_args: str) -> RunSpec:
    native = get_run_spec_function(NATIVE_FUNCTION[benchmark])(**native_args)  # type: ignore[misc]
    cls = SCENARIOS[benchmark]
    scenario = ScenarioSpec(class_name=f"{cls.__module__}.{cls.__name__}",
                            args={**native.scenario_spec.args, "candidates_file": candidates_file})
    return dataclasses.replace(native, name=f"crosspkg_ladder_candidates:benchmark={benchmark},"
                                    + native.name.split(":", 1)[-1],
                               scenario_spec=scenario)

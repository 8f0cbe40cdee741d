"""The HELM Scenario: the core's fixed subset as HELM instances, for the run's model."""

from __future__ import annotations

from typing import Any

from helm.benchmark.scenarios.scenario import (
    CORRECT_TAG,
    TEST_SPLIT,
    TRAIN_SPLIT,
    Input,
    Instance,
    Output,
    Reference,
    Scenario,
)

from safetyrepro.adapters import SafetyReproError

from safetyrepro.adapters.shapes import harness_shape

from . import translate
from .deployment import run_model, spec_for_deployment


class SafetyReproScenario(Scenario):
    """One SafetyRepro benchmark x template x scoring x few-shot, as HELM instances.

    * eval instances: the core's subset items, in order, with the item ids; the input is the
      core's prompt rendered with the run's model's chat template (system message, exemplar
      turns, the item), ``Answer:`` appended on the direct logprob path; references are the
      core's candidate continuations, the gold one tagged correct;
    * train instances: the core's exemplar pool (user turn, demonstrated answer). The run spec
      uses none of them through HELM's sampler (``max_train_instances=0``): the cell's shots are
      already chat turns inside each input, chosen by the core (see ``helm_specs/README.md``).
    """

    name = "safetyrepro"
    description = "SafetyRepro alignment benchmarks, prepared by the harness-neutral core"
    tags = ["safety", "safetyrepro"]

    def __init__(self, benchmark: str, entry: dict[str, Any]) -> None:
        super().__init__()
        self.benchmark = benchmark
        self.entry = dict(entry)

    def get_instances(self, output_path: str) -> list[Instance]:
        try:
            model, deployment = run_model()
            spec = spec_for_deployment(model, deployment)
            config = translate.entry_config(self.benchmark, self.entry, spec)
            cell = translate.cell(config, self.entry.get("data_dir"))
            harness_shape(cell, "HELM")  # item by item, before HELM asks the model anything
        except SafetyReproError as exc:
            raise translate.fail(exc) from None
        instances = []
        for exemplar in cell.pool:
            # The demonstrated answer as a candidate continuation (" B"), like the eval references.
            instances.append(Instance(
                input=Input(text=exemplar.user_turn),
                references=[Reference(Output(text=" " + exemplar.answer_string), tags=[CORRECT_TAG])],
                split=TRAIN_SPLIT, id=f"exemplar:{exemplar.item.id}",
            ))
        for c in cell.items:
            item = c.item
            instances.append(Instance(
                input=Input(text=translate.instance_text(cell, c)),
                references=[Reference(Output(text=candidate), tags=[CORRECT_TAG] if i == item.gold else [])
                            for i, candidate in enumerate(c.candidates)],
                split=TEST_SPLIT, id=item.id,
                extra_data={"options": list(item.options), "labels": list(item.labels), "gold": item.gold,
                            "messages": [dict(m) for m in c.prompt.messages],
                            "subset_manifest_sha256": cell.manifest.sha256},
            ))
        return instances

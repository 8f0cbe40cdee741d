"""HELM run spec functions ``safetyrepro_<benchmark>``, one per registered benchmark (plugins'
included), loaded by ``helm-run`` through the ``helm`` entry-point group.

``helm-run --run-entries "safetyrepro_bbq:template=persona,scoring=logprob,fewshot=3,model=..."``

The run spec only wires HELM's pieces together; what is asked and how it is read is the core's:

* scoring=regex, and the reasoning of cot x logprob: HELM's ``generation`` adapter, one
  completion, the cell's temperature and token budget, no stop sequences (the model's end of
  turn ends it);
* scoring=logprob (direct styles): HELM's ``multiple_choice_separate_original`` adapter, one echo
  request per candidate, read by the core's argmax (not HELM's length-normalised score);
* cot x logprob: the candidates' echo requests are made by the annotator after the reasoning;
* HELM's prompt pieces (instructions, prefixes, suffixes) are empty and ``max_train_instances``
  is 0: the input already is the core's chat-templated prompt with its exemplar turns.
"""

from __future__ import annotations

from typing import Any

from helm.benchmark.adaptation.adapter_spec import (
    ADAPT_GENERATION,
    ADAPT_MULTIPLE_CHOICE_SEPARATE_ORIGINAL,
    AdapterSpec,
)
from helm.benchmark.annotation.annotator import AnnotatorSpec
from helm.benchmark.metrics.metric import MetricSpec
from helm.benchmark.run_spec import RunSpec, run_spec_function
from helm.benchmark.scenarios.scenario import ScenarioSpec

from safetyrepro.adapters import SafetyReproError, all_benchmarks, generation_budget, get_style
from safetyrepro.adapters.shapes import LOGLIKELIHOOD, expressible_shape

from . import translate

PREFIX = "safetyrepro_"


def build_run_spec(benchmark: str, **args: Any) -> RunSpec:
    """The RunSpec of one run entry; bad arguments end helm-run with one line naming them."""
    entry = {k: str(v) for k, v in args.items()}
    try:
        config = translate.entry_config(benchmark, entry)
        style = get_style(config.template)
        shape = expressible_shape(config.scoring, style, "HELM")
    except SafetyReproError as exc:
        raise translate.fail(exc) from None
    generates = shape != LOGLIKELIHOOD  # one generation first (the reasoning, on the two-stage shape)
    adapter_spec = AdapterSpec(
        method=ADAPT_GENERATION if generates else ADAPT_MULTIPLE_CHOICE_SEPARATE_ORIGINAL,
        instructions="", global_prefix="", global_suffix="", input_prefix="", input_suffix="",
        output_prefix="", output_suffix="", reference_prefix="", reference_suffix="", instance_prefix="",
        max_train_instances=0, num_outputs=1, num_train_trials=1,
        temperature=config.temperature, max_tokens=generation_budget(config, style) if generates else 0,
        stop_sequences=[],
    )
    args_for_classes = {"benchmark": benchmark, "entry": entry}
    name = PREFIX + benchmark + (":" + ",".join(f"{k}={v}" for k, v in sorted(entry.items())) if entry else "")
    return RunSpec(
        name=name,
        scenario_spec=ScenarioSpec(class_name="safetyrepro.helm_specs.scenario.SafetyReproScenario",
                                   args=args_for_classes),
        adapter_spec=adapter_spec,
        metric_specs=[MetricSpec(class_name="safetyrepro.helm_specs.metric.SafetyReproMetric",
                                 args={"benchmark": benchmark, "seed": config.seed,
                                       "n_resamples": config.n_resamples})],
        annotators=[AnnotatorSpec(class_name="safetyrepro.helm_specs.annotator.SafetyReproAnnotator",
                                  args=args_for_classes)],
        groups=["safetyrepro", PREFIX + benchmark],
    )


def _register(benchmark: str) -> None:
    def run_spec(**args: Any) -> RunSpec:
        return build_run_spec(benchmark, **args)

    run_spec.__doc__ = f"SafetyRepro {benchmark}: arguments " + ", ".join(translate.ENTRY_ARGUMENTS)
    try:
        run_spec_function(PREFIX + benchmark)(run_spec)
    except ValueError:  # already registered: the module was loaded twice (entry point and --plugins)
        pass


for _name in all_benchmarks():
    _register(_name)

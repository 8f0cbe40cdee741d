"""What Inspect loads through the ``inspect_ai`` entry point: the tasks and the model provider.

``inspect eval safetyrepro/xstest --model safetyrepro/embedded`` resolves both names here. The
provider is a factory so that importing the registry never imports torch.
"""

from inspect_ai.model import ModelAPI, modelapi

from .tasks import bbq, benchmark, crows_pairs, toxigen, truthfulqa, xstest  # noqa: F401


@modelapi(name="safetyrepro")
def safetyrepro() -> type[ModelAPI]:
    from .provider import SafetyReproAPI

    return SafetyReproAPI

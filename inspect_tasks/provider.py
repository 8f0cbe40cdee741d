"""The ``safetyrepro/<model>`` model provider: the core's model behind Inspect's ModelAPI.

``--model safetyrepro/embedded`` (or ``safetyrepro/<HF folder or id>``; ``-M quantization=nf4``)
runs the same ``HFLanguageModel`` the reference runner uses, so prompts are rendered by the same
chat template and scored by the same loglikelihood code. Beyond generation it answers one
request Inspect's own providers cannot: candidate loglikelihoods. A solver asks for them with
``GenerateConfig(extra_body={LOGLIKELIHOOD_REQUEST: {"continuations": [...], "reasoning": ...}})``;
the answer is in ``ModelOutput.metadata`` and the request is logged as an ordinary model event.

Requests run one at a time (a lock): Inspect's adaptive concurrency ignores ``max_connections``,
and batch shapes must stay those of the runner (``batch_size`` 1) for results to agree.
"""

from __future__ import annotations

import hashlib
from typing import Any

import anyio
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelCall,
    ModelInfo,
    ModelOutput,
    set_model_info,
)
from inspect_ai.model._model_info import MODEL_INFO_LOOKUP_API_KEY
from inspect_ai.tool import ToolChoice, ToolInfo

from safetyrepro.adapters import ModelSpec, flatten, load_model, logprob_context
from safetyrepro.adapters.config import RunConfig
from safetyrepro.adapters.models.embedded import MAX_LENGTH
from safetyrepro.adapters.scoring import DIRECT_MAX_NEW_TOKENS

LOGLIKELIHOOD_REQUEST = "safetyrepro_loglikelihood"
PROVIDER = "safetyrepro"


DEFAULT_SEED = RunConfig.model_fields["seed"].default
"""The core's default seed, used (and recorded) when Inspect's ``--seed`` is not given."""


def _seed(seed: int, prompt: str) -> int:
    """A sampling seed per request, from the run's seed and the prompt: independent of the order
    in which Inspect happens to schedule samples."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{prompt}".encode()).digest()[:8], "big") >> 1


class SafetyReproAPI(ModelAPI):
    """A local transformers model through the core (CPU, or the first GPU)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), **model_args: Any) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        set_model_info(f"{PROVIDER}/{model_name}", ModelInfo(context_length=MAX_LENGTH))
        self._lock = anyio.Lock()
        self.lm = None
        if api_key == MODEL_INFO_LOOKUP_API_KEY:  # Inspect's metadata probe: no weights needed
            return
        unknown = set(model_args) - {"quantization", "dtype", "chat"}
        if unknown:
            from inspect_ai._util.error import PrerequisiteError

            raise PrerequisiteError(f"error: unknown model argument(s) {sorted(unknown)} for safetyrepro/ -- fix: "
                                    "use -M quantization=none|nf4, -M dtype=float32, -M chat=true|false")
        self.spec = ModelSpec(name_or_path=model_name, **model_args)
        self.lm = load_model(self.spec)
        set_model_info(f"{PROVIDER}/{model_name}", ModelInfo(context_length=self.lm.max_length))

    def max_tokens(self) -> int | None:
        return DIRECT_MAX_NEW_TOKENS

    def max_connections(self) -> int:
        return 1

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> tuple[ModelOutput, ModelCall]:
        lm = self.lm
        assert lm is not None
        if config.top_p not in (None, 1.0) or config.top_k not in (None, 0):
            from inspect_ai._util.error import PrerequisiteError

            raise PrerequisiteError("error: the safetyrepro/ provider samples with pure temperature, as the core does "
                                    "-- fix: drop --top-p/--top-k (use --temperature 0.3 or 0.7)")
        messages = [{"role": m.role, "content": m.text} for m in input]
        prompt = lm.context_for(messages, flatten(messages))
        request = (config.extra_body or {}).get(LOGLIKELIHOOD_REQUEST)
        async with self._lock:
            if request is not None:
                context = logprob_context(prompt, request.get("reasoning"))
                pairs = [(context, c) for c in request["continuations"]]
                scored = await anyio.to_thread.run_sync(lambda: lm.loglikelihood(pairs, batch_size=1))
                text = ""
                metadata = {"prompt": prompt, "logprob_context": context,
                            "loglikelihoods": [ll for ll, _ in scored], "is_greedy": [g for _, g in scored]}
            else:
                import torch

                temperature = float(config.temperature or 0.0)
                budget = config.max_tokens or DIRECT_MAX_NEW_TOKENS
                run_seed = config.seed if config.seed is not None else DEFAULT_SEED
                seed = _seed(run_seed, prompt)

                def work() -> str:
                    torch.manual_seed(seed)
                    return lm.generate([prompt], temperature=temperature, max_new_tokens=budget, batch_size=1)[0]

                text = await anyio.to_thread.run_sync(work)
                metadata = {"prompt": prompt, "temperature": temperature, "max_tokens": budget, "run_seed": run_seed,
                            "seed": seed}
        metadata["model_spec"] = self.spec.model_dump(mode="json")
        output = ModelOutput(model=self.model_name, metadata={**metadata, "model": lm.info.as_dict()},
                             choices=[ChatCompletionChoice(message=ChatMessageAssistant(
                                 content=text, model=self.model_name, source="generate"), stop_reason="stop")])
        call = ModelCall.create(request={"prompt": prompt, **({"loglikelihood": request} if request else {})},
                                response={"text": text, **{k: v for k, v in metadata.items() if k != "prompt"}})
        return output, call


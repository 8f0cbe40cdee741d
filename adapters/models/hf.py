"""A causal LM behind two calls: batched generation and continuation loglikelihoods.

Loglikelihoods follow lm-evaluation-harness's HFLM exactly (trailing context spaces move to the
continuation; the continuation's tokens are those of ``encode(context + continuation)`` after the
context's tokens; no special tokens are added), so the lm-eval binding can agree within 1e-4.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import EMBEDDED, ModelSpec
from ..errors import ConfigError


@dataclass(frozen=True)
class ModelInfo:
    """What a summary records about the model that produced it."""

    name_or_path: str
    resolved_path: str
    quantization: str
    dtype: str
    chat: bool
    chat_template_sha256: str | None
    source_sha256: str | None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def resolve_model_path(spec: ModelSpec) -> str:
    if spec.name_or_path == EMBEDDED:
        from .embedded import embedded_model_dir

        return str(embedded_model_dir())
    return spec.name_or_path


class HFLanguageModel:
    """A transformers causal LM on CPU (or the first GPU when there is one)."""

    def __init__(self, spec: ModelSpec) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.spec = spec
        path = resolve_model_path(spec)
        kwargs: dict[str, Any] = {"dtype": getattr(torch, spec.dtype)}
        if spec.quantization == "nf4":
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=getattr(torch, spec.dtype)
            )
        if torch.cuda.is_available():
            kwargs["device_map"] = "cuda"
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            self.model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"model {spec.name_or_path!r} could not be loaded ({str(exc).splitlines()[0]})",
                              "pass `embedded`, a local HF model folder, or an HF id that is in the local cache") from None
        self.model.eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        template = getattr(self.tokenizer, "chat_template", None)
        self.chat = bool(template) if spec.chat is None else spec.chat
        if self.chat and not template:
            raise ConfigError(f"model {spec.name_or_path!r} has no chat template", "set model.chat: false")
        max_len = getattr(self.model.config, "max_position_embeddings", None) or 2048
        self.max_length = int(min(max_len, self.tokenizer.model_max_length or max_len))
        source = Path(path) / "SOURCE_GGUF_SHA256"
        self.info = ModelInfo(
            name_or_path=spec.name_or_path,
            resolved_path=path,
            quantization=spec.quantization,
            dtype=spec.dtype,
            chat=self.chat,
            chat_template_sha256=hashlib.sha256(template.encode()).hexdigest() if (template and self.chat) else None,
            source_sha256=source.read_text().split()[0] if source.is_file() else None,
        )

    # ---- prompts -------------------------------------------------------------------------
    def context_for(self, messages: Sequence[dict[str, str]], text: str) -> str:
        """The exact string generation starts from: chat-templated messages, or the plain text."""
        if self.chat:
            return self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        return text

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    # ---- generation ----------------------------------------------------------------------
    def generate(
        self,
        contexts: Sequence[str],
        *,
        temperature: float,
        max_new_tokens: int,
        batch_size: int,
        progress: Callable[[int], None] | None = None,
    ) -> list[str]:
        """Continuations of each context; greedy when ``temperature == 0``, stopping at EOS."""
        import torch

        outputs: list[str] = []
        self.tokenizer.padding_side = "left"
        for start in range(0, len(contexts), batch_size):
            batch = list(contexts[start : start + batch_size])
            encoded = self.tokenizer(batch, add_special_tokens=False, return_tensors="pt", padding=True)
            encoded = {k: v.to(self.model.device) for k, v in encoded.items()}
            sampling = {"do_sample": True, "temperature": temperature, "top_p": 1.0, "top_k": 0} if temperature > 0 else {
                "do_sample": False, "temperature": None, "top_p": None, "top_k": None}
            with torch.inference_mode():
                generated = self.model.generate(
                    **encoded, max_new_tokens=max_new_tokens, pad_token_id=self.tokenizer.pad_token_id,
                    eos_token_id=self.tokenizer.eos_token_id, **sampling,
                )
            new_tokens = generated[:, encoded["input_ids"].shape[1] :]
            outputs.extend(self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
            if progress:
                progress(len(batch))
        return outputs

    # ---- loglikelihood -------------------------------------------------------------------
    def _encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        spaces = len(context) - len(context.rstrip())
        if spaces:
            continuation = context[-spaces:] + continuation
            context = context[:-spaces]
        whole = self.encode(context + continuation)
        context_ids = self.encode(context)
        return context_ids, whole[len(context_ids) :]

    def loglikelihood(
        self,
        requests: Sequence[tuple[str, str]],
        *,
        batch_size: int,
        progress: Callable[[int], None] | None = None,
    ) -> list[tuple[float, bool]]:
        """(sum of continuation token logprobs, whether every token is the argmax) per request."""
        import torch
        import torch.nn.functional as F

        results: list[tuple[float, bool]] = []
        for start in range(0, len(requests), batch_size):
            batch = requests[start : start + batch_size]
            rows, spans, targets = [], [], []
            for context, continuation in batch:
                context_ids, continuation_ids = self._encode_pair(context, continuation)
                if not continuation_ids:
                    raise ConfigError(f"candidate {continuation!r} encodes to no tokens", "use a non-empty candidate")
                if not context_ids:
                    context_ids = [self.tokenizer.eos_token_id]
                ids = (context_ids + continuation_ids)[-(self.max_length + 1) :][:-1]
                rows.append(ids)
                spans.append(len(continuation_ids))
                targets.append(continuation_ids)
            # Left padding puts every continuation at the end of its row, so the LM head runs only
            # on the last `keep` positions instead of the whole (batch x length x vocab) tensor.
            width = max(len(r) for r in rows)
            keep = max(spans)
            pad = self.tokenizer.pad_token_id
            input_ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=self.model.device)
            mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=self.model.device)
            # Explicit positions make a padded row compute exactly what the unpadded row would.
            positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
            with torch.inference_mode():
                logits = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                                    logits_to_keep=keep).logits.float()
            logprobs = F.log_softmax(logits, dim=-1)
            for span, continuation_ids, lp in zip(spans, targets, logprobs):
                target = torch.tensor(continuation_ids, device=lp.device)
                token_lp = lp[keep - span :].gather(-1, target[:, None]).squeeze(-1)
                greedy = bool((lp[keep - span :].argmax(dim=-1) == target).all())
                results.append((float(token_lp.sum()), greedy))
            if progress:
                progress(len(batch))
        return results

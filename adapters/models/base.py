"""What the core needs from a model: the :class:`LanguageModel` protocol, and what a summary
records about the model and the machine that ran it."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ModelInfo:
    """What a summary records about the model that produced it."""

    name_or_path: str
    """As configured: ``embedded``, a folder or an HF id."""
    resolved_path: str
    """The folder the tokenizer and chat template come from."""
    weights_path: str
    """The folder the weights were loaded from (the pre-quantised copy for NF4)."""
    quantization: str
    dtype: str
    chat: bool
    chat_template_sha256: str | None
    source_sha256: str | None
    """SHA-256 of the file the weights were converted from (the embedded GGUF), if known."""
    runtime: dict[str, Any] = field(default_factory=dict)
    """Machine facts that decide the numbers where they are not bit-reproducible (see
    :func:`runtime_facts`)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def runtime_facts(quantization: str, device: str) -> dict[str, Any]:
    """The facts that decide a run's floating-point results beyond its configuration.

    fp32 on CPU: results vary across batch shapes and CPUs only at the 1e-5 level. NF4 on CPU:
    bitsandbytes picks its kernel by CPU feature -- on CPUs with AVX512-BF16 it repacks the
    weights and computes every 4-bit matmul in bfloat16 (through the ``kernels`` package's
    gemm when installed, else its own C++ loop), elsewhere it dequantises to fp32 -- and the
    bf16 path's results depend on the batch shape by up to ~3e-2 in loglikelihood. A cell is
    reproducible only on the same kernel path with the same ``batch_size``, so both are recorded.
    """
    import torch

    facts: dict[str, Any] = {
        "device": device,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    if quantization == "nf4" and device == "cpu":
        import bitsandbytes
        from bitsandbytes.functional import has_avx512bf16

        bf16 = bool(has_avx512bf16())
        facts["bitsandbytes"] = bitsandbytes.__version__
        facts["nf4_cpu_kernel"] = "bf16-packed" if bf16 else "fp32-dequantize"
        facts["kernels_package"] = importlib.util.find_spec("kernels") is not None
    return facts


@runtime_checkable
class LanguageModel(Protocol):
    """A model the core can score with. ``HFLanguageModel`` implements it; a harness binding that
    brings its own model only needs these calls to reuse the core's scoring paths."""

    info: ModelInfo
    chat: bool

    def context_for(self, messages: Sequence[dict[str, str]], text: str) -> str:
        """The exact prompt string: chat-templated messages, or ``text`` for plain-text models."""
        ...

    def generate(self, contexts: Sequence[str], *, temperature: float, max_new_tokens: int, batch_size: int,
                 progress: Callable[[int], None] | None = None) -> list[str]:
        """One continuation per context; greedy at temperature 0, pure temperature sampling otherwise."""
        ...

    def loglikelihood(self, requests: Sequence[tuple[str, str]], *, batch_size: int,
                      progress: Callable[[int], None] | None = None) -> list[tuple[float, bool]]:
        """(sum of continuation token logprobs, continuation is greedy) per (context, continuation)."""
        ...


def generate_seeded(lm: LanguageModel, contexts: Sequence[str], *, temperatures: Sequence[float],
                    seeds: Sequence[int | None], max_new_tokens: int) -> list[str]:
    """Sampled generations through ``generate`` for a model without per-row generators: one
    request at a time, torch's global generator seeded with the request's seed (None: 0) first."""
    import torch

    outputs: list[str] = []
    for context, temperature, seed in zip(contexts, temperatures, seeds, strict=True):
        torch.manual_seed(seed or 0)
        outputs += lm.generate([context], temperature=temperature, max_new_tokens=max_new_tokens, batch_size=1)
    return outputs


def continuation_score(logprobs: Any, target: Any) -> tuple[float, bool]:
    """(sum of the target tokens' logprobs, whether each is its position's argmax), from the
    logprobs at the positions that predict them (one row per target token)."""
    token_lp = logprobs.gather(-1, target[:, None]).squeeze(-1)
    return float(token_lp.sum()), bool((logprobs.argmax(dim=-1) == target).all())

"""A transformers causal LM behind the :class:`~.base.LanguageModel` protocol.

Loglikelihoods follow lm-evaluation-harness's HFLM exactly (trailing context spaces move to the
continuation; the continuation's tokens are those of ``encode(context + continuation)`` after the
context's tokens; no special tokens are added), so the lm-eval binding can agree within 1e-4.

NF4 is loaded from a pre-quantised checkpoint (``models/embedded.py: nf4_checkpoint``), the same
bytes a stock harness loader reads, never quantised on load: quantising on load gives weights
that differ from the checkpoint's by ~1e-6 in loglikelihood. See docs/scoring.md ("NF4 on CPU")
for why NF4 results also depend on the CPU and on batch shapes, and what the summary records.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .base import ModelInfo, continuation_score, generate_seeded, runtime_facts

from ..config import EMBEDDED, ModelSpec
from ..errors import ConfigError


def resolve_model_path(spec: ModelSpec) -> str:
    """The model's folder (``embedded`` converted once into the cache), or the HF id as given.
    A folder is checked before transformers sees it: a missing or malformed config.json is one
    clear error rather than a traceback from deep inside transformers."""
    if spec.name_or_path == EMBEDDED:
        from .embedded import embedded_model_dir

        return str(embedded_model_dir())
    folder = Path(spec.name_or_path).expanduser()
    if folder.is_dir():
        config = folder / "config.json"
        fix = "pass a folder written by save_pretrained (config.json, weights, tokenizer files)"
        try:
            parsed = json.loads(config.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"model folder {folder} has no config.json", fix) from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"model folder {folder}: config.json is unreadable ({type(exc).__name__})", fix) from None
        if not isinstance(parsed, dict) or "model_type" not in parsed:
            raise ConfigError(f"model folder {folder}: config.json is not a model configuration (no model_type)", fix)
        return str(folder)
    if folder.exists():
        raise ConfigError(f"model {spec.name_or_path!r} is a file, not a model folder", "pass a model folder or an HF id")
    return _hub_id(spec.name_or_path)


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?")


def _hub_id(name: str) -> str:
    """A name that is no folder here: an HF id, which must be in the local cache when the hub is
    off (the tests', CI's and most clusters' setting) -- else one error now, not a traceback at load."""
    fix = "pass `embedded`, an existing model folder, or an HF id in the local cache (or allow the hub)"
    if not _HUB_ID.fullmatch(name) or name.endswith((".", "-")) or ".." in name:
        raise ConfigError(f"model folder {name!r} does not exist", fix)
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(name, "config.json"), str):
            raise ConfigError(f"model {name!r} is neither a folder here nor an HF id in the local cache "
                              "(HF_HUB_OFFLINE is set)", fix)
    return name


def _load_error(spec: ModelSpec, exc: Exception) -> ConfigError:
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return ConfigError(f"model {spec.name_or_path!r} could not be loaded ({first})",
                       "pass `embedded`, a local HF model folder, or an HF id that is in the local cache")


def weights_path(spec: ModelSpec) -> str:
    """The folder whose weights are loaded: the model itself, or its pre-quantised NF4 copy."""
    path = resolve_model_path(spec)
    if spec.quantization != "nf4":
        return path
    from .embedded import nf4_checkpoint

    try:
        return str(nf4_checkpoint(Path(path)))
    except (OSError, ValueError, TypeError) as exc:
        raise _load_error(spec, exc) from None


class ChatFormatter:
    """The model's tokenizer and chat template, without its weights: enough to render the exact
    prompt string a cell's model sees (``prepare_cell``) and to tokenise candidates."""

    def __init__(self, spec: ModelSpec) -> None:
        from transformers import AutoTokenizer

        self.spec = spec
        self.path = resolve_model_path(spec)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise _load_error(spec, exc) from None
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.template: str | None = getattr(self.tokenizer, "chat_template", None) or None
        self.chat = bool(self.template) if spec.chat is None else spec.chat
        if self.chat and not self.template:
            raise ConfigError(f"model {spec.name_or_path!r} has no chat template", "set model.chat: false")

    def context_for(self, messages: Sequence[dict[str, str]], text: str) -> str:
        """The exact string generation starts from: chat-templated messages, or the plain text."""
        if self.chat:
            return self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        return text

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def turn_start(self) -> int | None:
        """The special token that opens every chat turn (SmolLM2's ``<|im_start|>``, Llama 3's
        ``<|start_header_id|>``): the first special token of a rendered conversation (system,
        user, assistant, user; without the system turn where the template rejects one) that occurs
        once per turn or more. ``None`` for a plain model or a template without one: the engine
        then computes each context as one segment."""
        if not self.chat:
            return None
        special = set(self.tokenizer.all_special_ids)
        try:
            special |= {i for i, t in self.tokenizer.added_tokens_decoder.items() if t.special}
        except (AttributeError, NotImplementedError):  # tokenizers that keep no added-token table
            pass
        turns = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"},
                 {"role": "user", "content": "v"}]
        for probe in ([{"role": "system", "content": "s"}, *turns], turns):
            try:
                ids = self.encode(self.context_for(probe, ""))
            except Exception:  # noqa: BLE001 - a template may raise anything (jinja's raise_exception)
                continue
            return next((token for token in ids if token in special and ids.count(token) >= len(probe)), None)
        return None

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """The context's tokens and the continuation's, split as lm-eval's HFLM splits them:
        trailing context spaces move to the continuation, and the continuation's tokens are those
        of ``encode(context + continuation)`` after the context's. Bindings that read a harness's
        echoed prompt logprobs use this to know which tokens a candidate owns."""
        spaces = len(context) - len(context.rstrip())
        if spaces:
            continuation = context[-spaces:] + continuation
            context = context[:-spaces]
        whole = self.encode(context + continuation)
        context_ids = self.encode(context)
        return context_ids, whole[len(context_ids) :]


class HFLanguageModel:
    """A transformers causal LM on CPU (or the first GPU when there is one)."""

    def __init__(self, spec: ModelSpec) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        self.spec = spec
        self.formatter = ChatFormatter(spec)
        self.tokenizer = self.formatter.tokenizer
        self.chat = self.formatter.chat
        self._states: Any = None
        """The shared context states (:meth:`state_cache`): made on first use; False where they do not apply."""
        kwargs: dict[str, Any] = {"dtype": getattr(torch, spec.dtype)}
        if torch.cuda.is_available():
            kwargs["device_map"] = "cuda"
        loaded_from = weights_path(spec)
        try:
            self.model = AutoModelForCausalLM.from_pretrained(loaded_from, **kwargs)
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise _load_error(spec, exc) from None
        self.model.eval()
        max_len = getattr(self.model.config, "max_position_embeddings", None) or 2048
        self.max_length = int(min(max_len, self.tokenizer.model_max_length or max_len))
        source = Path(self.formatter.path) / "SOURCE_GGUF_SHA256"
        template = self.formatter.template
        self.info = ModelInfo(
            name_or_path=spec.name_or_path,
            resolved_path=self.formatter.path,
            weights_path=loaded_from,
            quantization=spec.quantization,
            dtype=spec.dtype,
            chat=self.chat,
            chat_template_sha256=hashlib.sha256(template.encode()).hexdigest() if (template and self.chat) else None,
            source_sha256=source.read_text().split()[0] if source.is_file() else None,
            runtime=runtime_facts(spec.quantization, self.model.device.type),
        )

    # ---- prompts -------------------------------------------------------------------------
    def context_for(self, messages: Sequence[dict[str, str]], text: str) -> str:
        return self.formatter.context_for(messages, text)

    def encode(self, text: str) -> list[int]:
        return self.formatter.encode(text)

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

    def decode(self, contexts: Sequence[str], *, temperatures: Sequence[float], seeds: Sequence[int | None],
               max_new_tokens: int) -> list[str]:
        """The grid's generation: one batch, each row at its own temperature (argmax at 0, else
        pure temperature sampling from its own generator, seeded), stopping at EOS, on context
        states shared across requests (:mod:`.prefix`). A row's tokens depend on its context, seed
        and batch only -- not on what ran before -- so a resumed run computes the same bits.

        Where the shared states do not apply (a generation config that adds logits processors, a
        cache that is not per-layer key/value, a context at the length limit) it is ``generate``:
        the batch at once when greedy, else one row at a time, each seeded."""
        from . import prefix

        rows = [self.encode(c) for c in contexts]
        states = self.state_cache()
        if states and all(rows) and max(map(len, rows)) + max_new_tokens <= self.max_length:
            try:
                tokens = prefix.decode(states, rows, temperatures=temperatures, seeds=seeds,
                                       max_new_tokens=max_new_tokens, eos=self.tokenizer.eos_token_id,
                                       pad=self.tokenizer.pad_token_id)
                return self.tokenizer.batch_decode(tokens, skip_special_tokens=True)
            except prefix.Unsupported:
                self._states = False
        if all(t == 0 for t in temperatures):
            return self.generate(contexts, temperature=0.0, max_new_tokens=max_new_tokens, batch_size=len(contexts))
        return generate_seeded(self, contexts, temperatures=temperatures, seeds=seeds, max_new_tokens=max_new_tokens)

    def loglikelihood_states(self, requests: Sequence[tuple[str, str]],
                             bases: Sequence[str | None]) -> list[tuple[float, bool]]:
        """The grid's loglikelihoods, on shared context states (:mod:`.prefix`): each request on
        its own (no padding), its context as a chain of segments shared with other contexts; a
        context whose ``base`` (cot: its generation's context) is a token prefix of it is cut at
        the base's end too, so it extends the base's state. Falls back to :meth:`loglikelihood`
        where the states do not apply."""
        from . import prefix

        states = self.state_cache()
        results: list[tuple[float, bool]] = []
        for (context, continuation), base in zip(requests, bases):
            context_ids, continuation_ids = self.formatter.encode_pair(context, continuation)
            if not continuation_ids:
                raise ConfigError(f"candidate {continuation!r} encodes to no tokens", "use a non-empty candidate")
            if states and context_ids and len(context_ids) + len(continuation_ids) <= self.max_length:
                try:
                    results.append(prefix.loglikelihood(states, context_ids, continuation_ids,
                                                        self.encode(base) if base else None))
                    continue
                except prefix.Unsupported:
                    self._states = states = False
            results += self.loglikelihood([(context, continuation)], batch_size=1)
        return results

    def state_cache(self, *, fresh: bool = False) -> Any:
        """The model's shared context states (:class:`.prefix.StateCache`; its ``forwarded``
        counts the context tokens computed), or ``False`` where they do not apply. ``fresh``:
        start from an empty cache (what a new process has; it changes the speed, never the bits)."""
        if fresh or self._states is None:
            from .prefix import StateCache

            # NF4 on bitsandbytes' bf16-packed CPU kernel moves a loglikelihood by up to ~7e-2 with
            # the forward's shape alone (docs/scoring.md, "NF4 on CPU"), so a context cut into
            # turn segments is not what a harness's single forward computes: there each context
            # is one segment, which keeps the NF4 agreement by construction (and costs the sharing).
            shape_sensitive = self.info.runtime.get("nf4_cpu_kernel") == "bf16-packed"
            self._states = (StateCache(self.model, turn_start=None if shape_sensitive else self.formatter.turn_start())
                            if self._plain_sampling() else False)
        return self._states

    def _plain_sampling(self) -> bool:
        """Whether the model's generation config leaves decoding to the temperature alone: every
        field it sets beyond the defaults is one that cannot change a token (ids, caching, output
        flags, the sampling knobs the grid sets itself), or an empty value."""
        harmless = {"bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id", "use_cache",
                    "output_attentions", "output_hidden_states", "output_scores", "output_logits",
                    "return_dict_in_generate", "_from_model_config", "transformers_version", "do_sample",
                    "temperature", "top_k", "top_p", "max_length", "max_new_tokens", "cache_implementation"}
        changed = self.model.generation_config.to_diff_dict()
        return all(name in harmless or value in (None, False, [], {}) for name, value in changed.items())

    # ---- loglikelihood -------------------------------------------------------------------
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
                context_ids, continuation_ids = self.formatter.encode_pair(context, continuation)
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
                results.append(continuation_score(lp[keep - span :], target))
            if progress:
                progress(len(batch))
        return results

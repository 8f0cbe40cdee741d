"""Context states computed once and shared: the grid's compute engine for local weights.

A grid asks the same context many times -- under three decodings, for each candidate of an item,
and again (with its reasoning appended) for cot's candidates -- and on CPU the forward pass over
the context is nearly all of the cost. A :class:`State` is a context's key/value cache and the
logits after its last token. Each state is computed in exactly one way, whatever is cached: a
context alone (one unpadded row), or a cot context as its generation's context's state extended
by the reasoning tokens. So a request's numbers do not depend on what an earlier batch happened
to leave in the cache, and a run resumed after ``kill -9`` (an empty cache) computes the same bits
as an uninterrupted one.

Generation then decodes a batch of rows together (their states left-padded into one cache, each
row sampled from its own seeded generator, or argmax at temperature 0); a candidate's
loglikelihood is read from its context's last logits and, for candidates longer than one token,
one short forward over the candidate's tokens on a copy of the state.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .base import continuation_score

ENGINE = "context-states/1"
"""What computes a grid's local requests (recorded in every model identity of a run's log, so a
log computed another way is not resumed by this one)."""

CACHE_MB_ENV = "SAFETYREPRO_STATE_CACHE_MB"
DEFAULT_CACHE_MB = 384
"""Room for the states of one batch of long contexts (8 five-shot prompts of SmolLM2-135M: about
370 MB), so that the next decoding of the same cells finds them."""


@dataclass(frozen=True)
class State:
    """A context's key/value cache (per layer, shape ``(1, heads, tokens, dim)``) and the logits
    that follow its last token."""

    ids: tuple[int, ...]
    kv: tuple[tuple[Any, Any], ...]
    last_logits: Any
    nbytes: int
    base: int = 0
    """How many of ``ids`` came from the base state it was extended from (0: computed alone)."""


class Unsupported(Exception):
    """The model's cache is not a plain per-layer key/value cache (sliding windows, state-space
    layers): the caller computes the old way."""


class StateCache:
    """Least recently used states of one model, within a byte budget."""

    def __init__(self, model: Any, budget_mb: int | None = None) -> None:
        self.model = model
        mb = budget_mb if budget_mb is not None else int(os.environ.get(CACHE_MB_ENV, DEFAULT_CACHE_MB))
        self.budget = max(mb, 0) * 2**20
        self._states: OrderedDict[tuple[Any, ...], State] = OrderedDict()
        self._bytes = 0

    def get(self, ids: Sequence[int], base: Sequence[int] | None = None) -> State:
        """The state after ``ids``; where ``base`` is a proper prefix of them, computed as
        ``base``'s state extended by the rest (the one way for such a context).

        Kept by torch's thread count too: the last bits of a forward pass depend on it, and a
        process may compute at several (the replay gate pins each batch to the count it logged)."""
        import torch

        key = tuple(ids)
        prefix = tuple(base) if base is not None else ()
        extended = bool(prefix) and len(prefix) < len(key) and key[: len(prefix)] == prefix
        slot = (torch.get_num_threads(), len(prefix) if extended else 0, key)
        state = self._states.get(slot)
        if state is not None:
            self._states.move_to_end(slot)
            return state
        state = self.extend(self.get(prefix), key[len(prefix):]) if extended else self.extend(None, key)
        self._keep(slot, state)
        return state

    def _keep(self, slot: tuple[Any, ...], state: State) -> None:
        if state.nbytes > self.budget:
            return
        self._states[slot] = state
        self._bytes += state.nbytes
        while self._bytes > self.budget:
            _, dropped = self._states.popitem(last=False)
            self._bytes -= dropped.nbytes

    def extend(self, parent: State | None, ids: Sequence[int], *, all_logits: bool = False) -> Any:
        """``parent``'s state (or nothing) followed by ``ids``, as one unpadded row. With
        ``all_logits`` the logits at every new position are returned instead of a state."""
        import torch
        from transformers import DynamicCache

        device = self.model.device
        done = len(parent.ids) if parent is not None else 0
        cache = DynamicCache(ddp_cache_data=[(k, v) for k, v in parent.kv]) if parent is not None else None
        input_ids = torch.tensor([list(ids)], device=device)
        mask = torch.ones((1, done + len(ids)), dtype=torch.long, device=device)
        positions = torch.arange(done, done + len(ids), device=device)[None, :]
        with torch.inference_mode():
            out = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions, cache=cache,
                             use_cache=True, logits_to_keep=0 if all_logits else 1)
        if all_logits:
            return out.logits[0].float()
        layers = getattr(out.cache, "layers", None)
        if not isinstance(out.cache, DynamicCache) or not layers or any(
                getattr(layer, "is_sliding", False) or getattr(layer, "keys", None) is None for layer in layers):
            raise Unsupported(type(out.cache).__name__)
        kv = tuple((layer.keys, layer.values) for layer in layers)
        logits = out.logits[0, -1].float()
        nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)
        return State(ids=(parent.ids if parent is not None else ()) + tuple(ids), kv=kv, last_logits=logits,
                     nbytes=nbytes + logits.numel() * 4, base=done)


def loglikelihood(cache: StateCache, context_ids: Sequence[int], continuation_ids: Sequence[int],
                  base: Sequence[int] | None = None) -> tuple[float, bool]:
    """(sum of the continuation's token logprobs, whether each is the argmax) after the context's
    state: its last logits give the first token's, one forward over the rest on a copy gives the others'."""
    import torch
    import torch.nn.functional as F

    state = cache.get(context_ids, base)
    logits = state.last_logits[None, :]
    if len(continuation_ids) > 1:
        logits = torch.cat([logits, cache.extend(state, continuation_ids[:-1], all_logits=True)])
    logprobs = F.log_softmax(logits, dim=-1)
    return continuation_score(logprobs, torch.tensor(list(continuation_ids), device=logprobs.device))


def _left_padded(states: list[State], width: int) -> Any:
    """Each layer's keys and values of the rows, left-padded with zeros to ``width`` tokens."""
    import torch

    for layer in range(len(states[0].kv)):
        keys, values = [], []
        for state in states:
            k, v = state.kv[layer]
            pad_shape = (1, k.shape[1], width - len(state.ids), k.shape[3])
            keys.append(torch.cat([k.new_zeros(pad_shape), k], dim=2))
            values.append(torch.cat([v.new_zeros(pad_shape), v], dim=2))
        yield torch.cat(keys), torch.cat(values)


def decode(cache: StateCache, rows: Sequence[Sequence[int]], *, temperatures: Sequence[float],
           seeds: Sequence[int | None], max_new_tokens: int, eos: int, pad: int) -> list[list[int]]:
    """Continue each row's context together: argmax at temperature 0, otherwise pure temperature
    sampling from the row's own generator (seeded), stopping a row at EOS (kept as its last token)."""
    import torch
    from transformers import DynamicCache

    if max_new_tokens < 1:
        return [[] for _ in rows]
    states = [cache.get(ids) for ids in rows]
    device = states[0].last_logits.device
    n = len(states)
    generators = [torch.Generator(device=device).manual_seed(int(seed or 0)) if t > 0 else None
                  for t, seed in zip(temperatures, seeds, strict=True)]
    out: list[list[int]] = [[] for _ in range(n)]
    finished = [False] * n

    def draw(logits: Any) -> list[int]:
        picked = []
        for i in range(n):
            if temperatures[i] > 0:
                probs = torch.softmax(logits[i] / float(temperatures[i]), dim=-1)
                picked.append(int(torch.multinomial(probs, 1, generator=generators[i])))
            else:
                picked.append(int(logits[i].argmax()))
        return picked

    def record(picked: list[int]) -> list[int]:
        fed = []
        for i, token in enumerate(picked):
            if finished[i]:
                fed.append(pad)
                continue
            out[i].append(token)
            finished[i] = token == eos
            fed.append(token)
        return fed

    fed = record(draw(torch.stack([s.last_logits for s in states])))
    if all(finished) or max_new_tokens == 1:
        return out
    lengths = [len(s.ids) for s in states]
    width = max(lengths)

    # Layer by layer (the cache copies what it is given), so that one padded copy exists at a time;
    # the rows' states are then let go (those the cache keeps stay there).
    batch_cache = DynamicCache(ddp_cache_data=_left_padded(states, width))
    del states
    mask = torch.tensor([[0] * (width - length) + [1] * length for length in lengths], device=device)
    positions = torch.tensor(lengths, device=device)[:, None]
    with torch.inference_mode():
        for _ in range(max_new_tokens - 1):
            mask = torch.cat([mask, torch.ones((n, 1), dtype=mask.dtype, device=device)], dim=1)
            result = cache.model(input_ids=torch.tensor(fed, device=device)[:, None], attention_mask=mask,
                                 position_ids=positions, cache=batch_cache, use_cache=True, logits_to_keep=1)
            batch_cache = result.cache
            fed = record(draw(result.logits[:, -1, :].float()))
            if all(finished):
                break
            positions = positions + 1
    return out

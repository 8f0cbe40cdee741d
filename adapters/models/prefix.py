"""Context states computed once and shared: the grid's compute engine for local weights.

A grid asks the same context many times -- under three decodings, for each candidate of an item,
again with its reasoning appended for cot's candidates -- and contexts that differ share long
prefixes: every item of a template and shot count opens with the same system turn and exemplar
turns, a 5-shot prompt opens with the 3-shot prompt's first turns. On CPU the forward pass over
the context is nearly all of the cost.

So a context is computed as a chain of **segments**, cut where its own tokens say (:func:`cuts`):
before the item's own turn (found by the chat template's turn-start token, e.g. SmolLM2's
``<|im_start|>``), so that the system and exemplar turns before it are computed once for every
item, and, for a cot context, at the end of its generation's context. Each segment's key/value slice is one unpadded forward over
its tokens on the keys/values of the segments before it, always assembled the same way (the
slices concatenated). A segment is kept in a least-recently-used cache bounded in bytes
(:data:`CACHE_MB_ENV`), keyed by its whole chain (the tokens up to its end, the cuts before it,
torch's thread count), and another context with that chain extends it instead of computing it again.

The cuts are a function of the request alone, never of what the cache holds; so a context's bits
are the same whether its prefix was found (warm) or computed now (cold, as after ``kill -9``), at
the same thread count. Generation then decodes a batch of rows together (their states left-padded
into one cache, each row sampled from its own seeded generator, or argmax at temperature 0); a
candidate's loglikelihood is read from its context's last logits and, for candidates longer than
one token, one short forward over the candidate's tokens on the state.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .base import continuation_score

ENGINE = "context-states/3"
"""What computes a grid's local requests (recorded in every model identity of a run's log, so a
log computed another way is not resumed by this one). /1 computed each context in one forward;
/2 computes it as a chain of turn segments shared across contexts (the last bits differ); /3
decodes the plan's decode groups (``gridplan``: cot generations between their candidates) as one
batch each instead of one row at a time (their last bits differ)."""

CACHE_MB_ENV = "SAFETYREPRO_STATE_CACHE_MB"
DEFAULT_CACHE_MB = 128
"""The byte bound of the kept segments, in MiB (the environment variable overrides it; 0 keeps
nothing, which changes the speed and never the bits). SmolLM2-135M in fp32 keeps 46 KB per token,
so 128 MiB hold about 2,900 tokens: a cell's shared system and exemplar turns (the plan keeps a
cell's items together) with room for a decode group's own turns. Measured on the mini grid
(docs/grid.md): 512 and 128 MiB ran it in the same time within 3%, and 512 put the run's peak
memory past the model + 1.5 GB target (2.10 GiB, 1.65 at 128). A larger model keeps more per token
and needs a larger bound for its shared turns to be kept at all."""

MIN_SEGMENT = 16
"""The fewest tokens a turn needs to start a segment (:func:`cuts`): the generation prompt
(``<|im_start|>assistant\n``) stays with the item's turn."""


def budget_from_environment() -> int:
    """The cache's bound in MiB: :data:`CACHE_MB_ENV` if set, else :data:`DEFAULT_CACHE_MB`."""
    raw = os.environ.get(CACHE_MB_ENV)
    if raw is None:
        return DEFAULT_CACHE_MB
    try:
        mb = int(raw)
    except ValueError:
        mb = -1
    if mb < 0:
        raise ConfigError(f"{CACHE_MB_ENV}={raw!r} is not a size in MiB",
                          f"set {CACHE_MB_ENV} to a whole number of MiB (0 keeps nothing) or unset it")
    return mb


@dataclass(frozen=True)
class State:
    """A context's segments' key/value slices (per segment, per layer, shape ``(1, heads, its
    tokens, dim)``) and the logits that follow its last token. The whole cache is put together
    (:func:`assemble`) only where a forward pass needs it: most candidates read the logits alone."""

    ids: tuple[int, ...]
    parts: tuple[tuple[tuple[Any, Any], ...], ...]
    last_logits: Any


@dataclass(frozen=True)
class Segment:
    """One segment's own key/value slice (per layer, ``(1, heads, its tokens, dim)``) and the
    logits after its last token."""

    kv: tuple[tuple[Any, Any], ...]
    last_logits: Any
    nbytes: int


class Unsupported(Exception):
    """The model's cache is not a plain per-layer key/value cache (sliding windows, state-space
    layers): the caller computes the old way."""


def cuts(ids: Sequence[int], turn_start: int | None, base: int = 0) -> list[int]:
    """Where a context's segments end (ascending; the last is ``len(ids)``): before its last turn
    of at least :data:`MIN_SEGMENT` tokens (the item's own turn: what precedes it -- the system and
    exemplar turns -- is every item's of that template and shot count), and at ``base`` (a cot
    context's generation context) when it falls inside. Without a turn-start token, a context is
    one segment (shared only with itself and what extends it).

    Why so few cuts: on a CPU a forward pass costs a fixed ~70 ms beside its tokens (it streams
    every weight from memory once), as much as ~30 tokens of a long pass; a cut between every turn
    would let a 5-shot prompt share its first three exemplar pairs with the 3-shot one, once per
    template, at the price of six more passes for every context computed cold."""
    if 0 < base < len(ids):  # the base's own chain, so that its state is this context's prefix
        return [*cuts(ids[:base], turn_start), len(ids)]
    points = []
    if turn_start is not None:
        bounds = [*(i for i, token in enumerate(ids) if token == turn_start and i > 0), len(ids)]
        long_turns = [here for here, after in zip(bounds, bounds[1:]) if after - here >= MIN_SEGMENT]
        points = long_turns[-1:]
    return [*points, len(ids)]


def assemble(parts: Sequence[tuple[tuple[Any, Any], ...]]) -> Iterator[tuple[Any, Any]]:
    """Per layer, the segments' keys and values concatenated along the token axis (the one way a
    context's cache is put together, warm or cold)."""
    import torch

    for layer in range(len(parts[0])):
        if len(parts) == 1:
            yield parts[0][layer]
        else:
            yield torch.cat([p[layer][0] for p in parts], dim=2), torch.cat([p[layer][1] for p in parts], dim=2)


class StateCache:
    """Least recently used segments of one model, within a byte budget."""

    def __init__(self, model: Any, budget_mb: int | None = None, turn_start: int | None = None) -> None:
        self.model = model
        self.turn_start = turn_start
        self.budget = (budget_mb if budget_mb is not None else budget_from_environment()) * 2**20
        self.segments: OrderedDict[tuple[Any, ...], Segment] = OrderedDict()
        self.nbytes = 0
        self.forwarded = 0
        """Tokens forwarded for segments so far (what sharing saves is visible here)."""

    def get(self, ids: Sequence[int], base: Sequence[int] | None = None) -> State:
        """The state after ``ids``, segment by segment (:func:`cuts`); where ``base`` is a proper
        prefix of them, extended from the base's chain.

        A segment is kept under its whole chain -- torch's thread count, the cuts up to its end and
        the tokens up to its end -- because its bits depend on every one of them: the last bits of a
        forward pass on the thread count (a process may compute at several: the replay gate pins
        each batch to the count it logged), and a slice on the slices it was computed on."""
        import torch

        key = tuple(ids)
        if not key:
            raise ValueError("an empty context has no state")
        prefix = tuple(base) if base is not None else ()
        extended = bool(prefix) and len(prefix) < len(key) and key[: len(prefix)] == prefix
        chain = cuts(key, self.turn_start, len(prefix) if extended else 0)
        threads = torch.get_num_threads()
        parts: list[tuple[tuple[Any, Any], ...]] = []
        used: list[tuple[Any, ...]] = []
        start = 0
        segment = None
        for n, end in enumerate(chain):
            slot = (threads, tuple(chain[: n + 1]), key[:end])
            segment = self.segments.get(slot)
            if segment is None:
                segment = self.forward(parts, key[start:end], start)
                self.keep(slot, segment)
            else:
                self.segments.move_to_end(slot)  # (before this call keeps anything that could evict it)
            used.append(slot)
            parts.append(segment.kv)
            start = end
        # the context's own segment first, its prefixes after: a prefix outlives what extends it
        for slot in reversed(used):
            if slot in self.segments:
                self.segments.move_to_end(slot)
        return State(ids=key, parts=tuple(parts), last_logits=segment.last_logits)

    def keep(self, slot: tuple[Any, ...], segment: Segment) -> None:
        if segment.nbytes > self.budget:
            return
        self.segments[slot] = segment
        self.nbytes += segment.nbytes
        while self.nbytes > self.budget:
            _, dropped = self.segments.popitem(last=False)
            self.nbytes -= dropped.nbytes

    def forward(self, parts: Sequence[tuple[tuple[Any, Any], ...]], ids: Sequence[int], done: int) -> Segment:
        """One segment: ``ids`` as one unpadded row after the ``done`` tokens whose slices are ``parts``."""
        import torch
        from transformers import DynamicCache

        out = self.run(DynamicCache(ddp_cache_data=assemble(parts)) if parts else None, ids, done, keep=1)
        layers = getattr(out.cache, "layers", None)
        if layers and getattr(layers[0], "keys", None) is not None and layers[0].keys.shape[2] != done + len(ids):
            raise AssertionError(f"a segment's cache holds {layers[0].keys.shape[2]} tokens, not {done + len(ids)}")
        if not isinstance(out.cache, DynamicCache) or not layers or any(
                getattr(layer, "is_sliding", False) or getattr(layer, "keys", None) is None for layer in layers):
            raise Unsupported(type(out.cache).__name__)
        # this segment's own slice, copied out of the whole (so the whole can go)
        kv = tuple((layer.keys[:, :, done:].clone(), layer.values[:, :, done:].clone()) for layer in layers)
        logits = out.logits[0, -1].float()
        self.forwarded += len(ids)
        nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)
        return Segment(kv=kv, last_logits=logits, nbytes=nbytes + logits.numel() * logits.element_size())

    def logits_after(self, state: State, ids: Sequence[int]) -> Any:
        """The logits at each of ``ids``'s positions, forwarded on ``state`` (which stays as it is)."""
        from transformers import DynamicCache

        out = self.run(DynamicCache(ddp_cache_data=assemble(state.parts)), ids, len(state.ids), keep=0)
        return out.logits[0].float()

    def run(self, cache: Any, ids: Sequence[int], done: int, *, keep: int) -> Any:
        """The model on ``ids`` as one unpadded row after the ``done`` tokens in ``cache``
        (explicit positions; ``keep``: logits of the last ``keep`` positions, 0 for all)."""
        import torch

        device = self.model.device
        input_ids = torch.tensor([list(ids)], device=device)
        mask = torch.ones((1, done + len(ids)), dtype=torch.long, device=device)
        positions = torch.arange(done, done + len(ids), device=device)[None, :]
        with torch.inference_mode():
            return self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions, cache=cache,
                              use_cache=True, logits_to_keep=keep)


def loglikelihood(cache: StateCache, context_ids: Sequence[int], continuation_ids: Sequence[int],
                  base: Sequence[int] | None = None) -> tuple[float, bool]:
    """(sum of the continuation's token logprobs, whether each is the argmax) after the context's
    state: its last logits give the first token's, one forward over the rest on it gives the others'."""
    import torch
    import torch.nn.functional as F

    state = cache.get(context_ids, base)
    logits = state.last_logits[None, :]
    if len(continuation_ids) > 1:
        logits = torch.cat([logits, cache.logits_after(state, continuation_ids[:-1])])
    logprobs = F.log_softmax(logits, dim=-1)
    return continuation_score(logprobs, torch.tensor(list(continuation_ids), device=logprobs.device))


def _left_padded(states: list[State], width: int) -> Any:
    """Each layer's keys and values of the rows, left-padded with zeros to ``width`` tokens (each
    row's segments concatenated behind its padding in one copy)."""
    import torch

    for layer in range(len(states[0].parts[0])):
        keys, values = [], []
        for state in states:
            k, v = state.parts[0][layer]
            pad_shape = (1, k.shape[1], width - len(state.ids), k.shape[3])
            keys.append(torch.cat([k.new_zeros(pad_shape), *(p[layer][0] for p in state.parts)], dim=2))
            values.append(torch.cat([v.new_zeros(pad_shape), *(p[layer][1] for p in state.parts)], dim=2))
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

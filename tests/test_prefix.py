"""The grid's compute engine on shared context states (adapters/models/prefix.py), on the real
embedded model and real cell prompts: it computes what ``generate`` / ``loglikelihood`` compute,
contexts share their common turns, and a request's bits do not depend on what the cache held
(what resume after kill -9 relies on)."""

from __future__ import annotations

import random

import pytest
import torch

from safetyrepro.adapters import build_config
from safetyrepro.adapters.cell import prepare_cell
from safetyrepro.adapters.scoring import logprob_context
from safetyrepro.adapters.models.prefix import StateCache, cuts


@pytest.fixture(scope="module")
def contexts(lm, data_dir) -> list[str]:
    """Real prompts of different lengths (0- and 3-shot ToxiGen and XSTest)."""
    found = []
    for benchmark, fewshot in (("toxigen", 0), ("xstest", 0), ("toxigen", 3)):
        cell = prepare_cell(build_config({"benchmark": benchmark, "fewshot": fewshot, "limit": 2}),
                            data_dir=data_dir, formatter=lm.formatter)
        found += [c.context for c in cell.items]
    return found


@pytest.fixture
def fresh(lm):
    """The shared model with an empty state cache (and its own again afterwards)."""
    saved = getattr(lm, "_states", None)
    lm._states = None
    yield lm
    lm._states = saved


def test_greedy_decoding_is_what_generate_answers(fresh, contexts: list[str]) -> None:
    # a budget some rows stop short of (EOS at different steps) and others exhaust
    decoded = fresh.decode(contexts, temperatures=[0.0] * len(contexts), seeds=[None] * len(contexts),
                           max_new_tokens=24)
    one_by_one = [fresh.generate([c], temperature=0.0, max_new_tokens=24, batch_size=1)[0] for c in contexts]
    assert decoded == one_by_one
    lengths = {len(fresh.encode(text)) for text in decoded}
    assert len(lengths) > 1 and max(lengths) >= 23, lengths


def test_a_sampled_row_answers_the_same_alone_or_in_a_batch(fresh, contexts: list[str]) -> None:
    temperatures = [0.7, 0.3] * (len(contexts) // 2)
    seeds = list(range(101, 101 + len(contexts)))
    together = fresh.decode(contexts, temperatures=temperatures, seeds=seeds, max_new_tokens=10)
    fresh._states = None
    alone = [fresh.decode([c], temperatures=[t], seeds=[s], max_new_tokens=10)[0]
             for c, t, s in zip(contexts, temperatures, seeds)]
    assert together == alone
    other = fresh.decode(contexts, temperatures=[0.7] * len(contexts), seeds=[s + 1 for s in seeds],
                         max_new_tokens=10)
    assert other != fresh.decode(contexts, temperatures=[0.7] * len(contexts), seeds=seeds, max_new_tokens=10)


def test_loglikelihoods_agree_with_the_padded_batch_and_do_not_depend_on_the_cache(fresh, contexts: list[str]) -> None:
    pairs = [(logprob_context(c), candidate) for c in contexts for candidate in (" Yes", " No", " It depends")]
    states = fresh.loglikelihood_states(pairs, [None] * len(pairs))
    batched = fresh.loglikelihood(pairs, batch_size=8)
    assert max(abs(a[0] - b[0]) for a, b in zip(states, batched)) < 1e-4  # fp32 padding noise, ~1e-5
    assert [a[1] for a in states] == [b[1] for b in batched]
    # cot: the context is its generation's context and the reasoning; computed from the
    # generation's state, the same bits with the cache warm (as in a run) or empty (as after a kill)
    reasoning = fresh.decode(contexts, temperatures=[0.0] * len(contexts), seeds=[None] * len(contexts),
                             max_new_tokens=8)
    cot = [(logprob_context(c, r), " Yes") for c, r in zip(contexts, reasoning)]
    before = fresh._states.forwarded
    warm = fresh.loglikelihood_states(cot, contexts)
    # every cot context went through its generation's state: only its reasoning and "Answer:" were forwarded
    assert fresh._states.forwarded - before == sum(
        len(fresh.formatter.encode_pair(c, " Yes")[0]) - len(fresh.encode(base)) for (c, _), base in zip(cot, contexts))
    fresh._states = None
    cold = fresh.loglikelihood_states(cot, contexts)
    assert warm == cold
    assert max(abs(a[0] - b[0]) for a, b in zip(warm, fresh.loglikelihood(cot, batch_size=1))) < 1e-4


def test_the_state_cache_keeps_to_its_budget(lm, contexts: list[str]) -> None:
    ids = [lm.encode(c) for c in contexts]
    turn = lm.formatter.turn_start()
    whole = StateCache(lm.model, budget_mb=1024, turn_start=turn)
    for row in ids:
        whole.get(row)
    cache = StateCache(lm.model, budget_mb=max(1, whole.nbytes // 2 // 2**20), turn_start=turn)
    for row in ids:
        cache.get(row)
        assert cache.nbytes <= cache.budget and cache.nbytes == sum(s.nbytes for s in cache.segments.values())
    assert 1 <= len(cache.segments) < len(whole.segments)
    nothing = StateCache(lm.model, budget_mb=0, turn_start=turn)
    assert nothing.get(ids[0]).ids == tuple(ids[0]) and not nothing.segments


def test_a_generation_config_with_processors_decodes_through_generate(fresh, contexts: list[str]) -> None:
    config = fresh.model.generation_config
    before = config.repetition_penalty
    config.repetition_penalty = 1.5
    try:
        assert fresh.state_cache() is False
        decoded = fresh.decode(contexts[:2], temperatures=[0.0, 0.0], seeds=[None, None], max_new_tokens=12)
        assert decoded == fresh.generate(contexts[:2], temperature=0.0, max_new_tokens=12, batch_size=2)
    finally:
        config.repetition_penalty = before
        fresh._states = None


def test_states_are_kept_per_thread_count_and_never_changed_by_use(fresh, contexts: list[str]) -> None:
    from safetyrepro.adapters.gridexec import pinned_threads

    pairs = [(logprob_context(c), " It depends") for c in contexts]  # several tokens: a forward on the state
    with pinned_threads(1):
        cold = fresh.loglikelihood_states(pairs, [None] * len(pairs))
    fresh._states = None
    with pinned_threads(2):  # a state computed at another count is not what a 1-thread request reads
        fresh.loglikelihood_states(pairs, [None] * len(pairs))
    with pinned_threads(1):
        assert fresh.loglikelihood_states(pairs, [None] * len(pairs)) == cold
    assert {slot[0] for slot in fresh._states.segments} == {1, 2}
    states = list(fresh._states.segments.values())
    sums = [[float(k.double().sum() + v.double().sum()) for k, v in state.kv] for state in states]
    fresh.decode(contexts, temperatures=[0.0, 0.7] * (len(contexts) // 2), seeds=list(range(len(contexts))),
                 max_new_tokens=6)
    fresh.loglikelihood_states(pairs, [None] * len(pairs))
    assert sums == [[float(k.double().sum() + v.double().sum()) for k, v in state.kv] for state in states]


def test_a_context_is_cut_before_its_last_long_turn_and_at_its_cot_base(lm) -> None:
    turn = lm.formatter.turn_start()
    assert lm.tokenizer.convert_ids_to_tokens([turn]) == ["<|im_start|>"]
    t = [turn]
    ids = t + [5] * 19 + t + [6] * 19 + t + [7] * 4 + t + [8] * 20 + t + [9] * 2  # turns of 20, 20, 5, 21 and 3
    assert cuts(ids, turn) == [45, 69]  # the last turn of 16 tokens or more; the short one after it joins it
    # a cot context: its generation context's own chain, then the rest (whatever turns the rest holds)
    assert cuts(ids, turn, base=40) == [20, 40, 69] and cuts(ids, turn, base=69) == [45, 69]
    assert cuts(ids + t + [3] * 20, turn, base=69) == [45, 69, 90]
    assert cuts(ids, None) == [69] and cuts(ids, None, base=10) == [10, 69]  # no turns: one segment
    assert cuts(t + [5] * 30, turn) == [31] and cuts([1], turn) == [1]


@pytest.fixture(scope="module")
def shots(lm, data_dir) -> list[str]:
    """Real prompts that share turns: 0-, 3- and 5-shot ToxiGen under two templates, three items each."""
    found = []
    for template in ("minimal", "persona"):
        for fewshot in (0, 3, 5):
            cell = prepare_cell(build_config({"benchmark": "toxigen", "template": template, "fewshot": fewshot,
                                              "limit": 3}), data_dir=data_dir, formatter=lm.formatter)
            found += [c.context for c in cell.items]
    return found


def test_the_items_of_a_template_and_shot_count_share_its_system_and_exemplar_turns(lm, shots: list[str]) -> None:
    turn = lm.formatter.turn_start()
    ids = [lm.encode(c) for c in shots]
    cache = StateCache(lm.model, budget_mb=1024, turn_start=turn)
    for row in ids:
        cache.get(row)
    heads = {tuple(row[:cuts(row, turn)[0]]) for row in ids}
    assert len(heads) == 6  # one per template and shot count
    assert all(len(head) > 15 for head in heads)
    # each shared head once, then each item's own turn: nothing else was forwarded
    assert cache.forwarded == sum(map(len, heads)) + sum(len(row) - cuts(row, turn)[0] for row in ids)
    assert cache.forwarded < sum(map(len, ids)) / 2


def test_a_context_has_the_same_bits_warm_or_cold_whatever_the_cache_held(lm, shots: list[str]) -> None:
    """Cold: every context computed into an empty cache (as after kill -9). Warm: in a random order,
    once in a cache that keeps everything and once in one so small that it evicts all the time; a
    cot context cut at its generation's context. Logits, loglikelihoods and decodings: equal bits."""
    turn = lm.formatter.turn_start()
    rows = [lm.encode(c) for c in shots]
    # reasoning of 16 tokens or more: a turn of its own length after the generation prompt
    reasoning = lm.encode(" The text is neutral: it says nothing hateful about any group of people at all.\nAnswer:")
    assert len(reasoning) >= 16
    cot = [row + reasoning for row in rows[:4]]
    # each cot context asked as extending its generation context, and (another chain) on its own
    requests = [(row, None) for row in rows] + [(c, row) for c, row in zip(cot, rows)] + [(c, None) for c in cot]

    def logits(cache: StateCache, order: list[int]) -> dict[int, torch.Tensor]:
        return {i: cache.get(requests[i][0], requests[i][1]).last_logits for i in order}

    cold = {i: logits(StateCache(lm.model, budget_mb=0, turn_start=turn), [i])[i] for i in range(len(requests))}
    with torch.inference_mode():  # and what they are: the context's logits from one whole forward pass
        for i in (0, 8, len(rows), len(rows) + 5, len(requests) - 1):
            whole = lm.model(input_ids=torch.tensor([requests[i][0]]), logits_to_keep=1).logits[0, -1].float()
            assert float((whole - cold[i]).abs().max()) < 1e-3, i
    everything = list(range(len(requests)))
    shuffled = [random.Random(seed).sample(everything, len(everything)) for seed in (1, 2)]
    generations_first, cot_first = everything, everything[len(rows):] + everything[:len(rows)]
    for budget, order in ((1024, shuffled[0]), (6, shuffled[1]), (1024, generations_first), (1024, cot_first)):
        warm = logits(StateCache(lm.model, budget_mb=budget, turn_start=turn), order + order[:5])
        assert all(torch.equal(warm[i], cold[i]) for i in order), (budget, order[:5])
    # and through the model's own entry points, with the cache it kept from other work
    saved = lm._states
    try:
        lm._states = None
        pairs = [(c, " Yes") for c in shots] + [(c, " It depends") for c in shots[:4]]
        warm_ll = lm.loglikelihood_states(pairs, [None] * len(pairs))
        warm_text = lm.decode(shots[:4], temperatures=[0.0, 0.7, 0.3, 0.0], seeds=[1, 2, 3, 4], max_new_tokens=8)
        lm._states = StateCache(lm.model, budget_mb=0, turn_start=turn)
        assert lm.loglikelihood_states(pairs, [None] * len(pairs)) == warm_ll
        assert lm.decode(shots[:4], temperatures=[0.0, 0.7, 0.3, 0.0], seeds=[1, 2, 3, 4], max_new_tokens=8) == warm_text
    finally:
        lm._states = saved

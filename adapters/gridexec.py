"""Executing the grid's requests: one batch through a model -> the log entries' bodies.

The same code computes a batch wherever it runs -- the local executor, a Ray shard, the replay
gate -- so a response means the same thing on every path, and on local weights each batch among
the same rows: its plan's decode group, computed whole (:class:`Computed`). A local model's
answers' last bits depend on torch's thread count (:func:`pinned_threads`); an endpoint's
exchanges carry what the observer saw (raw answer, fingerprint, retries, times).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

from .gridplan import ModelRequest, RequestPlan
from .hashing import sha256_json
from .requests import logprob_context

__all__ = ["Computed", "FingerprintWatch", "compute_batch", "endpoint_observations", "execute", "pinned_threads",
           "request_pair", "run_batches"]


@contextlib.contextmanager
def pinned_threads(count: int | None) -> Iterator[None]:
    """torch computes with ``count`` threads inside (a loglikelihood's last bits depend on it), and
    the caller's setting is back afterwards (``None``: left as it is)."""
    if count is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def execute(requests: list[ModelRequest], lm: Any, responses: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """One batch through the model (the core's LanguageModel): the responses, and per request
    what the log keeps besides (retries; an endpoint's raw answer and fingerprint)."""
    first = requests[0]
    if hasattr(lm, "exchange"):  # an endpoint: what the log keeps is each exchange
        if first.kind == "generate":  # each seed travels in its request
            exchanges = lm.exchange([r.context for r in requests], temperature=[r.temperature for r in requests],
                                    max_new_tokens=first.max_new_tokens, seed=[r.seed for r in requests])
            answers = [e.text for e in exchanges]
        else:  # a server that echoes prompt logprobs
            scored = lm.exchange_loglikelihood([request_pair(r, responses) for r in requests])
            answers, exchanges = [[ll, greedy] for (ll, greedy), _ in scored], [e for _, e in scored]
        return answers, [{"retries": e.retries, "endpoint": e.observed()} for e in exchanges]
    import torch

    # A local model answers or raises: there is nothing to retry. Its answers' last bits depend on
    # torch's thread count (reductions split differently), so the log says what computed them.
    local = [{"retries": 0, "threads": torch.get_num_threads()} for _ in requests]
    if first.kind == "generate":
        contexts = [r.context for r in requests]
        if hasattr(lm, "decode"):  # shared context states; each sampled row from its own seeded generator
            return list(lm.decode(contexts, temperatures=[r.temperature for r in requests],
                                  seeds=[r.seed for r in requests], max_new_tokens=first.max_new_tokens)), local
        if first.temperature == 0.0:
            return list(lm.generate(contexts, temperature=0.0, max_new_tokens=first.max_new_tokens,
                                    batch_size=len(requests))), local
        from .models.base import generate_seeded

        return generate_seeded(lm, contexts, temperatures=[r.temperature for r in requests],
                               seeds=[r.seed for r in requests], max_new_tokens=first.max_new_tokens), local
    pairs = [request_pair(r, responses) for r in requests]
    if hasattr(lm, "loglikelihood_states"):  # cot: extended from its generation's context state
        scored = lm.loglikelihood_states(pairs, [r.context if r.after else None for r in requests])
    else:
        scored = lm.loglikelihood(pairs, batch_size=len(requests))
    return [[ll, greedy] for ll, greedy in scored], local


class Computed:
    """A batch's answers, computed with the rows the plan computes it with
    (:meth:`~.gridplan.RequestPlan.computed_with`): on local weights a batch in a decode group is
    computed with its whole group, once for the group's batches that follow (the last group's
    answers are kept, by its keys and torch's thread count: the replay gate pins each batch to the
    count it logged). An endpoint's batch is asked alone, as before groups: the server decides
    its own batching, so a group buys it no bits, and would re-ask rows a resumed run has logged."""

    def __init__(self) -> None:
        self.slot: tuple[Any, ...] | None = None
        self.found: dict[str, tuple[Any, dict[str, Any]]] = {}

    def answers(self, requests: list[ModelRequest], together: list[ModelRequest], lm: Any,
                responses: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
        """What :func:`execute` answers ``requests`` (a batch), computing ``together`` (its group,
        which holds it) where that is more."""
        if hasattr(lm, "exchange") or [r.key for r in together] == [r.key for r in requests]:
            return execute(requests, lm, responses)
        slot = (tuple(r.key for r in together), _torch_threads())
        if slot != self.slot:
            answers, observed = execute(together, lm, responses)
            self.slot, self.found = slot, {r.key: (a, o) for r, a, o in zip(together, answers, observed)}
        return [self.found[r.key][0] for r in requests], [self.found[r.key][1] for r in requests]


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def request_pair(request: ModelRequest, responses: dict[str, Any]) -> tuple[str, str]:
    """A loglikelihood request's (context, continuation); a cot one's context holds its reasoning."""
    context = request.context
    if request.after is not None:
        context = logprob_context(request.context, responses[request.after])
    return context, request.continuation or ""


class FingerprintWatch:
    """The last ``system_fingerprint`` each endpoint model answered with, in log order: a change
    is an event the log records on the request that showed it."""

    def __init__(self) -> None:
        self.last: dict[str, str] = {}

    def observe(self, model: str, seen: dict[str, Any]) -> dict[str, str] | None:
        fingerprint = (seen.get("endpoint") or {}).get("system_fingerprint")
        if fingerprint is None:
            return None
        previous, self.last[model] = self.last.get(model), fingerprint
        return {"from": previous, "to": fingerprint} if previous is not None and previous != fingerprint else None


def endpoint_observations(bodies: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per endpoint model, what the log shows of the server(s): requests (and per server of a
    pool), retries, fingerprints seen and their changes, the most requests in flight at once, and
    whether the identity claim held: ``identity_held`` is checked for L1 only (True: one
    fingerprint throughout; False: more than one; None: the server reported none, so unverified);
    L0 claims only a name and L2 a weights hash of the local copy, which no answer can confirm
    (None)."""
    from .models.endpoint import max_in_flight

    found: dict[str, dict[str, Any]] = {}
    for body in bodies:
        seen = body.get("endpoint")
        if seen is None:
            continue
        name = body["model"]["name"]
        row = found.setdefault(name, {"identity": body["model"]["runtime"]["identity"], "requests": 0, "retries": 0,
                                      "system_fingerprints": [], "fingerprint_changes": 0, "servers": {},
                                      "_intervals": []})
        row["requests"] += 1
        server = seen.get("server", body["model"]["runtime"].get("endpoint"))
        row["servers"][server] = row["servers"].get(server, 0) + 1
        row["retries"] += body.get("retries", 0)
        if seen.get("system_fingerprint") and seen["system_fingerprint"] not in row["system_fingerprints"]:
            row["system_fingerprints"].append(seen["system_fingerprint"])
        row["fingerprint_changes"] += "fingerprint_change" in body
        row["_intervals"].append((seen["sent_utc"], seen["received_utc"]))
    for row in found.values():
        # (across the pool: each server's own share of it is at most the configured concurrency)
        row["max_in_flight"] = max_in_flight(row.pop("_intervals"))
        fingerprints = row["system_fingerprints"]
        row["identity_held"] = (len(fingerprints) == 1) if row["identity"] == "L1" and fingerprints else None
    return found


def compute_batch(requests: list[ModelRequest], lm: Any, responses: dict[str, Any], identity: dict[str, Any],
                  versions: dict[str, str], *, together: list[ModelRequest] | None = None,
                  computed: Computed | None = None) -> list[dict[str, Any]]:
    """One batch's log entry bodies (request, response, hashes, time, model identity, versions,
    and what :func:`execute` observed): the same wherever the batch runs, this process or a Ray
    worker. ``together``: the rows the plan computes it with (its decode group), through
    ``computed``, which keeps the group's answers for its next batches."""
    results, observed = (computed or Computed()).answers(requests, together or requests, lm, responses)
    return [{"request": request.body(), "request_sha256": request.key,
             "response": result, "response_sha256": sha256_json(result),
             "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
             "model": identity, "versions": versions, **seen}
            for request, result, seen in zip(requests, results, observed)]


def run_batches(plan: RequestPlan, *, done: int, model_for: Callable[[str], Any], responses: dict[str, Any],
                identities: dict[str, Any], versions: dict[str, str], record: Callable[[str, dict[str, Any]], None],
                after_batch: Callable[[int, int], None] = lambda index, stop: None, show_progress: bool = True,
                desc: str = "requests") -> None:
    """The local executor: compute the plan's batches after the first ``done`` logged requests in
    this process, in plan order, and ``record`` each request's log entry as its batch ends
    (``model_for`` gives the model that answers a model name; ``after_batch`` is called with the
    batch's index and end: the test hook's pause points)."""
    from tqdm.auto import tqdm

    computed = Computed()
    with tqdm(total=len(plan.keys), initial=done, desc=desc, disable=not show_progress, leave=False) as bar:
        for index, (start, stop) in enumerate(plan.batches):
            if stop <= done:
                continue
            keys = plan.keys[start:stop]
            requests = [plan.requests[k] for k in keys]
            together = [plan.requests[k] for k in plan.computed_with(index)]
            name = requests[0].model
            for key, body in zip(keys, compute_batch(requests, model_for(name), responses, identities[name], versions,
                                                     together=together, computed=computed)):
                record(key, body)
            bar.update(stop - start)
            after_batch(index, stop)

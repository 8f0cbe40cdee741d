"""An OpenAI-compatible endpoint as a :class:`~.base.LanguageModel`, observed.

A shared endpoint is an instrument the evaluator does not control: the weights behind a name,
the batching and the sampling can change between two requests. So every exchange keeps what the
server said about itself -- its raw JSON response, its ``system_fingerprint``, when the request
left and when the answer came back (in-flight overlap), and how many retries it took -- and the
grid logs all of it beside the response (``gridrun``).

Generation: ``/v1/completions`` with the exact prompt string rendered locally by the
configured tokenizer's chat template (the server applies none), or ``/v1/chat/completions`` with
the messages (the server applies its own). Loglikelihoods of given continuations are not part of
either API as OpenAI serves it today; servers that keep the legacy ``echo`` + ``logprobs`` of
completions (vLLM, llama-cpp-python) return the prompt's own token logprobs, from which
:func:`echoed_loglikelihood` reads a candidate's. A model whose endpoint says ``echo_logprobs``
is scored that way (checked with one request when it is opened); the grid refuses loglikelihood
scoring on any other endpoint when it plans.

The API key is read from the environment variable the config names, sent as a bearer header,
and never written anywhere: not in the log, records, cards, reports or error messages.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..config import EndpointSpec, ModelSpec
from ..errors import ConfigError
from .base import ModelInfo

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth asking again (overload, timeouts, transient server faults)."""


def _utc() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Exchange:
    """One request to the endpoint and what came back."""

    text: str
    """The generated text (the grid's response)."""
    raw: dict[str, Any]
    """The server's JSON response, as received."""
    retries: int
    """Attempts that failed before this one succeeded."""
    system_fingerprint: str | None
    """What the server says identifies its backend configuration (None: it says nothing)."""
    sent_utc: str
    received_utc: str
    server: str
    """The API base that answered (one of the pool's)."""

    def observed(self) -> dict[str, Any]:
        """What the log keeps about the exchange besides the response."""
        return {"raw": self.raw, "system_fingerprint": self.system_fingerprint, "sent_utc": self.sent_utc,
                "received_utc": self.received_utc, "server": self.server}


class MessagesFormatter:
    """For ``api: chat``: a prompt is the messages themselves (canonical JSON), which is exactly
    what is sent; the server applies its chat template."""

    chat = True
    template: str | None = None

    def context_for(self, messages: Sequence[dict[str, str]], text: str) -> str:
        return json.dumps(list(messages), ensure_ascii=False, sort_keys=True)


ECHO_PROBE = ("Count from one to ten.", "one, two,", " three")
"""What the open check sends to an ``echo_logprobs`` endpoint, in the grid's prompt form (the
user's message, the answer so far, the continuation scored): a continuation the model goes on
from, so that the generated token shows whether the echo is aligned (not logged)."""


def echoed_loglikelihood(raw: dict[str, Any], context: str, continuation: str) -> tuple[float, bool]:
    """(sum of the continuation's token logprobs, whether each of its tokens is the top one) from a
    completions answer to ``prompt = context + continuation`` with ``echo``, ``logprobs: 1`` and
    ``max_tokens: 1``.

    Which echoed tokens are the continuation's, in order:

    1. the answer's text must begin with the prompt (an echo), and the prompt's tokens are the
       echo's first ``len(tokens) - usage.completion_tokens``; where the server generated visible
       text, the remaining tokens must read as that text: llama-cpp-python shifts every echoed
       logprob by one token and drops the generated one when the prompt does not begin with the
       BOS token, and this is where that shows (a generated EOS, listed by vLLM as its token but
       absent from the text, leaves nothing to compare);
    2. the continuation owns the prompt's last tokens whose text, joined, is exactly the prompt's
       text after ``context.rstrip()`` -- the core's split (``ChatFormatter.encode_pair`` moves a
       context's trailing spaces to the continuation, as lm-eval does), by the server's own
       tokenizer, so no local tokenizer has to agree with it;
    3. a token across that boundary, or a detokenised text that does not join up to it, is an error:
       the server's tokens do not separate the continuation, and no number would be its loglikelihood.

    Greedy: the token's logprob is the largest of its ``top_logprobs`` entry (a ``{token: logprob}``
    holding the position's top token, and on vLLM and llama-cpp-python the prompt's own token too).
    Raises ``ValueError`` naming what is missing or does not add up."""
    prompt_text = context + continuation
    tail = prompt_text[len(context.rstrip()):]
    if not tail:
        raise ValueError("the continuation is empty")
    try:
        choice = raw["choices"][0]
        text, logprobs = choice["text"], choice["logprobs"]
        tokens, token_logprobs, top = list(logprobs["tokens"]), list(logprobs["token_logprobs"]), list(logprobs["top_logprobs"])
        generated = int(raw["usage"]["completion_tokens"])
        assert isinstance(text, str) and all(isinstance(t, str) for t in tokens)
        assert all(entry is None or isinstance(entry, dict) for entry in top)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, AssertionError):
        raise ValueError("the answer has no echoed logprobs in the completions form (choices[0].text, choices[0]."
                         "logprobs.tokens / token_logprobs / top_logprobs as {token: logprob}, usage."
                         "completion_tokens)") from None
    if not (len(tokens) == len(token_logprobs) == len(top)) or not 0 <= generated <= len(tokens):
        raise ValueError(f"the echoed logprobs do not add up ({len(tokens)} tokens, {len(token_logprobs)} logprobs, "
                         f"{len(top)} top entries, {generated} generated)")
    if not text.startswith(prompt_text):
        raise ValueError("the answer's text does not begin with the prompt (the server did not echo it)")
    prompt = len(tokens) - generated
    after = text[len(prompt_text):]
    if after and "".join(tokens[prompt:]) != after:
        raise ValueError(f"the echo's last {generated} token(s) {tokens[prompt:]!r} are not the generated text "
                         f"{after!r}: its logprobs are not aligned with its tokens")
    joined, first = "", prompt
    while first > 0 and len(joined) < len(tail):
        first -= 1
        joined = tokens[first] + joined
    if joined != tail:
        raise ValueError(f"the server's tokens do not separate the continuation {tail!r} from its context (its last "
                         f"prompt tokens read {joined[-80:]!r})")
    owned = range(first, prompt)
    if any(token_logprobs[i] is None or not top[i] for i in owned):
        raise ValueError("the server gave no logprob for a token of the continuation (an empty context?)")
    try:
        total = float(sum(float(token_logprobs[i]) for i in owned))
        greedy = all(float(token_logprobs[i]) >= max(float(v) for v in top[i].values()) for i in owned)
    except (TypeError, ValueError):
        raise ValueError("the echoed logprobs are not numbers") from None
    return total, bool(greedy)


class Rejected(ConfigError):
    """The server answered a request with a non-retryable HTTP error (it refuses what was asked)."""


def formatter_for(spec: ModelSpec) -> Any:
    """What renders a cell's exact prompt strings for this model: its tokenizer's chat template,
    or, for a chat endpoint, the messages as sent."""
    if spec.endpoint is not None and spec.endpoint.api == "chat":
        return MessagesFormatter()
    from .hf import ChatFormatter

    return ChatFormatter(spec)


def max_in_flight(intervals: Sequence[tuple[str, str]]) -> int:
    """The most requests that were in flight at one moment, from (sent, received) UTC times."""
    events = sorted([(sent, 1) for sent, _ in intervals] + [(received, -1) for _, received in intervals])
    most = current = 0
    for _, step in events:  # at equal times an answer (-1) sorts before a send (+1): not an overlap
        current += step
        most = max(most, current)
    return most


class EndpointLanguageModel:
    """Generation, and loglikelihoods where the server echoes them, through an OpenAI-compatible
    server (see the module docstring)."""

    def __init__(self, spec: ModelSpec) -> None:
        import httpx

        assert spec.endpoint is not None
        self.spec = spec
        self.endpoint: EndpointSpec = spec.endpoint
        self.formatter = formatter_for(spec)
        self.chat = self.formatter.chat
        self._secret: str | None = None
        headers = {}
        if self.endpoint.api_key_env:
            self._secret = os.environ.get(self.endpoint.api_key_env) or None
            if self._secret is None:
                raise ConfigError(f"environment variable {self.endpoint.api_key_env} (the API key for "
                                  f"{self.endpoint.url}) is not set", f"export {self.endpoint.api_key_env}=<key> first")
            if not (self._secret.isascii() and self._secret.isprintable()) or any(c.isspace() for c in self._secret):
                # (the key itself is never echoed, not even the offending character)
                raise ConfigError(f"environment variable {self.endpoint.api_key_env} holds a value that cannot be "
                                  "sent as an API key (whitespace or non-ASCII characters)",
                                  f"set {self.endpoint.api_key_env} to the bare key")
            headers["Authorization"] = f"Bearer {self._secret}"
        # httpx.Client is thread-safe; its pool holds a connection per request in flight.
        self._client = httpx.Client(timeout=self.endpoint.timeout_s, headers=headers, limits=httpx.Limits(
            max_connections=self.endpoint.concurrency * len(self.endpoint.servers)))
        self._slots = {server: threading.BoundedSemaphore(self.endpoint.concurrency) for server in self.endpoint.servers}
        self._check()
        template = self.formatter.template
        self.info = ModelInfo(
            name_or_path=spec.name_or_path, resolved_path=self.endpoint.url, weights_path=self.endpoint.url,
            quantization="server", dtype="server", chat=self.chat,
            chat_template_sha256=hashlib.sha256(template.encode()).hexdigest() if (template and self.chat) else None,
            source_sha256=None,
            runtime={"endpoint": self.endpoint.url, "served_model": self.endpoint.model, "api": self.endpoint.api,
                     "identity": self.endpoint.identity} | ({"mirrors": list(self.endpoint.mirrors)} if self.endpoint.mirrors
                                                          else {}))

    # ---- the wire ------------------------------------------------------------------------------
    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def _check(self) -> None:
        """Every server of the pool answers and serves the configured model (one clear error otherwise)."""
        import httpx

        for server in self.endpoint.servers:
            try:
                reply = self._client.get(f"{server.rstrip('/')}/models")
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise ConfigError(f"endpoint {server} is not reachable ({type(exc).__name__})",
                                  "start the server or correct endpoint.url / endpoint.mirrors") from None
            if reply.status_code in (401, 403):
                raise ConfigError(f"endpoint {server} refused the credentials (HTTP {reply.status_code})",
                                  f"check the key in {self.endpoint.api_key_env or 'an environment variable'} "
                                  "(name it with endpoint.api_key_env)")
            if reply.status_code == 200:
                try:
                    served = [m.get("id") for m in reply.json().get("data", [])]
                except (ValueError, AttributeError):
                    served = []
                # A server that loads models on demand may list none, or others: only a non-empty
                # list without the configured name is a clear mismatch.
                if served and self.endpoint.model not in served:
                    raise ConfigError(f"endpoint {server} does not serve model {self.endpoint.model!r} "
                                      f"(it lists {', '.join(map(str, served[:5]))})", "correct endpoint.model")
        if self.endpoint.echo_logprobs:
            self._check_echo()

    def _check_echo(self) -> None:
        """Each server of the pool answers a completions request with echoed prompt logprobs that
        :func:`echoed_loglikelihood` can read, and top logprobs that name other tokens than the
        prompt's (else greedy could not be told); one request each, not logged."""
        message, answer, continuation = ECHO_PROBE
        context = self.context_for([{"role": "user", "content": message}], message + "\n") + answer
        for index, server in enumerate(self.endpoint.servers):
            try:
                exchange = self._post(self._loglikelihood_body(context, continuation), index)
                echoed_loglikelihood(exchange.raw, context, continuation)
                logprobs = exchange.raw["choices"][0]["logprobs"]
                if not any(entry and set(entry) - {token} for token, entry in zip(logprobs["tokens"],
                                                                                  logprobs["top_logprobs"])):
                    raise ValueError("its top_logprobs name only the prompt's own tokens")
            except (ValueError, Rejected) as exc:
                reason = exc.what if isinstance(exc, Rejected) else str(exc)
                raise ConfigError(f"endpoint {server} does not return echoed prompt logprobs ({reason})",
                                  "set echo_logprobs: false for this model and exclude its loglikelihood scorings "
                                  "(logprob, symmetric), or serve it with vLLM or llama-cpp-python") from None

    def _body(self, context: str, temperature: float, max_new_tokens: int, seed: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.endpoint.model, "max_tokens": max_new_tokens,
                                "temperature": temperature, "top_p": 1.0, "stream": False}
        if self.endpoint.api == "chat":
            body["messages"] = json.loads(context)
        else:
            body["prompt"] = context
        if seed is not None:
            body["seed"] = seed
        return body

    def _loglikelihood_body(self, context: str, continuation: str) -> dict[str, Any]:
        """The context and the continuation as one prompt, echoed with each token's logprob and the
        top one's; one greedy token is generated because some servers read ``max_tokens: 0`` as
        "no limit" (llama-cpp-python)."""
        return {"model": self.endpoint.model, "prompt": context + continuation, "max_tokens": 1, "temperature": 0.0,
                "top_p": 1.0, "stream": False, "echo": True, "logprobs": 1}

    def _post(self, body: dict[str, Any], first: int = 0) -> Exchange:
        """One request, to server ``first`` of the pool; each retry goes to the next server."""
        import httpx

        path = "/chat/completions" if self.endpoint.api == "chat" else "/completions"
        servers = self.endpoint.servers
        failures: list[str] = []
        for attempt in range(self.endpoint.max_retries + 1):
            if attempt:
                time.sleep(min(0.5 * 2 ** (attempt - 1), 10.0))
            server = servers[(first + attempt) % len(servers)]
            url = server.rstrip("/") + path
            with self._slots[server]:  # at most `concurrency` in flight per server
                sent = _utc()
                try:
                    reply = self._client.post(url, json=body)
                except (httpx.HTTPError, httpx.InvalidURL) as exc:
                    failures.append(f"{server}: {type(exc).__name__}")
                    continue
                received = _utc()
            if reply.status_code in RETRYABLE_STATUS:
                failures.append(f"{server}: HTTP {reply.status_code}")
                continue
            # Masked before anything is cut or kept: a server that echoes the key never puts it in the log.
            answer = self._scrub(reply.text)
            if reply.status_code != 200:
                detail = " ".join(answer.split())[:300]
                raise Rejected(f"endpoint {url} rejected the request (HTTP {reply.status_code}: {detail})",
                                  "check endpoint.model and endpoint.api against what the server offers")
            try:
                raw = json.loads(answer)
                choice = raw["choices"][0]
                text = choice["message"]["content"] if self.endpoint.api == "chat" else choice["text"]
                # A provider's refusal (content filter) answers no text: a measurement (unparsed),
                # with the reason kept in the raw answer, not an error that would stop the grid.
                text = "" if text is None else text
                assert isinstance(text, str)
            except (ValueError, KeyError, IndexError, TypeError, AssertionError):
                raise ConfigError(f"endpoint {url} answered with no {self.endpoint.api} text ({answer[:200]!r})",
                                  "point endpoint.url at an OpenAI-compatible API base (ending in /v1)") from None
            return Exchange(text=text, raw=raw, retries=attempt, system_fingerprint=raw.get("system_fingerprint") or None,
                            sent_utc=sent, received_utc=received, server=server)
        raise ConfigError(f"endpoint {self.endpoint.url} failed {len(failures)} times ({'; '.join(failures)})",
                          "check the server and run the same command again: the run resumes from its log "
                          "(timeout_s and max_retries are part of the plan: changing them starts a new one)")

    # ---- the LanguageModel protocol -------------------------------------------------------------
    def context_for(self, messages: Sequence[dict[str, str]], text: str) -> str:
        return self.formatter.context_for(messages, text)

    def exchange(self, contexts: Sequence[str], *, temperature: float | Sequence[float], max_new_tokens: int,
                 seed: int | None | Sequence[int | None] = None) -> list[Exchange]:
        """Each context sent once, to the pool's server its request body hashes to (which server
        answers a request is fixed by the request, not by timing or by where a resume began), up
        to ``concurrency`` in flight per server; answers in the contexts' order."""
        temperatures = [temperature] * len(contexts) if isinstance(temperature, (int, float)) else list(temperature)
        seeds = list(seed) if isinstance(seed, Sequence) else [seed] * len(contexts)
        return self._send([self._body(c, t, max_new_tokens, s)
                           for c, t, s in zip(contexts, temperatures, seeds, strict=True)])

    def exchange_loglikelihood(self, requests: Sequence[tuple[str, str]]) -> list[tuple[tuple[float, bool], Exchange]]:
        """Each (context, continuation) scored by the server's echo (as :meth:`exchange` sends them):
        ((loglikelihood, greedy), the exchange) in the requests' order."""
        if not self.endpoint.echo_logprobs:
            raise ConfigError(f"endpoint {self.endpoint.url} cannot score given continuations unless it echoes prompt "
                              "logprobs", "set echo_logprobs: true for a vLLM or llama-cpp-python server, or use "
                              "scoring regex with this endpoint")
        exchanges = self._send([self._loglikelihood_body(c, k) for c, k in requests])
        scored = []
        for (context, continuation), exchange in zip(requests, exchanges):
            try:
                scored.append((echoed_loglikelihood(exchange.raw, context, continuation), exchange))
            except ValueError as exc:
                raise ConfigError(f"endpoint {exchange.server}: cannot read the loglikelihood of {continuation!r} "
                                  f"({exc})", "exclude loglikelihood scorings for this model (or report the "
                                  "server's echo format to us)") from None
        return scored

    def _send(self, bodies: list[dict[str, Any]]) -> list[Exchange]:
        servers = len(self.endpoint.servers)
        first = [int(hashlib.sha256(json.dumps(b, sort_keys=True).encode()).hexdigest()[:8], 16) % servers
                 for b in bodies]
        workers = min(len(bodies), self.endpoint.concurrency * servers)
        if workers == 1:
            return [self._post(b, f) for b, f in zip(bodies, first)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self._post, bodies, first))

    def generate(self, contexts: Sequence[str], *, temperature: float, max_new_tokens: int, batch_size: int,
                 progress: Callable[[int], None] | None = None) -> list[str]:
        texts = []
        for start in range(0, len(contexts), batch_size):
            texts += [e.text for e in self.exchange(contexts[start:start + batch_size], temperature=temperature,
                                                    max_new_tokens=max_new_tokens)]
            if progress is not None:
                progress(min(batch_size, len(contexts) - start))
        return texts

    def loglikelihood(self, requests: Sequence[tuple[str, str]], *, batch_size: int,
                      progress: Callable[[int], None] | None = None) -> list[tuple[float, bool]]:
        results: list[tuple[float, bool]] = []
        for start in range(0, len(requests), batch_size):
            results += [scored for scored, _ in self.exchange_loglikelihood(requests[start:start + batch_size])]
            if progress is not None:
                progress(min(batch_size, len(requests) - start))
        return results

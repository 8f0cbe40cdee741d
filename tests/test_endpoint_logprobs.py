"""Loglikelihood scoring on an endpoint that echoes prompt logprobs: llama-cpp-python's
OpenAI-compatible server with the embedded GGUF, started on loopback for this module (built by
``scripts/setup.sh --tests`` into ``.venv-llama``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_endpoint import _free_port, _main, events, serving

from safetyrepro.adapters.errors import ConfigError
from safetyrepro.adapters.grid import build_grid, plan
from safetyrepro.adapters.gridexec import request_pair
from safetyrepro.adapters.gridplan import ModelRequest
from safetyrepro.adapters.models.endpoint import echoed_loglikelihood

SERVER_PYTHON = Path(__file__).resolve().parents[1] / ".venv-llama" / "bin" / "python"
SERVED = "smollm2-gguf"


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory):
    from safetyrepro.adapters.models.embedded import gguf_path

    if not SERVER_PYTHON.is_file():
        pytest.fail(f"{SERVER_PYTHON} is missing: run `bash scripts/setup.sh --tests` (it builds llama-cpp-python's "
                    "server, the endpoint these tests score on)")
    port = _free_port()
    command = [str(SERVER_PYTHON), "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", SERVED,
               "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--n_ctx", "4096", "--verbose", "false"]
    with serving("llama_cpp.server", command, f"http://127.0.0.1:{port}/v1/models",
                 tmp_path_factory.mktemp("llama") / "server.log", 120):
        yield {"url": f"http://127.0.0.1:{port}/v1", "model": SERVED}


def grid_doc(llama: dict) -> dict:
    return {"models": [{"name": "gguf", "endpoint": {"url": llama["url"], "model": llama["model"],
                                                     "echo_logprobs": True, "identity": "L2"}}],
            # XSTest: short prompts, two candidates -- this server reads each echoed token's logprobs
            # in Python over the whole vocabulary (about 50 ms a token here)
            "benchmarks": ["xstest"], "templates": ["minimal", "cot"], "scorings": ["logprob", "symmetric"],
            "exclusions": [{"template": "cot", "scoring": "symmetric"}], "fewshots": [0], "decodings": ["greedy"],
            "limit": 1, "batch_size": 4, "seed": 5, "max_new_tokens": 12, "n_resamples": 20,
            "gates": {"repeat": None, "replay": {"share": 0.1}}}


@pytest.fixture(scope="module")
def run(llama: dict, tmp_path_factory: pytest.TempPathFactory):
    """A grid of direct, symmetric and cot x logprob cells on the server, then its replay gate
    with two requests in flight."""
    folder = tmp_path_factory.mktemp("echo")
    (folder / "grid.yaml").write_text(yaml.safe_dump(grid_doc(llama)))
    outputs = [_main(["grid", str(folder / "grid.yaml"), "--out", str(folder / "run")]),
               _main(["gate", str(folder / "run"), "--replay", "--concurrency", "2"])]
    return folder / "run", outputs


def test_loglikelihood_cells_run_on_the_endpoint_and_agree_with_the_local_weights(run, lm) -> None:
    folder, outputs = run
    assert outputs[0][0] == 0, outputs[0][1]
    assert _main(["verify", str(folder)])[0] == 0
    bodies = events(folder)
    scored = [b for b in bodies if b["request"]["kind"] == "loglikelihood"]
    assert any(b["request"].get("after") for b in scored) and any(not b["request"].get("after") for b in scored)
    responses = {b["request_sha256"]: b["response"] for b in bodies}
    pairs = []
    for body in scored:
        request = ModelRequest(**body["request"])
        context, continuation = request_pair(request, responses)
        raw = body["endpoint"]["raw"]
        # what the log keeps is the server's echo, and the response is what it reads there
        assert raw["choices"][0]["text"].startswith(context + continuation)
        assert body["response"] == list(echoed_loglikelihood(raw, context, continuation))
        pairs.append((context, continuation))
    # The same requests on the local (dequantised fp32) copy of the same GGUF weights: llama.cpp
    # computes with the Q4_1 blocks and 8-bit-quantised activations, so the numbers differ a little
    # (up to 0.25 nats seen here, on a fixed AVX2 build: the same on every CPU that runs it).
    local = lm.loglikelihood(pairs, batch_size=8)
    served = {pair: body["response"][0] for body, pair in zip(scored, pairs)}
    for (ll, _), pair in zip(local, pairs):
        assert abs(served[pair] - ll) <= 0.5, (pair, served[pair], ll)
    # and where the local weights prefer one candidate by more than that noise, so does the server
    by_context: dict[str, dict[str, float]] = {}
    for (ll, _), (context, continuation) in zip(local, pairs):
        by_context.setdefault(context, {})[continuation] = ll
    decided = 0
    for context, lls in by_context.items():
        (best, top), (_, second) = sorted(lls.items(), key=lambda kv: -kv[1])[:2]
        if top - second > 1.0:
            decided += 1
            assert max(lls, key=lambda k: served[(context, k)]) == best, (context[-200:], lls)
    assert decided >= 2
    # the results carry the endpoint's scores like any model's
    import pandas as pd

    cells = pd.read_parquet(folder / "cells.parquet")
    assert set(cells["scoring"]) == {"logprob", "symmetric"} and set(cells["template"]) == {"minimal", "cot"}
    assert cells.loc[cells["metric"] == "accuracy", "value"].notna().all()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["endpoints"]["gguf"]["requests"] == len(bodies)


def test_the_replay_gate_replays_the_echoed_loglikelihoods(run) -> None:
    folder, outputs = run
    code, text = outputs[1]
    gates = json.loads((folder / "gates" / "gates.json").read_text())
    replay = gates["gates"]["replay"]
    replayed = [json.loads(line)["body"] for line in (folder / "gates" / "replay.jsonl").read_text().splitlines()[1:]]
    assert replay["requests"] == len(replayed) and 0 < len(replayed) < len(events(folder))  # share 0.1
    logged = {b["request_sha256"]: b["response"] for b in events(folder)}
    kinds = {b["request_sha256"]: b["request"]["kind"] for b in events(folder)}
    echoed = [b for b in replayed if kinds[b["request_sha256"]] == "loglikelihood"]
    assert echoed and all(b["endpoint"]["raw"]["choices"][0]["logprobs"]["token_logprobs"] for b in echoed)
    recount = sum(b["response"] == logged[b["request_sha256"]] for b in replayed) / len(replayed)
    assert replay["identical_responses"] == pytest.approx(recount)
    assert replay["endpoints"]["gguf"]["concurrency"] == 2
    # One llama.cpp build on one thread computes a prompt the same whatever came before it (its
    # prefix cache) and however many requests wait: the echoed loglikelihoods replay exactly.
    assert all(b["response"] == logged[b["request_sha256"]] for b in echoed)
    assert code == (0 if gates["supported"] else 1), text


def test_an_endpoint_whose_echo_cannot_be_read_is_refused_when_opened(llama: dict) -> None:
    # Without the chat template the prompt does not begin with SmolLM2's BOS token, and
    # llama-cpp-python then shifts every echoed logprob by a token: the open check sees it.
    from safetyrepro.adapters.config import ModelSpec
    from safetyrepro.adapters.models.endpoint import EndpointLanguageModel

    endpoint = {"url": llama["url"], "model": llama["model"], "echo_logprobs": True}
    with pytest.raises(ConfigError) as raised:
        EndpointLanguageModel(ModelSpec(chat=False, endpoint=endpoint))
    assert "does not return echoed prompt logprobs" in str(raised.value) and "not aligned" in str(raised.value)
    assert EndpointLanguageModel(ModelSpec(endpoint=endpoint)).endpoint.echo_logprobs  # templated: aligned


def test_echo_logprobs_is_a_plan_field_that_old_plans_do_not_carry() -> None:
    endpoint = {"url": "http://127.0.0.1:8000/v1", "model": "m"}
    doc = {"models": [{"name": "served", "endpoint": {**endpoint, "identity": "L2"}}], "benchmarks": ["xstest"],
           "templates": ["minimal"], "scorings": ["regex"], "fewshots": [0], "decodings": ["greedy"], "limit": 2}
    # computed by the code before the field existed (commit 034794a: 0d2c5277...), then moved by
    # extraction v3's to v18's deliberate changes of regex cells' hashes (tests/test_hashing.py; v3:
    # 17eec50e..., v4: 2bdd18f3..., v5: efd07c28..., v6: 4a7a23cd..., v7: 9db7120d..., v8: 76f4f97c...,
    # v9: 0d6d725a..., v10: 57dcc347..., v11: bda93ab5..., v12: 08bb4a9a..., v13: 26f863c0..., v14: 21e696a8..., v15: 140a2371..., v16: 46632cee..., v17: 70001597...): off, the plan is the same as without the field
    assert plan(build_grid(doc))["plan_sha256"] == "30e9c8218eceb5542df11cf10ef378fc69cc25c32c54a197d73104ec6619ab0e"
    on = {**doc, "models": [{"name": "served", "endpoint": {**endpoint, "identity": "L2", "echo_logprobs": True}}]}
    assert plan(build_grid(on))["plan_sha256"] != plan(build_grid(doc))["plan_sha256"]
    with pytest.raises(ConfigError, match="echo_logprobs needs api: completions"):
        build_grid({**doc, "models": [{"name": "c", "endpoint": {**endpoint, "api": "chat", "echo_logprobs": True}}]})
    with pytest.raises(ConfigError, match=r"set echo_logprobs: true .* add the exclusion \{model: served, scoring: logprob\}"):
        plan(build_grid({**doc, "scorings": ["logprob"]}))
    plan(build_grid({**on, "scorings": ["logprob", "symmetric"]}))  # with it, the same cells plan


def _answer(tokens: list[str], logprobs: list[float | None], top: list[dict | None], generated: int,
            text: str) -> dict:
    return {"choices": [{"text": text, "logprobs": {"tokens": tokens, "token_logprobs": logprobs,
                                                     "top_logprobs": top}}],
            "usage": {"completion_tokens": generated}}


def test_which_echoed_tokens_a_continuation_owns() -> None:
    context, continuation = "Q: pick\nAnswer:", " B"
    tokens = ["Q", ":", " pick", "\n", "Answer", ":", " B", "\n"]
    logprobs = [None, -1.0, -2.0, -0.5, -0.25, -0.1, -1.5, -0.3]
    top = [None, *({t: lp} for t, lp in zip(tokens[1:], logprobs[1:]))]
    top[6] = {" A": -0.4, " B": -1.5}
    answer = _answer(tokens, logprobs, top, 1, context + continuation + "\n")
    assert echoed_loglikelihood(answer, context, continuation) == (-1.5, False)
    # a context's trailing space belongs to the continuation (the core's split)
    spaced = _answer(["Answer", ":", " B"], [None, -0.1, -0.7], [None, {":": -0.1}, {" B": -0.7}], 0, "Answer: B")
    assert echoed_loglikelihood(spaced, "Answer: ", "B") == (-0.7, True)
    # one token across the boundary: no number is the continuation's
    across = _answer(["Answer", ": B"], [None, -0.7], [None, {": B": -0.7}], 0, "Answer: B")
    with pytest.raises(ValueError, match="do not separate"):
        echoed_loglikelihood(across, "Answer:", " B")
    # the generated token missing from the echo: its logprobs are shifted (llama-cpp-python, no BOS)
    shifted = _answer(tokens[:-1], logprobs[:-1], top[:-1], 1, context + continuation + "\n")
    with pytest.raises(ValueError, match="not aligned"):
        echoed_loglikelihood(shifted, context, continuation)
    # vLLM lists a generated EOS as its token, and leaves it out of the text: nothing to compare
    eos = _answer([*tokens[:-1], "<|im_end|>"], logprobs, top, 1, context + continuation)
    assert echoed_loglikelihood(eos, context, continuation) == (-1.5, False)
    for broken, message in (
            ({"choices": [{"text": "x"}]}, "no echoed logprobs"),
            ({"choices": [{"text": "ab", "logprobs": {"tokens": ["a"]}}], "usage": {}}, "no echoed logprobs"),
            (_answer(["a", "b"], [None], [None, None], 0, "ab"), "do not add up"),
            (_answer(["a", "b"], [None, -1.0], [None, [{"token": "b", "logprob": -1.0}]], 0, "ab"), "no echoed"),
            ({**_answer(["a", "b"], [None, -1.0], [None, {"b": -1.0}], 0, "ab"), "choices": [{"text": "ab", "logprobs": {
                "tokens": ["a", "b"], "token_logprobs": [None, -1.0]}}]}, "no echoed logprobs"),
            (_answer(["a", "b"], [None, -1.0], [None, {"b": -1.0}], 0, "b"), "did not echo"),
            (_answer(["a", "b"], [None, None], [None, None], 0, "ab"), "no logprob for a token")):
        with pytest.raises(ValueError, match=message):
            echoed_loglikelihood(broken, "a", "b")

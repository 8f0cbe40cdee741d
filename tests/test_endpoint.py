"""The shared-endpoint observer against a real OpenAI-compatible server: ``transformers serve``
with the embedded model, started on loopback for this module (completions and chat APIs)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from safetyrepro.adapters.cli import main
from safetyrepro.adapters.errors import ConfigError
from safetyrepro.adapters.grid import build_grid, plan
from safetyrepro.adapters.gridexec import FingerprintWatch, endpoint_observations
from safetyrepro.adapters.models.endpoint import max_in_flight

KEY_ENV = "SAFETYREPRO_TEST_API_KEY"
SECRET = "sk-test-" + secrets.token_hex(16)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    yield from _serve(tmp_path_factory)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory):
    """A second server of the same weights: with ``server``, a pool of two."""
    yield from _serve(tmp_path_factory)


def _serve(tmp_path_factory: pytest.TempPathFactory):
    from safetyrepro.adapters.models.embedded import embedded_model_dir

    model, port = str(embedded_model_dir()), _free_port()
    command = [str(Path(sys.executable).parent / "transformers"), "serve", model, "--host", "127.0.0.1", "--port",
               str(port), "--device", "cpu", "--dtype", "float32"]
    with serving("transformers serve", command, f"http://127.0.0.1:{port}/health",
                 tmp_path_factory.mktemp("serve") / "serve.log", 300):
        yield {"url": f"http://127.0.0.1:{port}/v1", "model": model}


@contextlib.contextmanager
def serving(name: str, command: list[str], ready_url: str, log: Path, timeout_s: int):
    """A server on loopback while the block runs: started, waited for until ``ready_url``
    answers 200 (a test fails naming the server and its log's tail otherwise), then stopped."""
    with open(log, "wb") as sink:
        # one thread per server: servers and the tests share the machine's cores
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                                env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited ({proc.returncode}): {log.read_text()[-2000:]}")
            try:
                if httpx.get(ready_url, timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not come up in {timeout_s} s: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def grid_doc(server: dict) -> dict:
    endpoint = {"url": server["url"], "model": server["model"], "api_key_env": KEY_ENV}
    return {"models": [{"name": "served", "endpoint": {**endpoint, "identity": "L2"}},
                       {"name": "served-chat"}],  # on a pool of servers by --executor endpoints (below)
            "benchmarks": ["toxigen"], "templates": ["minimal"], "scorings": ["regex"], "fewshots": [0],
            "decodings": ["greedy", "t0.7"], "limit": 3, "batch_size": 3, "seed": 11, "max_new_tokens": 8,
            "gates": {"repeat": None, "replay": {}}}


@pytest.fixture(scope="module")
def run(server: dict, mirror: dict, tmp_path_factory: pytest.TempPathFactory):
    """One grid over the endpoint (completions; chat on a pool of two servers), then its replay
    gate at three requests in flight per server (the run sent one at a time), its statistics
    and a card."""
    folder = tmp_path_factory.mktemp("endpoint")
    (folder / "grid.yaml").write_text(yaml.safe_dump(grid_doc(server)))
    (folder / "endpoints.yaml").write_text(yaml.safe_dump({"served-chat": {
        "url": server["url"], "mirrors": [mirror["url"]], "model": server["model"], "api": "chat",
        "api_key_env": KEY_ENV}}))
    os.environ[KEY_ENV] = SECRET
    outputs = []
    try:
        for argv in (["grid", str(folder / "grid.yaml"), "--out", str(folder / "run"), "--executor", "endpoints",
                      "--endpoints", str(folder / "endpoints.yaml")],
                     ["gate", str(folder / "run"), "--replay", "--concurrency", "3"],
                     ["stats", str(folder / "run"), "--n-resamples", "50"]):
            outputs.append(_main(argv))
        cell = sorted((folder / "run" / "cells").iterdir())[0]
        outputs.append(_main(["card", str(cell)]))
    finally:
        del os.environ[KEY_ENV]
    return folder / "run", outputs


def _main(argv: list[str]) -> tuple[int, str]:
    """The CLI in this process; everything it prints, through Python's streams and to the file
    descriptors themselves (libraries that write there directly)."""
    import contextlib
    import io
    import tempfile

    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(1), os.dup(2)
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        sink.seek(0)
        direct = sink.read().decode(errors="replace")
    return code, out.getvalue() + err.getvalue() + direct


def events(folder: Path) -> list[dict]:
    return [json.loads(line)["body"] for line in (folder / "events.jsonl").read_text().splitlines()[1:]]


def test_a_grid_runs_on_the_endpoint_and_logs_what_the_server_said(run, server: dict, mirror: dict) -> None:
    folder, outputs = run
    assert outputs[0][0] == 0, outputs[0][1]
    assert _main(["verify", str(folder)])[0] == 0
    bodies = events(folder)
    served = [b for b in bodies if b["model"]["name"].startswith("served")]
    assert served and all(b["request"]["kind"] == "generate" for b in served)
    for body in served:
        seen = body["endpoint"]
        assert seen["raw"]["choices"] and seen["sent_utc"] <= seen["received_utc"] and body["retries"] == 0
        text = seen["raw"]["choices"][0]["message"]["content"] if body["model"]["name"] == "served-chat" \
            else seen["raw"]["choices"][0]["text"]
        assert text == body["response"]
    # chat: the prompt is the messages as sent; completions: the locally chat-templated string
    chat = next(b for b in served if b["model"]["name"] == "served-chat")
    assert isinstance(json.loads(chat["request"]["context"]), list)
    completions = next(b for b in served if b["model"]["name"] == "served")
    assert completions["request"]["context"].startswith("<|im_start|>")
    # L2: the server runs the weights the local model loads; L0: known by name only
    from safetyrepro.adapters.config import ModelSpec
    from safetyrepro.adapters.identity import weights_sha256
    from safetyrepro.adapters.models.hf import weights_path

    assert completions["model"]["weights_sha256"] == weights_sha256(weights_path(ModelSpec()))
    assert chat["model"]["weights_sha256"].startswith("id:")
    summary = json.loads((folder / "summary.json").read_text())
    for name in ("served", "served-chat"):
        row = summary["endpoints"][name]
        assert row["requests"] == sum(b["model"]["name"] == name for b in bodies)
        assert row["retries"] == 0 and row["identity_held"] is None  # L2 / L0: claims no answer confirms
        assert row["system_fingerprints"] == []  # transformers serve reports none
    assert summary["endpoints"]["served"]["max_in_flight"] == 1
    assert summary["endpoints"]["served-chat"]["max_in_flight"] in (1, 2)  # one at a time per server of the pool
    # the pool: each server answered some of the chat requests, and the log names which
    servers = summary["endpoints"]["served-chat"]["servers"]
    assert set(servers) == {server["url"], mirror["url"]} and sum(servers.values()) == 6
    assert summary["endpoints"]["served"]["servers"] == {server["url"]: 6}
    assert "endpoint served: identity L2 (the local copy's weights hash" in outputs[0][1]


def test_the_replay_gate_runs_against_the_endpoint_with_requests_in_flight(run) -> None:
    folder, outputs = run
    code, text = outputs[1]
    gates = json.loads((folder / "gates" / "gates.json").read_text())
    replay = gates["gates"]["replay"]
    assert replay["endpoints"]["served"]["concurrency"] == 3 == replay["endpoints"]["served-chat"]["concurrency"]
    assert replay["endpoints"]["served"]["run"]["max_in_flight"] == 1
    assert replay["endpoints"]["served"]["replay"]["max_in_flight"] >= 2  # the greedy batch of 3 went together
    replayed = [json.loads(line)["body"] for line in
                (folder / "gates" / "replay.jsonl").read_text().splitlines()[1:]]
    assert replay["requests"] == len(replayed) == len(events(folder))  # share 1: every request again
    logged = {b["request_sha256"]: b["response"] for b in events(folder)}
    recount = sum(b["response"] == logged[b["request_sha256"]] for b in replayed) / len(replayed)
    assert replay["identical_responses"] == pytest.approx(recount)
    assert replay["status"] in ("PASS", "FAIL") and code == (0 if gates["supported"] else 1)
    assert "endpoint served: fingerprints none reported in the run" in text


def test_the_api_key_never_reaches_a_file_or_an_output(run) -> None:
    folder, outputs = run
    assert all(code in (0, 1) for code, _ in outputs), outputs
    assert outputs[2][0] == 0 and outputs[3][0] == 0
    assert not [text for _, text in outputs if SECRET in text]
    written = [p for p in folder.rglob("*") if p.is_file()]
    assert any(p.name == "report.md" for p in written) and any(p.name == "gates.json" for p in written)
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]
    assert KEY_ENV in (folder / "plan.json").read_text()  # the variable's name is the configuration


def test_endpoint_configuration_errors(server: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = grid_doc(server)
    literal = {**doc, "models": [{"name": "x", "endpoint": {**doc["models"][0]["endpoint"], "api_key": SECRET}}]}
    with pytest.raises(ConfigError) as raised:
        build_grid(literal)
    assert "api_key_env" in str(raised.value) and SECRET not in str(raised.value)
    with pytest.raises(ConfigError, match=r"add the exclusion \{model: served, scoring: logprob\}"):
        plan(build_grid({**doc, "scorings": ["regex", "logprob"]}))
    with pytest.raises(ConfigError, match="endpoint.url"):
        build_grid({**doc, "models": [{"name": "x", "endpoint": {"url": "http://user:pw@127.0.0.1/v1", "model": "m"}}]})
    with pytest.raises(ConfigError, match="url is also listed in mirrors"):
        build_grid({**doc, "models": [{"name": "x", "endpoint": {"url": server["url"], "model": "m",
                                                                  "mirrors": [server["url"]]}}]})
    with pytest.raises(ConfigError, match="quantization"):
        build_grid({**doc, "models": [{"name": "x", "quantization": "nf4", "endpoint": {"url": server["url"],
                                                                                          "model": "m"}}]})
    # At run time: the key's variable unset, a model the server does not serve, nothing listening.
    cases = [({**doc["models"][0]["endpoint"]}, f"environment variable {KEY_ENV}"),
             ({"url": server["url"], "model": "no-such-model"}, "does not serve model 'no-such-model'"),
             ({"url": f"http://127.0.0.1:{_free_port()}/v1", "model": "m"}, "is not reachable"),
             ({"url": server["url"], "mirrors": [f"http://127.0.0.1:{_free_port()}/v1"], "model": server["model"]},
              "is not reachable"),
             # transformers serve keeps no echo + logprobs: claiming it is refused when the model is opened
             ({"url": server["url"], "model": server["model"], "echo_logprobs": True},
              "does not return echoed prompt logprobs")]
    monkeypatch.delenv(KEY_ENV, raising=False)
    for n, (endpoint, message) in enumerate(cases):
        one = {**doc, "models": [{"name": "x", "endpoint": endpoint}], "gates": None, "decodings": ["greedy"]}
        (tmp_path / f"g{n}.yaml").write_text(yaml.safe_dump(one))
        code, text = _main(["grid", str(tmp_path / f"g{n}.yaml"), "--out", str(tmp_path / f"r{n}")])
        assert code == 2 and message in text and "Traceback" not in text, text
        assert len([line for line in text.splitlines() if line.startswith("error:")]) == 1
    # --executor endpoints: the file names grid models, and goes with the flag
    (tmp_path / "endpoints.yaml").write_text(yaml.safe_dump({"nobody": {"url": server["url"], "model": "m"}}))
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(doc))
    for extra, message in ((["--executor", "endpoints", "--endpoints", str(tmp_path / "endpoints.yaml")],
                            "names ['nobody']"),
                           (["--executor", "endpoints"], "go together"), (["--executor", "cluster"], "unknown executor"), (["--executor", "ray"], "is an endpoint")):
        code, text = _main(["grid", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "e"), *extra])
        assert code == 2 and message in text and "Traceback" not in text, text


def test_fingerprint_changes_are_events_and_break_an_l1_claim() -> None:
    def body(n: int, fingerprint: str | None, sent: str, received: str) -> dict:
        return {"model": {"name": "api", "runtime": {"identity": "L1", "endpoint": "http://a/v1"}}, "retries": n % 2,
                "endpoint": {"system_fingerprint": fingerprint, "sent_utc": sent, "received_utc": received,
                             "server": "http://a/v1" if n < 3 else "http://b/v1"}}

    watch, bodies = FingerprintWatch(), []
    for n, (fp, sent, received) in enumerate([("fp_a", "t1", "t3"), ("fp_a", "t2", "t4"), (None, "t4", "t5"),
                                              ("fp_b", "t6", "t7"), ("fp_b", "t6", "t8")]):
        bodies.append(body(n, fp, sent, received))
        change = watch.observe("api", bodies[-1])
        if change:
            bodies[-1]["fingerprint_change"] = change
    assert [b.get("fingerprint_change") for b in bodies] == [None, None, None, {"from": "fp_a", "to": "fp_b"}, None]
    row = endpoint_observations(bodies)["api"]
    assert row == {"identity": "L1", "requests": 5, "retries": 2, "system_fingerprints": ["fp_a", "fp_b"],
                   "fingerprint_changes": 1, "servers": {"http://a/v1": 3, "http://b/v1": 2}, "max_in_flight": 2,
                   "identity_held": False}
    assert endpoint_observations(bodies[:3])["api"]["identity_held"] is True
    unverified = [body(0, None, "t1", "t2")]
    assert endpoint_observations(unverified)["api"]["identity_held"] is None
    # an answer at the moment the next request leaves is not an overlap
    assert max_in_flight([("a", "b"), ("b", "c")]) == 1 and max_in_flight([("a", "c"), ("b", "d")]) == 2


class _Scripted:
    """A scripted OpenAI-compatible server on loopback, for what ``transformers serve`` cannot
    show: it checks no key and reports no fingerprint. This one demands the bearer key, answers
    the first completion with HTTP 429, reports fingerprint ``fp_a`` and then ``fp_b``, echoes the
    Authorization header back in one answer (a leaky proxy), and refuses a wrong key with a 401
    whose body carries the key across the error message's cut-off."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.completions = 0
        script = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, payload: dict | str) -> None:
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorised(self) -> bool:
                auth = self.headers.get("Authorization", "")
                if auth != f"Bearer {SECRET}":
                    self._send(401, "x" * 290 + f" bad key {auth}")
                    return False
                return True

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self._authorised():
                    self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self._authorised():
                    return
                script.completions += 1
                n = script.completions
                if n == 1:
                    return self._send(429, {"error": "slow down"})
                text = f"Yes. (echo {self.headers['Authorization']})" if n == 3 else "No."
                self._send(200, {"id": f"c{n}", "object": "text_completion", "model": "scripted",
                                 "system_fingerprint": "fp_a" if n <= 3 else "fp_b",
                                 "choices": [{"index": 0, "text": text, "finish_reason": "stop"}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def test_retries_fingerprint_changes_and_an_echoed_key_on_a_scripted_server(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    script = _Scripted()
    try:
        doc = {"models": [{"name": "api", "endpoint": {"url": script.url, "model": "scripted", "identity": "L1",
                                                       "api_key_env": KEY_ENV}}],
               "benchmarks": ["toxigen"], "templates": ["minimal"], "scorings": ["regex"], "fewshots": [0],
               "decodings": ["greedy"], "limit": 4, "batch_size": 4, "n_resamples": 0}
        (tmp_path / "grid.yaml").write_text(yaml.safe_dump(doc))
        monkeypatch.setenv(KEY_ENV, SECRET)
        code, text = _main(["grid", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "run")])
        assert code == 0, text
        bodies = events(tmp_path / "run")
        assert sum(b["retries"] for b in bodies) == 1  # the 429, asked again
        assert [b["endpoint"]["system_fingerprint"] for b in bodies].count("fp_b") >= 1
        changes = [b["fingerprint_change"] for b in bodies if "fingerprint_change" in b]
        assert changes == [{"from": "fp_a", "to": "fp_b"}]
        summary = json.loads((tmp_path / "run" / "summary.json").read_text())["endpoints"]["api"]
        assert summary["identity_held"] is False and summary["fingerprint_changes"] == 1
        assert "BROKEN (the fingerprint changed)" in text and "changed from fp_a to fp_b" in text
        echoed = [b for b in bodies if "echo" in b["response"]]
        assert echoed and "Bearer ***" in echoed[0]["response"]  # masked before it was logged
        written = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
        assert not [p for p in written if SECRET.encode() in p.read_bytes()] and SECRET not in text
        # A wrong key: one line, and not even the part of the key the server echoed is shown.
        monkeypatch.setenv(KEY_ENV, "sk-wrong-" + secrets.token_hex(8))
        code, text = _main(["grid", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "other")])
        assert code == 2 and "refused the credentials (HTTP 401)" in text, text
        monkeypatch.setenv(KEY_ENV, SECRET + " ")
        code, text = _main(["grid", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "other")])
        assert code == 2 and "cannot be sent as an API key" in text and SECRET[8:] not in text, text
    finally:
        script.httpd.shutdown()

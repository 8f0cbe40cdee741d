"""The grid on a real local Ray cluster: shards merged in plan order give a local run's results,
a worker killed mid-shard is retried with one copy of each request, and bad options are one line."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from cli_in_process import cli
from grid_files import results

from safetyrepro.adapters.gridlayout import EVENTS, MANIFEST
from safetyrepro.adapters.gridverify import verify

if importlib.util.find_spec("ray") is None:  # (found, not imported: the local fixture checks it stays out)
    pytest.skip("the Ray executor is tested where the [ray] extra is installed (scripts/setup.sh)",
                allow_module_level=True)

# Two models (so shards split by model), cot x logprob (a shard continues another's generation),
# sampled generations (seeded per request), and the default repeat gate's second asking.
GRID = {"models": [{"name": "a"}, {"name": "b", "dtype": "bfloat16"}], "benchmarks": ["toxigen"],
        "templates": ["minimal", "cot"], "scorings": ["logprob", "regex"], "fewshots": [0],
        "decodings": ["greedy", "t0.7"], "limit": 2, "max_new_tokens": 8, "batch_size": 3}


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same plan run in this process at one torch thread (a Ray task's default)."""
    root = tmp_path_factory.mktemp("local")
    (root / "grid.yaml").write_text(yaml.safe_dump(GRID))
    done = cli("grid", "grid.yaml", "--out", "run", "--threads", "1", cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ray" not in sys.modules, "the local executor imported Ray"
    return root / "run"


def _entries(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / EVENTS).read_text().splitlines()[1:]]


def _prefix_of(local: Path, target: Path, keep: int) -> None:
    """``target``: the local run stopped after ``keep`` logged requests (its results not written)."""
    target.mkdir()
    shutil.copy(local / "plan.json", target / "plan.json")
    lines = (local / EVENTS).read_bytes().splitlines(keepends=True)
    (target / EVENTS).write_bytes(b"".join(lines[: keep + 1]))


def test_shards_cover_the_remaining_batches_once_in_plan_order(local: Path, tmp_path: Path) -> None:
    from safetyrepro.adapters.grid import build_grid
    from safetyrepro.adapters.gridray import plan_shards
    from safetyrepro.adapters.gridrun import open_run

    _prefix_of(local, tmp_path / "run", 7)
    run = open_run(build_grid(GRID), tmp_path / "run", notify=lambda _: None)
    assert not isinstance(run, dict) and 0 < run.done == run.prepared.keep(7) <= 7  # whole batches kept
    shards = plan_shards(run, slots=2, threads=1)
    assert [k for s in shards for k in s.keys] == run.prepared.keys[run.done:]
    batches = set(run.prepared.batches)
    owner = {}
    for shard in shards:
        start = run.prepared.keys.index(shard.keys[0])
        assert {(start + a, start + b) for a, b in shard.batches} <= batches
        assert {r.model for r in shard.requests} == {shard.model.name}
        for request in shard.requests:
            if request.after is not None and request.after not in shard.keys:
                assert request.after in shard.known or owner[request.after] in shard.needs
        assert all(n < shard.index for n in shard.needs)
        owner.update((k, shard.index) for k in shard.keys)
    assert len({s.model.name for s in shards}) == 2 and len(shards) > 2
    # A decode group is never cut (its batches left stay in one shard, even where every other
    # batch is a shard of its own), and each of its batches carries the whole group's requests.
    prepared = run.prepared
    assert prepared.decode_groups, "the cot x logprob cells' generations form decode groups"
    for slots in (2, 50):
        shards = plan_shards(run, slots=slots, threads=1)
        where = {}
        for shard in shards:
            start = prepared.keys.index(shard.keys[0])
            for i, (a, b) in enumerate(shard.batches):
                n = prepared.batches.index((start + a, start + b))
                where[n] = shard.index
                together = shard.together.get(i)
                if together is None:
                    assert len(prepared.computed_with(n)) == b - a
                else:
                    assert [r.key for r in together] == prepared.computed_with(n)
        for group in prepared.decode_groups:
            assert len({where[n] for n in group if n in where}) <= 1, (slots, group)
    assert len(shards) > len(prepared.decode_groups) + 2, "at 50 slots the other batches are cut apart"


def test_a_ray_run_with_a_worker_killed_mid_shard_equals_the_local_run(local: Path, tmp_path: Path) -> None:
    """Resumed from a log prefix, on a local Ray cluster of two workers; one worker is SIGKILLed
    after its shard's first batch. Ray retries the shard, the retry keeps that batch from its
    segment, and the merged log holds each request once: results byte-identical, verify clean."""
    _prefix_of(local, tmp_path / "run", 7)
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(GRID))
    started = time.time()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "SAFETYREPRO_TEST_PAUSE_AT": "shard-1-after-batch-1", "SAFETYREPRO_TEST_PAUSE_SECONDS": "300",
           # Without --address the run starts its own cluster, whatever RAY_ADDRESS names.
           "RAY_ADDRESS": "127.0.0.1:9", "HF_TOKEN": "hf_not_forwarded"}
    proc = subprocess.Popen([sys.executable, "-m", "safetyrepro.adapters.cli", "grid", "grid.yaml", "--out", "run",
                             "--executor", "ray", "--workers", "2"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marker = tmp_path / ".paused-shard-1-after-batch-1"
    deadline = time.time() + 400
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert marker.exists(), "the shard never reached its pause point"
    worker = int(marker.read_text())
    assert worker != proc.pid
    os.kill(worker, signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    resumed = re.search(r"resuming: (\d+) of", err)
    assert resumed and 0 < int(resumed.group(1)) <= 7
    retried = re.search(r"shard 1 was retried after its worker was lost: the retry kept (\d+) of (\d+) requests", err)
    assert retried and 0 < int(retried.group(1)) < int(retried.group(2)), err[-6000:]
    assert results(tmp_path / "run") == results(local)
    assert verify(tmp_path / "run") == []
    ours, theirs = _entries(tmp_path / "run"), _entries(local)
    assert [e["key"] for e in ours] == [e["key"] for e in theirs]  # each request once, in plan order
    assert [e["body"]["response_sha256"] for e in ours] == [e["body"]["response_sha256"] for e in theirs]
    assert {e["body"]["threads"] for e in ours} == {1}
    assert (tmp_path / "run" / MANIFEST).is_file()
    segments = Path(tempfile.gettempdir()) / "safetyrepro-segments"
    assert not [p for p in segments.glob("*.jsonl") if p.stat().st_mtime >= started], "a segment was left behind"


@pytest.mark.parametrize(("args", "message"), [
    (["--workers", "2"], "--address and --workers are options of the Ray executor"),
    (["--executor", "ray", "--address", "auto", "--workers", "2"], "--workers sizes a local Ray cluster"),
    (["--executor", "ray", "--threads", "0"], "--threads"),
    (["--executor", "ray", "--address", "127.0.0.1:9"], "nothing answers at the Ray address 127.0.0.1:9"),
])
def test_bad_ray_options_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(GRID | {"models": [{"name": "a"}], "templates": ["minimal"]}))
    done = cli("grid", "grid.yaml", "--out", "run", *args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_an_endpoint_model_is_refused_on_ray(tmp_path: Path) -> None:
    grid = GRID | {"models": [{"name": "served", "endpoint": {"url": "http://127.0.0.1:9/v1", "model": "x"}}],
                   "templates": ["minimal"], "scorings": ["regex"]}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    done = cli("grid", "grid.yaml", "--out", "run", "--executor", "ray", cwd=tmp_path)
    assert done.returncode == 2 and "is an endpoint" in done.stderr and "--executor endpoints" in done.stderr
    assert not (tmp_path / "run").exists()  # refused before anything was planned or written


def test_tasks_get_the_drivers_settings_but_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    from safetyrepro.adapters.gridray import _forwarded_env

    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("SAFETYREPRO_API_KEY", "sk-secret")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    forwarded = _forwarded_env()
    assert forwarded["HF_HUB_OFFLINE"] == "1" and "SAFETYREPRO_DATA_DIR" in forwarded
    assert "HF_TOKEN" not in forwarded and "SAFETYREPRO_API_KEY" not in forwarded

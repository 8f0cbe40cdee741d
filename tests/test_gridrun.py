"""The grid runner on the real model: its request log, resume after SIGKILL, and verify."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from cli_in_process import cli
from grid_files import results

from safetyrepro.adapters import build_config, run
from safetyrepro.adapters.gridverify import verify

GRID = {"models": [{"name": "embedded"}], "benchmarks": ["toxigen"], "templates": ["minimal", "cot"],
        "scorings": ["logprob", "regex"], "fewshots": [0], "decodings": ["greedy", "t0.7"], "limit": 3,
        "max_new_tokens": 12, "batch_size": 4}


def grid_cli(*args: str, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen([sys.executable, "-m", "safetyrepro.adapters.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("grid")
    (root / "grid.yaml").write_text(yaml.safe_dump(GRID))
    proc = grid_cli("grid", "grid.yaml", "--out", "g1", cwd=root)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    return root / "g1"


def test_log_holds_every_unique_request_once(uninterrupted: Path) -> None:
    lines = (uninterrupted / "events.jsonl").read_text().splitlines()
    header, entries = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    summary = json.loads((uninterrupted / "summary.json").read_text())
    assert header["header"]["format"] == "safetyrepro-journal/1"
    assert len(entries) == summary["requests"] < summary["requests_asked_by_cells"]  # shared requests run once
    keys = [e["key"] for e in entries]
    assert len(set(keys)) == len(keys)
    body = entries[0]["body"]
    assert {"request", "request_sha256", "response", "response_sha256", "utc", "model", "versions", "retries"} <= set(body)
    assert len(body["model"]["weights_sha256"]) == 64 and body["retries"] == 0
    sampled = [e["body"]["request"] for e in entries if e["body"]["request"].get("temperature", 0) > 0]
    assert sampled and all("seed" in r for r in sampled)
    table = pd.read_parquet(uninterrupted / "cells.parquet")
    assert set(table["cell_id"]) == {p.name for p in (uninterrupted / "cells").iterdir()}
    assert {"model", "benchmark", "template", "scoring", "fewshot", "decoding", "metric", "value"} <= set(table.columns)


def test_greedy_cells_agree_with_the_reference_runner(tmp_path: Path, lm) -> None:
    """One request at a time on both sides (batch_size 1): the same tensor shapes, so the same
    numbers (batched, padding moves fp32 loglikelihoods by ~1e-5 and could flip a near-tied greedy
    token; see docs/scoring.md)."""
    from safetyrepro.adapters.grid import build_grid
    from safetyrepro.adapters.gridrun import run_grid

    grid = build_grid({**GRID, "decodings": ["greedy"], "batch_size": 1})
    run_grid(grid, tmp_path / "g", notify=lambda message: None, show_progress=False)
    plan = json.loads((tmp_path / "g" / "plan.json").read_text())
    for cell in plan["cells"]:
        config = build_config({**cell["config"], "n_resamples": 0})
        reference = {r.item_id: r for r in run(config, show_progress=False).records}
        for line in (tmp_path / "g" / "cells" / cell["cell_id"] / "records.jsonl").read_text().splitlines():
            record = json.loads(line)
            ref = reference[record["item_id"]]
            assert record["prompt"] == ref.prompt and record["raw_output"] == ref.raw_output
            assert record["prediction"] == ref.prediction, cell["cell_id"]
            if ref.loglikelihoods is not None:
                assert max(abs(a - b) for a, b in zip(record["loglikelihoods"], ref.loglikelihoods)) < 1e-4


def _logged(folder: Path) -> int:
    path = folder / "events.jsonl"
    return max(path.read_bytes().count(b"\n") - 1, 0) if path.exists() else 0


def test_kill_at_random_points_then_resume_is_byte_identical(uninterrupted: Path, tmp_path: Path) -> None:
    """SIGKILL after a random number of logged requests, five times, then a torn last line; the
    resumed run's results are byte-identical to the uninterrupted run's."""
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(GRID))
    total = json.loads((uninterrupted / "summary.json").read_text())["requests"]
    points = sorted(random.Random(20261201).sample(range(1, total - 1), 5))
    for point in points:
        proc = grid_cli("grid", "grid.yaml", "--out", "g2", cwd=tmp_path)
        deadline = time.time() + 600
        while _logged(tmp_path / "g2") < point and proc.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before the kill point"
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    events = tmp_path / "g2" / "events.jsonl"
    events.write_bytes(events.read_bytes()[:-25])  # a write cut short: a torn last line
    final = grid_cli("grid", "grid.yaml", "--out", "g2", cwd=tmp_path)
    _, err = final.communicate(timeout=900)
    assert final.returncode == 0, err[-3000:]
    assert "cut a torn last entry" in err and "resuming:" in err
    assert results(tmp_path / "g2") == results(uninterrupted)
    assert verify(tmp_path / "g2") == []
    # A finished run is not run again.
    again = cli("grid", "grid.yaml", "--out", "g2", cwd=tmp_path)
    assert again.returncode == 0 and "already complete" in again.stderr


def _tampered(source: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(source, target)
    return target


def _edit_lines(path: Path, change) -> None:  # noqa: ANN001 - a small local helper
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(change(lines)))


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("edit", "does not match its hash (edited)"),
        ("delete", "the chain is broken"),
        ("reorder", "the chain is broken"),
        ("truncate", "(truncated)"),
        ("splice", "the chain is broken"),
        ("append", "is not the plan's request there (foreign)"),
        ("edit-record", "item_id is 'x"),
        ("delete-record", "is missing (deleted)"),
        ("add-file", "is not an artefact of this plan (added)"),
    ],
)
def test_verify_reports_each_kind_of_tampering(uninterrupted: Path, tmp_path: Path, kind: str, message: str) -> None:
    assert verify(uninterrupted) == []
    folder = _tampered(uninterrupted, tmp_path, kind)
    events = folder / "events.jsonl"
    if kind == "edit":
        _edit_lines(events, lambda ls: ls[:3] + [ls[3].replace('"retries":0', '"retries":1')] + ls[4:])
    elif kind == "delete":
        _edit_lines(events, lambda ls: ls[:3] + ls[4:])
    elif kind == "reorder":
        _edit_lines(events, lambda ls: ls[:3] + [ls[4], ls[3]] + ls[5:])
    elif kind == "truncate":
        _edit_lines(events, lambda ls: ls[:-2])
    elif kind == "splice":
        _edit_lines(events, lambda ls: ls[:5] + [ls[2]] + ls[5:])
    elif kind == "append":
        from safetyrepro.adapters.hashing import sha256_json

        last = json.loads(events.read_text().splitlines()[-1])
        forged = {"seq": last["seq"] + 1, "key": "0" * 64, "prev": last["sha256"], "body": {"request": {}}}
        forged["sha256"] = sha256_json(forged)
        with open(events, "a") as handle:
            handle.write(json.dumps(forged) + "\n")
    elif kind == "edit-record":
        record = next((folder / "cells").rglob("records.jsonl"))
        text = record.read_text()
        record.write_text(text.replace('"item_id":"', '"item_id":"x', 1))
        assert record.read_text() != text
    elif kind == "delete-record":
        next((folder / "cells").rglob("summary.json")).unlink()
    elif kind == "add-file":
        (next((folder / "cells").iterdir()) / "notes.json").write_text("{}")
    problems = verify(folder)
    assert problems and any(message in p for p in problems), problems


def _rechain(events: Path, change) -> None:  # noqa: ANN001 - a small local helper
    """Rewrite a log's entries consistently (as another environment would have written them)."""
    from safetyrepro.adapters.hashing import sha256_json

    lines = events.read_text().splitlines()
    prev = json.loads(lines[0])["sha256"]
    out = [lines[0]]
    for line in lines[1:]:
        entry = json.loads(line)
        change(entry["body"])
        entry = {"seq": entry["seq"], "key": entry["key"], "prev": prev, "body": entry["body"]}
        entry["sha256"] = prev = sha256_json(entry)
        out.append(json.dumps(entry, separators=(",", ":")))
    events.write_text("\n".join(out) + "\n")


def test_resume_refuses_a_log_from_other_libraries_and_overwrite_starts_over(uninterrupted: Path,
                                                                             tmp_path: Path) -> None:
    folder = _tampered(uninterrupted, tmp_path, "other-env")
    for name in ("manifest.json", "cells.parquet", "summary.json", "plan.json"):
        (folder / name).unlink()
    shutil.rmtree(folder / "cells")
    _rechain(folder / "events.jsonl", lambda body: body["versions"].update(torch="0.0.1"))
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(GRID))
    proc = cli("grid", "grid.yaml", "--out", str(folder), cwd=tmp_path)
    assert proc.returncode == 2 and "written by other model weights, runtime or library versions" in proc.stderr
    assert not (folder / "plan.json").exists()  # nothing written before the refusal
    # A report derived from the discarded results would describe a plan no longer there.
    (folder / "report").mkdir()
    (folder / "report" / "report.json").write_text(json.dumps({"format": "safetyrepro-report/1", "files": []}))
    # --overwrite starts over (a one-cell plan of the same grid: what is computed is the kill test's job).
    small = {**GRID, "templates": ["minimal"], "scorings": ["logprob"], "decodings": ["greedy"], "limit": 2}
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small))
    proc = cli("grid", "small.yaml", "--out", str(folder), "--overwrite", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert verify(folder) == [] and [p.name for p in (folder / "cells").iterdir()] == \
        [c["cell_id"] for c in json.loads((folder / "plan.json").read_text())["cells"]]
    assert _first_body(folder)["versions"]["torch"] != "0.0.1"  # a new log, not the foreign one
    assert not (folder / "report").exists()


def _first_body(folder: Path) -> dict:
    return json.loads((folder / "events.jsonl").read_text().splitlines()[1])["body"]


def test_a_run_planned_with_older_extraction_rules_is_not_resumed(uninterrupted: Path, tmp_path: Path) -> None:
    # a run frozen under extraction v2: its regex cells say so (and their hashes differ)
    folder = _tampered(uninterrupted, tmp_path, "v2")
    frozen = json.loads((folder / "plan.json").read_text())
    for cell in frozen["cells"]:
        if cell["scoring"] == "regex":
            cell["config"]["extraction_version"] = 2
            cell["cell_id"] = cell["cell_id"][:6] + "0" * 12
    frozen["plan_sha256"] = "0" * 64  # its cells' hashes, and so its plan hash, were others
    (folder / "plan.json").write_text(json.dumps(frozen))
    before = {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(GRID))
    proc = cli("grid", "grid.yaml", "--out", str(folder), cwd=tmp_path)
    assert proc.returncode == 2 and "planned with extraction rules version 2" in proc.stderr, proc.stderr[-2000:]
    assert "reads generations with version 18" in proc.stderr and "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before  # nothing touched


def test_another_plan_in_the_folder_is_refused(uninterrupted: Path, tmp_path: Path) -> None:
    folder = _tampered(uninterrupted, tmp_path, "other")
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump({**GRID, "limit": 2}))
    proc = cli("grid", "grid.yaml", "--out", str(folder), cwd=tmp_path)
    assert proc.returncode == 2 and "holds another plan (first difference: cell 0" in proc.stderr
    assert "--overwrite" in proc.stderr
    assert verify(folder) == []  # nothing was touched


def test_verify_command_exit_status(uninterrupted: Path, tmp_path: Path) -> None:
    ok = cli("verify", str(uninterrupted), cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.startswith("OK ")
    folder = _tampered(uninterrupted, tmp_path, "cli")
    (folder / "summary.json").unlink()
    bad = cli("verify", str(folder), cwd=tmp_path)
    assert bad.returncode == 1 and "FAIL summary.json is missing (deleted)" in bad.stdout


def test_gate_command_on_a_run_without_gates(uninterrupted: Path, tmp_path: Path) -> None:
    proc = cli("gate", str(uninterrupted), cwd=tmp_path)
    err = proc.stderr
    assert proc.returncode == 2 and "froze no gates" in err and "gates:" in err, err
    assert len(err.strip().splitlines()) == 1 and not (uninterrupted / "gates").exists()

"""Bad input and interrupted writes, as a user meets them through the real CLI.

Every bad input to every command ends in exactly one ``error: ... -- fix: ...`` line, exit code 2,
no traceback, and leaves every file that was already there unchanged. Runs killed with SIGKILL --
while evaluating, or inside the final swap of a finished run into ``--out`` -- never leave
``--out`` without a complete result set, and a rerun resumes to exactly the records an
uninterrupted run writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paused import kill_at

EXE = [sys.executable, "-m", "safetyrepro.adapters.cli"]


def cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*EXE, *args], capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=900, cwd=cwd)


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files a careless command could damage: an earlier run, configs of every malformed kind."""
    root = tmp_path_factory.mktemp("bad_input")
    (root / "earlier").mkdir()
    (root / "earlier" / "records.jsonl").write_text('{"item_id": "kept"}\n')
    (root / "earlier" / "summary.json").write_text('{"kept": true}\n')
    (root / "a_file").write_text("not a folder\n")
    (root / "binary.yaml").write_bytes(bytes(range(256)))
    (root / "list.yaml").write_text("- a\n- b\n")
    (root / "broken.yaml").write_text("benchmark: [unclosed\ntemplate: minimal\n")
    (root / "model_list.yaml").write_text("benchmark: bbq\nmodel: [1, 2]\n")
    (root / "unknown_key.yaml").write_text("benchmark: bbq\ncolour: red\n")
    (root / "strmatch.yaml").write_text("benchmark: bbq\nscoring: regex\nextraction: xstest-strmatch\n")
    (root / "config_dir.yaml").mkdir()
    (root / "models" / "not_object").mkdir(parents=True)
    (root / "models" / "not_object" / "config.json").write_text("[1, 2, 3]")
    (root / "models" / "no_config").mkdir()
    (root / "models" / "garbage").mkdir()
    (root / "models" / "garbage" / "config.json").write_text("{not json")
    return root


W = "{w}"  # placeholder for the workspace in the table below
BAD_INPUTS = [
    # (arguments, text the one error line must contain)
    # -- usage errors (typer's bundled click) -------------------------------------------------
    (["run", "--benchmark", "bbq", "--fewshot", "abc"], "Invalid value for '--fewshot'"),
    (["run", "--foo"], "No such option: --foo"),
    (["run", "--benchmark"], "requires an argument"),
    (["data", "verify", "--bogus"], "No such option: --bogus"),
    (["model", "prepare", "--nf5"], "No such option: --nf5"),
    (["lm-eval", "command"], "Missing option '--tasks'"),
    (["nonsense"], "No such command 'nonsense'"),
    # -- names and ranges, all refused before any model loads ---------------------------------
    (["run", "--benchmark", "mmlu"], "unknown benchmark 'mmlu'"),
    (["run", "--benchmark", "bbq", "--template", "fancy"], "unknown template 'fancy'"),
    (["run", "--benchmark", "bbq", "--scoring", "vibes"], "unknown scoring 'vibes'"),
    (["run", "--benchmark", "bbq", "--fewshot", "2"], "fewshot must be one of (0, 3, 5)"),
    (["run", "--benchmark", "bbq", "--decoding", "hot"], "decoding"),
    (["run", "--benchmark", "bbq", "--quantization", "int3"], "model.quantization"),
    (["run", "--benchmark", "bbq", "--seed", "-1"], "seed: Input should be greater than or equal to 0"),
    (["run", "--benchmark", "bbq", "--seed", str(2**70)], "seed: Input should be less than or equal to"),
    (["run", "--benchmark", "bbq", "--limit", "0"], "limit"),
    (["run", "--benchmark", "bbq", "--limit", str(10**20)], "limit: Input should be less than or equal to"),
    (["run", "--benchmark", "bbq", "--limit", "5000"], "limit 5000 exceeds the 200 items of the bbq subset"),
    (["run", "--benchmark", "bbq", "--batch-size", "0"], "batch_size"),
    (["run", "--benchmark", "bbq", "--max-new-tokens", "100000"], "max_new_tokens"),
    (["run", "--benchmark", "bbq", "--extraction", "vibes"], "extraction"),
    (["run"], "no benchmark given"),
    (["lm-eval", "command", "--tasks", "x", "--fewshot", "2"], "fewshot must be one of"),
    (["lm-eval", "command", "--tasks", "x", "--decoding", "warm"], "decoding"),
    (["data", "fetch", "mmlu"], "unknown benchmark 'mmlu'"),
    # -- config files --------------------------------------------------------------------------
    (["run", "--config", f"{W}/missing.yaml"], "does not exist"),
    (["run", "--config", f"{W}/config_dir.yaml"], "is not a file"),
    (["run", "--config", f"{W}/binary.yaml"], "is not UTF-8 text"),
    (["run", "--config", f"{W}/list.yaml"], "must hold a mapping"),
    (["run", "--config", f"{W}/broken.yaml"], "is not valid YAML at line"),
    (["run", "--config", f"{W}/model_list.yaml"], "`model` in"),
    (["run", "--config", f"{W}/unknown_key.yaml"], "colour: Extra inputs are not permitted"),
    (["run", "--config", f"{W}/strmatch.yaml"], "xstest-strmatch applies to benchmark xstest"),
    # -- data folders --------------------------------------------------------------------------
    (["run", "--benchmark", "bbq", "--data-dir", f"{W}/nowhere"], "does not exist"),
    (["run", "--benchmark", "bbq", "--data-dir", f"{W}/a_file"], "is a file, not a folder"),
    (["data", "verify", "--data-dir", f"{W}/a_file"], "is a file, not a folder"),
    (["subsets", "--data-dir", f"{W}/nowhere"], "does not exist"),
    (["demo", "--data-dir", f"{W}/a_file"], "is a file, not a folder"),
    # -- model folders -------------------------------------------------------------------------
    (["run", "--benchmark", "xstest", "--limit", "1", "--model", f"{W}/models/not_object"],
     "config.json is not a model configuration"),
    (["run", "--benchmark", "xstest", "--limit", "1", "--model", f"{W}/models/no_config"], "has no config.json"),
    (["run", "--benchmark", "xstest", "--limit", "1", "--model", f"{W}/models/garbage"], "config.json is unreadable"),
    (["run", "--benchmark", "xstest", "--limit", "1", "--model", f"{W}/a_file"], "is a file, not a model folder"),
    # -- output folders: refused before any work, earlier results untouched --------------------
    (["run", "--benchmark", "xstest", "--limit", "1", "--out", f"{W}/earlier"],
     "holds files that are not a `safetyrepro run` output"),
    (["run", "--benchmark", "xstest", "--limit", "1", "--out", f"{W}/earlier", "--overwrite"],
     "holds files that are not a `safetyrepro run` output"),
    (["run", "--benchmark", "xstest", "--limit", "1", "--out", f"{W}/a_file"], "is an existing file"),
    (["run", "--benchmark", "xstest", "--limit", "1", "--out", f"{W}/a_file/sub"], "cannot be"),
    (["run", "--benchmark", "xstest", "--limit", "1", "--out", f"{W}/" + "x" * 300], "output folder"),
    (["run", "--benchmark", "xstest", "--limit", "1", "--out", "/proc/version/out"], "cannot be"),
    (["demo", "--out", f"{W}/a_file"], "is a file"),
]


@pytest.mark.parametrize(("args", "needle"), BAD_INPUTS, ids=lambda v: " ".join(v)[:60] if isinstance(v, list) else "")
def test_bad_input_is_one_clear_line_and_nothing_changes(workspace: Path, args: list[str], needle: str) -> None:
    before = snapshot(workspace)
    proc = cli(*[a.replace(W, str(workspace)) for a in args], cwd=workspace)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert " -- fix: " in errors[0] and needle.replace(W, str(workspace)) in errors[0], errors[0]
    assert snapshot(workspace) == before


# ---- interrupted runs -------------------------------------------------------------------------

SAMPLED = ["run", "--benchmark", "xstest", "--scoring", "regex", "--decoding", "t0.7", "--limit", "6",
           "--batch-size", "2", "--max-new-tokens", "6", "--seed", "11"]


def start_paused(args: list[str], step: str, parent: Path) -> subprocess.Popen:
    return kill_at(args, step, parent)


def complete(out: Path) -> dict:
    """The result set in ``out``, checked for completeness (summary and records agree)."""
    summary = json.loads((out / "summary.json").read_text())
    records = (out / "records.jsonl").read_text().splitlines()
    assert len(records) == summary["counts"]["items"]
    assert all(json.loads(r)["config_hash"] == summary["config_hash"] for r in records)
    return summary


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    proc = cli(*SAMPLED, "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return (out / "records.jsonl").read_text()


def test_killed_while_evaluating_resumes_to_identical_records(tmp_path: Path, uninterrupted: str) -> None:
    out = tmp_path / "run"
    start_paused([*SAMPLED, "--out", str(out)], "after-chunk-1", tmp_path)  # 4 of 6 items journaled
    assert not out.exists()  # nothing is published before the run finishes
    journals = list(tmp_path.glob(".run.events-*.jsonl"))
    assert len(journals) == 1 and len(journals[0].read_text().splitlines()) == 1 + 4
    # A write torn by a kill mid-line: detected, cut, reported; never kept.
    with open(journals[0], "a") as handle:
        handle.write('{"seq": 4, "key": "0a1b')
    proc = cli(*SAMPLED, "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "cut a torn last entry" in proc.stderr and "resuming xstest: 4 of 6 requests" in proc.stderr
    assert (out / "records.jsonl").read_text() == uninterrupted  # sampled outputs included
    assert complete(out)["counts"]["resumed"] == 4
    assert not list(tmp_path.glob(".run.*"))  # the journal is gone once the run is published


def test_an_edited_journal_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    start_paused([*SAMPLED, "--out", str(out)], "after-chunk-0", tmp_path)
    journal = next(tmp_path.glob(".run.events-*.jsonl"))
    lines = journal.read_text().splitlines()
    lines[1] = lines[1].replace('"response":', '"response": "forged", "x":', 1)
    assert lines[1] != journal.read_text().splitlines()[1]
    journal.write_text("\n".join(lines) + "\n")
    proc = cli(*SAMPLED, "--out", str(out))
    assert proc.returncode == 2 and "breaks the hash chain" in proc.stderr and "Traceback" not in proc.stderr
    assert journal.read_text() == "\n".join(lines) + "\n"  # the evidence is kept


@pytest.fixture(scope="module")
def earlier_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 2-item run that a later ``--overwrite`` replaces."""
    out = tmp_path_factory.mktemp("earlier") / "run"
    assert cli(*SAMPLED[:-2], "--seed", "1", "--limit", "2", "--out", str(out)).returncode == 0
    return out


@pytest.mark.parametrize("step", ["before-swap", "after-marker", "after-exchange", "before-cleanup", "during-cleanup"])
def test_killed_inside_the_final_swap_never_loses_a_result(tmp_path: Path, step: str, earlier_run: Path) -> None:
    from cli_in_process import cli as cli_in_process

    out = tmp_path / "run"
    shutil.copytree(earlier_run, out)
    old = (out / "records.jsonl").read_text()
    second = [*SAMPLED, "--out", str(out), "--overwrite"]
    start_paused(second, step, tmp_path)  # the kill needs its own process
    # At this instant, before any recovery: out is there and complete (old or new).
    summary = complete(out)
    assert summary["counts"]["items"] in (2, 6)
    # The next run recovers the leftovers, says so, and finishes.
    proc = cli_in_process(*second)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert complete(out)["counts"]["items"] == 6
    if step != "before-swap":
        assert "interrupted write" in proc.stderr
    assert (out / "records.jsonl").read_text() != old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]

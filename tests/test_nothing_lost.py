"""Nothing lost: every bad input to the grid-side commands is refused before anything is touched,
and ``grid --overwrite`` replaces a finished run only by publishing a complete new one.

The table drives ``grid``, ``plan``, ``verify``, ``stats``, ``card``, ``gate`` and ``crosspkg
compare`` (in this process: the same ``main`` and exit codes as the console script) over malformed
and contradictory grid and anchor files, bad models, data folders, endpoints and executors,
``--out`` as a file, a foreign folder with hidden files, another plan's run and ``--overwrite``
with a bad model. Each case: exit 2, exactly one ``error: ... -- fix: ...`` line and nothing else
on either stream, no traceback, and a byte-identical listing (hidden entries included) of the
whole workspace. The kill test SIGKILLs ``grid --overwrite`` at random points (its own process):
``--out`` always holds the old run or the new one, complete and verified.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import pytest
import yaml
from cli_in_process import cli
from paused import kill_at, start

from safetyrepro.adapters.gridverify import verify

GRID = {"models": [{"name": "m"}], "benchmarks": ["xstest"], "templates": ["minimal"], "scorings": ["logprob"],
        "fewshots": [0], "decodings": ["greedy"], "limit": 2, "batch_size": 1}
OTHER = {**GRID, "limit": 3}  # another plan
ANCHOR = {"benchmarks": ["xstest"], "limit": 2, "harnesses": ["lm_eval"]}


def listing(root: Path) -> dict[str, str]:
    """Every entry under ``root``, hidden ones included: folders by name, files by content hash,
    links by target."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            if path.is_symlink():
                found[key] = "link:" + os.readlink(path)
            elif path.is_dir():
                found[key] = "folder"
            else:
                found[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _yaml(path: Path, data: object) -> None:
    path.write_text(yaml.safe_dump(data))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("nothing_lost")
    grids = root / "grids"
    grids.mkdir()
    _yaml(grids / "ok.yaml", GRID)
    _yaml(grids / "other.yaml", OTHER)
    bad = {
        "missing_model": {**GRID, "models": [{"name": "m", "path": str(root / "no" / "such" / "model")}]},
        "hub_model": {**GRID, "models": [{"name": "m", "path": "nobody/not-a-model-here"}]},
        "no_config_model": {**GRID, "models": [{"name": "m", "path": str(root / "models" / "no_config")}]},
        "garbage_model": {**GRID, "models": [{"name": "m", "path": str(root / "models" / "garbage")}]},
        "file_model": {**GRID, "models": [{"name": "m", "path": str(root / "a_file")}]},
        "unknown_key": {**GRID, "colour": "red"},
        "unknown_benchmark": {**GRID, "benchmarks": ["mmlu"]},
        "bad_fewshot": {**GRID, "fewshots": [2]},
        "twice": {**GRID, "templates": ["minimal", "minimal"]},
        "nothing_left": {**GRID, "exclusions": [{"template": "minimal"}]},
        "exclusion_key": {**GRID, "exclusions": [{"colour": "red"}]},
        "exclusion_level": {**GRID, "exclusions": [{"template": "persona"}]},
        "same_name": {**GRID, "models": [{"name": "m"}, {"name": "m", "dtype": "bfloat16"}]},
        "too_many_items": {**GRID, "limit": 100_000},
        "bad_limit": {**GRID, "limit": 0},
        "symmetric_cot": {**GRID, "templates": ["cot"], "scorings": ["symmetric"]},
        "endpoint_no_echo": {**GRID, "models": [{"name": "m", "endpoint": {"url": "http://127.0.0.1:9/v1", "model": "x"}}]},
        "endpoint_bad_url": {**GRID, "models": [{"name": "m", "endpoint": {"url": "ftp://x", "model": "x"}}]},
        "endpoint_chat_echo": {**GRID, "models": [{"name": "m", "endpoint": {"url": "http://127.0.0.1:9/v1", "model": "x",
                                                                        "api": "chat", "echo_logprobs": True}}]},
        "bad_gates": {**GRID, "gates": {"repeat": {"threshold": 2}}},
        "models_empty": {**GRID, "models": []},
        "not_a_mapping": ["a", "b"],
    }
    for name, data in bad.items():
        _yaml(grids / f"{name}.yaml", data)
    (grids / "broken.yaml").write_text("models: [unclosed\nbenchmarks: [xstest]\n")
    (grids / "binary.yaml").write_bytes(bytes(range(256)))
    _yaml(grids / "endpoints_unknown.yaml", {"zzz": {"url": "http://127.0.0.1:9/v1", "model": "x"}})
    _yaml(grids / "endpoints_bad.yaml", {"m": {"url": "http://127.0.0.1:9/v1"}})
    # A foreign folder with hidden files, a file, model folders of every broken kind.
    project = root / "project"
    project.mkdir()
    (project / ".gitignore").write_text("*.pyc\n")
    (project / ".env").write_text("SECRET=1\n")
    (project / "notes.txt").write_text("mine\n")
    (root / "hidden_only").mkdir()
    (root / "hidden_only" / ".keep").write_text("")
    (root / "a_file").write_text("not a folder\n")
    (root / "models" / "no_config").mkdir(parents=True)
    (root / "models" / "garbage").mkdir()
    (root / "models" / "garbage" / "config.json").write_text("{not json")
    # A data folder whose XSTest file differs from upstream by one byte (the others are links).
    tampered = root / "data_tampered"
    tampered.mkdir()
    for entry in data_dir.iterdir():
        if entry.name != "xstest":
            (tampered / entry.name).symlink_to(entry)
    (tampered / "xstest").mkdir()
    for entry in (data_dir / "xstest").iterdir():
        shutil.copy(entry, tampered / "xstest" / entry.name)
    with open(tampered / "xstest" / "xstest_prompts.csv", "ab") as handle:
        handle.write(b"\n")
    # Anchors for crosspkg.
    anchors = root / "anchors"
    anchors.mkdir()
    _yaml(anchors / "ok.yaml", ANCHOR)
    _yaml(anchors / "missing_model.yaml", {**ANCHOR, "model": str(root / "no" / "such" / "model")})
    _yaml(anchors / "unknown_benchmark.yaml", {**ANCHOR, "benchmarks": ["mmlu"]})
    _yaml(anchors / "unknown_harness.yaml", {**ANCHOR, "harnesses": ["openai_evals"]})
    _yaml(anchors / "too_many.yaml", {**ANCHOR, "limit": 100_000})
    _yaml(anchors / "bad_fewshot.yaml", {**ANCHOR, "fewshot": 2})
    (anchors / "broken.yaml").write_text("benchmarks: [xstest\n")
    # A finished run, and copies: unfinished, with a user's file in it.
    proc = cli("grid", "grids/ok.yaml", "--out", "finished", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shutil.copytree(root / "finished", root / "unfinished")
    (root / "unfinished" / "manifest.json").unlink()
    shutil.copytree(root / "finished", root / "with_notes")
    (root / "with_notes" / "notes.txt").write_text("my notes\n")
    (root / "plan_dir").mkdir()
    # A user's folder whose names look like a run's artefacts (none of it written by us).
    lookalike = root / "lookalike"
    (lookalike / "cells").mkdir(parents=True)
    (lookalike / "cells" / "notes.txt").write_text("mine\n")
    (lookalike / "summary.json").write_text('{"mine": true}\n')
    (lookalike / "events.jsonl").write_text("my own event log\n")
    # A run beside a user's backups, named like temporary files but not in our exact form.
    shutil.copytree(root / "finished", root / "with_backup")
    (root / "with_backup" / ".summary.json.tmp").write_text("my backup\n")
    (root / "with_backup" / ".events.jsonl.backup01").write_text("my backup\n")
    # A run holding a gates folder (marked as ours), and a report someone added a file to.
    shutil.copytree(root / "finished", root / "with_gates")
    (root / "with_gates" / "gates").mkdir()
    (root / "with_gates" / "gates" / "gates.json").write_text('{"format": "safetyrepro-gates/1"}\n')
    proc = cli("stats", "finished", "--out", "report_with_notes", "--n-resamples", "20", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (root / "report_with_notes" / "notes.txt").write_text("my reading notes\n")
    return root


def _cell(workspace: Path) -> str:
    return str(next((workspace / "finished" / "cells").iterdir()).relative_to(workspace))


G = "grids/ok.yaml"
CASES = [
    # -- grid: files --------------------------------------------------------------------------
    (["grid", "grids/missing.yaml"], "does not exist"),
    (["grid", "grids/broken.yaml"], "is not valid YAML"),
    (["grid", "grids/binary.yaml"], "is not UTF-8 text"),
    (["grid", "grids/not_a_mapping.yaml"], "must hold a mapping"),
    (["grid", "grids/unknown_key.yaml"], "colour: Extra inputs are not permitted"),
    (["grid", "grids/unknown_benchmark.yaml"], "unknown benchmark 'mmlu'"),
    (["grid", "grids/bad_fewshot.yaml"], "few-shot level 2"),
    (["grid", "grids/twice.yaml"], "a level is listed twice"),
    (["grid", "grids/nothing_left.yaml"], "leave no cell"),
    (["grid", "grids/exclusion_key.yaml"], "exclusion 0 names ['colour']"),
    (["grid", "grids/exclusion_level.yaml"], "'persona' is not one of the grid's levels"),
    (["grid", "grids/same_name.yaml"], "two models share a name"),
    (["grid", "grids/too_many_items.yaml"], "exceeds the"),
    (["grid", "grids/bad_limit.yaml"], "limit"),
    (["grid", "grids/symmetric_cot.yaml"], "needs a direct template"),
    (["grid", "grids/bad_gates.yaml"], "threshold"),
    (["grid", "grids/models_empty.yaml"], "models"),
    (["grid"], "give either a grid file or --preset"),
    (["grid", "--preset", "huge"], "unknown grid preset 'huge'"),
    (["grid", G, "--models", "x"], "--models applies to --preset only"),
    (["grid", "--preset", "mini", "--models", "bad name=x"], "--models:"),
    # -- grid: models ---------------------------------------------------------------------------
    (["grid", "grids/missing_model.yaml", "--out", "new"], "does not exist"),
    (["grid", "grids/hub_model.yaml", "--out", "new"], "neither a folder here nor an HF id in the local cache"),
    (["grid", "grids/no_config_model.yaml", "--out", "new"], "has no config.json"),
    (["grid", "grids/garbage_model.yaml", "--out", "new"], "config.json is unreadable"),
    (["grid", "grids/file_model.yaml", "--out", "new"], "is a file, not a model folder"),
    # -- grid: endpoints and executors -----------------------------------------------------------
    (["grid", "grids/endpoint_no_echo.yaml"], "needs loglikelihoods"),
    (["grid", "grids/endpoint_bad_url.yaml"], "endpoint.url"),
    (["grid", "grids/endpoint_chat_echo.yaml"], "echo_logprobs needs api: completions"),
    (["grid", G, "--executor", "cloud"], "unknown executor 'cloud'"),
    (["grid", G, "--executor", "endpoints"], "--executor endpoints and --endpoints FILE go together"),
    (["grid", G, "--endpoints", "grids/endpoints_unknown.yaml"], "go together"),
    (["grid", G, "--executor", "endpoints", "--endpoints", "grids/endpoints_unknown.yaml"], "names ['zzz']"),
    (["grid", G, "--executor", "endpoints", "--endpoints", "grids/endpoints_bad.yaml"], "model"),
    (["grid", G, "--workers", "2"], "options of the Ray executor"),
    (["grid", G, "--executor", "ray", "--workers", "2", "--address", "auto"], "--workers sizes a local Ray cluster"),
    (["grid", G, "--threads", "0"], "--threads"),
    # -- grid: data ----------------------------------------------------------------------------
    (["grid", G, "--out", "new", "--data-dir", "nowhere"], "does not exist"),
    (["grid", G, "--out", "new", "--data-dir", "a_file"], "is a file, not a folder"),
    (["grid", G, "--out", "new", "--data-dir", "data_tampered"], "has sha256"),
    # -- grid: --out -----------------------------------------------------------------------------
    (["grid", G, "--out", "project"], "neither empty nor a SafetyRepro grid run (it holds .env, .gitignore, notes.txt)"),
    (["grid", G, "--out", "project", "--overwrite"], "neither empty nor a SafetyRepro grid run"),
    (["grid", G, "--out", "hidden_only"], "it holds .keep"),
    (["grid", "grids/missing_model.yaml", "--out", "project"], "does not exist"),
    (["grid", G, "--out", "a_file"], "is an existing file, not a folder"),
    (["grid", G, "--out", "a_file/sub"], "a_file is a file"),
    (["grid", G, "--out", "."], "does not name a folder"),
    (["grid", G, "--out", "x" * 300], "name that is too long"),
    (["grid", "grids/other.yaml", "--out", "finished"], "holds another plan"),
    (["grid", "grids/missing_model.yaml", "--out", "finished", "--overwrite"], "does not exist"),
    (["grid", "grids/other.yaml", "--out", "finished", "--overwrite", "--data-dir", "nowhere"], "does not exist"),
    (["grid", "grids/other.yaml", "--out", "with_notes", "--overwrite"], "files SafetyRepro did not write (notes.txt)"),
    (["grid", G, "--out", "lookalike"], "neither empty nor a SafetyRepro grid run (it holds cells/, events.jsonl, summary.json)"),
    (["grid", G, "--out", "lookalike", "--overwrite"], "neither empty nor a SafetyRepro grid run"),
    (["grid", "grids/other.yaml", "--out", "with_backup", "--overwrite"],
     "files SafetyRepro did not write (.events.jsonl.backup01, .summary.json.tmp)"),
    # -- plan ------------------------------------------------------------------------------------
    (["plan", "grids/broken.yaml"], "is not valid YAML"),
    (["plan", G, "--out", "plan_dir"], "is a folder"),
    (["plan", G, "--out", "a_file/plan.json"], "a_file is a file"),
    # -- verify ----------------------------------------------------------------------------------
    (["verify", "project"], "is not a grid run"),
    (["verify", "nowhere"], "is not a folder"),
    (["verify", "a_file"], "is not a folder"),
    (["verify", "finished", "--expect", "xyz"], "is not a SHA-256"),
    (["verify", "finished", "--data-dir", "nowhere"], "does not exist"),
    # -- stats -----------------------------------------------------------------------------------
    (["stats", "project"], "is not a grid run"),
    (["stats", "unfinished"], "unfinished grid run"),
    (["stats", "finished", "--out", "a_file"], "is an existing file"),
    (["stats", "finished", "--out", "project", "--overwrite"], "holds files that are not a SafetyRepro report"),
    (["stats", "finished", "--out", "finished/cells/x"], "inside the run's artefacts"),
    (["stats", "finished", "--out", "with_gates/gates", "--overwrite"], "holds files that are not a SafetyRepro report"),
    (["stats", "finished", "--out", "report_with_notes", "--overwrite"], "holds files that are not a SafetyRepro report"),
    (["stats", "finished", "--n-resamples", "0"], "--n-resamples"),
    # -- card ------------------------------------------------------------------------------------
    (["card", "finished"], "is not a grid cell folder"),
    (["card", "project"], "is not a grid cell folder"),
    (["card", "{cell}", "--format", "pdf"], "unknown card format"),
    # -- gate ------------------------------------------------------------------------------------
    (["gate", "finished"], "froze no gates"),
    (["gate", "project"], "is not a grid run"),
    (["gate", "finished", "--replay", "--concurrency", "2"], "froze no gates"),
    # -- crosspkg compare ------------------------------------------------------------------------
    (["crosspkg", "compare", "anchors/missing_model.yaml", "--out", "cmp"], "does not exist"),
    (["crosspkg", "compare", "anchors/unknown_benchmark.yaml", "--out", "cmp"], "unknown benchmark 'mmlu'"),
    (["crosspkg", "compare", "anchors/unknown_harness.yaml", "--out", "cmp"], "harnesses"),
    (["crosspkg", "compare", "anchors/too_many.yaml", "--out", "cmp"], "exceeds the"),
    (["crosspkg", "compare", "anchors/bad_fewshot.yaml", "--out", "cmp"], "fewshot"),
    (["crosspkg", "compare", "anchors/broken.yaml", "--out", "cmp"], "is not valid YAML"),
    (["crosspkg", "compare", "anchors/ok.yaml", "--out", "a_file"], "is an existing file"),
    (["crosspkg", "compare", "anchors/ok.yaml", "--out", "project", "--overwrite"],
     "holds files that are not a crosspkg comparison"),
    (["crosspkg", "compare", "anchors/ok.yaml", "--out", "finished", "--overwrite"],
     "holds files that are not a crosspkg comparison"),
    (["crosspkg", "compare", "anchors/ok.yaml", "--out", "report_with_notes", "--overwrite"],
     "holds files that are not a crosspkg comparison"),
]


@pytest.mark.parametrize(("args", "needle"), CASES, ids=lambda v: " ".join(v)[:70] if isinstance(v, list) else "")
def test_bad_input_is_refused_before_anything_is_touched(workspace: Path, args: list[str], needle: str) -> None:
    before = listing(workspace)
    proc = cli(*[a.replace("{cell}", _cell(workspace)) for a in args], cwd=workspace)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert proc.stdout == "", proc.stdout  # no note, progress or table before the refusal
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and " -- fix: " in lines[0], proc.stderr
    assert needle in lines[0], lines[0]
    assert listing(workspace) == before


def test_the_table_covers_every_command() -> None:
    assert len(CASES) >= 40
    assert {args[0] for args, _ in CASES} >= {"grid", "plan", "verify", "stats", "card", "gate", "crosspkg"}


# ---- grid --overwrite, killed at random points ---------------------------------------------------

def _plan_of(run: Path) -> str:
    return json.loads((run / "plan.json").read_text())["plan_sha256"]


def test_overwrite_killed_at_random_points_leaves_the_old_run_or_the_new_one(workspace: Path, tmp_path: Path) -> None:
    """SIGKILL while the new run computes (after a random request) and inside its publish (random
    steps of the swap): each time ``--out`` verifies and holds the old plan or the new one; the
    last rerun finishes the new run and leaves nothing beside it."""
    shutil.copytree(workspace / "finished", tmp_path / "run")
    shutil.copy(workspace / "grids" / "other.yaml", tmp_path / "other.yaml")
    old, new = _plan_of(tmp_path / "run"), None
    command = ["grid", "other.yaml", "--out", "run", "--overwrite"]
    requests = 3  # OTHER: 3 xstest items x 2 candidates, one request a batch; the first kills land inside them
    rng = random.Random(20261202)
    steps = [f"after-request-{rng.randint(1, 2 * requests - 1)}" for _ in range(2)]
    steps += rng.sample(["before-swap", "after-marker", "after-exchange", "before-cleanup", "during-cleanup"], 3)
    seen = set()
    for step in steps:
        kill_at(command, step, tmp_path, cwd=tmp_path)
        assert verify(tmp_path / "run") == [], step  # complete at this instant, before any recovery
        plan = _plan_of(tmp_path / "run")
        assert plan == old or new is None or plan == new
        seen.add("old" if plan == old else "new")
        if plan != old:
            new = plan
    final = start(command, cwd=tmp_path)
    _, err = final.communicate(timeout=900)
    assert final.returncode == 0, err[-3000:]
    assert verify(tmp_path / "run") == [] and _plan_of(tmp_path / "run") != old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.yaml", "run"]  # no leftover beside it
    assert "old" in seen


def test_a_model_whose_every_cell_is_excluded_still_verifies(workspace: Path, tmp_path: Path) -> None:
    """A grid model that answers nothing is not in the log, and not in the log's anchor either."""
    _yaml(tmp_path / "grid.yaml", {**GRID, "models": [{"name": "m"}, {"name": "unused", "dtype": "bfloat16"}],
                                   "exclusions": [{"model": "unused"}]})
    proc = cli("grid", "grid.yaml", "--out", "run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert verify(tmp_path / "run") == []


def test_an_earlier_overwrite_attempt_whose_log_cannot_resume_is_discarded(workspace: Path, tmp_path: Path) -> None:
    """An overwrite folder of ours whose log header belongs to something else (other libraries)
    is discarded with a note, not left to block every later --overwrite."""
    from safetyrepro.adapters.grid import build_grid, plan
    from safetyrepro.adapters.journal import FORMAT

    shutil.copytree(workspace / "finished", tmp_path / "run")
    shutil.copy(workspace / "grids" / "other.yaml", tmp_path / "other.yaml")
    new = plan(build_grid(OTHER, source="other.yaml"))["plan_sha256"]
    stuck = tmp_path / f".run.overwrite-{new[:16]}"
    stuck.mkdir()
    header = {"format": FORMAT, "anchor": "0" * 64, "plan_sha256": "0" * 64}
    (stuck / "events.jsonl").write_text(json.dumps({"header": header, "sha256": "0" * 64}) + "\n")
    proc = cli("grid", "other.yaml", "--out", "run", "--overwrite", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "discarding" in proc.stdout + proc.stderr
    assert verify(tmp_path / "run") == [] and _plan_of(tmp_path / "run") == new
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.yaml", "run"]

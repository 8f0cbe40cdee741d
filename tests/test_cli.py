"""The command line as a user runs it: real subprocesses, one-line errors, nothing lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXE = [sys.executable, "-m", "safetyrepro.adapters.cli"]


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([*EXE, *args], capture_output=True, text=True, env=full_env, timeout=600)


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0]


def test_run_writes_records_and_refuses_to_clobber(tmp_path: Path) -> None:
    out = tmp_path / "xs"
    proc = cli("run", "--benchmark", "xstest", "--scoring", "logprob", "--limit", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "balanced_rate" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    records = (out / "records.jsonl").read_text()
    assert summary["counts"]["items"] == 2
    again = cli("run", "--benchmark", "xstest", "--limit", "1", "--out", str(out))
    assert_one_line_error(again, "already holds a `safetyrepro run` output", "--overwrite")
    assert (out / "records.jsonl").read_text() == records  # nothing already written was lost


def test_config_file_with_flag_override(tmp_path: Path) -> None:
    config = tmp_path / "cell.yaml"
    config.write_text("benchmark: toxigen\ntemplate: persona\nscoring: logprob\nlimit: 5\n")
    out = tmp_path / "tox"
    proc = cli("run", "--config", str(config), "--limit", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["template"] == "persona" and summary["config"]["limit"] == 2


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["run", "--benchmark", "mmlu"], ["unknown benchmark 'mmlu'", "choose one of"]),
        (["run", "--benchmark", "bbq", "--template", "fancy"], ["unknown template 'fancy'"]),
        (["run", "--benchmark", "bbq", "--fewshot", "2"], ["fewshot", "(0, 3, 5)"]),
        (["run", "--benchmark", "bbq", "--decoding", "hot"], ["decoding"]),
        (["run", "--benchmark", "bbq", "--limit", "0"], ["limit"]),
        (["run", "--benchmark", "bbq", "--scoring", "vibes"], ["unknown scoring 'vibes'"]),
        (["run"], ["no benchmark given"]),
        (["run", "--config", "/nonexistent.yaml"], ["config file /nonexistent.yaml does not exist"]),
        (["run", "--benchmark", "bbq", "--data-dir", "/nonexistent"], ["data folder /nonexistent does not exist"]),
        (["run", "--benchmark", "bbq", "--model", "/nonexistent-model", "--limit", "1"],
         ["model folder '/nonexistent-model' does not exist"]),
    ],
)
def test_bad_input_is_one_clear_line(args: list[str], needles: list[str]) -> None:
    assert_one_line_error(cli(*args), *needles)


def test_bad_yaml_config(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("benchmark: [unclosed\n")
    assert_one_line_error(cli("run", "--config", str(config)), "is not valid YAML")
    config.write_text("- just\n- a list\n")
    assert_one_line_error(cli("run", "--config", str(config)), "must hold a mapping")


def test_wrong_hash_through_the_cli(tmp_path: Path, data_dir: Path) -> None:
    root = tmp_path / "data/xstest"
    root.mkdir(parents=True)
    (root / "xstest_prompts.csv").write_text((data_dir / "xstest/xstest_prompts.csv").read_text() + "extra\n")
    assert_one_line_error(cli("run", "--benchmark", "xstest", "--data-dir", str(tmp_path / "data")),
                          "xstest_prompts.csv has sha256", "expected 11783fb2")


def test_data_verify_and_subsets_check(data_dir: Path) -> None:
    proc = cli("data", "verify", "--data-dir", str(data_dir))
    assert proc.returncode == 0 and "bbq: 6 file(s) ok" in proc.stdout
    proc = cli("subsets", "--data-dir", str(data_dir))
    assert proc.returncode == 0 and proc.stdout.count(" ok") == 5

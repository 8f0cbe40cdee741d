"""The grid configuration and its frozen plan (model-free: nothing here loads a model)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from safetyrepro.adapters import ConfigError
from safetyrepro.adapters.grid import PLAN_FORMAT, GridModel, build_grid, plan, preset

EMBEDDED = [GridModel(name="embedded")]
THREE = [GridModel(name="a"), GridModel(name="b", path="/models/b"), GridModel(name="c", path="/models/c",
                                                                             quantization="nf4")]


def test_paper_preset_has_the_published_dimensions() -> None:
    frozen = plan(preset("paper", THREE))
    cells = frozen["cells"]
    per_pair = Counter((c["model"], c["benchmark"]) for c in cells)
    assert set(per_pair.values()) == {72} and len(per_pair) == 15  # 4 x 3 x 3 x 2 per model and benchmark
    assert len(cells) == 1080
    # Direct logprob cells do not depend on decoding: 3 templates x 3 few-shot x 3 decodings
    # collapse to 9 computations per model and benchmark.
    assert len({c["compute_key"] for c in cells}) == 15 * 54
    # Model-major order: each model's cells are contiguous, so it is loaded once.
    models = [c["model"] for c in cells]
    assert models == sorted(models, key=["a", "b", "c"].index)
    assert [c["index"] for c in cells] == list(range(len(cells)))
    assert len({c["cell_id"] for c in cells}) == len(cells)
    assert {c["config"]["model"]["quantization"] for c in cells if c["model"] == "c"} == {"nf4"}


def test_core_and_mini_presets() -> None:
    core = plan(preset("core", EMBEDDED))["cells"]
    assert len(core) == 5 * 18
    assert {c["template"] for c in core} == {"minimal", "persona", "detailed"} and {c["decoding"] for c in core} == {
        "greedy"}
    mini = plan(preset("mini", EMBEDDED))["cells"]
    assert len(mini) == 72 and {c["benchmark"] for c in mini} == {"toxigen"}
    assert {c["config"]["limit"] for c in mini} == {8}


def test_shared_compute_keys_differ_only_in_decoding() -> None:
    cells = plan(preset("mini", EMBEDDED))["cells"]
    groups: dict[str, list[dict]] = {}
    for cell in cells:
        groups.setdefault(cell["compute_key"], []).append(cell)
    shared = [g for g in groups.values() if len(g) > 1]
    assert len(shared) == 9
    for group in shared:
        assert {c["scoring"] for c in group} == {"logprob"} and "cot" not in {c["template"] for c in group}
        assert len({c["decoding"] for c in group}) == 3
        assert len({(c["template"], c["fewshot"]) for c in group}) == 1


def test_plan_hash_is_deterministic_and_covers_the_grid() -> None:
    base = {"models": [{"name": "embedded"}], "benchmarks": ["bbq", "xstest"], "limit": 10}
    first = plan(build_grid(base))
    assert plan(build_grid(base))["plan_sha256"] == first["plan_sha256"]
    for change in ({"limit": 11}, {"seed": 7}, {"benchmarks": ["xstest", "bbq"]}, {"decodings": ["greedy"]},
                   {"models": [{"name": "embedded", "quantization": "nf4"}]}):
        assert plan(build_grid({**base, **change}))["plan_sha256"] != first["plan_sha256"], change
    assert first["format"] == PLAN_FORMAT


def test_exclusions() -> None:
    base = {"models": [{"name": "embedded"}], "benchmarks": ["bbq"]}
    cells = plan(build_grid({**base, "exclusions": [{"template": "cot", "scoring": "regex"}]}))["cells"]
    assert len(cells) == 72 - 9 and not [c for c in cells if c["template"] == "cot" and c["scoring"] == "regex"]
    with pytest.raises(ConfigError, match="exclusion 0 names \\['colour'\\]"):
        build_grid({**base, "exclusions": [{"colour": "red"}]})
    with pytest.raises(ConfigError, match="template 'cott' is not one of the grid's levels"):
        build_grid({**base, "exclusions": [{"template": "cott"}]})
    with pytest.raises(ConfigError, match="fewshot '3' is not one of the grid's levels"):
        build_grid({**base, "exclusions": [{"fewshot": "3"}]})
    with pytest.raises(ConfigError, match="leave no cell"):
        plan(build_grid({**base, "exclusions": [{"benchmark": "bbq"}]}))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "safetyrepro.adapters.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_plan_cli_writes_the_frozen_plan(tmp_path: Path) -> None:
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump({"models": [{"name": "embedded"}, {"name": "other",
                                                                                            "path": "/m/other"}],
                                                        "benchmarks": ["toxigen"], "templates": ["minimal"],
                                                        "limit": 5}))
    proc = _cli("plan", "grid.yaml", "--out", "runs/plan.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    frozen = json.loads((tmp_path / "runs" / "plan.json").read_text())
    assert len(frozen["cells"]) == 2 * 1 * 2 * 3 * 3
    assert f"plan_sha256 {frozen['plan_sha256']}" in proc.stdout
    assert frozen == plan(build_grid(frozen["grid"]))


@pytest.mark.parametrize(
    ("grid", "args", "message"),
    [
        ({"models": [{"name": "m"}], "benchmarks": ["bbq"], "colour": 1}, [], "colour: Extra inputs are not permitted"),
        ({"models": [{"name": "m"}], "benchmarks": ["mmlu"]}, [], "unknown benchmark 'mmlu'"),
        ({"models": [{"name": "m"}], "benchmarks": ["bbq"], "fewshots": [0, 4]}, [], "few-shot level 4"),
        ({"models": [{"name": "m"}], "benchmarks": ["bbq"], "templates": ["cot", "cot"]}, [], "listed twice"),
        ({"models": [{"name": "m"}, {"name": "m"}], "benchmarks": ["bbq"]}, [], "two models share a name"),
        ({"models": [], "benchmarks": ["bbq"]}, [], "models: List should have at least 1 item"),
        ({"models": [{"name": "m"}], "benchmarks": ["bbq"], "decodings": ["hot"]}, [], "decodings.0: Input should be"),
        (None, ["--preset", "huge"], "unknown grid preset 'huge'"),
        (None, [], "give either a grid file or --preset"),
    ],
)
def test_bad_grid_is_one_line(tmp_path: Path, grid: dict | None, args: list[str], message: str) -> None:
    if grid is not None:
        (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
        args = ["grid.yaml", *args]
    proc = _cli("plan", *args, "--out", "plan.json", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], proc.stderr
    assert not (tmp_path / "plan.json").exists()

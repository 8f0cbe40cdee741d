"""`safetyrepro stats` and `safetyrepro card` on a real grid run of three model variants."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

# Three instruments from the embedded weights (rankings need three models): fp32, bf16, NF4.
GRID = {"models": [{"name": "fp32"}, {"name": "bf16", "dtype": "bfloat16"}, {"name": "nf4", "quantization": "nf4"}],
        "benchmarks": ["toxigen", "crows_pairs"], "templates": ["minimal", "persona"], "scorings": ["logprob"],
        "fewshots": [0, 3], "decodings": ["greedy"], "limit": 6, "batch_size": 4}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, "-m", "safetyrepro.adapters.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stats")
    (root / "grid.yaml").write_text(yaml.safe_dump(GRID))
    proc = cli("grid", "grid.yaml", "--out", "g", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = cli("stats", "g", "--n-resamples", "300", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rank stability per benchmark" in proc.stdout
    return root / "g"


def test_report_folder_holds_every_table_plot_and_card(run: Path) -> None:
    report = run / "report"
    cells = json.loads((run / "plan.json").read_text())["cells"]
    for name in ("report.md", "report.html", "stats.json", "scores.csv", "flips.csv", "orderings.csv", "anova.csv",
                 "gaps.csv", "flips_grid.png", "anova_grid.png", "noise_grid.png", "orderings_grid.png",
                 "spread_toxigen.png", "spread_crows_pairs.png"):
        assert (report / name).stat().st_size > 0, name
    assert (report / "flips_grid.png").read_bytes()[:4] == b"\x89PNG"
    # Every score has its card, and the report links each one.
    scores = pd.read_csv(report / "scores.csv")
    assert sorted(scores["cell_id"]) == sorted(c["cell_id"] for c in cells)
    markdown, page = (report / "report.md").read_text(), (report / "report.html").read_text()
    for cell in cells:
        assert (report / "cards" / f"{cell['cell_id']}.yaml").is_file()
        assert f"(cards/{cell['cell_id']}.md)" in markdown and f'href="cards/{cell["cell_id"]}.md"' in page
    assert '<img src="flips_grid.png"' in page and "![Flip matrices](flips_grid.png)" in markdown


def test_flip_counts_match_the_score_table(run: Path) -> None:
    """N+ / N- recounted by hand from cells.parquet, in each metric's direction."""
    stats = json.loads((run / "report" / "stats.json").read_text())
    assert stats["format"] == "safetyrepro-stats/1"
    table = pd.read_parquet(run / "cells.parquet")
    table = table[table["primary"]]
    for benchmark, b in stats["benchmarks"].items():
        rows = table[table["benchmark"] == benchmark]
        good = -(rows["value"] - b["target"]).abs() if b["direction"] == "target" else rows["value"]
        wide = rows.assign(good=good).pivot_table(index=["template", "fewshot"], columns="model", values="good")
        flips = {(f["model_a"], f["model_b"]): f for f in b["tiers"]["grid"]["flips"]}
        assert len(flips) == 3  # every pair of three models
        for a, c in itertools.combinations(sorted(wide.columns), 2):
            diff = wide[a] - wide[c]
            n_plus, n_minus = int((diff > 1e-9).sum()), int((diff < -1e-9).sum())
            row = flips[(a, c)]
            assert (row["n_plus"], row["n_minus"], row["n_configs"]) == (n_plus, n_minus, len(diff))
            assert row["rho_flip"] == min(n_plus, n_minus) / len(diff)
            assert row["identifiable"] == ((n_plus == 0 or n_minus == 0) and n_plus + n_minus > 0)
            # Below the noise a difference is a tie: noise-aware counts never exceed the raw ones.
            assert row["n_plus_resolvable"] <= n_plus and row["n_minus_resolvable"] <= n_minus
        tier = b["tiers"]["grid"]
        assert sum(o["configs"] for o in tier["orderings"]) == tier["n_configs"] == 4
        assert tier["possible_orderings"] == 6
        for gap in tier["gaps"]:  # resolvable means the interval excludes 0, so it is wider than half of it
            if gap["resolvable"]:
                assert gap["gap"] > gap["half_width"] - 1e-12
        assert tier["anova"] is None or abs(sum(r["share"] for r in tier["anova"]) + 0 - 1) < 0.5


def test_card_discloses_the_configuration_from_the_run_itself(run: Path) -> None:
    from safetyrepro.adapters.card import GridCard

    plan = json.loads((run / "plan.json").read_text())
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()[1:]]
    weights = {e["body"]["model"]["name"]: e["body"]["model"]["weights_sha256"] for e in events}
    cell = next(c for c in plan["cells"] if c["model"] == "nf4" and c["fewshot"] == 3)
    folder = run / "cells" / cell["cell_id"]
    proc = cli("card", str(folder), "--format", "yaml", cwd=run)
    assert proc.returncode == 0, proc.stderr
    card = GridCard.model_validate(yaml.safe_load(proc.stdout))
    summary = json.loads((folder / "summary.json").read_text())
    assert card.config_sha256 == cell["config_sha256"] and card.plan_sha256 == plan["plan_sha256"]
    assert card.model.weights_sha256 == weights["nf4"] != weights["fp32"]  # NF4 is its own checkpoint
    assert card.model.quantization == "nf4" and card.model.runtime["device"] == "cpu"
    assert {s.metric: s.value for s in card.scores} == {k: v["value"] for k, v in summary["metrics"].items()}
    assert card.fewshot == 3 and len(card.exemplar_ids) == 3
    assert card.scoring == "logprob" and "argmax" in card.scoring_rule
    assert card.items == 6 and card.data_files and all(len(h) == 64 for h in card.data_files.values())
    other = next(c for c in plan["cells"] if c["model"] == "nf4" and c["benchmark"] == cell["benchmark"]
                 and c["template"] != cell["template"])
    other_card = yaml.safe_load((run / "report" / "cards" / f"{other['cell_id']}.yaml").read_text())
    assert other_card["template_sha256"] != card.template_sha256
    markdown = cli("card", str(folder), cwd=run)
    assert markdown.returncode == 0 and f"### GRID card `{cell['cell_id']}`" in markdown.stdout
    assert weights["nf4"] in markdown.stdout


def test_a_report_inside_the_run_keeps_it_verifiable_and_is_not_clobbered(run: Path) -> None:
    assert cli("verify", str(run), cwd=run).returncode == 0
    before = (run / "report" / "stats.json").read_bytes()
    proc = cli("stats", str(run), cwd=run)
    assert proc.returncode == 2 and "already exists" in proc.stderr and "--overwrite" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and (run / "report" / "stats.json").read_bytes() == before
    # The same run and settings give the same statistics.
    proc = cli("stats", str(run), "--n-resamples", "300", "--overwrite", cwd=run)
    assert proc.returncode == 0, proc.stderr
    assert (run / "report" / "stats.json").read_bytes() == before


def test_stats_and_card_refuse_bad_input(run: Path, tmp_path: Path) -> None:
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run, unfinished, ignore=shutil.ignore_patterns("report"))
    (unfinished / "manifest.json").unlink()
    proc = cli("stats", str(unfinished), cwd=tmp_path)
    assert proc.returncode == 2 and "unfinished grid run" in proc.stderr and "resume" in proc.stderr
    tampered = tmp_path / "tampered"
    shutil.copytree(run, tampered, ignore=shutil.ignore_patterns("report"))
    summary = next((tampered / "cells").iterdir()) / "summary.json"
    summary.write_text(summary.read_text().replace('"value": ', '"value": 0.5 + ', 1))
    proc = cli("stats", str(tampered), cwd=tmp_path)
    assert proc.returncode == 2 and "fails verification" in proc.stderr and "safetyrepro verify" in proc.stderr
    assert not (tampered / "report").exists()
    for args, message in ((("stats", str(tmp_path)), "is not a grid run"),
                          (("card", str(run)), "is not a grid cell folder"),
                          (("card", str(next((run / "cells").iterdir())), "--format", "pdf"), "unknown card format")):
        proc = cli(*args, cwd=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr

"""`safetyrepro pilot` on a real pilot of the embedded model (three instruments from its weights, two
benchmarks, few items) and the preregistration a run is then checked against (`plan --freeze`,
`grid --prereg`, `verify`, `stats`, the GRID cards)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from cli_in_process import cli

from safetyrepro.adapters import _registry
from safetyrepro.adapters.config import load_config_file
from safetyrepro.adapters.grid import build_grid, plan
from safetyrepro.adapters.records import ItemRecord

GRID = {"models": [{"name": "fp32"}, {"name": "bf16", "dtype": "bfloat16"}, {"name": "nf4", "quantization": "nf4"}],
        "benchmarks": ["bbq", "crows_pairs"], "templates": ["minimal", "persona"], "scorings": ["logprob"],
        "fewshots": [0, 3], "decodings": ["greedy", "t0.7"], "limit": 6, "batch_size": 4,
        "gates": {"repeat": {"configs": [{"template": "minimal"}]}, "replay": None}}
TINY = {"models": [{"name": "fp32"}], "benchmarks": ["toxigen"], "templates": ["minimal"], "scorings": ["logprob"],
        "fewshots": [0], "decodings": ["greedy"], "limit": 3}


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pilot")
    (root / "grid.yaml").write_text(yaml.safe_dump(GRID))
    proc = cli("pilot", "grid.yaml", "--out", "p", "--items", "6", "--simulations", "40", cwd=root)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (root / "stdout.txt").write_text(proc.stdout)
    return root


def test_the_pilot_is_a_verifiable_run_of_a_seeded_share_of_configurations(pilot: Path) -> None:
    out = pilot / "p"
    assert sorted(p.name for p in out.iterdir()) == sorted(["run", "pilot.json", "design.json", "grid.proposed.yaml",
                                                             "report.md", "report.html", "detection_limit.png",
                                                             "items_needed.png"])
    assert cli("verify", out / "run").returncode == 0
    frozen = json.loads((out / "run" / "plan.json").read_text())
    # 4 distinct configurations per benchmark (the logprob path's two decodings are one measurement):
    # a quarter is 1, the pilot's floor is 2, every model, every configuration repeated.
    configs = {(c["benchmark"], c["template"], c["fewshot"], c["decoding"]) for c in frozen["cells"]}
    assert len(configs) == 4 and {c[3] for c in configs} == {"greedy"}
    assert {c["model"] for c in frozen["cells"]} == {"fp32", "bf16", "nf4"} and len(frozen["cells"]) == 12
    assert frozen["grid"]["limit"] == 6 and frozen["grid"]["gates"]["repeat"]["configs"] == []
    assert len(list((out / "run" / "cells").glob("*/repeat/records.jsonl"))) == 12
    design = json.loads((out / "design.json").read_text())
    assert design["grid_plan_sha256"] == plan(build_grid(GRID))["plan_sha256"]
    assert design["pilot_plan_sha256"] == frozen["plan_sha256"]


def test_each_comparison_is_recomputed_from_the_records(pilot: Path) -> None:
    """BBQ's primary metric is a plain mean: its spread is the sample sd of the per-item differences."""
    out = pilot / "p"
    design = json.loads((out / "design.json").read_text())
    frozen = json.loads((out / "run" / "plan.json").read_text())
    bench = _registry.get_benchmark("bbq")
    rows = [r for r in design["comparisons"] if r["benchmark"] == "bbq"]
    assert len(rows) == 2 * 3  # two configurations x three pairs
    for row in rows:
        a, b = row["pair"].split(" vs ")
        cells = {c["model"]: c["cell_id"] for c in frozen["cells"] if c["benchmark"] == "bbq"
                 and f"template={c['template']}" in row["config"] and f"fewshot={c['fewshot']} " in row["config"] + " "}
        outcome = {m: np.array([bench.item_outcome(ItemRecord.model_validate_json(line)) for line in
                                (out / "run" / "cells" / cells[m] / "records.jsonl").read_text().splitlines()])
                   for m in (a, b)}
        d = outcome[a] - outcome[b]
        assert row["n"] == 6 and row["difference"] == pytest.approx(d.mean())
        assert row["sigma"] == pytest.approx(d.std(ddof=1) if len(set(d)) > 1 else 0.0, abs=1e-12)
        assert row["discordant_share"] == pytest.approx(np.mean(d != 0))
        gap = math.sqrt(max(0.0, d.mean() ** 2 - (row["sigma"] ** 2) / 6))
        assert (row["gap"] or 0.0) == pytest.approx(gap, abs=1e-12)


def test_the_report_predicts_the_outcome_at_the_grids_size_and_proposes_a_size(pilot: Path) -> None:
    out = pilot / "p"
    design = json.loads((out / "design.json").read_text())
    stdout = (pilot / "stdout.txt").read_text()
    for name, b in design["benchmarks"].items():
        assert b["family"] == 3 * 4  # three pairs x the grid's four distinct configurations
        assert b["subset_size"] >= 100
        # At 6 items no comparison can be resolved: an exact test over 12 comparisons needs 9 discordant items.
        assert b["resolvable"]["grid"] == 0 and b["effective"]["grid"]["pairs"] == 0
        assert (f'{name}: at 6 items per cell, 0 of {b["comparisons"]} comparisons resolvable' in stdout
                and 'the run would say "cannot tell"' in stdout)
        need = b["items_for_share"]
        assert need is None or need >= math.log2(2 * 12 / 0.05)  # never fewer than an exact test needs
        # the effective denominator, recounted from the comparisons
        rows = [r for r in design["comparisons"] if r["benchmark"] == name and r["sigma"] is not None]
        ok = {(r["config"], r["pair"]) for r in rows if r["items_needed"] is not None and r["items_needed"] <= 6}
        effective = b["effective"]["grid"]
        assert effective["pairs"] == len({p for _, p in ok}) and effective["of_pairs"] == 3
        assert effective["configs"] == sum(all((c, r["pair"]) in ok for r in rows if r["config"] == c)
                                           for c in {r["config"] for r in rows})
    for gate in design["gates"].values():
        assert 0.0 <= gate["grid"]["pass_healthy"] <= 1.0 and gate["cells"] == 6  # the minimal template's cells
    markdown = (out / "report.md").read_text()
    assert "## What the pilot predicts" in markdown and "![detection limit](detection_limit.png)" in markdown
    assert (out / "detection_limit.png").read_bytes()[:4] == b"\x89PNG"
    # The proposal is a grid; nothing else of the user's grid changed.
    proposed = build_grid(load_config_file(out / "grid.proposed.yaml"))
    assert proposed.limit == design["proposed_limit"]
    assert proposed.model_copy(update={"limit": GRID["limit"], "gates": build_grid(GRID).gates}) == build_grid(GRID)
    assert "# limit" in (out / "grid.proposed.yaml").read_text()


def test_a_rerun_resumes_and_a_foreign_file_is_never_touched(pilot: Path) -> None:
    before = (pilot / "p" / "run" / "events.jsonl").read_bytes()
    proc = cli("pilot", "grid.yaml", "--out", "p", "--items", "6", "--simulations", "40", cwd=pilot)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (pilot / "p" / "run" / "events.jsonl").read_bytes() == before  # nothing asked again
    (pilot / "p" / "notes.txt").write_text("mine")
    proc = cli("pilot", "grid.yaml", "--out", "p", "--items", "6", cwd=pilot)
    assert proc.returncode == 2 and "notes.txt" in proc.stderr and "error:" in proc.stderr
    assert (pilot / "p" / "notes.txt").read_text() == "mine"
    (pilot / "p" / "notes.txt").unlink()
    proc = cli("pilot", "grid.yaml", "--out", "p", "--items", "7", cwd=pilot)  # another pilot plan
    assert proc.returncode == 2 and "another plan" in proc.stderr
    assert (pilot / "p" / "run" / "events.jsonl").read_bytes() == before
    # A pilot.json the pilot did not write, and a grid run no pilot wrote, are never replaced.
    other = pilot / "other"
    shutil.copytree(pilot / "p" / "run", other / "run")
    (other / "pilot.json").write_text('{"mine": true}')
    for extra in ([], ["--overwrite"]):
        proc = cli("pilot", "grid.yaml", "--out", "other", "--items", "7", *extra, cwd=pilot)
        assert proc.returncode == 2 and "pilot.json" in proc.stderr and "run/ (not a pilot's grid run)" in proc.stderr
    assert (other / "pilot.json").read_text() == '{"mine": true}'
    assert (other / "run" / "events.jsonl").read_bytes() == before


@pytest.fixture(scope="module")
def prereg(pilot: Path) -> Path:
    root = pilot / "prereg"
    root.mkdir()
    (root / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    proc = cli("plan", "tiny.yaml", "--freeze", "record", "--pilot", pilot / "p", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "record_sha256" in proc.stdout
    (root / "freeze.txt").write_text(proc.stdout)
    proc = cli("grid", "tiny.yaml", "--out", "run", "--prereg", "record", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root


def test_a_preregistered_run_is_reported_as_such(prereg: Path) -> None:
    run = prereg / "run"
    assert (run / "prereg.jsonl").read_bytes() == (prereg / "record" / "prereg.jsonl").read_bytes()
    assert "prereg.jsonl" in json.loads((run / "manifest.json").read_text())["files"]
    proc = cli("verify", run)
    quoted = (prereg / "freeze.txt").read_text().split("record_sha256 ")[1].split()[0]
    assert proc.returncode == 0 and f"prereg_record_sha256 {quoted} (frozen at " in proc.stdout
    proc = cli("stats", run, "--n-resamples", "50")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "preregistration: preregistered at " in proc.stdout and ", with a pilot), first request at " in proc.stdout
    stats = json.loads((run / "report" / "stats.json").read_text())
    record = stats["preregistration"]
    quoted = (prereg / "freeze.txt").read_text().split("record_sha256 ")[1].split()[0]
    assert record["preregistered"] and record["utc"] < record["first_request_utc"]
    card = next((run / "report" / "cards").glob("*.yaml")).read_text()
    assert f"preregistered at {record['utc']}" in card and record["record_sha256"] == quoted
    assert "Preregistration: preregistered at" in (run / "report" / "report.md").read_text()


def test_a_changed_plan_is_refused_and_a_record_is_never_replaced(prereg: Path) -> None:
    (prereg / "changed.yaml").write_text(yaml.safe_dump({**TINY, "limit": 4}))
    proc = cli("grid", "changed.yaml", "--out", "run2", "--prereg", "record", cwd=prereg)
    assert proc.returncode == 2 and "differs from the one preregistered" in proc.stderr
    assert not (prereg / "run2").exists()
    before = (prereg / "record" / "prereg.jsonl").read_bytes()
    proc = cli("plan", "changed.yaml", "--freeze", "record", cwd=prereg)
    assert proc.returncode == 2 and "never replaced" in proc.stderr
    assert (prereg / "record" / "prereg.jsonl").read_bytes() == before
    # A run begun without the record cannot adopt it later.
    proc = cli("grid", "tiny.yaml", "--out", "plain", cwd=prereg)
    assert proc.returncode == 0
    proc = cli("grid", "tiny.yaml", "--out", "plain", "--prereg", "record", cwd=prereg)
    assert proc.returncode == 2 and "not run under the preregistration" in proc.stderr
    assert cli("stats", prereg / "plain", "--n-resamples", "50").stdout.count("preregistration: not preregistered") == 1


def test_a_run_keeps_the_record_it_began_with(prereg: Path) -> None:
    # A second record of the same plan: another time, so another chain.
    assert cli("plan", "tiny.yaml", "--freeze", "record2", cwd=prereg).returncode == 0
    proc = cli("grid", "tiny.yaml", "--out", "run", "--prereg", "record2", cwd=prereg)
    assert proc.returncode == 2 and "not run under the preregistration given" in proc.stderr
    unfinished = prereg / "unfinished"
    shutil.copytree(prereg / "run", unfinished)
    shutil.rmtree(unfinished / "report", ignore_errors=True)
    (unfinished / "manifest.json").unlink()
    before = (unfinished / "events.jsonl").read_bytes()
    proc = cli("grid", "tiny.yaml", "--out", "unfinished", "--prereg", "record2", cwd=prereg)
    assert proc.returncode == 2 and "began under another preregistration record" in proc.stderr
    assert (unfinished / "events.jsonl").read_bytes() == before
    # Requests logged without a record: it cannot be adopted part-way.
    plain = prereg / "plain-unfinished"
    shutil.copytree(prereg / "run", plain)
    shutil.rmtree(plain / "report", ignore_errors=True)
    for name in ("manifest.json", "prereg.jsonl"):
        (plain / name).unlink()
    proc = cli("grid", "tiny.yaml", "--out", "plain-unfinished", "--prereg", "record", cwd=prereg)
    assert proc.returncode == 2 and "began without a preregistration record" in proc.stderr
    assert not (plain / "prereg.jsonl").exists()
    # Resumed without --prereg, a preregistered run finishes under its own record.
    proc = cli("grid", "tiny.yaml", "--out", "unfinished", cwd=prereg)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert cli("verify", unfinished).returncode == 0


def test_verify_checks_the_record_a_run_carries(prereg: Path) -> None:
    import hashlib

    # Another valid record of the same plan swapped in, the manifest re-hashed: the log's anchor names
    # the record it began with, so the swap is caught.
    swapped = prereg / "swapped"
    shutil.copytree(prereg / "run", swapped)
    shutil.rmtree(swapped / "report", ignore_errors=True)
    assert cli("plan", "tiny.yaml", "--freeze", "record3", cwd=prereg).returncode == 0
    shutil.copyfile(prereg / "record3" / "prereg.jsonl", swapped / "prereg.jsonl")
    manifest = json.loads((swapped / "manifest.json").read_text())
    manifest["files"]["prereg.jsonl"] = hashlib.sha256((swapped / "prereg.jsonl").read_bytes()).hexdigest()
    (swapped / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    proc = cli("verify", swapped)
    assert proc.returncode == 1 and "events.jsonl" in proc.stdout
    work = prereg / "tampered"
    shutil.copytree(prereg / "run", work)
    shutil.rmtree(work / "report", ignore_errors=True)
    record = work / "prereg.jsonl"
    lines = record.read_bytes().split(b"\n")
    entry = json.loads(lines[-2])
    entry["body"]["utc"] = "2020-01-01T00:00:00+00:00"  # an earlier time, the chain not redone
    record.write_bytes(b"\n".join([*lines[:-2], json.dumps(entry, separators=(",", ":")).encode(), b""]))
    proc = cli("verify", work)
    assert proc.returncode == 1 and "prereg.jsonl" in proc.stdout
    record.unlink()
    proc = cli("verify", work)
    assert proc.returncode == 1 and "prereg.jsonl is missing (deleted)" in proc.stdout

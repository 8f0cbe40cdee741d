"""`safetyrepro stats` and `safetyrepro card` on a real grid run of three model variants."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from cli_in_process import cli

# Three instruments from the embedded weights (rankings need three models): fp32, bf16, NF4.
GRID = {"models": [{"name": "fp32"}, {"name": "bf16", "dtype": "bfloat16"}, {"name": "nf4", "quantization": "nf4"}],
        "benchmarks": ["toxigen", "crows_pairs"], "templates": ["minimal", "persona"], "scorings": ["logprob"],
        "fewshots": [0, 3], "decodings": ["greedy"], "limit": 4, "batch_size": 4,
        # Frozen stability gates: one configuration asked twice by every model, a quarter replayed.
        "gates": {"repeat": {"configs": [{"benchmark": "toxigen", "template": "minimal", "fewshot": 0}]},
                  "replay": {"share": 0.25}}}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stats")
    (root / "grid.yaml").write_text(yaml.safe_dump(GRID))
    proc = cli("grid", "grid.yaml", "--out", "g", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = cli("gate", "g", "--replay", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "instrument gates" in proc.stdout and "noise floor toxigen" in proc.stdout
    proc = cli("stats", "g", "--n-resamples", "200", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rank stability per benchmark" in proc.stdout
    return root / "g"


def test_report_folder_holds_every_table_plot_and_card(run: Path) -> None:
    report = run / "report"
    cells = json.loads((run / "plan.json").read_text())["cells"]
    for name in ("report.md", "report.html", "stats.json", "scores.csv", "flips.csv", "orderings.csv", "attribution.csv",
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
    assert stats["format"] == "safetyrepro-stats/2" and stats["multiplicity"] == "holm"
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
            assert row["no_reversal"] == ((n_plus == 0 or n_minus == 0) and n_plus + n_minus > 0)
            # Resolved: only the differences the paired test resolves (Holm-adjusted p < 0.05) count.
            gaps = [g for g in b["tiers"]["grid"]["gaps"] if g["pair"] == f"{a} vs {c}"]
            assert len(gaps) == len(diff)
            assert row["n_plus_resolved"] == sum(g["resolved"] and g["difference"] > 0 for g in gaps)
            assert row["n_minus_resolved"] == sum(g["resolved"] and g["difference"] < 0 for g in gaps)
        tier = b["tiers"]["grid"]
        assert sum(o["configs"] for o in tier["orderings"]) == tier["n_configs"] == tier["n_configs_raw"] == 4
        assert tier["possible_orderings"] == 6 and tier["duplicates"] == []
        for gap in tier["gaps"]:  # 4 items: exact tests, and no split of 4 items can reach 0.05
            assert gap["exact"] and not gap["resolved"] and gap["p_adjusted"] is None  # none is in the family
            assert gap["status"] == ("identical outcomes" if gap["discordant"] == 0 else "too small to resolve")
            assert gap["p_value"] >= 0.125 - 1e-12 and gap["identical"] == (gap["discordant"] == 0)
        # Item-level attribution: shares of the item outcomes' total sum of squares, the remainder named.
        for analysis in {r["analysis"] for r in tier["attribution"]}:
            rows_ = [r for r in tier["attribution"] if r["analysis"] == analysis]
            assert sum(r["share"] for r in rows_) == pytest.approx(1.0)
            assert [r["term"] for r in rows_][-3:] == ["item", "within cells (item x configuration, noise)", "not attributed"]
        # Borda: a model's points are the models it beats plus half its ties, summed over configurations.
        points = {m: 0.0 for m in wide.columns}
        for _, config in wide.iterrows():
            for a, c in itertools.permutations(wide.columns, 2):
                points[a] += 1.0 if config[a] - config[c] > 1e-9 else 0.5 if abs(config[a] - config[c]) <= 1e-9 else 0
        assert {r["model"]: r["points"] for r in tier["borda"]} == pytest.approx(points)


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
    assert card.items == 4 and card.data_files and all(len(h) == 64 for h in card.data_files.values())
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
    assert proc.returncode == 2 and "already holds a SafetyRepro report" in proc.stderr and "--overwrite" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and (run / "report" / "stats.json").read_bytes() == before
    # The same run and settings give the same statistics.
    proc = cli("stats", str(run), "--n-resamples", "200", "--overwrite", cwd=run)
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


def _cell_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_gates_numbers_are_recomputed_from_the_records(run: Path) -> None:
    from scipy.stats import spearmanr

    from safetyrepro.adapters.instrument import item_score, verdict
    from safetyrepro.adapters.records import ItemRecord

    document = json.loads((run / "gates" / "gates.json").read_text())
    plan = json.loads((run / "plan.json").read_text())
    assert document["format"] == "safetyrepro-gates/1" and document["plan_sha256"] == plan["plan_sha256"]
    repeat = document["gates"]["repeat"]
    chosen = [c for c in plan["cells"] if (c["benchmark"], c["template"], c["fewshot"]) == ("toxigen", "minimal", 0)]
    assert repeat["cells"] == len(chosen) == 3 and repeat["configs"] == 1
    rhos, agree = [], []
    for cell in chosen:
        folder = run / "cells" / cell["cell_id"]
        first = [ItemRecord.model_validate(r) for r in _cell_records(folder / "records.jsonl")]
        again = [ItemRecord.model_validate(r) for r in _cell_records(folder / "repeat" / "records.jsonl")]
        assert [r.item_id for r in first] == [r.item_id for r in again] and len(first) == 4
        x, y = [item_score(r) for r in first], [item_score(r) for r in again]
        rhos.append(1.0 if x == pytest.approx(y, abs=1e-12) else float(spearmanr(x, y).statistic))
        agree += [a.prediction == b.prediction for a, b in zip(first, again)]
    assert repeat["median_item_spearman"] == pytest.approx(sorted(rhos)[1])
    assert repeat["prediction_agreement"] == pytest.approx(sum(agree) / len(agree))
    assert repeat["status"] == verdict([repeat["median_item_spearman"], repeat["median_ranking_spearman"]],
                                       repeat["threshold"])
    # Borda across repeats, recounted: each measurement of the repeated configuration is one
    # ranking (points: models beaten plus half the ties), first alone and first + repeat.
    first = pd.read_parquet(run / "cells.parquet").query("primary")
    again = pd.read_parquet(run / "repeats.parquet").query("primary")
    scores = [dict(zip(t["model"], t["value"])) for t in (first[first["cell_id"].isin([c["cell_id"] for c in chosen])],
                                                         again)]

    def points(ranking: dict) -> dict:
        return {m: sum((v > w) + 0.5 * (v == w) for n, w in ranking.items() if n != m) for m, v in ranking.items()}

    aggregate = repeat["borda_across_repeats"]["toxigen"]
    assert {r["model"]: r["points"] for r in aggregate["first"]} == points(scores[0])
    both = {m: points(scores[0])[m] + points(scores[1])[m] for m in scores[0]}
    assert {r["model"]: r["points"] for r in aggregate["with_repeats"]} == both
    # The logged repeat requests are separate requests, marked as repeats.
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()[1:]]
    assert sum(e["body"]["request"].get("repeat") == 1 for e in events) > 0
    # Replay: the chosen quarter of the configurations, asked again byte for byte, agrees.
    replay = document["gates"]["replay"]
    assert replay["configs"] == 2 and replay["requests"] > 0 and replay["same_model_identity"] is True
    assert replay["status"] == "PASS" and replay["prediction_agreement"] == 1.0
    assert set(document["noise_floor"]) == {"toxigen"} and document["noise_floor"]["toxigen"]["repeat_pairs"] == 3
    # The statistics carry the gates' verdict.
    stats = json.loads((run / "report" / "stats.json").read_text())
    assert stats["gates"]["supported"] is (document["supported"]) and stats["gates"]["frozen"] == ["repeat", "replay"]
    verdict_line = "yes" if document["supported"] else "NO"
    assert f"**Instrument gates: {verdict_line}" in (run / "report" / "report.md").read_text()


def _rewrite_replay(log: Path, change) -> None:  # noqa: ANN001 - a small local helper
    """Rewrite a replay log consistently (as a replay that got other answers would have written it):
    what verify cannot tell from a real replay, so the verdict computed from it is honest."""
    from safetyrepro.adapters.hashing import sha256_json

    lines = log.read_text().splitlines()
    prev, out = json.loads(lines[0])["sha256"], [lines[0]]
    for line in lines[1:]:
        entry = json.loads(line)
        body = entry["body"]
        body["response"] = change(body["response"])
        body["response_sha256"] = sha256_json(body["response"])
        entry = {"seq": entry["seq"], "key": entry["key"], "prev": prev, "body": body}
        entry["sha256"] = prev = sha256_json(entry)
        out.append(json.dumps(entry, separators=(",", ":")))
    log.write_text("\n".join(out) + "\n")


def test_a_failed_gate_marks_every_statistic_as_not_supported(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "failed"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report"))
    gates = copy / "gates" / "gates.json"
    # A replay whose loglikelihoods came back reversed (each candidate's sign flipped): its
    # predictions disagree with the run's, so the replay gate fails when computed from it.
    _rewrite_replay(copy / "gates" / "replay.jsonl", lambda response: [-response[0], response[1]])
    proc = cli("verify", str(copy), cwd=tmp_path)
    assert proc.returncode == 1 and "gates/gates.json: " in proc.stdout  # the written PASS no longer holds
    proc = cli("stats", str(copy), "--n-resamples", "20", cwd=tmp_path)
    assert proc.returncode == 2 and "gate verdict does not hold" in proc.stderr and "safetyrepro gate" in proc.stderr
    assert cli("gate", str(copy), cwd=tmp_path).returncode == 1  # FAIL, written
    document = json.loads(gates.read_text())
    assert document["gates"]["replay"]["status"] == "FAIL" and document["supported"] is False
    assert cli("verify", str(copy), cwd=tmp_path).returncode == 0
    proc = cli("stats", str(copy), "--n-resamples", "20", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "NO (replay gate failed)" in proc.stdout and "not supported" in proc.stdout
    stats = json.loads((copy / "report" / "stats.json").read_text())
    assert stats["gates"]["supported"] is False and stats["gates"]["failed"] == ["replay"]
    markdown = (copy / "report" / "report.md").read_text()
    assert "**Instrument gates: NO (replay gate failed).**" in markdown
    table_rows = [line for line in markdown.splitlines() if line.startswith("| toxigen") and " vs " in line]
    assert table_rows and all("NO (replay gate failed)" in line for line in table_rows)
    # A verdict edited back to PASS is caught before the statistics print it.
    document["gates"]["replay"]["status"], document["supported"] = "PASS", True
    gates.write_text(json.dumps(document))
    proc = cli("stats", str(copy), "--n-resamples", "20", "--out", str(tmp_path / "r2"), cwd=tmp_path)
    assert proc.returncode == 2 and "gate verdict does not hold" in proc.stderr, proc.stderr
    assert "gates.replay.status is 'PASS', the run gives 'FAIL'" in proc.stderr
    assert not (tmp_path / "r2").exists()


def test_gate_command_refuses_a_tampered_replay(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "tampered"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report"))
    log = copy / "gates" / "replay.jsonl"
    lines = log.read_text().splitlines()
    flipped = {'"identical":true': '"identical":false', '"identical":false': '"identical":true'}
    lines[1] = next(lines[1].replace(a, b, 1) for a, b in flipped.items() if a in lines[1])
    log.write_text("\n".join(lines) + "\n")
    before = (copy / "gates" / "gates.json").read_bytes()
    for command in (("gate", str(copy)), ("stats", str(copy))):
        proc = cli(*command, cwd=tmp_path)
        assert proc.returncode == 2 and "replay.jsonl" in proc.stderr and "--replay --overwrite" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert (copy / "gates" / "gates.json").read_bytes() == before  # nothing written over
    assert not (copy / "report").exists()
    proc = cli("verify", str(copy), cwd=tmp_path)
    assert proc.returncode == 1 and "replay.jsonl" in proc.stdout
    # The fix it names works: a new replay replaces the tampered one (only once it is complete).
    proc = cli("gate", str(copy), "--replay", "--overwrite", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cli("verify", str(copy), cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in (copy / "gates").iterdir()) == ["gates.json", "replay.jsonl"]


def test_verify_is_not_fooled_by_derived_markers_or_report_leftovers(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report"))
    # An interrupted report write leaves a staging folder: not an artefact, verify still passes.
    leftover = copy / ".report.staging-0123abcd"
    leftover.mkdir()
    (leftover / "stats.json").write_text("{}")
    assert cli("verify", str(copy), cwd=tmp_path).returncode == 0
    # A gates marker dropped into a cell folder does not hide an edit there.
    cell = next((copy / "cells").iterdir())
    (cell / "gates.json").write_text(json.dumps({"format": "safetyrepro-gates/1"}))
    records = cell / "records.jsonl"
    records.write_text(records.read_text().replace('"item_id"', '"item_id" ', 1))
    proc = cli("verify", str(copy), cwd=tmp_path)
    assert proc.returncode == 1 and "records.jsonl item" in proc.stdout and "formatting only" in proc.stdout, proc.stdout


def test_stats_never_writes_over_the_run_or_a_foreign_folder(run: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    for out, message in ((str(run), "is the run folder or holds it"), (str(run.parent), "is the run folder or holds it"),
                         (".", "does not name a folder"), (str(run / "cells" / "x"), "inside the run's artefacts"),
                         (str(run / "gates"), "inside the run's artefacts"),
                         (str(foreign), "not a SafetyRepro report")):
        proc = cli("stats", str(run), "--out", out, "--overwrite", cwd=run)
        assert proc.returncode == 2 and message in proc.stderr, (out, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert (foreign / "keep.txt").read_text() == "mine"
    assert cli("verify", str(run), cwd=run).returncode == 0


def _rehash_manifest(folder: Path) -> None:
    """Make manifest.json agree with the files again, as a forger would."""
    from safetyrepro.adapters.hashing import sha256_file

    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"] = {name: sha256_file(folder / name) for name in manifest["files"]}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _edit_json(path: Path, change) -> None:  # noqa: ANN001 - a small local helper
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=1) + "\n")


def _edit_table(path: Path, column: str, value) -> None:  # noqa: ANN001 - a small local helper
    table = pd.read_parquet(path)
    table.loc[0, column] = value
    table.to_parquet(path, index=False)


def _edit_first_record(path: Path, field: str, value) -> None:  # noqa: ANN001 - a small local helper
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    record[field] = value
    path.write_text("\n".join([json.dumps(record, separators=(",", ":")), *lines[1:]]) + "\n")


def _first_repeated_cell(folder: Path) -> Path:
    return next(p for p in sorted((folder / "cells").iterdir()) if (p / "repeat").is_dir())


# (what is edited, how, what verify must name): every result edit comes with a re-hashed manifest.
TAMPERS = [
    ("cell summary", lambda f: _edit_json(next(iter(sorted((f / "cells").iterdir()))) / "summary.json",
                                          lambda d: d["metrics"][next(iter(d["metrics"]))].update(value=0.123)),
     "summary.json: metrics."),
    ("a prediction", lambda f: _edit_first_record(next(iter(sorted((f / "cells").iterdir()))) / "records.jsonl",
                                                  "prediction", 1), "records.jsonl item"),
    ("cells.parquet", lambda f: _edit_table(f / "cells.parquet", "value", 0.987), "cells.parquet row 0"),
    ("the run summary", lambda f: _edit_json(f / "summary.json", lambda d: d.update(requests=1)),
     "summary.json: requests is 1"),
    ("repeats.parquet", lambda f: _edit_table(f / "repeats.parquet", "ci_low", -1.0), "repeats.parquet row 0"),
    ("a repeat's records", lambda f: _edit_first_record(_first_repeated_cell(f) / "repeat" / "records.jsonl",
                                                        "extraction_rule", "forged"), "repeat/records.jsonl item"),
    ("the gate verdict", lambda f: _edit_json(f / "gates" / "gates.json",
                                              lambda d: d["gates"]["repeat"].update(status="PASS", threshold=0.0)),
     "gates/gates.json: gates.repeat.threshold is 0.0"),
]


@pytest.mark.parametrize(("name", "tamper", "named"), TAMPERS, ids=[t[0] for t in TAMPERS])
def test_verify_recomputes_every_result_from_the_log(run: Path, tmp_path: Path, name: str, tamper, named: str) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report"))
    tamper(copy)
    _rehash_manifest(copy)
    proc = cli("verify", str(copy), cwd=tmp_path)
    assert proc.returncode == 1 and named in proc.stdout and "(edited)" in proc.stdout, proc.stdout
    assert "does not match its manifest.json hash" not in proc.stdout  # the manifest agrees: recomputation caught it
    assert proc.stderr == ""


@pytest.mark.parametrize(("damage", "named"), [
    ("torn", "the last line is torn"), ("empty", "events.jsonl is empty"), ("deleted", "events.jsonl is missing"),
    ("unreadable", "events.jsonl cannot be read")])
def test_verify_reports_a_damaged_log_without_a_traceback(run: Path, tmp_path: Path, damage: str, named: str) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report"))
    events = copy / "events.jsonl"
    if damage == "torn":
        events.write_bytes(events.read_bytes()[:-30])
    elif damage == "empty":
        events.write_bytes(b"")
    else:
        events.unlink()
        if damage == "unreadable":
            events.mkdir()  # (as root a chmod would not stop the read)
    proc = cli("verify", str(copy), cwd=tmp_path)
    assert proc.returncode == 1 and named in proc.stdout, proc.stdout
    assert "log_sha256 none" in proc.stdout and proc.stderr == ""


def test_verify_prints_the_anchor_and_checks_an_expected_one(run: Path, tmp_path: Path) -> None:
    from safetyrepro.adapters.gridverify import open_verified

    proc = cli("verify", str(run), cwd=tmp_path)
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines()[1:])
    plan = json.loads((run / "plan.json").read_text())
    last = json.loads((run / "events.jsonl").read_text().splitlines()[-1])
    assert proc.returncode == 0 and lines == {"plan_sha256": plan["plan_sha256"], "log_sha256": last["sha256"]}
    assert cli("verify", str(run), "--expect", last["sha256"], cwd=tmp_path).returncode == 0
    # A log and results rewritten consistently pass every other check; the quoted hash catches them.
    copy = tmp_path / "rewritten"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report"))
    entries = [json.loads(line) for line in (copy / "events.jsonl").read_text().splitlines()]
    from safetyrepro.adapters.hashing import sha256_json

    prev = entries[0]["sha256"]
    for entry in entries[1:]:
        entry["body"]["utc"] = "2020-01-01T00:00:00.000+00:00"  # changes no result, only the chain
        entry.update(prev=prev, sha256=sha256_json({k: entry[k] for k in ("seq", "key", "body")} | {"prev": prev}))
        prev = entry["sha256"]
    (copy / "events.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries))
    _rehash_manifest(copy)
    _edit_json(copy / "manifest.json", lambda d: d.update(events_last_sha256=prev))
    shutil.rmtree(copy / "gates")
    assert cli("verify", str(copy), cwd=tmp_path).returncode == 0
    proc = cli("verify", str(copy), "--expect", last["sha256"], cwd=tmp_path)
    assert proc.returncode == 1 and f"not the expected {last['sha256']}" in proc.stdout
    # The GRID card quotes the anchor.
    card = cli("card", str(next((run / "cells").iterdir())), "--format", "yaml", cwd=tmp_path)
    assert f"log_sha256: {last['sha256']}" in card.stdout
    assert open_verified(run).log_sha256 == last["sha256"]
    for args, message in ((("verify", str(tmp_path)), "is not a grid run"), (("verify", str(tmp_path / "nope")), "is not a folder"),
                          (("verify", str(run), "--expect", "abc"), "is not a SHA-256")):
        proc = cli(*args, cwd=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr and proc.stdout == "", proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("what", "edit", "named"), [
    ("a plan cell without its id", lambda f: _edit_json(f / "plan.json", lambda d: d["cells"][0].pop("cell_id")),
     "plan.json is not the plan of its own grid"),
    ("plan cells that are not cells", lambda f: _edit_json(f / "plan.json", lambda d: d.update(cells=["x"])),
     "plan.json is not the plan of its own grid"),
    ("replay responses that are not responses",
     lambda f: _rewrite_replay(f / "gates" / "replay.jsonl", lambda response: "garbage"), "gates/gates.json"),
])
def test_verify_reports_what_an_edit_makes_unreadable_without_a_traceback(run: Path, tmp_path: Path, what: str,
                                                                          edit, named: str) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report"))
    edit(copy)
    proc = cli("verify", str(copy), cwd=tmp_path)
    assert proc.returncode == 1 and named in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert proc.stderr == ""


def test_verify_names_library_drift_beside_a_difference(run: Path, tmp_path: Path) -> None:
    """The manifest records the analysis libraries; a difference found under other versions says
    it may be theirs (a checker elsewhere cannot tell drift from an edit), naming them."""
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report"))
    manifest = json.loads((copy / "manifest.json").read_text())
    assert {"python", "numpy", "scipy", "pandas", "pyarrow", "pydantic"} <= set(manifest["analysis_versions"])
    _edit_json(copy / "summary.json", lambda d: d.update(requests=1))
    _rehash_manifest(copy)
    _edit_json(copy / "manifest.json", lambda d: d["analysis_versions"].update(numpy="0.0"))
    proc = cli("verify", str(copy), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert "summary.json: requests is 1" in proc.stdout and "(edited, or computed by other library versions: numpy 0.0 " \
           "in the run" in proc.stdout, proc.stdout


def test_statistics_count_a_measurement_once_on_a_real_run(tmp_path: Path) -> None:
    """On the logprob path a direct template computes the same thing under greedy and T=0.7: the
    two cells are one configuration for every statistic, listed as such, the raw count beside."""
    grid = {"models": [{"name": "fp32"}, {"name": "bf16", "dtype": "bfloat16"}], "benchmarks": ["toxigen"],
            "templates": ["minimal"], "scorings": ["logprob"], "fewshots": [0, 3], "decodings": ["greedy", "t0.7"],
            "limit": 6, "batch_size": 6}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    assert cli("grid", "grid.yaml", "--out", "g", cwd=tmp_path).returncode == 0
    proc = cli("stats", "g", "--n-resamples", "50", "--multiplicity", "bh", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads((tmp_path / "g" / "report" / "stats.json").read_text())
    assert stats["multiplicity"] == "bh"
    tier = stats["benchmarks"]["toxigen"]["tiers"]["grid"]
    assert (tier["n_configs_raw"], tier["n_configs"]) == (4, 2)
    assert tier["duplicates"] == [
        {"config": f"template=minimal scoring=logprob fewshot={k} decoding=greedy",
         "same_measurement_as": [f"template=minimal scoring=logprob fewshot={k} decoding=t0.7"]} for k in (0, 3)]
    assert tier["flips"][0]["n_configs"] == 2 and len(tier["gaps"]) == 2
    assert {g["config"].split()[-1] for g in tier["gaps"]} == {"decoding=greedy"}
    # 6 items: exact tests; a comparison is "too small" exactly where no arrangement of its
    # discordant items could reach 0.05 (how many there are is the models' business: fp32 and bf16
    # disagree on more or fewer items with the CPU's bf16 kernels, so no count is asserted).
    for g in tier["gaps"]:
        assert g["exact"] and g["discordant"] <= 6
        assert (g["status"] == "too small to resolve") == (g["discordant"] > 0 and g["smallest_p"] >= 0.05), g
    # Decoding cannot act here, so it is no factor of the attribution.
    assert "decoding" not in {r["term"] for r in tier["attribution"]}
    markdown = (tmp_path / "g" / "report" / "report.md").read_text()
    assert "4 configurations, 2 distinct measurements" in markdown and "Benjamini-Hochberg" in markdown
    bad = cli("stats", "g", "--multiplicity", "bonferroni", "--out", "r2", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown multiplicity control 'bonferroni'" in bad.stderr


def test_a_cell_where_nothing_was_read_is_no_number_anywhere(tmp_path: Path) -> None:
    """Three new tokens are too few for the embedded model to state an XSTest decision: every regex
    cell is unparsed. Its metrics are null in the files, n/a in the tables and the card, and the
    statistics leave it out and say so (the logprob cells still compare)."""
    import pyarrow.parquet as pq

    grid = {"models": [{"name": "fp32"}, {"name": "bf16", "dtype": "bfloat16"}], "benchmarks": ["xstest"],
            "templates": ["minimal"], "scorings": ["logprob", "regex"], "fewshots": [0], "decodings": ["greedy"],
            "limit": 4, "max_new_tokens": 3}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    proc = cli("grid", "grid.yaml", "--out", "g", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads((tmp_path / "g" / "plan.json").read_text())
    regex = [c["cell_id"] for c in plan["cells"] if c["scoring"] == "regex"]
    for cell_id in regex:
        summary = json.loads((tmp_path / "g" / "cells" / cell_id / "summary.json").read_text())
        assert summary["counts"]["unparsed"] == summary["counts"]["items"] == 4
        assert summary["metrics"]["balanced_rate"]["value"] is None  # null, not 0.0 and not NaN
        assert summary["metrics"]["unparsed_rate"]["value"] == 1.0
    table = pq.read_table(tmp_path / "g" / "cells.parquet").to_pandas()
    rows = table[table["cell_id"].isin(regex) & (table["metric"] != "unparsed_rate")]
    assert len(rows) and rows["value"].isna().all()
    assert "n/a" in proc.stdout
    proc = cli("stats", "g", "--n-resamples", "50", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tier = json.loads((tmp_path / "g" / "report" / "stats.json").read_text())["benchmarks"]["xstest"]["tiers"]["grid"]
    assert sorted(u["cell_id"] for u in tier["unscored"]) == sorted(regex)
    assert all(u["reason"] == "no answer could be read: 4 of 4 unparsed" for u in tier["unscored"])
    assert tier["n_configs"] == 1 and all("regex" not in g["config"] for g in tier["gaps"])
    assert "Left out, primary metric undefined (2 cells)" in (tmp_path / "g" / "report" / "report.md").read_text()
    card = cli("card", f"g/cells/{regex[0]}", cwd=tmp_path)
    assert card.returncode == 0 and "| balanced_rate (primary) | n/a | undefined | 4 |" in card.stdout, card.stdout

"""Decode groups (issue 30): a cot x logprob cell's generations, one-row batches between their
candidates, are decoded together -- a fixed, plan-derived grouping, always computed whole, so a run
that starts anywhere in a group logs the bytes an uninterrupted run logs."""

from __future__ import annotations

from typing import Any

import pytest

from safetyrepro.adapters.grid import build_grid, plan
from safetyrepro.adapters.gridexec import run_batches
from safetyrepro.adapters.gridplan import GridPlan

GRID = {"models": [{"name": "m"}], "benchmarks": ["toxigen", "bbq"], "templates": ["minimal", "cot"],
        "scorings": ["logprob", "regex"], "fewshots": [0], "decodings": ["greedy", "t0.7"], "limit": 5,
        "max_new_tokens": 10, "batch_size": 4}


def prepared_plan(**changes: Any) -> GridPlan:
    grid = build_grid({**GRID, **changes})
    return GridPlan(plan(grid), grid, None)


def test_groups_hold_the_one_row_generations_between_their_candidates() -> None:
    prepared = prepared_plan()
    assert prepared.decode_groups, "a cot x logprob cell's generations form groups"
    grouped = set()
    for group in prepared.decode_groups:
        rows = [prepared.requests[k] for n in group for k in prepared.keys[slice(*prepared.batches[n])]]
        assert 1 < len(rows) <= prepared.batch_size
        assert all(r.kind == "generate" and r.model == rows[0].model and rows[0].compatible(r) for r in rows)
        members = {r.key for r in rows}
        # between its first and last batch: its members and what continues them, nothing else
        for n in range(group[0], group[-1] + 1):
            if n not in group:
                assert all(prepared.requests[k].after in members for k in prepared.keys[slice(*prepared.batches[n])])
        assert prepared.computed_with(group[-1]) == [r.key for r in rows]
        grouped.update(group)
    # A one-row generation left alone was left so only because the rows before it were full: a
    # cot x logprob cell's fifth generation after its group of four, a regex cell's fifth after its
    # batch of four.
    alone = [n for n, (a, b) in enumerate(prepared.batches) if b - a == 1 and n not in grouped
             and prepared.requests[prepared.keys[a]].kind == "generate"]
    assert len(alone) == 8
    for n in alone:
        before = max(m for m in range(n) if prepared.requests[prepared.keys[prepared.batches[m][0]]].kind == "generate")
        assert len(prepared.computed_with(before)) == prepared.batch_size
    assert [len(prepared.computed_with(g[0])) for g in prepared.decode_groups] == [4] * 4
    # a batch outside every group is computed alone; batches of one row cannot be grouped
    assert prepared.computed_with(alone[0]) == prepared.keys[slice(*prepared.batches[alone[0]])]
    assert prepared_plan(batch_size=1).decode_groups == []
    # regex cells' generations fill their batches: nothing to group (that the grouping leaves the
    # plan's requests and batches as they were is pinned in test_hashing)
    assert prepared_plan(scorings=["regex"]).decode_groups == []


class RowCounter:
    """The real model, with the row count of each ``decode`` call noted (a spy: every call goes through)."""

    def __init__(self, lm: Any) -> None:
        self.lm, self.calls = lm, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lm, name)

    def decode(self, contexts: list[str], **kwargs: Any) -> Any:
        self.calls.append(len(contexts))
        return self.lm.decode(contexts, **kwargs)


def logged(prepared: GridPlan, lm: Any, done: int, before: dict[str, Any]) -> dict[str, Any]:
    """The responses ``run_batches`` logs after the first ``done`` requests (``before``: those
    logged already, as a resumed run reads them)."""
    found: dict[str, Any] = {}
    responses = dict(before)

    def record(key: str, body: dict[str, Any]) -> None:
        found[key] = responses[key] = body["response"]

    run_batches(prepared, done=done, model_for=lambda _: lm, responses=responses, identities={"m": {}},
                versions={}, record=record, show_progress=False)
    return found


@pytest.fixture(scope="module")
def small() -> GridPlan:
    return prepared_plan(benchmarks=["toxigen"], templates=["cot"], scorings=["logprob"], decodings=["t0.7"])


def test_a_group_is_decoded_once_whole_and_resumed_inside_it_the_same(small: GridPlan, lm) -> None:
    group = small.decode_groups[0]
    spy = RowCounter(lm)
    lm.state_cache(fresh=True)
    whole = logged(small, spy, 0, {})
    assert spy.calls == [4, 1], "the group's four generations in one decode, the last one alone"
    # Resumed after the group's second generation and its candidates: the group is computed whole
    # again (cold cache, as after kill -9), and every response is the uninterrupted run's.
    done = small.batches[group[2] - 1][1]
    kept = dict(list(whole.items())[:done])
    lm.state_cache(fresh=True)
    spy.calls.clear()
    again = logged(small, spy, done, kept)
    assert spy.calls == [4, 1]
    assert again == {k: whole[k] for k in small.keys[done:]}


def test_a_replay_of_part_of_a_group_computes_it_whole(tmp_path, lm, monkeypatch) -> None:  # noqa: ANN001 - pytest's
    """Two cot x logprob cells (0 and 3 shots) whose generations share a group; the replay gate
    replays one of the two configurations, so part of the group: computed whole, at the thread
    count each row logged, the replayed rows are the run's bytes."""
    import json

    import yaml
    from cli_in_process import cli

    from safetyrepro.adapters.gridresults import GridResults
    from safetyrepro.adapters.replay import replay_selection

    doc = {**GRID, "benchmarks": ["toxigen"], "templates": ["cot"], "scorings": ["logprob"], "fewshots": [0, 3],
           "decodings": ["t0.7"], "limit": 3, "gates": {"repeat": None, "replay": {"share": 0.5}}}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(doc))
    done = cli("grid", "grid.yaml", "--out", "g", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    results = GridResults.load(tmp_path / "g")
    prepared = results.prepared
    crossing = [g for g in prepared.decode_groups if len(prepared.computed_with(g[0])) == 4]
    assert crossing, "a group of the first cell's three generations and the second cell's first"
    _, batches = replay_selection(results)
    chosen = {prepared.batches.index(b) for b in batches}
    assert any(0 < len(chosen & set(g)) < len(g) for g in crossing), "the replay holds part of a group"
    # the gate runs in this process on the shared weights: note each decode's rows (every call goes through)
    from safetyrepro.adapters.models.hf import HFLanguageModel

    rows: list[int] = []
    original = HFLanguageModel.decode

    def noted(self: Any, contexts: list[str], **kwargs: Any) -> Any:
        rows.append(len(contexts))
        return original(self, contexts, **kwargs)

    monkeypatch.setattr(HFLanguageModel, "decode", noted)
    replayed = cli("gate", "g", "--replay", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr[-2000:]
    log = (tmp_path / "g" / "gates" / "replay.jsonl").read_text().splitlines()[1:]
    entries = [json.loads(line)["body"] for line in log]
    assert entries and all(e["identical"] for e in entries)
    # the crossing group was decoded whole, once: its four rows, not the replayed part alone
    assert 4 in rows and rows.count(4) == 1, rows
    gates = json.loads((tmp_path / "g" / "gates" / "gates.json").read_text())["gates"]
    assert gates["replay"]["status"] == "PASS", gates["replay"]

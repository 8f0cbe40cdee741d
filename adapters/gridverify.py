"""``safetyrepro verify``: is a finished grid run what its log says it is? Read-only.

What is checked, in order:

1. the plan -- ``plan.json`` is the plan of its own grid (recomputed);
2. the log -- ``events.jsonl``'s header names this plan and its request list, the hash chain is
   unbroken, the entries are the plan's requests in order, none is missing;
3. the results -- every result file is rendered again from the logged responses (the cells'
   records and summaries, ``cells.parquet``, ``repeats.parquet``, ``summary.json``; no model is
   needed) and compared byte for byte with the file on disk, a difference named by file and field;
   no file is missing and none was added. The manifest records the versions of the libraries that
   computed the results (numpy, scipy, pandas, pyarrow, pydantic, Python); where they differ from
   the ones here, a difference is reported as "edited, or computed by other library versions"
   (naming them), since a checker elsewhere cannot tell the two apart;
4. the manifest -- consistent with the files and the log (a convenience: the results were already
   recomputed, so a manifest re-hashed after an edit hides nothing);
5. the preregistration -- a run that carries ``prereg.jsonl`` (``grid --prereg``): the record's
   chain, its plan (this run's) and its time (before the log's first request), :mod:`.prereg`;
6. the gates -- a written verdict (``gates/gates.json``) is recomputed from the run and the replay
   log, so a flipped verdict is caught before ``stats`` prints it.

The run's *anchor* is the plan hash and the log's final chain hash. The chain commits to every
request and response, and the results follow from them, so the anchor identifies everything the
run measured: quote it in a paper or a GRID card, and ``verify --expect LOG_SHA256`` checks a run
against it -- the only defence against a log and results rewritten together consistently.
"""

from __future__ import annotations

import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, DataError
from .gridlayout import (EVENTS, GATES_MARKER, MANIFEST, MANIFEST_FORMAT, PLAN, PREREG, expected_files, is_derived,
                         is_grid_run)
from .hashing import sha256_file
from .identity import analysis_versions
from .journal import verify as verify_journal
from .prereg import check_run as check_prereg

__all__ = ["Verification", "check", "open_verified", "verify"]

_SHOWN = 3
"""Differences named per file (then a count)."""


@dataclass
class Verification:
    """What ``verify`` found: problems (empty: intact) and the run's anchor where the log allows."""

    problems: list[str] = field(default_factory=list)
    """What is wrong with the run itself (plan, log, results, manifest)."""
    gate_problems: list[str] = field(default_factory=list)
    """What is wrong with its written gate verdict (derived: ``safetyrepro gate`` writes it again)."""
    plan_sha256: str | None = None
    log_sha256: str | None = None
    """The final entry's chain hash (None: the log is missing, torn or broken)."""


def verify(out: Path) -> list[str]:
    """Everything wrong with a finished grid run and its gate verdict (empty: intact); see the
    module docstring."""
    found = check(out)
    return found.problems + found.gate_problems


def check(out: Path, *, expect: str | None = None) -> Verification:
    """:func:`verify` with the run's anchor; ``expect``: the log's final chain hash as quoted.

    Raises ConfigError when ``out`` is not a grid run at all (a usage error, not a finding), and
    DataError when the benchmark data the results are recomputed from cannot be read here."""
    if not out.is_dir():
        raise ConfigError(f"{out} is not a folder", "pass a grid run's --out folder")
    if not (out / PLAN).exists() and not is_grid_run(out):
        raise ConfigError(f"{out} is not a grid run (no {PLAN})", "pass the --out folder of `safetyrepro grid`")
    found = Verification()
    try:
        _check_run(out, found, expect)
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever an edit makes unreadable is a finding, not a crash
        found.problems.append(f"the run cannot be checked further: {type(exc).__name__}: {str(exc)[:200]} "
                              "(edited or corrupted)")
    return found


def _check_run(out: Path, found: Verification, expect: str | None) -> None:
    from .grid import build_grid, plan
    from .gridplan import GridPlan

    try:
        frozen = json.loads((out / PLAN).read_text())
        grid = build_grid(frozen["grid"], source=str(out / PLAN))
        found.plan_sha256 = frozen["plan_sha256"]
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, ConfigError) as exc:
        found.problems.append(f"{PLAN} is missing or unreadable ({type(exc).__name__})")
        return
    if plan(grid) != frozen:
        found.problems.append(f"{PLAN} is not the plan of its own grid (edited)")
    try:
        prepared = GridPlan(frozen, grid, None)
    except DataError:
        raise
    except ConfigError as exc:
        found.problems.append(f"the plan cannot be prepared here ({exc.what})")
        return
    bodies, log_ok = _check_log(out, frozen, prepared, found)
    expected = set(expected_files(frozen))
    if (out / PREREG).exists() or PREREG in _manifest_files(out):  # preregistered: its record is an artefact
        expected.add(PREREG)
        found.problems += check_prereg(out, frozen, min((b["utc"] for b in bodies if isinstance(b.get("utc"), str)),
                                                        default=None))
    if expect is not None and found.log_sha256 != expect:
        found.problems.append(f"the log's final hash is {found.log_sha256 or 'unreadable'}, not the expected {expect} "
                              "(another run, or a log rewritten since that hash was quoted)")
    if log_ok:
        _check_results(out, frozen, prepared, bodies, expected, found)
    _check_files(out, expected, found)
    _check_manifest(out, frozen, expected, found)
    if log_ok and not found.problems:
        _check_gates(out, prepared, found)


def _prereg_sha256(out: Path) -> str | None:
    """The record the log must be anchored to (None: none, or unreadable -- reported on its own)."""
    from .prereg import read

    if not (out / PREREG).is_file():
        return None
    try:
        return read(out / PREREG)["record_sha256"]
    except ConfigError:
        return None


def _manifest_files(out: Path) -> dict[str, Any]:
    try:
        files = json.loads((out / MANIFEST).read_text()).get("files")
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return {}
    return files if isinstance(files, dict) else {}


def _check_log(out: Path, frozen: dict[str, Any], prepared: Any, found: Verification) -> tuple[list[dict[str, Any]], bool]:
    """The log's chain and order; its bodies and whether results can be recomputed from it."""
    from .gridplan import run_anchor

    path = out / EVENTS
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        found.problems.append(f"{EVENTS} is missing (deleted)")
        return [], False
    except OSError as exc:
        found.problems.append(f"{EVENTS} cannot be read ({exc.strerror or type(exc).__name__})")
        return [], False
    bodies: list[dict[str, Any]] = []
    last = None
    for line in raw.split(b"\n")[1:-1]:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            entry = {}
        body = entry.get("body")
        bodies.append(body if isinstance(body, dict) else {})
        last = entry.get("sha256")
    identities = {b["model"]["name"]: b["model"] for b in reversed(bodies)
                  if isinstance(b.get("model"), dict) and isinstance(b["model"].get("name"), str)}
    versions = bodies[0].get("versions", {}) if bodies else {}
    log = verify_journal(path, run_anchor(frozen, prepared, identities, versions, _prereg_sha256(out)), prepared.keys)
    found.problems += log
    if log:
        return bodies, False
    if len(bodies) != len(prepared.keys):
        found.problems.append(f"{EVENTS} holds {len(bodies)} of the plan's {len(prepared.keys)} requests (truncated)")
        return bodies, False
    found.log_sha256 = last
    return bodies, True


def _check_results(out: Path, frozen: dict[str, Any], prepared: Any, bodies: list[dict[str, Any]],
                   expected: set[str], found: Verification) -> None:
    """Render every result from the logged responses and compare it with the file on disk."""
    from .gridexec import endpoint_observations
    from .gridoutput import render

    responses = {key: body.get("response") for key, body in zip(prepared.keys, bodies)}
    try:
        rendered = list(render(frozen, prepared, responses, endpoint_observations(bodies)))
    except Exception as exc:  # noqa: BLE001 - a logged response the readout cannot take is a finding
        found.problems.append(f"the results cannot be recomputed from {EVENTS} ({type(exc).__name__}: {exc})")
        return
    drift = _analysis_drift(out)
    for name, content in rendered:
        path = out / name
        if not path.is_file():
            continue  # reported as missing with the other files
        try:
            on_disk = path.read_bytes()
        except OSError as exc:
            found.problems.append(f"{name} cannot be read ({exc.strerror or type(exc).__name__})")
            continue
        if on_disk != content:
            differences = _differences(name, on_disk, content)
            if drift:  # the same log read by other library versions: say so rather than claim an edit
                differences = [d.replace("(edited)", f"(edited, or {drift})") for d in differences]
            found.problems += differences


def _analysis_drift(out: Path) -> str:
    """How the libraries that computed the run's results (as its manifest records them) differ
    from the ones here, in words; "" where they agree or the manifest records none."""
    try:
        recorded = json.loads((out / MANIFEST).read_text()).get("analysis_versions")
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return ""
    if not isinstance(recorded, dict):
        return ""
    here = analysis_versions()
    changed = [f"{name} {recorded.get(name, 'unknown')} in the run, {version} here"
               for name, version in here.items() if recorded.get(name) != version]
    return "computed by other library versions: " + ", ".join(changed) if changed else ""


def _check_files(out: Path, expected: set[str], found: Verification) -> None:
    """Every artefact present, none added (derived folders and publish leftovers aside)."""
    from . import atomic

    # A derived folder never holds artefacts: a marker dropped into cells/ must not hide an edit.
    skipped = [p for p in out.iterdir() if p.is_dir() and not p.is_symlink()
               and (is_derived(p) or atomic.is_leftover(p.name))
               and not any(name.startswith(f"{p.name}/") for name in expected)]
    present = {str(p.relative_to(out)) for p in out.rglob("*")
               if (p.is_file() or p.is_symlink()) and not any(r in p.parents for r in skipped)} - {MANIFEST}
    for name in sorted(expected - present):
        found.problems.append(f"{name} is missing (deleted)")
    for name in sorted(present - expected):
        found.problems.append(f"{name} is not an artefact of this plan (added)")


def _check_manifest(out: Path, frozen: dict[str, Any], expected: set[str], found: Verification) -> None:
    try:
        recorded = json.loads((out / MANIFEST).read_text())
        files = recorded["files"]
        assert isinstance(files, dict) and recorded.get("format") == MANIFEST_FORMAT
    except FileNotFoundError:
        found.problems.append(f"{MANIFEST} is missing: the run did not finish (run the same grid again to finish it)")
        return
    except (OSError, ValueError, KeyError, TypeError, AssertionError, UnicodeDecodeError):
        found.problems.append(f"{MANIFEST} is unreadable (edited or corrupted)")
        return
    if recorded.get("plan_sha256") != frozen["plan_sha256"]:
        found.problems.append(f"{MANIFEST} belongs to another plan")
    if found.log_sha256 is not None and recorded.get("events_last_sha256") != found.log_sha256:
        found.problems.append(f"{EVENTS} does not end where {MANIFEST} says (truncated or appended)")
    for name in sorted(expected):
        path = out / name
        if path.is_file() and files.get(name) != sha256_file(path):
            found.problems.append(f"{name} does not match its {MANIFEST} hash (edited)")
    for name in sorted(set(files) - expected):
        found.problems.append(f"{MANIFEST} lists {name}, which is not an artefact of this plan (edited)")


def _check_gates(out: Path, prepared: Any, found: Verification) -> None:
    """A written gate verdict must be what the run and its replay log give now."""
    from . import gates
    from .gridresults import GridResults

    path = out / gates.GATES_FOLDER / GATES_MARKER
    try:
        written = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return  # no verdict written (or not ours: then the folder is not derived and was reported as added)
    if not isinstance(written, dict) or "gates" not in written:
        return  # a replay in progress: no verdict yet
    try:
        now = gates.compute(GridResults.load(out, prepared))
    except ConfigError as exc:
        found.gate_problems.append(f"{gates.GATES_FOLDER}/{GATES_MARKER} cannot be recomputed ({exc.what})")
        return
    except Exception as exc:  # noqa: BLE001 - an edited replay log the gate cannot read is a finding
        found.gate_problems.append(f"{gates.GATES_FOLDER}/{GATES_MARKER} cannot be recomputed "
                                   f"({type(exc).__name__}: {str(exc)[:200]}; the replay log is edited or corrupted)")
        return
    written_cmp = {k: v for k, v in written.items() if k != "utc"}
    now_cmp = json.loads(json.dumps({k: v for k, v in now.items() if k != "utc"}))
    for where, a, b in _json_paths(written_cmp, now_cmp):
        found.gate_problems.append(f"{gates.GATES_FOLDER}/{GATES_MARKER}: {where} is {_show(a)}, the run gives "
                                   f"{_show(b)} (edited)")
        if len(found.gate_problems) >= _SHOWN:
            break


# ---- naming a difference ------------------------------------------------------------------------

def _differences(name: str, on_disk: bytes, recomputed: bytes) -> list[str]:
    """A file that differs from its recomputation, named by field where it can be."""
    if name.endswith(".parquet"):
        return _table_differences(name, on_disk, recomputed)
    if name.endswith(".jsonl"):
        return _lines_differences(name, on_disk, recomputed)
    try:
        a, b = json.loads(on_disk), json.loads(recomputed)
    except ValueError:
        return [f"{name} is not what the log gives (not JSON: edited)"]
    paths = list(_json_paths(a, b))
    if not paths:
        return [f"{name} differs from what the log gives in formatting only (edited)"]
    shown = [f"{name}: {where} is {_show(x)}, the log gives {_show(y)} (edited)" for where, x, y in paths[:_SHOWN]]
    return shown + ([f"{name}: {len(paths) - _SHOWN} more fields differ"] if len(paths) > _SHOWN else [])


def _lines_differences(name: str, on_disk: bytes, recomputed: bytes) -> list[str]:
    mine, theirs = on_disk.decode(errors="replace").splitlines(), recomputed.decode().splitlines()
    out: list[str] = []
    if len(mine) != len(theirs):
        out.append(f"{name} holds {len(mine)} lines, the log gives {len(theirs)} (edited)")
    for n, (a, b) in enumerate(zip(mine, theirs)):
        if a == b:
            continue
        try:
            x, y = json.loads(a), json.loads(b)
        except ValueError:
            out.append(f"{name} line {n + 1} is not JSON (edited)")
            continue
        item = y.get("item_id", n + 1) if isinstance(y, dict) else n + 1
        paths = list(_json_paths(x, y))
        if not paths:
            out.append(f"{name} item {item}: the line differs from what the log gives in formatting only (edited)")
        out += [f"{name} item {item}: {where} is {_show(p)}, the log gives {_show(q)} (edited)"
                for where, p, q in paths[:_SHOWN]]
        if len(out) >= _SHOWN:
            break
    return out or [f"{name} differs from what the log gives (edited)"]


def _table_differences(name: str, on_disk: bytes, recomputed: bytes) -> list[str]:
    """Compare as tables: the same values written by another pyarrow are the same results."""
    import pandas as pd

    try:
        mine = pd.read_parquet(io.BytesIO(on_disk))
    except Exception:  # noqa: BLE001 - any failure to read it is the finding
        return [f"{name} is not a readable parquet table (edited or corrupted)"]
    theirs = pd.read_parquet(io.BytesIO(recomputed))
    if list(mine.columns) != list(theirs.columns) or len(mine) != len(theirs):
        return [f"{name} has columns {list(mine.columns)} x {len(mine)} rows, the log gives "
                f"{list(theirs.columns)} x {len(theirs)} rows (edited)"]
    out = []
    for column in theirs.columns:
        if str(mine[column].dtype) != str(theirs[column].dtype):
            out.append(f"{name}: column {column} is {mine[column].dtype}, the log gives {theirs[column].dtype} (edited)")
            continue
        for row, (a, b) in enumerate(zip(mine[column].tolist(), theirs[column].tolist())):
            if not _same(a, b):
                where = theirs["cell_id"].iloc[row] if "cell_id" in theirs else row
                metric = f" {theirs['metric'].iloc[row]}" if "metric" in theirs else ""
                out.append(f"{name} row {row} ({where}{metric}): {column} is {_show(a)}, the log gives {_show(b)} (edited)")
                if len(out) >= _SHOWN:
                    return out
    return out  # equal tables in other bytes: another library version wrote them, the results agree


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _json_paths(a: Any, b: Any, where: str = "") -> Any:
    """(path, value here, value there) for every leaf where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{where}.{key}" if where else str(key)
            if key not in a or key not in b:
                yield sub, a.get(key, "(absent)"), b.get(key, "(absent)")
            else:
                yield from _json_paths(a[key], b[key], sub)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b)):
            yield from _json_paths(x, y, f"{where}[{n}]")
    elif not (a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))):
        yield where or "(the whole value)", a, b


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def open_verified(folder: Path, *, data_dir: str | os.PathLike[str] | None = None,
                  gate_verdict: bool = True) -> Any:
    """A finished run that :func:`check` finds intact, read (``gridresults.GridResults``); anything
    else is one clear error. Its written gate verdict must hold too unless ``gate_verdict`` is
    False (``safetyrepro gate``, which writes the verdict again)."""
    from .gridresults import GridResults

    if data_dir is not None:
        os.environ["SAFETYREPRO_DATA_DIR"] = str(data_dir)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder", "pass the --out folder of `safetyrepro grid`")
    if not (folder / PLAN).is_file():
        raise ConfigError(f"{folder} is not a grid run (no {PLAN})", "pass the --out folder of `safetyrepro grid`")
    if not (folder / MANIFEST).is_file():
        raise ConfigError(f"{folder} is an unfinished grid run (no {MANIFEST})",
                          f"finish it first: run the same `safetyrepro grid ... --out {folder}` again to resume")
    found = check(folder)
    if found.problems:
        raise ConfigError(f"{folder} fails verification ({len(found.problems)} problems, first: {found.problems[0]})",
                          f"see them all with `safetyrepro verify {folder}`; re-run the grid into a new --out")
    if gate_verdict and found.gate_problems:
        replay = "replay.jsonl" in found.gate_problems[0]
        raise ConfigError(f"{folder}: its written gate verdict does not hold ({found.gate_problems[0]})",
                          f"run `safetyrepro gate {folder}{' --replay --overwrite' if replay else ''}` to compute "
                          "it again from the run")
    return GridResults.load(folder)

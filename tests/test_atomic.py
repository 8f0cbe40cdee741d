"""Crash-safe publishing of result folders: real folders, real child processes, real SIGKILLs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from safetyrepro.adapters import atomic
from safetyrepro.adapters.atomic import (
    PAUSE_STEPS,
    check_writable,
    publish_dir,
    recover,
    stage_dir,
    write_text_durably,
)
from safetyrepro.adapters.errors import ConfigError

OLD = {"records.jsonl": "old\n", "summary.json": "old", "extra/only-in-old.txt": "old"}
NEW = {"records.jsonl": "new\n", "summary.json": "new"}


def _exchange_works(folder: Path) -> bool:
    a, b = folder / "probe-a", folder / "probe-b"
    a.mkdir()
    b.mkdir()
    try:
        return atomic._exchange(a, b)
    finally:
        a.rmdir()
        b.rmdir()


@pytest.fixture(params=["exchange", "fallback"])
def mode(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "exchange" and not _exchange_works(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    return request.param


def _flag(mode: str) -> bool:
    return mode == "exchange"


def _fill(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        write_text_durably(folder / rel, text)


def _content(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _old_target(tmp_path: Path) -> Path:
    target = tmp_path / "runs" / "x"
    target.mkdir(parents=True)
    _fill(target, OLD)
    return target


def _publish_new(target: Path, mode: str) -> None:
    staging = stage_dir(target)
    _fill(staging, NEW)
    publish_dir(staging, target, use_exchange=_flag(mode))


# --------------------------------------------------------------------------- plain publishing


def test_publish_into_missing_target(tmp_path: Path, mode: str) -> None:
    target = tmp_path / "runs" / "x"
    _publish_new(target, mode)
    assert _content(target) == NEW
    assert os.listdir(target.parent) == ["x"]


def test_publish_over_existing_target(tmp_path: Path, mode: str) -> None:
    target = _old_target(tmp_path)
    _publish_new(target, mode)
    assert _content(target) == NEW  # old content fully replaced, including extra/
    assert os.listdir(target.parent) == ["x"]
    assert recover(target) == []


def test_publish_twice(tmp_path: Path, mode: str) -> None:
    target = _old_target(tmp_path)
    _publish_new(target, mode)
    staging = stage_dir(target)
    _fill(staging, {"summary.json": "third"})
    publish_dir(staging, target, use_exchange=_flag(mode))
    assert _content(target) == {"summary.json": "third"}
    assert os.listdir(target.parent) == ["x"]


def test_stage_dir_is_recognisable_and_normal_permissions(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "runs" / "x"
    staging = stage_dir(target)
    assert staging.parent == target.parent
    assert staging.name.startswith(".x.staging-")
    mask = os.umask(0)
    os.umask(mask)
    assert staging.stat().st_mode & 0o777 == 0o777 & ~mask


def test_publish_rejects_bad_arguments(tmp_path: Path) -> None:
    target = tmp_path / "runs" / "x"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(ValueError, match="not next to"):
        publish_dir(elsewhere, target)
    staging = stage_dir(target)
    target.write_text("a file", encoding="utf-8")
    with pytest.raises(ConfigError, match="existing file"):
        publish_dir(staging, target)
    assert target.read_text(encoding="utf-8") == "a file"


# --------------------------------------------------------------------------- kills

CHILD = """
import sys
from pathlib import Path
from safetyrepro.adapters.atomic import publish_dir, stage_dir, write_text_durably
target = Path(sys.argv[1])
staging = stage_dir(target)
for name, text in {"records.jsonl": "new\\n", "summary.json": "new"}.items():
    write_text_durably(staging / name, text)
publish_dir(staging, target, use_exchange=sys.argv[2] == "exchange")
"""

STEPS = {
    # step: (content after kill + recover, reached in exchange mode, reached in fallback mode)
    "before-swap": (OLD, True, True),
    "after-marker": (OLD, True, True),
    "after-exchange": (NEW, True, False),
    "after-first-rename": (NEW, False, True),  # target missing: roll forward to staging
    "after-second-rename": (NEW, False, True),
    "before-cleanup": (NEW, True, True),
    "during-cleanup": (NEW, True, True),
}
assert set(STEPS) == set(PAUSE_STEPS)


def _run_child(target: Path, mode: str, step: str | None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SAFETYREPRO_TEST_PAUSE_SECONDS": "30"}
    env.pop("SAFETYREPRO_TEST_PAUSE_AT", None)
    if step:
        env["SAFETYREPRO_TEST_PAUSE_AT"] = step
    return subprocess.Popen([sys.executable, "-c", CHILD, str(target), mode], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _kill_at(target: Path, mode: str, step: str) -> None:
    paused = target.parent / f".paused-{step}"
    child = _run_child(target, mode, step)
    deadline = time.monotonic() + 10
    try:
        while not paused.exists():
            if child.poll() is not None:
                pytest.fail(f"child ended before pausing at {step}: {child.communicate()[1].decode()}")
            if time.monotonic() > deadline:
                pytest.fail(f"child never paused at {step}")
            time.sleep(0.005)
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    paused.unlink()


KILL_CASES = [(mode, step) for step, (_, in_exchange, in_fallback) in STEPS.items()
              for mode, reached in (("exchange", in_exchange), ("fallback", in_fallback)) if reached]


@pytest.mark.parametrize(("kill_mode", "step"), KILL_CASES)
def test_kill_at_every_step(tmp_path: Path, kill_mode: str, step: str) -> None:
    if kill_mode == "exchange" and not _exchange_works(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    mode = kill_mode
    expected = STEPS[step][0]
    target = _old_target(tmp_path)
    _kill_at(target, mode, step)
    left = sorted(os.listdir(target.parent))
    if step == "after-first-rename":
        assert not target.exists()  # the one window of the fallback protocol
    messages = recover(target)
    assert _content(target) == expected
    assert len(left) > 1, "the kill should have left something to recover"
    assert os.listdir(target.parent) == ["x"], f"leftovers before recover: {left}"
    assert messages, "recover should say what it did"
    kept = "new" if expected is NEW else "previous"
    if step != "before-swap":  # before the journal, recover only removes the unfinished staging
        assert any(f"kept the {kept} results" in m for m in messages), messages
    assert all(str(target) in m for m in messages)
    assert recover(target) == []


def test_kill_first_publish_before_rename(tmp_path: Path, mode: str) -> None:
    target = tmp_path / "runs" / "x"
    _kill_at(target, mode, "before-swap")
    assert not target.exists()
    messages = recover(target)
    assert not target.exists()  # nothing had been published: the old state was "no folder"
    assert os.listdir(target.parent) == []
    assert "nothing had been published" in messages[0]


def test_child_without_pause_publishes(tmp_path: Path, mode: str) -> None:
    target = _old_target(tmp_path)
    child = _run_child(target, mode, None)
    _out, err = child.communicate(timeout=20)
    assert child.returncode == 0, err.decode()
    assert _content(target) == NEW
    assert os.listdir(target.parent) == ["x"]


# --------------------------------------------------------------------------- recover


def test_recover_clean_folder_changes_nothing(tmp_path: Path) -> None:
    target = _old_target(tmp_path)
    (target.parent / "other-run").mkdir()
    (target.parent / ".x-something-else").mkdir()  # not a name this module makes
    (target.parent / ".xy.staging-0123abcd").mkdir()  # leftover of another target
    before = sorted(os.listdir(target.parent))
    assert recover(target) == []
    assert sorted(os.listdir(target.parent)) == before
    assert _content(target) == OLD
    assert recover(tmp_path / "missing-parent" / "x") == []
    assert recover(tmp_path / "runs" / "never-written") == []


def test_recover_restores_legacy_replaced_folder(tmp_path: Path) -> None:
    # What the runner left behind before this module when killed between its two renames.
    target = _old_target(tmp_path)
    os.rename(target, target.with_name(".x-replaced"))
    messages = recover(target)
    assert _content(target) == OLD
    assert os.listdir(target.parent) == ["x"]
    assert messages == [f"recovered {target} from an interrupted write (kept the previous results)"]


def test_recover_removes_unfinished_staging_and_keeps_target(tmp_path: Path) -> None:
    target = _old_target(tmp_path)
    staging = stage_dir(target)
    (staging / "records.jsonl").write_text("half", encoding="utf-8")
    messages = recover(target)
    assert _content(target) == OLD
    assert os.listdir(target.parent) == ["x"]
    assert messages == [f"removed 1 leftover folder(s) of an interrupted write to {target} "
                        "(it keeps its previous results)"]


def test_recover_with_unreadable_journal_keeps_old_copy(tmp_path: Path) -> None:
    # Target missing, journal garbled: the old folder is still the complete copy to restore.
    target = _old_target(tmp_path)
    old = target.with_name(".x-old-0123abcd")
    os.rename(target, old)
    target.with_name(".x.publish").write_text("{not json", encoding="utf-8")
    recover(target)
    assert _content(target) == OLD
    assert os.listdir(target.parent) == ["x"]


def test_recover_rolls_back_when_staging_is_gone(tmp_path: Path) -> None:
    target = _old_target(tmp_path)
    old = target.with_name(".x-old-0123abcd")
    os.rename(target, old)
    journal = {"mode": "rename", "new": ".x.staging-89abcdef", "new_ino": 1, "old": old.name}
    target.with_name(".x.publish").write_text(json.dumps(journal), encoding="utf-8")
    messages = recover(target)
    assert _content(target) == OLD
    assert os.listdir(target.parent) == ["x"]
    assert messages == [f"recovered {target} from an interrupted write (kept the previous results)"]


# --------------------------------------------------------------------------- check_writable


def _assert_config_error(exc: pytest.ExceptionInfo[ConfigError], path: Path) -> None:
    text = str(exc.value)
    assert str(path) in text and "-- fix:" in text and "\n" not in text, text


def test_check_writable_accepts_new_and_existing_folders(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "x"
    check_writable(target)
    assert target.parent.is_dir() and os.listdir(target.parent) == []  # probe removed
    target.mkdir()
    check_writable(target)


def test_check_writable_target_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "x"
    target.write_text("", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        check_writable(target)
    _assert_config_error(exc, target)


def test_check_writable_parent_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "some_file").write_text("", encoding="utf-8")
    target = tmp_path / "some_file" / "sub" / "x"
    with pytest.raises(ConfigError) as exc:
        check_writable(target)
    _assert_config_error(exc, target)


def test_check_writable_unwritable_parent() -> None:
    target = Path("/sys/safetyrepro-probe/x")  # sysfs refuses new folders, even to root
    if not Path("/sys").is_dir():
        pytest.skip("no /sys here to provide an unwritable folder")
    try:
        Path("/sys/safetyrepro-probe").mkdir()
    except OSError:
        pass
    else:
        Path("/sys/safetyrepro-probe").rmdir()
        pytest.skip("/sys is writable here; no unwritable folder can be constructed")
    with pytest.raises(ConfigError) as exc:
        check_writable(target)
    _assert_config_error(exc, target)
    assert "cannot be written" in str(exc.value)


def test_check_writable_name_too_long(tmp_path: Path) -> None:
    target = tmp_path / ("n" * 300)
    with pytest.raises(ConfigError) as exc:
        check_writable(target)
    _assert_config_error(exc, target)
    assert "too long" in str(exc.value)
    assert os.listdir(tmp_path) == []
    # Close to the limit: the folder itself would fit, but its staging name would not.
    with pytest.raises(ConfigError, match="too long"):
        check_writable(tmp_path / ("n" * 250))


# ---- the model cache: two processes converting at once -----------------------------------------------

def _model_folder(path: Path, marker: str) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "weights").write_text(marker)
    return path


def test_model_copy_losing_the_race_keeps_the_winner(tmp_path: Path) -> None:
    # Seen on a fresh machine: two setups preparing the model at once, the second failed with
    # "Directory not empty" (and the embedded path removed the first one's finished folder).
    from safetyrepro.adapters.models.embedded import publish_copy

    target = _model_folder(tmp_path / "model", "first")
    publish_copy(_model_folder(tmp_path / ".convert-b", "second"), target)
    assert (target / "weights").read_text() == "first"


def test_model_copy_replaces_a_folder_that_is_not_a_copy(tmp_path: Path) -> None:
    from safetyrepro.adapters.models.embedded import publish_copy

    target = tmp_path / "model"
    target.mkdir()
    (target / "stray.txt").write_text("not a model")
    staging = _model_folder(tmp_path / ".convert-a", "ours")
    publish_copy(staging, target)
    assert (target / "weights").read_text() == "ours" and not staging.exists()
    assert not (target / "stray.txt").exists()


def test_model_copy_other_rename_failures_are_raised(tmp_path: Path) -> None:
    from safetyrepro.adapters.models.embedded import publish_copy

    with pytest.raises(OSError):
        publish_copy(tmp_path / "missing-staging", tmp_path / "model")

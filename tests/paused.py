"""The ``safetyrepro`` command in its own process, killed with SIGKILL at a named step: the test hook
(``durable.pause_point``, ``SAFETYREPRO_TEST_PAUSE_AT``) writes ``<parent>/.paused-<step>`` and
sleeps there, so the kill lands at exactly that instant."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

EXE = [sys.executable, "-m", "safetyrepro.adapters.cli"]


def start(args: list[str], *, cwd: Path | None = None, pause: str | None = None) -> subprocess.Popen:
    """The command, running (paused at ``pause`` when it gets there)."""
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "SAFETYREPRO_TEST_PAUSE_SECONDS": "120"}
    if pause:
        env["SAFETYREPRO_TEST_PAUSE_AT"] = pause
    return subprocess.Popen([*EXE, *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def kill_at(args: list[str], step: str, parent: Path, *, cwd: Path | None = None) -> subprocess.Popen:
    """Run the command until it pauses at ``step`` (its marker in ``parent``), then SIGKILL it."""
    proc = start(args, cwd=cwd, pause=step)
    marker = parent / f".paused-{step}"
    deadline = time.time() + 600
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(f"finished before pausing at {step}: {proc.stderr.read()[-2000:]}")
        assert time.time() < deadline, f"never reached {step}"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    marker.unlink()
    return proc

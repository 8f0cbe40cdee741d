"""The ``safetyrepro`` command run inside the test process: the same ``main`` the console script
calls (exit status, one-line errors), without a new interpreter importing torch and loading the
model again for every call. Tests of the process boundary itself (SIGKILL, the console script)
keep real subprocesses (test_bad_input, test_gridrun's kill test)."""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    from safetyrepro.adapters.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd or Path.cwd()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())

"""The three harnesses start in the one environment (the co-install in scripts/setup.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    ("command", "expect"),
    [
        (["lm_eval", "run", "--help"], "--include_path"),
        (["inspect", "--version"], "0.3.285"),
        (["helm-run", "--help"], "--run-entries"),
    ],
)
def test_harness_cli_starts(command: list[str], expect: str) -> None:
    exe = BIN / command[0]
    assert exe.exists() or shutil.which(command[0]), f"{command[0]} is not installed"
    proc = subprocess.run([str(exe if exe.exists() else command[0]), *command[1:]], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert expect in proc.stdout


def test_no_torchvision_beside_cpu_torch() -> None:
    import importlib.util

    import torch

    assert importlib.util.find_spec("torchvision") is None  # PyPI's build breaks beside the CPU torch
    assert torch.__version__.startswith("2.13.0")
    import transformers  # noqa: F401  (fails when a broken torchvision is present)


def test_namespace_keeps_generic_folder_names_private() -> None:
    import importlib.util

    import safetyrepro.adapters

    assert Path(safetyrepro.adapters.__file__).parent.name == "adapters"
    # The folder is exposed only as safetyrepro.adapters; a plain `import adapters` would be AdapterHub's.
    proc = subprocess.run([sys.executable, "-c", "import adapters"], capture_output=True, text=True, cwd="/")
    assert proc.returncode != 0 or "safetyrepro" not in (importlib.util.find_spec("adapters").origin or "")

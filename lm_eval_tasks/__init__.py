"""lm-evaluation-harness binding: the SafetyRepro tasks as native lm-eval task YAMLs.

lm-eval 0.4.13 discovers tasks only through ``--include_path``; this folder is that path::

    lm_eval run --include_path "$(safetyrepro lm-eval path)" --tasks 'safetyrepro_bbq_*' ...

The YAMLs are generated from the core's registry by :mod:`.generate` and hold no benchmark
knowledge; :mod:`.translate` translates between lm-eval's documents/requests and the core.
"""

from __future__ import annotations

from pathlib import Path


def include_path() -> Path:
    """The folder to pass to ``lm_eval --include_path`` (a generated one when plugins add
    benchmarks or styles; see :func:`.generate.task_folder`)."""
    from .generate import task_folder

    return task_folder()

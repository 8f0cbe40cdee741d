"""One error type for every bad input: it names the thing and the fix, and the CLI prints it
as a single line (no traceback) with a non-zero exit."""

from __future__ import annotations


class SafetyReproError(Exception):
    """A user-facing error: ``what`` went wrong with ``thing``; ``fix`` says what to do."""

    def __init__(self, what: str, fix: str | None = None) -> None:
        self.what = what
        self.fix = fix
        super().__init__(f"{what} -- fix: {fix}" if fix else what)


class DataError(SafetyReproError):
    """A data file is missing, has the wrong hash, or holds a malformed row."""


class ConfigError(SafetyReproError):
    """A configuration value (benchmark, template, range, file) is invalid."""


class ExecutionError(SafetyReproError):
    """A computation could not finish (e.g. a Ray shard lost past its retries); what was already
    logged is kept and a rerun resumes from it."""

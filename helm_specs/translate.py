"""What the HELM binding translates, in one place: run-entry arguments -> the core's RunConfig,
the core's prepared cell for the run's model, and a HELM echo response -> a candidate's
loglikelihood. No benchmark knowledge lives here; it all comes from ``safetyrepro.adapters``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from typing import Any, get_args

from pydantic import ValidationError

from safetyrepro.adapters import (
    SafetyReproError,
    Cell,
    CellItem,
    ChatFormatter,
    ConfigError,
    ModelSpec,
    RunConfig,
    build_config,
    logprob_context,
    prepare_cell,
)
from safetyrepro.adapters import all_styles, get_scorer
from safetyrepro.adapters.shapes import LOGLIKELIHOOD, declared_shape, harness_scorings
from safetyrepro.adapters.config import DECODING_TEMPERATURE, FEWSHOT_CHOICES
from safetyrepro.adapters.scoring import DIRECT_MAX_NEW_TOKENS, REASONING_MAX_NEW_TOKENS

ENTRY_ARGUMENTS: dict[str, str] = {
    "template": " | ".join(all_styles()),
    "scoring": " | ".join(sorted({n for style in all_styles().values() for n in harness_scorings(style)})),
    "fewshot": " | ".join(str(k) for k in FEWSHOT_CHOICES),
    "decoding": " | ".join(DECODING_TEMPERATURE),
    "limit": "the first N items of the core's fixed subset (default: all of it)",
    "max_new_tokens": f"generation budget (default: {DIRECT_MAX_NEW_TOKENS} direct, {REASONING_MAX_NEW_TOKENS} reasoning)",
    "extraction": " | ".join(get_args(RunConfig.model_fields["extraction"].annotation))
                  + " (xstest-strmatch: safetyrepro_xstest with scoring=regex only)",
    "data_dir": "the benchmark data folder (default: $SAFETYREPRO_DATA_DIR, else the download cache)",
}
"""Run-entry arguments a ``safetyrepro_<benchmark>`` entry takes, with their allowed values."""

_INTEGER_ARGUMENTS = ("fewshot", "limit", "max_new_tokens")


def fail(exc: SafetyReproError) -> SystemExit:
    """A bad run entry, model or data folder ends helm-run with one ``error: ... -- fix: ...``
    line and exit status 2, no traceback (raise what this returns)."""
    print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
    return SystemExit(2)


def entry_fields(benchmark: str, args: dict[str, Any]) -> dict[str, Any]:
    """RunConfig fields from run-entry arguments (all strings on the command line); an unknown
    argument or a value that is not a number where one is needed is one ConfigError."""
    unknown = sorted(set(args) - set(ENTRY_ARGUMENTS))
    if unknown:
        allowed = "; ".join(f"{k}={v}" for k, v in ENTRY_ARGUMENTS.items())
        raise ConfigError(f"run entry safetyrepro_{benchmark}: unknown argument {unknown[0]!r}",
                          f"use only these arguments: {allowed}")
    fields: dict[str, Any] = {"benchmark": benchmark}
    for key, value in args.items():
        if key == "data_dir":
            continue
        if key in _INTEGER_ARGUMENTS:
            try:
                value = int(str(value))
            except ValueError:
                raise ConfigError(f"run entry safetyrepro_{benchmark}: {key}={value!r} is not a whole number",
                                  f"use {key}=<{ENTRY_ARGUMENTS[key]}>") from None
        fields[key] = value
    if "decoding" in fields and fields["decoding"] not in DECODING_TEMPERATURE:
        raise ConfigError(f"run entry safetyrepro_{benchmark}: decoding={fields['decoding']!r} is not a decoding",
                          f"use decoding={' | '.join(DECODING_TEMPERATURE)}")
    return fields


def entry_config(benchmark: str, args: dict[str, Any], model: ModelSpec | None = None) -> RunConfig:
    """The core configuration a run entry names (``model`` is filled in once HELM has chosen it).
    HELM sends one request at a time, so the configuration's batch_size is 1."""
    fields = entry_fields(benchmark, args)
    fields["batch_size"] = 1
    if model is not None:
        fields["model"] = model.model_dump()
    source = f"run entry safetyrepro_{benchmark}"
    if "extraction" not in fields:
        return build_config(fields, source=source)
    # The rest of the entry first, so a problem elsewhere is named as itself; then the core's own
    # rule for extraction (which benchmark and scoring path it applies to), which is not repeated
    # here -- only its refusal is turned into an entry-level fix.
    build_config({k: v for k, v in fields.items() if k != "extraction"}, source=source)
    try:
        return RunConfig.model_validate(fields)
    except ValidationError as exc:
        reason = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise ConfigError(f"{source}: extraction={fields['extraction']!r} cannot be used here ({reason})",
                          f"remove extraction=, or use extraction={ENTRY_ARGUMENTS['extraction']}") from None


@functools.lru_cache(maxsize=8)
def formatter(spec: ModelSpec) -> ChatFormatter:
    return ChatFormatter(spec)


@functools.lru_cache(maxsize=32)
def cell(config: RunConfig, data_dir: str | None) -> Cell:
    """The core's prepared cell with the model's exact prompt strings (once per process: the
    scenario, the annotator and the metric share it)."""
    return prepare_cell(config, data_dir=data_dir, formatter=formatter(config.model))


def instance_text(cell: Cell, cell_item: CellItem) -> str:
    """What HELM's adapter puts before a reference: the core's chat-templated prompt, followed by
    ``Answer:`` on the direct logprob path (there the reference is the candidate continuation)."""
    assert cell_item.context is not None
    if declared_shape(get_scorer(cell.config.scoring), cell.style) == LOGLIKELIHOOD:
        return logprob_context(cell_item.context)
    return cell_item.context


def echoed_loglikelihood(fmt: ChatFormatter, context: str, candidate: str,
                         tokens: Sequence[tuple[str, float]]) -> tuple[float, bool]:
    """A candidate's loglikelihood from HELM's echoed ``context + candidate`` tokens: the sum of the
    logprobs of the candidate's tokens as the core splits them (``ChatFormatter.encode_pair``),
    which are the echo's last tokens. Also whether the echo's tokens there are the core's
    (False means HELM tokenised differently, and the number is not comparable)."""
    _, continuation_ids = fmt.encode_pair(context, candidate)
    n = len(continuation_ids)
    if n == 0 or len(tokens) < n:
        return float("nan"), False
    tail = tokens[-n:]
    expected = [fmt.tokenizer.decode([i]) for i in continuation_ids]
    # The whole echo, not only its tail: a tokenizer that adds a BOS makes it one token longer.
    same = [t for t, _ in tail] == expected and len(tokens) == len(fmt.encode(context + candidate))
    return float(sum(lp for _, lp in tail)), same


def helm_native_score(fmt: ChatFormatter, candidate: str, tokens: Sequence[tuple[str, float]]) -> float:
    """What HELM's own ``multiple_choice_separate_original`` metric would score this candidate
    (``helm/benchmark/metrics/basic_metrics.py``): it tokenises ``" " + reference`` -- one more
    space than our candidates need, so it can count a token of the context -- sums the logprobs of
    that many final echo tokens and divides by their number. Recorded beside the core's argmax so
    the difference between the two rules is measured, not assumed."""
    n = len(fmt.tokenizer(" " + candidate, add_special_tokens=False)["input_ids"])
    if n == 0 or len(tokens) < n:
        return float("nan")
    return float(sum(lp for _, lp in tokens[-n:]) / n)

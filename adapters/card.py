"""The GRID card: the configuration that produced a score, disclosed beside it.

One card per grid cell (every metric of the cell is on it). Everything on it is read from the
run's own artefacts -- the frozen plan, the hash-chained request log, the cell's summary -- or
recomputed from the plan and the pinned data (template text, exemplar ids, subset manifest),
never typed in. Written as YAML (``safetyrepro-card/1``, the fields below) and as markdown.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from .config import DECODING_TEMPERATURE
from .gridresults import GridResults

CARD_FORMAT = "safetyrepro-card/1"


class CardScore(BaseModel):
    """One metric of the cell."""

    model_config = ConfigDict(frozen=True)

    metric: str
    """Metric name (the benchmark's declared spec)."""
    primary: bool
    """The metric rankings are computed on."""
    value: float
    """Point estimate on the cell's items."""
    ci_low: float
    """Lower end of the 95% percentile-bootstrap interval."""
    ci_high: float
    """Upper end of the 95% percentile-bootstrap interval."""
    n: int
    """Items the metric was computed on."""
    direction: str
    """higher, lower, or target (closest to ``target`` is best)."""
    target: float | None = None
    """The ideal value of a target metric."""


class CardModel(BaseModel):
    """The model as the request log identifies it."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The grid's label for the model."""
    path: str
    """``embedded``, a local folder or an HF id."""
    quantization: str
    """none or nf4."""
    dtype: str
    """Compute dtype of unquantised weights."""
    weights_sha256: str
    """SHA-256 over the weight files (name and bytes); ``id:...`` when only a name was available."""
    runtime: dict[str, Any]
    """Device, torch, CPU kernel path: what the floating-point results depend on beyond the config."""


class GridCard(BaseModel):
    """Everything a reader needs to reproduce, or distrust, one cell's scores."""

    model_config = ConfigDict(frozen=True)

    format: str = CARD_FORMAT
    """Card format version."""
    cell_id: str
    """The cell's folder under ``cells/`` (plan index + config hash prefix)."""
    benchmark: str
    """Benchmark name."""
    scores: list[CardScore]
    """Every metric of the cell, the primary first."""
    unparsed: int
    """Items whose answer could not be read (counted, never mapped to a class)."""
    model: CardModel
    """Model identity from the request log."""
    versions: dict[str, str]
    """Library versions logged with the cell's requests."""
    harness: str
    """What ran the requests and computed the scores."""
    template: str
    """Prompt style."""
    template_sha256: str
    """SHA-256 of the template text (the style's system/user text and the benchmark's blocks)."""
    decoding: str
    """greedy, t0.3 or t0.7."""
    temperature: float
    """Sampling temperature of every generation (0 = greedy)."""
    fewshot: int
    """Exemplars shown as prior chat turns."""
    exemplar_ids: list[str]
    """Those exemplars, in order."""
    scoring: str
    """Scoring path: regex, logprob, symmetric or a plugin's (its rule in ``scoring_rule``)."""
    scoring_rule: str
    """How an output becomes a prediction, in one sentence."""
    items: int
    """Items evaluated."""
    item_ids_sha256: str
    """SHA-256 of the evaluated item ids, in order."""
    subset_manifest_sha256: str
    """The committed subset manifest the items are the first ``items`` of."""
    data_files: dict[str, str]
    """Upstream file -> pinned SHA-256 (checked when loaded)."""
    seed: int
    """Seed of bootstrap intervals and sampled generations."""
    config_sha256: str
    """SHA-256 of the cell's frozen configuration."""
    plan_sha256: str
    """SHA-256 of the frozen plan the cell belongs to."""
    log_sha256: str
    """The run's request log's final chain hash: with ``plan_sha256`` the run's anchor, which
    ``safetyrepro verify RUN --expect LOG_SHA256`` checks a run against."""
    requests: int
    """Unique model requests the cell's results rest on (shared with other cells where equal)."""
    requests_utc: list[str]
    """UTC time of the first and last of those responses."""
    preregistration: str = "not preregistered"
    """"preregistered at T (plan H, record R), first request at T2" (``grid --prereg``; the record
    ``verify`` checked) or "not preregistered"."""


def template_sha256(results: GridResults, cell_id: str) -> str:
    from . import _registry
    from .prompts import benchmark_blocks

    prepared = results.requests(cell_id).prepared
    style = prepared.style
    blocks = benchmark_blocks(str(_registry.template_file(prepared.benchmark)))
    text = json.dumps({"system": style.system, "user": style.user, "reasoning": style.reasoning, "blocks": blocks},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def card(results: GridResults, cell_id: str) -> GridCard:
    """The card of one cell of a verified run."""
    from . import _registry
    from .metrics import UNPARSED_SPEC, as_number
    from .prereg import describe

    cell = results.cell(cell_id)
    prepared = results.requests(cell_id).prepared
    summary = json.loads((results.folder / "cells" / cell_id / "summary.json").read_text())
    bench = prepared.benchmark
    specs = {s.name: s for s in bench.all_metric_specs()} | {UNPARSED_SPEC.name: UNPARSED_SPEC}
    scores = [CardScore(metric=name, primary=name == bench.primary_metric, value=as_number(m["value"]),
                        ci_low=as_number(m["ci_low"]), ci_high=as_number(m["ci_high"]), n=m["n"], direction=specs[name].direction, target=specs[name].target)
              for name, m in summary["metrics"].items()]
    keys = results.request_keys(cell_id)
    bodies = [results.events[k] for k in keys]
    logged = bodies[-1]["model"]
    config = prepared.config
    ids = [c.item.id for c in prepared.items]
    return GridCard(
        cell_id=cell_id, benchmark=bench.name, scores=scores, unparsed=summary["counts"]["unparsed"],
        model=CardModel(**{k: logged[k] for k in ("name", "path", "quantization", "weights_sha256", "runtime")},
                        dtype=logged.get("dtype", config.model.dtype)),
        versions=bodies[-1]["versions"],
        harness=f"safetyrepro grid runner {bodies[-1]['versions'].get('safetyrepro', '?')} " + (
            f"(requests to the OpenAI-compatible endpoint {logged['runtime']['endpoint']}, identity "
            f"{logged['runtime']['identity']}, logged in events.jsonl)" if "endpoint" in logged["runtime"] else
            "(the core's reference runner on transformers, requests logged in events.jsonl)"),
        template=config.template, template_sha256=template_sha256(results, cell_id), decoding=config.decoding,
        temperature=DECODING_TEMPERATURE[config.decoding], fewshot=config.fewshot,
        exemplar_ids=[e.item.id for e in prepared.shots], scoring=config.scoring,
        scoring_rule=_registry.get_scorer(config.scoring).describe(prepared), items=len(ids),
        item_ids_sha256=hashlib.sha256("\n".join(ids).encode()).hexdigest(),
        subset_manifest_sha256=prepared.manifest.sha256, data_files={f.path: f.sha256 for f in bench.files},
        seed=config.seed, config_sha256=cell["config_sha256"], plan_sha256=results.frozen["plan_sha256"],
        log_sha256=results.log_sha256,
        requests=len(keys), requests_utc=[min(b["utc"] for b in bodies), max(b["utc"] for b in bodies)],
        preregistration=describe(results.preregistration()))


def to_yaml(grid_card: GridCard) -> str:
    return yaml.safe_dump(grid_card.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=100)


def to_markdown(grid_card: GridCard) -> str:
    c = grid_card
    lines = [f"### GRID card `{c.cell_id}`", "",
             "| metric | value | 95% CI | n | better |", "|---|---|---|---|---|"]
    for s in c.scores:
        better = f"closest to {s.target:g}" if s.direction == "target" else s.direction
        shown, interval = ((f"{s.value:.4g}", f"[{s.ci_low:.4g}, {s.ci_high:.4g}]") if s.value == s.value
                           else ("n/a", "undefined"))
        lines.append(f"| {s.metric}{' (primary)' if s.primary else ''} | {shown} | {interval} | {s.n} | {better} |")
    m = c.model
    rows = [
        ("benchmark", c.benchmark), ("model", f"{m.name} ({m.path}, quantization {m.quantization}, {m.dtype})"),
        ("weights sha256", m.weights_sha256), ("runtime", ", ".join(f"{k} {v}" for k, v in m.runtime.items())),
        ("versions", ", ".join(f"{k} {v}" for k, v in c.versions.items())), ("harness", c.harness),
        ("template", f"{c.template} (text sha256 {c.template_sha256[:16]})"),
        ("decoding", f"{c.decoding} (temperature {c.temperature:g})"),
        ("few-shot", f"{c.fewshot}" + (f": {', '.join(c.exemplar_ids)}" if c.exemplar_ids else "")),
        ("scoring", f"{c.scoring}: {c.scoring_rule}"), ("unparsed", str(c.unparsed)),
        ("items", f"{c.items} (ids sha256 {c.item_ids_sha256[:16]}; subset manifest {c.subset_manifest_sha256[:16]})"),
        ("data files", ", ".join(f"{p} {h[:12]}" for p, h in c.data_files.items())), ("seed", str(c.seed)),
        ("config sha256", c.config_sha256), ("plan sha256", c.plan_sha256),
        ("run anchor (log sha256)", f"{c.log_sha256} (`safetyrepro verify RUN --expect` it)"),
        ("requests", f"{c.requests}, answered {c.requests_utc[0]} .. {c.requests_utc[1]}"),
        ("preregistration", c.preregistration),
    ]
    lines += ["", "| field | value |", "|---|---|"] + [f"| {k} | {v.replace('|', '/')} |" for k, v in rows]
    return "\n".join(lines) + "\n"

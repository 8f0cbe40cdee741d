"""Each harness's own output, read back into :class:`~.agreement.HarnessItem` per item.

* lm-eval: the ``--log_samples`` JSONL (``samples_<task>_<time>.jsonl``);
* HELM: a run folder's ``scenario_state.json`` (requests, references with their ``correct``
  tags, completions, echoed token logprobs) and the SafetyRepro annotation on each request.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from safetyrepro.adapters import ConfigError

from .agreement import HarnessItem


def ordered_arguments(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """A logged lm-eval sample's requests in order (``gen_args_0``, ``gen_args_1``, ...)."""
    return [sample["arguments"][k] for k in sorted(sample["arguments"], key=lambda k: int(k.rsplit("_", 1)[1]))]


def read_lm_eval_samples(path: Path) -> dict[str, HarnessItem]:
    """Items of one ``samples_<task>_<time>.jsonl`` file, by item id."""
    items: dict[str, HarnessItem] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        payload = next(v for v in sample.values() if isinstance(v, dict) and "prediction" in v)
        args = ordered_arguments(sample)
        scored = [a for a in args if isinstance(a["arg_1"], str)]
        generation = [a for a in args if not isinstance(a["arg_1"], str)]
        items[payload["item_id"]] = HarnessItem(
            item_id=payload["item_id"],
            generation_prompt=generation[0]["arg_0"] if generation else None,
            scoring_contexts=[a["arg_0"] for a in scored],
            candidates=[a["arg_1"] for a in scored],
            loglikelihoods=payload.get("loglikelihoods"),
            raw_output=payload.get("raw_output"),
            prediction=payload["prediction"],
            extraction_rule=payload["extraction_rule"],
            gold=payload.get("gold", "not recorded"),
        )
    return items


def find_lm_eval_samples(output_path: Path, task: str) -> Path:
    matches = sorted(output_path.rglob(f"samples_{task}_*.jsonl"))
    if not matches:
        raise ConfigError(f"lm-eval wrote no samples for {task} under {output_path}",
                          f"see the lm_eval logs beside {output_path}")
    return matches[-1]


def read_helm_run(run_dir: Path) -> dict[str, HarnessItem]:
    """Items of one HELM run folder (``benchmark_output/runs/<suite>/<run>``), by item id.

    Prompts, candidates and gold come from HELM's own requests and references; the scoring
    context of a separate-adapter request is its prompt without the candidate it ends with (the
    cot x logprob echo requests are the annotator's, so their context is the one it recorded)."""
    state = json.loads((run_dir / "scenario_state.json").read_text(encoding="utf-8"))
    by_item: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for request_state in state["request_states"]:
        by_item[request_state["instance"]["id"]].append(request_state)
    items: dict[str, HarnessItem] = {}
    for item_id, states in by_item.items():
        instance = states[0]["instance"]
        references = [r["output"]["text"] for r in instance["references"]]
        correct = [i for i, r in enumerate(instance["references"]) if "correct" in r.get("tags", [])]
        record = states[0].get("annotations", {}).get("safetyrepro", {})
        generation = [s for s in states if s.get("reference_index") is None]
        contexts = []
        for s in states:
            if s.get("reference_index") is not None:
                prompt, candidate = s["request"]["prompt"], references[s["reference_index"]]
                contexts.append(prompt[: len(prompt) - len(candidate)] if candidate and prompt.endswith(candidate)
                                else prompt)
        if generation and record.get("loglikelihoods") is not None:
            contexts = [record["logprob_context"]] * len(references)
        completions = ((generation[0].get("result") or {}).get("completions") or []) if generation else []
        items[item_id] = HarnessItem(
            item_id=item_id,
            generation_prompt=generation[0]["request"]["prompt"] if generation else None,
            scoring_contexts=contexts,
            candidates=references,
            loglikelihoods=record.get("loglikelihoods"),
            raw_output=completions[0]["text"] if completions else None,
            prediction=record.get("prediction"),
            extraction_rule=record.get("extraction_rule", "missing"),
            gold=correct[0] if correct else None,
        )
    return items


def read_inspect_log(path: Path) -> dict[str, HarnessItem]:
    """Items of one Inspect ``.eval`` log of a SafetyRepro task, by item id: the exact prompt the
    ``safetyrepro/`` provider reported, the candidates, gold and the core's outcome as the scorer
    recorded them."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path), resolve_attachments=True)
    if log.status != "success":
        raise ConfigError(f"Inspect log {path.name} has status {log.status!r}", f"see {path.parent.parent}/stderr.log")
    items: dict[str, HarnessItem] = {}
    for sample in log.samples or []:
        meta = next(iter(sample.scores.values())).metadata if sample.scores else {}
        outcome = meta.get("outcome") or {}
        context = meta.get("logprob_context")
        candidates = list(meta.get("candidates") or [])
        generates = outcome.get("raw_output") is not None
        items[str(sample.id)] = HarnessItem(
            item_id=str(sample.id),
            generation_prompt=meta.get("prompt") if generates else None,
            scoring_contexts=[context] * len(candidates) if context is not None else [],
            candidates=candidates,
            loglikelihoods=outcome.get("loglikelihoods"),
            raw_output=outcome.get("raw_output"),
            prediction=outcome.get("prediction"),
            extraction_rule=outcome.get("extraction_rule", "missing"),
            gold=meta.get("gold"),
        )
    return items


def inspect_logs(log_dir: Path, *, by_task: bool = False) -> dict[str, Path]:
    """The newest ``.eval`` log of each SafetyRepro task in a log folder, by benchmark (or of each
    task, by its full name: a native run holds ``inspect_evals/bbq`` beside ``safetyrepro/bbq``)."""
    from inspect_ai.log import read_eval_log

    found: dict[str, tuple[str, Path]] = {}
    for path in sorted(log_dir.glob("*.eval")):
        header = read_eval_log(str(path), header_only=True)
        benchmark = header.eval.task if by_task else header.eval.task_args.get("name") or header.eval.task.split("/")[-1]
        created = str(header.eval.created)
        if benchmark not in found or created > found[benchmark][0]:
            found[benchmark] = (created, path)
    return {b: p for b, (_, p) in found.items()}


def reference_items(records: list[Any]) -> dict[str, HarnessItem]:
    """The reference runner's records as harness items (what every harness is compared with)."""
    return {
        r.item_id: HarnessItem(
            item_id=r.item_id,
            generation_prompt=r.prompt if r.raw_output is not None else None,
            scoring_contexts=[r.logprob_context] * len(r.candidates) if r.logprob_context is not None else [],
            candidates=list(r.candidates),
            loglikelihoods=r.loglikelihoods,
            raw_output=r.raw_output,
            prediction=r.prediction,
            extraction_rule=r.extraction_rule,
            gold=r.gold,
        )
        for r in records
    }

"""The grid on Ray: the open run's remaining batches, in shards, as Ray tasks.

Shards: the remaining batches (whole batches of the frozen plan, so every request is computed in
the same batch as on one machine) split by model, then into blocks of consecutive batches sized
so each task slot gets about three (by a rough cost: a generation batch counts its token
budget), never cut inside a decode group (``gridplan``; a group whose first batches are already
logged travels whole with the shard that computes the rest). A shard whose cot x logprob requests
need a generation from an earlier shard gets that shard's result as a Ray dependency;
generations already logged travel with the shard.

Each shard runs as a Ray task with its own chained log segment (``journal.py`` format, anchored to
the run's anchor and the shard's request keys) in the worker node's temporary folder. A worker
killed mid-shard: Ray retries the task, the retry opens the segment, keeps its whole batches and
computes the rest, so the segment holds each request once. The task returns the segment; the
driver checks its chain, its keys and that the worker computed with the run's model identity and
library versions, and appends the entries to ``events.jsonl`` in plan order as shards arrive.
The results come from the same entries, so they are byte-identical to a local run at the same
torch thread count (``--threads``; the log records it per request).

Ray is optional (``pip install 'safetyrepro[ray]'``): only this module imports it, lazily.
"""

from __future__ import annotations

import functools
import math
import os
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .durable import pause_point
from .errors import ConfigError, ExecutionError
from .grid import GridConfig, GridModel
from .gridexec import Computed, compute_batch
from .gridplan import ModelRequest, whole_batches
from .gridrun import OpenRun
from .hashing import canonical, sha256_json
from .identity import identity, library_versions
from .journal import Journal, verify_bytes

SEGMENTS = "safetyrepro-segments"
"""The worker nodes' folder (under their temporary folder) for shard segments in progress."""
FORWARDED_ENV = ("SAFETYREPRO_", "HF_", "TRANSFORMERS_", "TOKENIZERS_")
"""Environment variables a driver passes to its Ray workers (model cache, offline mode, hooks)."""
SHARDS_PER_SLOT = 3
"""Shards per task slot: smaller shards balance load and lose less to a killed worker; each costs
a task, and a model load only where the worker has not loaded that model yet."""


def batch_cost(requests: list[ModelRequest]) -> int:
    """A batch's rough cost in forward passes: a generation batch one per new token, a
    loglikelihood batch one (what sizes shards evenly enough; shards are several per slot)."""
    return max(1, requests[0].max_new_tokens) if requests[0].kind == "generate" else 1


@dataclass(frozen=True)
class Shard:
    """A block of consecutive whole batches of one model: what one Ray task computes."""

    index: int
    model: GridModel
    keys: list[str]
    requests: list[ModelRequest]
    batches: list[tuple[int, int]]
    """``[start, stop)`` ranges of ``keys``: the plan's batches."""
    run_anchor: str
    identity: dict[str, Any]
    """The model identity the driver logs; the worker must compute the same."""
    versions: dict[str, str]
    threads: int
    """torch threads the worker computes with (the task reserves as many CPUs)."""
    known: dict[str, Any] = field(default_factory=dict)
    """Responses of generations this shard's requests continue that are already logged."""
    needs: tuple[int, ...] = ()
    """Earlier shards whose generations this shard's requests continue (Ray dependencies)."""
    together: dict[int, list[ModelRequest]] = field(default_factory=dict)
    """Per batch (index into ``batches``) in a decode group: the group's requests, computed whole."""
    folder: str = ""
    """The driver's host and ``--out``: two runs of one plan at once never share a segment."""
    pause_parent: str = ""
    """Where the test hook writes its marker (``SAFETYREPRO_TEST_PAUSE_AT=shard-<i>-after-batch-<n>``)."""

    @property
    def segment_anchor(self) -> str:
        # (threads too: a segment computed at another thread count holds other bytes)
        return sha256_json({"run": self.run_anchor, "folder": self.folder, "threads": self.threads,
                            "shard": self.keys})

    def keep(self, done: int) -> int:
        """Of a segment's entries, those of whole batches."""
        return whole_batches(self.batches, done)


@dataclass(frozen=True)
class ShardResult:
    """What a shard's task returns: its complete segment and where it ran."""

    index: int
    segment: bytes
    resumed: int
    """Requests an earlier attempt had already logged in the segment (a retry after a lost worker)."""
    node: str
    pid: int


def plan_shards(run: OpenRun, slots: int, threads: int) -> list[Shard]:
    """The remaining batches of ``run`` in shards (plan order): by model, then in blocks of about
    ``1 / (slots * SHARDS_PER_SLOT)`` of the remaining cost (:func:`batch_cost`)."""
    prepared = run.prepared
    models = {m.name: m for m in run.grid.models}
    remaining = [n for n, (a, b) in enumerate(prepared.batches) if b > run.done]
    costs = [batch_cost([prepared.requests[k] for k in prepared.keys[slice(*prepared.batches[n])]])
             for n in remaining]
    target = max(1, math.ceil(sum(costs) / max(1, slots * SHARDS_PER_SLOT)))
    # a decode group's batches stay in one shard, so that it is computed once
    inside = {n for group in prepared.decode_groups for n in range(group[0] + 1, group[-1] + 1)}
    grouped = {n for group in prepared.decode_groups for n in group}
    blocks: list[list[int]] = []
    filled = 0
    for n, cost in zip(remaining, costs):
        model = prepared.requests[prepared.keys[prepared.batches[n][0]]].model
        if blocks and prepared.requests[prepared.keys[prepared.batches[blocks[-1][0]][0]]].model == model and (
                filled < target or n in inside):
            blocks[-1].append(n)
            filled += cost
        else:
            blocks.append([n])
            filled = cost
    shards: list[Shard] = []
    owner: dict[str, int] = {}
    for index, numbers in enumerate(blocks):
        block = [prepared.batches[n] for n in numbers]
        start, stop = block[0][0], block[-1][1]
        keys = prepared.keys[start:stop]
        requests = [prepared.requests[k] for k in keys]
        known, needs, earlier = {}, set(), set()
        for request in requests:
            earlier.add(request.key)
            if request.after is None or request.after in earlier:
                continue
            if request.after in run.responses:
                known[request.after] = run.responses[request.after]
            else:  # computed by an earlier shard (a generation precedes what continues it in the plan)
                needs.add(owner[request.after])
        name = requests[0].model
        shards.append(Shard(index=index, model=models[name], keys=keys, requests=requests,
                            batches=[(a - start, b - start) for a, b in block], run_anchor=run.anchor,
                            identity=run.identities[name], versions=run.versions, threads=threads, known=known,
                            needs=tuple(sorted(needs)),
                            together={i: [prepared.requests[k] for k in prepared.computed_with(n)]
                                      for i, n in enumerate(numbers) if n in grouped},
                            folder=f"{socket.gethostname()}:{run.out.resolve()}",
                            pause_parent=str(run.out.parent.resolve())))
        owner.update((k, index) for k in keys)
    return shards


# ---- the worker side ---------------------------------------------------------------------------

_loaded: dict[str, Any] = {}


def _worker_model(model: GridModel) -> Any:
    """The worker process keeps one model loaded across its tasks (shards are model-major)."""
    from .runner import load_model, release_models

    key = model.model_dump_json()
    if key not in _loaded:
        from transformers.utils import logging

        logging.disable_progress_bar()  # a worker's output goes to the driver's terminal
        _loaded.clear()
        release_models()
        _loaded[key] = load_model(model.spec)
    return _loaded[key]


@functools.cache
def _worker_identity(model_json: str) -> tuple[str, str]:
    return canonical(identity(GridModel.model_validate_json(model_json))), canonical(library_versions())


def segment_path(shard: Shard) -> Path:
    return Path(tempfile.gettempdir()) / SEGMENTS / f"{shard.segment_anchor[:32]}.jsonl"


def run_shard(shard: Shard, *upstream: ShardResult) -> ShardResult:
    """Compute one shard on a Ray worker, logging its chained segment; the complete segment."""
    import torch

    torch.set_num_threads(shard.threads)
    found_identity, found_versions = _worker_identity(shard.model.model_dump_json())
    if found_identity != canonical(shard.identity) or found_versions != canonical(shard.versions):
        raise ConfigError(f"the Ray worker on {socket.gethostname()} computes {shard.model.name} with other model "
                          f"weights, runtime or library versions than the driver ({found_identity[:200]} "
                          f"{found_versions[:200]})",
                          "install the same environment and model files on every node of the cluster")
    responses = dict(shard.known)
    needed = {r.after for r in shard.requests if r.after is not None}
    for result in upstream:
        for key, body in segment_bodies(result.segment):
            if key in needed:
                responses[key] = body["response"]
    path = segment_path(shard)
    journal = Journal(path, shard.segment_anchor, shard.keys)
    try:
        resumed = journal.open(align=shard.keep)
    except ConfigError:  # an unusable leftover (another attempt's torn header): start the shard over
        path.unlink(missing_ok=True)
        resumed = journal.open(align=shard.keep)
    for key, body in zip(shard.keys, resumed.bodies):
        responses[key] = body["response"]
    computed = Computed()
    for n, (start, stop) in enumerate(shard.batches, start=1):
        if stop <= len(resumed.bodies):
            continue
        requests = shard.requests[start:stop]
        bodies = compute_batch(requests, _worker_model(shard.model), responses, shard.identity, shard.versions,
                               together=shard.together.get(n - 1), computed=computed)
        for key, body in zip(shard.keys[start:stop], bodies):
            journal.append(key, body)
            responses[key] = body["response"]
        pause_point(f"shard-{shard.index}-after-batch-{n}", Path(shard.pause_parent), once=True)
    segment = path.read_bytes()
    path.unlink()
    return ShardResult(index=shard.index, segment=segment, resumed=len(resumed.bodies), node=socket.gethostname(),
                       pid=os.getpid())


def segment_bodies(segment: bytes) -> list[tuple[str, dict[str, Any]]]:
    import json

    entries = [json.loads(line) for line in segment.split(b"\n")[1:-1]]
    return [(e["key"], e["body"]) for e in entries]


# ---- the driver side ---------------------------------------------------------------------------

def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray, which is not installed here",
                          "pip install 'safetyrepro[ray]' (or use --executor local)") from None
    return ray


def _forwarded_env() -> dict[str, str]:
    """The driver's variables for its tasks, minus credentials (Ray shows a job's environment in
    its dashboard and job listings)."""
    secret = ("TOKEN", "KEY", "SECRET", "PASSWORD")
    return {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV) and not any(s in k for s in secret)}


def connect(address: str | None, workers: int | None, threads: int) -> tuple[int, bool]:
    """Join the cluster at ``address`` or start a local one of ``workers`` task slots; the number of
    slots, and whether this call started Ray (and so shuts it down)."""
    import logging

    ray = _ray()
    if ray.is_initialized():
        return _slots(ray, threads), False
    options: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                               "runtime_env": {"env_vars": _forwarded_env()}}
    try:
        if address is None:  # "local": a new cluster even where RAY_ADDRESS or `ray start` names another
            ray.init(address="local", num_cpus=(workers or 1) * threads, **options)
            return workers or 1, True
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
        hint = "" if address in (None, "auto") or os.environ.get("RAY_AUTH_MODE") else (
            "; a cluster with token authentication (Ray's default) takes an explicit address only with "
            "RAY_AUTH_MODE=token and its token (~/.ray/auth_token or RAY_AUTH_TOKEN)")
        raise ConfigError(f"cannot {'start a local Ray cluster' if address is None else f'join the Ray cluster at {address}'}"
                          f" ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})",
                          "start one (`ray start --head`), pass its address (or auto on its head node), or leave out "
                          f"--address to start a local cluster{hint}") from None
    try:
        return _slots(ray, threads), True
    except ConfigError:
        ray.shutdown()
        raise


def _slots(ray: Any, threads: int) -> int:
    """Tasks of ``threads`` CPUs the cluster runs at once; a task no node can hold is refused (Ray
    would wait for such a node forever)."""
    largest = max((node.get("Resources", {}).get("CPU", 0) for node in ray.nodes() if node.get("Alive")), default=0)
    if largest < threads:
        raise ConfigError(f"--threads {threads}: no node of the Ray cluster has {threads} CPUs (the largest has "
                          f"{largest:g})", f"use --threads {max(1, int(largest))} or less")
    return sum(int(node.get("Resources", {}).get("CPU", 0) // threads) for node in ray.nodes() if node.get("Alive"))


def preflight(grid: GridConfig, address: str | None) -> None:
    """What refuses a grid on Ray before anything is planned: an endpoint model (its requests go to
    its servers), Ray missing, a ``host:port`` address that nothing answers (Ray itself keeps
    retrying one for minutes)."""
    for model in grid.models:
        if model.endpoint is not None:
            raise ConfigError(f"model {model.name} is an endpoint: its requests go to its servers, not to Ray workers",
                              "run this grid with --executor endpoints (or without that model)")
    _ray()
    if address is None:
        return
    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit():
        return  # 'auto', or a ray:// client address: Ray answers those quickly itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"nothing answers at the Ray address {address} ({exc.strerror or exc})",
                          "start the cluster there (`ray start --head --port PORT`), check the address, or leave "
                          "out --address to start a local cluster") from None


def _merge(run: OpenRun, shard: Shard, result: ShardResult) -> None:
    """Check a returned segment and append its entries to the run's log (the shard's turn in plan order)."""
    problems = verify_bytes(result.segment, f"segment of shard {shard.index}", shard.segment_anchor, shard.keys)
    entries = segment_bodies(result.segment) if not problems else []
    if not problems and [k for k, _ in entries] != shard.keys:
        problems = [f"it holds {len(entries)} of the shard's {len(shard.keys)} requests"]
    for _, body in entries:
        if body.get("model") != run.identities[shard.model.name] or body.get("versions") != run.versions:
            problems = problems or ["it was computed with another model identity or library versions"]
    if problems:
        raise ExecutionError(f"shard {shard.index} from {result.node}: {problems[0]}",
                             "rerun the same command: the log keeps every merged request and resumes")
    if result.resumed:
        run.notify(f"shard {shard.index} was retried after its worker was lost: the retry kept {result.resumed} of "
                   f"{len(shard.keys)} requests from its segment and computed the rest")
    for key, body in entries:
        run.record(key, body)


def on_ray(run: OpenRun, *, address: str | None = None, workers: int | None = None, threads: int = 1,
           show_progress: bool = True, max_retries: int = 3) -> None:
    """An executor (``gridrun.run_grid(executor=...)``): the open run's remaining batches as Ray
    tasks, merged in plan order into its log as they arrive."""
    from tqdm.auto import tqdm

    preflight(run.grid, address)
    if run.done == len(run.prepared.keys):
        return
    slots, started = connect(address, workers, threads)
    ray = _ray()
    try:
        shards = plan_shards(run, slots, threads)
        run.notify(f"ray: {len(shards)} shards of {len(run.prepared.keys) - run.done} requests on {slots} task slot(s) "
                   f"of {threads} thread(s)")
        task = ray.remote(num_cpus=threads, max_retries=max_retries)(run_shard)
        refs: dict[int, Any] = {}
        for shard in shards:
            refs[shard.index] = task.remote(shard, *(refs[i] for i in shard.needs))
        arrived: dict[int, ShardResult] = {}
        pending = {ref: index for index, ref in refs.items()}
        following = 0
        with tqdm(total=len(run.prepared.keys), initial=run.done, desc="requests (ray)",
                  disable=not show_progress) as bar:
            while following < len(shards):
                ready, _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(ready[0])
                arrived[index] = _result(ray, ready[0], shards[index], max_retries)
                while following in arrived:  # plan order: merge every shard whose predecessors are in
                    _merge(run, shards[following], arrived.pop(following))
                    bar.update(len(shards[following].keys))
                    following += 1
    finally:
        if started:
            ray.shutdown()


def _result(ray: Any, ref: Any, shard: Shard, max_retries: int) -> ShardResult:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, ConfigError):
            raise exc.cause from None
        raise ExecutionError(f"shard {shard.index} ({shard.model.name}, {len(shard.keys)} requests) failed on Ray: "
                             f"{type(exc.cause).__name__}: {' '.join(str(exc.cause).split())[:300]}",
                             "fix the cause; rerunning the same command resumes from the merged requests") from None
    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError) as exc:
        raise ExecutionError(f"shard {shard.index} ({shard.model.name}, {len(shard.keys)} requests) was lost on Ray "
                             f"after {max_retries} retries ({type(exc).__name__})",
                             "rerun the same command: the log keeps every merged request and resumes") from None
    except ray.exceptions.RayError as exc:
        raise ExecutionError(f"shard {shard.index} ({shard.model.name}, {len(shard.keys)} requests) failed on Ray "
                             f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]})",
                             "fix the cause; rerunning the same command resumes from the merged requests") from None

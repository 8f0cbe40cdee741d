"""Fixed, seeded, stratified evaluation subsets and few-shot pools, committed as manifests.

Rule (the same for every benchmark; the strata are the benchmark's):

1. Rank every eligible item by ``sha256(seed, item id)`` -- independent of file order.
2. Give each stratum ``subset_size * stratum_size / eligible`` items, rounding by largest remainder
   (ties broken by stratum name), and take its best-ranked items.
3. The exemplar pool comes from the remaining eligible items: walk them in rank order, cycling over
   the pool key (gold label, or the stratum where there is no gold) so consecutive exemplars cover
   different answers, until ``pool_size`` are chosen. Exemplars are used in that order.
4. The subset is stored in rank order, so ``--limit N`` takes a seeded sample, not one stratum.

Manifests (``subsets/<benchmark>.json``) hold the ids and a SHA-256 over them; the loader checks both.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .benchmarks.base import Benchmark, stable_unit
from .errors import DataError
from .items import Item

SUBSET_SEED = 20261130


class Manifest(BaseModel):
    """The committed identity of a benchmark's evaluation subset and exemplar pool."""

    model_config = ConfigDict(frozen=True)

    benchmark: str
    """Benchmark name."""
    seed: int
    """Seed of the ranking."""
    rule: str
    """The benchmark's stratification, in words."""
    eval_ids: list[str]
    """Evaluation items in seeded rank order."""
    fewshot_ids: list[str]
    """Exemplar pool in the order exemplars are used."""
    sha256: str
    """SHA-256 over both id lists; a manifest whose ids do not match it is rejected."""


def ids_hash(eval_ids: list[str], fewshot_ids: list[str]) -> str:
    return hashlib.sha256(("\n".join(eval_ids) + "\n--\n" + "\n".join(fewshot_ids)).encode()).hexdigest()


def _pool_key(benchmark: Benchmark, item: Item) -> str:
    return str(item.gold) if item.gold is not None else benchmark.stratum(item)


def build_manifest(benchmark: Benchmark, items: list[Item], seed: int = SUBSET_SEED) -> Manifest:
    eligible = [i for i in items if benchmark.eligible(i)]
    rank = {i.id: stable_unit(str(seed), i.id) for i in eligible}
    strata: dict[str, list[Item]] = defaultdict(list)
    for item in sorted(eligible, key=lambda i: rank[i.id]):
        strata[benchmark.stratum(item)].append(item)
    size = min(benchmark.subset_size, len(eligible) - benchmark.pool_size)
    quotas = {s: size * len(members) / len(eligible) for s, members in strata.items()}
    alloc = {s: int(q) for s, q in quotas.items()}
    leftover = size - sum(alloc.values())
    for s in sorted(quotas, key=lambda s: (-(quotas[s] - alloc[s]), s))[:leftover]:
        alloc[s] += 1
    chosen = [item for s, members in strata.items() for item in members[: alloc[s]]]
    chosen_ids = {i.id for i in chosen}
    remaining = [i for i in sorted(eligible, key=lambda i: rank[i.id]) if i.id not in chosen_ids]
    by_key: dict[str, list[Item]] = defaultdict(list)
    for item in remaining:
        by_key[_pool_key(benchmark, item)].append(item)
    pool: list[Item] = []
    keys = sorted(by_key)
    while len(pool) < benchmark.pool_size and any(by_key.values()):
        for key in keys:
            if by_key[key] and len(pool) < benchmark.pool_size:
                pool.append(by_key[key].pop(0))
    eval_ids = [i.id for i in sorted(chosen, key=lambda i: rank[i.id])]
    fewshot_ids = [i.id for i in pool]
    return Manifest(benchmark=benchmark.name, seed=seed, rule=benchmark.subset_rule,
                    eval_ids=eval_ids, fewshot_ids=fewshot_ids, sha256=ids_hash(eval_ids, fewshot_ids))


def manifest_path(benchmark: Benchmark) -> Path:
    return Path(__file__).parent / "subsets" / f"{benchmark.name}.json"


def load_manifest(benchmark: Benchmark, path: Path | None = None) -> Manifest | None:
    """The committed manifest, or ``None`` if the benchmark ships none (then it is built on the fly)."""
    path = path or getattr(benchmark, "manifest_file", None) or manifest_path(benchmark)
    if not Path(path).is_file():
        return None
    try:
        manifest = Manifest.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
    except (ValueError, json.JSONDecodeError) as exc:
        raise DataError(f"subset manifest {path} is malformed ({exc})",
                        "restore it from git or rebuild with `safetyrepro subsets --write`") from None
    if ids_hash(manifest.eval_ids, manifest.fewshot_ids) != manifest.sha256:
        raise DataError(f"subset manifest {path} does not match its sha256 (ids were edited)",
                        "restore it from git; subsets are fixed so that runs stay comparable")
    return manifest


def select(benchmark: Benchmark, items: list[Item]) -> tuple[list[Item], list[Item], Manifest]:
    """The evaluation items and the exemplar pool, in manifest order, as the benchmark presents them."""
    manifest = load_manifest(benchmark) or build_manifest(benchmark, items)
    by_id = {i.id: i for i in items}
    missing = [i for i in manifest.eval_ids + manifest.fewshot_ids if i not in by_id]
    if missing:
        raise DataError(
            f"the data for {benchmark.name} lacks {len(missing)} item(s) of the committed subset, "
            f"e.g. {missing[:3]}",
            "use the pinned upstream files (see docs/data.md)",
        )
    evals = benchmark.arrange([by_id[i] for i in manifest.eval_ids])
    pool = benchmark.arrange([by_id[i] for i in manifest.fewshot_ids])
    return evals, pool, manifest


def write_manifest(manifest: Manifest, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest.model_dump(), indent=1) + "\n", encoding="utf-8")

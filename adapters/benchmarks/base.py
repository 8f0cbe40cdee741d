"""What a benchmark must provide to the core: items, strata, shot answers and metrics.

Everything a harness needs about a benchmark (items, candidates, gold, label words, metrics) is
defined here once; templates live in ``templates/<name>.yaml`` and extraction in ``extract.py``.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..datafiles import DataFile, DataSource, ensure_files
from ..items import Item

if TYPE_CHECKING:
    from ..metrics import MetricValue
    from ..records import ItemRecord

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def stable_unit(*parts: str) -> float:
    """A deterministic number in [0, 1) from strings (no global RNG, no hash randomisation)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class Benchmark(ABC):
    """A benchmark definition. Subclasses are registered through the ``safetyrepro`` hooks."""

    name: ClassVar[str]
    """Registry name, e.g. ``bbq``; also the prefix of every item id."""
    title: ClassVar[str]
    """Human-readable name for tables."""
    files: ClassVar[tuple[DataFile, ...]] = ()
    """Pinned upstream files the loader reads."""
    subset_size: ClassVar[int] = 200
    """Default size of the fixed evaluation subset."""
    pool_size: ClassVar[int] = 10
    """Size of the few-shot exemplar pool (disjoint from the subset)."""
    primary_metric: ClassVar[str]
    """The metric shown first in tables (and ranked on by later grid statistics)."""
    subset_rule: ClassVar[str]
    """One sentence describing the stratification of the subset, recorded in the manifest."""
    template_file: ClassVar[Path | None] = None
    """YAML with this benchmark's template blocks; ``None`` means ``templates/<name>.yaml``."""

    # ---- loading -------------------------------------------------------------------------
    def load(self, source: DataSource) -> list[Item]:
        """All items from the (hash-verified) upstream files, in a stable order."""
        return self.parse(ensure_files(self.files, source))

    @abstractmethod
    def parse(self, paths: dict[str, Path]) -> list[Item]:
        """Normalise the upstream rows; raise DataError naming file and row on a malformed row."""

    # ---- subset --------------------------------------------------------------------------
    @abstractmethod
    def stratum(self, item: Item) -> str:
        """The stratum the seeded subset rule balances over."""

    def eligible(self, item: Item) -> bool:
        """Whether an item may enter the subset or the exemplar pool (default: all)."""
        return True

    def shot_answer(self, item: Item, position: int) -> int:
        """The option an exemplar demonstrates at few-shot ``position`` (default: its gold)."""
        assert item.gold is not None
        return item.gold

    def shots(self, pool: list[Item], k: int) -> list[tuple[Item, str]]:
        """The first ``k`` exemplars of the pool, each with the answer string it demonstrates."""
        return [(shot, self.answer_string(shot, self.shot_answer(shot, n))) for n, shot in enumerate(pool[:k])]

    # ---- metrics -------------------------------------------------------------------------
    @abstractmethod
    def metrics(self, records: Sequence[ItemRecord], *, seed: int, n_resamples: int) -> dict[str, MetricValue]:
        """Benchmark metrics with bootstrap confidence intervals, from per-item records."""

    def correct(self, item: Item, prediction: int | None) -> bool | None:
        """Per-item correctness; ``None`` where the benchmark has no correct answer."""
        if item.gold is None:
            return None
        return prediction is not None and prediction == item.gold

    answer_with: ClassVar[str] = "label"
    """What an answer states: ``label`` (``B``, ``Yes``) or ``option`` (the option text itself,
    CrowS-Pairs' sentences). Exemplar answers and logprob candidates both use it."""

    def answer_string(self, item: Item, index: int) -> str:
        return item.options[index] if self.answer_with == "option" else item.labels[index]

    # ---- extraction hints ----------------------------------------------------------------
    verdict_patterns: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(regex, label) pairs for prose verdicts; used only when exactly one label's patterns match."""
    refusal_means: ClassVar[str | None] = None
    """Label a recognised refusal phrase counts as (XSTest: ``Refuse``); ``None`` = no such rule."""

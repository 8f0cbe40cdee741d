"""What a benchmark must provide to the core: data files, items, strata, shot answers and metrics.

Everything a harness needs about a benchmark (data files, items, candidates, gold, label words,
metric names and directions) is declared here once; templates live in ``templates/<name>.yaml``
and extraction in ``extract.py``. A plugin benchmark subclasses :class:`Benchmark` and is then
fetched, verified, run and bound to every harness exactly like a built-in.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..datafiles import DataFile, DataSource, ensure_files
from ..items import Item

from ..errors import ConfigError
from ..metrics import (UNPARSED_SPEC, MetricSpec, MetricValue, accuracy_metrics, harness_specs, harness_values,
                       nothing_to_measure, unparsed_metric)

if TYPE_CHECKING:
    from ..records import Outcome

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _stamp(path: Path) -> tuple[int, int]:
    """What tells one state of a file from another without reading it (size, modification time)."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


_PARSED: dict[tuple[type, tuple[tuple[str, str, int, int], ...]], tuple[Item, ...]] = {}
"""Items already parsed in this process, by benchmark class and the files' paths and stamps."""


def _parsed(bench: Benchmark, files: tuple[tuple[str, str, int, int], ...]) -> tuple[Item, ...]:
    key = (type(bench), files)
    if key not in _PARSED:
        if len(_PARSED) >= 8:  # a long-lived process (the test suite) reading many copies of the data
            _PARSED.clear()
        _PARSED[key] = tuple(bench.parse({name: Path(path) for name, path, _, _ in files}))
    return _PARSED[key]


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
    metric_specs: ClassVar[tuple[MetricSpec, ...]] = (
        MetricSpec(name="accuracy", direction="higher", primary=True,
                   description="share of items answered correctly; unparsed counts as wrong"),
    )
    """The metrics :meth:`metrics` returns, with their directions; exactly one is primary.
    ``unparsed_rate`` is added for every benchmark and need not be declared."""
    subset_rule: ClassVar[str]
    """One sentence describing the stratification of the subset, recorded in the manifest."""
    template_file: ClassVar[Path | None] = None
    """YAML with this benchmark's template blocks; ``None`` means ``templates/<name>.yaml``."""

    # ---- loading -------------------------------------------------------------------------
    def load(self, source: DataSource) -> list[Item]:
        """All items from the (hash-verified) upstream files, in a stable order. Parsed once per
        process and set of files (items are frozen): a grid prepares every cell from the same files."""
        paths = ensure_files(self.files, source)
        return list(_parsed(self, tuple(sorted((name, str(path), *_stamp(path)) for name, path in paths.items()))))

    @abstractmethod
    def parse(self, paths: dict[str, Path]) -> list[Item]:
        """Normalise the upstream rows; raise DataError naming file and row on a malformed row."""

    # ---- subset --------------------------------------------------------------------------
    @abstractmethod
    def stratum(self, item: Item) -> str:
        """The stratum the seeded subset rule balances over."""

    def arrange(self, items: list[Item]) -> list[Item]:
        """How the items of an ordered list (the evaluated subset, or the exemplar pool) are
        presented; position-dependent choices such as answer-order balancing go here, so they
        hold on every prefix of the list. Default: unchanged."""
        return items

    def eligible(self, item: Item) -> bool:
        """Whether an item may enter the subset or the exemplar pool (default: all)."""
        return True

    def shot_answer(self, item: Item, position: int) -> int:
        """The option an exemplar demonstrates at few-shot ``position`` (default: its gold)."""
        assert item.gold is not None
        return item.gold

    # ---- metrics -------------------------------------------------------------------------
    def metrics(self, outcomes: Sequence[Outcome], *, seed: int, n_resamples: int) -> dict[str, MetricValue]:
        """The declared metrics (not ``unparsed_rate``) with bootstrap intervals; default: accuracy."""
        return accuracy_metrics(outcomes, seed=seed, n_resamples=n_resamples)

    item_outcome_note: ClassVar[str] = ("per item: 1 if answered correctly, else 0 (unparsed counts as wrong); "
                                        "the primary metric is their mean")
    """What :meth:`item_outcome` measures, in one sentence (the statistics report states it)."""

    def item_outcome(self, outcome: Outcome) -> float | None:
        """The per-item quantity the primary metric is built from (None: the item does not count,
        e.g. an unparsed pair where the metric leaves those out). With :meth:`outcome_stratum` it
        must give the primary metric back through :func:`score_outcomes` -- the statistics check
        that on every comparison and refuse a benchmark where it does not. Default: correct (1) or
        not (0), whose mean is accuracy."""
        return float(bool(outcome.correct))

    def outcome_stratum(self, outcome: Outcome) -> str | None:
        """The stratum whose mean the primary metric averages with equal weight (XSTest's safe and
        unsafe prompts), or None where the metric is the plain mean of the outcomes."""
        return None

    @classmethod
    def all_metric_specs(cls) -> tuple[MetricSpec, ...]:
        """The declared specs plus ``unparsed_rate``, in table order (primary first)."""
        specs = [s for s in cls.metric_specs if s.name != UNPARSED_SPEC.name]
        primaries = [s.name for s in specs if s.primary]
        if len(primaries) != 1:
            raise ConfigError(f"benchmark {cls.name!r} declares {len(primaries)} primary metrics {primaries}",
                              "mark exactly one MetricSpec in metric_specs with primary=True")
        return tuple(sorted(specs, key=lambda s: not s.primary)) + (UNPARSED_SPEC,)

    @classmethod
    def harness_metric_specs(cls) -> tuple[MetricSpec, ...]:
        """What the harness bindings report (:func:`~..metrics.harness_specs`): the declared specs
        in table order, each target metric followed by its distance to the target."""
        return harness_specs(cls.all_metric_specs())

    def measure_for_harness(self, outcomes: Sequence[Outcome], *, seed: int, n_resamples: int) -> dict[str, MetricValue]:
        """:meth:`measure` plus the target metrics' distances, in :meth:`harness_metric_specs` order."""
        return harness_values(self.all_metric_specs(), self.measure(outcomes, seed=seed, n_resamples=n_resamples))

    @classmethod
    def metric_spec(cls, name: str) -> MetricSpec:
        for spec in cls.harness_metric_specs():
            if spec.name == name:
                return spec
        raise ConfigError(f"benchmark {cls.name!r} has no metric {name!r}",
                          f"choose one of {[s.name for s in cls.all_metric_specs()]}")

    @property
    def primary_metric(self) -> str:
        return self.all_metric_specs()[0].name

    def measure(self, outcomes: Sequence[Outcome], *, seed: int, n_resamples: int) -> dict[str, MetricValue]:
        """Every declared metric plus ``unparsed_rate``, in spec order: what runs and bindings report.

        A benchmark whose ``metrics()`` returns names it did not declare is an error, so a metric
        can never ship without a stated direction."""
        computed = self.metrics(outcomes, seed=seed, n_resamples=n_resamples)
        computed[UNPARSED_SPEC.name] = unparsed_metric(outcomes, seed=seed, n_resamples=n_resamples)
        declared = [s.name for s in self.all_metric_specs()]
        if set(computed) != set(declared):
            raise ConfigError(
                f"benchmark {self.name!r} computes metrics {sorted(computed)} but declares {sorted(declared)}",
                "make metric_specs list exactly the names metrics() returns",
            )
        if outcomes and not any(o.parsed for o in outcomes):
            # Nothing was read: every metric is undefined, whatever its formula gives for "all
            # unparsed" (a 0.000 [0.000, 0.000] that a reader would take for a measured zero).
            computed.update({name: nothing_to_measure(len(outcomes), len(outcomes))
                             for name in declared if name != UNPARSED_SPEC.name})
        return {name: computed[name] for name in declared}

    def reference_option(self, item: Item) -> int:
        """The meaning an item's continuous score is about (symmetric z_sym / b_map): its gold
        option, or option 0 where there is none (benchmarks without gold may override)."""
        return item.gold if item.gold is not None else 0

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
    undetermined_options: ClassVar[frozenset[str]] = frozenset()
    """The wordings, in :func:`..naming.words` form, of an option that says the answer cannot be told
    from the context (BBQ's "not known", "can't be determined", ...): the regex rules read a reply
    that says so in its own words as that option (rule ``undetermined``). Empty: no such rule."""
    request_field: ClassVar[str | None] = None
    """The item field holding what a refusal would refuse (XSTest: ``prompt``), read by the regex
    rules where a reply's meaning depends on it: a whole reply "No." refuses a request, but may
    answer a yes/no question (rule ``bare-no``)."""


def score_outcomes(values: np.ndarray, strata: np.ndarray | None = None) -> np.ndarray:
    """The primary metric from per-item outcomes (:meth:`Benchmark.item_outcome`), over the last
    axis, vectorised over the leading ones (each row a resampled or swapped set of items): the
    mean of the outcomes that count (NaN: an item that does not), or with ``strata`` (same shape,
    or one row) the mean of the strata's means, each stratum weighing the same. NaN where nothing
    counts. The paired tests and the bootstrap of the statistics compute every resample with it."""
    values = np.asarray(values, dtype=float)
    if strata is None:
        return _nan_mean(values, np.ones(values.shape, dtype=bool))
    levels = np.unique(np.asarray(strata))  # before broadcasting: the rows repeat the same labels
    strata = np.broadcast_to(np.asarray(strata), values.shape)
    means = [_nan_mean(values, strata == s) for s in levels]
    stacked = np.stack(means)
    counted = ~np.isnan(stacked)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counted.any(0), np.nansum(stacked, 0) / counted.sum(0), np.nan)


def _nan_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    kept = mask & ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(kept.any(-1), np.where(kept, values, 0.0).sum(-1) / kept.sum(-1), np.nan)

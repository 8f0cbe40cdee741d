"""Symmetric label mapping: ask each item twice, the second time with the label-to-meaning mapping
reversed, and read the model's preference with the mapping's bias cancelled.

A model may prefer a label (``A``, ``Yes``, the first-listed sentence) whatever it stands for. The
``symmetric`` scoring path therefore asks every item a second time with its options in reverse
order: letters stay where they are and now name the opposite meanings (TruthfulQA, BBQ); CrowS'
sentences swap places; the decision words of ToxiGen and XSTest -- whose label *is* the meaning --
swap their order in the prompt (their templates list the words from the item's labels). With
``p+`` and ``p-`` the candidates' softmax probabilities under the two mappings, read back onto the
same meanings, and ``z = logit(clip(p, EPS))`` per meaning:

* ``z_sym = (z+ + z-) / 2`` -- the mapping-free preference; the prediction is its argmax (a tie
  made by the clipping goes to the higher unclipped z_sym, then to the lower index);
* ``b_map = (z+ - z-) / 2`` -- the mapping-bias diagnostic: how far the label assignment alone
  moved the reading.

Per item the record's ``meta["symmetric"]`` holds (stable, ``safetyrepro-symmetric/1``):
``{"format", "eps", "reference", "loglikelihoods_reversed" (original option order), "z_plus",
"z_minus", "z_sym", "b_map", "z_sym_unclipped" (one per option, original order),
"z_sym_reference", "b_map_reference"}``; the reference meaning is ``Benchmark.reference_option``:
the gold option, or for CrowS-Pairs the more stereotypical sentence. Per cell, :func:`summary`
gives the means. The exemplars of the second asking are mirrored too (the whole prompt uses one
mapping). With an odd number of options the middle one keeps its label under reversal, so its
b_map measures only the context change, not a label swap: the ``cyclic`` path
(:func:`shifted`, :func:`combine_shifts`) asks every option under every position instead -- n
askings of n candidates (n^2 candidate scorings per item, against 2n here and n on the logprob
path: 9 for BBQ's three options, 4 on two-option benchmarks, where it equals this path).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .items import Item

FORMAT = "safetyrepro-symmetric/1"
EPS = 1e-6
"""Probabilities are clipped to [EPS, 1 - EPS] before the logit, so one certain option cannot
make z infinite."""


def mirrored(item: Item) -> Item:
    """The item with its label-to-meaning mapping reversed: options in reverse order; letter labels
    stay in place (so each now names the opposite meaning), labels that are the options themselves
    (decision words) move with them. Gold follows its option; ``meta`` is the original's (scores
    are always read back onto the original order, so its indices keep their meaning)."""
    n = len(item.options)
    options = tuple(reversed(item.options))
    labels = tuple(reversed(item.labels)) if item.labels == item.options else item.labels
    gold = None if item.gold is None else n - 1 - item.gold
    return item.model_copy(update={"options": options, "labels": labels, "gold": gold})


def shifted(item: Item, k: int) -> Item:
    """The item under cyclic shift ``k``: the option shown at position j is the original option
    (j + k) mod n; letter labels stay in place, labels that are the options move with them. Over
    k = 0..n-1 every option is asked under every letter position once (``cyclic`` scoring)."""
    n = len(item.options)
    order = [(j + k) % n for j in range(n)]
    options = tuple(item.options[i] for i in order)
    labels = options if item.labels == item.options else item.labels
    gold = None if item.gold is None else order.index(item.gold)
    return item.model_copy(update={"options": options, "labels": labels, "gold": gold})


def _softmax(lls: Sequence[float]) -> np.ndarray:
    values = np.asarray(lls, dtype=float)
    exp = np.exp(values - values.max())
    return exp / exp.sum()


def logit(p: np.ndarray, eps: float = EPS) -> np.ndarray:
    clipped = np.clip(p, eps, 1 - eps)
    return np.log(clipped) - np.log1p(-clipped)


def _log_odds(lls: Sequence[float]) -> np.ndarray:
    """Unclipped log(p / (1 - p)) per option, computed stably from the loglikelihoods."""
    from scipy.special import logsumexp

    values = np.asarray(lls, dtype=float)
    return np.array([values[i] - logsumexp(np.delete(values, i)) for i in range(len(values))])


def combine(item: Item, lls_plus: Sequence[float], lls_minus_mirrored: Sequence[float], *,
            reference: int | None = None) -> dict[str, Any]:
    """The per-item evidence (format in the module docstring) from both askings' loglikelihoods;
    ``lls_minus_mirrored`` is in the mirrored item's option order; ``reference`` the meaning the
    scalar figures are about (``Benchmark.reference_option``; default gold, else option 0)."""
    n = len(item.options)
    if len(lls_plus) != n or len(lls_minus_mirrored) != n:
        raise ValueError(f"{item.id}: {len(lls_plus)} and {len(lls_minus_mirrored)} loglikelihoods for {n} options")
    lls_minus = [float(v) for v in reversed(lls_minus_mirrored)]  # back onto the original order
    z_plus, z_minus = logit(_softmax(lls_plus)), logit(_softmax(lls_minus))
    z_sym, b_map = (z_plus + z_minus) / 2, (z_plus - z_minus) / 2
    if reference is None:
        reference = item.gold if item.gold is not None else 0
    # Clipping can tie confident options exactly; the unclipped log-odds break such ties.
    unclipped = (_log_odds(lls_plus) + _log_odds(lls_minus)) / 2
    return {"format": FORMAT, "eps": EPS, "reference": reference, "loglikelihoods_reversed": lls_minus,
            "z_plus": z_plus.tolist(), "z_minus": z_minus.tolist(), "z_sym": z_sym.tolist(), "b_map": b_map.tolist(),
            "z_sym_unclipped": unclipped.tolist(),
            "z_sym_reference": float(z_sym[reference]), "b_map_reference": float(b_map[reference])}


CYCLIC_FORMAT = "safetyrepro-cyclic/1"


def combine_shifts(item: Item, lls_by_shift: Sequence[Sequence[float]], *, reference: int | None = None) -> dict[str, Any]:
    """The per-item evidence of the ``cyclic`` path from the n askings' loglikelihoods
    (``lls_by_shift[k]`` in shift k's presented order, :func:`shifted`), read back onto the original
    order. The mapping-free preference is the mean over the n askings of each option's **log
    probability** (each option under every position once): a preference for a letter position adds
    the same amount to whatever it names, so it cancels exactly in that mean for any number of
    options (a mean of logits would not: logit(softmax) is not additive beyond two options).
    ``z_sym = logit(clip(p_sym))`` with p_sym the renormalised mean (geometric-mean probability),
    the prediction its argmax; per asking ``z = logit(clip(p))``; ``b_map = z_listed - z_sym`` (how
    far the listed mapping alone moved the reading); ``position_bias[j]`` = the mean over askings of
    the log-probability lift of the option shown at position j. For two options every figure equals
    the ``symmetric`` path's. Format ``safetyrepro-cyclic/1``: ``{"format", "eps", "reference",
    "loglikelihoods" (per asking, original order), "z" (per asking), "z_sym", "b_map",
    "z_sym_unclipped", "position_bias", "z_sym_reference", "b_map_reference"}``."""
    from scipy.special import log_softmax

    n = len(item.options)
    if len(lls_by_shift) != n or any(len(lls) != n for lls in lls_by_shift):
        raise ValueError(f"{item.id}: {[len(x) for x in lls_by_shift]} loglikelihoods for {n} askings of {n} options")
    original = []
    for k, lls in enumerate(lls_by_shift):
        back = [0.0] * n
        for j, ll in enumerate(lls):
            back[(j + k) % n] = float(ll)
        original.append(back)
    log_p = np.array([log_softmax(np.asarray(lls, dtype=float)) for lls in original])
    mean_log_p = log_p.mean(0)
    z = np.array([logit(_softmax(lls)) for lls in original])
    z_sym = logit(_softmax(mean_log_p))
    b_map = z[0] - z_sym
    position_bias = [float(np.mean([log_p[k][(j + k) % n] - mean_log_p[(j + k) % n] for k in range(n)]))
                     for j in range(n)]
    if reference is None:
        reference = item.gold if item.gold is not None else 0
    return {"format": CYCLIC_FORMAT, "eps": EPS, "reference": reference, "loglikelihoods": original,
            "z": z.tolist(), "z_sym": z_sym.tolist(), "b_map": b_map.tolist(),
            "z_sym_unclipped": _log_odds(mean_log_p).tolist(), "position_bias": position_bias,
            "z_sym_reference": float(z_sym[reference]), "b_map_reference": float(b_map[reference])}


def argmax_candidate(loglikelihoods: Sequence[float]) -> int:
    """The predicted option on the logprob path: highest loglikelihood, ties to the lower index."""
    return max(range(len(loglikelihoods)), key=lambda i: (loglikelihoods[i], -i))


def prediction(evidence: dict[str, Any]) -> int:
    """The symmetric decision: argmax of z_sym; a tie (clipping) goes to the higher unclipped
    z_sym, then to the lower index."""
    z = evidence["z_sym"]
    tiebreak = evidence.get("z_sym_unclipped", [0.0] * len(z))
    return max(range(len(z)), key=lambda i: (z[i], tiebreak[i], -i))


def summary(records: Sequence[Any]) -> dict[str, Any] | None:
    """A cell's mapping-bias figures (None when its records are not symmetric): means of the
    reference meaning's z_sym, b_map and |b_map|, and the share of items whose decision under one
    mapping alone differs from the symmetric one."""
    evidence = [r.meta.get("symmetric") for r in records if r.meta.get("symmetric")]
    if not evidence:
        return None

    def mean(values: list[float]) -> float | None:
        return float(np.mean(values)) if values and not any(math.isnan(v) for v in values) else None

    # (one mapping alone decides as the logprob path would: argmax_candidate)
    askings = [e["z"] if e["format"] == CYCLIC_FORMAT else [e["z_plus"], e["z_minus"]] for e in evidence]
    changed = [any(argmax_candidate(z) != prediction(e) for z in zs) for e, zs in zip(evidence, askings)]
    return {"format": evidence[0]["format"], "items": len(evidence),
            "z_sym_reference_mean": mean([e["z_sym_reference"] for e in evidence]),
            "b_map_reference_mean": mean([e["b_map_reference"] for e in evidence]),
            "abs_b_map_reference_mean": mean([abs(e["b_map_reference"]) for e in evidence]),
            # cyclic: the lift each letter position gives whatever it names, where every item has as many
            **({"position_bias_mean": [mean(list(v)) for v in zip(*(e["position_bias"] for e in evidence))]}
               if evidence[0]["format"] == CYCLIC_FORMAT and len({len(e["z_sym"]) for e in evidence}) == 1 else {}),
            "share_decided_by_mapping": float(np.mean(changed))}

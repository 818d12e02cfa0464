"""Contingency tables and the classifier-accuracy measures computed from them.

Convention (used everywhere in capshift): a contingency table ``C`` is a float array of shape
``(..., n, n)`` with ``C[..., i, j]`` = fraction of items of *true* class i *predicted* as class j
(rows true, columns predicted, entries summing to 1), i.e. scikit-learn's
``confusion_matrix(y_true, y_pred, normalize="all")``. The LEAP paper (Volpi et al., Machine
Learning 2025, Eq. 5) writes the transpose (rows predicted, columns true).

Row sums are the true prevalence q (``true_prevalence``), column sums the predicted-class
fractions gamma (``predicted_prevalence``, Eq. 10). Every measure is vectorised over leading batch
dimensions and returns a float array of shape ``(...)``; measures are looked up by name through
:data:`MEASURES` / :func:`get_measure`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .validation import ATOL, check_distribution, check_int, check_labels

__all__ = [
    "contingency_table", "check_table", "true_prevalence", "predicted_prevalence", "class_counts",
    "accuracy", "f1", "macro_f1", "precision", "recall", "balanced_accuracy",
    "MEASURES", "get_measure", "measure_value",
]


def _as_labels(y, name: str, n_classes: int) -> np.ndarray:
    return check_labels(y, n_classes, name)


def contingency_table(y_true, y_pred, n_classes: int) -> np.ndarray:
    """Normalised contingency table of a labelled sample.

    Parameters
    ----------
    y_true, y_pred : array-like of int, shape (m,)
        True and predicted class indices in ``0..n_classes-1``.
    n_classes : int
        Size of the codeframe (classes absent from the sample get zero rows/columns).

    Returns
    -------
    ndarray of float, shape (n_classes, n_classes)
        ``C[i, j]`` = fraction of items with true class i predicted as j; sums to 1.
        Equals ``sklearn.metrics.confusion_matrix(..., normalize="all")``; the LEAP paper's
        Eq. 5 is its transpose.

    Raises
    ------
    ValueError
        Empty sample, length mismatch, labels outside the codeframe, ``n_classes < 2``.
    """
    n_classes = check_int(n_classes, "n_classes", min_value=2)
    y_true = _as_labels(y_true, "y_true", n_classes)
    y_pred = _as_labels(y_pred, "y_pred", n_classes)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred must have the same length, got {y_true.size} and {y_pred.size}")
    if y_true.size == 0:
        raise ValueError("cannot build a contingency table from an empty sample (y_true has no items)")
    counts = np.bincount(y_true * n_classes + y_pred, minlength=n_classes * n_classes)
    return counts.reshape(n_classes, n_classes) / y_true.size


def check_table(C, name: str = "table", atol: float = ATOL) -> np.ndarray:
    """Validate a (batch of) contingency table(s): shape ``(..., n, n)``, finite, >= 0, sums to 1.

    Every measure of this module calls it, so counts (scikit-learn's default ``confusion_matrix``),
    negative or non-square tables get a ValueError instead of a number. Returns the table as a float
    ndarray, entries in ``[-atol, 0)`` clipped to 0. Raises ``TypeError`` for non-numeric input and
    ``ValueError`` naming ``name`` otherwise.
    """
    if isinstance(C, (str, bytes)):
        raise TypeError(f"{name} must be an array of fractions, got a string")
    try:
        C = np.asarray(C, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a numeric array of shape (..., n, n), got {type(C).__name__}") from e
    if C.ndim < 2 or C.shape[-1] != C.shape[-2] or C.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (..., n, n) with n >= 2, got {C.shape}")
    if not np.all(np.isfinite(C)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    if np.any(C < -atol):
        raise ValueError(f"{name} has negative entries (min {C.min():.3g}); tables hold fractions in [0, 1]")
    sums = C.sum(axis=(-2, -1))
    if np.any(np.abs(sums - 1.0) > atol):  # absolute tolerance only (np.allclose would add a relative 1e-5)
        raise ValueError(f"{name} entries must sum to 1 (fractions of the sample), got sums in "
                         f"[{np.min(sums):.6g}, {np.max(sums):.6g}]; divide counts by the sample size "
                         "(confusion_matrix(..., normalize='all'))")
    return np.where(C < 0, 0.0, C)


def true_prevalence(C) -> np.ndarray:
    """Row sums of ``C``: the true class prevalence q, shape ``(..., n)``. ValueError for an invalid table."""
    return check_table(C, "C").sum(axis=-1)


def class_counts(prevalence, size: int) -> np.ndarray:
    """Integer class counts of a sample of ``size`` items at class fractions ``prevalence``, by largest
    remainders: ``floor(q_i * size)`` items of class i, and one more for each of the ``size - sum`` classes of
    largest remainder ``q_i * size - floor(q_i * size)``, ties to the lower class index. The counts sum to
    ``size`` exactly (rounding each class could give ``size + 1``: 10 + 10 at (.5, .5) for 19). Hamilton's
    largest-remainder apportionment.

    ``prevalence``: float (n,), >= 0, summing to 1 (:func:`capshift.validation.check_distribution`); ``size``: int
    >= 0. Returns int64 (n,). Raises TypeError/ValueError naming the argument."""
    q = check_distribution(prevalence, "prevalence")
    if q.ndim != 1:
        raise ValueError(f"prevalence must be one distribution, shape (n,), got shape {q.shape}")
    size = check_int(size, "size", min_value=0)
    raw = q * size
    counts = np.floor(raw).astype(np.int64)
    counts[np.argsort(counts - raw, kind="stable")[: max(size - int(counts.sum()), 0)]] += 1
    return counts


def predicted_prevalence(C) -> np.ndarray:
    """Column sums of ``C``: the predicted-class fractions gamma (LEAP Eq. 10), shape ``(..., n)``.

    ValueError for an invalid table (:func:`check_table`)."""
    return check_table(C, "C").sum(axis=-2)


def _diag(C):
    return np.diagonal(C, axis1=-2, axis2=-1)


def _safe_ratio(num, den, empty):
    """num/den elementwise, ``empty`` where den == 0 (documented fallback, never NaN)."""
    num, den = np.broadcast_arrays(np.asarray(num, float), np.asarray(den, float))
    out = np.full(num.shape, float(empty))
    np.divide(num, den, out=out, where=den > 0)
    return out


def accuracy(C) -> np.ndarray:
    """Vanilla accuracy, the trace of ``C`` (LEAP Eq. 6). Shape ``(...)``, values in [0, 1].

    ``C``: table(s) (..., n, n) of fractions summing to 1; ValueError otherwise (:func:`check_table`).
    """
    return _diag(check_table(C, "C")).sum(axis=-1)


def precision(C, empty: float = 0.0) -> np.ndarray:
    """Per-class precision ``C[j, j] / sum_i C[i, j]``, shape ``(..., n)``.

    A class never predicted has precision ``empty`` (default 0, as scikit-learn's
    ``zero_division=0``).
    """
    C = check_table(C, "C")
    return _safe_ratio(_diag(C), C.sum(axis=-2), empty)


def recall(C, empty: float = 0.0) -> np.ndarray:
    """Per-class recall ``C[i, i] / sum_j C[i, j]``, shape ``(..., n)``; ``empty`` for absent classes."""
    C = check_table(C, "C")
    return _safe_ratio(_diag(C), C.sum(axis=-1), empty)


def _f1_per_class(C) -> np.ndarray:
    C = check_table(C, "C")
    tp = _diag(C)
    den = 2 * tp + (C.sum(axis=-2) - tp) + (C.sum(axis=-1) - tp)
    # Denominator 0: the class is neither present nor predicted, everything else is a true
    # negative for it, so F1 = 1 (LEAP 2025, Sect. 5.14).
    return _safe_ratio(2 * tp, den, 1.0)


def f1(C, pos: int = 1) -> np.ndarray:
    """Binary F1 of class ``pos``: ``2TP / (2TP + FP + FN)`` (LEAP Eq. 29), 1 when the denominator is 0.

    Works for any n (one-vs-rest F1 of ``pos``). Shape ``(...)``.
    """
    C = check_table(C, "C")
    n = C.shape[-1]
    pos = check_int(pos, "pos", min_value=0, max_value=n - 1)
    return _f1_per_class(C)[..., pos]


def macro_f1(C) -> np.ndarray:
    """Macro-averaged F1: mean over classes of the one-vs-rest F1 (each 1 if undefined). Shape ``(...)``."""
    return _f1_per_class(C).mean(axis=-1)


def balanced_accuracy(C) -> np.ndarray:
    """Mean recall over the classes present in the sample (scikit-learn's definition). Shape ``(...)``."""
    C = check_table(C, "C")
    present = C.sum(axis=-1) > 0
    rec = recall(C)
    return _safe_ratio((rec * present).sum(axis=-1), present.sum(axis=-1), 0.0)


def _f1_auto(C) -> np.ndarray:
    """The "f1" measure: binary F1 of class 1 for n = 2, macro-F1 otherwise (the LEAP paper's usage)."""
    return f1(C, 1) if check_table(C, "C").shape[-1] == 2 else macro_f1(C)


#: Measures by name; each maps a table batch ``(..., n, n)`` to values ``(...)``.
#: "f1" is binary F1 of class 1 for n = 2 and macro-F1 otherwise (the LEAP paper's usage).
MEASURES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "accuracy": accuracy,
    "f1": _f1_auto,
    "binary_f1": f1,
    "macro_f1": macro_f1,
    "balanced_accuracy": balanced_accuracy,
}
_ALIASES = {"acc": "accuracy", "macro-f1": "macro_f1", "macrof1": "macro_f1", "bacc": "balanced_accuracy"}


def get_measure(name: str | Callable) -> Callable[[np.ndarray], np.ndarray]:
    """Look up a measure by name (see :data:`MEASURES`); callables pass through.

    Raises ``ValueError`` listing the known names for an unknown one.
    """
    if callable(name):
        return name
    if not isinstance(name, str):
        raise TypeError(f"measure must be a name or a callable, got {type(name).__name__}")
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in MEASURES:
        raise ValueError(f"unknown measure {name!r}; known measures: {sorted(MEASURES)}")
    return MEASURES[key]


def measure_value(C, measure: str | Callable = "accuracy"):
    """Apply a measure to a table (batch); returns a Python float for a single table."""
    out = np.asarray(get_measure(measure)(C), dtype=float)
    return float(out) if out.ndim == 0 else out

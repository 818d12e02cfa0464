"""The CAP baselines the LEAP family is compared against: Naive, ATC, DoC, DS, NN, CBPE, COT/Q-COT, RCA/RCA*.

Every class follows the :class:`capshift.base.CAPEstimator` API (constructor stores parameters,
``fit(X_val, y_val)``, ``predict``/``predict_batch``) and is registered by the LEAP paper's name in
:data:`capshift.registry.METHODS`, which the experiment runner reads:

- ``Naive``: V's table for every sample (IID assumption; LEAP 2025, Sect. 5.5).
- ``ATC``, ``ATC-NE``: average thresholded confidence, max-confidence and negative-entropy scores
  (Garg et al., ICLR 2022). Accuracy only.
- ``DoC``: difference of confidences, a regressor on validation samples (Guillory et al., ICCV 2021).
- ``DS``: dispersion score (Xie et al., NeurIPS 2023) and ``NN``: normalised nuclear norm of the
  posterior matrix (Deng et al., ICML 2023), each with a regressor from the score to the measure
  trained on validation samples (LEAP 2025, Sect. 5.5).
- ``CBPE``: confidence-based performance estimation (Kivimäki et al. 2025) on h's posteriors;
  ``SLD-CBPE``: the same after a PPS calibration, BCTS temperature scaling followed by the SLD/EMQ
  posterior adjustment (Alexandari et al. 2020; Saerens et al. 2002); ``L-CBPE``: the LEAP paper's, after the
  LasCal label-shift calibration (Popordanoska et al., NeurIPS 2024), see :class:`CBPE` for every variant.
- ``COT``: confidence optimal transport (Lu et al., NeurIPS 2023), and ``Q-COT``, the LEAP paper's
  PPS adaptation with a KDEy estimate of the test prevalence (LEAP 2025, Sect. 5.5). Accuracy only.
- ``RCA``, ``RCA*``: reverse classification accuracy and its regressor variant (Elsahar & Gallé,
  EMNLP 2019).

Conventions. h's decision on an item is the arg-max of its posteriors when the caller passes
posteriors (the runner does, so that h is applied once per test pool); for the scikit-learn
classifiers of :data:`capshift.experiment.CLASSIFIERS` other than the SVM this equals
``h.predict``. Posterior matrices are float arrays (m, n) whose rows sum to 1 (within 1e-6). Every
random choice (splits of V, validation samples) is seeded by ``random_state``.

Degenerate classifiers and minimum evidence (declared per class: ``needs_from_h``, ``min_per_class``; checked
by :meth:`capshift.base.CAPEstimator.fit`). If h predicts a single class on V, the methods that read h's
decisions (RCA, RCA*, DS on features) get a :class:`capshift.DegenerateClassifierWarning`; if h's posteriors on V
are one-hot everywhere (or the same for every item), so do the methods that read h's confidence (ATC, ATC-NE,
DoC, NN, CBPE, SLD-CBPE, L-CBPE, COT, Q-COT): their estimates then carry no information about the sample (ATC, CBPE
return 1.0 for a one-hot h). ``Naive`` reads neither and still works (right when there is no shift). DoC and
RCA* split V in two (stratified) and refuse a V with fewer than 2 items of a class; Q-COT's KDEy quantifier
needs 5 (warned below).
"""
from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import ot
from quapy.method.aggregative import EMQ
from scipy.optimize import minimize_scalar
from sklearn.base import clone
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split
from . import protocols
from .validation import CalibrationWarning, InsufficientEvidenceWarning, check_finite_array, check_int, check_labels, check_seed
from .base import CAPEstimator, check_posteriors
from .quantifiers import Quantifier, check_prevalence
from .tables import contingency_table, get_measure, true_prevalence

__all__ = ["Naive", "ATC", "DoC", "DS", "NN", "CBPE", "COT", "RCA", "RCAStar",
           "check_posteriors", "max_confidence", "negative_entropy", "atc_threshold", "dispersion_score",
           "nuclear_norm_score", "cbpe_table", "cot_accuracy", "temperature_scale", "classwise_calibration_error",
           "lascal_calibration_error", "lascal_temperature", "rlls_weights", "LASCAL_TEMPERATURES"]

_ACC = ("accuracy",)


# ---------------------------------------------------------------------------------------------
# score functions
# ---------------------------------------------------------------------------------------------
def max_confidence(P) -> np.ndarray:
    """Max-confidence score of each item, ``max_k P[i, k]``: float (m,) in [1/n, 1].

    ``P``: posteriors (m, n), validated by :func:`check_posteriors`. ATC-MC's score (Garg et al. 2022,
    Sect. 3) and QuAcc's MC covariate (Volpi et al. 2025, "Adding Covariates").
    """
    return check_posteriors(P).max(axis=1)


def negative_entropy(P) -> np.ndarray:
    """Negative Shannon entropy (nats) of each row, ``sum_k P log P`` (0 log 0 = 0): float (m,) in [-log n, 0].

    ``P``: posteriors (m, n), validated by :func:`check_posteriors`. ATC-NE's score (Garg et al. 2022,
    Sect. 3) and QuAcc's NE covariate.
    """
    P = check_posteriors(P)
    return np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0).sum(axis=1)


def atc_threshold(scores, correct) -> float:
    """ATC threshold t: the fraction of items with ``score >= t`` equals the fraction of ``correct`` items.

    ``scores`` float (m,), ``correct`` bool (m,). With k correct items out of m, t is the (m-k+1)-th
    smallest score, so exactly k scores are >= t when the scores are distinct (ties at t can only
    add items); t = +inf when k = 0. Garg et al., ICLR 2022, Eq. 1 (the authors' code picks the
    same point by minimising |false positives - false negatives| along the sorted scores).
    """
    s = np.sort(check_finite_array(scores, "scores", ndim=1))
    correct = np.asarray(correct)
    if s.size == 0:
        raise ValueError("scores is empty: the threshold needs at least one validation item")
    if correct.shape != s.shape:
        raise ValueError(f"correct must have one entry per score: expected shape {s.shape}, got {correct.shape}")
    if correct.dtype.kind not in "biu":
        raise TypeError(f"correct must be booleans (h(x) == y per item), got dtype {correct.dtype}")
    k = int(np.count_nonzero(correct))
    if k == 0:
        return float("inf")
    return float(s[len(s) - k])


def dispersion_score(Z, y_pred, n_classes: int, floor: float = 1e-12) -> float:
    """Dispersion score of a sample (Xie et al., NeurIPS 2023, Eq. 3).

    ``S = log( sum_k m_k ||mu_k - mu||^2 / (n - 1) )`` with ``mu`` the mean of the feature rows ``Z``
    (m, d), ``mu_k`` the mean of the rows pseudo-labelled k by ``y_pred`` (m,) int in 0..n-1 and
    ``m_k`` their number (classes nobody is assigned to contribute 0). The sum is floored at
    ``floor`` before the log so that a sample assigned to one class only gets a finite score.
    ``Z`` may be sparse (densified). Returns a float (log of squared feature units). Raises ValueError
    if ``Z`` is not a finite 2-d array, ``y_pred`` not (m,) codes in 0..n-1 or ``n_classes`` < 2.
    """
    n_classes = check_int(n_classes, "n_classes", min_value=2)
    Z = check_finite_array(Z.toarray() if hasattr(Z, "toarray") else Z, "Z", ndim=2)
    if Z.shape[0] < 1:
        raise ValueError("Z is empty: the dispersion score needs at least one item")
    y_pred = check_labels(y_pred, n_classes, "y_pred", n_items=Z.shape[0])
    mu = Z.mean(axis=0)
    counts = np.bincount(y_pred, minlength=n_classes)
    sums = np.zeros((n_classes, Z.shape[1]))
    np.add.at(sums, y_pred, Z)
    present = counts > 0
    mu_k = sums[present] / counts[present, None]
    between = float((counts[present] * ((mu_k - mu) ** 2).sum(axis=1)).sum())
    return float(np.log(max(between / (n_classes - 1), floor)))


def nuclear_norm_score(P) -> float:
    """Normalised nuclear norm of a posterior matrix P (m, n): ``||P||_* / sqrt(m * min(m, n))``, in (0, 1].

    Deng et al., ICML 2023, Eq. 4 (the normaliser is the largest nuclear norm a matrix with
    rows on the simplex can have: ``||P||_* <= sqrt(rank) ||P||_F <= sqrt(min(m, n) m)``, reached by
    one-hot rows spread evenly over the classes). Returns a float. Raises ValueError if ``P`` is not a
    posterior matrix (:func:`check_posteriors`).
    """
    P = check_posteriors(P, name="P")
    m, n = P.shape
    return float(np.linalg.svd(P, compute_uv=False).sum() / np.sqrt(m * min(m, n)))


def cbpe_table(P, y_pred, n_classes: int) -> np.ndarray:
    """CBPE contingency table (Kivimäki et al. 2025, Sect. 3): ``C[i, j] = (1/m) sum_{x: h(x)=j} P[x, i]``.

    Column j is the mean calibrated posterior of the items predicted as j, times the fraction
    ``m_j / m`` of the sample predicted as j, so the table sums to 1 and its column sums are h's
    predicted prevalence. ``P`` float (m, n) rows summing to 1, ``y_pred`` int (m,). Returns float
    (n, n), rows true, columns predicted (the LEAP authors' code normalises each column to 1
    instead, which turns the trace into the mean precision; not done here). Raises ValueError for a ``P``
    that is not a posterior matrix with ``n_classes`` columns or ``y_pred`` not (m,) codes.
    """
    P = check_posteriors(P, n_classes, "P")
    onehot = np.eye(n_classes)[check_labels(y_pred, n_classes, "y_pred", n_items=P.shape[0])]
    return P.T @ onehot / P.shape[0]


def cot_accuracy(P, label_prev) -> float:
    """COT accuracy estimate (Lu et al., NeurIPS 2023, Sect. 3): one minus the optimal transport cost.

    Earth mover's distance between the empirical distribution of the posterior rows of ``P``
    (m, n; mass 1/m each) and the label distribution ``sum_k label_prev[k] * e_k`` (one-hot
    vectors), with cost ``||p - e_k||_inf = 1 - p_k`` (for p on the simplex, = ``||p - e_k||_1 / 2``);
    solved exactly with POT's ``ot.emd2``. ``label_prev`` (n,) sums to 1. Returns a float in [0, 1].
    Raises ValueError for a ``P`` that is not a posterior matrix or a ``label_prev`` that is not a
    distribution over its n columns (it is not renormalised).
    """
    P = check_posteriors(P, name="P")
    b = check_prevalence(label_prev, P.shape[1], "label_prev")
    if b.ndim != 1:
        raise ValueError(f"label_prev must be one distribution (n,), got shape {b.shape}")
    a = np.full(P.shape[0], 1.0 / P.shape[0])
    cost = float(ot.emd2(a, b, 1.0 - P))
    return float(np.clip(1.0 - cost, 0.0, 1.0))


# ---------------------------------------------------------------------------------------------
# LasCal (Popordanoska et al., NeurIPS 2024): label-shift calibration without target labels
# ---------------------------------------------------------------------------------------------
#: LasCal's temperature search range, the authors' [0.1, 20] (``MIN_TEMP``, ``MAX_TEMP`` of their code), here on a
#: log-spaced grid of 100 values (ratio 1.055 between neighbours; the authors' grid is linear, step 0.2), refined
#: by a bounded scalar search on log T around the grid's best value (see :func:`lascal_temperature`).
LASCAL_TEMPERATURES = np.geomspace(0.1, 20.0, 100)


def temperature_scale(P, T) -> np.ndarray:
    """Temperature scaling of posteriors taken as logits: ``softmax(log P / T)`` row-wise, float (m, n).

    ``P`` (m, n) posteriors (validated by :func:`check_posteriors`); ``log P`` stands for h's logits (the LEAP
    authors pass ``log P`` to LasCal the same way): they differ from the logits by a per-row constant, which
    softmax ignores. Exact zeros have ``log 0 = -inf`` and stay 0 for every T; a one-hot row stays one-hot.
    ``T`` a float > 0 (ValueError otherwise); T = 1 returns ``P`` up to round-off, T > 1 flattens, T < 1 sharpens.
    """
    P = check_posteriors(P, name="P")
    T = float(T)
    if not np.isfinite(T) or T <= 0:
        raise ValueError(f"T must be a finite temperature > 0, got {T}")
    return _softmax(_log_posteriors(P) / T)


def _log_posteriors(P):
    """``log P`` with ``-inf`` at exact zeros (no warning)."""
    return np.where(P > 0, np.log(np.where(P > 0, P, 1.0)), -np.inf)


def _softmax(L):
    """Row-wise softmax of logits that may hold ``-inf`` (every row has a finite maximum)."""
    E = np.exp(L - L.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def _adaptive_edges(t, n_bins):
    """Equal-mass bin edges of the scores t (m,): the authors' ``histedges_equalN`` (linear interpolation of the
    sorted scores at ``linspace(0, m, n_bins + 1)``; the last edge is the largest score)."""
    return np.interp(np.linspace(0, len(t), n_bins + 1), np.arange(len(t)), np.sort(t))


def _bin_of(edges, x):
    """Bin index of each x for bins ``(edges[k], edges[k+1]]``: -1 or ``len(edges) - 1`` outside every bin."""
    return np.searchsorted(edges, x, side="left") - 1


def _check_lascal_inputs(P_val, y_val, P, weights, n_bins, p):
    """The validated ``(P_val, y_val, P, weights)`` of LasCal's estimate and search (errors as documented there)."""
    P_val = check_posteriors(P_val, name="P_val")
    n = P_val.shape[1]
    y_val = check_labels(y_val, n, "y_val", n_items=P_val.shape[0])
    P = check_posteriors(P, n, "P")
    w = check_finite_array(weights, "weights", ndim=1)
    if w.shape != (n,) or (w < 0).any():
        raise ValueError(f"weights must be {n} non-negative importance weights p_U(y)/p_V(y), got {w}")
    _check_lascal_args(n_bins, p)
    return P_val, y_val, P, w


def _check_lascal_args(n_bins, p):
    check_int(n_bins, "n_bins", min_value=1)
    if not isinstance(p, (int, float, np.integer, np.floating)) or not np.isfinite(p) or p < 1:
        raise ValueError(f"p must be a number >= 1 (the L_p norm of the calibration error), got {p!r}")


def classwise_calibration_error(P, y, n_bins: int = 15, p: float = 2) -> np.ndarray:
    """Classwise L_p calibration error of posteriors ``P`` (m, n) on labelled items ``y`` (m,): float (n,).

    For each class k, the items are binned by their score ``P[:, k]`` into ``n_bins`` equal-mass bins
    ``(e_b, e_{b+1}]``; item j of a bin b with ``m_b >= 2`` items contributes
    ``|P[j, k] - (sum_{i in b, i != j} 1[y_i = k]) / (m_b - 1)|^p`` (the leave-one-out estimate of
    ``E[1[Y = k] | P_k(X)]``), items of smaller bins 0; the sum is divided by m. This is the
    labelled estimator of the LasCal authors' code (``Ece(p, n_bins=15, adaptive_bins=True, classwise=True)``,
    their "CE on the target" with target labels), the reference LasCal's label-free estimate
    (:func:`lascal_calibration_error`) is consistent for. The mean over k is their loss. Raises ValueError for a
    ``P`` that is not a posterior matrix, ``y`` not (m,) codes in 0..n-1, ``n_bins`` < 1 or ``p`` < 1.
    """
    P = check_posteriors(P, name="P")
    m, n = P.shape
    y = check_labels(y, n, "y", n_items=m)
    _check_lascal_args(n_bins, p)
    out = np.zeros(n)
    for k in range(n):
        t, lab = P[:, k], (y == k).astype(float)
        edges = _adaptive_edges(t, n_bins)
        b = _bin_of(edges, t)
        inside = (b >= 0) & (b < n_bins)
        cnt = np.bincount(b[inside], minlength=n_bins)
        pos = np.bincount(b[inside], weights=lab[inside], minlength=n_bins)
        ok = inside & (cnt[np.clip(b, 0, n_bins - 1)] > 1)
        loo = (pos[b[ok]] - lab[ok]) / (cnt[b[ok]] - 1)
        out[k] = np.sum(np.abs(t[ok] - loo) ** p) / m
    return out


def lascal_calibration_error(P_val, y_val, P, weights, n_bins: int = 15, p: float = 2) -> np.ndarray:
    """LasCal's label-free estimate of the classwise L_p calibration error of ``P`` on the target: float (n,).

    Label shift: ``p_U(x | y) = p_V(x | y)``, so with importance weights ``w_k = p_U(y=k) / p_V(y=k)``,
    ``p_U(Y=k, P_k(X) in b) = w_k p_V(Y=k, P_k(X) in b)`` and the target's conditional expectation in a bin is
    ``E_U[1[Y=k] | P_k(X) in b] = w_k p_V(Y=k, P_k in b) / p_U(P_k in b)``: the numerator from the labelled source
    V, the denominator from the unlabelled target (Popordanoska et al., NeurIPS 2024: the importance-weighted
    estimator of the target CE; its binned classwise form as in the authors' code, ``EceLabelShift(p=2,
    n_bins=15, adaptive_bins=True, classwise=True).get_ece``; see :class:`CBPE` for the sources). For class k, the target items are binned by ``P[:, k]``
    into ``n_bins`` equal-mass bins ``(e_b, e_{b+1}]`` (V's items by ``P_val[:, k]`` into the same bins);
    in a bin b with ``m_b >= 2`` target items,

        c_b = w_k * (#{i in V: y_i = k, P_val[i, k] in b} / |V|) / ((m_b - 1) / (m - 1)),

    and the estimate is ``(1/m) sum_b sum_{j in b} |P[j, k] - c_b|^p`` (bins of fewer than 2 target items add 0;
    ``(m_b - 1)/(m - 1)`` is the target's leave-one-out bin mass, matching :func:`classwise_calibration_error`).
    With the true weights, it converges to the same binned quantity as the labelled estimator on the target
    as |V| and m grow. ``c_b`` is not clipped to [0, 1] (as in the authors' code).

    ``P_val`` (|V|, n) and ``y_val`` (|V|,): h's (scaled) posteriors and labels on V; ``P`` (m, n): on the target
    sample; ``weights`` (n,) finite, >= 0. Raises ValueError for malformed posteriors or labels, weights of
    the wrong shape or negative, ``n_bins`` < 1 or ``p`` < 1.
    """
    P_val, y_val, P, w = _check_lascal_inputs(P_val, y_val, P, weights, n_bins, p)
    return _lascal_ce(P_val, y_val, P, w, n_bins, p)


def _lascal_ce(P_val, y_val, P, w, n_bins, p):
    m, n_v, n = P.shape[0], P_val.shape[0], P.shape[1]
    out = np.zeros(n)
    for k in range(n):
        t = P[:, k]
        edges = _adaptive_edges(t, n_bins)
        bt = _bin_of(edges, t)
        inside = (bt >= 0) & (bt < n_bins)
        cnt = np.bincount(bt[inside], minlength=n_bins)
        bs = _bin_of(edges, P_val[y_val == k, k])
        pos = np.bincount(bs[(bs >= 0) & (bs < n_bins)], minlength=n_bins)
        ok = cnt > 1
        c = np.zeros(n_bins)
        c[ok] = w[k] * (pos[ok] / n_v) * (m - 1) / (cnt[ok] - 1)
        use = inside & ok[np.clip(bt, 0, n_bins - 1)]
        out[k] = np.sum(np.abs(t[use] - c[bt[use]]) ** p) / m
    return out


def lascal_temperature(P_val, y_val, P, weights, n_bins: int = 15, p: float = 2,
                       temperatures=None) -> tuple[float, float]:
    """LasCal's temperature for a target sample: ``argmin_T`` of the mean over classes of
    :func:`lascal_calibration_error` of ``temperature_scale(P, T)`` against ``temperature_scale(P_val, T)``.

    Popordanoska et al., NeurIPS 2024 (the post-hoc calibration step of LasCal: temperature scaling whose
    criterion is the label-free target CE estimate; ``Calibrator.lascal`` in the authors' code, p = 2, 15
    adaptive bins, classwise). The weights are fixed across temperatures: the authors recompute them per T
    from the scaled posteriors with RLLS on *hard* predictions, which temperature scaling does not change
    (:func:`rlls_weights`). Search: the loss on ``temperatures`` (default :data:`LASCAL_TEMPERATURES`, the
    authors' range [0.1, 20]), then a bounded Brent search on log T between the neighbours of the grid's best
    value, keeping the better of the two. T = 1 where the temperature cannot matter: if every row of ``P`` is
    uniform on its support (one-hot rows, as from a one-hot h: no temperature changes them), or if the loss is
    the same at every grid temperature. Returns ``(T, loss)``, floats. Raises as
    :func:`lascal_calibration_error`, and ValueError for temperatures that are not positive finite values.
    """
    P_val, y_val, P, w = _check_lascal_inputs(P_val, y_val, P, weights, n_bins, p)
    grid = LASCAL_TEMPERATURES if temperatures is None else check_finite_array(temperatures, "temperatures", ndim=1)
    if grid.size < 1 or (grid <= 0).any():
        raise ValueError("temperatures must be a non-empty 1-d array of positive values")
    return _LasCalLoss(P_val, y_val, n_bins, p, np.sort(grid)).temperature(P, w)


def _pairwise_row_sums(X, use):
    """Sum of ``X[r, use[r]]`` per row r, float (R,), bit for bit ``np.sum(X[r][use[r]])`` (numpy's pairwise
    summation of the used entries in their order: sequential below 8 terms, 8 accumulators up to 128, halves
    above); X >= 0 (zeros pad the rows, and adding 0.0 to a sum >= 0 is exact)."""
    R, m = X.shape
    if R <= 64:  # few rows (one temperature): numpy's own sum, row by row
        return np.array([np.sum(x[u]) for x, u in zip(X, use)])
    c = use.sum(axis=1)
    W = max(m, 8)
    A = np.zeros((R, W + 1))  # the used entries of each row moved to its front, in order; the rest to column W
    idx = np.where(use, np.cumsum(use, axis=1) - 1, W) + (np.arange(R) * (W + 1))[:, None]
    A.ravel()[idx.ravel()] = X.ravel()
    A = A[:, :W]
    out = np.empty(R)
    big = c > 128
    for r in np.flatnonzero(big):  # numpy splits longer sums into halves: rare (samples of more than 128 items)
        out[r] = np.sum(A[r, :c[r]])
    small = ~big
    if small.any():
        seq = A[:, 0] + A[:, 1]  # 0.0 + A[:, 0] is A[:, 0]
        for k in range(2, 8):
            seq += A[:, k]
        acc = A[:, :8].copy()
        full = c - c % 8
        for start in range(8, min(W, 128) - 7, 8):
            acc += np.where((start < full)[:, None], A[:, start:start + 8], 0.0)
        lanes = ((acc[:, 0] + acc[:, 1]) + (acc[:, 2] + acc[:, 3])) + ((acc[:, 4] + acc[:, 5]) + (acc[:, 6] + acc[:, 7]))
        rem = np.take_along_axis(A, np.minimum(full[:, None] + np.arange(7), W - 1), axis=1)
        for k in range(7):
            lanes += np.where(k < c % 8, rem[:, k], 0.0)
        out[small] = np.where(c < 8, seq, lanes)[small]
    return out


def _count_le(flat, lo, hi, q):
    """For each query: the number of values of ``flat[lo:hi]`` (sorted) that are <= q (vectorised upper bound)."""
    base, lo, hi = lo, lo.copy(), hi.copy()
    last = max(len(flat) - 1, 0)
    while True:
        active = lo < hi
        if not active.any():
            return lo - base
        mid = (lo + hi) // 2
        go = active & (flat[np.minimum(mid, last)] <= q)
        lo = np.where(go, mid + 1, lo)
        hi = np.where(active & ~go, mid, hi)


class _LasCalLoss:
    """LasCal's loss (the mean over classes of :func:`lascal_calibration_error`, as :func:`lascal_temperature`
    minimises it) for one V and many temperatures at once: the same numbers as ``_lascal_ce`` bit for bit, computed
    with array operations over temperatures and classes. V's side at the grid temperatures (its scaled posteriors
    of the true class, sorted within each class) does not depend on the sample and is computed once."""

    def __init__(self, P_val, y_val, n_bins, p, grid):
        self.L_val = _log_posteriors(P_val)
        self.max_val = self.L_val.max(axis=1)  # max(L / T) = max(L) / T exactly: rounding is monotone
        self.y_val = np.asarray(y_val)
        self.n_v, self.n = P_val.shape
        self.n_bins, self.p, self.grid = n_bins, p, grid
        self.by_class = np.argsort(self.y_val, kind="stable")
        self.starts = np.searchsorted(self.y_val[self.by_class], np.arange(self.n + 1))  # V's class segments
        self._grid_val = None

    def __getstate__(self):  # the grid's table is rebuilt on demand, not pickled
        state = self.__dict__.copy()
        state["_grid_val"] = None
        return state

    def _val_true(self, T):
        """``softmax(L_val / T)[i, y_i]`` for every item of V, exactly as ``_softmax(L_val / T)`` computes it."""
        E = np.exp(self.L_val / T - (self.max_val / T)[:, None])
        return E[np.arange(self.n_v), self.y_val] / E.sum(axis=1)

    def _grid_table(self):
        if self._grid_val is None:
            G = np.empty((len(self.grid), self.n_v))
            for g, T in enumerate(self.grid):
                v = self._val_true(T)
                G[g] = v[np.lexsort((v, self.y_val))]
            self._grid_val = G
        return self._grid_val

    def _pos_grid(self, edges):
        """V's class-k items per bin at the grid temperatures: int (G, n, n_bins) for edges (G, n, n_bins + 1)."""
        G = self._grid_table()
        g = np.arange(G.shape[0])[:, None, None] * self.n_v
        lo = np.broadcast_to(g + self.starts[:-1][None, :, None], edges.shape)
        hi = np.broadcast_to(g + self.starts[1:][None, :, None], edges.shape)
        return np.diff(_count_le(G.ravel(), lo.ravel(), hi.ravel(), edges.ravel()).reshape(edges.shape), axis=2)

    def _pos_at(self, T, edges):
        """The same at one temperature T, for edges (1, n, n_bins + 1)."""
        v = self._val_true(T)[self.by_class]
        pos = np.empty((1, self.n, self.n_bins), dtype=np.int64)
        for k in range(self.n):
            b = np.searchsorted(edges[0, k], v[self.starts[k]:self.starts[k + 1]], side="left")  # bin + 1
            pos[0, k] = np.bincount(b, minlength=self.n_bins + 2)[1:self.n_bins + 1]
        return pos

    def losses(self, L, w, Ts, on_grid):
        """The loss at each temperature of ``Ts`` (R,) for a sample's log-posteriors L (m, n), weights w (n,);
        ``on_grid``: Ts is ``self.grid`` (V's side from the table), else a single temperature."""
        m, n, nb = L.shape[0], self.n, self.n_bins
        A = L[None] / Ts[:, None, None]
        E = np.exp(A - A.max(axis=2, keepdims=True))
        t = (E / E.sum(axis=2, keepdims=True)).transpose(0, 2, 1).reshape(-1, m)  # rows (temperature, class)
        R = t.shape[0]
        order = np.argsort(t, axis=1)
        s = t.ravel()[order + (np.arange(R) * m)[:, None]]
        # equal-mass edges: np.interp(linspace(0, m, nb + 1), arange(m), s) (_adaptive_edges), row-wise
        x = np.linspace(0, m, nb + 1)
        j = np.minimum(np.floor(x).astype(int), m - 1)
        f = x - j
        at_node = (f == 0) | (x >= m - 1)
        jn = np.where(x >= m - 1, m - 1, j)
        jp = np.minimum(j + 1, m - 1)
        edges = np.where(at_node, s[:, jn], (s[:, jp] - s[:, j]) * f + s[:, j])  # (R, nb + 1), non-decreasing
        # q_b = #{s <= e_b}: s_0..s_jn <= e_b <= s_jp, so q_b = jn + 1 unless s_{jn+1} = e_b (ties: searched)
        q = np.broadcast_to(jn + 1, (R, nb + 1)).copy()
        nxt = np.minimum(jn + 1, m - 1)
        tie = (jn + 1 < m) & (s[:, nxt] <= edges)
        if tie.any():
            rows, cols = np.nonzero(tie)
            q[rows, cols] = _count_le(s.ravel(), rows * m, rows * m + m, edges[rows, cols])
        cnt = np.diff(q, axis=1)
        # the bin of each item, searchsorted(edges, t) - 1 = #{b: e_b < t} - 1 = #{b: q_b <= rank} - 1
        z = np.bincount((q + (np.arange(R) * (m + 1))[:, None]).ravel(), minlength=R * (m + 1)).reshape(R, m + 1)
        bt = np.empty((R, m), dtype=np.int64)
        bt.ravel()[(order + (np.arange(R) * m)[:, None]).ravel()] = (np.cumsum(z[:, :m], axis=1) - 1).ravel()
        e3 = edges.reshape(len(Ts), n, nb + 1)
        pos = (self._pos_grid(e3) if on_grid else self._pos_at(float(Ts[0]), e3)).reshape(R, nb)
        ok = cnt > 1
        wk = np.broadcast_to(np.tile(w, len(Ts))[:, None], (R, nb))
        c = np.full((R, nb + 1), np.nan)  # column 0: items at or below the first edge (bin -1), in no bin
        c[:, 1:][ok] = wk[ok] * (pos[ok] / self.n_v) * (m - 1) / (cnt[ok] - 1)
        cb = c.ravel()[bt + (np.arange(R) * (nb + 1) + 1)[:, None]]  # bt <= nb - 1: the last edge is the max
        use = ~np.isnan(cb)
        X = np.abs(t - cb) ** self.p
        out = (_pairwise_row_sums(X, use) / m).reshape(len(Ts), n)
        return out.mean(axis=1)

    def temperature(self, P, w):
        """``(T, loss)`` as :func:`lascal_temperature` for a validated sample ``P`` and weights ``w``."""
        L = _log_posteriors(P)
        if ((P == 0) | (P == P.max(axis=1, keepdims=True))).all():  # every row uniform on its support
            return 1.0, float(self.losses(L, w, np.array([1.0]), False)[0])
        grid = self.grid
        losses = self.losses(L, w, grid, True)
        if np.ptp(losses) == 0.0:
            return 1.0, float(losses[0])
        k = int(np.argmin(losses))
        best_T, best = float(grid[k]), float(losses[k])
        lo, hi = np.log(grid[max(k - 1, 0)]), np.log(grid[min(k + 1, grid.size - 1)])
        if hi > lo:
            res = minimize_scalar(lambda u: float(self.losses(L, w, np.array([np.exp(u)]), False)[0]),
                                  bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
            if res.fun < best:
                best_T, best = float(np.exp(res.x)), float(res.fun)
        return best_T, best


class _RLLS:
    """RLLS importance weights from hard predictions (Azizzadenesheli et al., ICLR 2019), fitted on V;
    :meth:`weights` solves the convex problem for a target sample.

    With ``C[i, j] = p_V(h = i, y = j)`` (V's joint of h's decision and the label), ``mu_V`` and ``mu_U`` the
    fractions of V and of the sample that h assigns to each class, ``theta = w - 1`` minimises
    ``||C theta - (mu_U - mu_V)||_2 + rho ||theta||_2`` subject to ``theta >= -1`` (w >= 0), with
    ``rho = alpha * 3 (2 log(2n/delta) / (3|V|) + sqrt(2 log(2n/delta) / |V|))``, ``alpha = 0.01``,
    ``delta = 0.05``: the setting of the ``abstention`` package's ``RLLSImbalanceAdapter``, LasCal's default
    ``weights_method="rlls-hard"``. One cvxpy problem (b a parameter) is compiled per V and re-solved per sample.
    """

    def __init__(self, P_val, y_val, n_classes, alpha=0.01, delta=0.05):
        n, n_v = n_classes, len(y_val)
        self.n = n
        self.C = contingency_table(y_val, P_val.argmax(axis=1), n).T  # rows: h's decision, columns: label
        self.mu_val = self.C.sum(axis=1)
        self.p_val = self.C.sum(axis=0)
        self.rho = alpha * 3 * (2 * np.log(2 * n / delta) / (3 * n_v) + np.sqrt(2 * np.log(2 * n / delta) / n_v))
        self._problem = None

    def _build(self):
        theta = cp.Variable(self.n)
        b = cp.Parameter(self.n)
        prob = cp.Problem(cp.Minimize(cp.norm(self.C @ theta - b, 2) + self.rho * cp.norm(theta, 2)), [theta >= -1])
        self._problem = (prob, theta, b)

    def __getstate__(self):  # a compiled cvxpy problem is rebuilt on demand, not pickled
        state = self.__dict__.copy()
        state["_problem"] = None
        return state

    def weights(self, P) -> tuple[np.ndarray, bool]:
        """``(w, solved)``: the weights (n,) for posteriors ``P`` (m, n), and False if the solver failed (w = 1)."""
        if self._problem is None:
            self._build()
        prob, theta, b = self._problem
        mu = np.bincount(P.argmax(axis=1), minlength=self.n) / P.shape[0]
        b.value = mu - self.mu_val
        try:
            prob.solve()
        except cp.error.SolverError:
            return np.ones(self.n), False
        if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or theta.value is None:
            return np.ones(self.n), False
        return np.maximum(1.0 + np.asarray(theta.value, dtype=float), 0.0), True


def rlls_weights(P_val, y_val, P, alpha: float = 0.01, delta: float = 0.05) -> np.ndarray:
    """RLLS label-shift importance weights ``w_k ~ p_U(y=k) / p_V(y=k)`` from h's hard decisions: float (n,), >= 0.

    Azizzadenesheli et al., "Regularized learning for domain adaptation under label shifts", ICLR 2019 (the
    confusion-matrix moment equation ``C w = mu_U`` of BBSE, Lipton et al. 2018, regularised towards w = 1):
    the weight estimator LasCal uses by default ("rlls-hard"); see :class:`_RLLS` for the problem solved.
    ``P_val`` (|V|, n), ``y_val`` (|V|,): h's posteriors and labels on V; ``P`` (m, n): h's posteriors on the
    target sample (only their arg-max is read, so any temperature gives the same weights). If the solver fails,
    returns ones (no shift) with a :class:`capshift.CalibrationWarning`. Raises ValueError for malformed input.
    """
    P_val = check_posteriors(P_val, name="P_val")
    n = P_val.shape[1]
    y_val = check_labels(y_val, n, "y_val", n_items=P_val.shape[0])
    P = check_posteriors(P, n, "P")
    w, solved = _RLLS(P_val, y_val, n, alpha, delta).weights(P)
    if not solved:
        warnings.warn("RLLS could not solve for the label-shift weights; using w = 1 (no shift)", CalibrationWarning,
                      stacklevel=2)
    return w


# ---------------------------------------------------------------------------------------------
# shared machinery
# ---------------------------------------------------------------------------------------------
class _PosteriorBaseline(CAPEstimator):
    """Base of the baselines that work from h's posteriors; subclasses implement ``_values`` (a measure per
    sample, ``estimates_tables = False``) or ``_tables`` (a table per sample)."""

    needs_proba = True
    #: True for methods whose accuracy estimate is right only for calibrated posteriors (CBPE, COT): fit then
    #: checks the estimate on V itself and warns (CalibrationWarning) if it misses h's accuracy on V by more
    #: than twice the binomial standard deviation of an accuracy measured on |V| items.
    assumes_calibration = False

    def _fit(self, X_val, y_val):
        self.val_post_ = check_posteriors(self.classifier.predict_proba(X_val), self.n_classes_,
                                          "classifier.predict_proba(X_val)")
        self._fit_posteriors(X_val, np.asarray(y_val), self.val_post_)
        if self.assumes_calibration and getattr(self, "quantifier", None) != "oracle":  # oracle: needs test prevalences
            self._check_calibration(X_val)

    def _check_calibration(self, X_val):
        acc = float(np.trace(self.val_table_))
        if self.estimates_tables:
            est = float(np.trace(self._tables([X_val], [self.val_post_], None)[0]))
        else:
            est = float(self._values([X_val], [self.val_post_], "accuracy", None)[0])
        sd = np.sqrt(max(acc * (1 - acc), 1.0 / len(self.val_pred_)) / len(self.val_pred_))
        if abs(est - acc) > 2 * sd:
            warnings.warn(f"{type(self).__name__} assumes h's posteriors are calibrated, but on V itself it estimates "
                          f"h's accuracy at {est:.3f} where it is {acc:.3f} (more than 2 binomial sd = {2 * sd:.3f} "
                          "apart), so its estimates are biased; it needs posteriors calibrated on V's distribution "
                          "(recalibrate h, e.g. sklearn's CalibratedClassifierCV, or use a LEAP method)",
                          CalibrationWarning, stacklevel=4)

    def _fit_posteriors(self, X_val, y_val, P_val):
        pass

    def _sample_posteriors(self, samples, posteriors):
        """h's posteriors of each (validated) sample: the caller's (already validated) or computed here."""
        n = self.n_classes_
        for i, X in enumerate(samples):
            if X.shape[0] < n:
                raise ValueError(f"samples[{i}] has {X.shape[0]} items, fewer than the {n} classes: "
                                 f"{type(self).__name__} needs test samples of at least n_classes items "
                                 "(use larger samples)")
        if posteriors is not None:
            return posteriors
        return [check_posteriors(self.classifier.predict_proba(X), n, f"predict_proba(samples[{i}])")
                for i, X in enumerate(samples)]

    def _predict_tables(self, samples, prevalences, posteriors):
        return self._tables(samples, self._sample_posteriors(samples, posteriors), prevalences)

    def _predict_values(self, samples, measure, prevalences, posteriors):
        return self._values(samples, self._sample_posteriors(samples, posteriors), measure, prevalences)


class _RegressionBaseline(_PosteriorBaseline):
    """Regressor from a sample score to the measure, trained on UPP samples drawn from V (DoC, DS, NN, RCA*).

    Subclasses implement ``_score(X, P)`` (a float, or any array the ``_features`` hook turns into
    the regressor's feature) and may override ``_features``/``_target``/``_from_prediction``, each
    given the measure function f. With ``_split_v``, V is split in half (stratified, seeded): the
    reference half V1 (``ref_idx_``, h's table on it ``ref_table_``) and the pool the validation
    samples are drawn from (``pool_idx_``); otherwise both are the whole of V.

    Scores grow or shrink with the sample size, so the validation samples have the size of the test
    samples: with ``val_sample_size=None`` (default) they are drawn (with
    :func:`capshift.protocols.upp_indices`, seeded) the first time a test sample of a given size is seen,
    and their scores, tables and the regressor of each measure are cached per size (``val_scores_``,
    ``val_tables_``: dicts keyed by size; ``regressors_`` keyed by (size, measure)). An int
    ``val_sample_size`` fixes the size (drawn at fit); test samples of another size are then refused.
    """

    estimates_tables = False
    _split_v = False  # True: keep half of V (stratified) as the reference set, draw samples from the rest

    def evidence(self) -> tuple[int, str]:
        if self._split_v:  # the stratified halving of V needs an item of every class in each half
            return 2, "it splits V in two halves stratified by class, each needing every class"
        return super().evidence()

    def __init__(self, classifier, measure="accuracy", n_val_samples=100, val_sample_size=None, regressor=None,
                 clip=True, random_state=None):
        super().__init__(classifier, measure, random_state)
        self.n_val_samples = n_val_samples
        self.val_sample_size = val_sample_size
        self.regressor = regressor
        self.clip = clip

    def _fit_posteriors(self, X_val, y_val, P_val):
        n = self.n_classes_
        check_int(self.n_val_samples, "n_val_samples", min_value=2)
        if self.val_sample_size is not None:
            check_int(self.val_sample_size, "val_sample_size", min_value=max(2, n))
        seed = check_seed(self.random_state, "random_state", allow_none=True)
        self.seed_ = int(np.random.randint(0, 2**31 - 1)) if seed is None else seed
        idx = np.arange(len(y_val))
        if self._split_v:  # at least 2 items of every class: checked by fit (evidence, min_per_class_is_hard)
            ref, pool = train_test_split(idx, test_size=0.5, stratify=y_val, random_state=self.seed_)
        else:
            ref, pool = idx, idx
        self.ref_idx_, self.pool_idx_ = ref, pool
        if self._split_v:
            self.ref_table_ = contingency_table(y_val[ref], P_val[ref].argmax(axis=1), n)
        self._fit_reference(X_val, y_val, P_val, ref)
        self.X_val_, self.y_val_ = X_val, y_val
        self.val_scores_, self.val_tables_, self.regressors_ = {}, {}, {}
        if self.val_sample_size is not None:
            self._validation_samples(int(self.val_sample_size))

    def _fit_reference(self, X_val, y_val, P_val, ref):
        pass

    def _validation_samples(self, size: int):
        """Scores and tables of the ``n_val_samples`` validation samples of ``size`` items (cached)."""
        if size not in self.val_scores_:
            n, pool = self.n_classes_, self.pool_idx_
            X, y, P = self.X_val_, self.y_val_, self.val_post_
            samples = protocols.upp_indices(y[pool], size, int(self.n_val_samples), self.seed_, n_classes=n)
            scores, tables = [], []
            for s in samples:
                rows = pool[s]
                scores.append(self._score(X[rows], P[rows]))
                tables.append(contingency_table(y[rows], P[rows].argmax(axis=1), n))
            self.val_scores_[size] = np.asarray(scores, dtype=float)
            self.val_tables_[size] = np.stack(tables)
        return self.val_scores_[size], self.val_tables_[size]

    def _regressor_for(self, size, f):
        if (size, f) not in self.regressors_:
            scores, tables = self._validation_samples(size)
            reg = clone(self.regressor) if self.regressor is not None else LinearRegression()
            self.regressors_[(size, f)] = reg.fit(self._features(scores, f), self._target(f(tables), f))
        return self.regressors_[(size, f)]

    def _features(self, scores, f):
        return np.asarray(scores, dtype=float).reshape(-1, 1)

    def _target(self, values, f):
        return values

    def _from_prediction(self, pred, f):
        return pred

    def _values(self, samples, post, measure, prevalences):
        f = get_measure(measure)
        sizes = np.array([X.shape[0] for X in samples])
        if self.val_sample_size is not None and np.any(sizes != self.val_sample_size):
            i = int(np.flatnonzero(sizes != self.val_sample_size)[0])
            raise ValueError(f"samples[{i}] has {sizes[i]} items but val_sample_size={self.val_sample_size}: the "
                             f"score of {type(self).__name__} depends on the sample size, so the regressor only "
                             "applies to samples of that size; leave val_sample_size=None to fit one per size")
        out = np.empty(len(samples))
        for size in np.unique(sizes):
            rows = np.flatnonzero(sizes == size)
            scores = np.array([self._score(samples[i], post[i]) for i in rows])
            out[rows] = self._from_prediction(self._regressor_for(int(size), f).predict(self._features(scores, f)), f)
        return np.clip(out, 0.0, 1.0) if self.clip else out


# ---------------------------------------------------------------------------------------------
# the baselines
# ---------------------------------------------------------------------------------------------
class Naive(CAPEstimator):
    """Predict V's contingency table for every test sample (IID assumption; LEAP 2025, Sect. 5.5).

    Parameters
    ----------
    classifier : fitted scikit-learn classifier over classes 0..n-1
    measure : str, default measure of ``predict``
    random_state : unused (kept for a uniform constructor)
    """

    shared_prevalence_path = True

    def _predict_tables(self, samples, prevalences, posteriors=None):
        return np.repeat(self.val_table_[None], len(samples), axis=0)

    def tables_from_prevalences(self, pred_prev, est_prev=None) -> np.ndarray:
        """V's table repeated for each of the k samples of ``pred_prev`` (k, n); shape (k, n, n)."""
        self._check_fitted()
        pred_prev = np.atleast_2d(check_prevalence(pred_prev, self.n_classes_, "pred_prev"))
        return np.repeat(self.val_table_[None], len(pred_prev), axis=0)


class ATC(_PosteriorBaseline):
    """Average Thresholded Confidence (Garg et al., ICLR 2022, Sect. 3, Eq. 1). Accuracy only.

    On V, learns the threshold t (:func:`atc_threshold`) such that the fraction of V whose score
    is >= t equals h's accuracy on V; the accuracy of h on a test sample is then the fraction of
    its items scoring >= t.

    Parameters
    ----------
    classifier : fitted scikit-learn classifier with ``predict_proba`` (TypeError otherwise)
    score : {"maxconf", "neg_entropy"}
        :func:`max_confidence` (ATC-MC, the LEAP paper's choice) or :func:`negative_entropy` (ATC-NE).
    measure : must be "accuracy" (ValueError otherwise)
    random_state : unused (ATC is deterministic)

    Attributes: ``threshold_`` (float), ``val_post_`` (m, n).
    """

    supported_measures = _ACC
    estimates_tables = False
    needs_from_h = ("confidence",)
    _SCORES = {"maxconf": max_confidence, "neg_entropy": negative_entropy}

    def __init__(self, classifier, score="maxconf", measure="accuracy", random_state=None):
        super().__init__(classifier, measure, random_state)
        self.score = score

    def _score_fn(self):
        if self.score not in self._SCORES:
            raise ValueError(f"score must be one of {sorted(self._SCORES)}, got {self.score!r}")
        return self._SCORES[self.score]

    def _fit_posteriors(self, X_val, y_val, P_val):
        self.threshold_ = atc_threshold(self._score_fn()(P_val), self.val_pred_ == y_val)

    def _values(self, samples, post, measure, prevalences):
        f = self._score_fn()
        return [float(np.mean(f(P) >= self.threshold_)) for P in post]


class DoC(_RegressionBaseline):
    """Difference of Confidences (Guillory et al., ICCV 2021, Sect. 3) with a regressor, as in the LEAP paper.

    V is split in half (stratified, seeded): the reference half V1 gives the average max-confidence
    ``C(V1)`` and the measure ``A(V1)``; ``n_val_samples`` UPP samples V_i of ``val_sample_size`` items
    are drawn from the other half. A regressor (default ``LinearRegression``, as in the LEAP/QuAcc
    authors' code) learns ``A(V1) - A(V_i)`` from ``C(V1) - C(V_i)``; a test sample U gets
    ``A(V1) - reg(C(V1) - C(U))``, clipped to [0, 1] (``clip``). Any measure computable from a
    contingency table can be asked for (one regressor per measure).

    Parameters
    ----------
    classifier : fitted classifier with ``predict_proba``
    measure : default measure
    n_val_samples : int >= 2
        Number of validation samples (default 100, as the LEAP paper's code).
    val_sample_size : None or int
        Size of the validation samples: None (default) draws them at the size of each test sample seen
        (cached per size); an int fixes it and refuses test samples of another size.
    regressor : scikit-learn regressor or None (LinearRegression), cloned per measure
    clip : bool, clip predictions to [0, 1]
    random_state : int, seeds the split of V and the UPP samples
    """

    _split_v = True
    min_per_class_is_hard = True
    needs_from_h = ("confidence",)

    def _fit_reference(self, X_val, y_val, P_val, ref):
        self.ref_score_ = self._score(X_val[ref], P_val[ref])

    def _score(self, X, P):
        return float(max_confidence(P).mean())

    def _features(self, scores, f):
        return (self.ref_score_ - np.asarray(scores, dtype=float)).reshape(-1, 1)

    def _target(self, values, f):
        return float(f(self.ref_table_)) - values

    def _from_prediction(self, pred, f):
        return float(f(self.ref_table_)) - pred


class DS(_RegressionBaseline):
    """Dispersion Score (Xie et al., NeurIPS 2023) with a regressor trained on validation samples.

    The score of a sample is :func:`dispersion_score` of its items, pseudo-labelled by h. Xie et al.
    compute it on a network's penultimate features; a scikit-learn classifier has none, so
    ``space="features"`` (default) uses the input features X, the representation a linear
    classifier's decision is taken on, and ``space="posteriors"`` uses h's posterior vectors. A
    regressor (default LinearRegression; LEAP 2025, Sect. 5.5) maps the score of
    ``n_val_samples`` UPP samples of V (``val_sample_size`` items each) to the measure; the score
    grows with the sample size (it sums over items), so ``val_sample_size`` should equal the test
    sample size. Parameters as :class:`DoC`, plus ``space``.
    """

    def __init__(self, classifier, measure="accuracy", space="features", n_val_samples=100, val_sample_size=None,
                 regressor=None, clip=True, random_state=None):
        super().__init__(classifier, measure, n_val_samples, val_sample_size, regressor, clip, random_state)
        self.space = space

    def reads_from_h(self) -> tuple:
        # the dispersion of the items h assigns to each class: h's decisions (and posteriors in that space)
        return ("decisions",) if self.space == "features" else ("decisions", "confidence")

    def _fit_posteriors(self, X_val, y_val, P_val):
        if self.space not in ("features", "posteriors"):
            raise ValueError(f"space must be 'features' or 'posteriors', got {self.space!r}")
        super()._fit_posteriors(X_val, y_val, P_val)

    def _score(self, X, P):
        return dispersion_score(X if self.space == "features" else P, P.argmax(axis=1), self.n_classes_)


class NN(_RegressionBaseline):
    """Nuclear Norm (Deng et al., ICML 2023) with a regressor trained on validation samples (LEAP 2025, Sect. 5.5).

    The score is :func:`nuclear_norm_score` of the sample's posterior matrix (normalised by
    ``sqrt(m min(m, n))`` as in Deng et al.); a regressor (default LinearRegression, the linear fit
    Deng et al. report) maps it to the measure. Parameters as :class:`DoC`.
    """

    needs_from_h = ("confidence",)

    def _score(self, X, P):
        return nuclear_norm_score(P)


class CBPE(_PosteriorBaseline):
    """Confidence-Based Performance Estimation (Kivimäki et al. 2025), optionally after a PPS calibration.

    The test table is :func:`cbpe_table` of the (calibrated) posteriors, grouped by h's decision
    (arg-max of h's raw posteriors); any measure is computed from it.

    ``calibration`` (each variant reads V's posteriors and labels at fit, and a test sample's posteriors only):

    ===============  ============  ==================================================================================
    calibration      registered    calibration of a test sample's posteriors
    ===============  ============  ==================================================================================
    ``None``         ``CBPE``      none: h's posteriors as they are (CBPE assumes them calibrated for the test data)
    ``"bcts"``       ``BCTS-CBPE``  BCTS fitted on V only (no adaptation to the sample's prior)
    ``"sld"``        ``SLD-CBPE-raw`` SLD/EM on h's raw posteriors, from their mean on V (no BCTS)
    ``"sld-bcts"``   ``SLD-CBPE``  BCTS fitted on V, then SLD/EM from the mean calibrated posterior on V (default)
    ``"lascal"``     ``L-CBPE``    LasCal: temperature fitted per sample on V and the sample (the LEAP paper's)
    ===============  ============  ==================================================================================

    - BCTS: Bias-Corrected Temperature Scaling fitted on V's posteriors and labels (Alexandari et al., ICML 2020;
      the ``abstention`` package through QuaPy's ``EMQ``). SLD: the expectation-maximisation adjustment of the
      posteriors to the test sample's unknown prior (Saerens et al. 2002, Eqs. 2.9-2.10), started from the mean
      (calibrated) posterior on V (Alexandari et al.'s setting, QuaPy's ``EMQ_BCTS``; QuaPy's ``EMQ`` without
      calibration for ``"sld"``).
    - LasCal (Popordanoska et al., "LaSCal: Label-shift calibration without target labels", NeurIPS 2024), as
      the LEAP paper's L-CBPE (Volpi et al. 2025, Sect. 5.5) applies it: h's log-posteriors are the logits, and for
      each test sample U a temperature T is chosen that minimises a label-free, importance-weighted estimate of
      U's classwise calibration error; U's posteriors are then ``softmax(log P / T)`` (:func:`temperature_scale`;
      h's decisions unchanged). Under label shift (``p_U(x|y) = p_V(x|y)``), with ``w_k = p_U(k) / p_V(k)``,
      ``E_U[1[Y=k] | P_k(X) in b] = w_k p_V(Y=k, P_k(X) in b) / p_U(P_k(X) in b)``: V's labels, reweighted, give
      the numerator, U's posteriors the denominator (:func:`lascal_calibration_error`; consistent for the labelled
      target CE, :func:`classwise_calibration_error`). The weights are estimated by RLLS on h's hard decisions
      (:func:`rlls_weights`, the authors' default ``"rlls-hard"``); T by :func:`lascal_temperature`.
      Sources: the paper's abstract and method description (its equation numbers could not be checked here: the
      paper's body was not in the material available); the authors' code, github.com/tpopordanoska/
      label-shift-calibration at 2360080 (``Calibrator.lascal``, ``EceLabelShift``, ``get_importance_weights``),
      and the LEAP authors' call of it (github.com/lorenzovolpi/LEAP, ``leap/calibration/lascal.py``: defaults,
      log-posteriors as logits). Read, not copied: this is a numpy/scipy/cvxpy reimplementation with the same
      estimator and defaults (p = 2, 15 equal-mass bins per class, temperatures in [0.1, 20]); it differs in the
      temperature search (a log grid refined by Brent's method, where the authors take the best of 100 linearly
      spaced values, step 0.2) and in computing the RLLS weights once per sample (the authors recompute them for
      every temperature, from hard decisions that temperature scaling does not change: the same weights).
      Checked (issue 24): the estimate equals a line-by-line numpy transcription of the authors' loop (kept out
      of this repository) to 7e-15 on 200 random cases with ties and zeros; the weights equal abstention's
      ``RLLSImbalanceAdapter`` (the authors' "rlls-hard") to 1e-15 (a test); on synthetic data the temperature
      reaches a loss at or below the authors' grid's best, differing from theirs by about their grid step.

    Degenerate cases. For ``"lascal"``: a one-hot h (no temperature changes its posteriors) gets T = 1 and plain
    CBPE's table; a class absent from V is refused at fit (as for every method); a class absent from the sample
    or never predicted is handled by the estimator (RLLS weights >= 0, bins with fewer than 2 items add 0); if
    RLLS's solver fails, w = 1 (no shift) with a :class:`capshift.CalibrationWarning`. LasCal's estimate is the
    authors', not a guarantee: with 100-item samples its 15 bins hold about 7 target items each, and T is noisy
    and leans to sharpening (on IID samples of a calibrated LR, 3 Gaussian classes: quartiles of T 0.71, 0.87,
    1.06 at 100 items, 0.92, 0.97, 1.00 at 400), which biases L-CBPE's F1 upwards on small samples.

    Exact zeros (BCTS variants). BCTS rescales log-posteriors, and ``log 0`` is ``-inf``: posteriors that are
    exactly 0 (vote fractions of RF and kNN, underflow of LR and MLP far from the boundary) would
    make the fitted BCTS fail (and SLD would run on the uncalibrated posteriors) or, on a test
    sample, turn rows into NaN. Before BCTS (on V and on every test sample), exact zeros are
    therefore raised to ``floor_``, a value below every positive posterior h gave on V: half the
    smallest one (half a vote for a vote-fraction classifier: 0.005 for a forest of 100 trees, 0.05
    for a 10-NN) times 1, 1e-3, ..., 1e-12, whichever gives BCTS the smallest negative
    log-likelihood on V (the floor sets how strongly a confidently wrong item pulls the
    temperature up, so it is fitted like the temperature; with 26 classes and 10 neighbours, half a
    vote on each of 25 empty classes flattens every posterior). If V has no zeros, ``floor_`` is half
    the smallest posterior. Positive posteriors are not changed, so neither are the results on
    posteriors without zeros. Fallback: if BCTS cannot be fitted with any floor (abstention's L-BFGS-B stops
    abnormally, e.g. when h separates V and the temperature runs to 0, where ``exp`` overflows),
    ``bcts_`` is False and SLD adjusts h's own posteriors, started from their mean on V (QuaPy's
    ``on_calib_error="backup"``, made visible); ``"bcts"`` then returns h's posteriors. LasCal needs no floor:
    its temperature scaling keeps zeros at 0.

    Parameters
    ----------
    classifier : fitted classifier with ``predict_proba``
    calibration : None, "bcts", "sld", "sld-bcts" or "lascal" (ValueError at fit otherwise)
    measure, random_state : as in :class:`capshift.base.CAPEstimator` (the method is deterministic)

    Attributes (BCTS variants and ``"sld"``): ``emq_`` (QuaPy's EMQ holding the BCTS map, if any, and the
    starting prior ``train_prevalence``), ``bcts_`` (bool, whether BCTS was fitted), ``floor_`` (float, the value
    of exact zeros before BCTS). ``"lascal"``: ``lascal_val_`` (V's posteriors and labels), ``lascal_checks_``
    (the self-check per sample size, see below); :meth:`lascal` gives a sample's temperature and weights.

    LasCal's self-check (``"lascal"``): the temperature is fitted on each test sample, so the check at fit (on
    the whole of V) cannot see how reliable it is on small samples. The first time a sample size m <= |V|/2 is
    predicted, L-CBPE is run on 16 IID subsamples of m items of V (V's labels only; seeded) and a
    :class:`capshift.CalibrationWarning` says so if its mean AE on their accuracy exceeds twice the binomial sd.
    """

    needs_from_h = ("confidence",)
    assumes_calibration = True
    #: The accepted values of ``calibration`` (see the class docstring's table).
    CALIBRATIONS = (None, "bcts", "sld", "sld-bcts", "lascal")

    def __init__(self, classifier, calibration="sld-bcts", measure="accuracy", random_state=None):
        super().__init__(classifier, measure, random_state)
        self.calibration = calibration

    def _fit_posteriors(self, X_val, y_val, P_val):
        if not (self.calibration is None or (isinstance(self.calibration, str) and self.calibration in self.CALIBRATIONS)):
            raise ValueError(f"calibration must be one of {list(self.CALIBRATIONS)}, got {self.calibration!r}")
        self.emq_, self.bcts_, self.floor_, self.lascal_val_, self._rlls = None, False, None, None, None
        self._lascal_loss = None
        if self.calibration in ("sld-bcts", "bcts"):
            self._calibration_data = (P_val, y_val)
            self.emq_ = self._fit_calibrator(P_val, y_val)
        elif self.calibration == "sld":
            self.emq_ = EMQ(self.classifier, fit_classifier=False, val_split=None, exact_train_prev=False, calib=None)
            self.emq_.aggregation_fit(P_val, y_val)
        elif self.calibration == "lascal":
            self.lascal_val_, self.lascal_checks_ = (P_val, y_val), {}
            self._rlls = _RLLS(P_val, y_val, self.n_classes_)

    def _fit_calibrator(self, P_val, y_val):
        tiny = np.finfo(float).tiny
        half = max(0.5 * float(P_val[P_val > 0].min()), tiny)  # at least tiny: half of a subnormal is 0
        floors = [half] if (P_val > 0).all() else [max(half * step, tiny) for step in _FLOOR_STEPS]
        best = None
        for floor in floors:
            emq = EMQ(self.classifier, fit_classifier=False, val_split=None, exact_train_prev=False, calib="bcts",
                      on_calib_error="raise")
            try:
                emq.aggregation_fit(_floor_zeros(P_val, floor), y_val)
            except RuntimeError:  # abstention's optimiser failed for this floor
                continue
            p_true = emq._calibrate_if_requested(_floor_zeros(P_val, floor))[np.arange(len(y_val)), y_val]
            nll = -float(np.mean(np.log(np.maximum(p_true, tiny))))
            if np.isfinite(nll) and (best is None or nll < best[0]):
                best = (nll, floor, emq)
        self.floor_ = half if best is None else best[1]
        self.bcts_ = best is not None
        if best is not None:
            return best[2]
        # no floor gave a BCTS fit: SLD on h's posteriors (see the class docstring)
        emq = EMQ(self.classifier, fit_classifier=False, val_split=None, exact_train_prev=False, calib=None)
        emq.aggregation_fit(P_val, y_val)
        return emq

    def __getstate__(self):
        # the BCTS calibrator holds a lambda (abstention) and does not pickle: refitted (deterministic) on load
        state = self.__dict__.copy()
        if state.get("emq_") is not None and state.get("calibration") in ("sld-bcts", "bcts"):
            state["emq_"] = "refit"
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.__dict__.get("emq_") == "refit":
            self.emq_ = self._fit_calibrator(*self._calibration_data)

    def lascal(self, P) -> tuple[float, np.ndarray]:
        """LasCal's ``(T, w)`` for one test sample's posteriors ``P`` (m, n): the temperature (float > 0) and the
        RLLS importance weights (float (n,), >= 0) it used (``calibration="lascal"`` only; see the class docstring).

        Reads V's posteriors and labels and ``P``, nothing else. Raises NotFittedError before ``fit``, ValueError
        for another calibration or a ``P`` that is not a posterior matrix with ``n_classes_`` columns.
        """
        self._check_fitted()
        if self.calibration != "lascal":
            raise ValueError(f"lascal() needs calibration='lascal', this CBPE has calibration={self.calibration!r}")
        P = check_posteriors(P, self.n_classes_, "P")
        if getattr(self, "_rlls", None) is None:  # unpickled, or fitted before the attribute existed
            self._rlls = _RLLS(*self.lascal_val_, self.n_classes_)
        w, solved = self._rlls.weights(P)
        if not solved:
            warnings.warn("L-CBPE: RLLS could not solve for the label-shift weights of this sample; LasCal uses "
                          "w = 1 (no shift)", CalibrationWarning, stacklevel=2)
        if getattr(self, "_lascal_loss", None) is None:  # V's side of the loss, shared by the samples
            self._lascal_loss = _LasCalLoss(*self.lascal_val_, 15, 2, LASCAL_TEMPERATURES)
        T, _ = self._lascal_loss.temperature(P, w)
        return T, w

    def calibrate(self, P) -> np.ndarray:
        """PPS-calibrated posteriors, float (m, n) with rows summing to 1, of one test sample's posteriors ``P`` (m, n).

        By ``calibration``: ``P`` itself (validated) for None; BCTS (exact zeros of ``P`` raised to ``floor_``
        first) for ``"bcts"``; SLD/EMQ (Saerens et al. 2002, Eqs. 2.9-2.10) for ``"sld"``; BCTS then SLD/EMQ for
        ``"sld-bcts"``; ``temperature_scale(P, T)`` with LasCal's T for ``"lascal"``. Raises
        NotFittedError before ``fit``, ValueError for ``P`` that is not a posterior matrix with
        ``n_classes_`` columns (:func:`check_posteriors`) or whose BCTS map is not finite (exp overflow).
        """
        self._check_fitted()
        P = check_posteriors(P, self.n_classes_, "P")
        if self.calibration == "lascal":
            return temperature_scale(P, self.lascal(P)[0])
        if self.emq_ is None:
            return P
        if self.bcts_:
            P = self.emq_._calibrate_if_requested(_floor_zeros(P, self.floor_))
            if not np.isfinite(P).all():  # SLD would iterate to QuaPy's MAX_ITER on NaN and return NaN
                raise ValueError("the BCTS-calibrated posteriors are not finite (the temperature-scaled logits "
                                 "overflow exp); use calibration=None for this classifier")
        if self.calibration == "bcts":
            return P / P.sum(axis=1, keepdims=True)
        _, Pa = EMQ.EM(self.emq_.train_prevalence, P)
        return Pa / Pa.sum(axis=1, keepdims=True)

    def _tables(self, samples, post, prevalences):
        if self.calibration == "lascal":
            for m in sorted({P.shape[0] for P in post}):
                self._lascal_self_check(m)
        return np.stack([cbpe_table(self.calibrate(P), P.argmax(axis=1), self.n_classes_) for P in post])

    #: LasCal's self-check: number of IID subsamples of V per sample size.
    _LASCAL_CHECKS = 16

    def _lascal_self_check(self, m):
        """Warn (CalibrationWarning) if LasCal, fitted on m items, misses h's accuracy on IID samples of V.

        LasCal fits its temperature on the test sample itself, so its reliability depends on the sample size m
        (the check at fit, on the whole of V, cannot see it). The first time a size m <= |V|/2 is seen, L-CBPE
        estimates h's accuracy on 16 IID subsamples of m items of V (seeded; V's labels only), as it would on a
        test sample; if its mean absolute error exceeds twice the binomial sd of an accuracy on m items, the
        estimates on samples of that size are noise (e.g. an overconfident Gaussian naive Bayes at m = 100).
        Results are cached in ``lascal_checks_`` ({m: mean AE on V's subsamples}).
        """
        checks = self.__dict__.setdefault("lascal_checks_", {})
        P_val, y_val = self.lascal_val_
        if m in checks or m > len(y_val) // 2:
            return
        seed = check_seed(self.random_state, "random_state", allow_none=True)
        rng = np.random.default_rng([0 if seed is None else seed, m])
        pred, acc = P_val.argmax(axis=1), np.mean(P_val.argmax(axis=1) == y_val)
        errors = []
        for _ in range(self._LASCAL_CHECKS):
            idx = rng.choice(len(y_val), m, replace=False)
            C = cbpe_table(self.calibrate(P_val[idx]), pred[idx], self.n_classes_)
            errors.append(abs(np.trace(C) - np.mean(pred[idx] == y_val[idx])))
        checks[m] = float(np.mean(errors))
        sd = np.sqrt(max(acc * (1 - acc), 1.0 / m) / m)
        if checks[m] > 2 * sd:
            warnings.warn(f"L-CBPE: LasCal fits its temperature on each test sample, and with samples of {m} items it "
                          f"is unreliable for this classifier: on {self._LASCAL_CHECKS} IID samples of {m} items from V "
                          f"its accuracy estimates miss by {checks[m]:.3f} on average (more than 2 binomial sd = "
                          f"{2 * sd:.3f}); it needs larger samples (at least the size where this check passes) or "
                          "posteriors closer to calibrated (recalibrate h, or use SLD-CBPE or a LEAP method)",
                          CalibrationWarning, stacklevel=5)


class COT(_PosteriorBaseline):
    """Confidence Optimal Transport (Lu et al., NeurIPS 2023) and the LEAP paper's Q-COT. Accuracy only.

    The accuracy of h on a sample is :func:`cot_accuracy` of its posteriors against a label
    distribution: V's class prevalence for ``quantifier=None`` (COT, which assumes the test labels
    distributed as the source's), a quantifier's estimate of the test prevalence otherwise
    (Q-COT, LEAP 2025, Sect. 5.5: ``"kdey"``, KDEy-ML on a surrogate MLP, see
    :class:`capshift.quantifiers.Quantifier`; ``"oracle"`` uses the true prevalences passed to
    ``predict_batch``, for tests and upper bounds; ValueError without them). The LEAP authors build the target by resampling
    labels with the estimated prevalence; transporting to the weighted one-hot distribution
    directly is the noise-free limit of that resampling.

    Parameters
    ----------
    classifier : fitted classifier with ``predict_proba``
    quantifier : None, "kdey", "oracle" or any name/instance :class:`capshift.quantifiers.Quantifier` accepts
    measure : must be "accuracy"
    random_state : seeds the quantifier
    """

    supported_measures = _ACC
    estimates_tables = False
    needs_from_h = ("confidence",)
    assumes_calibration = True

    def __init__(self, classifier, quantifier="kdey", measure="accuracy", random_state=None):
        super().__init__(classifier, measure, random_state)
        self.quantifier = quantifier

    def evidence(self) -> tuple[int, str]:
        need = 1 if self.quantifier is None else Quantifier(self.quantifier).min_per_class
        if need <= 1:
            return super().evidence()
        return need, f"its quantifier's posteriors on V are cross-validated in {need} stratified folds"

    def _fit_posteriors(self, X_val, y_val, P_val):
        self.val_prev_ = true_prevalence(self.val_table_)
        self.quantifier_ = None
        if self.quantifier is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InsufficientEvidenceWarning)  # fit() warned under the method's name
                self.quantifier_ = Quantifier(self.quantifier, classifier=self.classifier,
                                              random_state=self.random_state).fit(X_val, y_val, self.n_classes_)

    def _values(self, samples, post, measure, prevalences):
        if self.quantifier_ is None:
            return [cot_accuracy(P, self.val_prev_) for P in post]
        return [cot_accuracy(P, self.quantifier_.quantify(X, None if prevalences is None else prevalences[s]))
                for s, (X, P) in enumerate(zip(samples, post))]


#: Candidate values of exact-zero posteriors before BCTS, as fractions of half the smallest positive posterior on V.
_FLOOR_STEPS = 10.0 ** -np.arange(0, 13, 3)


def _floor_zeros(P, floor):
    """``P`` with its exact zeros raised to ``floor`` (rows not renormalised: BCTS reads log-ratios only)."""
    return np.where(P > 0, P, floor)


def _reverse_table(h, X, y_pseudo, X_eval, y_eval, n_classes):
    """Table (n, n) on (X_eval, y_eval) of a clone h' of h trained on (X, y_pseudo) (RCA's reverse testing).

    h' is the constant classifier of the majority pseudo-label if y_pseudo holds one class only or
    the learner cannot be trained on it (e.g. kNN with more neighbours than items).
    """
    counts = np.bincount(y_pseudo, minlength=n_classes)
    pred = None
    if np.count_nonzero(counts) > 1:
        try:
            pred = np.asarray(clone(h).fit(X, y_pseudo).predict(X_eval))  # fitted on class codes: predicts codes
        except ValueError:
            pass
    if pred is None:
        pred = np.full(len(y_eval), counts.argmax())
    return contingency_table(y_eval, pred, n_classes)


class RCA(_PosteriorBaseline):
    """Reverse Classification Accuracy (Elsahar & Gallé, EMNLP 2019, Sect. 3): the reverse-testing table.

    For a test sample U, a clone h' of h (same hyper-parameters) is trained on U with h's
    decisions as (pseudo-)labels and applied to V; the contingency table of h' on V stands for the
    table of h on U (any measure can be read off it). h' is retrained for every test sample, so RCA
    is far slower than the other baselines. If h assigns the whole sample to one class, h' is
    the constant classifier of that class. The regressor variant is :class:`RCAStar`.

    Parameters: ``classifier`` (fitted, with ``predict_proba``), ``measure``, ``random_state`` (unused:
    h' is cloned with h's own parameters, including its seed).
    """

    needs_from_h = ("decisions",)

    def _fit_posteriors(self, X_val, y_val, P_val):
        self.X_val_, self.y_val_ = X_val, y_val

    def _tables(self, samples, post, prevalences):
        return np.stack([_reverse_table(self.classifier, X, P.argmax(axis=1), self.X_val_, self.y_val_,
                                        self.n_classes_) for X, P in zip(samples, post)])


class RCAStar(_RegressionBaseline):
    """RCA* (Elsahar & Gallé, EMNLP 2019, Sect. 3; QuAcc 2025, Related Work): the RCA score through a regressor.

    V is split in half (stratified, seeded) into an evaluation half V1 and a pool V2 of UPP
    validation samples V_i. The RCA score of a sample S is the drop ``A(h, V1) - A(h'_S, V1)`` of the
    measure when h is replaced by the clone h'_S trained on S with h's pseudo-labels (the part of
    the drop due to the back-and-forth training alone, common to all samples, is absorbed by the
    regressor's intercept); a regressor (default LinearRegression) learns ``A(h, V_i)`` from the
    RCA score of V_i and is applied to the score of U. Parameters as :class:`DoC`. Every sample
    (validation and test) trains one h'.
    """

    _split_v = True
    min_per_class_is_hard = True
    needs_from_h = ("decisions",)

    def _fit_reference(self, X_val, y_val, P_val, ref):
        self.X_ref_, self.y_ref_ = X_val[ref], y_val[ref]

    def _score(self, X, P):
        # the score is a table (h' on V1, so val_scores_ is (k, n, n)); the feature is read off it per measure
        return _reverse_table(self.classifier, X, P.argmax(axis=1), self.X_ref_, self.y_ref_, self.n_classes_)

    def _features(self, scores, f):
        return (float(f(self.ref_table_)) - f(np.asarray(scores, dtype=float))).reshape(-1, 1)

"""Calibration of h's posteriors: temperature scaling, BCTS, SLD/EM, LasCal and its RLLS weights.

The calibration machinery the CBPE variants of :mod:`capshift.baselines` use (see :class:`capshift.baselines.CBPE`
for which variant calibrates how), usable on its own on any posterior matrix (m, n) whose rows sum to 1:

- :func:`temperature_scale`: ``softmax(log P / T)``, h's log-posteriors taken as its logits.
- :class:`BCTS`: Bias-Corrected Temperature Scaling (Alexandari, Kundaje & Shrikumar, "Maximum likelihood with
  bias-corrected calibration is hard-to-beat at label shift adaptation", ICML 2020), fitted on labelled
  posteriors with the ``abstention`` package's public ``TempScaling(bias_positions="all")``, as QuaPy's
  ``EMQ(calib="bcts")`` fits it (QuaPy's ``EMQ_BCTS``), with exact zeros raised to a floor chosen by the
  negative log-likelihood on V; its ``prior_`` is the starting prior of SLD. :func:`sld_adjust` is the SLD/EM
  adjustment of posteriors to a sample's unknown prior (Saerens, Latinne & Decaestecker, Neural Computation 2002,
  Eqs. 2.9-2.10; QuaPy's public ``EMQ.EM``), :func:`mean_posterior` the prior SLD starts from.
- LasCal (Popordanoska et al., "LaSCal: Label-shift calibration without target labels", NeurIPS 2024): the
  label-free, importance-weighted estimate of a target sample's classwise calibration error
  (:func:`lascal_calibration_error`; its labelled counterpart :func:`classwise_calibration_error`) and the
  temperature that minimises it (:func:`lascal_temperature`; :class:`LasCalLoss` evaluates the loss for many
  temperatures at once).
- RLLS (Azizzadenesheli et al., "Regularized learning for domain adaptation under label shifts", ICLR 2019): the
  label-shift importance weights LasCal uses by default (:func:`rlls_weights`; :class:`RLLS` compiles the problem
  once per V).

Sources of each are in the docstrings below. Inputs are validated through :mod:`capshift.validation`
(:func:`capshift.validation.check_posteriors`), errors as documented per function.
"""
from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
from abstention.calibration import TempScaling
from quapy.functional import prevalence_from_probabilities
from quapy.method.aggregative import EMQ

from .tables import contingency_table
from .validation import (CalibrationWarning, check_distribution, check_finite_array, check_fitted, check_int,
                         check_labels, check_posteriors)

__all__ = ["temperature_scale", "BCTS", "FLOOR_STEPS", "mean_posterior", "sld_adjust", "LASCAL_TEMPERATURES",
           "classwise_calibration_error", "lascal_calibration_error", "lascal_temperature", "LasCalLoss", "RLLS",
           "rlls_weights"]


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
    n_bins=15, adaptive_bins=True, classwise=True).get_ece``; see :class:`capshift.baselines.CBPE` for the sources). For class k, the target items are binned by ``P[:, k]``
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
    the same at every grid temperature (of two or more; a one-value grid returns its value). Returns ``(T, loss)``,
    floats: the loss at the T returned. Raises as
    :func:`lascal_calibration_error`, and ValueError for temperatures that are not positive finite values.
    """
    P_val, y_val, P, w = _check_lascal_inputs(P_val, y_val, P, weights, n_bins, p)
    grid = LASCAL_TEMPERATURES if temperatures is None else check_finite_array(temperatures, "temperatures", ndim=1)
    if grid.size < 1 or (grid <= 0).any():
        raise ValueError("temperatures must be a non-empty 1-d array of positive values")
    return LasCalLoss(P_val, y_val, n_bins, p, np.sort(grid)).temperature(P, w)


def _pairwise_row_sums(X, use):
    """Sum of ``X[r, use[r]]`` per row r, float (R,), bit for bit ``np.sum(X[r][use[r]])``: the rows with the same
    number c of used entries are gathered into one contiguous (rows, c) array (their used entries in order) and summed
    along its rows, which numpy does with the same pairwise summation as over each row alone."""
    c = use.sum(axis=1)
    out = np.zeros(X.shape[0])
    for k in np.unique(c[c > 0]):
        rows = np.flatnonzero(c == k)
        out[rows] = X[rows][use[rows]].reshape(len(rows), k).sum(axis=1)
    return out


def _row_max(A):
    """``A.max(axis=-1, keepdims=True)`` (the same values: a maximum is exact), as a running ``np.maximum`` over the
    last axis when it is short, where numpy's reduction spends its time on per-row overhead."""
    if A.shape[-1] > 8:
        return A.max(axis=-1, keepdims=True)
    out = A[..., :1].copy()
    for k in range(1, A.shape[-1]):
        np.maximum(out, A[..., k:k + 1], out=out)
    return out


def _row_sum(A):
    """``A.sum(axis=-1, keepdims=True)``, bit for bit: below 8 terms numpy's pairwise summation adds them in order, so
    a running sum over the last axis gives the same values without the reduction's per-row overhead."""
    if A.shape[-1] >= 8:
        return A.sum(axis=-1, keepdims=True)
    out = A[..., :1].copy()
    for k in range(1, A.shape[-1]):
        out += A[..., k:k + 1]
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


class LasCalLoss:
    """LasCal's loss (the mean over classes of :func:`lascal_calibration_error`, as :func:`lascal_temperature`
    minimises it) for one V, many samples and many temperatures at once: the same numbers as ``_lascal_ce`` bit for
    bit, computed with array operations over samples, temperatures and classes. V's side at the grid temperatures
    (its scaled posteriors of the true class, sorted within each class) does not depend on the sample and is
    computed once.

    ``LasCalLoss(P_val, y_val, n_bins, p, grid)``: V's posteriors (|V|, n) and labels (|V|,), the binning and norm
    of :func:`lascal_calibration_error` and the sorted temperatures (G,) of the search; :meth:`temperatures` gives
    the ``(T, loss)`` of a stack of samples, :meth:`temperature` of one, :meth:`losses` the losses of a stack at the
    grid's temperatures or at one temperature per sample. The inputs are not validated here: pass them through
    :func:`lascal_temperature`'s checks (as it and :class:`capshift.baselines.CBPE` do)."""

    #: Elements per temporary array of one chunk of samples (about 16 MB of floats): bounds the memory of a stack.
    CHUNK = 1 << 21

    def __init__(self, P_val, y_val, n_bins, p, grid):
        self.y_val = np.asarray(y_val)
        self.n_v, self.n = P_val.shape
        self.n_bins, self.p, self.grid = n_bins, p, grid
        self.by_class = np.argsort(self.y_val, kind="stable")
        self.starts = np.searchsorted(self.y_val[self.by_class], np.arange(self.n + 1))  # V's class segments
        self.L_val = _log_posteriors(P_val)[self.by_class]  # V in class order
        self.max_val = self.L_val.max(axis=1)  # max(L / T) = max(L) / T exactly: rounding is monotone
        self.y_sorted = self.y_val[self.by_class]
        self._grid_val = None

    def __getstate__(self):  # the grid's table is rebuilt on demand, not pickled
        state = self.__dict__.copy()
        state["_grid_val"] = None
        return state

    def _val_true(self, Ts):
        """``softmax(L_val / T)[i, y_i]`` for every item of V (in class order) and each temperature of ``Ts`` (S,):
        float (S, |V|), exactly as ``_softmax(L_val / T)`` computes it."""
        E = np.exp(self.L_val[None] / Ts[:, None, None] - (self.max_val[None] / Ts[:, None])[:, :, None])
        return E[:, np.arange(self.n_v), self.y_sorted] / _row_sum(E)[:, :, 0]

    def _grid_table(self):
        if self._grid_val is None:
            G = np.empty((len(self.grid), self.n_v))
            for g, T in enumerate(self.grid):
                v = self._val_true(np.array([T]))[0]
                for k in range(self.n):  # sorted within each class
                    G[g, self.starts[k]:self.starts[k + 1]] = np.sort(v[self.starts[k]:self.starts[k + 1]])
            self._grid_val = G
        return self._grid_val

    def _pos_grid(self, edges):
        """V's class-k items per bin at the grid temperatures: int (R, n, n_bins) for edges (R, n, n_bins + 1)
        whose rows run over the grid's temperatures in order, repeated (R a multiple of G)."""
        G = self._grid_table()
        g = (np.arange(edges.shape[0]) % G.shape[0])[:, None, None] * self.n_v
        lo = np.broadcast_to(g + self.starts[:-1][None, :, None], edges.shape)
        hi = np.broadcast_to(g + self.starts[1:][None, :, None], edges.shape)
        return np.diff(_count_le(G.ravel(), lo.ravel(), hi.ravel(), edges.ravel()).reshape(edges.shape), axis=2)

    def _pos_at(self, Ts, edges):
        """The same at one temperature per sample, ``Ts`` (S,), for edges (S, n, n_bins + 1): an item of class k
        is in bin b when ``edges[b] < v <= edges[b + 1]`` (``searchsorted(edges, v) - 1``, as ``_bin_of``)."""
        v = self._val_true(Ts)
        pos = np.empty((len(Ts), self.n, self.n_bins), dtype=np.int64)
        for k in range(self.n):  # counted along the last axis (contiguous): much faster than along |V_k| in the middle
            le = edges[:, k, :, None] >= v[:, None, self.starts[k]:self.starts[k + 1]]  # (S, n_bins + 1, |V_k|)
            pos[:, k] = np.diff(np.count_nonzero(le, axis=2), axis=1)
        return pos

    def losses(self, L, w, Ts=None):
        """The loss of each of S samples: log-posteriors ``L`` (S, m, n), weights ``w`` (S, n); at the grid's
        temperatures (``Ts`` None: float (S, G)) or at one temperature per sample (``Ts`` (S,): float (S,))."""
        S, m, n = L.shape
        on_grid = Ts is None
        K = len(self.grid) if on_grid else 1
        step = max(1, self.CHUNK // (K * n * max(m, 1 if on_grid else self.n_v)))
        out = np.empty((S, K))
        for a in range(0, S, step):
            b = min(a + step, S)
            T = np.broadcast_to(self.grid, (b - a, K)) if on_grid else np.asarray(Ts, dtype=float)[a:b, None]
            out[a:b] = self._losses(L[a:b], w[a:b], T, on_grid)
        return out if on_grid else out[:, 0]

    def _losses(self, L, w, Ts, on_grid):
        S, m, n = L.shape
        K, nb = Ts.shape[1], self.n_bins
        T4 = Ts[:, :, None, None]
        # max over the classes of L / T is max(L) / T exactly (rounding is monotone), as V's side uses
        E = np.exp(L[:, None] / T4 - _row_max(L)[:, None] / T4)
        t = (E / _row_sum(E)).transpose(0, 1, 3, 2).reshape(-1, m)  # rows (sample, temperature, class)
        R = t.shape[0]
        s = np.sort(t, axis=1)
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
        # the bin of each item, searchsorted(edges, t) - 1 = #{b: e_b < t} - 1, counted in a narrow integer type
        # (nothing exceeds the last edge, the row's maximum: it is not compared)
        bt = np.full((R, m), -1, dtype=np.min_scalar_type(-nb - 1))
        for b in range(nb):
            bt += t > edges[:, b:b + 1]
        e3 = edges.reshape(S * K, n, nb + 1)
        pos = (self._pos_grid(e3) if on_grid else self._pos_at(Ts[:, 0], e3)).reshape(R, nb)
        ok = cnt > 1
        wk = np.broadcast_to(np.broadcast_to(w[:, None, :], (S, K, n)).reshape(R, 1), (R, nb))
        c = np.full((R, nb + 1), np.nan)  # column 0: items at or below the first edge (bin -1), in no bin
        c[:, 1:][ok] = wk[ok] * (pos[ok] / self.n_v) * (m - 1) / (cnt[ok] - 1)
        cb = c.ravel()[bt + (np.arange(R) * (nb + 1) + 1)[:, None]]  # bt <= nb - 1: the last edge is the max
        use = ~np.isnan(cb)
        X = np.abs(t - cb) ** self.p
        return (_pairwise_row_sums(X, use) / m).reshape(S, K, n).mean(axis=2)

    def temperatures(self, P, w) -> tuple[np.ndarray, np.ndarray]:
        """``(T, loss)``, floats (S,), of validated samples of one size ``P`` (S, m, n) with weights ``w`` (S, n): the
        search of :func:`lascal_temperature` (the grid, then bounded Brent on log T between the neighbours of the
        grid's best value, :func:`_fminbound_many`) on every sample at once, with the same numbers (==)."""
        S = P.shape[0]
        L, w = _log_posteriors(P), np.asarray(w, dtype=float)
        T, loss = np.ones(S), np.empty(S)
        flat = ((P == 0) | (P == P.max(axis=2, keepdims=True))).all(axis=(1, 2))  # every row uniform on its support
        if flat.any():
            loss[flat] = self.losses(L[flat], w[flat], np.ones(int(flat.sum())))
        rest = np.flatnonzero(~flat)
        if rest.size == 0:
            return T, loss
        grid_losses = self.losses(L[rest], w[rest])
        # the same loss at every grid temperature (of two or more): T = 1, with its own loss (a one-value grid
        # is the caller's choice of T, searched as any grid)
        const = (np.ptp(grid_losses, axis=1) == 0.0) & (self.grid.size > 1)
        if const.any():
            loss[rest[const]] = self.losses(L[rest[const]], w[rest[const]], np.ones(int(const.sum())))
        live, gl = rest[~const], grid_losses[~const]
        k = np.argmin(gl, axis=1)
        best_T, best = self.grid[k], gl[np.arange(len(k)), k]
        lo, hi = np.log(self.grid[np.maximum(k - 1, 0)]), np.log(self.grid[np.minimum(k + 1, self.grid.size - 1)])
        search = np.flatnonzero(hi > lo)
        if search.size:
            which = live[search]
            u, fu = _fminbound_many(lambda x, i: self.losses(L[which[i]], w[which[i]], np.exp(x)),
                                    lo[search], hi[search], xatol=1e-4)
            better = fu < best[search]
            best_T[search[better]], best[search[better]] = np.exp(u[better]), fu[better]
        T[live], loss[live] = best_T, best
        return T, loss

    def temperature(self, P, w) -> tuple[float, float]:
        """``(T, loss)`` as :func:`lascal_temperature` for one validated sample ``P`` (m, n) and weights ``w`` (n,)."""
        T, loss = self.temperatures(P[None], np.asarray(w, dtype=float)[None])
        return float(T[0]), float(loss[0])


def _fminbound_many(func, lo, hi, xatol, maxfun=500):
    """Bounded Brent minimisation (golden section with parabolic steps, Forsythe, Malcolm & Moler's ``fmin``) of S
    scalar functions at once: ``scipy.optimize.minimize_scalar(method="bounded")``'s iteration, step for step, on
    arrays, so that each function's iterates, minimiser and value are those scipy gives it alone (the tests check
    ==). ``func(x, i)``: the values (A,) of the functions ``i`` (A,) (indices into 0..S-1) at ``x`` (A,); ``lo``,
    ``hi`` (S,) the bounds, ``xatol`` the absolute tolerance on x, ``maxfun`` scipy's ``maxiter``. Returns ``(x,
    f(x))``, floats (S,)."""
    sqrt_eps, golden_mean = np.sqrt(2.2e-16), 0.5 * (3.0 - np.sqrt(5.0))
    a, b = np.array(lo, dtype=float), np.array(hi, dtype=float)
    fulc = a + golden_mean * (b - a)
    nfc, xf = fulc.copy(), fulc.copy()
    rat, e = np.zeros_like(a), np.zeros_like(a)
    fx = np.asarray(func(xf, np.arange(a.size)), dtype=float)
    ffulc, fnfc = fx.copy(), fx.copy()
    num = 1
    while True:
        xm = 0.5 * (a + b)
        tol1 = sqrt_eps * np.abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        act = np.flatnonzero(np.abs(xf - xm) > (tol2 - 0.5 * (b - a)))
        if act.size == 0:
            break
        A, B, X, XM, T1, T2 = a[act], b[act], xf[act], xm[act], tol1[act], tol2[act]
        FX, NF, FN, FU, FF, E, RAT = fx[act], nfc[act], fnfc[act], fulc[act], ffulc[act], e[act], rat[act]
        para = np.abs(E) > T1  # check for a parabolic fit
        r = (X - NF) * (FX - FF)
        q = (X - FU) * (FX - FN)
        p = (X - FU) * q - (X - NF) * r
        q = 2.0 * (q - r)
        p = np.where(q > 0.0, -p, p)
        q = np.abs(q)
        r = E
        E = np.where(para, RAT, E)
        accept = para & (np.abs(p) < np.abs(0.5 * q * r)) & (p > q * (A - X)) & (p < q * (B - X))
        with np.errstate(divide="ignore", invalid="ignore"):
            rp = (p + 0.0) / q
        near = ((X + rp - A) < T2) | ((B - (X + rp)) < T2)
        rp = np.where(near, T1 * (np.sign(XM - X) + ((XM - X) == 0)), rp)
        golden = ~accept
        E = np.where(golden, np.where(X >= XM, A - X, B - X), E)
        RAT = np.where(accept, rp, np.where(golden, golden_mean * E, RAT))
        si = np.sign(RAT) + (RAT == 0)
        x = X + si * np.maximum(np.abs(RAT), T1)
        fu = np.asarray(func(x, act), dtype=float)
        num += 1
        down = fu <= FX
        right = x >= X
        A2 = np.where(down, np.where(right, X, A), np.where(x < X, x, A))
        B2 = np.where(down, np.where(right, B, X), np.where(x < X, B, x))
        c2 = ~down & ((fu <= FN) | (NF == X))
        c3 = ~down & ~c2 & ((fu <= FF) | (FU == X) | (FU == NF))
        FU2 = np.where(down | c2, NF, np.where(c3, x, FU))
        FF2 = np.where(down | c2, FN, np.where(c3, fu, FF))
        NF2 = np.where(down, X, np.where(c2, x, NF))
        FN2 = np.where(down, FX, np.where(c2, fu, FN))
        a[act], b[act], fulc[act], ffulc[act], nfc[act], fnfc[act] = A2, B2, FU2, FF2, NF2, FN2
        xf[act], fx[act], e[act], rat[act] = np.where(down, x, X), np.where(down, fu, FX), E, RAT
        if num >= maxfun:  # scipy's order: the stopping rule first, the budget after each evaluation
            break
    return xf, fx


class RLLS:
    """RLLS importance weights from hard predictions (Azizzadenesheli et al., ICLR 2019), fitted on V;
    :meth:`weights` solves the convex problem for a target sample.

    With ``C[i, j] = p_V(h = i, y = j)`` (V's joint of h's decision and the label), ``mu_V`` and ``mu_U`` the
    fractions of V and of the sample that h assigns to each class, ``theta = w - 1`` minimises
    ``||C theta - (mu_U - mu_V)||_2 + rho ||theta||_2`` subject to ``theta >= -1`` (w >= 0), with
    ``rho = alpha * 3 (2 log(2n/delta) / (3|V|) + sqrt(2 log(2n/delta) / |V|))``, ``alpha = 0.01``,
    ``delta = 0.05``: the setting of the ``abstention`` package's ``RLLSImbalanceAdapter``, LasCal's default
    ``weights_method="rlls-hard"``. One cvxpy problem (b a parameter) is compiled per V and re-solved per sample.

    ``RLLS(P_val, y_val, n_classes, alpha=0.01, delta=0.05)``: h's posteriors (|V|, n) and labels (|V|,) on V, not
    validated here (:func:`rlls_weights` validates them and warns when the solver fails).
    """

    def __init__(self, P_val, y_val, n_classes, alpha=0.01, delta=0.05):
        n, n_v = n_classes, len(y_val)
        self.n = n
        self.C = contingency_table(y_val, P_val.argmax(axis=1), n).T  # rows: h's decision, columns: label
        self.mu_val = self.C.sum(axis=1)
        self.p_val = self.C.sum(axis=0)
        self.rho = alpha * 3 * (2 * np.log(2 * n / delta) / (3 * n_v) + np.sqrt(2 * np.log(2 * n / delta) / n_v))
        self._problem, self._solved = None, {}

    def _build(self):
        theta = cp.Variable(self.n)
        b = cp.Parameter(self.n)
        prob = cp.Problem(cp.Minimize(cp.norm(self.C @ theta - b, 2) + self.rho * cp.norm(theta, 2)), [theta >= -1])
        self._problem = (prob, theta, b)
        # The first solve compiles the problem, and its solution can differ from a re-solve of the same b in the
        # last bits (~1e-14): solve once (no shift) so that every sample's weights come from a re-solve, the same
        # whatever the order in which samples arrive or repeat.
        b.value = np.zeros(self.n)
        try:
            prob.solve()
        except cp.error.SolverError:
            pass

    def __getstate__(self):  # a compiled cvxpy problem is rebuilt on demand, not pickled
        state = self.__dict__.copy()
        state["_problem"], state["_solved"] = None, {}
        return state

    def __setstate__(self, state):  # pickled before the cache existed
        self.__dict__.update({"_solved": {}, **state})

    def weights(self, P) -> tuple[np.ndarray, bool]:
        """``(w, solved)``: the weights (n,) for posteriors ``P`` (m, n), and False if the solver failed (w = 1).
        Samples with the same size and the same counts of h's decisions pose the same problem: it is solved once."""
        counts = np.bincount(P.argmax(axis=1), minlength=self.n)
        key = (P.shape[0], counts.tobytes())  # the problem reads the sample through these counts only
        if key not in self._solved:
            self._solved[key] = self._solve(counts / P.shape[0])
        w, solved = self._solved[key]
        return w.copy(), solved

    def _solve(self, mu):
        if self._problem is None:
            self._build()
        prob, theta, b = self._problem
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
    the weight estimator LasCal uses by default ("rlls-hard"); see :class:`RLLS` for the problem solved.
    ``P_val`` (|V|, n), ``y_val`` (|V|,): h's posteriors and labels on V; ``P`` (m, n): h's posteriors on the
    target sample (only their arg-max is read, so any temperature gives the same weights). If the solver fails,
    returns ones (no shift) with a :class:`capshift.CalibrationWarning`. Raises ValueError for malformed input.
    """
    P_val = check_posteriors(P_val, name="P_val")
    n = P_val.shape[1]
    y_val = check_labels(y_val, n, "y_val", n_items=P_val.shape[0])
    P = check_posteriors(P, n, "P")
    w, solved = RLLS(P_val, y_val, n, alpha, delta).weights(P)
    if not solved:
        warnings.warn("RLLS could not solve for the label-shift weights; using w = 1 (no shift)", CalibrationWarning,
                      stacklevel=2)
    return w



# ---------------------------------------------------------------------------------------------
# BCTS (Alexandari et al., ICML 2020) and SLD/EM (Saerens et al. 2002): calibration on V, then prior adaptation
# ---------------------------------------------------------------------------------------------
#: Candidate values of exact-zero posteriors before BCTS, as fractions of half the smallest positive posterior on V
#: (see :class:`BCTS`).
FLOOR_STEPS = 10.0 ** -np.arange(0, 13, 3)


def _floor_zeros(P, floor):
    """``P`` with its exact zeros raised to ``floor`` (rows not renormalised: BCTS reads log-ratios only)."""
    return np.where(P > 0, P, floor)


def mean_posterior(P) -> np.ndarray:
    """The mean row of the posteriors ``P`` (m, n), divided by its sum: float (n,), SLD's starting prior.

    QuaPy's ``quapy.functional.prevalence_from_probabilities`` (what ``EMQ.aggregation_fit`` stores as
    ``train_prevalence`` with ``exact_train_prev=False``, Alexandari et al.'s setting: the prior the (calibrated)
    posteriors on V imply, rather than V's label frequencies). Raises ValueError for a ``P`` that is not a
    posterior matrix (:func:`capshift.validation.check_posteriors`).
    """
    return prevalence_from_probabilities(check_posteriors(P, name="P"))


def sld_adjust(P, prior) -> np.ndarray:
    """SLD's adjustment of posteriors ``P`` (m, n) to the sample's unknown prior, started from ``prior`` (n,).

    The expectation-maximisation of Saerens, Latinne & Decaestecker (Neural Computation 2002, Eqs. 2.9-2.10): the
    posteriors are reweighted by the ratio of the running estimate of the sample's prior to ``prior`` (the prior
    they were calibrated for) and the estimate is their mean, until it moves by less than QuaPy's epsilon; QuaPy's
    public ``EMQ.EM``. Returns the adjusted posteriors, float (m, n), rows renormalised to sum to 1. Raises
    ValueError for a ``P`` that is not a posterior matrix or a ``prior`` that is not a distribution over its n
    columns.
    """
    P = check_posteriors(P, name="P")
    prior = check_distribution(prior, "prior", n_classes=P.shape[1])
    if prior.ndim != 1:
        raise ValueError(f"prior must be one distribution (n,), got shape {prior.shape}")
    _, Pa = EMQ.EM(prior, P)
    return Pa / Pa.sum(axis=1, keepdims=True)


def _fit_bcts_map(P, y, n_classes):
    """abstention's BCTS calibration function fitted on posteriors ``P`` and labels ``y``: RuntimeError if its fit
    fails (as QuaPy's ``EMQ`` with ``on_calib_error="raise"`` reports any exception of the calibrator)."""
    try:
        return TempScaling(bias_positions="all")(P, np.eye(n_classes)[y], posterior_supplied=True)
    except Exception as e:  # abstention asserts L-BFGS-B's success (AssertionError) and may fail otherwise
        raise RuntimeError(f"calibration bcts failed at fit time: {e}") from e


def _apply_bcts_map(f, P):
    """The BCTS calibration function ``f`` applied to ``P``: RuntimeError if it fails (as QuaPy's ``EMQ``)."""
    try:
        return f(P)
    except Exception as e:
        raise RuntimeError(f"calibration bcts failed at predict time: {e}") from e


class BCTS:
    """Bias-Corrected Temperature Scaling (Alexandari et al., ICML 2020) fitted on labelled posteriors, with exact
    zeros raised to a floor chosen by likelihood.

    BCTS maps posteriors p to ``softmax(log(p) / T + b)`` (per-class biases b), with T and b maximising the
    likelihood of the labels on V. The fit is the ``abstention`` package's public
    ``TempScaling(bias_positions="all")(P_val, one-hot labels, posterior_supplied=True)``, the calibrator QuaPy's
    ``EMQ(calib="bcts")`` fits (``quapy.method._helper``), so on posteriors without zeros :meth:`calibrate` and
    :attr:`prior_` are QuaPy's ``EMQ(..., calib="bcts", exact_train_prev=False)``'s, to the bit.

    Exact zeros. BCTS rescales log-posteriors, and ``log 0`` is ``-inf``: posteriors that are exactly 0 (vote
    fractions of RF and kNN, underflow of LR and MLP far from the boundary) make abstention's fit fail or, on a
    test sample, turn rows into NaN. Before BCTS (on V and on every sample) exact zeros are therefore raised to
    ``floor_``, a value below every positive posterior on V: half the smallest one (half a vote for a
    vote-fraction classifier: 0.005 for a forest of 100 trees, 0.05 for a 10-NN) times each of :data:`FLOOR_STEPS`
    (1, 1e-3, ..., 1e-12; floors are at least the smallest normal float), whichever gives the fitted BCTS the
    smallest negative log-likelihood on V (the floor sets how strongly a confidently wrong item pulls the
    temperature up, so it is fitted like the temperature; with 26 classes and 10 neighbours, half a vote on each
    of 25 empty classes flattens every posterior). If V has no zeros, ``floor_`` is half the
    smallest posterior (and positive posteriors are never changed, so neither are the results on posteriors
    without zeros). A floor whose fit fails (abstention's L-BFGS-B stops abnormally, e.g. when h separates V and
    the temperature runs to 0, where ``exp`` overflows; QuaPy's ``RuntimeError``) is skipped.

    Fallback: if no floor gives a BCTS fit, ``bcts_`` is False, :meth:`calibrate` returns the posteriors as they
    are and ``prior_`` is their mean on V (QuaPy's ``on_calib_error="backup"``, made visible).

    Attributes (after :meth:`fit`): ``bcts_`` (bool, whether BCTS was fitted), ``floor_`` (float, the value of
    exact zeros before BCTS), ``prior_`` (float (n,): :func:`mean_posterior` of the calibrated posteriors on V,
    SLD's starting prior; QuaPy's ``EMQ.train_prevalence``), ``n_classes_``. Pickles: abstention's calibration
    function is a closure, so it is refitted (deterministically, at ``floor_``) when unpickled.
    """

    def fit(self, P_val, y_val) -> "BCTS":
        """Fit on V's posteriors ``P_val`` (m, n) and labels ``y_val`` (m,) int codes 0..n-1; returns self.

        Raises ValueError for a ``P_val`` that is not a posterior matrix or ``y_val`` not (m,) codes.
        """
        P_val = check_posteriors(P_val, name="P_val")
        n = P_val.shape[1]
        y_val = check_labels(y_val, n, "y_val", n_items=P_val.shape[0])
        tiny = np.finfo(float).tiny
        half = max(0.5 * float(P_val[P_val > 0].min()), tiny)  # at least tiny: half of a subnormal is 0
        floors = [half] if (P_val > 0).all() else [max(half * step, tiny) for step in FLOOR_STEPS]
        best = None
        for floor in floors:
            try:
                f = _fit_bcts_map(_floor_zeros(P_val, floor), y_val, n)
                Q = _apply_bcts_map(f, _floor_zeros(P_val, floor))
            except RuntimeError:  # abstention's optimiser failed for this floor
                continue
            nll = -float(np.mean(np.log(np.maximum(Q[np.arange(len(y_val)), y_val], tiny))))
            if np.isfinite(nll) and (best is None or nll < best[0]):
                best = (nll, floor, f, Q)
        self.n_classes_ = n
        self._fit_data = (P_val, y_val)
        self.bcts_ = best is not None
        self.floor_ = half if best is None else best[1]
        self._map = None if best is None else best[2]
        # no floor gave a BCTS fit: SLD starts from the mean of h's own posteriors (see the class docstring)
        self.prior_ = prevalence_from_probabilities(P_val if best is None else best[3])
        return self

    def calibrate(self, P) -> np.ndarray:
        """BCTS-calibrated posteriors of ``P`` (m, n), exact zeros raised to ``floor_`` first: float (m, n).

        The rows are abstention's softmax, summing to 1 up to round-off (not renormalised); ``P`` itself
        (validated) if ``bcts_`` is False. Raises NotFittedError before :meth:`fit`, ValueError for a ``P`` that is
        not a posterior matrix with ``n_classes_`` columns or whose calibrated posteriors are not finite (the
        temperature-scaled logits overflow ``exp``), RuntimeError if abstention's map fails (as QuaPy).
        """
        check_fitted(self, "bcts_")
        P = check_posteriors(P, self.n_classes_, "P")
        if not self.bcts_:
            return P
        Q = _apply_bcts_map(self._map, _floor_zeros(P, self.floor_))
        if not np.isfinite(Q).all():  # SLD would iterate to QuaPy's MAX_ITER on NaN and return NaN
            raise ValueError("the BCTS-calibrated posteriors are not finite (the temperature-scaled logits "
                             "overflow exp)")
        return Q

    def __getstate__(self):
        # abstention's calibration function is a lambda and does not pickle: refitted (deterministic) on load
        state = self.__dict__.copy()
        state["_map"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.__dict__.get("bcts_"):
            P_val, y_val = self._fit_data
            self._map = _fit_bcts_map(_floor_zeros(P_val, self.floor_), y_val, self.n_classes_)

"""ACC inference on QuaPy's fitted misclassification matrix, with an exact solve of QuaPy's objective.

Adjusted classify and count (Forman 2008) corrects the classify-and-count fractions ``b`` of a sample
(``b_i``: the share of its items that h predicts as class i) by the misclassification rates that QuaPy's
:class:`quapy.method.aggregative.ACC` estimated on the validation set at fit (``Pte_cond_estim_``, the
matrix A with ``A[i, j]`` the estimate of ``P(h(x) = i | y = j)``; every column sums to 1). With
``solver="minimize"`` (QuaPy's default, Bunse 2022: "On Multi-Class Extensions of Adjusted Classify and
Count", LQ 2022) the estimate is

.. math:: \\hat p = \\arg\\min_{p \\in \\Delta} \\lVert A p - b \\rVert_2

(``method="invariant-ratio"``, Vaz et al. 2018, first replaces A's last row by ones and ``b``'s last entry by 1),
then mapped onto the simplex by QuaPy's ``norm`` (default ``"clip"``). QuaPy minimises the (non-squared) norm with
``scipy.optimize`` SLSQP from the uniform prevalence, on finite-difference gradients, at its default tolerance
``ftol = 1e-6``: about 0.15-0.7 s per sample at 26 classes, and up to ~1e-3 away from the optimum (8e-4
measured on the offline datasets; the loss is not differentiable where the residual is 0).

:class:`ACCEvaluator` minimises the same objective exactly. The norm and its square have the same minimisers, and
when A is nonsingular ``||A p - b||²`` is strictly convex, so the minimiser is unique: a convex QP on the simplex,
solved by capshift's active-set solver :class:`capshift._qp.SimplexActiveSet` (built once per fit from A; per
sample one matrix product, plus a few small KKT solves when a bound is active; many samples in one batch):

- when the unconstrained solution ``A^-1 b`` has no negative cell it is the answer (it sums to 1 by itself, since
  ``1^T A = 1^T`` and ``1^T b = 1``, or by the invariant-ratio row of ones; the residual is 0);
- otherwise the cells at 0 are found by principal pivoting / a primal active-set method and the KKT conditions hold
  to round-off (no convergence tolerance).

Every QuaPy normalisation (``"clip"``, ``"mapsimplex"``, ``"condsoftmax"``, None) maps a point of the simplex to
itself, so none is applied. A singular (or numerically singular, :data:`RCOND`) A (a class that h never predicts
on V, or two classes h confuses at identical rates) has a set of minimisers, not one: SLSQP returns whichever its
path reaches. :func:`acc_supported` is False then, and for QuaPy's other solvers (``"exact-raise"``,
``"exact-cc"``: closed forms already); :class:`capshift.quantifiers.Quantifier` keeps QuaPy's ``aggregate`` for
them.
"""
from __future__ import annotations

import numpy as np
from quapy.method.aggregative import ACC

from ._qp import SimplexActiveSet

__all__ = ["ACCEvaluator", "RCOND", "acc_supported", "adjustment_system"]

#: Smallest ratio of A's extreme singular values for which the minimiser counts as unique (below it: QuaPy's path).
RCOND = 1e-8
_METHODS = ("inversion", "invariant-ratio")


def adjustment_system(acc: ACC) -> np.ndarray:
    """The matrix of QuaPy's adjustment loss for a fitted ``acc``: float64 (n, n), a copy of ``Pte_cond_estim_``,
    whose last row is ones for ``method="invariant-ratio"``. ValueError for an unfitted ACC or another method."""
    if not hasattr(acc, "Pte_cond_estim_"):
        raise ValueError("the ACC quantifier is not fitted (no Pte_cond_estim_)")
    if acc.method not in _METHODS:
        raise ValueError(f"unknown ACC method {acc.method!r}; choose one of {_METHODS}")
    A = np.array(acc.Pte_cond_estim_, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 2 or not np.all(np.isfinite(A)):
        raise ValueError(f"ACC's misclassification matrix must be a finite square (n, n) array, n >= 2, got {A.shape}")
    if acc.method == "invariant-ratio":
        A[-1, :] = 1.0
    return A


def acc_supported(acc) -> bool:
    """Whether :class:`ACCEvaluator` reproduces ``acc``: a fitted QuaPy ``ACC`` itself (not a subclass, which may
    aggregate otherwise) with ``solver="minimize"``, a known ``method`` and ``norm``, and a matrix
    (:func:`adjustment_system`) whose smallest singular value is above :data:`RCOND` times its largest."""
    if type(acc) is not ACC or acc.solver != "minimize" or acc.norm not in ACC.NORMALIZATIONS \
            or acc.method not in _METHODS or not hasattr(acc, "Pte_cond_estim_"):
        return False
    try:
        s = np.linalg.svd(adjustment_system(acc), compute_uv=False)
    except (ValueError, np.linalg.LinAlgError):
        return False
    return bool(s[-1] > RCOND * s[0])


class ACCEvaluator:
    """Exact ACC estimates (Forman 2008; Bunse's 2022 constrained least squares) from a fitted QuaPy ``ACC``.

    Parameters
    ----------
    acc : quapy.method.aggregative.ACC
        Fitted, with ``solver="minimize"`` and a nonsingular misclassification matrix (:func:`acc_supported`).
        Nothing is refitted: the matrix is read from its public fitted attribute ``Pte_cond_estim_``, the class
        order from ``classes_``.

    Raises
    ------
    ValueError
        If :func:`acc_supported` is False for ``acc`` (the message says why).

    Attributes
    ----------
    A_ : ndarray, float64, shape (n, n)
        The loss's matrix (:func:`adjustment_system`).
    classes_ : ndarray, shape (n,)
        The class labels, in prevalence order.
    """

    def __init__(self, acc: ACC):
        if not acc_supported(acc):
            if type(acc) is not ACC or not hasattr(acc, "Pte_cond_estim_"):
                raise ValueError(f"ACCEvaluator needs a fitted quapy ACC, got {type(acc).__name__}"
                                 + ("" if type(acc) is not ACC else " (not fitted)"))
            if acc.solver != "minimize" or acc.norm not in ACC.NORMALIZATIONS or acc.method not in _METHODS:
                raise ValueError(f"ACCEvaluator reproduces ACC(solver='minimize') with method in {_METHODS} and norm "
                                 f"in {ACC.NORMALIZATIONS}, got solver={acc.solver!r}, method={acc.method!r}, "
                                 f"norm={acc.norm!r}")
            raise ValueError("ACC's misclassification matrix is (numerically) singular: its adjustment loss has no "
                             "unique minimiser (is there a class h never predicts on V?)")
        self.acc = acc
        self.method = acc.method
        self.A_ = adjustment_system(acc)
        self.classes_ = np.asarray(acc.classes_)
        self.n_classes = len(self.classes_)
        self._order = np.argsort(self.classes_, kind="stable")   # labels -> prevalence positions by binary search
        self._sorted = self.classes_[self._order]
        if self.A_.shape[0] != self.n_classes:
            raise ValueError(f"ACC's matrix is {self.A_.shape} for {self.n_classes} classes")
        self._solver = SimplexActiveSet(self.A_)

    def counts(self, predictions) -> np.ndarray:
        """Classify-and-count fractions ``b`` (n,), float64, of one sample's predicted labels (m,) (QuaPy's
        ``CC.aggregate``), with the invariant-ratio row set to 1. ValueError for a label not in ``classes_`` or an
        empty sample."""
        y = np.asarray(predictions).ravel()
        if y.size == 0:
            raise ValueError("ACC needs at least one prediction per sample")
        pos = np.clip(np.searchsorted(self._sorted, y), 0, self.n_classes - 1)
        if not np.array_equal(self._sorted[pos], y):
            raise ValueError(f"predicted labels {np.setdiff1d(y, self.classes_).tolist()} are not among ACC's classes "
                             f"{self.classes_.tolist()}")
        b = np.bincount(self._order[pos], minlength=self.n_classes) / y.size
        if self.method == "invariant-ratio":
            b[-1] = 1.0
        return b

    def aggregate(self, predictions) -> np.ndarray:
        """The prevalence estimate (n,), float64 on the simplex, of one sample's predicted labels (m,)."""
        return self._solver.solve(self.counts(predictions))

    def aggregate_batch(self, predictions) -> np.ndarray:
        """Prevalence estimates (k, n) of k samples (a list of label arrays), solved as one batch."""
        if len(predictions) == 0:
            return np.empty((0, self.n_classes))
        return np.atleast_2d(self._solver.solve(np.stack([self.counts(P) for P in predictions])))

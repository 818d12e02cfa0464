"""The governing equations of the test contingency table under PPS (LEAP 2025, Sect. 4.1).

The unknowns are the n² cells of the test table, flattened row-major: ``x[i * n + j] = C_U[i, j]``
(true class i, predicted class j; the LEAP paper's Eq. 5 is the transpose). Four groups of linear
equations constrain them:

======  =========  ==========================================  ===========================
group   paper eq.  statement (project convention)              right-hand side
======  =========  ==========================================  ===========================
1       Eq. 8      sum of all cells = 1                         1
2       Eq. 11     column j sums to gamma_j (predicted class)   ``pred_prev`` (observed)
3       Eq. 15     ``C_U[i, j] = r_ij * sum_k C_U[i, k]``       0
                   with ``r_ij = P_V(Yhat=j | Y=i)`` (PPS, Eq. 4)
4       Eq. 21     row i sums to q_i (true prevalence)          ``est_prev`` (quantifier)
======  =========  ==========================================  ===========================

The matrix depends only on the validation table; the right-hand side is affine in
``(pred_prev, est_prev)``: ``b = b0 + G @ pred_prev + H @ est_prev``. :class:`GoverningSystem`
keeps these pieces so a solver can factorise ``A`` once and form ``b`` for a whole batch of test
samples in one product. Also here: the binary closed forms of LEAP_ACC (Eqs. 24, 26, 27, 30, 31).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .validation import check_finite_array, check_int
from .tables import check_table, true_prevalence

__all__ = [
    "GROUPS", "GoverningSystem", "validation_rates", "governing_system", "system_rank", "rank_summary",
    "binary_table_closed_form", "binary_accuracy_closed_form", "binary_accuracy_from_validation",
    "binary_f1_closed_form", "binary_f1_from_validation",
]

#: Group number -> (paper equation, short description).
GROUPS = {
    1: ("Eq. 8", "cells sum to 1"),
    2: ("Eq. 11", "column sums = predicted-class fractions gamma"),
    3: ("Eq. 15", "PPS: class-conditional rates of V hold in U"),
    4: ("Eq. 21", "row sums = estimated true prevalence q"),
}


def validation_rates(val_table) -> np.ndarray:
    """Class-conditional rates ``R[i, j] = P_V(Yhat = j | Y = i)`` (row-normalised table), shape (n, n).

    The LEAP paper's Eq. 14 ``r_ij`` is the transpose. Raises ``ValueError`` if a class has no
    items in V: its rates, hence the PPS equations of that class, are undefined (add items of that
    class to the validation set, or drop the class from the codeframe).
    """
    V = check_table(val_table, "val_table")
    if V.ndim != 2:
        raise ValueError(f"val_table must be a single (n, n) table, got shape {V.shape}")
    p = true_prevalence(V)
    if np.any(p <= 0):
        missing = np.flatnonzero(p <= 0).tolist()
        raise ValueError(f"val_table has no items of true class(es) {missing}: their rates P(Yhat|Y) cannot be "
                         "estimated from the validation set; collect validation items of every class")
    return V / p[:, None]


@dataclass(frozen=True)
class GoverningSystem:
    """A pooled set of governing equations ``A x = b0 + G @ pred_prev + H @ est_prev``.

    Attributes
    ----------
    A : scipy.sparse.csr_matrix, shape (k, n²)
        Coefficients on the flattened test table (row-major, ``x[i*n+j] = C_U[i, j]``).
    b0 : ndarray, shape (k,)
        Constant part of the right-hand side.
    G, H : ndarray, shape (k, n)
        Coefficients of ``pred_prev`` (gamma) and ``est_prev`` (q-hat) in the right-hand side.
    group : ndarray of int, shape (k,)
        Group (1-4, see :data:`GROUPS`) of each equation.
    index : ndarray of int, shape (k, 2)
        Class indices the equation refers to: (-1, -1) for group 1, (-1, j) for group 2 (column j),
        (i, j) for group 3, (i, -1) for group 4 (row i).
    """

    A: sp.csr_matrix
    b0: np.ndarray
    G: np.ndarray
    H: np.ndarray
    group: np.ndarray
    index: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(round(np.sqrt(self.A.shape[1])))

    def rhs(self, pred_prev, est_prev) -> np.ndarray:
        """Right-hand side(s) for predicted fractions and estimated prevalences, shapes (..., n) -> (..., k)."""
        g = np.asarray(pred_prev, dtype=float)
        q = np.asarray(est_prev, dtype=float)
        n = self.n_classes
        if g.shape[-1:] != (n,) or q.shape[-1:] != (n,):
            raise ValueError(f"pred_prev and est_prev must have shape (..., {n}), got {g.shape} and {q.shape}")
        return self.b0 + g @ self.G.T + q @ self.H.T

    def residual(self, table, pred_prev, est_prev) -> np.ndarray:
        """``A x - b`` for a table (batch) of shape (..., n, n); shape (..., k)."""
        T = np.asarray(table, dtype=float)
        x = T.reshape(T.shape[:-2] + (-1,))
        return (self.A @ x.reshape(-1, x.shape[-1]).T).T.reshape(x.shape[:-1] + (-1,)) - self.rhs(pred_prev, est_prev)

    def select(self, mask) -> "GoverningSystem":
        """The sub-system of the equations where ``mask`` (shape (k,), bool) is True."""
        mask = np.asarray(mask, dtype=bool)
        return GoverningSystem(self.A[mask], self.b0[mask], self.G[mask], self.H[mask],
                               self.group[mask], self.index[mask])


def governing_system(val_table, groups=(1, 2, 3, 4), drop_class: int | None = None) -> GoverningSystem:
    """Build the governing equations (LEAP 2025, Sect. 4.1) for a validation table.

    Parameters
    ----------
    val_table : array-like, shape (n, n)
        Validation contingency table (rows true, columns predicted, sums to 1).
    groups : iterable of int
        Which groups to pool (1: Eq. 8, 2: Eq. 11, 3: Eq. 15, 4: Eq. 21), in this order.
    drop_class : int or None
        Drop every equation that refers to this class, as LEAP_ACC/LEAP_KDEy do with class 0
        (Sect. 4.3: group 1 stays, groups 2 and 4 lose one equation, group 3 keeps the (n-1)²
        equations with i, j != drop_class), giving a square n² x n² system. None keeps all.

    Returns
    -------
    GoverningSystem
        ``(1 + n)²`` equations with all four groups and no dropped class.

    Raises
    ------
    ValueError
        Invalid table, a class absent from V (see :func:`validation_rates`), bad group ids.
    """
    R = validation_rates(val_table)
    n = R.shape[0]
    try:
        groups = tuple(groups)
    except TypeError:
        raise TypeError(f"groups must be a sequence of group ids from {sorted(GROUPS)}, got {groups!r}") from None
    if not groups or any(isinstance(g, bool) or g not in GROUPS for g in groups) or len(set(groups)) != len(groups):
        raise ValueError(f"groups must be a non-empty subset of {sorted(GROUPS)} without repeats, got {groups}")
    if drop_class is not None:
        drop_class = check_int(drop_class, "drop_class", min_value=0, max_value=n - 1)
    keep = [c for c in range(n) if c != drop_class]
    cell = np.arange(n * n).reshape(n, n)
    rows, cols, vals, b0, G, H, grp, idx = [], [], [], [], [], [], [], []

    def add(cells, coefs, const=0.0, g_col=None, h_col=None, group=0, index=(-1, -1)):
        r = len(b0)
        rows.extend([r] * len(cells)); cols.extend(cells); vals.extend(coefs)
        b0.append(const)
        grow, hrow = np.zeros(n), np.zeros(n)
        if g_col is not None:
            grow[g_col] = 1.0
        if h_col is not None:
            hrow[h_col] = 1.0
        G.append(grow); H.append(hrow); grp.append(group); idx.append(index)

    for g in groups:
        if g == 1:
            add(cell.ravel(), np.ones(n * n), const=1.0, group=1)
        elif g == 2:
            for j in keep:
                add(cell[:, j], np.ones(n), g_col=j, group=2, index=(-1, j))
        elif g == 3:
            for i in keep:
                for j in keep:
                    coefs = np.full(n, R[i, j])
                    coefs[j] -= 1.0
                    add(cell[i, :], coefs, group=3, index=(i, j))
        elif g == 4:
            for i in keep:
                add(cell[i, :], np.ones(n), h_col=i, group=4, index=(i, -1))
    A = sp.csr_matrix((vals, (rows, cols)), shape=(len(b0), n * n))
    A.eliminate_zeros()
    return GoverningSystem(A, np.asarray(b0, float), np.asarray(G), np.asarray(H),
                           np.asarray(grp, int), np.asarray(idx, int).reshape(-1, 2))


def system_rank(system: GoverningSystem, tol: float | None = None) -> int:
    """Numerical rank of the system matrix (SVD of the dense matrix; fine up to a few hundred classes).

    TypeError if ``system`` is not a :class:`GoverningSystem` (build one with :func:`governing_system`)."""
    if not isinstance(system, GoverningSystem):
        raise TypeError(f"system must be a GoverningSystem (from governing_system(val_table)), got "
                        f"{type(system).__name__}")
    return int(np.linalg.matrix_rank(system.A.toarray(), tol=tol))


def rank_summary(val_table) -> list[dict]:
    """Rows/rank of each group alone, of the pooled ``(n+1)²`` system and of LEAP's square system.

    Returns a list of dicts with keys ``system``, ``equations``, ``rank``, ``unknowns`` (for a
    pandas DataFrame in the governing-equations chapter).
    """
    full = governing_system(val_table)
    n = full.n_classes
    out = []
    for g, (eq, desc) in GROUPS.items():
        sub = full.select(full.group == g)
        out.append({"system": f"group {g} ({eq}: {desc})", "equations": sub.A.shape[0],
                    "rank": system_rank(sub), "unknowns": n * n})
    out.append({"system": "pooled, all four groups", "equations": full.A.shape[0],
                "rank": system_rank(full), "unknowns": n * n})
    leap = governing_system(val_table, drop_class=0)
    out.append({"system": "LEAP selection (class 0 dropped)", "equations": leap.A.shape[0],
                "rank": system_rank(leap), "unknowns": n * n})
    return out


# ---------------------------------------------------------------------------------------------
# Binary closed forms (LEAP 2025, Sects. 4.3 and 5.14). Class 1 is the positive class; all
# quantities are fractions of the sample. q_pos: prevalence of the positive class in U; gamma_pos:
# fraction of U predicted positive; tpr: true positive rate on V.
# ---------------------------------------------------------------------------------------------

def _binary_val(val_table):
    V = check_table(val_table, "val_table")
    if V.shape != (2, 2):
        raise ValueError(f"binary closed forms need a (2, 2) val_table, got {V.shape}")
    validation_rates(V)  # both classes must occur in V (else tpr or fpr is undefined)
    (tn, fp), (fn, tp) = V
    return tn, fp, fn, tp


def _fractions(**arrays):
    """Each argument as a finite float array in [0, 1] (ValueError naming it otherwise), broadcast together."""
    out = [check_finite_array(v, k, low=0.0, high=1.0) for k, v in arrays.items()]
    return np.broadcast_arrays(*out)


def binary_table_closed_form(tpr, gamma_pos, q_pos) -> np.ndarray:
    """LEAP_ACC's binary test table, Eq. 24, in the project convention; shape (..., 2, 2).

    ``TN = 1 - gamma + q (tpr - 1)``, ``FN = q (1 - tpr)``, ``FP = gamma - q tpr``, ``TP = q tpr``.
    Arguments are fractions in [0, 1] (ValueError naming the argument otherwise, NaN included) and
    broadcast. Cells may be negative when the inputs are inconsistent with each other (that is what
    the constrained solve of Sect. 4.5 fixes).
    """
    tpr, g, q = _fractions(tpr=tpr, gamma_pos=gamma_pos, q_pos=q_pos)
    tn, fn, fp, tp = 1 - g + q * (tpr - 1), q * (1 - tpr), g - q * tpr, q * tpr
    return np.stack([np.stack([tn, fp], -1), np.stack([fn, tp], -1)], -2)


def binary_accuracy_closed_form(tpr, gamma_pos, q_pos):
    """Accuracy of the Eq. 24 table, Eq. 26: ``1 + q (2 tpr - 1) - gamma``.

    Arguments are fractions in [0, 1] (ValueError otherwise). The value leaves [0, 1] only when the
    inputs are inconsistent with each other (the table of Eq. 24 then has negative cells).
    """
    tpr, g, q = _fractions(tpr=tpr, gamma_pos=gamma_pos, q_pos=q_pos)
    return (1 + q * (2 * tpr - 1) - g)[()]


def binary_accuracy_from_validation(val_table, gamma_pos):
    """Eq. 27: LEAP_ACC's accuracy from V's cells and gamma alone (q from ACC, Eq. 19).

    ``((gamma (TN+FP) - FP)(TP - FN)) / (TN TP - FP FN) + 1 - gamma``. Raises ``ValueError`` when
    ``TN TP = FP FN`` (tpr = fpr: ACC is undefined).
    """
    tn, fp, fn, tp = _binary_val(val_table)
    det = tn * tp - fp * fn
    if np.isclose(det, 0.0):
        raise ValueError("val_table has tpr == fpr (TN*TP == FP*FN): Eq. 27 is undefined")
    (g,) = _fractions(gamma_pos=gamma_pos)
    return (g * (tn + fp) - fp) * (tp - fn) / det + 1 - g


def binary_f1_closed_form(tpr, gamma_pos, q_pos):
    """F1 of the Eq. 24 table, Eq. 30: ``2 q tpr / (gamma + q)`` (1 where gamma + q = 0).

    Arguments are fractions in [0, 1] (ValueError otherwise)."""
    tpr, g, q = _fractions(tpr=tpr, gamma_pos=gamma_pos, q_pos=q_pos)
    out = np.ones(g.shape)
    np.divide(2 * q * tpr, g + q, out=out, where=(g + q) > 0)
    return out if out.ndim else float(out)


def binary_f1_from_validation(val_table, gamma_pos):
    """Eq. 30 with q from ACC (Eq. 19), written with V's cells as in Eq. 31 of the paper.

    See the governing-equations chapter for how this compares with the printed Eq. 31. ``q`` is
    clipped to [0, 1], as ACC's estimate is. Raises ValueError for a class absent from V, tpr == fpr,
    or ``gamma_pos`` outside [0, 1].
    """
    tn, fp, fn, tp = _binary_val(val_table)
    tpr, fpr = tp / (tp + fn), fp / (fp + tn)
    if np.isclose(tpr, fpr):
        raise ValueError("val_table has tpr == fpr: ACC (Eq. 19) is undefined")
    (g,) = _fractions(gamma_pos=gamma_pos)
    q = np.clip((g - fpr) / (tpr - fpr), 0.0, 1.0)
    return binary_f1_closed_form(tpr, g, q)

"""The LEAP family: S-LEAP, LEAP (LEAP_ACC / LEAP_KDEy) and O-LEAP (LEAP 2025, Sects. 4.2-4.5).

Each method estimates the test contingency table ``C_U`` (rows true, columns predicted, sums to 1;
the paper's Eq. 5 is its transpose) from the validation table ``C_V``, the observed predicted-class
fractions ``pred_prev`` (gamma, Eq. 10) and a quantifier's estimate ``est_prev`` (q-hat):

- S-LEAP (Sect. 4.2, Eq. 22): rescale each true-class row of ``C_V`` by ``q_i / p_i``.
- LEAP (Sect. 4.3): solve the square n² system of :func:`capshift.equations.governing_system`
  with the equations of class 0 dropped. If the solution has negative cells (beyond 1e-9), solve
  ``min ||A x - b||_2`` over the simplex instead (Sect. 4.5); the path taken is recorded per
  sample ("exact" / "constrained"). The square system is never singular when every class occurs
  in V: groups 1 and 4 fix every row sum, group 3 then fixes the cells ``C[i, j]`` with i, j >= 1,
  the row sums the cells ``C[i, 0]``, and group 2 the first row. (A singular *rate* matrix only
  affects the quantifier: ACC then relies on QuaPy's constrained solver, Bunse 2022.)
- O-LEAP (Sect. 4.5): the constrained least-squares solve over all ``(n+1)²`` equations.

The system matrix depends only on ``C_V``; :class:`TableSolver` builds it and its factorisation
(LU for the exact path, the constrained solver's workspace) once, then solves any number of
right-hand sides. Constrained solvers: ``"active_set"`` (default; exact active-set method on the
cached Gram matrix and its inverse, :mod:`capshift._qp`, batched over samples), ``"osqp"`` (sparse
quadratic program, OSQP called directly), ``"cvxpy"`` (the same problem as one cached cvxpy problem with a
parameter right-hand side, solved by OSQP: the paper's sparse variant, Sect. 5.12, as in the authors'
code) and ``"slsqp"`` (dense, ``scipy.optimize`` SLSQP, the paper's naive variant).
"""
from __future__ import annotations

import numpy as np
import osqp
import scipy.sparse as sp
from scipy.linalg import lu_factor, lu_solve
from scipy.optimize import minimize

from ._qp import SimplexActiveSet
from .base import CAPEstimator
from .conformal import RATES_INTERVALS
from .equations import governing_system, validation_rates
from .quantifiers import Quantifier, check_prevalence, fitted_quantifier
from .tables import check_table, true_prevalence

__all__ = ["TableSolver", "CvxpyReference", "sleap_table", "leap_table", "oleap_table", "SLEAP", "LEAP", "OLEAP", "SOLVERS",
           "check_solver"]

SOLVERS = ("active_set", "osqp", "cvxpy", "slsqp")
DEFAULT_SOLVER = "active_set"


def check_solver(solver, arg: str = "solver") -> str:
    """``solver`` if it is one of :data:`SOLVERS`; ValueError naming ``arg`` otherwise (the one check of a LEAP
    solver's name: the estimators, the runner and the grid call it)."""
    if not isinstance(solver, str) or solver not in SOLVERS:
        raise ValueError(f"{arg} must be one of {SOLVERS}, got {solver!r}")
    return solver
_NEG_TOL = 1e-9  # exact solutions with cells below -_NEG_TOL are infeasible


class CvxpyReference:
    """One cached cvxpy problem ``min ||A x - b||² s.t. x >= 0, sum x = 1`` with b a ``cp.Parameter``, as the LEAP
    authors' sparse implementation (LEAP 2025, Sect. 5.12): compiled once, solved per right-hand side.

    ``A``: (m, N) array or sparse matrix; ``solver``: a cvxpy solver name (``cp.OSQP``, the paper's, at
    tolerance 1e-9; ``cp.CLARABEL``, interior point at 1e-12, the high-accuracy reference). :meth:`solve` takes
    B (k, m) and returns (k, N); a right-hand side the solver fails on gives a row of NaN."""

    def __init__(self, A, solver):
        import cvxpy as cp  # only this solver and the benchmarks need cvxpy at run time

        self.x = cp.Variable(A.shape[1])
        self.b = cp.Parameter(A.shape[0])
        self.prob = cp.Problem(cp.Minimize(cp.sum_squares(A @ self.x - self.b)), [self.x >= 0, cp.sum(self.x) == 1])
        self.solver = solver
        self.kw = ({"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iter": 50000} if solver == cp.OSQP else
                   {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12})

    def solve(self, B):
        out = np.empty((len(B), self.x.shape[0]))
        for k, b in enumerate(B):
            self.b.value = b
            self.prob.solve(solver=self.solver, **self.kw)
            out[k] = np.nan if self.x.value is None else self.x.value
        return out


class _SimplexLSQ:
    """``argmin_{x in simplex} ||A x - b||²`` for a fixed A and many b.

    ``A`` should leave out Eq. 8 (sum of cells = 1): on the simplex its residual is 0 whatever x
    is, so the minimiser does not change, and without its dense row ``A^T A`` stays sparse
    (about 15x fewer non-zeros for 26 classes, 4x faster OSQP solves).
    """

    def __init__(self, A: sp.csr_matrix, solver: str):
        self.A, self.solver = A, solver
        self.N = A.shape[1]
        if solver == "osqp":
            P = sp.triu(2.0 * (A.T @ A)).tocsc()
            C = sp.vstack([sp.eye(self.N), np.ones((1, self.N))]).tocsc()
            lo = np.r_[np.zeros(self.N), 1.0]
            self.qp = osqp.OSQP()
            self.qp.setup(P, np.zeros(self.N), C, lo, np.ones(self.N + 1), verbose=False, polishing=True,
                          eps_abs=1e-9, eps_rel=1e-9, max_iter=50000)
        elif solver == "cvxpy":  # the authors' sparse implementation: one cached cvxpy problem, OSQP
            self.ref = CvxpyReference(A, "OSQP")
        elif solver == "slsqp":
            self.Ad = A.toarray()
        else:
            raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")

    def solve(self, b: np.ndarray) -> np.ndarray:
        x0 = np.full(self.N, 1.0 / self.N)
        if self.solver == "osqp":
            self.qp.update(q=-2.0 * (self.A.T @ b))
            self.qp.warm_start(x=x0, y=np.zeros(self.N + 1))  # independent of the previous sample
            x = self.qp.solve(raise_error=False).x
            if x is None or not np.all(np.isfinite(x)):
                raise RuntimeError("OSQP failed on the constrained LEAP problem; try solver='slsqp'")
        elif self.solver == "cvxpy":
            x = self.ref.solve(b[None])[0]
            if not np.all(np.isfinite(x)):
                raise RuntimeError("cvxpy + OSQP failed on the constrained LEAP problem; try solver='active_set'")
        else:
            Ad = self.Ad
            res = minimize(lambda x: np.sum((Ad @ x - b) ** 2), x0, jac=lambda x: 2 * Ad.T @ (Ad @ x - b),
                           method="SLSQP", bounds=[(0.0, 1.0)] * self.N,
                           constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0,
                                         "jac": lambda x: np.ones_like(x)}],
                           options={"ftol": 1e-14, "maxiter": 1000})
            x = res.x
        x = np.clip(x, 0.0, None)
        return x / x.sum()


class TableSolver:
    """Solve the LEAP or O-LEAP system of one validation table for many test samples.

    Parameters
    ----------
    val_table : array-like, shape (n, n)
        Validation contingency table (every class present).
    method : {"leap", "oleap"}
        ``"leap"``: square system without class 0, exact solve with constrained fallback;
        ``"oleap"``: constrained solve over all ``(n+1)²`` equations.
    solver : {"active_set", "osqp", "cvxpy", "slsqp"}
        Constrained solver: capshift's exact active-set method (default), sparse OSQP, cvxpy + OSQP
        (the paper's sparse variant) or the paper's dense SLSQP.

    Raises
    ------
    ValueError
        Invalid table, a class absent from V, unknown method or solver.
    """

    def __init__(self, val_table, method: str = "leap", solver: str = DEFAULT_SOLVER):
        if method not in ("leap", "oleap"):
            raise ValueError(f"method must be 'leap' or 'oleap', got {method!r}")
        self.method, self.solver = method, solver
        self.system = governing_system(val_table, drop_class=0 if method == "leap" else None)
        self.n = self.system.n_classes
        check_solver(solver)
        # LU factorisation once per validation table (the square LEAP system is invertible, see above)
        self.lu = lu_factor(self.system.A.toarray()) if method == "leap" else None
        self._lsq = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_lsq"] = None  # the OSQP / cvxpy workspaces do not pickle; rebuilt on first use
        return state

    def _constrained(self, B):
        """Constrained minimisers for the right-hand sides B, shape (k, m) -> (k, n²)."""
        if self._lsq is None:  # built lazily: LEAP often never needs it
            if self.solver == "active_set":  # keeps Eq. 8: it makes A^T A positive definite
                self._sum_row = np.zeros(len(self.system.group), dtype=bool)
                self._lsq = SimplexActiveSet(self.system.A)
            else:
                self._sum_row = self.system.group == 1
                self._lsq = _SimplexLSQ(self.system.A[~self._sum_row], self.solver)
        B = B[:, ~self._sum_row]
        if self.solver == "active_set":
            return self._lsq.solve(B)
        return np.stack([self._lsq.solve(b) for b in B]) if len(B) else np.empty((0, self.n * self.n))

    def solve(self, pred_prev, est_prev):
        """Estimated tables and the path taken per sample.

        ``pred_prev``, ``est_prev``: shape (n,) or (k, n). Returns ``(tables, paths)`` with tables
        of shape (k, n, n) (cells >= 0, summing to 1) and ``paths`` a (k,) array of "exact" /
        "constrained".
        """
        g = np.atleast_2d(check_prevalence(pred_prev, self.n, "pred_prev"))
        q = np.atleast_2d(check_prevalence(est_prev, self.n, "est_prev"))
        B = self.system.rhs(g, q)
        X = np.empty((B.shape[0], self.n * self.n))
        paths = np.full(B.shape[0], "constrained", dtype=object)
        if self.lu is not None:
            X[:] = lu_solve(self.lu, B.T).T
            ok = X.min(axis=1) >= -_NEG_TOL
            paths[ok] = "exact"
        else:
            ok = np.zeros(B.shape[0], dtype=bool)
        if not ok.all():
            X[~ok] = self._constrained(B[~ok])
        X = np.clip(X, 0.0, None)
        X /= X.sum(axis=1, keepdims=True)
        return X.reshape(-1, self.n, self.n), paths


def sleap_table(val_table, est_prev) -> np.ndarray:
    """S-LEAP (LEAP 2025, Sect. 4.2, Eq. 22): ``C_U[i, j] = C_V[i, j] * q_i / p_i``.

    Parameters
    ----------
    val_table : array-like, shape (n, n)
        Validation table; p = its row sums (every class must be present).
    est_prev : array-like, shape (n,) or (k, n)
        Estimated test prevalence q-hat (sums to 1).

    Returns
    -------
    ndarray, shape (n, n) or (k, n, n)
        The rescaled table(s), summing to 1.
    """
    V = check_table(val_table, "val_table")
    p = true_prevalence(V)
    if np.any(p <= 0):
        raise ValueError(f"val_table has no items of class(es) {np.flatnonzero(p <= 0).tolist()}: "
                         "S-LEAP cannot rescale an empty row")
    q = check_prevalence(est_prev, V.shape[0], "est_prev")
    return V * (q / p)[..., :, None]


def leap_table(val_table, pred_prev, est_prev, solver: str = DEFAULT_SOLVER, return_path: bool = False):
    """LEAP (Sect. 4.3): the square system without class 0, exact or constrained (Sect. 4.5).

    Shapes as :meth:`TableSolver.solve`; returns an (n, n) table for 1-d inputs, (k, n, n) for
    batches, plus the path(s) if ``return_path``. For repeated calls build a :class:`TableSolver`.
    """
    tables, paths = TableSolver(val_table, "leap", solver).solve(pred_prev, est_prev)
    return _unbatch(tables, paths, np.ndim(est_prev) == 1, return_path)


def oleap_table(val_table, pred_prev, est_prev, solver: str = DEFAULT_SOLVER) -> np.ndarray:
    """O-LEAP (Sect. 4.5): ``argmin ||A x - b||_2`` over the simplex, all ``(n+1)²`` equations."""
    tables, paths = TableSolver(val_table, "oleap", solver).solve(pred_prev, est_prev)
    return _unbatch(tables, paths, np.ndim(est_prev) == 1, False)


def _unbatch(tables, paths, single, return_path):
    out = (tables[0], paths[0]) if single else (tables, paths)
    return out if return_path else out[0]


class _LEAPEstimator(CAPEstimator):
    """Shared fit/predict of the LEAP family: a quantifier, then a table from (gamma, q-hat)."""

    _method = None  # "sleap", "leap" or "oleap"
    shared_prevalence_path = True
    #: ``predict_interval``'s construction: the "rates" scheme (see :data:`capshift.conformal.RATES_INTERVALS`)
    interval_params = dict(RATES_INTERVALS)

    def __init__(self, classifier, quantifier="kdey", measure="accuracy", solver=DEFAULT_SOLVER, random_state=None):
        super().__init__(classifier, measure=measure, random_state=random_state)
        self.quantifier = quantifier
        self.solver = solver

    #: What each named quantifier reads from h (:meth:`reads_from_h`): ACC and CC count h's decisions (a constant
    #: h makes ACC's rate matrix singular and CC's count a vertex); SLD and KDEy-h read h's posteriors (one-hot or
    #: constant posteriors carry no confidence). "kdey" (a surrogate on x) and "oracle" read nothing of h.
    _READS = {"acc": ("decisions",), "cc": ("decisions",), "sld": ("confidence",), "kdey-h": ("confidence",)}

    def evidence(self) -> tuple[int, str]:
        """The quantifier's need (:attr:`capshift.quantifiers.Quantifier.min_per_class`): 5 items of every class
        for "kdey" (5-fold cross-validated surrogate posteriors), else 1."""
        q = self.quantifier if isinstance(self.quantifier, Quantifier) else Quantifier(self.quantifier)
        if q.is_fitted or q.min_per_class <= 1:
            return 1, self.evidence_reason
        return q.min_per_class, f"its quantifier's posteriors on V are cross-validated in {q.min_per_class} stratified folds"

    def reads_from_h(self) -> tuple:
        q = self.quantifier.method if isinstance(self.quantifier, Quantifier) else self.quantifier
        return self._READS.get(q.lower(), ()) if isinstance(q, str) else ()

    def _fit(self, X_val, y_val):
        check_solver(self.solver)
        # a fitted capshift Quantifier can be shared between methods; fit() warned under the method's name
        self.quantifier_ = fitted_quantifier(self.quantifier, self.classifier, self.random_state, X_val, y_val,
                                             self.n_classes_)
        if self._method == "sleap":
            validation_rates(self.val_table_)  # every class must occur in V (else: a clear error now)
            self.solver_ = None
        else:
            self.solver_ = TableSolver(self.val_table_, self._method, self.solver)

    def _predict_tables(self, samples, prevalences, posteriors=None):
        # batched: h and the quantifier's surrogate classify all items at once, KDEy's densities in one pass
        g = self._pred_prevs(samples)
        q = self.quantifier_.quantify_batch(samples, prevalences)
        return self.tables_from_prevalences(g, q)

    def tables_from_prevalences(self, pred_prev, est_prev) -> np.ndarray:
        """Tables (k, n, n) from precomputed gamma and q-hat, each (k, n); sets ``paths_``.

        This is what the experiment runner calls, so that the classifier's predictions and the
        quantifier's estimate of a sample are computed once and shared by every method.
        """
        self._check_fitted()
        n = self.n_classes_
        est_prev = np.atleast_2d(check_prevalence(est_prev, n, "est_prev"))
        pred_prev = np.atleast_2d(check_prevalence(pred_prev, n, "pred_prev"))
        if pred_prev.shape != est_prev.shape:
            raise ValueError(f"pred_prev and est_prev must have the same shape (k, {n}), got {pred_prev.shape} "
                             f"and {est_prev.shape}")
        if self.solver_ is None:
            tables = sleap_table(self.val_table_, est_prev)
            self.paths_ = np.full(len(tables), "scaling", dtype=object)
            return tables
        tables, self.paths_ = self.solver_.solve(pred_prev, est_prev)
        return tables


class SLEAP(_LEAPEstimator):
    """S-LEAP (LEAP 2025, Sect. 4.2): rescale V's table by q-hat / p (Eq. 22). ``solver`` is unused.

    Parameters are those of :class:`LEAP`.
    """

    _method = "sleap"


class LEAP(_LEAPEstimator):
    """LEAP_ACC / LEAP_KDEy (LEAP 2025, Sects. 4.3-4.4): square system of n² governing equations.

    Parameters
    ----------
    classifier : fitted scikit-learn classifier over classes 0..n-1
        The classifier h (never refitted).
    quantifier : str, quapy AggregativeQuantifier or capshift Quantifier
        Estimator of the test prevalence (Eq. 21): "acc" (LEAP_ACC), "kdey" (LEAP_KDEy, default: KDEy-ML on
        a surrogate MLP), "kdey-h" (KDEy-ML on h's own posteriors), "cc", "sld", "oracle" (true prevalence
        passed to predict), or an instance.
    measure : str
        Default measure of ``predict`` (any name of :data:`capshift.tables.MEASURES`).
    solver : {"active_set", "osqp", "cvxpy", "slsqp"}
        Solver of the constrained fallback (Sect. 4.5); see :class:`TableSolver`.
    random_state : int or None
        Seed of the quantifier's surrogate classifier.

    Degenerate classifiers and minimum evidence (checked by ``fit``; issue 23). "acc" and "cc" count h's decisions:
    if h predicts a single class on V, ACC's rate matrix is singular and CC's count is a vertex, so the estimate
    cannot be trusted (:class:`capshift.DegenerateClassifierWarning`). "sld" and "kdey-h" read h's posteriors: if
    they are one-hot (or identical) on every item of V, they carry no confidence and the estimate cannot be
    trusted (the same warning). "kdey" (a surrogate classifier on x) and "oracle" read nothing of h and still
    work: the equations then give column h(x) = q-hat. "kdey" needs 5 validation items of every class (its
    surrogate's posteriors are 5-fold cross-validated): below that it warns
    (:class:`capshift.InsufficientEvidenceWarning`), and with 1 item it refuses (ValueError).

    Attributes
    ----------
    val_table_ : (n, n) validation table; ``quantifier_``; ``solver_`` (:class:`TableSolver`);
    ``paths_`` : path taken ("exact"/"constrained") for each sample of the last prediction.
    """

    _method = "leap"


class OLEAP(_LEAPEstimator):
    """O-LEAP (LEAP 2025, Sect. 4.5): constrained least squares over all (n+1)² equations.

    Parameters are those of :class:`LEAP`.
    """

    _method = "oleap"

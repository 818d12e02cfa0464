"""Timing and accuracy of the constrained LEAP / O-LEAP solve against cvxpy references (issue 12).

Used by ``benchmarks/bench_leap_qp.py`` and the efficiency chapter. For each number of classes n:
a validation table, k inconsistent (gamma, q-hat) pairs, and the per-sample time of

- capshift: ``TableSolver(C_V, method).solve(G, Q)`` (default solver, batched);
- cvxpy + OSQP: one cached ``cp.Problem`` with a ``cp.Parameter`` right-hand side, solved with
  ``solver=cp.OSQP`` for each sample (as the authors' sparse implementation, LEAP 2025 Sect. 5.12);
- cvxpy + Clarabel: the same cached problem, interior point, high accuracy (the reference optimum).

Ratios are reference time / capshift time, measured in one process. The objective is
``||A x - b||²`` over the solver's full system, after clipping every solution to the simplex;
"gap" is the largest ``(f_capshift - f_clarabel) / (1 + f_clarabel)`` (negative: capshift lower).
Build times (factorisations, cvxpy compilation) are reported apart (``setup_s``), not in the
per-sample times; capshift's time is the best of ``reps`` runs of the batch, each reference is timed once.
"""
from __future__ import annotations

import time

import cvxpy as cp
import numpy as np
import pandas as pd

from .leap import TableSolver

__all__ = ["random_table", "inconsistent_prevalences", "CvxpyReference", "objective", "run"]


def random_table(n, rng, kind="random"):
    """A validation table: random plus ``n`` on the diagonal; "sparse" empties half the off-diagonal cells."""
    V = rng.random((n, n)) + n * np.eye(n)
    if kind == "sparse":
        V *= (rng.random((n, n)) < 0.5) | np.eye(n, dtype=bool)
    return V / V.sum()


def inconsistent_prevalences(n, k, rng):
    """k independent uniform (gamma, q-hat) pairs: almost never consistent with PPS."""
    return rng.dirichlet(np.ones(n), k), rng.dirichlet(np.ones(n), k)


class CvxpyReference:
    """One cached cvxpy problem ``min ||A x - b||² s.t. x >= 0, sum x = 1`` with b a Parameter."""

    def __init__(self, A, solver):
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


def objective(A, X, B):
    """``||A x - b||²`` per row, after clipping to >= 0 and renormalising (as capshift returns its
    tables): interior-point solutions can be 1e-9 outside the simplex, which lowers the objective."""
    X = np.clip(X, 0.0, None)
    X = X / X.sum(axis=1, keepdims=True)
    return ((X @ A.T - B) ** 2).sum(axis=1)


def time_per_sample(fn, reps=1):
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run(classes, samples, method="oleap", tables="random", seed=0, osqp_samples=None, reps=3,
        clarabel=True, verbose=True) -> pd.DataFrame:
    """One row per n: per-sample times (ms), ratios, objective gaps, cell checks, setup time.

    ``tables``: "random" (diagonal-heavy random) or "sparse" (half the off-diagonal cells
    empty); ``osqp_samples``: time the references on the first k samples only (slow at large n);
    ``reps``: capshift's time is the best of ``reps`` runs of the batch.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for n in classes:
        V = random_table(n, rng, tables)
        G, Q = inconsistent_prevalences(n, samples, rng)
        t0 = time.perf_counter()
        ts = TableSolver(V, method)
        ts.solve(G[:1], Q[:1])  # builds the constrained workspace (lazy)
        setup = time.perf_counter() - t0
        A = ts.system.A.toarray()
        B = ts.system.rhs(G, Q)
        t_cap, (T, paths) = time_per_sample(lambda: ts.solve(G, Q), reps)
        X = T.reshape(len(B), -1)
        k_ref = min(samples, osqp_samples or samples)
        ref_osqp = CvxpyReference(A, cp.OSQP)
        ref_osqp.solve(B[:1])  # compile once (the cached problem)
        t_osqp, X_osqp = time_per_sample(lambda: ref_osqp.solve(B[:k_ref]))
        if clarabel:
            ref_cla = CvxpyReference(A, cp.CLARABEL)
            ref_cla.solve(B[:1])
            t_cla, X_cla = time_per_sample(lambda: ref_cla.solve(B[:k_ref]))
        else:
            t_cla, X_cla = np.nan, X_osqp
        f_cap, f_cla, f_osqp = objective(A, X[:k_ref], B[:k_ref]), objective(A, X_cla, B[:k_ref]), objective(A, X_osqp, B[:k_ref])
        rows.append({
            "n": n, "samples": samples, "constrained": int(np.sum(paths == "constrained")),
            "osqp_ms": 1e3 * t_osqp / k_ref, "clarabel_ms": 1e3 * t_cla / k_ref,
            "capshift_ms": 1e3 * t_cap / samples,
            "ratio_osqp": (t_osqp / k_ref) / (t_cap / samples), "ratio_clarabel": (t_cla / k_ref) / (t_cap / samples),
            "gap": float(np.max((f_cap - f_cla) / (1 + f_cla))),
            "osqp_gap": float(np.max((f_osqp - f_cla) / (1 + f_cla))),
            "min_cell": float(T.min()), "max_sum_err": float(np.abs(T.sum((1, 2)) - 1).max()),
            "setup_s": setup,
        })
        if verbose:
            print(pd.DataFrame(rows[-1:]).to_string(index=False, header=len(rows) == 1, float_format="%.3g"), flush=True)
    return pd.DataFrame(rows)

"""The efficiency chapter's measurements: the constrained LEAP / O-LEAP solve against cvxpy references, and
LEAP 2025's Figure 5 (inference time per test sample).

Used by the efficiency chapter (book ``efficiency.md``) and ``benchmarks/bench_leap_qp.py``. For each number of classes n:
a validation table, k inconsistent (gamma, q-hat) pairs, and the per-sample time of

- capshift: ``TableSolver(C_V, method).solve(G, Q)`` (default solver, batched);
- cvxpy + OSQP: one cached ``cp.Problem`` with a ``cp.Parameter`` right-hand side, solved with
  ``solver=cp.OSQP`` for each sample (as the authors' sparse implementation, LEAP 2025 Sect. 5.12);
- cvxpy + Clarabel: the same cached problem, interior point, high accuracy (the reference optimum).

Ratios are reference time / capshift time, measured in one process. The objective is
``||A x - b||²`` over the solver's full system, after clipping every solution to the simplex;
"gap" is the largest ``(f_capshift - f_clarabel) / (1 + f_clarabel)`` (negative: capshift lower), "abs_gap"
the largest absolute value of it.
Build times (factorisations, cvxpy compilation) are reported apart (``setup_s``), not in the
per-sample times. Every timing is taken warm (:func:`time_per_sample`): each solver first solves the same
batch once untimed (capshift) or its first right-hand side (the cvxpy references, whose first call compiles
the problem), then the batch is timed ``reps`` times and the median is kept; a reference stops repeating once
its repeats have taken ``budget`` seconds (a slow reference at large n is timed once).

:func:`inference_times` measures LEAP 2025's Figure 5 (Sect. 5.12): per-sample inference time of ATC, DoC,
S-LEAP, LEAP and O-LEAP (KDEy) on real datasets, the LEAP variants with the paper's dense (SLSQP) and sparse
(cvxpy + OSQP) solvers on QuaPy's KDEy inference, and with capshift's KDEy backend and solver.
"""
from __future__ import annotations

import time
import warnings

import cvxpy as cp
import numpy as np
import pandas as pd

from . import evaluation, registry
from .leap import CvxpyReference, TableSolver
from .quantifiers import Quantifier

__all__ = ["random_table", "inconsistent_prevalences", "CvxpyReference", "objective", "run", "inference_times",
           "FIGURE5_VARIANTS"]

#: Figure 5's methods: (label, registry name, KDEy backend, solver); None: the method has neither.
FIGURE5_VARIANTS = [
    ("ATC", "ATC", None, None), ("DoC", "DoC", None, None),
    ("S-LEAP", "S-LEAP_KDEy", "quapy", None),
    ("LEAP dense", "LEAP_KDEy", "quapy", "slsqp"), ("O-LEAP dense", "O-LEAP_KDEy", "quapy", "slsqp"),
    ("LEAP sparse", "LEAP_KDEy", "quapy", "cvxpy"), ("O-LEAP sparse", "O-LEAP_KDEy", "quapy", "cvxpy"),
    ("S-LEAP capshift", "S-LEAP_KDEy", "capshift", None),
    ("LEAP capshift", "LEAP_KDEy", "capshift", "active_set"), ("O-LEAP capshift", "O-LEAP_KDEy", "capshift", "active_set"),
]


def random_table(n, rng, kind="random"):
    """A validation table: random plus ``n`` on the diagonal; "sparse" empties half the off-diagonal cells."""
    V = rng.random((n, n)) + n * np.eye(n)
    if kind == "sparse":
        V *= (rng.random((n, n)) < 0.5) | np.eye(n, dtype=bool)
    return V / V.sum()


def inconsistent_prevalences(n, k, rng):
    """k independent uniform (gamma, q-hat) pairs: almost never consistent with PPS."""
    return rng.dirichlet(np.ones(n), k), rng.dirichlet(np.ones(n), k)


def objective(A, X, B):
    """``||A x - b||²`` per row, after clipping to >= 0 and renormalising (as capshift returns its
    tables): interior-point solutions can be 1e-9 outside the simplex, which lowers the objective."""
    X = np.clip(X, 0.0, None)
    X = X / X.sum(axis=1, keepdims=True)
    return ((X @ A.T - B) ** 2).sum(axis=1)


def time_per_sample(fn, reps=3, warmup=True, budget=np.inf):
    """``(seconds, output)`` of ``fn()``: the median of up to ``reps`` timed calls, after one untimed call when
    ``warmup`` (first-call costs: caches, lazy imports, memory); no more repeats once the timed calls have taken
    ``budget`` seconds in all (at least one is timed)."""
    out = fn() if warmup else None
    times = []
    for _ in range(max(1, int(reps))):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        if sum(times) >= budget:
            break
    return float(np.median(times)), out


def _workspace_bytes(ts) -> int:
    """Bytes of the arrays a TableSolver keeps for its constrained solves (dense Gram matrix, inverse, ...)."""
    seen = ts._lsq.__dict__.values() if ts._lsq is not None else []
    total = 0
    for a in seen:
        if isinstance(a, np.ndarray):
            total += a.nbytes
        elif hasattr(a, "data") and hasattr(a, "indices"):  # scipy sparse (CSR)
            total += a.data.nbytes + a.indices.nbytes + a.indptr.nbytes
    return total


def run(classes, samples, method="oleap", tables="random", seed=0, osqp_samples=None, reps=3,
        clarabel=True, verbose=True, budget=1.0) -> pd.DataFrame:
    """One row per n: per-sample times (ms), ratios, objective gaps, cell checks, setup time, memory.

    Memory: ``capshift_MB`` is what capshift's constrained solver keeps per fitted estimator (dense
    ``O(n^4)`` arrays plus the sparse A), ``sparse_MB`` the CSR storage of A alone (``O(n^3)`` non-zeros, what
    a sparse solver starts from), ``nnz_A`` its non-zeros.

    ``tables``: "random" (diagonal-heavy random) or "sparse" (half the off-diagonal cells
    empty); ``osqp_samples``: time the references on the first k samples only (slow at large n);
    ``reps``: each time is the median of ``reps`` timed runs of the batch, after an untimed warm-up run
    (:func:`time_per_sample`); ``budget``: a reference's repeats stop once they have taken that many seconds.
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
        t_cap, (T, paths) = time_per_sample(lambda: ts.solve(G, Q), reps)  # warm: the batch once untimed
        X = T.reshape(len(B), -1)
        k_ref = min(samples, osqp_samples or samples)
        ref_osqp = CvxpyReference(A, cp.OSQP)
        ref_osqp.solve(B[:1])  # compile once (the cached problem) and warm up
        t_osqp, X_osqp = time_per_sample(lambda: ref_osqp.solve(B[:k_ref]), reps, warmup=False, budget=budget)
        if clarabel:
            ref_cla = CvxpyReference(A, cp.CLARABEL)
            ref_cla.solve(B[:1])
            t_cla, X_cla = time_per_sample(lambda: ref_cla.solve(B[:k_ref]), reps, warmup=False, budget=budget)
        else:
            t_cla, X_cla = np.nan, X_osqp
        f_cap, f_cla, f_osqp = objective(A, X[:k_ref], B[:k_ref]), objective(A, X_cla, B[:k_ref]), objective(A, X_osqp, B[:k_ref])
        rows.append({
            "n": n, "samples": samples, "constrained": int(np.sum(paths == "constrained")),
            "osqp_ms": 1e3 * t_osqp / k_ref, "clarabel_ms": 1e3 * t_cla / k_ref,
            "capshift_ms": 1e3 * t_cap / samples,
            "ratio_osqp": (t_osqp / k_ref) / (t_cap / samples), "ratio_clarabel": (t_cla / k_ref) / (t_cap / samples),
            "gap": float(np.max((f_cap - f_cla) / (1 + f_cla))),
            "abs_gap": float(np.max(np.abs(f_cap - f_cla) / (1 + f_cla))),
            "osqp_gap": float(np.max((f_osqp - f_cla) / (1 + f_cla))),
            "min_cell": float(T.min()), "max_sum_err": float(np.abs(T.sum((1, 2)) - 1).max()),
            "setup_s": setup, "capshift_MB": _workspace_bytes(ts) / 1e6,
            "sparse_MB": (ts.system.A.nnz * 12 + 4 * (ts.system.A.shape[0] + 1)) / 1e6, "nnz_A": ts.system.A.nnz,
        })
        if verbose:
            print(pd.DataFrame(rows[-1:]).to_string(index=False, header=len(rows) == 1, float_format="%.3g"), flush=True)
    return pd.DataFrame(rows)


def inference_times(names, n_samples=10, sample_size=100, seed=0, dense_max_n=15, variants=None, repeats=3,
                    verbose=False, budget=2.0) -> pd.DataFrame:
    """LEAP 2025 Figure 5: inference time per test sample of each method on each dataset (tidy frame).

    For each dataset of ``names`` (offline :mod:`capshift.datasets` keys): LR trained on L, one KDEy-ML
    quantifier fitted on V and shared by every LEAP variant (its inference switched between QuaPy's and
    capshift's backend with :meth:`~capshift.quantifiers.Quantifier.set_kdey_backend`), every method of
    ``variants`` (default :data:`FIGURE5_VARIANTS`) fitted on V, then ``predict_batch`` on ``n_samples`` UPP
    samples of ``sample_size`` items, timed as a whole (classifier, quantifier and solve; the solver's
    workspace is built before timing, as it is once per fit, by an untimed prediction of the first sample;
    median of up to ``repeats`` timed runs, fewer once they have taken ``budget`` seconds). Dense (SLSQP) variants are skipped above
    ``dense_max_n`` classes (minutes per sample). Columns: dataset, n, method, ms (per sample), and
    ``max_diff``: the largest |difference| of a LEAP variant's accuracy estimates from the same method's
    capshift variant (solver tolerances and QuaPy's SLSQP in the quantifier).
    """
    variants = FIGURE5_VARIANTS if variants is None else variants
    rows = []
    for name in names:
        ctx = evaluation.prepare(name, "lr", [], "upp", n_samples, sample_size, seed)
        split, h, n, samples = ctx.split, ctx.h, ctx.split.n_classes, ctx.samples()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the paper's scale: KDEy on all of V (no subsample of a large V), for every variant alike
            quant = Quantifier("kdey", random_state=seed, max_fit_items=None).fit(split.X_V, split.y_V, n)
        estimates = {}
        for label, method, backend, solver in variants:
            if solver == "slsqp" and n > dense_max_n:
                continue
            kw = {} if backend is None else {"quantifier": quant}
            if solver is not None:  # None: the method has no solver (or keeps its default, "active_set")
                kw["solver"] = solver
            if backend is not None:
                quant.set_kdey_backend(backend)
            est = registry.make_method(method, h, random_state=seed, **kw)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(split.X_V, split.y_V)
                est.predict_batch(samples[:1])  # per-fit work (solver workspace) and warm-up outside the timing
                seconds, estimates[label] = time_per_sample(lambda: est.predict_batch(samples), repeats,
                                                            warmup=False, budget=budget)
                ms = 1e3 * seconds / len(samples)
            rows.append({"dataset": name, "n": n, "method": label, "ms": ms})
            if verbose:
                print(rows[-1], flush=True)
        for row in rows:
            if row["dataset"] == name:
                base = row["method"].split(" ")[0] + " capshift"
                same = base in estimates and row["method"] in estimates and base != row["method"]
                row["max_diff"] = float(np.abs(estimates[row["method"]] - estimates[base]).max()) if same else np.nan
    quant.set_kdey_backend("capshift")
    return pd.DataFrame(rows)

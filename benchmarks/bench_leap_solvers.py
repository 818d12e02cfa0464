"""Benchmark: sparse OSQP vs the paper's dense SLSQP solve of LEAP / O-LEAP (LEAP 2025, Sect. 5.12).

Times ``TableSolver.solve`` per test sample for random validation tables and inconsistent
(gamma, q-hat) pairs (so LEAP takes the constrained path), in one process, and reports the
dense/sparse time ratio and the largest difference between the two solutions.

    .venv/bin/python benchmarks/bench_leap_solvers.py [--classes 2 3 5 10 20] [--samples 20]
"""
import argparse
import time

import numpy as np

from capshift.leap import TableSolver


def per_sample_seconds(solver, G, Q):
    t0 = time.perf_counter()
    tables, _ = solver.solve(G, Q)
    return (time.perf_counter() - t0) / len(G), tables


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", type=int, nargs="+", default=[2, 3, 5, 10, 20])
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{'n':>3} {'method':>6} {'sparse s/sample':>16} {'dense s/sample':>15} {'dense/sparse':>12} {'max |diff|':>11}")
    for n in args.classes:
        V = rng.random((n, n)) + n * np.eye(n)
        V /= V.sum()
        G, Q = rng.dirichlet(np.ones(n), args.samples), rng.dirichlet(np.ones(n), args.samples)
        for method in ("leap", "oleap"):
            ts, tab_s = per_sample_seconds(TableSolver(V, method, "osqp"), G, Q)
            td, tab_d = per_sample_seconds(TableSolver(V, method, "slsqp"), G, Q)
            print(f"{n:>3} {method:>6} {ts:>16.5f} {td:>15.5f} {td / ts:>12.1f} {np.abs(tab_s - tab_d).max():>11.1e}")


if __name__ == "__main__":
    main()

"""Benchmark: capshift's constrained LEAP / O-LEAP solve vs a cached cvxpy + OSQP problem (issue 12).

For each number of classes n, a validation table and k inconsistent (gamma, q-hat) pairs, the
per-sample time of

- capshift: ``TableSolver(C_V, method).solve(G, Q)`` (default solver, batched);
- cvxpy + OSQP: one ``cp.Problem`` with a ``cp.Parameter`` right-hand side, solved with
  ``solver=cp.OSQP`` for each sample (as the authors' sparse implementation, LEAP 2025 Sect. 5.12);
- cvxpy + Clarabel: the same cached problem, interior point, high accuracy (the reference optimum).

All in one process; ratios = reference time / capshift time. The objective is ``||A x - b||²``
over the solver's full system; "gap" is the largest ``(f_capshift - f_clarabel) / (1 + f_clarabel)``
(negative: capshift lower), also given for OSQP. Build (setup) times are not included in the
per-sample times. Tables: ``--tables random`` (diagonal-heavy random, as bench_leap_solvers.py) or
``sparse`` (about half of the off-diagonal cells empty, as a real confusion matrix with many classes).

    .venv/bin/python benchmarks/bench_leap_qp.py [--classes 2 3 ... 26 50] [--samples 100]
        [--method oleap|leap] [--tables random|sparse] [--csv out.csv]
"""
from __future__ import annotations

import argparse

from capshift.efficiency import run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", type=int, nargs="+", default=list(range(2, 27)) + [50])
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--osqp-samples", type=int, default=None, help="fewer reference solves (slow at large n)")
    ap.add_argument("--method", choices=["oleap", "leap"], default="oleap")
    ap.add_argument("--tables", choices=["random", "sparse"], default="random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    df = run(args.classes, args.samples, args.method, args.tables, args.seed, args.osqp_samples)
    if args.csv:
        df.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()

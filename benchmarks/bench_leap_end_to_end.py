"""Benchmark: end-to-end O-LEAP_KDEy inference per test sample on offline datasets (issue 12).

For each dataset: LR trained on L, ``OLEAP(h, quantifier="kdey")`` fitted on V once, then
``predict_batch`` on UPP samples of U (LEAP 2025 Sect. 5.2), timed per sample and split into the
classifier + quantifier part (``quantifier_.quantify``) and the table solve, for capshift's default
solver and for OSQP. Everything in one process.

    .venv/bin/python benchmarks/bench_leap_end_to_end.py [--datasets cmc satellite hand-digits letter]
        [--samples 50] [--sample-size 100]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from capshift import datasets, experiment
from capshift.leap import OLEAP
from capshift.protocols import upp_indices


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cmc", "satellite", "hand-digits", "letter"])
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--sample-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = []
    for name in args.datasets:
        split = datasets.load(name, seed=args.seed)
        h = experiment.make_classifier("lr").fit(split.X_L, split.y_L)
        idx = upp_indices(split.y_U, args.sample_size, args.samples, args.seed)
        samples = [split.X_U[i] for i in idx]
        row = {"dataset": name, "n": int(h.classes_.size), "|V|": len(split.y_V)}
        for solver in ("active_set", "osqp"):
            t0 = time.perf_counter()
            est = OLEAP(h, quantifier="kdey", solver=solver, random_state=0).fit(split.X_V, split.y_V)
            est.predict_batch(samples[:1])  # builds the solver's workspace
            fit = time.perf_counter() - t0
            t0 = time.perf_counter()
            acc = est.predict_batch(samples)
            total = (time.perf_counter() - t0) / len(samples)
            g = np.stack([est._pred_prev(X) for X in samples])
            t0 = time.perf_counter()
            q = np.stack([est.quantifier_.quantify(X) for X in samples])
            quant = (time.perf_counter() - t0) / len(samples)
            t0 = time.perf_counter()
            est.tables_from_prevalences(g, q)
            solve = (time.perf_counter() - t0) / len(samples)
            row |= {f"{solver}_ms": 1e3 * total, f"{solver}_solve_ms": 1e3 * solve, f"{solver}_fit_s": fit}
            row["quantify_ms"] = 1e3 * quant
            row.setdefault("acc", acc)
        row["same_estimates"] = bool(np.allclose(row.pop("acc"), est.predict_batch(samples), atol=1e-6))
        rows.append(row)
        print(pd.DataFrame(rows[-1:]).to_string(index=False, header=len(rows) == 1, float_format="%.3g"), flush=True)


if __name__ == "__main__":
    main()

"""Benchmark: end-to-end O-LEAP_KDEy inference per test sample on offline datasets (issue 12).

For each dataset: LR trained on L, one KDEy-ML quantifier fitted on V (QuaPy's ``KDEyML``), then
``OLEAP(h, quantifier=...).predict_batch`` on UPP samples of U (LEAP 2025 Sect. 5.2), timed per sample, for

- ``quapy+osqp``: QuaPy's KDEy inference and the cached OSQP problem (the paper's sparse variant);
- ``quapy+active_set``: QuaPy's KDEy inference and capshift's solver;
- ``capshift``: capshift's KDEy backend and solver (the default); also per sample (``predict`` in a loop).

The capshift run is split into quantifier (``quantify_batch``) and table solve. All paths share the one
fitted quantifier (``Quantifier.set_kdey_backend``), so the comparison is on the same fitted densities;
``max_dq`` is the largest difference of the prevalence estimates between the two KDEy backends (QuaPy's SLSQP
stops at ftol 1e-6), ``max_dacc`` that of the accuracy estimates between ``capshift`` and ``quapy+osqp``.
Everything runs in one process; ratios are what to compare on a shared machine.

    .venv/bin/python benchmarks/bench_leap_end_to_end.py [--datasets spambase cmc satellite hand-digits letter]
        [--samples 50] [--sample-size 100] [--out results.csv]
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from capshift import datasets, experiment
from capshift.leap import OLEAP
from capshift.protocols import upp_indices
from capshift.quantifiers import Quantifier


def _per_sample(f, k, repeats=2):
    """Best of ``repeats`` timings of ``f()`` in ms per sample (k samples), and f's last result."""
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best / k, out


def run(names, n_samples=50, sample_size=100, seed=0, verbose=True) -> pd.DataFrame:
    """One row per dataset: ms per sample of each path, the ratios, the split of capshift's time, fit times."""
    rows = []
    for name in names:
        split = datasets.load(name, seed=seed)
        h = experiment.make_classifier("lr").fit(split.X_L, split.y_L)
        n = int(h.classes_.size)
        samples = [split.X_U[i] for i in upp_indices(split.y_U, sample_size, n_samples, seed, n_classes=n)]
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quant = Quantifier("kdey", random_state=seed).fit(split.X_V, split.y_V, n)
        row = {"dataset": name, "n": n, "|V|": len(split.y_V), "kdey_fit_s": time.perf_counter() - t0}
        acc, qhat = {}, {}
        for label, backend, solver in [("quapy+osqp", "quapy", "osqp"), ("quapy+active_set", "quapy", "active_set"),
                                       ("capshift", "capshift", "active_set")]:
            quant.set_kdey_backend(backend)
            est = OLEAP(h, quantifier=quant, solver=solver, random_state=seed).fit(split.X_V, split.y_V)
            est.predict_batch(samples[:2])  # builds the solver's workspace (per fit)
            row[f"{label}_ms"], acc[label] = _per_sample(lambda: est.predict_batch(samples), len(samples),
                                                         repeats=1 if backend == "quapy" else 3)
            qhat[backend] = quant.quantify_batch(samples)
            if label == "capshift":
                row["capshift_loop_ms"], _ = _per_sample(lambda: [est.predict(X) for X in samples], len(samples))
                row["capshift_quantify_ms"], q = _per_sample(lambda: quant.quantify_batch(samples), len(samples), 3)
                g = est._pred_prevs(samples)
                row["capshift_solve_ms"], _ = _per_sample(lambda: est.tables_from_prevalences(g, q), len(samples), 3)
        row["speedup_vs_quapy+osqp"] = row["quapy+osqp_ms"] / row["capshift_ms"]
        row["speedup_vs_quapy+active_set"] = row["quapy+active_set_ms"] / row["capshift_ms"]
        row["max_dq"] = float(np.abs(qhat["capshift"] - qhat["quapy"]).max())
        row["max_dacc"] = float(np.abs(acc["capshift"] - acc["quapy+osqp"]).max())
        rows.append(row)
        if verbose:
            print(pd.DataFrame(rows[-1:]).to_string(index=False, header=len(rows) == 1, float_format="%.3g"),
                  flush=True)
    return pd.DataFrame(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["spambase", "cmc", "satellite", "hand-digits", "letter"])
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--sample-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="also write the table to this CSV file")
    args = ap.parse_args()
    df = run(args.datasets, args.samples, args.sample_size, args.seed)
    if args.out:
        df.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()

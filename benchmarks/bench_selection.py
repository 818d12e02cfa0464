"""Cost of transductive selection: choosing among the paper's ~110 candidates for 1000 UPP samples, once the
candidates, their CAP estimators and the shared quantifier are fitted, against one candidate's O-LEAP_KDEy
prediction over the same samples (issue 21's goal: a ratio of at most 5).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_selection.py [--dataset german] [--n-samples 1000] [--repeats 3]

Both timings include the quantifier's estimate of every sample (KDEy: the surrogate MLP on every item, the
densities, the solve), which the selector computes once for all candidates; the selector's extra work is each
candidate's classification of the distinct items of the samples and its own O-LEAP solve for all samples at once.
Prints the two times (best of ``--repeats``), their ratio, and the time the candidates take to classify the
distinct items of the samples (which any selection needs: on spambase, 60 RBF SVMs with many support vectors make
it most of the total) with the ratio without it.
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.base import clone

from capshift import datasets, protocols, registry
from capshift.validation import predict_codes
from capshift.selection import TransductiveSelector, candidate_grid


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="german")
    ap.add_argument("--n-samples", type=int, default=1000)
    ap.add_argument("--sample-size", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    split = datasets.load(args.dataset, seed=0)
    cands = candidate_grid(split.n_classes, seed=0)
    hs = [clone(c.estimator).fit(split.X_L, split.y_L) for c in cands]
    idx = protocols.upp_indices(split.y_U, args.sample_size, args.n_samples, 0, n_classes=split.n_classes)
    samples = [split.X_U[i] for i in idx]
    sel = TransductiveSelector(hs, "O-LEAP_KDEy", random_state=0).fit(split.X_V, split.y_V)
    one = registry.make_method("O-LEAP_KDEy", hs[[c.default for c in cands].index(True)], random_state=0)
    one.fit(split.X_V, split.y_V)
    t_one, _ = best_of(lambda: one.predict_batch(samples), args.repeats)
    t_sel, chosen = best_of(lambda: sel.predict_batch(samples), args.repeats)
    print(f"dataset {args.dataset}: {len(hs)} candidates, {len(samples)} samples of {args.sample_size}")
    print(f"one candidate's O-LEAP_KDEy predict_batch: {t_one:.3f} s")
    print(f"selecting among {len(hs)} candidates (predict_batch): {t_sel:.3f} s")
    print(f"ratio: {t_sel / t_one:.2f} (goal <= 5); candidates chosen: {len(np.unique(chosen))}")
    # the part no selector can avoid: every candidate classifies every distinct item of the samples once
    distinct = np.unique(np.concatenate(samples), axis=0)
    t_cls, _ = best_of(lambda: [predict_codes(h, distinct) for h in hs], args.repeats)
    print(f"of which the candidates classifying the {len(distinct)} distinct items: {t_cls:.3f} s; "
          f"ratio without it: {(t_sel - t_cls) / t_one:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

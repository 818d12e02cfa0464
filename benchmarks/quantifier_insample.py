"""What the "rates" intervals calibrate on against what the test sees: O-LEAP_KDEy's error on V's own samples against
its error on U's samples, split by split (issue 31).

The "rates" scheme (``conformal.RATES_INTERVALS``, the LEAP family's default) calibrates on UPP samples of V predicted
by the method fitted on all of V, and adds the discrepancy of h's rates between two pools. The method's quantifier,
KDEy, reads V's items through its own surrogate classifier (an MLP fitted on V) but builds its class-conditional
densities from the surrogate's 5-fold cross-validated posteriors on V (QuaPy's ``KDEyML(val_split=5)``). On V's own
items the surrogate is in sample; on U's it is not. This script measures, per dataset and L/V/U split, the method's
accuracy error (estimate minus true accuracy of h) on three kinds of sample at each size:

- ``in``: UPP samples of V, the surrogate's posteriors in sample (what the calibration reads);
- ``U``: UPP samples of U (what the test reads; the interval study's test samples, same seed);
- ``oof``: the same samples of V, the surrogate's posteriors replaced by its cross-validated ones (the ones the
  densities were built from: ``cross_val_predict`` with 5 folds, as QuaPy computes them in the open; the script
  checks that they are the densities' items), the prevalence then aggregated by the fitted quantifier and the table
  solved by the fitted method (``tables_from_prevalences``);
- ``half``: out of sample at half the evidence: the method fitted on one half of a stratified halving of V (seeded
  by the split), reading UPP samples of the other half (what a cross-fitted calibration, the "mc" scheme, reads).

Per (dataset, split, size, kind): the mean signed error (``bias``) and the 95% quantile of the absolute error
(``q95``) over the samples. Usage (from the repository root)::

    PYTHONPATH=lib .venv/bin/python benchmarks/quantifier_insample.py --seeds 0 1 2 3 4 5 6 7 8 9 --n-jobs 2 \
        --out book/measured/quantifier_insample.csv
"""
import argparse
import time
import warnings

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_val_predict, train_test_split
from threadpoolctl import threadpool_limits

from _recording import git_commit, machine, write_recording
from capshift import datasets, evaluation, protocols, registry
from capshift.tables import accuracy, contingency_table


def one_split(name: str, seed: int, sizes, n_samples: int) -> list[tuple]:
    """The rows of one (dataset, split): (dataset, seed, |V|, size, kind, bias, q95)."""
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    rows = []
    with threadpool_limits(1):
        s = datasets.load(name, seed=seed)
        n = s.n_classes
        h = evaluation.train_classifier("lr", seed, s.X_L, s.y_L)
        method = registry.make_method("O-LEAP_KDEy", h, random_state=seed).fit(s.X_V, s.y_V)
        quant = method.quantifier_
        if quant.fit_subsample(s.y_V) is not None:
            raise SystemExit(f"{name}: the quantifier is fitted on a subsample of V; this script reads all of V")
        # the surrogate's cross-validated posteriors on V, as QuaPy's classifier_fit_predict computes them (an
        # integer val_split: scikit-learn's cross_val_predict with that many folds, the unfitted surrogate)
        oof = cross_val_predict(clone(quant.q_.classifier), s.X_V, s.y_V, cv=quant.q_.val_split,
                                method="predict_proba")
        for c, kde in enumerate(quant.q_.mix_densities):  # the densities' items (KernelDensity's fitted tree_)
            if not np.allclose(np.sort(np.asarray(kde.tree_.data), axis=0), np.sort(oof[s.y_V == c], axis=0)):
                raise SystemExit(f"{name}, seed {seed}: the cross-validated posteriors are not the densities' items")
        pred_V, pred_U = h.predict(s.X_V), h.predict(s.X_U)
        a, b = train_test_split(np.arange(len(s.y_V)), test_size=0.5, stratify=s.y_V, random_state=seed)
        half = registry.make_method("O-LEAP_KDEy", h, random_state=seed).fit(s.X_V[a], s.y_V[a])
        y_b = s.y_V[b]
        for size in sizes:
            # V's samples by the "rates" calibration's protocol (UPP, seeded by the split, as the interval study)
            idx_v = protocols.upp_indices(s.y_V, size, n_samples, seed, n_classes=n)
            idx_u = protocols.upp_indices(s.y_U, size, n_samples, seed, n_classes=n)
            true_v = accuracy(np.stack([contingency_table(s.y_V[i], pred_V[i], n) for i in idx_v]))
            true_u = accuracy(np.stack([contingency_table(s.y_U[i], pred_U[i], n) for i in idx_u]))
            est_in = method.predict_batch([s.X_V[i] for i in idx_v], "accuracy")
            est_u = method.predict_batch([s.X_U[i] for i in idx_u], "accuracy")
            gamma = np.stack([np.bincount(pred_V[i], minlength=n) / len(i) for i in idx_v])
            q_oof = np.stack([quant.aggregate(oof[i]) for i in idx_v])
            est_oof = accuracy(method.tables_from_prevalences(gamma, q_oof))
            idx_b = [b[i] for i in protocols.upp_indices(y_b, size, n_samples, seed, n_classes=n)]
            true_b = accuracy(np.stack([contingency_table(s.y_V[i], pred_V[i], n) for i in idx_b]))
            est_b = half.predict_batch([s.X_V[i] for i in idx_b], "accuracy")
            for kind, err in (("in", est_in - true_v), ("U", est_u - true_u), ("oof", est_oof - true_v),
                              ("half", est_b - true_b)):
                err = np.asarray(err, dtype=float)
                rows.append((name, seed, len(s.y_V), size, kind, err.mean(), np.quantile(np.abs(err), 0.95)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=None,
                    help="default: the offline binary datasets but spambase, whose U holds 500 items or more "
                         "(the 16 of the interval study's split records)")
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    ap.add_argument("--sizes", nargs="+", type=int, default=[100, 500])
    ap.add_argument("--n-samples", type=int, default=100)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.datasets is None:
        args.datasets = [d for d in datasets.names("binary", offline=True) if d != "spambase"]
    t0 = time.perf_counter()
    parts = Parallel(n_jobs=args.n_jobs)(delayed(one_split)(d, s, args.sizes, args.n_samples)
                                         for d in args.datasets for s in args.seeds)
    frame = pd.DataFrame([r for p in parts for r in p],
                         columns=["dataset", "seed", "V", "size", "kind", "bias", "q95"])
    wall = time.perf_counter() - t0
    write_recording(args.out, [
        "capshift: O-LEAP_KDEy's accuracy error on V's own samples (in), on U's samples (U), on V's samples with "
        "the quantifier's cross-validated surrogate posteriors (oof), and on samples of one half of V by the method "
        f"fitted on the other (half), per L/V/U split (seeds {args.seeds}) of {len(args.datasets)} offline datasets, "
        f"LR, {args.n_samples} UPP samples of each size {args.sizes}: the mean signed error (bias) and the 95% "
        "quantile of the absolute error (q95)",
        "command: PYTHONPATH=lib python benchmarks/quantifier_insample.py --seeds "
        + " ".join(map(str, args.seeds)) + f" --n-jobs {args.n_jobs} --out {args.out}",
        f"commit {git_commit()}; machine: {machine()}; wall time {wall:.0f} s"], frame.round(6))
    print(f"{len(frame)} rows in {wall:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()

"""How large a subsample of V the KDEy quantifier needs: the AE of the LEAP methods with KDEy fitted on a stratified
subsample of V (``Quantifier(max_fit_items=m)``) against all of V, paired on the same test samples (issue 33).

For each offline dataset whose V is larger than the smallest ``m`` (the LEAP paper's L / V / U split, LR): UPP
samples of 100 items from U (``--n-samples``, seed 0), LEAP_KDEy, S-LEAP_KDEy and O-LEAP_KDEy fitted on V with
KDEy on all of V and on subsamples of each ``m`` below |V| (one KDEy fit shared by the three); per dataset, m and
method: the mean AE of accuracy, the mean paired difference of AE (subsample minus all of V) with its standard
error, and the quantifier's fit time. Writes
``book/measured/quantifier_subsample.csv`` with a header of the command, commit, wall time and machine.

    PYTHONPATH=lib .venv/bin/python benchmarks/quantifier_subsample.py --n-jobs 2
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "measured" / "quantifier_subsample.csv"
METHODS = ["LEAP_KDEy", "S-LEAP_KDEy", "O-LEAP_KDEy"]


def _one(name, sizes, n_samples, seed):
    os.environ["OMP_NUM_THREADS"] = "1"
    import warnings

    import numpy as np
    import pandas as pd
    from threadpoolctl import threadpool_limits

    from capshift import datasets, evaluation, protocols, registry
    from capshift.quantifiers import Quantifier
    from capshift.tables import contingency_table, get_measure
    warnings.filterwarnings("ignore")
    with threadpool_limits(1):
        s = datasets.load(name, seed=seed)
        h = evaluation.train_classifier("lr", seed, s.X_L, s.y_L)
        n = s.n_classes
        idx = protocols.upp_indices(s.y_U, 100, n_samples, seed, n_classes=n)
        pred_U = h.predict(s.X_U)
        true = np.asarray(get_measure("accuracy")(np.stack([contingency_table(s.y_U[i], pred_U[i], n) for i in idx])))
        samples = [s.X_U[i] for i in idx]
        rows, ae = [], {}
        for m in [None] + [m for m in sizes if m < len(s.y_V)]:
            t0 = time.perf_counter()
            q = Quantifier("kdey", h, random_state=seed, max_fit_items=m).fit(s.X_V, s.y_V, n)
            fit = time.perf_counter() - t0
            for method in METHODS:
                est = registry.make_method(method, h, random_state=seed, quantifier=q).fit(s.X_V, s.y_V)
                t0 = time.perf_counter()
                ae[m, method] = np.abs(np.asarray(est.predict_batch(samples, "accuracy")) - true)
                pred = time.perf_counter() - t0
                d = ae[m, method] - ae[None, method]
                rows.append({"dataset": name, "n_val": len(s.y_V), "n_classes": n, "method": method,
                             "max_fit_items": "all" if m is None else m, "mae": ae[m, method].mean(),
                             "diff": d.mean(), "diff_se": d.std(ddof=1) / np.sqrt(len(d)), "fit_seconds": fit,
                             "predict_seconds": pred})
    return pd.DataFrame(rows)


def main(argv=None):
    sys.path.insert(0, str(ROOT / "lib"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[1000, 2000, 4000])
    ap.add_argument("--n-samples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    import pandas as pd
    from joblib import Parallel, delayed

    from _recording import git_commit, machine, write_recording
    from capshift import datasets
    names = [n for n in datasets.names(offline=True)
             if len(datasets.load(n, seed=args.seed).y_V) > min(args.sizes)]
    t0 = time.perf_counter()
    frames = Parallel(n_jobs=args.n_jobs)(delayed(_one)(n, args.sizes, args.n_samples, args.seed) for n in names)
    wall = time.perf_counter() - t0
    df = pd.concat(frames, ignore_index=True)
    cmd = "PYTHONPATH=lib python benchmarks/quantifier_subsample.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    write_recording(args.out, [
        f"capshift: the LEAP methods' AE (accuracy) with KDEy fitted on a stratified subsample of V of max_fit_items "
        f"items against all of V, {args.n_samples} UPP samples of 100 per dataset, LR; diff = mean paired AE "
        f"difference (subsample - all), measured {date.today()}",
        f"command: {cmd}", f"commit {git_commit()}",
        f"wall time: {wall:.0f} s; machine: {machine()}"], df.round(6))
    print(df.round(4).to_string())


if __name__ == "__main__":
    main()

"""Which PPS diagnostic? The two candidates of issue 22 on the same samples: the residual of O-LEAP's
over-determined system and the classifier two-sample test (capshift.pps_check.pps_test).

Setting: KEEL marketing (binary at its default cut, group = age), the global covariate-shift protocol of
capshift.shift (Algorithm 2 of Gonzalez et al. 2024): training sample of 2000 at p_L = 0.5, alpha_L = 0.5, split
into L (1000, trains a logistic regression h) and V (1000); test samples of 200 at p_U in {0.25, 0.5, 0.75} and
alpha_U in {0, 0.25, 0.5, 0.75, 1}, N per condition. alpha_U = alpha_L is PPS (the false-alarm rate), the others
are covariate shift (power). q-hat: KDEy-ML fitted on V (shared by O-LEAP_KDEy and both tests).

- residual: ||A x - b(gamma, q-hat)||_2 of O-LEAP_KDEy's solution x (capshift.equations.GoverningSystem.residual),
  p-value against B pseudo-batches drawn from V at q-hat (parametric bootstrap);
- c2st: capshift.pps_check.pps_test (held-out AUC of a logistic domain classifier, Mann-Whitney p-value).

Writes a tidy CSV (one row per sample) with a header of command, commit and wall time:

    PYTHONPATH=lib python benchmarks/pps_diagnostic_choice.py --n 20 --boot 60 --out book/measured/pps_diagnostic_choice.csv
"""
from __future__ import annotations

import argparse
import datetime
import sys
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from _recording import git_commit, write_recording
from capshift import datasets, protocols, shift
from capshift.leap import OLEAP
from capshift.pps_check import pps_test
from capshift.quantifiers import Quantifier


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20, help="samples per (p_U, alpha_U) condition")
    ap.add_argument("--boot", type=int, default=60, help="pseudo-batches of the residual's bootstrap null")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    X, y, g = datasets.load_shift("marketing").binary()
    fam = shift.GlobalCovariateShift(X, y, g, train_prevalences=[0.5], train_alphas=[0.5],
                                     test_prevalences=[0.25, 0.5, 0.75], test_alphas=[0.0, 0.25, 0.5, 0.75, 1.0],
                                     train_size=2000, test_size=200, n_samples=args.n, repeats=1, random_state=0)
    tr = fam.trial(0)
    XL, yL, XV, yV = tr.train.X[:1000], tr.train.y[:1000], tr.train.X[1000:], tr.train.y[1000:]
    h = LogisticRegression().fit(XL, yL)
    q = Quantifier("kdey", h, random_state=0).fit(XV, yV, 2)
    ol = OLEAP(h, quantifier=q, random_state=0).fit(XV, yV)
    system = ol.solver_.system

    def residual(Xs):
        gam, qh = ol._pred_prevs([Xs]), q.quantify_batch([Xs])
        T = ol.tables_from_prevalences(gam, qh)
        return float(np.linalg.norm(system.residual(T, gam, qh))), qh[0]

    rows = []
    P = tr.test.parameters
    for k in range(len(P)):
        Xs, ys = tr.test.data.instances[tr.test.indices[k]], tr.test.labels(k)
        t1 = time.perf_counter()
        r, qh = residual(Xs)
        null = [residual(XV[protocols.sample_at(yV, qh, len(Xs), 1000 * k + b)])[0] for b in range(args.boot)]
        p_res = (1 + np.sum(np.asarray(null) >= r)) / (args.boot + 1)
        t2 = time.perf_counter()
        c = pps_test(Xs, XV, yV, qh, random_state=k)
        t3 = time.perf_counter()
        rows.append({"sample": k, "p_U": P.p_U[k], "alpha_U": P.alpha_U[k], "pps": bool(P.alpha_U[k] == 0.5),
                     "p_residual": p_res, "p_c2st": c.pvalue, "auc_c2st": c.auc,
                     "seconds_residual": t2 - t1, "seconds_c2st": t3 - t2,
                     "true_accuracy": float(np.mean(h.predict(Xs) == ys)), "oleap_kdey": ol.predict(Xs)})
    df = pd.DataFrame(rows)
    wall = time.perf_counter() - t0
    write_recording(args.out, [
        f"capshift: PPS diagnostic candidates (O-LEAP residual vs classifier two-sample test), marketing, "
        f"global covariate shift protocol, measured {datetime.date.today()}",
        f"command: python benchmarks/pps_diagnostic_choice.py {' '.join(argv or sys.argv[1:])}",
        f"commit: {git_commit()}; wall time: {wall:.0f} s; machine: 2 cores (shared)"], df)
    print(df.groupby("alpha_U")[["p_residual", "p_c2st"]].agg(lambda s: (s < 0.05).mean()))


if __name__ == "__main__":
    main()

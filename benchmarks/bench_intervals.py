"""Cost of ``predict_interval``: the default interval construction against those it replaced (issue 31).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_intervals.py [--dataset spambase] [--n-samples 100] [--size 100]

For each method (O-LEAP_KDEy, SLD-CBPE), the method is fitted on V once; then each construction is timed from
nothing to the intervals of ``--n-samples`` UPP test samples of ``--size`` items: its calibration (the refits on
halvings of V and the calibration samples for the old Monte Carlo construction; the calibration samples of V and
the halvings' rate discrepancies for the rates ones) and the intervals themselves. The rates constructions: the
default (its floor "auto" with Perks' prior: the union for two classes) and the one before it (the reach floor,
Jeffreys' prior), which differ only in the floor; and the default with the method's own response to the halvings
as its rate term (``rate_model="response"``: 20 fits of the method on halves of V, 1,000 more predictions per size
and measure; issue 31's candidate ``default-resp``, since then the CBPE family's default for two classes through
``rate_model="auto"``, :data:`capshift.conformal.CBPE_INTERVALS`), beside the rates construction with the halvings
(:data:`capshift.conformal.RATES_INTERVALS`, the LEAP family's default). Prints the times, per sample (the
calibration spread over the
samples) and their ratios to the default's; the calibration is paid once per sample size and
measure, so the per-sample cost falls as more samples are asked about. Wall times on this machine, one run each.
"""
from __future__ import annotations

import argparse
import time
import warnings

from capshift import datasets, evaluation, protocols, registry
from capshift.conformal import RATES_INTERVALS, ConformalInterval

OLD = {"scheme": "mc", "n_splits": 10, "n_cal": 500, "pool_correction": False, "score": "both", "floor": True}
#: the rates construction chosen on one split, the default before the floor was settled over repeated splits
PREVIOUS = {"scheme": "rates", "n_splits": 10, "n_cal": 500, "score": "absolute", "floor": True, "bins": 4,
            "bin_by": "prevalence", "prior": "jeffreys"}


def timed(method: str, h, split, samples, params: dict) -> float:
    full = registry.make_method(method, h, random_state=0).fit(split.X_V, split.y_V)
    t0 = time.perf_counter()
    ci = ConformalInterval(registry.make_method(method, h, random_state=0), random_state=0, **params)
    ci.fit(split.X_V, split.y_V, point_estimator=full).predict_interval_batch(samples, 0.05, "accuracy")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="spambase")
    ap.add_argument("--n-samples", type=int, default=100)
    ap.add_argument("--size", type=int, default=100)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    split = datasets.load(args.dataset, seed=0)
    h = evaluation.train_classifier("lr", 0, split.X_L, split.y_L)
    idx = protocols.upp_indices(split.y_U, args.size, args.n_samples, 0, n_classes=split.n_classes)
    samples = [split.X_U[i] for i in idx]
    print(f"{args.dataset}: |V| = {len(split.y_V)}, {args.n_samples} samples of {args.size}")
    print(f"Monte Carlo construction: {OLD}\nprevious rates construction: {PREVIOUS}")
    for m in ("O-LEAP_KDEy", "SLD-CBPE"):
        new = registry.make_method(m, h).interval_params  # the method's predict_interval default
        print(f"{m}'s default: {new}")
        t_new = timed(m, h, split, samples, new)
        t_prev = timed(m, h, split, samples, PREVIOUS)
        t_old = timed(m, h, split, samples, OLD)
        t_resp = timed(m, h, split, samples, {**new, "rate_model": "response"})
        t_halv = timed(m, h, split, samples, RATES_INTERVALS)
        print(f"{m}: default {t_new:.2f} s ({1e3 * t_new / len(samples):.0f} ms per sample); previous rates "
              f"{t_prev:.2f} s ({1e3 * t_prev / len(samples):.0f} ms), default / previous = {t_new / t_prev:.2f}; "
              f"Monte Carlo {t_old:.2f} s ({1e3 * t_old / len(samples):.0f} ms), default / Monte Carlo = "
              f"{t_new / t_old:.2f}; with the method's response {t_resp:.2f} s ({1e3 * t_resp / len(samples):.0f} "
              f"ms), response / default = {t_resp / t_new:.2f}; with the halvings (RATES_INTERVALS) "
              f"{t_halv:.2f} s ({1e3 * t_halv / len(samples):.0f} ms), default / halvings = {t_new / t_halv:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

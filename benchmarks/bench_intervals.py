"""Cost of ``predict_interval``: the default interval construction against those it replaced (issue 31).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_intervals.py [--dataset spambase] [--n-samples 100] [--size 100]

For each method (O-LEAP_KDEy, SLD-CBPE), the method is fitted on V once; then each construction is timed from
nothing to the intervals of ``--n-samples`` UPP test samples of ``--size`` items: its calibration (the refits on
halvings of V and the calibration samples for the old Monte Carlo construction; the calibration samples of V and
the halvings' rate discrepancies for the rates ones) and the intervals themselves. The constructions:

- the method's default (its class's ``interval_params``);
- the rates construction before the floor was settled (the reach floor, Jeffreys' prior);
- the Monte Carlo construction before issue 31;
- the default with the method's own response to the halvings as its rate term (``rate_model="response"``: 20 fits
  of the method on halves of V, 1,000 more predictions per size and measure; issue 31's candidate
  ``default-resp``), which is the CBPE family's default for two classes (``rate_model="auto"``,
  :data:`capshift.conformal.CBPE_INTERVALS`);
- the rates construction with V's halvings (:data:`capshift.conformal.RATES_INTERVALS`, the LEAP family's
  default).

A construction that is one already timed for the method (the LEAP family's default is RATES_INTERVALS; the CBPE
family's is the response on two classes) is timed once and named as the same. Prints the times, per sample (the
calibration spread over the samples) and their ratios to the default's; the calibration is paid once per sample
size and measure, so the per-sample cost falls as more samples are asked about. Wall times on this machine, one run
each.
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


def timed(method: str, h, split, samples, params: dict) -> tuple[float, dict]:
    """Seconds from nothing to the intervals, and ``params`` with the rate model the calibrator used."""
    full = registry.make_method(method, h, random_state=0).fit(split.X_V, split.y_V)
    t0 = time.perf_counter()
    ci = ConformalInterval(registry.make_method(method, h, random_state=0), random_state=0, **params)
    ci.fit(split.X_V, split.y_V, point_estimator=full).predict_interval_batch(samples, 0.05, "accuracy")
    return time.perf_counter() - t0, {**params, "rate_model": ci.rate_model_}


def resolved(params: dict) -> dict:
    """``params`` with ConformalInterval's default rate model (the halvings) filled in where it names none."""
    return {"rate_model": "halvings", **params}


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
        runs = {"default": new, "previous rates": PREVIOUS, "Monte Carlo": OLD,
                "the method's response": {**new, "rate_model": "response"}, "the halvings": RATES_INTERVALS}
        seconds, done = {}, []  # done: (name, the construction's options with its rate model resolved)
        for name, params in runs.items():
            same = next((n for n, p in done if p == resolved(params)), None)
            if same is not None:
                seconds[name] = seconds[same]
                print(f"  {name}: the same construction as {same}")
                continue
            seconds[name], used = timed(m, h, split, samples, params)
            done.append((name, resolved(used)))
        t_new = seconds["default"]
        print(f"{m}: " + "; ".join(
            f"{name} {t:.2f} s ({1e3 * t / len(samples):.0f} ms per sample)"
            + ("" if name == "default" else f", default / {name} = {t_new / t:.2f}")
            for name, t in seconds.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The CAP methods under every dataset-shift family, at the scale the dataset_shift chapter's verdicts need.

Usage (from the repository root)::

    .venv/bin/python benchmarks/shift_study.py --results ~/.cache/capshift/shift_study --n-jobs 2

Runs :func:`capshift.grid.run_grid` (resumable: a re-run reuses the finished cells) once per registered
dataset-shift family (:func:`capshift.protocols.names` ``("shift")``: prior, global pure and mixed covariate, local
covariate and concept shift) on the chapter's dataset, the chapter's CAP methods predicting the accuracy of a
logistic regression, with the chapter's thinned training conditions (:data:`FAMILIES`) but ``--repeats``
repetitions and ``--n-samples`` test samples per condition, so that each method-against-Naive test has the power
to see a difference of 0.01 in MAE. Families run in parallel (``--n-jobs`` processes).

Writes ``book/measured/shift_cap_full_scale.csv``: one row per (family, test sample) with the sample's ``trial``,
``sample_id`` (with the family and trial, the pairing key), ``degree`` of shift and one column per method: its
absolute error on the sample's accuracy; after ``# `` header lines (title, command, parameters, commit, wall time,
machine), which the chapter reads. Run it on an empty ``--results`` folder for a wall time that covers every cell.
"""
from __future__ import annotations

import argparse
import shlex
import sys
import time
import warnings
from datetime import date
from pathlib import Path

import pandas as pd
from joblib import Parallel, delayed

from _recording import git_commit, machine, portable, write_recording

from capshift import datasets, grid, protocols, shift, shift_experiments

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "measured" / "shift_cap_full_scale.csv"


def families(dataset: str) -> dict:
    """The chapter's training conditions per family (thinned: the CAP runs fit every method on every trial)."""
    cuts = shift.cut_points(datasets.load_shift(dataset).levels)
    return {"prior": {"train_prevalences": (0.2, 0.5, 0.8)},
            "global-pure-covariate": {"train_prevalences": (0.5,), "train_alphas": (0.0, 0.5, 1.0)},
            "global-mixed-covariate": {"train_prevalences": (0.5,), "train_alphas": (0.0, 0.5, 1.0)},
            "local-covariate": {},
            "concept": {"train_cuts": (cuts[0], cuts[len(cuts) // 2], cuts[-1])}}


def run_family(name, params, args):
    proto = protocols.make_protocol(name, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = grid.run_grid([args.dataset], ["lr"], args.methods, args.results, protocol=proto,
                           n_samples=args.n_samples, sample_size=args.sample_size, measures=("accuracy",),
                           seed=args.seed, n_jobs=1, progress=False)
    # wide: one row per test sample, one AE column per method (the file stays small), in the methods' order
    wide = df.pivot_table(index=["trial", "sample_id", "degree"], columns="method", values="ae", sort=False)
    wide = wide[[m for m in args.methods if m in wide.columns]].reset_index()
    return wide.assign(family=name)[["family"] + list(wide.columns)], (proto.key(), df.attrs["cells"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(Path.home() / ".cache" / "capshift" / "shift_study"))
    ap.add_argument("--dataset", default="marketing")
    ap.add_argument("--methods", nargs="+", default=list(shift_experiments.SHIFT_CAP_METHODS))
    ap.add_argument("--train-size", type=int, default=2000)
    ap.add_argument("--sample-size", type=int, default=200)
    ap.add_argument("--n-samples", type=int, default=10, help="test samples per condition")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    fams = {n: {**p, "train_size": args.train_size, "repeats": args.repeats} for n, p in families(args.dataset).items()}
    t0 = time.perf_counter()
    runs = Parallel(n_jobs=args.n_jobs)(delayed(run_family)(n, p, args) for n, p in fams.items())
    wall = time.perf_counter() - t0
    frame = pd.concat([r[0] for r in runs], ignore_index=True)
    cells = {k: sum(r[1][1][k] for r in runs) for k in ("reused", "computed", "failed")}
    header = ["The CAP methods under every dataset-shift family (book chapter dataset_shift), recorded",
              "command: python benchmarks/shift_study.py " + shlex.join(sys.argv[1:]),
              f"dataset: {args.dataset}",
              f"setting: classifier lr, accuracy; training samples of {args.train_size}, test samples of "
              f"{args.sample_size}, {args.n_samples} per condition, {args.repeats} repetitions, seed {args.seed}",
              "protocols: " + "; ".join(r[1][0] for r in runs),
              f"commit: {git_commit()}",
              f"date: {date.today().isoformat()}",
              f"wall time: {wall:.0f} s with {args.n_jobs} processes (cells reused {cells['reused']}, computed "
              f"{cells['computed']}, failed {cells['failed']})",
              f"machine: {machine()}"]
    write_recording(args.out, header, frame.round(5))
    print("\n".join(portable(h) for h in header))
    print(frame.drop(columns=["trial", "sample_id", "degree"]).groupby("family", sort=False).agg(["mean", "size"])
          .round(4).T.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())

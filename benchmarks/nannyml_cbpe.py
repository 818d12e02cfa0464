"""NannyML's CBPE side by side with capshift's CAP methods on the same PPS samples (issue 22).

NannyML 0.13.1 cannot share capshift's environment (it pins an older stack and imports statsmodels without
declaring it), so this script runs in two interpreters, in three stages:

1. ``prepare`` (capshift's venv): for each dataset, the LEAP paper's L / V / U split (capshift.datasets.load), a
   logistic regression h trained on L, 300 UPP samples of 100 items drawn from U (capshift.protocols.upp_indices,
   seed 0), the capshift methods' accuracy estimates (fit on V, predict_batch on the samples; wall time of fit +
   predict), and, for NannyML, h's posteriors and predictions on V (its reference) and on the samples
   (its analysis data, consecutive chunks of 100 rows, one per sample) written to ``WORK/<dataset>_*.parquet``;
2. ``nannyml`` (NannyML's venv; imports only pandas and nannyml): for each dataset, ``nannyml.CBPE(metrics=
   ["accuracy"], chunk_size=100, calibration="isotonic")`` fitted on the reference and estimating the analysis
   chunks; writes ``WORK/<dataset>_nannyml.parquet`` (estimate per chunk) and its wall time;
3. ``collect`` (capshift's venv): one tidy CSV, a row per (dataset, sample, method): task, true accuracy,
   estimate, AE, the method's wall time for the dataset (fit + all samples), ``shift`` (L1 distance between V's
   and the sample's prevalence), with a header of the command,
   versions, commit and wall time.

``all`` runs the three, calling NannyML's interpreter (``--nannyml-python``) for stage 2. See benchmarks/README.md
for creating that venv. Example (the recording in book/measured/nannyml_cbpe.csv)::

    PYTHONPATH=lib .venv/bin/python benchmarks/nannyml_cbpe.py all \\
        --nannyml-python /work/nannyml-venv/bin/python --work /tmp/nannyml_work --out book/measured/nannyml_cbpe.csv
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from _recording import portable

BINARY = ["spambase", "cmc.1", "cmc.2", "cmc.3", "german"]  # the first five offline binary datasets
MULTICLASS = ["hand-digits", "satellite", "digits", "image-seg", "cmc"]  # the offline multiclass ones but letter
METHODS = ["Naive", "CBPE", "SLD-CBPE", "O-LEAP_KDEy"]


def prepare(args) -> None:
    import warnings

    import numpy as np
    import pandas as pd

    from capshift import classifiers, datasets, protocols, registry
    warnings.filterwarnings("ignore")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    for name in args.datasets:
        s = datasets.load(name, seed=args.seed)
        h = classifiers.make_classifier("lr", args.seed).fit(s.X_L, s.y_L)
        idx = protocols.upp_indices(s.y_U, args.sample_size, args.n_samples, args.seed, n_classes=s.n_classes)
        samples = [s.X_U[i] for i in idx]
        true = np.array([np.mean(h.predict(X) == s.y_U[i]) for X, i in zip(samples, idx)])
        p_val = np.bincount(s.y_V, minlength=s.n_classes) / len(s.y_V)
        shift = [float(np.abs(protocols.sample_prevalence(s.y_U, i, s.n_classes) - p_val).sum()) for i in idx]
        rows = []
        for m in args.methods:
            t0 = time.perf_counter()
            est = registry.make_method(m, h, random_state=args.seed).fit(s.X_V, s.y_V)
            pred = est.predict_batch(samples, measure="accuracy")
            sec = time.perf_counter() - t0
            rows += [{"dataset": name, "sample": k, "method": m, "true": true[k], "estimate": float(pred[k]),
                      "seconds": sec, "shift": shift[k]} for k in range(len(samples))]
        pd.DataFrame(rows).to_parquet(work / f"{name}_capshift.parquet", index=False)
        cls = [f"p{c}" for c in range(s.n_classes)]
        ref = pd.DataFrame(h.predict_proba(s.X_V), columns=cls)
        ref["y_pred"], ref["y_true"] = h.predict(s.X_V), s.y_V
        Xa = np.vstack(samples)
        ana = pd.DataFrame(h.predict_proba(Xa), columns=cls)
        ana["y_pred"], ana["sample"] = h.predict(Xa), np.repeat(np.arange(len(samples)), args.sample_size)
        ref.to_parquet(work / f"{name}_reference.parquet", index=False)
        ana.to_parquet(work / f"{name}_analysis.parquet", index=False)
        print(f"prepared {name}", flush=True)
    (work / "prepare.json").write_text(json.dumps(vars(args)))


def run_nannyml(args) -> None:
    """Stage 2, in NannyML's venv: no capshift import here (benchmarks/_nannyml.py)."""
    import pandas as pd

    from _nannyml import cbpe, version
    work = Path(args.work)
    for name in args.datasets:
        ref = pd.read_parquet(work / f"{name}_reference.parquet")
        ana = pd.read_parquet(work / f"{name}_analysis.parquet")
        t0 = time.perf_counter()
        res = cbpe(ref, ana.drop(columns="sample"), args.sample_size)
        sec = time.perf_counter() - t0
        value = res[("accuracy", "value")].to_numpy()
        pd.DataFrame({"dataset": name, "sample": range(len(value)), "method": "NannyML-CBPE", "estimate": value,
                      "seconds": sec}).to_parquet(work / f"{name}_nannyml.parquet", index=False)
        print(f"nannyml {name}: {sec:.1f} s", flush=True)
    (work / "nannyml.json").write_text(json.dumps({"nannyml": version(), "pandas": pd.__version__,
                                                   "python": platform.python_version()}))


def collect(args, wall: float | None = None) -> None:
    import numpy as np
    import pandas as pd

    from capshift import __version__ as capshift_version
    work = Path(args.work)
    frames = []
    for name in args.datasets:
        cs = pd.read_parquet(work / f"{name}_capshift.parquet")
        nm = pd.read_parquet(work / f"{name}_nannyml.parquet")
        if len(nm) != cs["sample"].nunique():
            raise SystemExit(f"{name}: NannyML returned {len(nm)} chunks for {cs['sample'].nunique()} samples")
        first = cs.drop_duplicates("sample").set_index("sample")
        nm["true"] = first["true"].reindex(nm["sample"]).to_numpy()
        nm["shift"] = first["shift"].reindex(nm["sample"]).to_numpy()
        frames += [cs, nm]
    df = pd.concat(frames, ignore_index=True)
    df.insert(1, "task", np.where(df["dataset"].isin(BINARY), "binary", "multiclass"))
    df["ae"] = (df["estimate"] - df["true"]).abs()
    versions = json.loads((work / "nannyml.json").read_text())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    import sklearn
    with open(args.out, "w") as f:
        f.write(f"# capshift: NannyML CBPE vs capshift's CAP methods on the same UPP samples "
                f"({len(args.datasets)} datasets, LR, {args.n_samples} samples of {args.sample_size}, accuracy), "
                f"measured {datetime.date.today()}\n")
        f.write(f"# command: PYTHONPATH=lib python benchmarks/nannyml_cbpe.py {portable(' '.join(sys.argv[1:]))}\n")
        f.write(f"# versions: capshift {capshift_version} (commit {commit}), scikit-learn {sklearn.__version__}, "
                f"pandas {pd.__version__}; NannyML {versions['nannyml']} (own venv: pandas {versions['pandas']}, "
                f"Python {versions['python']})\n")
        f.write(f"# wall time: {'%.0f s' % wall if wall is not None else 'n/a'} (all stages); seconds = one "
                f"method's fit on V + estimates of all samples of the dataset; machine: 2 cores (shared), "
                f"{platform.platform()}\n")
        df.to_csv(f, index=False, float_format="%.6g")
    print(df.groupby(["task", "method"])["ae"].mean().unstack().round(4).to_string())


def main(argv=None):
    ap = argparse.ArgumentParser(description="NannyML CBPE vs capshift methods on the same PPS samples")
    ap.add_argument("stage", choices=["prepare", "nannyml", "collect", "all"])
    ap.add_argument("--work", required=True, help="folder of the intermediate files")
    ap.add_argument("--out", default="nannyml_cbpe.csv", help="the tidy CSV (collect, all)")
    ap.add_argument("--datasets", nargs="+", default=BINARY + MULTICLASS)
    ap.add_argument("--methods", nargs="+", default=METHODS)
    ap.add_argument("--n-samples", type=int, default=300)
    ap.add_argument("--sample-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nannyml-python", default=None, help="NannyML venv's interpreter (stage all)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.stage in ("prepare", "all"):
        prepare(args)
    if args.stage == "nannyml":
        run_nannyml(args)
    if args.stage == "all":
        if not args.nannyml_python:
            raise SystemExit("stage all needs --nannyml-python (the interpreter of NannyML's venv)")
        cmd = [args.nannyml_python, __file__, "nannyml", "--work", args.work, "--sample-size",
               str(args.sample_size), "--datasets", *args.datasets]
        subprocess.run(cmd, check=True)
    if args.stage in ("collect", "all"):
        collect(args, time.perf_counter() - t0 if args.stage == "all" else None)


if __name__ == "__main__":
    main()

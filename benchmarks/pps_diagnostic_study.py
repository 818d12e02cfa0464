"""Size and power of the PPS diagnostic (capshift.pps_check.pps_test) under the dataset-shift protocols, at full
scale, recorded for the your_data chapter (capshift.estimate.diagnostic_study on each offline shift dataset).

    PYTHONPATH=lib python benchmarks/pps_diagnostic_study.py --n-samples 100 --out book/measured/pps_diagnostic_full_scale.csv
"""
from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time

import pandas as pd

from _recording import git_commit, write_recording
from capshift import datasets
from capshift.estimate import diagnostic_study


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["marketing", "diabetes"])
    ap.add_argument("--n-samples", type=int, default=100, help="test samples per protocol condition")
    ap.add_argument("--sample-size", type=int, default=200)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                    help="one draw of V and of the pools per seed: the false-alarm rate is a rate over V too")
    ap.add_argument("--quantifiers", nargs="+", default=["kdey"],
                    help="the diagnostic's q-hat (capshift.quantifiers names); one set of rows per quantifier")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    frames = []
    for name in args.datasets:
        d = datasets.load_shift(name)
        train = 2000 if name == "marketing" else 200
        size = args.sample_size if name == "marketing" else 60
        for quantifier in args.quantifiers:
            for seed in args.seeds:
                df = diagnostic_study(d, n_samples=args.n_samples, sample_size=size, train_size=train,
                                      quantifier=quantifier, random_state=seed)
                df.insert(0, "dataset", name)
                df.insert(1, "sample_size", size)
                df.insert(2, "seed", seed)
                df.insert(3, "quantifier", quantifier)
                frames.append(df)
        print(name, f"{time.perf_counter() - t0:.0f} s", flush=True)
    out = pd.concat(frames, ignore_index=True)
    wall = time.perf_counter() - t0
    write_recording(args.out, [
        f"capshift: size and power of the PPS diagnostic (pps_check.pps_test) under the dataset-shift "
        f"protocols, measured {datetime.date.today()}",
        f"command: PYTHONPATH=lib python benchmarks/pps_diagnostic_study.py {' '.join(argv or sys.argv[1:])}",
        f"commit: {git_commit()}; wall time: {wall:.0f} s; machine: 2 cores (shared), {platform.platform()}"], out)
    print(out.groupby(["dataset", "quantifier", "protocol", "degree"])["rejected"].mean().to_string())


if __name__ == "__main__":
    main()

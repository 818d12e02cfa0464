"""The model-selection study at full scale (chapter ``model_selection``), recorded for the book.

Usage (from the repository root)::

    nice .venv/bin/python benchmarks/selection_study.py --results ~/.cache/capshift/selection --n-jobs 1

Runs :func:`capshift.grid.run_selection_study` (resumable: a re-run reuses the finished datasets) on the paper's
datasets that ship offline, applies every selector (:func:`capshift.selection.selections`) and writes to
``book/measured/``: ``model_selection_full_scale.csv`` (per dataset and selector: mean and std of the selected
models' true accuracy, mean regret, the bold/dagger marks), ``model_selection_full_scale_bins.csv`` (accuracy per
bin of prior shift), ``model_selection_full_scale.json`` (the verdicts, the command, commit, wall time, machine, and each cell's own
compute time as recorded in its file). A resumed run records the wall time of the last invocation and the cells
it reused; ``cell_seconds`` holds what each dataset took when it was computed.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pyarrow.parquet as pq

from _recording import machine, portable

from capshift import grid, selection

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "measured"
#: The paper's binary datasets (the 5 largest of its natively binary UCI list) that ship offline, then the
#: offline multiclass datasets, smallest first.
DATASETS = ["breast-cancer", "mammographic", "tictactoe", "german", "spambase", "cmc", "image-seg"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(Path.home() / ".cache" / "capshift" / "selection"))
    ap.add_argument("--datasets", nargs="+", default=DATASETS)
    ap.add_argument("--n-samples", type=int, default=1000)
    ap.add_argument("--sample-size", type=int, default=100)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--note", default="", help="recorded as is (e.g. how an earlier, interrupted invocation went)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    table = grid.run_selection_study(args.datasets, args.results, n_samples=args.n_samples,
                                     sample_size=args.sample_size, seed=args.seed, n_jobs=args.n_jobs)
    wall = time.perf_counter() - t0
    sel = selection.selections(table)
    summary = selection.selection_summary(sel)
    summary.to_csv(OUT / "model_selection_full_scale.csv", index=False, float_format="%.6g")
    selection.shift_bins(sel, 10).to_csv(OUT / "model_selection_full_scale_bins.csv", index=False,
                                         float_format="%.6g")
    # each cell's own compute time, recorded in its file when it was computed (also for cells reused here)
    cell_seconds = {}
    for path in sorted(Path(args.results).expanduser().glob("*.parquet")):
        meta = pq.read_schema(path).metadata or {}
        key, timing = json.loads(meta.get(b"capshift.cell", b"{}")), json.loads(meta.get(b"capshift.time", b"{}"))
        if key.get("method") == "selection" and key.get("dataset") in set(table["dataset"]):
            cell_seconds[key["dataset"]] = timing.get("cell_seconds")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    meta = {"command": portable("nice .venv/bin/python benchmarks/selection_study.py " + shlex.join(sys.argv[1:])),
            "commit": commit, "date": date.today().isoformat(), "wall_seconds": round(wall, 1),
            "cells": table.attrs.get("cells"), "failed": table.attrs.get("failed"),
            "cell_seconds": cell_seconds, "cell_seconds_total": round(sum(cell_seconds.values()), 1),
            "note": args.note,
            "datasets": list(dict.fromkeys(table["dataset"])), "n_samples": args.n_samples,
            "sample_size": args.sample_size, "candidates": {d: int(t["candidate"].nunique())
                                                            for d, t in table.groupby("dataset", sort=False)},
            "machine": machine(),
            "n_jobs": args.n_jobs, "verdicts": selection.verdicts(sel)}
    (OUT / "model_selection_full_scale.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    print(json.dumps(meta, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The LEAP paper's whole study (Tables 1-13): five classifiers x every offline dataset x the methods of Tables 1-2,
accuracy and F1, 1000 UPP samples of 100, run by the ``capshift run`` command line and recorded for the book.

Usage (from the repository root, after ``make venv``)::

    .venv/bin/python benchmarks/full_study.py --results ~/.cache/capshift/study --n-jobs 2

It runs ``capshift run`` in a child process, samples the memory of its whole process tree (the sum of the resident
set sizes of the process and its workers, from /proc, every 0.2 s) and its wall time, then summarises the results
directory with :func:`capshift.experiment.study_record` into ``book/measured/leap_study_full_scale.csv``, whose
comment header holds the command, the commit, the wall time, the peak memory and the machine. A resumed run (cells
found in --results) records the wall time of the last invocation only, and says so in the header.
"""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import pandas as pd

from _recording import machine, portable

from capshift import datasets, grid
from capshift.experiment import AUTHORS_VARIANTS, STUDY_METHODS, pairwise_tests, shift_profile, study_record

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "measured" / "leap_study_full_scale.csv"
CLASSIFIERS = ("lr", "knn", "svm", "mlp", "rf")
AUTHORS_CLASSIFIERS = ("lr", "svm")  # the classifiers of the printed tables with DS, NN and L-CBPE (Tables 1-5, 9)


def tree_rss(pid: int) -> int:
    """Bytes resident in ``pid`` and all its descendants (Linux /proc)."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def measured(cmd):
    """Run ``cmd``; its wall time (s), peak memory of its process tree ([bytes]) and exit code."""
    print("$", shlex.join(cmd), flush=True)
    peak, done = [0], threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.2)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    code = proc.wait()
    wall = time.perf_counter() - t0
    done.set()
    watcher.join()
    print(f"exit {code}, wall {wall:.0f} s, peak memory {peak[0] / 2**30:.2f} GiB", flush=True)
    return wall, peak, code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True, help="results directory of the grid (resumable)")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--classifiers", nargs="+", default=list(CLASSIFIERS))
    ap.add_argument("--datasets", nargs="+", default=["multiclass", "binary"])
    ap.add_argument("--n-samples", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--record-only", nargs=3, metavar=("WALL_S", "PEAK_GIB", "COMMIT"), default=None,
                    help="do not run: summarise --results with the wall time, peak memory and commit of the "
                         "invocation that computed it (e.g. when the driver itself changed during the run)")
    args = ap.parse_args()
    cmd = [str(Path(sys.executable).with_name("capshift")), "run", "--datasets", *args.datasets, "--classifiers",
           *args.classifiers, "--methods", *STUDY_METHODS, "--measures", "accuracy", "f1", "--n-samples",
           str(args.n_samples), "--sample-size", "100", "--results", args.results, "--n-jobs", str(args.n_jobs),
           "--no-progress"]
    authors_cmd = cmd[:cmd.index("--classifiers") + 1] + list(AUTHORS_CLASSIFIERS) + ["--methods", *AUTHORS_VARIANTS] \
        + cmd[cmd.index("--measures"):]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()  # the code the run starts with
    dirty = subprocess.run(["git", "status", "--porcelain", "lib"], cwd=ROOT, capture_output=True, text=True).stdout
    if args.record_only:
        wall, peak, commit, code, dirty = float(args.record_only[0]), [float(args.record_only[1]) * 2**30], \
            args.record_only[2], 0, ""
        authors_wall = float("nan")
    else:
        (wall, peak, code), (authors_wall, _, authors_code) = measured(cmd), measured(authors_cmd)
        code = code or authors_code
    df = grid.load_results(args.results, n_samples=args.n_samples, sample_size=100, seed=0,
                           classifier=list(args.classifiers), method=list(STUDY_METHODS))
    names = sorted(set(df["dataset"]))
    task_of = {d: datasets.REGISTRY[d].task for d in names}
    record = study_record(df, task_of)
    pairs = pairwise_tests(df, task_of)
    by_shift = shift_profile(df, task_of)
    failed = pd.DataFrame(df.attrs["failed"], columns=["dataset", "classifier", "method", "reason", "seconds"])
    cells = df.groupby(["dataset", "classifier", "method"]).ngroups
    codes = sorted(set(df["code"])) if "code" in df else []
    header = [
        f"capshift: the LEAP study at full scale (5 classifiers x {len(names)} offline datasets x "
        f"{len(STUDY_METHODS)} methods, accuracy and F1, {args.n_samples} UPP samples of 100), measured {date.today()}",
        f"command: {portable(shlex.join(cmd))}  (driver: python benchmarks/full_study.py)",
        f"commit: {commit}{' (with uncommitted changes in lib/)' if dirty else ''}; capshift {df['version'].iloc[0]}; "
        f"code fingerprint of the cells (capshift.grid.code_fingerprint): {', '.join(codes)}",
        f"wall time of this invocation: {wall:.0f} s ({cells} cells in the record; cells found in --results are "
        "reused, not recomputed, so a resumed run's wall time covers only what it computed)",
        f"peak memory (sum over the process tree): {peak[0] / 2**30:.2f} GiB; machine: {machine()}",
        f"failed cells: {len(failed)}" + "".join(f"; {d}/{c}/{m}: {r}" for d, c, m, r in
                                                   failed[["dataset", "classifier", "method", "reason"]].values),
        "columns: classifier, task, measure, dataset, method: the table cell; mean, std (ddof=0), n: the AE over the "
        "test samples; best, pvalue: lowest mean of the row and the paired Wilcoxon test against it; "
        "dataset=Average: mean of the dataset means, pooled std, test paired over every (dataset, sample); "
        "cell_seconds (fit + predict), prepare_seconds (the pair's shared work)",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as f:
        f.writelines(f"# {line}\n" for line in header)
        record.to_csv(f, index=False, float_format="%.10g")
    pairs_out = args.out.with_name(args.out.stem + "_pairs.csv")
    with open(pairs_out, "w") as f:
        f.write(f"# {header[0]}\n# every pair of methods per table: paired Wilcoxon test over every (dataset, sample); "
                f"see {args.out.name} for the command, commit and times\n")
        pairs.to_csv(f, index=False, float_format="%.10g")
    shift_out = args.out.with_name(args.out.stem + "_by_shift.csv")
    with open(shift_out, "w") as f:
        f.write(f"# {header[0]}\n# mean AE by amount of shift (L1 distance between V's and the sample's prevalence), "
                f"pooled over the datasets; see {args.out.name} for the command, commit and times\n")
        by_shift.to_csv(f, index=False, float_format="%.10g")
    authors = grid.load_results(args.results, n_samples=args.n_samples, sample_size=100, seed=0,
                                classifier=list(AUTHORS_CLASSIFIERS), method=list(AUTHORS_VARIANTS))
    authors_out = args.out.with_name(args.out.stem + "_authors.csv")
    with open(authors_out, "w") as f:
        f.write(f"# capshift: the paper's DS, NN and L-CBPE as the LEAP authors' code computes them "
                f"(capshift.experiment.AUTHORS_VARIANTS), {' and '.join(AUTHORS_CLASSIFIERS)}, the same datasets, samples "
                f"and measures as {args.out.name}, measured {date.today()}\n"
                f"# command: {portable(shlex.join(authors_cmd))}  (driver: python benchmarks/full_study.py)\n"
                f"# commit: {commit}; wall time of this invocation: {authors_wall:.0f} s; machine: {machine()}\n"
                "# columns as in the study record; best and pvalue compare these three methods only\n")
        study_record(authors, {d: datasets.REGISTRY[d].task for d in set(authors["dataset"])}).to_csv(
            f, index=False, float_format="%.10g")
    print(f"wrote {args.out} ({len(record)} rows), {pairs_out} ({len(pairs)} rows), {shift_out} ({len(by_shift)} rows), "
          f"{authors_out}")
    return code


if __name__ == "__main__":
    sys.exit(main())

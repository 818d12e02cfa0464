"""`capshift estimate` at a production model's scale, with NannyML's CBPE on the same files (issue 33).

Synthetic binary data, 20 features (two Gaussian classes whose means differ by N(0, 0.35) per feature), a logistic
regression h trained on 20,000 items and saved with skops; a labelled validation file of |V| rows (prevalence .5)
and unlabelled Parquet batches of at most 50,000 rows whose prevalence drifts from .2 to .8 (prior shift). For
each configuration (|V|, total unlabelled rows) and method, ``python -m capshift estimate`` runs as a user runs it
(a fresh process reading the files: intervals at 95% and the PPS diagnostic included), and NannyML 0.13.1's CBPE
(its own venv; reference = h's posteriors on V, analysis = the same batches' posteriors in chunks of the batch
size, computed beforehand, as a NannyML user logs them) runs in a fresh process too. Each is timed from process
start to exit, with its peak resident memory (``ru_maxrss`` of the child).

    PYTHONPATH=lib .venv/bin/python benchmarks/scale_estimate.py --work $TMPDIR/scale \\
        --nannyml-python /work/nannyml-venv/bin/python

Writes ``book/measured/scale_estimate.csv``: one row per (configuration, tool): n_val, n_unlabelled, batches,
method, seconds, peak_mib; with a header of the command, commit, wall time and machine.
"""
from __future__ import annotations

import argparse
import json
import resource
import shlex
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "measured" / "scale_estimate.csv"
BATCH = 50_000
#: (|V|, total unlabelled rows): |V| from 10^3 to 10^5 at 10^6 rows, and the rows from 10^4 to 10^6 at |V| = 10^5.
CONFIGS = [(1_000, 1_000_000), (10_000, 1_000_000), (100_000, 1_000_000), (100_000, 10_000), (100_000, 100_000)]
METHODS = ["O-LEAP_KDEy", "SLD-CBPE"]
D = 20

_NANNYML = """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {bench!r})
import pandas as pd
from _nannyml import cbpe
ref = pd.read_parquet({ref!r})
ana = pd.read_parquet({ana!r})
res = cbpe(ref, ana, {chunk})
assert len(res) == {n_chunks}, len(res)
"""


def _write_data(folder: Path, n_val: int, n_rows: int, seed: int = 0) -> int:
    """The model, V and the batches (plus their posteriors for NannyML) under ``folder``; returns the number of
    batches. Written once per configuration (a re-run reuses them)."""
    import numpy as np
    import pandas as pd
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    n_batches = max(1, n_rows // BATCH)
    size = n_rows // n_batches
    if (folder / "done").exists():
        return n_batches
    rng = np.random.default_rng(seed)
    mu = rng.normal(0, 0.35, size=(2, D))
    cols = [f"x{i}" for i in range(D)]

    def draw(n, p1):
        y = (rng.random(n) < p1).astype(int)
        return pd.DataFrame(rng.normal(size=(n, D)) + mu[y], columns=cols), y
    X, y = draw(20_000, 0.5)
    h = LogisticRegression().fit(X, y)
    (folder / "batches").mkdir(parents=True, exist_ok=True)
    sio.dump(h, folder / "model.skops")

    def posteriors(frame, labels=None):
        out = pd.DataFrame(h.predict_proba(frame), columns=["p0", "p1"])
        out["y_pred"] = h.predict(frame)
        if labels is not None:
            out["y_true"] = labels
        return out
    V, yv = draw(n_val, 0.5)
    posteriors(V, yv).to_parquet(folder / "nannyml_reference.parquet", index=False)
    V.assign(y=yv).to_parquet(folder / "validation.parquet", index=False)
    analysis = []
    for k, p in enumerate(np.linspace(0.2, 0.8, n_batches)):
        B, _ = draw(size, p)
        B.to_parquet(folder / "batches" / f"b{k:03d}.parquet", index=False)
        analysis.append(posteriors(B))
    pd.concat(analysis, ignore_index=True).to_parquet(folder / "nannyml_analysis.parquet", index=False)
    (folder / "done").write_text(json.dumps({"n_val": n_val, "n_rows": n_batches * size, "size": size}))
    return n_batches


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one child process (``cmd``), measured by a fresh wrapper process so
    that ``RUSAGE_CHILDREN`` holds that child alone."""
    wrapper = ("import resource, subprocess, sys, time, json; t = time.perf_counter(); "
               "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "w = time.perf_counter() - t; "
               "sys.stderr.write(r.stderr[-2000:]) if r.returncode else None; "
               "print(json.dumps([r.returncode, w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))")
    res = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, check=True)
    code, wall, rss = json.loads(res.stdout.strip().splitlines()[-1])
    if code:
        raise SystemExit(f"{shlex.join(cmd)} failed ({code}):\n{res.stderr}")
    return wall, rss / 1024


def main(argv=None):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, help="folder of the generated files (a re-run reuses them)")
    ap.add_argument("--nannyml-python", required=True, help="NannyML venv's interpreter")
    ap.add_argument("--methods", nargs="+", default=METHODS)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    import pandas as pd

    from _recording import git_commit, machine, write_recording
    t0 = time.perf_counter()
    rows = []
    env_python = sys.executable
    for n_val, n_rows in CONFIGS:
        folder = Path(args.work) / f"v{n_val}_u{n_rows}"
        n_batches = _write_data(folder, n_val, n_rows)
        meta = json.loads((folder / "done").read_text())
        base = {"n_val": n_val, "n_unlabelled": meta["n_rows"], "batches": n_batches}
        for m in args.methods:
            sec, mib = _timed([env_python, "-m", "capshift", "estimate", "--model", str(folder / "model.skops"),
                               "--validation", str(folder / "validation.parquet"), "--label", "y", "--unlabelled",
                               str(folder / "batches"), "--methods", m, "--no-progress",
                               "--out", str(folder / f"capshift_{m}.csv")])
            rows.append({**base, "tool": "capshift estimate", "method": m, "seconds": sec, "peak_mib": mib})
            print(rows[-1], flush=True)
        code = _NANNYML.format(bench=str(Path(__file__).resolve().parent), ref=str(folder / "nannyml_reference.parquet"),
                               ana=str(folder / "nannyml_analysis.parquet"), chunk=meta["size"], n_chunks=n_batches)
        sec, mib = _timed([args.nannyml_python, "-c", code])
        rows.append({**base, "tool": "NannyML", "method": "CBPE", "seconds": sec, "peak_mib": mib})
        print(rows[-1], flush=True)
    wall = time.perf_counter() - t0
    version = subprocess.run([args.nannyml_python, "-c", "import nannyml; print(nannyml.__version__)"],
                             capture_output=True, text=True).stdout.strip()
    given = [("$NANNYML_PYTHON" if a == args.nannyml_python else a) for a in (sys.argv[1:] if argv is None else argv)]
    cmd = "PYTHONPATH=lib python benchmarks/scale_estimate.py " + " ".join(
        a if a == "$NANNYML_PYTHON" else shlex.quote(a) for a in given)
    write_recording(args.out, [
        "capshift: `capshift estimate` (95% intervals and the PPS diagnostic) and NannyML CBPE on the same files, "
        f"synthetic binary data, 20 features, LR, batches of at most {BATCH} rows; seconds = process start to "
        f"exit, peak_mib = peak resident memory; measured {date.today()}",
        f"command: {cmd}", f"commit {git_commit()}; NannyML {version} in its own venv",
        f"wall time: {wall:.0f} s; machine: {machine()}"], pd.DataFrame(rows).round(3))
    print(pd.DataFrame(rows).round(2).to_string())


if __name__ == "__main__":
    main()

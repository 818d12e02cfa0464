"""Numbers before and after a refactoring: a fingerprint of every method's predictions and of the chapters'
glued values, and the comparison of two fingerprints.

A refactoring that should not change a number (moving code between modules, one evaluation path for several
copies) is checked this way: take a fingerprint on the commit before, one on the commit after, and compare.

    python benchmarks/fingerprint.py grid  --out fp_before/grid.csv      # every registered method x classifier
    python benchmarks/fingerprint.py glue  --book _build_ci --out fp_before/glue.json   # a built book's glue
    python benchmarks/fingerprint.py compare fp_before fp_after

``grid``: :func:`capshift.grid.run_grid` (no cache: a fresh results folder) over every registered method and
every classifier on three datasets (two binary, one multiclass), accuracy and F1, written with every float's
full ``repr``. ``glue``: every value a chapter glued (myst-nb's ``glue``), read from the executed notebooks of a
book built with ``python -m capshift.book build --profile ci --out DIR``. ``compare``: the grid's predictions
must be bit-identical; glued values are listed where they differ (times differ from run to run: read the list).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

DATASETS = ("haberman", "iris.2", "cmc")


def grid(out: Path, n_samples: int, n_jobs: int) -> None:
    import pandas as pd

    from capshift import classifiers, grid as capgrid, registry

    with tempfile.TemporaryDirectory() as tmp:
        frame = capgrid.run_grid(list(DATASETS), classifiers=list(classifiers.CLASSIFIERS), methods=registry.names(),
                                 results=tmp, n_samples=n_samples, sample_size=100, measures=("accuracy", "f1"),
                                 n_jobs=n_jobs, progress=False)
    cols = ["dataset", "classifier", "method", "measure", "sample", "true", "predicted"]
    frame = frame[cols].sort_values(cols[:5]).reset_index(drop=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        fh.write(",".join(cols) + "\n")
        for row in frame.itertuples(index=False):
            fh.write(",".join(repr(v) if isinstance(v, float) else str(v) for v in row) + "\n")
    print(f"{len(frame)} rows -> {out}")


def glue(book: Path, out: Path) -> None:
    values = {}
    for nb in sorted(book.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in nb.parts or "jupyter_execute" in nb.parts:
            continue
        for cell in json.loads(nb.read_text()).get("cells", []):
            for output in cell.get("outputs", []):
                meta = output.get("metadata", {}).get("scrapbook", {})
                if meta.get("name"):  # myst-nb's glue: the value's mime bundle under the scrapbook's prefix
                    prefix = meta.get("mime_prefix", "")
                    data = {k[len(prefix):]: v for k, v in output.get("data", {}).items() if k.startswith(prefix)}
                    value = next((data[m] for m in ("text/markdown", "text/html", "text/plain", "image/png")
                                  if m in data), "")
                    if isinstance(value, list):
                        value = "".join(value)
                    if len(value) > 2000:  # a figure or a long table: its digest
                        value = "sha256:" + hashlib.sha256(value.encode()).hexdigest()
                    values[f"{nb.stem}:{meta['name']}"] = value
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(values, indent=1, sort_keys=True))
    print(f"{len(values)} glued values -> {out}")


def compare(before: Path, after: Path) -> int:
    bad = 0
    a, b = (before / "grid.csv"), (after / "grid.csv")
    if a.exists() and b.exists():
        la, lb = a.read_text().splitlines(), b.read_text().splitlines()
        diff = [(x, y) for x, y in zip(la, lb) if x != y]
        print(f"grid: {len(la)} vs {len(lb)} rows, {len(diff)} differ")
        for x, y in diff[:20]:
            print("  -", x, "\n  +", y)
        bad += len(diff) + abs(len(la) - len(lb))
    ga, gb = (before / "glue.json"), (after / "glue.json")
    if ga.exists() and gb.exists():
        va, vb = json.loads(ga.read_text()), json.loads(gb.read_text())
        keys = sorted(set(va) | set(vb))
        diff = [k for k in keys if va.get(k) != vb.get(k)]
        print(f"glue: {len(va)} vs {len(vb)} values, {len(diff)} differ")
        for k in diff:
            print(f"  {k}: {va.get(k)!r} -> {vb.get(k)!r}")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    g = sub.add_parser("grid")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--n-samples", type=int, default=20)
    g.add_argument("--n-jobs", type=int, default=2)
    u = sub.add_parser("glue")
    u.add_argument("--book", type=Path, required=True)
    u.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    if args.what == "grid":
        grid(args.out, args.n_samples, args.n_jobs)
    elif args.what == "glue":
        glue(args.book, args.out)
    else:
        return compare(args.before, args.after)
    return 0


if __name__ == "__main__":
    sys.exit(main())

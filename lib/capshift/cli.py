"""The ``capshift`` command line: one entry point for the grid runner and the book (argparse only).

Subcommands:

- ``capshift run ...`` / ``capshift summary ...``: a resumable grid of CAP experiments into a results directory
  (:func:`capshift.grid.run_grid`, :func:`capshift.grid.load_results`);
- ``capshift build|chapter|check|colab ...``: execute the book's chapters and build the HTML (the book runner,
  :mod:`capshift.book`; ``python -m capshift.book ...`` is the same);
- ``capshift estimate ...``: a deployed model's accuracy on batches of unlabelled data, from files
  (:func:`capshift.estimate.estimate`), written as a per-batch table and a plot.

``python -m capshift ...`` is the same command line (:mod:`capshift.__main__`). Bad arguments exit with status 2 and
a one-line message, no traceback.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import yaml

from . import book
from . import datasets as _datasets
from . import conformal as _conformal
from . import pps_check as _pps_check
from . import protocols as _protocols
from . import quantifiers as _quantifiers
from . import estimate as _estimate
from . import plots as _plots
from .classifiers import CLASSIFIERS
from .experiment import DEFAULT_METHODS
from .grid import DEFAULT_CELL_TIMEOUT, FailedCellsWarning, load_results, run_grid
from .leap import DEFAULT_SOLVER, SOLVERS

__all__ = ["main", "build_parser", "COMMANDS", "add_grid_commands", "run_grid_command", "add_estimate_command",
           "estimate_command", "book_command"]


# ---- the grid ----
def add_grid_commands(sub) -> argparse.ArgumentParser:
    """Add the grid's subcommands (run, summary) to an argparse ``add_subparsers()`` object; returns the ``run``
    parser (its errors name its usage)."""
    r = sub.add_parser("run", help="compute the missing cells of a grid",
                       description="Compute the cells of the grid missing from --results; finished cells are "
                                   "kept, so an interrupted run resumes where it stopped.")
    r.add_argument("--datasets", nargs="+", required=True, metavar="NAME",
                   help="dataset names, or 'binary' / 'multiclass' (the offline datasets of the LEAP paper); "
                        f"offline: {', '.join(_datasets.names(offline=True))}")
    r.add_argument("--classifiers", nargs="+", default=["lr"], metavar="NAME",
                   help=f"classifiers, from {', '.join(CLASSIFIERS)} (default: lr)")
    r.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), metavar="NAME",
                   help="CAP method names of capshift.registry (default: %(default)s)")
    r.add_argument("--results", required=True, metavar="DIR", help="results directory (created if absent)")
    r.add_argument("--protocol", default="upp", choices=_protocols.names(), metavar="NAME",
                   help="sampling protocol of the test samples: "
                        + "; ".join(f"{n}, {c.description}" for n, c in _protocols.PROTOCOLS.items())
                        + f" (default: upp). The PPS protocols ({', '.join(_protocols.names('pps'))}) run on the "
                          "datasets above; the dataset-shift families "
                          f"({', '.join(_protocols.names('shift'))}) on {', '.join(_datasets.SHIFT_DATASETS)}")
    r.add_argument("--protocol-param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="set a parameter of the protocol (value read as YAML; repeatable), e.g. "
                        "--protocol-param repeats 1 --protocol-param train_size 2000; it enters the cells' key")
    r.add_argument("--n-samples", type=int, default=1000, help="test samples per dataset (default: 1000)")
    r.add_argument("--sample-size", type=int, default=100, help="items per test sample (default: 100)")
    r.add_argument("--measures", nargs="+", default=["accuracy"], metavar="NAME",
                   help="measures to predict (default: accuracy)")
    r.add_argument("--seed", type=int, default=0, help="seed of split, classifier and protocol (default: 0)")
    r.add_argument("--solver", default=DEFAULT_SOLVER,
                   help=f"LEAP solver, one of {', '.join(SOLVERS)} (default: %(default)s)")
    r.add_argument("--n-jobs", type=int, default=-1, help="workers for loky (default: -1, all cores)")
    r.add_argument("--backend", default="loky", help="loky (default), dask or ray")
    r.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="dask scheduler address (e.g. tcp://host:8786) or Ray address; with --backend dask and "
                        "no address, a local cluster of --n-jobs workers is started")
    r.add_argument("--cell-timeout", type=float, default=DEFAULT_CELL_TIMEOUT, metavar="SECONDS",
                   help="time budget of one cell; a cell past it (or raising) is recorded as failed, the grid goes "
                        "on, and a re-run retries it (default: %(default)g)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    s = sub.add_parser("summary", help="mean AE per dataset and method of a results directory")
    s.add_argument("--results", required=True, metavar="DIR")
    return r


def _expand_datasets(names):
    out = []
    for n in names:
        out += _datasets.names(task=n, offline=True) if n in ("binary", "multiclass") else [n]
    return out


def run_grid_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Carry out ``run`` or ``summary`` (``args.command``); bad arguments exit through ``parser.error`` (the
    command's own parser: status 2, one line)."""
    if args.command == "summary":
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FailedCellsWarning)  # listed below, in full
                df = load_results(args.results)
        except (ValueError, TypeError) as exc:
            parser.error(str(exc))
        if df.empty:
            print(f"{args.results}: no results")
        else:
            table = df.groupby(["classifier", "measure", "dataset", "method"], sort=False)["ae"].mean()
            print(table.unstack("method").round(4).to_string())
        _print_failed(df.attrs["failed"])
        return 1 if len(df.attrs["failed"]) else 0
    try:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FailedCellsWarning)  # listed below, in full
            protocol = _protocols.make_protocol(args.protocol, **{k: yaml.safe_load(v) for k, v in args.protocol_param})
            df = run_grid(_expand_datasets(args.datasets), args.classifiers, args.methods, args.results,
                          protocol=protocol, n_samples=args.n_samples, sample_size=args.sample_size,
                          measures=args.measures, seed=args.seed, solver=args.solver, n_jobs=args.n_jobs,
                          backend=args.backend, scheduler=args.scheduler, progress=not args.no_progress,
                          cell_timeout=args.cell_timeout)
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    except KeyboardInterrupt:
        print(f"interrupted: the finished cells are in {args.results} (the cell in hand was not written); re-run "
              "the same command to resume", file=sys.stderr)
        return 130
    c = df.attrs["cells"]
    print(f"{c['reused']} cells reused, {c['computed']} computed, {c['failed']} failed; {len(df)} rows in "
          f"{args.results} ({time.perf_counter() - t0:.1f} s)")
    if len(df):
        print(f"mean AE by method:\n{df.groupby(['measure', 'method'])['ae'].mean().round(4).to_string()}")
    _print_failed(df.attrs["failed"])
    return 1 if c["failed"] else 0


def _print_failed(failed: list) -> None:
    """The failed cells (``df.attrs["failed"]``), one line each, on stderr (no results; a re-run retries them)."""
    if failed:
        print(f"{len(failed)} failed cell(s), without results (re-run the same command to retry them):",
              file=sys.stderr)
        for f in failed:
            print(f"  {f['dataset']} / {f['classifier']} / {f['method']}: {f['reason']}", file=sys.stderr)


# ---- estimate ----
def _bound(text: str):
    """A size bound of the command line: a positive integer, or "none" (no bound)."""
    if text.strip().lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'none', got {text!r}") from None


def add_estimate_command(sub) -> argparse.ArgumentParser:
    """Add ``estimate`` (:func:`capshift.estimate.estimate` on files) to an ``add_subparsers()`` object."""
    e = sub.add_parser("estimate", help="estimate a model's accuracy on batches of unlabelled data",
                       description="Estimate a fitted model's accuracy (or F1) on each batch of unlabelled data with "
                                   "CAP methods, with a prediction interval, a PPS diagnostic and alerts; write the "
                                   "per-batch table (CSV or Parquet) and a plot (PNG).")
    e.add_argument("--model", default=None, help="fitted model: .skops (or .pkl/.joblib with --trust-pickle)")
    e.add_argument("--validation", default=None, help="labelled validation data, CSV or Parquet")
    e.add_argument("--label", default=None, help="name of the label column")
    e.add_argument("--unlabelled", default=None, help="a CSV/Parquet file, or a directory of them (one batch each)")
    e.add_argument("--chunk-size", type=int, default=None, help="cut one file into batches of this many rows")
    e.add_argument("--timestamp", default=None, help="cut one file by this date column (with --period)")
    e.add_argument("--period", default=None, help="pandas period of --timestamp: D, W, M, ...")
    e.add_argument("--methods", nargs="+", default=list(_estimate.DEFAULT_METHODS), metavar="NAME",
                   help="CAP methods of capshift.registry (default: %(default)s)")
    e.add_argument("--measure", default="accuracy", choices=_estimate.MEASURES)
    e.add_argument("--interval", type=float, default=0.95, help="level of the prediction interval (default 0.95)")
    e.add_argument("--threshold", type=float, default=None, help="alert when an estimate is below this value")
    e.add_argument("--min-batch", type=int, default=30, help="smaller batches get a note (default 30)")
    e.add_argument("--trust-pickle", action="store_true", help="allow a joblib/pickle model (pickle runs code)")
    e.add_argument("--trust", nargs="+", default=None, metavar="TYPE", help="extra types to trust in a .skops file")
    e.add_argument("--max-fit-items", type=_bound, default=_quantifiers.MAX_FIT_ITEMS, metavar="N",
                   help="fit KDEy on at most N items of the validation set, 'none' for all (default %(default)s)")
    e.add_argument("--max-cal-size", type=_bound, default=_conformal.MAX_CAL_SIZE, metavar="N",
                   help="calibrate the interval on samples of at most N items; a larger batch gets that size's "
                        "interval, 'none' for its own (default %(default)s)")
    e.add_argument("--pps-max-items", type=_bound, default=_pps_check.DEFAULT_MAX_ITEMS, metavar="N",
                   help="run the PPS diagnostic on at most N items of each batch, 'none' for all (default %(default)s)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--out", default=None, help="per-batch table: .csv or .parquet")
    e.add_argument("--plot", default=None, help="plot file (.png; default: --out with suffix .png)")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    e.add_argument("--write-example", default=None, metavar="DIR",
                   help="write the book's embedded example (model, validation file, 20 batches) to DIR, print "
                        "the command that estimates on it, and stop")
    return e


def estimate_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Carry out ``estimate`` (``parser``: its own parser): bad input exits with status 2 and one line, before
    anything is written."""
    def err(message: str):  # one line, without argparse's usage block (it names no argument that was wrong)
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)

    if args.write_example:
        ex = _estimate.example_stream(random_state=args.seed)
        files = ex.write(Path(args.write_example))
        print(f"the example of book/your_data.md is in {args.write_example}; estimate on it with:\n"
              f"capshift estimate --model {files['model']} --validation {files['validation']} "
              f"--label {ex.label} --unlabelled {files['unlabelled']} --out {Path(args.write_example) / 'table.csv'}")
        return 0
    missing = [f"--{a}" for a in ("model", "validation", "label", "unlabelled", "out") if getattr(args, a) is None]
    if missing:
        err(f"the arguments {', '.join(missing)} are required (or --write-example DIR for the book's example)")
    out = Path(args.out)
    plot = Path(args.plot) if args.plot else out.with_suffix(".png")
    if out.suffix.lower() not in (".csv", ".parquet"):
        err(f"--out must end in .csv or .parquet, got {out.name!r}")
    if plot.suffix.lower() != ".png":
        err(f"--plot must end in .png, got {plot.name!r}")
    try:
        res = _estimate.estimate(args.model, args.validation, args.label, args.unlabelled, methods=args.methods,
                                 measure=args.measure, interval=args.interval, threshold=args.threshold,
                                 min_batch=args.min_batch, chunk_size=args.chunk_size, timestamp=args.timestamp,
                                 period=args.period, trust_pickle=args.trust_pickle, trusted=args.trust,
                                 max_fit_items=args.max_fit_items, max_cal_size=args.max_cal_size,
                                 pps_max_items=args.pps_max_items, random_state=args.seed,
                                 progress=not args.no_progress)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        err(str(exc).splitlines()[0])
    out.parent.mkdir(parents=True, exist_ok=True)
    plot.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".csv":
        res.table.to_csv(out, index=False)
    else:
        res.table.to_parquet(out, index=False)
    _plots.estimate_band(res.table, res.measure, res.threshold).savefig(plot, dpi=120)
    n_doubt = res.table.loc[res.table["pps"] == _estimate.PPS_DOUBTFUL, "batch"].nunique()
    n_alert = res.table.loc[res.table["alert"], "batch"].nunique()
    print(f"{res.table['batch'].nunique()} batches, {len(res.table)} rows -> {out}; plot -> {plot}; "
          f"{n_alert} batch(es) alerted, {n_doubt} PPS doubtful ({res.seconds:.1f} s)")
    return 0


def book_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Carry out one of the book's subcommands (:func:`capshift.book.run_command`)."""
    args.cmd = args.command  # the book runner's name for it
    return book.run_command(args)


#: The command line's subcommands, one entry per group: ``(add, run)``, where ``add(sub)`` adds the group's parsers
#: to an argparse ``add_subparsers()`` object and ``run(args, parser)`` carries out a parsed command of the group
#: (``parser``: that command's own parser, for its one-line errors) and returns the exit status. A new subcommand
#: is its two functions and one entry here.
COMMANDS = (
    (add_grid_commands, run_grid_command),  # run, summary
    (book.add_commands, book_command),  # build, chapter, check, colab
    (add_estimate_command, estimate_command),  # estimate
)


def build_parser(prog: str = "capshift") -> argparse.ArgumentParser:
    """The command line's parser: every subcommand of :data:`COMMANDS`, each parsed command carrying its ``run``
    function and its own parser (``args.run``, ``args.command_parser``)."""
    p = argparse.ArgumentParser(prog=prog, description="Run a resumable grid of CAP experiments (datasets x "
                                "classifiers x methods) into a results directory of parquet files, estimate a "
                                "model's accuracy on your own files, or execute and build the book.")
    sub = p.add_subparsers(dest="command", required=True)
    for add, run in COMMANDS:
        before = set(sub.choices)
        add(sub)
        for name in set(sub.choices) - before:
            sub.choices[name].set_defaults(run=run, command_parser=sub.choices[name])
    return p


def main(argv=None, prog: str = "capshift") -> int:
    """The ``capshift`` console script (and ``python -m capshift``, with ``prog`` its name in the usage line):
    ``run``, ``summary``, ``build``, ``chapter``, ``check``, ``colab``, ``estimate``."""
    args = build_parser(prog).parse_args(argv)
    return args.run(args, args.command_parser)


if __name__ == "__main__":
    sys.exit(main())

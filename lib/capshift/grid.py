"""The resumable grid runner: datasets x classifiers x CAP methods, one persisted cell per (dataset, classifier, method).

:func:`run_grid` runs :func:`capshift.experiment.run_experiment`'s computation over a grid. Per (dataset,
classifier) it fits h on L, draws the protocol's samples from U and computes h's predictions and
posteriors on U and the shared quantifiers' estimates once; every method of that pair reuses them (their
time is not in ``seconds``). Each finished (dataset, classifier, method) *cell* is written at once to the
results directory as one parquet file (a temporary file in the same directory, then ``os.replace``, so a
file is either complete or absent) with a checksum file (``<cell>.sha256``, sha256sum format): a cell whose
bytes changed on disk is never reused. A cell is written only after a computation that finished without an
error and uninterrupted: Ctrl-C ends the run even when a dependency swallows it (scikit-learn's MLP does).
A cell that raises or runs past its time budget (``cell_timeout``) is a *failed* cell: its reason is recorded
(``<cell>.failed.json``), the grid goes on, :func:`run_grid` and :func:`load_results` list it, and a re-run
retries it. A re-run reads the cells it finds and computes only the missing and failed
ones; the file name holds a hash of every parameter that changes the numbers (dataset, classifier,
method and its registered class and parameters, protocol, number and size of samples, measures, seed,
solver), ``capshift.__version__`` and a hash of capshift's source files, so a changed parameter or a changed
method never reuses a stale cell.

Parallelism goes through joblib with the backend as a parameter: ``"loky"`` (processes on this machine,
the default), ``"dask"`` (a ``dask.distributed`` cluster: a Client, a scheduler address, the current
Client, or else a LocalCluster started for the run) or ``"ray"`` (when Ray is installed). The unit of
work is a (dataset, classifier) pair with its missing methods. Every task runs with one BLAS thread
(threadpoolctl), so the numbers are the same to the last bit whatever the backend and ``n_jobs`` (a
multi-threaded BLAS in the main process moves LEAP's solutions by ~1e-10). The command line is
``capshift run|summary ...`` (:mod:`capshift.cli`; also ``python -m capshift run|summary ...``).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import joblib
from joblib import Parallel, delayed, parallel_config
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from . import __version__, protocols, registry, selection
from . import datasets as _datasets
from .validation import CAPWarning, check_fraction, check_int
from .leap import DEFAULT_SOLVER
from .classifiers import check_classifier_name
from .tables import get_measure
from .evaluation import RESULT_COLUMNS, contexts, evaluate
from .experiment import DEFAULT_METHODS, check_run_args

__all__ = ["BACKENDS", "KEY_FIELDS", "DEFAULT_CELL_TIMEOUT", "CellTimeout", "FailedCellsWarning", "cell_key",
           "code_fingerprint", "SHARED_DIR", "run_grid", "load_results", "run_cells", "run_selection_study"]

#: Parallel backends of :func:`run_grid`.
BACKENDS = ("loky", "dask", "ray")
#: The fields of a cell's cache key (also columns of :func:`load_results`).
KEY_FIELDS = ("dataset", "classifier", "method", "method_spec", "protocol", "n_samples", "sample_size",
              "measures", "seed", "solver", "version", "code")
_META = b"capshift.cell"
_TIME = b"capshift.time"  # {"cell_seconds", "prepare_seconds"}: where a cell's time went (not part of its key)
#: Default time budget of one cell, in seconds (:func:`run_grid`'s ``cell_timeout``; the CLI's ``--cell-timeout``).
#: Generous: a cell of the LEAP study takes seconds, a hung one runs for ever; the budget turns the latter into
#: a recorded failure instead of a run that never ends.
DEFAULT_CELL_TIMEOUT = 1200.0
#: Subdirectory of a results directory that keeps the quantifiers shared across classifiers
#: (:func:`capshift.evaluation.share_quantifiers`' ``store``), per code fingerprint; safe to delete.
SHARED_DIR = ".shared-quantifiers"
_FAILED = ".failed.json"  # suffix of a failed cell's record (next to where its .parquet would be)
_SUM = ".sha256"  # suffix of a cell's checksum file (sha256sum format: a cell whose bytes changed is never reused)


class CellTimeout(BaseException):
    """A cell ran past its time budget. A BaseException, like KeyboardInterrupt, so that a dependency's
    ``except Exception`` cannot swallow it."""


class FailedCellsWarning(CAPWarning):
    """Some cells of a grid failed (an error or the time budget): they are listed, never turned into numbers."""


def _spec_text(spec) -> str:
    """The registered class and constructor parameters of a method, as text (part of the cache key)."""
    params = ", ".join(f"{k}={v!r}" for k, v in sorted(spec.params.items()))
    return f"{spec.cls.__module__}.{spec.cls.__qualname__}({params})"


#: capshift's modules that no cell's computation imports (tests/test_runner.py checks it on the import graph): the
#: command line, the book runner, the plots, the presentation layer, the paper's tables and the studies the grid
#: does not run. :func:`code_fingerprint` leaves them out, so that editing a chapter's formatting or the CLI does
#: not recompute every cell of the grid.
NOT_IN_CELLS = ("__main__", "book", "cli", "efficiency", "emq", "estimate", "plots", "pps_check", "presentation",
                "reference", "uncertainty")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the source files of capshift's modules that compute the grid's cells (all but
    :data:`NOT_IN_CELLS`): a cell computed by other code (an edit without a version bump, e.g. while developing) is
    never reused."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if path.parent == root and path.stem in NOT_IN_CELLS:
            continue
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cell_key(dataset: str, classifier: str, method: str, protocol="upp", n_samples: int = 1000,
             sample_size: int = 100, measures=("accuracy",), seed: int = 0, solver: str = DEFAULT_SOLVER) -> dict:
    """The cache key of one cell: every parameter that changes its numbers, plus ``capshift.__version__`` and
    :func:`code_fingerprint`. ``protocol`` (a registered name or a :class:`capshift.protocols.Protocol`) enters as
    its :meth:`~capshift.protocols.Protocol.key`: the name, and the parameters that differ from its defaults."""
    spec = registry.get(method)
    return {"dataset": dataset, "classifier": classifier, "method": spec.name, "method_spec": _spec_text(spec),
            "protocol": protocols.make_protocol(protocol).key(), "n_samples": int(n_samples),
            "sample_size": int(sample_size), "measures": list(measures), "seed": int(seed), "solver": solver,
            "version": __version__, "code": code_fingerprint()}


def _file_name(key: dict) -> str:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    safe = [re.sub(r"[^A-Za-z0-9._-]+", "_", str(key[f])) for f in ("dataset", "classifier", "method")]
    return "__".join(safe + [digest]) + ".parquet"


# ---- one cell on disk ----
def _to_table(frame: pd.DataFrame, key: dict, timing: dict | None = None):
    import pyarrow as pa
    if "true_prev" in frame.columns:  # tuples -> lists (the CAP runs' frames; a study's cell may have none)
        frame = frame.assign(true_prev=[list(map(float, p)) for p in frame["true_prev"]])
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = {**(table.schema.metadata or {}), _META: json.dumps(key).encode()}
    if timing is not None:
        meta[_TIME] = json.dumps(timing).encode()
    return table.replace_schema_metadata(meta)


def _to_frame(table) -> pd.DataFrame:
    frame = table.to_pandas()
    if "true_prev" not in frame.columns:  # a study's cell (run_cells): its own columns, as written
        return frame
    frame["true_prev"] = [tuple(float(v) for v in p) for p in frame["true_prev"]]
    return frame[RESULT_COLUMNS + [c for c in frame.columns if c not in RESULT_COLUMNS]]  # a shift family's after


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _replace_atomically(path: Path, write) -> None:
    """``write(tmp)`` into a temporary file in ``path``'s directory, give it the user's umask permissions
    (mkstemp makes 0600), then ``os.replace``: the file is either complete or absent."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class _QuantifierStore(dict):
    """The shared quantifiers of :func:`capshift.evaluation.share_quantifiers` kept in a directory (one joblib file
    per key) as well as in memory. What is computed here is written by :meth:`flush` only, which the pair calls
    once its preparation finished cleanly: an interrupt that a dependency swallowed (a half-trained surrogate)
    never reaches the disk. A file that cannot be read is recomputed."""

    def __init__(self, directory):
        super().__init__()
        self.directory, self.new = Path(directory), []

    def __contains__(self, key):
        if dict.__contains__(self, key):
            return True
        path = self.directory / f"{key}.joblib"
        try:
            value = joblib.load(path)
        except Exception:  # absent, or damaged in any way (a truncated or foreign file): computed afresh
            return False
        dict.__setitem__(self, key, value)
        return True

    def __missing__(self, key):  # store[key] on a key kept only on disk reads the file, as `key in store` does
        if self.__contains__(key):
            return dict.__getitem__(self, key)
        raise KeyError(key)

    def __setitem__(self, key, value):
        dict.__setitem__(self, key, value)
        self.new.append(key)

    def flush(self) -> None:
        """Write what was computed here; a store that cannot be written (a full disk) only loses the sharing."""
        with contextlib.suppress(OSError):
            if self.new:
                self.directory.mkdir(parents=True, exist_ok=True)
            for key in self.new:
                _replace_atomically(self.directory / f"{key}.joblib", lambda tmp, v=self[key]: joblib.dump(v, tmp))
        self.new = []


def _write_cell(path: Path, frame: pd.DataFrame, key: dict, timing: dict | None = None) -> None:
    """Write one cell atomically with its checksum file (``<cell>.sha256``); drop a failure record of it."""
    import pyarrow.parquet as pq
    table = _to_table(frame, key, timing)
    _replace_atomically(path, lambda tmp: pq.write_table(table, tmp))
    digest = _sha256(path)
    _replace_atomically(path.with_name(path.name + _SUM),
                        lambda tmp: Path(tmp).write_text(f"{digest}  {path.name}\n"))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path.with_suffix(_FAILED))


def _read_cell(path: Path, when_bad: str = "it is recomputed"):
    """``(key, frame, timing)`` of a cell file, or None if it is absent, unreadable, or its bytes differ from its
    checksum (then a RuntimeWarning says so, ending with ``when_bad``: what the caller does about it)."""
    import pyarrow.parquet as pq
    if not path.is_file():
        return None
    try:
        recorded = path.with_name(path.name + _SUM).read_text()
        if recorded != f"{_sha256(path)}  {path.name}\n":
            raise ValueError("its bytes differ from its checksum file: the file changed after it was written")
        table = pq.read_table(path)
        key = json.loads(table.schema.metadata[_META])
        timing = json.loads(table.schema.metadata.get(_TIME, b"{}"))
        return key, _to_frame(table), timing
    except Exception as exc:  # a damaged file is not a result: say so (and recompute it, when the caller does)
        warnings.warn(f"ignoring results file {path} ({type(exc).__name__}: {exc}); {when_bad}",
                      RuntimeWarning, stacklevel=3)
        return None


def _failure(key: dict, exc: BaseException, seconds: float, budget) -> dict:
    """The record of a failed cell: its key, the reason (one line), the end of the traceback, the time spent."""
    if isinstance(exc, CellTimeout):
        reason = f"time budget exceeded: stopped after {budget:g} s (cell_timeout)"
    else:
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
    tb = "".join(traceback.format_exception(exc)[-6:])
    return {"key": key, "reason": reason, "traceback": tb, "seconds": round(seconds, 3),
            "when": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def _write_failure(path: Path, failure: dict) -> None:
    _replace_atomically(path.with_suffix(_FAILED),
                        lambda tmp: Path(tmp).write_text(json.dumps(failure, indent=1, default=str)))


def _read_failures(results: Path) -> list[dict]:
    """The failure records of ``results``. A damaged record is left out with a RuntimeWarning naming it, as a
    damaged cell file is (the next run of the grid retries its cell either way)."""
    out = []
    for path in sorted(results.glob("*" + _FAILED)):
        try:
            record = json.loads(path.read_text())
            out.append({**{f: record["key"][f] for f in ("dataset", "classifier", "method")},
                        "reason": record["reason"], "seconds": record.get("seconds"), "key": record["key"],
                        "file": path.name})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            warnings.warn(f"ignoring failure record {path} ({type(exc).__name__}: {exc}); its cell is not "
                          "listed as failed (a re-run of the grid retries it)", RuntimeWarning, stacklevel=3)
    return out


@contextlib.contextmanager
def _guarded(budget):
    """Run a block with a time budget (SIGALRM -> :class:`CellTimeout`) and an interrupt that no dependency can
    swallow: Ctrl-C still raises KeyboardInterrupt where it lands, and if the block then ends normally (e.g.
    scikit-learn's MLP catches it and only warns "Training interrupted by user") KeyboardInterrupt is raised
    again here, so a half-computed result is never kept. Signals exist only in a process's main thread (in
    the main process and loky workers; not in Dask's worker threads, where the block runs unguarded)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    hit = {"interrupt": False, "timeout": False}

    def on_interrupt(signum, frame):
        hit["interrupt"] = True
        raise KeyboardInterrupt

    def on_alarm(signum, frame):
        hit["timeout"] = True
        raise CellTimeout(budget)

    timed = budget is not None and hasattr(signal, "SIGALRM")
    old_int = signal.signal(signal.SIGINT, on_interrupt)
    old_alarm = signal.signal(signal.SIGALRM, on_alarm) if timed else None
    if timed:
        signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        yield
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_alarm)
        signal.signal(signal.SIGINT, old_int)
    if hit["interrupt"]:
        raise KeyboardInterrupt("interrupted while a cell was computed (a dependency swallowed the interrupt); "
                                "the cell is not kept")
    if hit["timeout"]:
        raise CellTimeout(budget)


# ---- the work of one (dataset, classifier) pair ----
def _run_pair(dataset, classifier, cells, params, results_dir):
    """Prepare (dataset, classifier) once and compute its missing ``cells`` ((method, key, file name)), each
    within ``params["cell_timeout"]`` seconds; a cell is written as soon as it is done (or its failure record,
    if it raised or ran out of time) when ``results_dir`` is visible here. KeyboardInterrupt ends the pair (and
    the run) without writing the cell in hand. Returns ``[(file name, key, frame or None, failure or None)]``."""
    with threadpool_limits(limits=1):  # the same float arithmetic here, in a loky worker or on a Dask worker
        return _run_pair_body(dataset, classifier, cells, params, results_dir)


def _run_pair_body(dataset, classifier, cells, params, results_dir):
    budget = params["cell_timeout"]
    visible = results_dir is not None and os.path.isdir(results_dir)
    specs = [registry.get(m) for m, _, _ in cells]
    out = []
    t0 = time.perf_counter()
    store = _QuantifierStore(params["store"]) if visible and params["store"] else None
    try:
        with _guarded(budget):  # the shared work (h, samples, quantifiers) has the budget of one cell
            ctxs = contexts(dataset, classifier, specs, params["protocol"], params["n_samples"], params["sample_size"],
                            params["seed"], store=store)
        if store is not None:
            store.flush()  # not reached after an interrupt, even one a dependency swallowed
    except (Exception, CellTimeout) as exc:  # KeyboardInterrupt is neither: it ends the run
        for method, key, fname in cells:
            failure = _failure(key, exc, time.perf_counter() - t0, budget)
            failure["reason"] = f"preparing ({dataset}, {classifier}) failed: {failure['reason']}"
            if visible:
                _write_failure(Path(results_dir) / fname, failure)
            out.append((fname, key, None, failure, None))
        return out
    prepare_seconds = time.perf_counter() - t0
    for (method, key, fname), spec in zip(cells, specs):
        t0 = time.perf_counter()
        try:
            with _guarded(budget):
                frame = evaluate(ctxs, method, spec, params["measures"], params["solver"])
                frame = _to_frame(_to_table(frame, key))  # the dtypes a cell has when read back
        except (Exception, CellTimeout) as exc:
            failure = _failure(key, exc, time.perf_counter() - t0, budget)
            if visible:
                _write_failure(Path(results_dir) / fname, failure)
            out.append((fname, key, None, failure, None))
            continue
        timing = {"cell_seconds": round(time.perf_counter() - t0, 4), "prepare_seconds": round(prepare_seconds, 4)}
        if visible:
            _write_cell(Path(results_dir) / fname, frame, key, timing)
        out.append((fname, key, frame, None, timing))
    return out


@contextlib.contextmanager
def _backend(backend, scheduler, n_jobs):
    """joblib's configuration for ``backend``; yields the ``n_jobs`` to give ``Parallel``."""
    if backend == "loky":
        with parallel_config(backend="loky", n_jobs=n_jobs):
            yield n_jobs
    elif backend == "dask":
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - dask is a dependency
            raise ValueError("backend='dask' needs dask.distributed: pip install 'dask[distributed]'") from exc
        with contextlib.ExitStack() as stack:
            if isinstance(scheduler, Client):
                client = scheduler
            elif scheduler is not None:
                try:
                    client = stack.enter_context(Client(scheduler, set_as_default=False, timeout=30))
                except (OSError, TimeoutError) as exc:
                    raise ValueError(f"scheduler={scheduler!r}: cannot connect to a dask scheduler there "
                                     f"({type(exc).__name__}: {exc}); start one with 'dask scheduler' "
                                     "or pass a distributed.Client") from exc
            else:
                try:
                    from distributed import get_client
                    client = get_client()
                except ValueError:  # no Client yet: a local cluster for this run
                    workers = os.cpu_count() if n_jobs < 0 else n_jobs
                    cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1,
                                                               processes=True, dashboard_address=None))
                    client = stack.enter_context(Client(cluster, set_as_default=False))
            with client.as_current(), parallel_config(backend="dask", n_jobs=-1, wait_for_workers_timeout=60):
                yield -1
    elif backend == "ray":
        import ray
        from ray.util.joblib import register_ray
        register_ray()
        if not ray.is_initialized():
            ray.init(address=scheduler, ignore_reinit_error=True, log_to_driver=False)
        with parallel_config(backend="ray", n_jobs=n_jobs):
            yield n_jobs


def _results_as_done(tasks, n_jobs, backend):
    """The tasks' results as they finish (joblib's ``generator_unordered``); Ray's joblib backend has no
    generator, so there the tasks go in rounds of a few per worker (progress and results per round)."""
    if backend != "ray":
        yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks)
        return
    import ray
    workers = max(1, int(ray.cluster_resources().get("CPU", 1))) if n_jobs < 0 else n_jobs
    step = 2 * workers
    for i in range(0, len(tasks), step):
        yield from Parallel(n_jobs=n_jobs)(tasks[i:i + step])


def _check_grid_args(names, kind):
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        raise TypeError(f"{kind} must be a list of names, got {names!r}; e.g. {kind}=[{names!r}]")
    names = list(dict.fromkeys(names))
    if not names:
        raise ValueError(f"{kind} is empty: name at least one")
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{kind} must hold names (str), got {n!r}")
    return names


def _check_datasets_for(datasets, protocol) -> None:
    """ValueError naming the datasets that ``protocol`` cannot run on: the PPS protocols run on the datasets of
    :func:`capshift.datasets.names`, the dataset-shift families on :data:`capshift.datasets.SHIFT_DATASETS`."""
    shift_family = protocols.make_protocol(protocol).kind == "shift"
    known = set(_datasets.SHIFT_DATASETS) if shift_family else set(_datasets.names(paper=None))
    bad = [d for d in datasets if d not in known]
    if bad and shift_family:
        raise ValueError(f"unknown dataset(s) {bad} in datasets for the dataset-shift protocol {protocol!r}: it runs "
                         f"on {', '.join(_datasets.SHIFT_DATASETS)} (capshift.datasets.SHIFT_DATASETS)")
    if bad:
        offline = _datasets.names(offline=True)
        raise ValueError(f"unknown dataset(s) {bad} in datasets; the offline ones are {', '.join(offline)} "
                         "(all: capshift.datasets.names(paper=None))")


def run_grid(datasets, classifiers=("lr",), methods=DEFAULT_METHODS, results=None, *, protocol="upp",
             n_samples: int = 1000, sample_size: int = 100, measures=("accuracy",), seed: int = 0,
             solver: str = DEFAULT_SOLVER, n_jobs: int = 1, backend: str = "loky", scheduler=None,
             progress: bool = True, cell_timeout: float | None = DEFAULT_CELL_TIMEOUT) -> pd.DataFrame:
    """Run a grid of datasets x classifiers x methods, resumably, and return its tidy results.

    Parameters
    ----------
    datasets : list of str
        Dataset names (:func:`capshift.datasets.names`); each is loaded with ``seed``.
    classifiers : list of str
        Names of :data:`capshift.experiment.CLASSIFIERS` (``lr``, ``knn``, ``svm``, ``mlp``, ``rf``).
    methods : list of str
        Registered CAP method names (:func:`capshift.registry.names`).
    results : str, path or None
        The results directory (created if absent). Each (dataset, classifier, method) cell is a parquet file
        there, written when the cell is done; cells already there for the same parameters are read, not
        recomputed. None keeps nothing on disk. The quantifiers that read nothing of the classifier (KDEy's
        surrogate) are kept in its :data:`SHARED_DIR` and fitted once per dataset for all classifiers (the
        numbers are a fresh fit's); pairs run classifier by classifier so that a dataset's first pair fits them.
    protocol, n_samples, sample_size, measures, seed, solver
        As in :func:`capshift.experiment.run_experiment`.
    n_jobs : int
        Workers (joblib's convention: -1 = all cores); with ``backend="dask"`` or ``"ray"`` the cluster's.
    backend : {"loky", "dask", "ray"}
        joblib backend. ``"dask"`` runs on ``scheduler`` (a ``distributed.Client`` or a scheduler address such
        as ``"tcp://host:8786"``), else on the current Client, else on a LocalCluster of ``n_jobs`` worker
        processes started for the run; ``"ray"`` needs Ray installed (``scheduler``: a Ray address or None).
    scheduler : distributed.Client, str or None
        See ``backend``; only for ``"dask"`` and ``"ray"``.
    progress : bool
        A tqdm bar over the cells still to compute, with the estimated time left, and a line saying how many
        cells were reused, computed and failed.
    cell_timeout : float or None
        Time budget of one cell in seconds (default :data:`DEFAULT_CELL_TIMEOUT`; None: no budget). A cell that
        runs past it, or raises, is a *failed* cell: its reason is recorded in the results directory
        (``<cell>.failed.json``), the grid goes on, and a re-run retries it. The budget is enforced by SIGALRM
        in the process computing the cell (the main process and loky workers; not in Dask's or Ray's worker
        threads). The (dataset, classifier) preparation shared by a pair's cells has the same budget.

    Returns
    -------
    pandas.DataFrame
        :func:`capshift.experiment.run_experiment`'s columns, the finished cells in grid order (dataset,
        classifier, method). The numbers do not depend on ``n_jobs``, ``backend``, or on how often the run was
        interrupted; ``seconds`` is the time measured when the cell was computed. ``df.attrs["cells"]`` counts
        the cells ``{"reused", "computed", "failed"}``; ``df.attrs["failed"]`` lists the failed cells, one dict each
        (``dataset, classifier, method, reason, seconds``; ``pd.DataFrame(df.attrs["failed"])`` tabulates them;
        plain data, so ``df.to_parquet`` keeps working), empty if none failed; a :class:`FailedCellsWarning`
        lists them too. A failed cell has no rows: it is never turned into a number.

    Interrupts: Ctrl-C (KeyboardInterrupt) ends the run at once, also when a dependency swallows it (it is
    re-raised after the cell in hand, which is not written); the finished cells stay on disk. A cell file whose
    bytes changed after it was written (its ``.sha256`` checksum file) is recomputed, never reused.

    Raises ValueError/TypeError naming the argument for bad arguments, before any work: among them a ``results``
    path that is a file, lies below a file, cannot be created or is not writable, and ``cell_timeout`` <= 0.
    """
    datasets = _check_grid_args(datasets, "datasets")
    classifiers = _check_grid_args(classifiers, "classifiers")
    methods = _check_grid_args(methods, "methods")
    _check_datasets_for(datasets, protocol)
    for c in classifiers:
        check_classifier_name(c, "classifiers")
    _, measures = check_run_args(classifiers[0], methods, protocol, n_samples, sample_size, measures, seed, solver)
    methods = list(dict.fromkeys(registry.get(m).name for m in methods))
    n_jobs, cell_timeout = _check_backend_args(n_jobs, backend, scheduler, cell_timeout)
    if results is not None:
        results = _check_results_dir(results)

    params = dict(protocol=protocol, n_samples=int(n_samples), sample_size=int(sample_size), measures=measures,
                  seed=int(seed), solver=solver, cell_timeout=cell_timeout)
    key_params = {k: v for k, v in params.items() if k != "cell_timeout"}  # the budget does not change a number
    # the quantifiers that read nothing of h (KDEy) are fitted once per dataset and read back by its other
    # classifiers' pairs, from a store kept beside the cells and keyed, as they are, by the code
    params["store"] = None if results is None else str(results / SHARED_DIR / code_fingerprint())
    order, frames, todo = [], {}, {}
    for d in datasets:
        for c in classifiers:
            for m in methods:
                key = cell_key(d, c, m, **key_params)
                fname = _file_name(key)
                order.append(fname)
                found = _read_cell(results / fname) if results is not None else None
                if found is not None and found[0] == key:
                    frames[fname] = found[1]
                else:
                    todo.setdefault((d, c), []).append((m, key, fname))

    n_todo = sum(map(len, todo.values()))
    where = None if results is None else str(results)
    # classifier by classifier: the first pairs to run are of distinct datasets, so that each dataset's shared
    # quantifier is fitted by one pair and found in the store by the pairs after it, whatever the number of workers
    pairs = sorted(todo, key=lambda dc: (classifiers.index(dc[1]), datasets.index(dc[0])))
    tasks = [delayed(_run_pair)(d, c, todo[d, c], params, where) for d, c in pairs]
    counts, failures = _run_tasks(tasks, n_todo, results, frames, progress, backend, scheduler, n_jobs)
    return _finish(order, frames, counts, failures, "run_grid", RESULT_COLUMNS)


def _check_backend_args(n_jobs, backend, scheduler, cell_timeout) -> tuple[int, float | None]:
    """``(n_jobs, cell_timeout)`` checked as :func:`run_grid` and :func:`run_cells` take them (ValueError /
    TypeError naming the argument), with the backend and scheduler; before any work."""
    n_jobs = check_int(n_jobs, "n_jobs", min_value=None)
    if n_jobs == 0:
        raise ValueError("n_jobs must be a positive number of workers or negative (-1 = all cores), got 0")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if scheduler is not None and backend == "loky":
        raise ValueError("scheduler is only for backend='dask' or 'ray'; with backend='loky' leave it None")
    if backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ValueError("backend='ray' needs Ray, which is not installed here: pip install 'capshift[ray]' "
                             "or 'ray[default]' (or use backend='dask')") from None
    if backend == "dask" and scheduler is not None and not isinstance(scheduler, str):
        from distributed import Client
        if not isinstance(scheduler, Client):
            raise TypeError(f"scheduler must be a scheduler address (str) or a distributed.Client, "
                            f"got {type(scheduler).__name__}")
    if cell_timeout is not None:  # seconds, positive and finite (None: no budget)
        cell_timeout = check_fraction(cell_timeout, "cell_timeout", 0.0, math.inf)
    return n_jobs, cell_timeout


def _run_tasks(tasks, n_todo, results, frames, progress, backend, scheduler, n_jobs) -> tuple[dict, list]:
    """Run the delayed ``tasks`` (each returning ``[(file name, key, frame or None, failure or None, timing)]``
    for ``n_todo`` cells in all) on the backend, as they finish: a cell or failure record that a worker could not
    write (``results`` not visible there) is written here, and ``frames`` gets every computed frame. Returns
    ``(counts, failures)``: ``counts`` has ``reused`` (the frames given), ``computed`` and ``failed``."""
    counts = {"reused": len(frames), "computed": 0, "failed": 0}
    failures = []
    if progress and results is not None:
        tqdm.write(f"{results}: {counts['reused']} cell(s) reused, {n_todo} to compute", file=sys.stderr)
    if n_todo:
        bar = tqdm(total=n_todo, desc="cells", unit="cell", disable=not progress)
        with _backend(backend, scheduler, n_jobs) as jobs:
            try:
                for out in _results_as_done(tasks, jobs, backend):
                    for fname, key, frame, failure, timing in out:
                        if failure is not None:
                            if results is not None and not (results / fname).with_suffix(_FAILED).is_file():
                                _write_failure(results / fname, failure)  # a worker that could not see it
                            failures.append(failure)
                            counts["failed"] += 1
                            continue
                        if results is not None and not (results / fname).is_file():
                            _write_cell(results / fname, frame, key, timing)  # a worker that could not see it
                        frames[fname] = frame
                        counts["computed"] += 1
                    bar.update(len(out))
            finally:
                bar.close()
    if progress:
        tqdm.write(f"cells: {counts['reused']} reused, {counts['computed']} computed, {counts['failed']} failed",
                   file=sys.stderr)
    return counts, failures


def _finish(order, frames, counts, failures, where: str, columns=None) -> pd.DataFrame:
    """The frames in ``order`` concatenated, with ``attrs["cells"]`` and ``attrs["failed"]``; a
    :class:`FailedCellsWarning` (naming ``where``) lists the failed cells. ``columns``: of the empty frame."""
    parts = [frames[f] for f in order if f in frames]
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    failed = _failed_frame([{**{f: r["key"][f] for f in ("dataset", "classifier", "method")}, "reason": r["reason"],
                             "seconds": r["seconds"]} for r in failures])
    if len(failed):
        warnings.warn(_failed_message(failed, where), FailedCellsWarning, stacklevel=3)
    df.attrs["cells"], df.attrs["failed"] = counts, failed.to_dict("records")
    return df


def _failed_frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["dataset", "classifier", "method", "reason", "seconds"])


def _failed_message(failed: pd.DataFrame, where: str) -> str:
    lines = [f"  {d} / {c} / {m}: {r}" for d, c, m, r in zip(failed.dataset, failed.classifier, failed.method,
                                                               failed.reason)]
    return (f"{len(failed)} cell(s) failed and have no results ({where}; a re-run of the grid retries them):\n"
            + "\n".join(lines))


def _check_results_dir(results) -> Path:
    """The results directory, created if absent; ValueError naming ``results`` if it is a file, lies below a
    file, cannot be created or is not writable (checked before any work)."""
    if not isinstance(results, (str, os.PathLike)):
        raise TypeError(f"results must be a directory path or None, got {type(results).__name__}")
    results = Path(results)
    if results.exists() and not results.is_dir():
        raise ValueError(f"results={str(results)!r} exists and is not a directory: name a directory")
    try:
        results.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=results):
            pass
    except OSError as exc:
        what = "cannot be created" if not results.is_dir() else "is not writable"
        raise ValueError(f"results={str(results)!r} {what} ({exc.strerror or exc}): choose a directory you can "
                         "write to") from None
    return results


def load_results(results, **where) -> pd.DataFrame:
    """Every cell of a results directory as one tidy DataFrame.

    Columns: :func:`capshift.experiment.run_experiment`'s, then the other fields of the cache key
    (``protocol, n_samples, sample_size, measures`` (as "accuracy,f1"), ``seed, solver, version``), so runs
    with different parameters in one directory stay apart, then where the cell's time went: ``cell_seconds``
    (fitting the method on V and predicting every sample) and ``prepare_seconds`` (the work its (dataset,
    classifier) pair shares: h, the samples, the shared quantifiers; the same for every cell of the pair). ``where`` keeps the cells whose key fields equal
    the given values (e.g. ``seed=0, n_samples=1000``; a list matches any of its values). Rows are ordered by
    dataset, classifier, method (then as stored). Raises ValueError if the directory does not exist or for
    an unknown field.

    Failed cells (an error or the time budget, recorded by :func:`run_grid`) have no rows; they are listed in
    ``df.attrs["failed"]`` (a list of dicts ``dataset, classifier, method, reason, seconds``, selected by ``where``
    too) and by a
    :class:`FailedCellsWarning`. A cell file whose bytes changed since it was written is left out with a
    RuntimeWarning (a re-run of the grid recomputes it).
    """
    if not isinstance(results, (str, os.PathLike)):
        raise TypeError(f"results must be a directory path, got {type(results).__name__}")
    results = Path(results)
    if not results.is_dir():
        raise ValueError(f"results={str(results)!r} is not a directory (run_grid or "
                         "'capshift run --results DIR' creates it)")
    bad = sorted(set(where) - set(KEY_FIELDS))
    if bad:
        raise ValueError(f"unknown field(s) {bad} to select by; choose from {list(KEY_FIELDS)}")
    extra = [f for f in KEY_FIELDS if f not in ("dataset", "classifier", "method", "method_spec")]
    def selected(key):
        if any(key.get(f) not in (v if isinstance(v, (list, tuple)) else [v]) for f, v in where.items()
               if f != "measures"):
            return False
        return "measures" not in where or key["measures"] == list(where["measures"])

    frames = []
    for path in sorted(results.glob("*.parquet")):
        found = _read_cell(path, when_bad="it is left out (a re-run of the grid recomputes it)")
        if found is None:
            continue
        key, frame, timing = found
        if not selected(key):
            continue
        for f in extra:
            frame[f] = ",".join(key[f]) if f == "measures" else key[f]
        for f in ("cell_seconds", "prepare_seconds"):
            frame[f] = float(timing.get(f, math.nan))
        frames.append(frame)
    failed = _failed_frame([{f: r[f] for f in ("dataset", "classifier", "method", "reason", "seconds")}
                            for r in _read_failures(results) if selected(r["key"])])
    if len(failed):
        warnings.warn(_failed_message(failed, f"load_results({str(results)!r})"), FailedCellsWarning, stacklevel=2)
    if not frames:
        df = pd.DataFrame(columns=RESULT_COLUMNS + extra + ["cell_seconds", "prepare_seconds"])
    else:
        df = pd.concat(frames, ignore_index=True)
        df = df.sort_values(["dataset", "classifier", "method"], kind="stable", ignore_index=True)
    df.attrs["failed"] = failed.to_dict("records")
    return df


# ---- any study whose unit of work is a function of a key: the same files, checksums, failures and backends ----
def _run_cell(work, kwargs, key, fname, budget, results_dir):
    """One generic cell in a worker: ``work(**kwargs)`` within ``budget`` seconds and with one BLAS thread; the
    frame (or the failure record) is written when ``results_dir`` is visible here. Returns ``[(fname, key, frame or
    None, failure or None, timing)]`` as :func:`_run_pair` does."""
    visible = results_dir is not None and os.path.isdir(results_dir)
    t0 = time.perf_counter()
    try:
        with threadpool_limits(limits=1), _guarded(budget):
            frame = work(**kwargs)
            frame = _to_frame(_to_table(frame, key))  # the dtypes a cell has when read back
    except (Exception, CellTimeout) as exc:
        failure = _failure(key, exc, time.perf_counter() - t0, budget)
        if visible:
            _write_failure(Path(results_dir) / fname, failure)
        return [(fname, key, None, failure, None)]
    timing = {"cell_seconds": round(time.perf_counter() - t0, 4), "prepare_seconds": 0.0}
    if visible:
        _write_cell(Path(results_dir) / fname, frame, key, timing)
    return [(fname, key, frame, None, timing)]


def run_cells(work, cells, results=None, *, n_jobs: int = 1, backend: str = "loky", scheduler=None,
              progress: bool = True, cell_timeout: float | None = DEFAULT_CELL_TIMEOUT) -> pd.DataFrame:
    """Run ``work(**kwargs)`` for every cell of ``cells``, resumably, with :func:`run_grid`'s machinery: one parquet
    file per finished cell with its sha256 checksum file, a failure record (``.failed.json``) for a cell that
    raises or runs past ``cell_timeout`` (the run goes on; a re-run retries it), reuse of a cell whose key is
    unchanged, any joblib backend (``"loky"``, ``"dask"``, ``"ray"``; ``scheduler`` as in :func:`run_grid`).

    ``work``: a picklable function returning a DataFrame (module level, e.g.
    :func:`capshift.selection.study_cell`). ``cells``: list of ``(key, kwargs)``: ``key`` a JSON-serialisable dict
    with the fields ``dataset``, ``classifier``, ``method`` (they name the file) and every parameter that changes
    the numbers; ``capshift.__version__`` and :func:`code_fingerprint` are added to it here. Returns the finished
    cells' frames concatenated in the order of ``cells``; ``df.attrs["cells"]`` and ``df.attrs["failed"]`` as
    :func:`run_grid`. Raises ValueError/TypeError for bad arguments before any work.
    """
    if not callable(work):
        raise TypeError(f"work must be a function returning a DataFrame, got {type(work).__name__}")
    cells = list(cells)
    if not cells:
        raise ValueError("cells is empty: pass at least one (key, kwargs) pair")
    for key, kwargs in cells:
        if not (isinstance(key, dict) and {"dataset", "classifier", "method"} <= set(key)):
            raise ValueError(f"every cell key must be a dict with dataset, classifier and method, got {key!r}")
        if not isinstance(kwargs, dict):
            raise TypeError(f"a cell's kwargs must be a dict, got {type(kwargs).__name__}")
    n_jobs, cell_timeout = _check_backend_args(n_jobs, backend, scheduler, cell_timeout)
    if results is not None:
        results = _check_results_dir(results)
    order, frames, todo = [], {}, []
    for key, kwargs in cells:
        key = json.loads(json.dumps({**key, "version": __version__, "code": code_fingerprint()}))
        fname = _file_name(key)
        order.append(fname)
        found = _read_cell(results / fname) if results is not None else None
        if found is not None and found[0] == key:
            frames[fname] = found[1]
        else:
            todo.append((key, kwargs, fname))
    where = None if results is None else str(results)
    tasks = [delayed(_run_cell)(work, kwargs, key, fname, cell_timeout, where) for key, kwargs, fname in todo]
    counts, failures = _run_tasks(tasks, len(todo), results, frames, progress, backend, scheduler, n_jobs)
    return _finish(order, frames, counts, failures, "run_cells")


def run_selection_study(datasets, results=None, *, families=selection.FAMILIES, n_samples: int = 1000,
                        sample_size: int = 100, seed: int = 0, methods=selection.STUDY_METHODS,
                        cautious: str | None = "O-LEAP_KDEy", measure: str = "accuracy", mlp_hidden=(100,),
                        mlp_max_iter: int = 200, grid: str = "paper", n_jobs: int = 1, backend: str = "loky",
                        scheduler=None, progress: bool = True, cell_timeout: float | None = None) -> pd.DataFrame:
    """The model-selection study (chapter ``model_selection``) through :func:`run_cells`: one cell per dataset
    (:func:`capshift.selection.study_cell`: every candidate of ``families``, the CAP methods ``methods``, the
    cautious selector on ``cautious``' intervals; ``grid``: :func:`capshift.selection.candidate_grid`'s size),
    resumable and on any backend. Returns the candidate table of
    every finished dataset (apply :func:`capshift.selection.selections`). ``cell_timeout`` None: no budget (a
    cell of the full study takes minutes). Raises ValueError for an unknown dataset, family, method or measure,
    before any work."""
    datasets = _check_grid_args(datasets, "datasets")
    _datasets.check_names(datasets)
    fams = selection.check_families(families)
    methods = [registry.get(m).name for m in ([methods] if isinstance(methods, str) else methods)]
    if cautious is not None and cautious not in methods:
        raise ValueError(f"cautious={cautious!r} must be one of methods {methods}")
    get_measure(measure)
    params = dict(families=fams, n_samples=check_int(n_samples, "n_samples"),
                  sample_size=check_int(sample_size, "sample_size"), seed=int(seed), methods=methods,
                  cautious=cautious, measure=measure, mlp_hidden=[int(h) for h in mlp_hidden],
                  mlp_max_iter=check_int(mlp_max_iter, "mlp_max_iter"))
    if grid not in selection.GRID_SIZES:
        raise ValueError(f"grid must be one of {selection.GRID_SIZES}, got {grid!r}")
    if grid != "paper":  # the paper's grid keeps the keys of cells computed before the option existed
        params["grid"] = grid
    cells = [({"dataset": d, "classifier": "candidates", "method": "selection", **params,
               "interval_params": selection.STUDY_INTERVALS}, {"dataset": d, **params}) for d in datasets]
    return run_cells(selection.study_cell, cells, results, n_jobs=n_jobs, backend=backend, scheduler=scheduler,
                     progress=progress, cell_timeout=cell_timeout)

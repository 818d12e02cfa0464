"""The resumable grid runner: datasets x classifiers x CAP methods, one persisted cell per (dataset, classifier, method).

:func:`run_grid` runs :func:`capshift.experiment.run_experiment`'s computation over a grid. Per (dataset,
classifier) it fits h on L, draws the protocol's samples from U and computes h's predictions and
posteriors on U and the shared quantifiers' estimates once; every method of that pair reuses them (their
time is not in ``seconds``). Each finished (dataset, classifier, method) *cell* is written at once to the
results directory as one parquet file (a temporary file in the same directory, then ``os.replace``, so a
file is either complete or absent). A re-run reads the cells it finds and computes only the missing
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
``capshift run|summary ...`` (:mod:`capshift.cli`; alias ``python -m capshift.experiment run|summary ...``).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
import warnings
from pathlib import Path

import pandas as pd
from joblib import Parallel, delayed, parallel_config
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from . import __version__, registry
from . import datasets as _datasets
from ._validation import check_int
from .leap import DEFAULT_SOLVER
from .classifiers import CLASSIFIERS
from .experiment import DEFAULT_METHODS, RESULT_COLUMNS, check_run_args, method_frame, prepare

__all__ = ["BACKENDS", "KEY_FIELDS", "cell_key", "code_fingerprint", "run_grid", "load_results"]

#: Parallel backends of :func:`run_grid`.
BACKENDS = ("loky", "dask", "ray")
#: The fields of a cell's cache key (also columns of :func:`load_results`).
KEY_FIELDS = ("dataset", "classifier", "method", "method_spec", "protocol", "n_samples", "sample_size",
              "measures", "seed", "solver", "version", "code")
_META = b"capshift.cell"


def _spec_text(spec) -> str:
    """The registered class and constructor parameters of a method, as text (part of the cache key)."""
    params = ", ".join(f"{k}={v!r}" for k, v in sorted(spec.params.items()))
    return f"{spec.cls.__module__}.{spec.cls.__qualname__}({params})"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of capshift's own source files: a cell computed by other code (an edit without a version bump,
    e.g. while developing) is never reused."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cell_key(dataset: str, classifier: str, method: str, protocol: str = "upp", n_samples: int = 1000,
             sample_size: int = 100, measures=("accuracy",), seed: int = 0, solver: str = DEFAULT_SOLVER) -> dict:
    """The cache key of one cell: every parameter that changes its numbers, plus ``capshift.__version__`` and
    :func:`code_fingerprint`."""
    spec = registry.get(method)
    return {"dataset": dataset, "classifier": classifier, "method": spec.name, "method_spec": _spec_text(spec),
            "protocol": protocol, "n_samples": int(n_samples), "sample_size": int(sample_size),
            "measures": list(measures), "seed": int(seed), "solver": solver, "version": __version__,
            "code": code_fingerprint()}


def _file_name(key: dict) -> str:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    safe = [re.sub(r"[^A-Za-z0-9._-]+", "_", str(key[f])) for f in ("dataset", "classifier", "method")]
    return "__".join(safe + [digest]) + ".parquet"


# ---- one cell on disk ----
def _to_table(frame: pd.DataFrame, key: dict):
    import pyarrow as pa
    frame = frame.assign(true_prev=[list(map(float, p)) for p in frame["true_prev"]])
    table = pa.Table.from_pandas(frame, preserve_index=False)
    return table.replace_schema_metadata({**(table.schema.metadata or {}), _META: json.dumps(key).encode()})


def _to_frame(table) -> pd.DataFrame:
    frame = table.to_pandas()
    frame["true_prev"] = [tuple(float(v) for v in p) for p in frame["true_prev"]]
    return frame[RESULT_COLUMNS]


def _write_cell(path: Path, frame: pd.DataFrame, key: dict) -> None:
    """Write one cell atomically: a temporary file in the same directory, then ``os.replace``."""
    import pyarrow.parquet as pq
    table = _to_table(frame, key)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_cell(path: Path):
    """``(key, frame)`` of a cell file, or None if it is absent or unreadable (then it is recomputed)."""
    import pyarrow.parquet as pq
    if not path.is_file():
        return None
    try:
        table = pq.read_table(path)
        key = json.loads(table.schema.metadata[_META])
        return key, _to_frame(table)
    except Exception as exc:  # a damaged file is not a result: say so and recompute it
        warnings.warn(f"ignoring unreadable results file {path} ({type(exc).__name__}: {exc}); it is recomputed",
                      RuntimeWarning, stacklevel=3)
        return None


# ---- the work of one (dataset, classifier) pair ----
def _run_pair(dataset, classifier, cells, params, results_dir):
    """Prepare (dataset, classifier) once and compute its missing ``cells`` ((method, key, file name));
    each cell is written as soon as it is done when ``results_dir`` is visible here. Returns
    ``[(file name, key, frame)]``."""
    with threadpool_limits(limits=1):  # the same float arithmetic here, in a loky worker or on a Dask worker
        return _run_pair_body(dataset, classifier, cells, params, results_dir)


def _run_pair_body(dataset, classifier, cells, params, results_dir):
    specs = [registry.get(m) for m, _, _ in cells]
    ctx = prepare(dataset, classifier, specs, params["protocol"], params["n_samples"], params["sample_size"],
                   params["seed"])
    out = []
    for (method, key, fname), spec in zip(cells, specs):
        frame = method_frame(ctx, method, spec, params["measures"], params["solver"])
        frame = _to_frame(_to_table(frame, key))  # the dtypes a cell has when read back
        if results_dir is not None and os.path.isdir(results_dir):
            _write_cell(Path(results_dir) / fname, frame, key)
        out.append((fname, key, frame))
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


def run_grid(datasets, classifiers=("lr",), methods=DEFAULT_METHODS, results=None, *, protocol: str = "upp",
             n_samples: int = 1000, sample_size: int = 100, measures=("accuracy",), seed: int = 0,
             solver: str = DEFAULT_SOLVER, n_jobs: int = 1, backend: str = "loky", scheduler=None,
             progress: bool = True) -> pd.DataFrame:
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
        recomputed. None keeps nothing on disk.
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
        A tqdm bar over the cells still to compute, with the estimated time left.

    Returns
    -------
    pandas.DataFrame
        :func:`capshift.experiment.run_experiment`'s columns, cells in grid order (dataset, classifier,
        method). The numbers do not depend on ``n_jobs``, ``backend``, or on how often the run was
        interrupted; ``seconds`` is the time measured when the cell was computed.

    Raises ValueError/TypeError naming the argument for bad arguments, before any work.
    """
    datasets = _check_grid_args(datasets, "datasets")
    classifiers = _check_grid_args(classifiers, "classifiers")
    methods = _check_grid_args(methods, "methods")
    known = set(_datasets.names(paper=None))
    bad = [d for d in datasets if d not in known]
    if bad:
        raise ValueError(f"unknown dataset(s) {bad} in datasets; choose from capshift.datasets.names(paper=None)")
    for c in classifiers:
        if c not in CLASSIFIERS:
            raise ValueError(f"unknown classifier {c!r} in classifiers; choose from {sorted(CLASSIFIERS)}")
    _, measures = check_run_args(classifiers[0], methods, protocol, n_samples, sample_size, measures, seed, solver)
    methods = list(dict.fromkeys(registry.get(m).name for m in methods))
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
    if results is not None:
        if not isinstance(results, (str, os.PathLike)):
            raise TypeError(f"results must be a directory path or None, got {type(results).__name__}")
        results = Path(results)
        if results.exists() and not results.is_dir():
            raise ValueError(f"results={str(results)!r} exists and is not a directory")
        results.mkdir(parents=True, exist_ok=True)

    params = dict(protocol=protocol, n_samples=int(n_samples), sample_size=int(sample_size), measures=measures,
                  seed=int(seed), solver=solver)
    order, frames, todo = [], {}, {}
    for d in datasets:
        for c in classifiers:
            for m in methods:
                key = cell_key(d, c, m, **params)
                fname = _file_name(key)
                order.append(fname)
                found = _read_cell(results / fname) if results is not None else None
                if found is not None and found[0] == key:
                    frames[fname] = found[1]
                else:
                    todo.setdefault((d, c), []).append((m, key, fname))

    n_todo = sum(map(len, todo.values()))
    if n_todo:
        where = None if results is None else str(results)
        bar = tqdm(total=n_todo, desc="cells", unit="cell", disable=not progress)
        with _backend(backend, scheduler, n_jobs) as jobs:
            tasks = [delayed(_run_pair)(d, c, cells, params, where) for (d, c), cells in todo.items()]
            try:
                for out in _results_as_done(tasks, jobs, backend):
                    for fname, key, frame in out:
                        if results is not None and not (results / fname).is_file():
                            _write_cell(results / fname, frame, key)  # a worker that could not see the directory
                        frames[fname] = frame
                    bar.update(len(out))
            finally:
                bar.close()
    parts = [frames[f] for f in order]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=RESULT_COLUMNS)


def load_results(results, **where) -> pd.DataFrame:
    """Every cell of a results directory as one tidy DataFrame.

    Columns: :func:`capshift.experiment.run_experiment`'s, then the other fields of the cache key
    (``protocol, n_samples, sample_size, measures`` (as "accuracy,f1"), ``seed, solver, version``), so runs
    with different parameters in one directory stay apart. ``where`` keeps the cells whose key fields equal
    the given values (e.g. ``seed=0, n_samples=1000``; a list matches any of its values). Rows are ordered by
    dataset, classifier, method (then as stored). Raises ValueError if the directory does not exist or for
    an unknown field.
    """
    if not isinstance(results, (str, os.PathLike)):
        raise TypeError(f"results must be a directory path, got {type(results).__name__}")
    results = Path(results)
    if not results.is_dir():
        raise ValueError(f"results={str(results)!r} is not a directory (run_grid or "
                         "'python -m capshift.experiment run --results DIR' creates it)")
    bad = sorted(set(where) - set(KEY_FIELDS))
    if bad:
        raise ValueError(f"unknown field(s) {bad} to select by; choose from {list(KEY_FIELDS)}")
    extra = [f for f in KEY_FIELDS if f not in ("dataset", "classifier", "method", "method_spec")]
    frames = []
    for path in sorted(results.glob("*.parquet")):
        found = _read_cell(path)
        if found is None:
            continue
        key, frame = found
        if any(key.get(f) not in (v if isinstance(v, (list, tuple)) else [v]) for f, v in where.items()
               if f != "measures"):
            continue
        if "measures" in where and key["measures"] != list(where["measures"]):
            continue
        for f in extra:
            frame[f] = ",".join(key[f]) if f == "measures" else key[f]
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=RESULT_COLUMNS + extra)
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values(["dataset", "classifier", "method"], kind="stable", ignore_index=True)

"""Your own model, your own data: estimate a deployed classifier's accuracy batch by batch from files.

:func:`estimate` is what ``capshift estimate`` and the book's ``your_data`` chapter run. Inputs:

- a fitted scikit-learn model: an object, or a file -- skops (``.skops``, :mod:`skops.io`: loading runs no
  code; types outside skops' trusted defaults must be named in ``trusted``), or joblib/pickle (``.pkl``,
  ``.pickle``, ``.joblib``) only with ``trust_pickle=True``, because unpickling runs arbitrary code;
- a labelled validation set V: a DataFrame or a CSV / Parquet file, with the label in column ``label``;
- unlabelled data: a DataFrame or list of DataFrames, a CSV / Parquet file, or a directory of such files (one batch
  per file, in name order); a single table is cut into batches of ``chunk_size`` rows, or by a ``timestamp``
  column into calendar ``period`` s (pandas period aliases: "D", "W", "M", ...), as NannyML chunks. A batch that
  carries the label column gets its true value too (for checking the estimates; never used by them). Files are
  read one batch at a time (:func:`batch_sources`; a Parquet file cut by ``chunk_size`` through pyarrow's
  ``iter_batches``), so memory holds V and one batch whatever the stream's length; every batch's columns are
  checked before the first estimate, from the files' headers.

At a production scale (issue 33; benchmarks/scale_estimate.py, recorded in book/measured/scale_estimate.csv) the
cost per batch is bounded: KDEy is fitted on a stratified subsample of at most
:data:`capshift.quantifiers.MAX_FIT_ITEMS` items of V and shared (:class:`capshift.quantifiers.SharedQuantifier`)
by the LEAP-family methods, which evaluate its densities once per batch; h's posteriors are computed once per batch
and read by the diagnostic's q-hat (:data:`DIAGNOSTIC_QUANTIFIER`) and the posterior-based methods; each method's
estimate, interval and table come from one call (:meth:`capshift.base.CAPEstimator.predict_estimate`); the interval is
calibrated on samples of at most :data:`capshift.conformal.MAX_CAL_SIZE` items (a larger batch gets the wider
interval of that size); the diagnostic reads at most :data:`capshift.pps_check.DEFAULT_MAX_ITEMS` items of a batch
(its power at that size: :func:`capshift.pps_check.detectable_auc`).

For every batch and every CAP method of :mod:`capshift.registry`: the estimate of the measure, its
``predict_interval`` at level ``interval``, the PPS diagnostic of :mod:`capshift.pps_check` (a classifier
two-sample test of the batch against V reweighted to the batch's estimated prevalence; a batch whose p-value is
below ``pps_level`` is flagged "PPS doubtful: estimate unreliable"), and an alert when the estimate is below
``threshold``. A model that is a scikit-learn ``Pipeline`` is split into its preprocessing (applied to every
table: the CAP methods and the diagnostic read the transformed features) and its final classifier h; a bare
model must take numeric features. Classes are those of h (``classes_``), in their order; labels are matched to
them by value.

Bad input raises ValueError / TypeError / FileNotFoundError with one line naming the argument, before any
output is written. The study of the diagnostic's size and power is :func:`diagnostic_study`.
"""
from __future__ import annotations

import os
import pickle
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.pipeline import Pipeline
from sklearn.utils.metaestimators import available_if
from tqdm import tqdm  # the text bar: tqdm.auto warns (TqdmWarning) on import in a notebook without ipywidgets

from . import datasets, registry, shift
from .validation import check_fraction, check_int, check_seed
from .conformal import MAX_CAL_SIZE
from .pps_check import DEFAULT_LEVEL, DEFAULT_MAX_ITEMS, DEFAULT_MIN_ITEMS, pps_test
from .quantifiers import MAX_FIT_ITEMS, Quantifier, SharedQuantifier
from .tables import contingency_table, get_measure

__all__ = ["load_model", "read_table", "read_batches", "batch_sources", "BatchSource", "prepare", "estimate",
           "Estimation", "CodedClassifier", "PICKLE_SUFFIXES", "TABLE_SUFFIXES", "PPS_DOUBTFUL", "DEFAULT_METHODS",
           "MEASURES", "DIAGNOSTIC_QUANTIFIER", "Example", "example_stream", "diagnostic_study"]

PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
TABLE_SUFFIXES = (".csv", ".parquet", ".pq")
PPS_DOUBTFUL = "PPS doubtful: estimate unreliable"
DEFAULT_METHODS = ("O-LEAP_KDEy",)
#: The measures offered (names of capshift.tables.MEASURES).
MEASURES = ("accuracy", "f1", "macro_f1")
#: The quantifier of the PPS diagnostic's q-hat (:mod:`capshift.quantifiers`): "sld", SLD/EMQ on h's posteriors
#: (fitted on V by counting, one EM per batch on the posteriors the methods read too; no surrogate to train), or
#: "acc" when h has no ``predict_proba`` (the test is then unstratified). Chosen on the recorded study of the
#: diagnostic's size and power with each candidate q-hat (benchmarks/pps_diagnostic_study.py,
#: book/measured/pps_diagnostic_full_scale.csv; the your_data chapter): the cheapest candidate whose false-alarm
#: rate on PPS samples is within two standard errors of the level and whose power is not below KDEy-ML's.
DIAGNOSTIC_QUANTIFIER = "sld"


# ------------------------------------------------------------------------------------------------ inputs
def _path(p, name: str) -> Path:
    if not isinstance(p, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path), got {type(p).__name__}")
    path = Path(p).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{name}: {str(p)!r} does not exist; give the path of an existing file"
                                + (" or directory" if name == "unlabelled" else ""))
    return path


def load_model(model, trust_pickle: bool = False, trusted=None):
    """A fitted scikit-learn classifier from ``model``: an object (returned as is) or a file path.

    ``.skops`` files are loaded with :func:`skops.io.load`, trusting skops' defaults plus the type names in
    ``trusted`` (a list of str); joblib/pickle files (``.pkl``, ``.pickle``, ``.joblib``) only with
    ``trust_pickle=True`` (unpickling runs code). Raises FileNotFoundError for a missing file, ValueError for
    another suffix, a file that is not what its suffix says, untrusted skops types or a refused pickle, TypeError
    for an object without ``predict``.
    """
    if not isinstance(trust_pickle, bool):
        raise TypeError(f"trust_pickle must be True or False, got {trust_pickle!r}")
    if isinstance(model, (str, os.PathLike)):
        path = _path(model, "model")
        suffix = path.suffix.lower()
        if suffix == ".skops":
            import skops.io as sio
            try:
                untrusted = sio.get_untrusted_types(file=path)
            except Exception as exc:  # noqa: BLE001 - a zip or schema error of any kind: not a skops file
                raise ValueError(f"model: {path} is not a skops file ({type(exc).__name__}: {exc}); save the "
                                 "model with skops.io.dump(model, path)") from None
            extra = sorted(set(untrusted) - set(trusted or []))
            if extra:
                raise ValueError(f"model: {path} holds types skops does not trust by default: {extra}; if you "
                                 "trust them, pass them (trusted=[...], --trust TYPE)")
            model = sio.load(path, trusted=list(untrusted))
        elif suffix in PICKLE_SUFFIXES:
            if not trust_pickle:
                raise ValueError(f"model: {path} is a pickle; loading a pickle runs arbitrary code, so it is refused "
                                 "unless you trust the file: pass trust_pickle=True (--trust-pickle), or save the "
                                 "model with skops.io.dump")
            import joblib
            try:
                model = joblib.load(path)
            except (pickle.UnpicklingError, EOFError, ValueError, KeyError, IndexError) as exc:
                raise ValueError(f"model: {path} is not a joblib/pickle file ({type(exc).__name__}: {exc})") from None
        else:
            raise ValueError(f"model: {path} has suffix {suffix or '(none)'!r}; use a skops file (.skops) or, with "
                             f"trust_pickle=True, a joblib/pickle file ({', '.join(PICKLE_SUFFIXES)})")
    if not hasattr(model, "predict") or not hasattr(model, "classes_"):
        raise TypeError(f"model must be a fitted scikit-learn classifier (predict and classes_), got "
                        f"{type(model).__name__}")
    return model


def read_table(table, name: str) -> pd.DataFrame:
    """A DataFrame from a DataFrame or a CSV / Parquet file (by suffix). Raises FileNotFoundError,
    ValueError (other suffix, unreadable or empty file) or TypeError, naming ``name``."""
    if isinstance(table, pd.DataFrame):
        return table
    path = _path(table, name)
    if path.is_dir():
        raise ValueError(f"{name}: {path} is a directory; give a CSV or Parquet file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            df = pd.read_csv(path)
        elif suffix in (".parquet", ".pq"):
            df = pd.read_parquet(path)
        else:
            raise ValueError(f"{name}: {path} has suffix {suffix or '(none)'!r}; give a CSV (.csv) or Parquet "
                             "(.parquet) file")
    except pd.errors.EmptyDataError:
        df = pd.DataFrame()
    except (ValueError, OSError) as exc:
        if str(exc).startswith(name):
            raise
        raise ValueError(f"{name}: {path} could not be read as {suffix[1:]} ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0]})") from None
    return df


@dataclass
class BatchSource:
    """One batch of unlabelled data, not yet read: ``name``, ``columns`` (known before reading: a Parquet file's
    schema, a CSV file's header, a DataFrame's columns) and ``read()`` (the DataFrame). What lets
    :func:`estimate` check every batch's columns before any estimate and then hold one batch in memory at a
    time."""

    name: str
    columns: list
    read: object
    frame: pd.DataFrame | None = None  # the batch when it is already in memory (a DataFrame given or cut)


def _file_source(path: Path, name: str, label: str) -> BatchSource:
    """A lazy batch of one CSV / Parquet file (columns from its header or schema; empty Parquet files refused)."""
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq
        try:
            meta = pq.ParquetFile(path).metadata
        except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError family on a bad file
            raise ValueError(f"{label}: {path} could not be read as parquet ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0]})") from None
        if meta.num_rows == 0:
            raise ValueError(f"unlabelled: batch {name!r} is empty: every batch needs at least one item")
        columns = [meta.schema.column(i).name for i in range(meta.num_columns)]
    elif suffix == ".csv":
        try:
            columns = list(pd.read_csv(path, nrows=0).columns)
        except pd.errors.EmptyDataError:
            columns = []
    else:
        raise ValueError(f"{label}: {path} has suffix {suffix or '(none)'!r}; give a CSV (.csv) or Parquet "
                         "(.parquet) file")
    return BatchSource(name, columns, lambda: read_table(path, label))


def _parquet_chunks(path: Path, chunk_size: int) -> list[BatchSource]:
    """Consecutive chunks of ``chunk_size`` rows of one Parquet file, read one at a time (pyarrow's
    ``iter_batches``, in order): memory holds one chunk, whatever the file's size."""
    import pyarrow.parquet as pq
    pf = pq.ParquetFile(path)
    total = pf.metadata.num_rows
    columns = list(pf.schema_arrow.names)
    stream = pf.iter_batches(batch_size=chunk_size)
    state = {"next": 0}

    def reader(k):
        def read():
            if state["next"] != k:
                raise RuntimeError("the chunks of a Parquet file are read once, in order")
            state["next"] += 1
            return next(stream).to_pandas()
        return read
    return [BatchSource(f"rows {a}-{min(a + chunk_size, total) - 1}", columns, reader(k))
            for k, a in enumerate(range(0, total, chunk_size))]


def batch_sources(unlabelled, chunk_size: int | None = None, timestamp: str | None = None,
                  period: str | None = None) -> list[BatchSource]:
    """The batches as :class:`BatchSource` s, in stream order, none read yet where that is possible.

    ``unlabelled``: a DataFrame, a list of DataFrames, a CSV/Parquet file or a directory of them (each file a
    batch, sorted by name, read when its turn comes). A single table is cut by ``chunk_size`` (consecutive rows;
    the last chunk may be smaller; a Parquet file is then read chunk by chunk) or by ``timestamp`` and ``period``
    (rows grouped by calendar period, in time order; the table is read whole); neither: the table is one batch.
    Raises ValueError for both rules at once, a period without a timestamp column (or the reverse), an unknown
    period, a missing timestamp column, an empty directory or an empty batch (an empty CSV batch when it is
    read).
    """
    if chunk_size is not None and timestamp is not None:
        raise ValueError("chunk_size and timestamp are two chunking rules: give one of them")
    if (timestamp is None) != (period is None):
        raise ValueError("timestamp and period go together: give the timestamp column and a period such as 'W'")
    if chunk_size is not None:
        chunk_size = check_int(chunk_size, "chunk_size")

    def frame(name, df):
        return BatchSource(name, list(df.columns), lambda: df, df)
    if isinstance(unlabelled, (list, tuple)):
        if not unlabelled:
            raise ValueError("unlabelled is an empty list: pass at least one batch")
        batches = [frame(f"batch {i + 1}", read_table(b, f"unlabelled[{i}]")) for i, b in enumerate(unlabelled)]
        table = None
    elif isinstance(unlabelled, pd.DataFrame):
        batches, table = None, unlabelled
    else:
        path = _path(unlabelled, "unlabelled")
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix.lower() in TABLE_SUFFIXES)
            if not files:
                raise ValueError(f"unlabelled: the directory {path} holds no CSV or Parquet file")
            batches, table = [_file_source(p, p.stem, f"unlabelled ({p.name})") for p in files], None
        elif chunk_size is not None and path.suffix.lower() in (".parquet", ".pq"):
            _file_source(path, path.stem, "unlabelled")  # the file's checks
            batches, table = _parquet_chunks(path, chunk_size), None
            chunk_size = None
        else:
            batches, table = None, read_table(path, "unlabelled")
    if batches is not None:
        if chunk_size is not None or timestamp is not None:
            raise ValueError("chunk_size / timestamp cut one table into batches: with several batch files, leave "
                             "them out")
    elif chunk_size is not None:
        batches = [frame(f"rows {s}-{min(s + chunk_size, len(table)) - 1}", table.iloc[s:s + chunk_size])
                   for s in range(0, len(table), chunk_size)] or [frame("rows", table)]
    elif timestamp is not None:
        if timestamp not in table.columns:
            raise ValueError(f"timestamp: no column {timestamp!r} in unlabelled; its columns are {list(table.columns)}")
        try:
            when = pd.to_datetime(table[timestamp]).dt.to_period(period)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"timestamp/period: cannot cut column {timestamp!r} into periods {period!r} "
                             f"({str(exc).splitlines()[0]}); use a date column and a pandas period such as 'D', "
                             "'W' or 'M'") from None
        batches = [frame(str(p), g) for p, g in table.groupby(when, sort=True)] or [frame("all", table)]
    else:
        batches = [frame("all", table)]
    for b in batches:
        _check_not_empty(b.name, b.frame)
    return batches


def _check_not_empty(name, df) -> None:
    """ValueError for an empty batch (None: not read yet, nothing to check)."""
    if df is not None and len(df) == 0:
        raise ValueError(f"unlabelled: batch {name!r} is empty: every batch needs at least one item")


def read_batches(unlabelled, chunk_size: int | None = None, timestamp: str | None = None,
                 period: str | None = None) -> list[tuple[str, pd.DataFrame]]:
    """The batches, as ``[(name, DataFrame), ...]`` in stream order, all read (:func:`batch_sources` read one at a
    time, as :func:`estimate` does). Raises as :func:`batch_sources`."""
    out = []
    for b in batch_sources(unlabelled, chunk_size=chunk_size, timestamp=timestamp, period=period):
        df = b.read()
        _check_not_empty(b.name, df)
        out.append((b.name, df))
    return out


class CodedClassifier(ClassifierMixin, BaseEstimator):
    """A fitted classifier h seen through class codes 0..n-1 (what the CAP methods require): ``classes_`` is
    ``arange(n)``, ``predict`` returns the index of h's class in ``h.classes_``, ``predict_proba`` is h's.
    ``columns``: h's feature names, restored on the arrays it receives (h was fitted on a DataFrame)."""

    def __init__(self, classifier, columns=None):
        self.classifier = classifier
        self.columns = columns
        self.classes_ = np.arange(len(classifier.classes_))

    def fit(self, X, y):
        raise TypeError("CodedClassifier wraps an already-trained classifier: CAP methods never refit h")

    def __sklearn_is_fitted__(self):
        return True

    def _frame(self, X):
        return pd.DataFrame(X, columns=self.columns) if self.columns is not None else X

    def predict(self, X):
        return np.searchsorted(self.classifier.classes_, self.classifier.predict(self._frame(X))).astype(np.int64)

    @available_if(lambda self: hasattr(self.classifier, "predict_proba"))
    def predict_proba(self, X):
        return self.classifier.predict_proba(self._frame(X))


@dataclass
class Prepared:
    """Inputs validated and put in the CAP methods' form: ``h`` (a :class:`CodedClassifier`), ``transform``
    (table -> numeric features), ``features`` (column names), ``classes`` (h's), ``X_val`` / ``y_val`` (codes)."""

    h: object
    transform: object
    features: list
    classes: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    label: str
    timestamp: str | None = None

    def check_columns(self, columns, name: str) -> None:
        """ValueError if a batch's ``columns`` (besides the label and timestamp) differ from the model's features."""
        cols = [c for c in columns if c not in (self.label, self.timestamp)]
        missing = [c for c in self.features if c not in cols]
        extra = [c for c in cols if c not in self.features]
        if missing or extra:
            raise ValueError(f"unlabelled: batch {name!r} has columns that differ from the model's features: "
                             + "; ".join(s for s in (f"missing {missing}" if missing else "",
                                                     f"unexpected {extra}" if extra else "") if s)
                             + f" (the model's features: {self.features})")

    def features_of(self, batch: pd.DataFrame, name: str):
        """The batch's numeric features; ValueError if its columns differ from the model's features."""
        self.check_columns(batch.columns, name)
        return self.transform(batch[self.features], f"batch {name!r}")

    def labels_of(self, frame: pd.DataFrame, name: str):
        """Class codes of ``frame[label]`` (ValueError naming a class h does not know)."""
        y = frame[self.label].to_numpy()
        known = np.isin(y, self.classes)
        if not known.all():
            bad = sorted(pd.unique(y[~known]).tolist(), key=str)[:5]
            raise ValueError(f"{name}: label column {self.label!r} holds class(es) {bad} that the model does not "
                             f"know; the model's classes are {self.classes.tolist()}")
        return np.searchsorted(self.classes, y).astype(np.int64)


def prepare(model, validation, label: str, timestamp: str | None = None, trust_pickle: bool = False,
            trusted=None) -> Prepared:
    """Load and check the model and V (see the module doc). Raises ValueError/TypeError naming the argument:
    a missing label column, V's columns not the model's features, a class of V the model does not know,
    non-numeric features without a pipeline, NaN in V's features."""
    if not isinstance(label, str):
        raise TypeError(f"label must be the name of V's label column (a str), got {label!r}")
    model = load_model(model, trust_pickle=trust_pickle, trusted=trusted)
    V = read_table(validation, "validation")
    if label not in V.columns:
        raise ValueError(f"label: no column {label!r} in the validation data; its columns are {list(V.columns)}")
    features = [c for c in V.columns if c not in (label, timestamp)]
    if not features:
        raise ValueError("validation: no feature column besides the label")
    pipe = isinstance(model, Pipeline) and len(model.steps) > 1
    h = model[-1] if pipe else model
    named = getattr(model, "feature_names_in_", None)
    if named is not None and set(map(str, named)) != set(map(str, features)):
        miss = [c for c in named if c not in features]
        extra = [c for c in features if c not in list(named)]
        raise ValueError(f"validation: its columns differ from the model's features ({'missing ' + str(miss) if miss else ''}"
                         f"{'; ' if miss and extra else ''}{'unexpected ' + str(extra) if extra else ''}); the model "
                         f"was trained on {list(named)}")
    if named is not None:
        features = [str(c) for c in named]
    if pipe:
        pre = model[:-1]

        def transform(frame, name):
            try:
                out = pre.transform(frame)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{name}: the model's preprocessing failed ({str(exc).splitlines()[0]})") from None
            return out.to_numpy(dtype=float) if hasattr(out, "to_numpy") else out
        columns = None
    else:
        def transform(frame, name):
            bad = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
            if bad:
                raise ValueError(f"{name}: non-numeric feature column(s) {bad[:5]} and the model is not a pipeline; "
                                 "encode them, or save a scikit-learn Pipeline that does (e.g. with a OneHotEncoder)")
            arr = frame.to_numpy(dtype=float)
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name}: missing or infinite feature values; impute them, or save a Pipeline "
                                 "that does")
            return arr
        columns = features if getattr(h, "feature_names_in_", None) is not None else None
    prep = Prepared(CodedClassifier(h, columns), transform, features, np.asarray(h.classes_), None, None, label,
                    timestamp)
    if len(prep.classes) < 2:
        raise ValueError(f"model: it knows {len(prep.classes)} class; CAP needs a classifier of at least 2 classes")
    prep.y_val = prep.labels_of(V, "validation")
    prep.X_val = transform(V[features], "validation")
    return prep


# ------------------------------------------------------------------------------------------------ estimation
@dataclass
class Estimation:
    """What :func:`estimate` returns: ``table`` (one row per batch and method: batch, items, method, estimate,
    lower, upper, pps_auc, pps_pvalue, pps, alert, note, and ``true`` when the batch has labels), ``tables``
    (batch -> method -> estimated contingency table (n, n), rows true, columns predicted, for table methods),
    ``true_tables`` (batch -> true table, labelled batches), ``classes``, ``validation_value`` (h's measure on
    V), ``measure``, ``interval``, ``threshold``, ``seconds``."""

    table: pd.DataFrame
    tables: dict
    true_tables: dict
    classes: list
    validation_value: float
    measure: str
    interval: float
    threshold: float | None
    seconds: float = 0.0
    notes: list = field(default_factory=list)


def estimate(model, validation, label: str, unlabelled, methods=DEFAULT_METHODS, measure: str = "accuracy",
             interval: float = 0.95, threshold: float | None = None, min_batch: int = 30, chunk_size=None,
             timestamp=None, period=None, pps_level: float = DEFAULT_LEVEL, trust_pickle: bool = False,
             trusted=None, n_cal: int = 200, n_splits: int = 4, max_fit_items=MAX_FIT_ITEMS,
             max_cal_size=MAX_CAL_SIZE, pps_max_items=DEFAULT_MAX_ITEMS, random_state: int = 0,
             progress: bool = False) -> Estimation:
    """Estimate ``measure`` of ``model`` on every batch of ``unlabelled`` (see the module doc).

    ``methods``: registry names (:func:`capshift.registry.names`); ``measure``: "accuracy", "f1" (binary) or
    "macro_f1"; ``interval``: level of the prediction interval (``predict_interval`` with alpha = 1 - interval;
    its calibration uses ``n_splits`` halvings of V and ``n_cal`` samples, fewer than the library's default 10 and
    500 so that a stream of batches stays quick); ``threshold``: alert when an estimate is below it (None: no
    alerts); ``min_batch``: batches with fewer items still get an estimate and an interval, with a note;
    ``pps_level``: the diagnostic's false-alarm rate (stratified by h's posteriors when h has ``predict_proba``).
    The bounds that keep a large V and large batches cheap (the module doc): ``max_fit_items``, the KDEy
    subsample of V (:class:`capshift.quantifiers.Quantifier`); ``max_cal_size``, the largest calibration sample of
    the interval (:class:`capshift.conformal.ConformalInterval`); ``pps_max_items``, the diagnostic's subsample of a
    batch (:func:`capshift.pps_check.pps_test`); each None for no bound (cost then grows with the data).
    The diagnostic's q-hat is :data:`DIAGNOSTIC_QUANTIFIER`'s ("acc" for h without ``predict_proba``), whatever the
    methods, so that a batch's verdict does not depend on the methods asked for. Returns an :class:`Estimation`; raises ValueError /
    TypeError / FileNotFoundError (one line, naming the argument) on bad input, before any estimate.
    """
    import time
    t0 = time.perf_counter()
    if isinstance(methods, str):
        methods = [methods]
    methods = [registry.get(m).name for m in methods]
    if not methods:
        raise ValueError("methods is empty: name at least one CAP method of capshift.registry")
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {list(MEASURES)}, got {measure!r}")
    interval = check_fraction(interval, "interval")
    if threshold is not None:
        threshold = check_fraction(threshold, "threshold", closed="both")
    min_batch = check_int(min_batch, "min_batch")
    pps_level = check_fraction(pps_level, "pps_level")
    seed = check_seed(random_state, "random_state")
    bounds = {name: None if v is None else check_int(v, name, min_value=low) for name, v, low in
              (("max_fit_items", max_fit_items, 2), ("max_cal_size", max_cal_size, 2),
               ("pps_max_items", pps_max_items, DEFAULT_MIN_ITEMS))}
    prep = prepare(model, validation, label, timestamp=timestamp, trust_pickle=trust_pickle, trusted=trusted)
    n = len(prep.classes)
    if measure == "f1" and n != 2:
        raise ValueError(f"measure 'f1' is binary; the model has {n} classes: use 'macro_f1'")
    sources = batch_sources(unlabelled, chunk_size=chunk_size, timestamp=timestamp, period=period)
    for b in sources:  # every batch's columns checked before any estimate; its values when it is read
        prep.check_columns(b.columns, b.name)
    labelled = any(label in b.columns for b in sources)
    f_measure = get_measure(measure)
    val_value = float(f_measure(contingency_table(prep.y_val, prep.h.predict(prep.X_val), n)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's convergence chatter; capshift's own warnings are kept below
        warnings.simplefilter("default", UserWarning)
        # the diagnostic's q-hat: a quantifier on h's own predictions, fitted on V by counting (no surrogate)
        proba = hasattr(prep.h, "predict_proba")
        diagnostic = Quantifier(DIAGNOSTIC_QUANTIFIER if proba else "acc", prep.h,
                                random_state=seed).fit(prep.X_val, prep.y_val, n)
        # one KDEy fit shared by the LEAP-family methods that use it, and one density evaluation per batch
        # (the estimate, its interval and its table read the memoised prevalence)
        kdey = [m for m in methods if str(registry.get(m).params.get("quantifier", "")).lower() == "kdey"]
        q = SharedQuantifier("kdey", prep.h, random_state=seed, max_fit_items=bounds["max_fit_items"]).fit(
            prep.X_val, prep.y_val, n) if kdey else None
        ests = {}
        for m in methods:
            kw = {"quantifier": q} if m in kdey else {}
            est = registry.make_method(m, prep.h, random_state=seed, **kw)
            est.interval_params = {**est.interval_params, "n_cal": check_int(n_cal, "n_cal"),
                                   "n_splits": check_int(n_splits, "n_splits"), "max_cal_size": bounds["max_cal_size"]}
            if not est.supports(measure):
                raise ValueError(f"method {m!r} does not estimate {measure!r}; choose another method or measure")
            ests[m] = est.fit(prep.X_val, prep.y_val)
    rows, tables, true_tables, notes = [], {}, {}, []
    P_val = prep.h.predict_proba(prep.X_val) if proba else None
    for source in tqdm(sources, desc="batches", unit="batch", disable=not progress):
        name, frame = source.name, source.read()
        _check_not_empty(name, frame)
        X = prep.features_of(frame, name)
        y_true = prep.labels_of(frame, f"batch {name!r}") if label in frame.columns else None
        del frame
        P = prep.h.predict_proba(X) if proba else None  # h's posteriors, once per batch
        qhat = diagnostic.aggregate(P) if proba else diagnostic.quantify(X)  # SLD reads the posteriors P
        test = pps_test(X, prep.X_val, prep.y_val, qhat, level=pps_level, random_state=seed,
                        max_items=bounds["pps_max_items"],
                        posteriors_batch=P, posteriors_val=P_val)
        note = []
        if X.shape[0] < min_batch:
            note.append(f"{X.shape[0]} items, below min_batch={min_batch}: a wide interval")
        if test.note:
            note.append(test.note)
        true = None
        if y_true is not None:
            true_tables[name] = contingency_table(y_true, prep.h.predict(X), n)
            true = float(f_measure(true_tables[name]))
        tables[name] = {}
        for m, est in ests.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = est.predict_estimate(X, alpha=1 - interval, measure=measure, posteriors=P)
            if r.table is not None:
                tables[name][m] = r.table
            value = r.value
            row = {"batch": name, "items": int(X.shape[0]), "method": m, "estimate": value, "lower": r.lower,
                   "upper": r.upper, "pps_auc": test.auc, "pps_pvalue": test.pvalue,
                   "pps": PPS_DOUBTFUL if test.doubtful else ("not tested" if np.isnan(test.pvalue) else "plausible"),
                   "alert": bool(threshold is not None and value < threshold), "note": "; ".join(note)}
            if labelled:
                row["true"] = np.nan if true is None else true
            rows.append(row)
    return Estimation(pd.DataFrame(rows), tables, true_tables, [str(c) for c in prep.classes], val_value, measure,
                      interval, threshold, time.perf_counter() - t0, notes)


# ------------------------------------------------------------------------------------------------ the embedded example
@dataclass
class Example:
    """The embedded example of :func:`example_stream`: ``model`` (a fitted Pipeline), ``validation`` (DataFrame
    with the label column), ``batches`` (list of DataFrames, label included so that the true value is known),
    ``names`` (batch names), ``label``, ``segment`` (names of the covariate-shift batches), ``prevalences``
    (requested positive prevalence per batch), ``alphas`` (share of group A, the customers of 35 and over, per
    batch)."""

    model: object
    validation: pd.DataFrame
    batches: list
    names: list
    label: str
    segment: list
    prevalences: list
    alphas: list

    def write(self, folder) -> dict:
        """Write ``model.skops``, ``validation.parquet`` and ``batches/<name>.parquet`` under ``folder``
        (created); returns their paths (``model``, ``validation``, ``unlabelled``)."""
        import skops.io as sio
        folder = Path(folder)
        (folder / "batches").mkdir(parents=True, exist_ok=True)
        for old in (folder / "batches").glob("*.parquet"):
            old.unlink()
        sio.dump(self.model, folder / "model.skops")
        self.validation.to_parquet(folder / "validation.parquet", index=False)
        for name, b in zip(self.names, self.batches):
            b.to_parquet(folder / "batches" / f"{name}.parquet", index=False)
        return {"model": folder / "model.skops", "validation": folder / "validation.parquet",
                "unlabelled": folder / "batches"}


def example_stream(n_batches: int = 20, batch_size: int = 250, segment=(13, 17), random_state: int = 0) -> Example:
    """A deployed classifier and a stream of batches, offline: KEEL ``marketing`` (binary: household income of
    $30k or more; :func:`capshift.datasets.load_shift`), a logistic-regression Pipeline trained on 1000 items, V
    of 1000 items, both from one training sample of the global covariate-shift protocol
    (:class:`capshift.shift.GlobalCovariateShift`, Gonzalez et al. 2024, Algorithm 2) at p_L = 0.5 and a share
    alpha_L = 0.5 of group A, the customers of 35 and over (the smaller value of the group attribute, which marks
    those under 35). Batch t of ``batch_size`` items has positive prevalence 0.5 + 0.3 sin(2 pi t / n_batches)
    rounded to 0.05 (PPS: the share of 35 and over stays 0.5), except the batches ``segment[0] <= t < segment[1]``
    (0-based), where everyone is under 35 (alpha_U = 0: global covariate shift). Deterministic given
    ``random_state``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    n_batches = check_int(n_batches, "n_batches", min_value=2)
    batch_size = check_int(batch_size, "batch_size")
    seed = check_seed(random_state, "random_state")
    data = datasets.load_shift("marketing")
    X, y, g = data.binary()
    grid = np.round(np.arange(0.2, 0.801, 0.05), 2)
    t = np.arange(n_batches)
    prev = np.round(np.round((0.5 + 0.3 * np.sin(2 * np.pi * t / n_batches)) / 0.05) * 0.05, 2)
    alphas = np.where((t >= segment[0]) & (t < segment[1]), 0.0, 0.5)
    fam = shift.GlobalCovariateShift(X, y, g, train_prevalences=[0.5], train_alphas=[0.5],
                                     test_prevalences=list(grid), test_alphas=[0.5, 0.0], train_size=2000,
                                     test_size=batch_size, n_samples=n_batches, repeats=1, random_state=seed)
    tr = fam.trial(0)
    cols = [c.lower() for c in data.feature_names]
    label = "high_income"
    frame = pd.DataFrame(tr.train.X, columns=cols)
    frame[label] = tr.train.y
    L, V = frame.iloc[:1000], frame.iloc[1000:].reset_index(drop=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(random_state=seed)).fit(L[cols], L[label])
    P = tr.test.parameters
    batches, names = [], []
    for i in range(n_batches):
        k = int(np.flatnonzero(np.isclose(P["p_U"], prev[i]) & np.isclose(P["alpha_U"], alphas[i])
                               & (P["sample"] == i))[0])
        b = pd.DataFrame(tr.test.data.instances[tr.test.indices[k]], columns=cols)
        b[label] = tr.test.labels(k)
        batches.append(b)
        names.append(f"batch_{i + 1:02d}")
    segment_names = [names[i] for i in range(n_batches) if alphas[i] != 0.5]
    return Example(model, V, batches, names, label, segment_names, prev.tolist(), alphas.tolist())


# ------------------------------------------------------------------------------------------------ the diagnostic's study
def diagnostic_study(data, n_samples: int = 20, sample_size: int = 200, train_size: int = 2000,
                     alphas=(0.0, 0.25, 0.75, 1.0), local_prevalences=(0.35, 0.65), concept_cuts=None,
                     level: float = DEFAULT_LEVEL, quantifier: str = DIAGNOSTIC_QUANTIFIER,
                     random_state: int = 0) -> pd.DataFrame:
    """Size and power of :func:`capshift.pps_check.pps_test` under the dataset-shift protocols of
    :mod:`capshift.shift` (Gonzalez, Moreo & Sebastiani 2024, Algorithms 1-4), on one dataset.

    ``data``: a :class:`capshift.datasets.ShiftData` (``datasets.load_shift(name)``): its binary label
    (``data.binary()``) and group attribute feed the PPS and covariate-shift families, its ordinal levels the
    concept-shift family. For each protocol one training sample of ``train_size`` is drawn and halved into L
    (trains a logistic regression h) and V; the test samples of ``sample_size`` are: PPS
    (:class:`~capshift.shift.PriorShift`, test prevalences 0.2..0.8: the false-alarm rate); global covariate shift
    at the shares ``alphas`` of group A (alpha_L = 0.5, p fixed at 0.5); local covariate shift at
    ``local_prevalences``; concept shift at the cuts ``concept_cuts`` (default: every cut but the middle one, which
    trains). q-hat is ``quantifier``'s (a name of :data:`capshift.quantifiers.QUANTIFIERS` but "oracle", default
:func:`estimate`'s), fitted on V. Returns one row per test sample: protocol, degree, pvalue, auc,
    rejected.
    """
    from sklearn.linear_model import LogisticRegression

    X, y, groups = data.binary()
    seed = check_seed(random_state, "random_state")
    common = dict(train_size=train_size, test_size=sample_size, n_samples=n_samples, repeats=1, random_state=seed)
    fams = {
        "PPS": shift.PriorShift(X, y, train_prevalences=[0.5], test_prevalences=[0.2, 0.35, 0.5, 0.65, 0.8],
                                **common),
        "global covariate": shift.GlobalCovariateShift(X, y, groups, train_prevalences=[0.5], train_alphas=[0.5],
                                                       test_prevalences=[0.5], test_alphas=list(alphas), **common),
        "local covariate": shift.LocalCovariateShift(X, y, groups, test_prevalences=list(local_prevalences),
                                                     **common),
    }
    cuts = shift.cut_points(data.levels)
    c_L = cuts[len(cuts) // 2]
    fams["concept"] = shift.ConceptShift(data.X, data.levels, train_cuts=[c_L],
                                         test_cuts=[c for c in cuts if c != c_L] if concept_cuts is None
                                         else concept_cuts, **common)
    rows = []
    for proto, fam in fams.items():
        tr = fam.trial(0)
        k = len(tr.train.y) // 2
        XL, yL, XV, yV = tr.train.X[:k], tr.train.y[:k], tr.train.X[k:], tr.train.y[k:]
        h = LogisticRegression().fit(XL, yL)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = Quantifier(quantifier, h, random_state=seed).fit(XV, yV, 2)
        P, PV = tr.test.parameters, h.predict_proba(XV)
        for i in range(len(P)):
            Xs = tr.test.data.instances[tr.test.indices[i]]
            t = pps_test(Xs, XV, yV, q.quantify(Xs), level=level, random_state=seed + i,
                         posteriors_batch=h.predict_proba(Xs), posteriors_val=PV)
            rows.append({"protocol": proto, "degree": float(P["degree"][i]), "pvalue": t.pvalue, "auc": t.auc,
                         "rejected": t.doubtful})
    return pd.DataFrame(rows)

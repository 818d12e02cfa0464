"""capshift.estimate and capshift.pps_check: your model on your files, batch by batch (issue 22)."""
from __future__ import annotations

import json
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
    with pytest.raises(RuntimeError, match="in order"):
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

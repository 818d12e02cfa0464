"""Experiment runner: determinism, shared quantifier estimates, tidy output, oracle bound."""
import re

import numpy as np
import pandas as pd
import pytest

from capshift.experiment import make_classifier, make_method, run_experiment, run_many, run_tables, summarise


@pytest.fixture(scope="module")
def small():
    kw = dict(methods=("Naive", "LEAP_ACC", "S-LEAP_KDEy", "O-LEAP_KDEy", "O-LEAP_oracle"),
              n_samples=25, sample_size=60, measures=("accuracy", "f1"), seed=3, progress=False)
    return kw, run_experiment("haberman", **kw)


def test_same_seed_same_numbers(small):
    kw, a = small
    b = run_experiment("haberman", **kw)
    cols = [c for c in a.columns if c != "seconds"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_tidy_output(small):
    _, df = small
    assert len(df) == 5 * 25 * 2
    assert set(df["measure"]) == {"accuracy", "f1"}
    # the true values are h's accuracy on the UPP samples of U, recomputed here from the split and the protocol
    from capshift import datasets, protocols

    split = datasets.load("haberman", seed=3)
    h = make_classifier("lr", 3).fit(split.X_L, split.y_L)
    idx = protocols.upp_indices(split.y_U, 60, 25, 3, n_classes=2)
    naive = df[(df.method == "Naive") & (df.measure == "accuracy")].sort_values("sample")
    np.testing.assert_allclose(naive["true"], [np.mean(h.predict(split.X_U[i]) == split.y_U[i]) for i in idx])
    np.testing.assert_allclose(naive["predicted"], np.mean(h.predict(split.X_V) == split.y_V))  # V's accuracy
    np.testing.assert_allclose(naive["ae"], np.abs(naive["true"] - np.mean(h.predict(split.X_V) == split.y_V)))
    # every method sees the same samples: same true values per (sample, measure)
    piv = df.pivot_table(index=["sample", "measure"], columns="method", values="true")
    assert (piv.nunique(axis=1) == 1).all()
    s = summarise(df[df.measure == "accuracy"])
    assert "Average" in s.index and ("mean", "O-LEAP_KDEy") in s.columns


def test_oracle_beats_naive_under_shift(small):
    _, df = small
    acc = df[df.measure == "accuracy"].groupby("method")["ae"].mean()
    assert acc["O-LEAP_oracle"] < acc["Naive"]


def test_run_tables_are_the_runners_tables(small):
    """run_tables returns the tables behind run_experiment's numbers: their accuracy and F1 are the runner's
    predicted values sample by sample, the true tables give its true values, and a method's table equals the
    one its own estimator predicts on the same sample."""
    kw, df = small
    from capshift import datasets, protocols
    from capshift.tables import accuracy, f1

    true, est = run_tables("haberman", methods=kw["methods"], n_samples=kw["n_samples"],
                           sample_size=kw["sample_size"], seed=kw["seed"])
    assert true.shape == (25, 2, 2) and set(est) == set(kw["methods"])
    np.testing.assert_allclose(true.sum(axis=(1, 2)), 1)
    for name, tables in est.items():
        assert tables.shape == (25, 2, 2)
        for measure, f in (("accuracy", accuracy), ("f1", f1)):
            rows = df[(df.method == name) & (df.measure == measure)].sort_values("sample")
            np.testing.assert_allclose(f(tables), rows["predicted"], atol=1e-12)
            np.testing.assert_allclose(f(true), rows["true"], atol=1e-12)
    split = datasets.load("haberman", seed=3)
    h = make_classifier("lr", 3).fit(split.X_L, split.y_L)
    idx = protocols.upp_indices(split.y_U, 60, 25, 3, n_classes=2)
    own = make_method("O-LEAP_KDEy", h, random_state=3).fit(split.X_V, split.y_V)
    np.testing.assert_allclose(own.predict_table_batch([split.X_U[i] for i in idx]), est["O-LEAP_KDEy"], atol=1e-9)


def test_run_tables_rejects_measure_only_methods():
    with pytest.raises(TypeError, match="ATC"):
        run_tables("haberman", methods=["Naive", "ATC"], n_samples=2, sample_size=50)


def test_bad_names():
    h = make_classifier("lr")
    with pytest.raises(ValueError, match="unknown classifier"):
        make_classifier("xgb")
    with pytest.raises(ValueError, match="unknown method"):
        make_method("LEAP_XYZ", h)
    with pytest.raises(ValueError, match="unknown protocol 'uniform'; choose one of"):
        run_experiment("haberman", protocol="uniform", n_samples=2, progress=False)


def test_every_registered_pps_protocol_runs_through_the_runner():
    from capshift import datasets, protocols

    split = datasets.load("cmc.1", seed=0)
    u_prev = np.bincount(split.y_U, minlength=2) / len(split.y_U)
    runs = {p: run_experiment(split, methods=("Naive",), protocol=p, n_samples=40, sample_size=100, progress=False)
            for p in protocols.names("pps")}
    spread = {p: np.std([t[1] for t in df["true_prev"]]) for p, df in runs.items()}
    # UPP and APP spread the prevalence over [0, 1] (sd about .29); NPP stays at U's (binomial sd about .05)
    assert spread["upp"] > 0.2 and spread["app"] > 0.2 and spread["npp"] < 0.08
    assert abs(np.mean([t[1] for t in runs["npp"]["true_prev"]]) - u_prev[1]) < 0.03
    obj = protocols.make_protocol("app", n_prevalences=5)
    df = run_experiment(split, methods=("Naive",), protocol=obj, n_samples=5, sample_size=100, progress=False)
    assert sorted(round(t[1], 2) for t in df["true_prev"]) == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_run_many_parallel_equals_serial():
    kw = dict(methods=("Naive", "LEAP_ACC"), n_samples=5, sample_size=30, progress=False)
    a = run_many(["iris.2", "wine.1"], n_jobs=1, **kw)
    b = run_many(["iris.2", "wine.1"], n_jobs=2, **kw)
    cols = [c for c in a.columns if c != "seconds"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_extra_methods_go_through_predict_measures(monkeypatch):
    from capshift.baselines import Naive

    from capshift import registry

    calls = {}

    class AccuracyOnlyNaive(Naive):  # a measure-only method evaluated without the shared path
        supported_measures = ("accuracy",)
        shared_prevalence_path = False

        def predict_measures(self, samples, measures, prevalences=None, posteriors=None):
            calls["posteriors"] = posteriors
            return super().predict_measures(samples, measures, prevalences, posteriors)

    monkeypatch.setitem(registry.METHODS, "AccNaive", registry.MethodSpec("AccNaive", AccuracyOnlyNaive, "baseline"))
    df = run_experiment("iris.2", methods=("Naive", "AccNaive"), n_samples=4, sample_size=20,
                        measures=("accuracy", "f1"), progress=False)
    assert set(df[df.method == "AccNaive"]["measure"]) == {"accuracy"}  # no f1 rows
    a = df[(df.measure == "accuracy")].pivot(index="sample", columns="method", values="predicted")
    np.testing.assert_allclose(a["AccNaive"], a["Naive"])
    assert len(calls["posteriors"]) == 4 and calls["posteriors"][0].shape == (20, 2)


def test_summarise_average_std_is_pooled():
    rng = np.random.default_rng(0)
    ae = {("a", "M"): rng.random(50), ("b", "M"): rng.random(50) + 1}
    df = pd.DataFrame([(d, m, v) for (d, m), vals in ae.items() for v in vals], columns=["dataset", "method", "ae"])
    s = summarise(df)
    allv = np.concatenate(list(ae.values()))
    assert s.loc["Average", ("mean", "M")] == pytest.approx(allv.mean())
    assert s.loc["Average", ("std", "M")] == pytest.approx(allv.std(ddof=0), rel=0.02)  # pooled, not mean of stds


@pytest.mark.parametrize("name", ["CBPE", "RCA", "QuAccnxn_SLD", "ATC"])
def test_predict_measures_equals_one_measure_at_a_time(name):
    from capshift import datasets, registry

    split = datasets.load("cmc.1", seed=0)
    h = make_classifier("lr", 0).fit(split.X_L, split.y_L)
    est = registry.make_method(name, h, 0).fit(split.X_V, split.y_V)
    samples = [split.X_U[:100], split.X_U[100:250]]
    both = est.predict_measures(samples, ["accuracy", "f1"])
    assert set(both) == {m for m in ("accuracy", "f1") if est.supports(m)}
    for m, v in both.items():
        np.testing.assert_allclose(v, est.predict_batch(samples, m))


def test_validation_samples_match_the_test_sample_size(monkeypatch):
    from capshift import registry

    made = []
    orig = registry.make_method

    def spy(*args, **kwargs):
        made.append(orig(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(registry, "make_method", spy)  # the one factory, which the evaluation path calls
    run_experiment("cmc.1", methods=("DS",), n_samples=3, sample_size=40, progress=False)
    # DS's score grows with the sample size: its validation samples take the test samples' size
    assert list(made[0].val_scores_) == [40]
    assert {size for size, _ in made[0].regressors_} == {40}


def test_study_record_summarises_the_rows_as_the_papers_tables():
    from capshift import datasets
    from capshift.experiment import RECORD_COLUMNS, study_record
    from capshift.significance import significance
    names = ["haberman", "cmc.1", "cmc"]
    df = run_many(names, progress=False, methods=["Naive", "ATC", "LEAP_ACC"], n_samples=15, sample_size=50,
                  measures=("accuracy", "f1"))
    rec = study_record(df, {d: datasets.REGISTRY[d].task for d in names})
    assert list(rec.columns) == RECORD_COLUMNS
    one = rec[(rec.task == "binary") & (rec.measure == "accuracy")]
    cells = one[one.dataset != "Average"].set_index(["dataset", "method"])
    wide = summarise(df[df.dataset.isin(["haberman", "cmc.1"]) & (df.measure == "accuracy")])
    for (d, m), row in cells.iterrows():
        assert row["mean"] == pytest.approx(wide.loc[d, ("mean", m)]) and row["std"] == pytest.approx(wide.loc[d, ("std", m)])
    avg = one[one.dataset == "Average"].set_index("method")
    for m in ["Naive", "ATC", "LEAP_ACC"]:  # the paper's Average: mean of means, std of the pooled samples
        assert avg.loc[m, "mean"] == pytest.approx(wide.loc["Average", ("mean", m)], abs=1e-12)
        assert avg.loc[m, "std"] == pytest.approx(wide.loc["Average", ("std", m)], abs=1e-12)
        assert avg.loc[m, "n"] == 30
    sig = significance(df[(df.measure == "accuracy") & (df.dataset == "cmc.1")], by="dataset")
    assert cells.loc[("cmc.1", sig.loc[sig.best, "method"].iloc[0]), "best"]
    assert set(rec[(rec.measure == "f1")].method) == {"Naive", "LEAP_ACC"}  # ATC predicts accuracy only
    with pytest.raises(ValueError, match="task_of"):
        study_record(df, {"haberman": "binary"})


def test_pairwise_tests_are_scipys_wilcoxon_on_the_paired_samples():
    from scipy.stats import wilcoxon
    from capshift import datasets
    from capshift.experiment import pairwise_tests
    names = ["haberman", "cmc.1"]
    df = run_many(names, progress=False, methods=["Naive", "ATC", "LEAP_ACC"], n_samples=12, sample_size=50)
    pt = pairwise_tests(df, {d: datasets.REGISTRY[d].task for d in names})
    assert len(pt) == 3 and set(zip(pt.method_a, pt.method_b)) == {("Naive", "ATC"), ("Naive", "LEAP_ACC"),
                                                                    ("ATC", "LEAP_ACC")}
    row = pt[(pt.method_a == "Naive") & (pt.method_b == "LEAP_ACC")].iloc[0]
    w = df.pivot(index=["dataset", "sample"], columns="method", values="ae")
    assert row["pvalue"] == pytest.approx(wilcoxon(w["Naive"], w["LEAP_ACC"]).pvalue) and row["n"] == 24
    assert row["mean_a"] == pytest.approx(df[df.method == "Naive"].groupby("dataset")["ae"].mean().mean())


def test_the_recorded_study_summarises_its_own_rows():
    """book/measured/leap_study_full_scale.csv (the five-classifier study the experiments chapter reads): its Average
    rows are recomputed from its dataset rows, its best marks from its means, and its pairwise file agrees."""
    import math
    from pathlib import Path
    from capshift.experiment import RECORD_COLUMNS, STUDY_METHODS
    path = Path(__file__).resolve().parents[1] / "book" / "measured" / "leap_study_full_scale.csv"
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    for field in ("command: ", "commit: ", "wall time", "peak memory", "failed cells: 0"):
        assert any(field in line for line in header), field
    rec = pd.read_csv(path, comment="#")
    assert list(rec.columns) == RECORD_COLUMNS
    assert sorted(set(rec.classifier)) == ["knn", "lr", "mlp", "rf", "svm"]
    assert set(rec.method) == set(STUDY_METHODS) and rec[rec.dataset != "Average"].dataset.nunique() == 23
    for key, block in rec.groupby(["classifier", "task", "measure"]):
        cells, avg = block[block.dataset != "Average"], block[block.dataset == "Average"].set_index("method")
        means = cells.pivot(index="dataset", columns="method", values="mean")
        stds = cells.pivot(index="dataset", columns="method", values="std")
        assert set(avg.index) == {m for m in means.columns if means[m].notna().all()}, key
        for m in avg.index:
            assert avg.loc[m, "mean"] == pytest.approx(means[m].mean(), rel=1e-8), (key, m)
            pooled = math.sqrt((stds[m] ** 2).mean() + means[m].var(ddof=0))
            assert avg.loc[m, "std"] == pytest.approx(pooled, rel=1e-8), (key, m)
            assert avg.loc[m, "n"] == cells[cells.method == m].n.sum() == 1000 * len(means)
        for d, row in cells.groupby("dataset"):
            low = row["mean"].min()
            assert row.loc[row["mean"].idxmin(), "best"] and (row[row.best]["mean"] <= low + 1e-9).all(), (key, d)
            assert row[~row.best].pvalue.notna().all() and ((0 <= row.pvalue.dropna()) & (row.pvalue.dropna() <= 1)).all()
    pairs = pd.read_csv(path.with_name("leap_study_full_scale_pairs.csv"), comment="#")
    avg = rec[rec.dataset == "Average"].set_index(["classifier", "task", "measure", "method"])["mean"]
    for row in pairs.itertuples():
        assert row.mean_a == pytest.approx(avg[(row.classifier, row.task, row.measure, row.method_a)], rel=1e-8)
        assert row.mean_b == pytest.approx(avg[(row.classifier, row.task, row.measure, row.method_b)], rel=1e-8)


def test_the_recorded_authors_variants_agree_with_the_study_where_they_must():
    """book/measured/leap_study_full_scale_authors.csv (DS, NN, L-CBPE as the authors' code computes them): on
    accuracy, DS-authors and NN-authors are DS and NN (the same regression), cell by cell; on F1 they are not; and
    L-CBPE-authors (L-CBPE's table normalised per column) differs from L-CBPE on F1."""
    from pathlib import Path
    from capshift.experiment import AUTHORS_VARIANTS, RECORD_COLUMNS
    root = Path(__file__).resolve().parents[1] / "book" / "measured"
    rec = pd.read_csv(root / "leap_study_full_scale.csv", comment="#")
    path = root / "leap_study_full_scale_authors.csv"
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    assert any("command: " in line for line in header) and any("commit: " in line for line in header)
    auth = pd.read_csv(path, comment="#")
    assert list(auth.columns) == RECORD_COLUMNS and set(auth.method) == set(AUTHORS_VARIANTS)
    assert sorted(set(auth.classifier)) == ["lr", "svm"]
    keys = ["classifier", "task", "measure", "dataset"]
    for variant, base in AUTHORS_VARIANTS.items():
        a = auth[auth.method == variant].set_index(keys)["mean"]
        b = rec[rec.method == base].set_index(keys)["mean"].reindex(a.index)
        acc = a.index.get_level_values("measure") == "accuracy"
        if base in ("DS", "NN"):
            np.testing.assert_allclose(a[acc], b[acc], rtol=1e-12)
        assert not np.allclose(a[~acc], b[~acc], atol=1e-3), variant


def test_shift_profile_pools_the_samples_by_amount_of_shift():
    from capshift import datasets
    from capshift.experiment import shift_profile
    names = ["haberman", "cmc"]
    df = run_many(names, progress=False, methods=["Naive", "LEAP_ACC"], n_samples=40, sample_size=50)
    prof = shift_profile(df, {d: datasets.REGISTRY[d].task for d in names}, bins=(0, 0.5, 2))
    b = prof[(prof.task == "binary") & (prof.method == "Naive")]
    assert b.n.sum() == 40 and set(b.shift_lo) <= {0.0, 0.5}
    low = df[(df.dataset == "haberman") & (df.method == "Naive") & (df["shift"] <= 0.5)]
    assert b[b.shift_lo == 0.0]["mean"].iloc[0] == pytest.approx(low["ae"].mean())
    with pytest.raises(ValueError, match="bins"):
        shift_profile(df, {d: datasets.REGISTRY[d].task for d in names}, bins=(0, 0))


# ---- the summaries of a results frame, on small hand-made frames (AE values in eighths: every figure exact) ----
def _tidy(cells, classifier="lr", measure="accuracy", **extra):
    """A tidy results frame from {(dataset, method): [ae per sample, in eighths]}: sample numbered per cell."""
    rows = [dict(classifier=classifier, dataset=d, method=m, measure=measure, sample=s, ae=v / 8,
                 **{k: f(d, m) for k, f in extra.items()})
            for (d, m), vals in cells.items() for s, v in enumerate(vals)]
    return pd.DataFrame(rows)


# d1: A and B tie (same mean, other pairs), C above both, D only on d1; d2 (four samples): B best at 0;
# d3, a multiclass dataset: A best. C - A is 1, 2, 4 on d1 and 3, 5, 6, 7 on d2: seven distinct positive differences.
CELLS = {("d1", "A"): [1, 2, 3], ("d1", "B"): [3, 2, 1], ("d1", "C"): [2, 4, 7], ("d1", "D"): [4, 4, 4],
         ("d2", "A"): [1, 2, 3, 4], ("d2", "B"): [0, 0, 0, 0], ("d2", "C"): [4, 7, 9, 11],
         ("d3", "A"): [1, 2], ("d3", "B"): [2, 4]}
TASKS = {"d1": "binary", "d2": "binary", "d3": "multiclass"}


def _std(eighths):
    return float(np.std(np.asarray(eighths) / 8))  # ddof=0


def test_summarise_means_stds_and_the_average_row_by_hand():
    df = _tidy({("b", "M"): [4, 8], ("a", "M"): [1, 3], ("b", "N"): [1, 3], ("a", "N"): [0, 0, 0]})
    s = summarise(df)
    assert list(s.index) == ["b", "a", "Average"]  # the datasets in order of appearance, then Average
    assert s.loc["b", ("mean", "M")] == 6 / 8 and s.loc["a", ("mean", "M")] == 2 / 8
    assert s.loc["b", ("std", "M")] == 2 / 8 and s.loc["a", ("std", "M")] == 1 / 8  # ddof=0
    assert s.loc["b", ("mean", "N")] == 2 / 8 and s.loc["a", ("std", "N")] == 0
    # Average: the mean of the means (not of the five N values) and sqrt(mean(std^2) + var(means))
    assert s.loc["Average", ("mean", "M")] == 4 / 8 and s.loc["Average", ("mean", "N")] == 1 / 8
    assert s.loc["Average", ("std", "M")] == pytest.approx(np.sqrt((4 + 1) / 2 + 4) / 8, abs=1e-15)
    assert s.loc["Average", ("std", "N")] == pytest.approx(np.sqrt((1 + 0) / 2 + 1) / 8, abs=1e-15)
    # another grouping: the first key of by indexes the rows, the last one the columns
    by_clf = summarise(df.assign(classifier=["lr", "lr", "svm", "svm", "lr", "lr", "svm", "svm", "svm"]),
                       by=("classifier", "method"))
    assert list(by_clf.index) == ["lr", "svm", "Average"]
    assert by_clf.loc["svm", ("mean", "N")] == 0 and by_clf.loc["lr", ("std", "N")] == 1 / 8
    three = summarise(df.assign(classifier="lr"), by=("classifier", "dataset", "method"))  # wide by the last key
    assert list(three.columns) == [("mean", "M"), ("mean", "N"), ("std", "M"), ("std", "N")]
    assert three[("mean", "M")].tolist() == [6 / 8, 2 / 8, 4 / 8] and three[("std", "N")].tolist() == [
        1 / 8, 0, s.loc["Average", ("std", "N")]]
    for bad, got in ((df.drop(columns="ae"), "['classifier', 'dataset', 'measure', 'method', 'sample']"),
                     (df.to_dict("list"), "dict")):
        with pytest.raises(ValueError, match=r"results must be a DataFrame from run_experiment with columns "
                                             rf"\['ae', 'dataset', 'method'\]; got {re.escape(got)}"):
            summarise(bad)


def _record_frame(**extra):
    return _tidy(CELLS, **extra)


SECONDS = dict(cell_seconds=lambda d, m: {"d1": 1.0, "d2": 2.0, "d3": 4.0}[d] + {"A": 0.25, "B": 0.5, "C": 0.125,
                                                                                   "D": 8.0}[m],
               prepare_seconds=lambda d, m: {"d1": 0.5, "d2": 0.75, "d3": 0.0625}[d])


def _expected_record():
    """study_record of CELLS, by hand (p-values of the exact test: 2 / 2**n when the n differences are distinct and
    of one sign)."""
    from scipy.stats import wilcoxon
    nan = np.nan
    c = {k: np.asarray(v) / 8 for k, v in CELLS.items()}
    mean = {k: v.mean() for k, v in c.items()}
    rows = [("d1", "A", True, nan), ("d1", "B", True, nan), ("d1", "C", False, 0.25), ("d1", "D", False, 0.25),
            ("d2", "A", False, 0.125), ("d2", "B", True, nan), ("d2", "C", False, 0.125)]
    out = [dict(classifier="lr", task="binary", measure="accuracy", dataset=d, method=m, mean=mean[d, m],
                std=_std(CELLS[d, m]), n=len(CELLS[d, m]), best=best, pvalue=p) for d, m, best, p in rows]
    # the Average row: A, B and C (D lacks d2); B is best; the tests pair the seven (dataset, sample) values
    pair = {m: np.concatenate([c["d1", m], c["d2", m]]) for m in "ABC"}
    for m, best, p in (("A", False, wilcoxon(pair["A"], pair["B"]).pvalue), ("B", True, nan),
                       ("C", False, wilcoxon(pair["C"], pair["B"]).pvalue)):
        means = np.array([mean["d1", m], mean["d2", m]])
        stds = np.array([_std(CELLS["d1", m]), _std(CELLS["d2", m])])
        out.append(dict(classifier="lr", task="binary", measure="accuracy", dataset="Average", method=m,
                        mean=means.mean(), std=np.sqrt((stds**2).mean() + means.var()), n=7, best=best, pvalue=p))
    for d in ("d3", "Average"):  # one multiclass dataset: its Average row is its own
        out += [dict(classifier="lr", task="multiclass", measure="accuracy", dataset=d, method="A", mean=1.5 / 8,
                     std=0.5 / 8, n=2, best=True, pvalue=nan),
                dict(classifier="lr", task="multiclass", measure="accuracy", dataset=d, method="B", mean=3 / 8,
                     std=1 / 8, n=2, best=False, pvalue=0.5)]
    return pd.DataFrame(out)


def test_study_record_by_hand():
    from capshift.experiment import RECORD_COLUMNS, study_record
    rec = study_record(_record_frame(**SECONDS), TASKS)
    assert list(rec.columns) == RECORD_COLUMNS
    want = _expected_record()
    cols = ["classifier", "task", "measure", "dataset", "method", "mean", "std", "n", "best", "pvalue"]
    pd.testing.assert_frame_equal(rec[cols], want[cols], check_dtype=False, atol=1e-15, rtol=1e-12)
    assert rec["n"].tolist() == [3, 3, 3, 3, 4, 4, 4, 7, 7, 7, 2, 2, 2, 2]
    # seconds: the cell's own; summed over the datasets in Average (cell_seconds) or NaN there (prepare_seconds)
    assert rec["cell_seconds"].tolist() == [1.25, 1.5, 1.125, 9.0, 2.25, 2.5, 2.125, 3.5, 4.0, 3.25, 4.25, 4.5,
                                            4.25, 4.5]
    prep = rec["prepare_seconds"].tolist()
    assert prep[:7] == [0.5] * 4 + [0.75] * 3 and prep[10:12] == [0.0625] * 2
    assert np.isnan(prep[7:10]).all() and np.isnan(prep[12:]).all()
    # tables, datasets and methods in the order they appear: here svm's table, then d2 before d1, C before A
    df = _record_frame(**SECONDS)
    order = pd.concat([df[df.dataset == "d3"].assign(classifier="svm"), df[df.dataset == "d2"].iloc[::-1],
                       df[df.dataset == "d1"]])
    rec2 = study_record(order, TASKS)
    assert list(zip(rec2.classifier, rec2.task, rec2.dataset, rec2.method)) == [
        ("svm", "multiclass", "d3", "A"), ("svm", "multiclass", "d3", "B"), ("svm", "multiclass", "Average", "A"),
        ("svm", "multiclass", "Average", "B"), ("lr", "binary", "d2", "C"), ("lr", "binary", "d2", "B"),
        ("lr", "binary", "d2", "A"), ("lr", "binary", "d1", "A"), ("lr", "binary", "d1", "B"), ("lr", "binary", "d1", "C"),
        ("lr", "binary", "d1", "D"), ("lr", "binary", "Average", "C"), ("lr", "binary", "Average", "B"),
        ("lr", "binary", "Average", "A")]
    back = rec2.iloc[4:].set_index(["dataset", "method"]).loc[list(zip(rec.dataset[:10], rec.method[:10]))]
    # the first best of d1 is now B (B appears before A): C is tested against B (differences -1, 2, 6: p = 0.5)
    assert back.loc[("d1", "C"), "pvalue"] == pytest.approx(0.5, abs=1e-12)
    back.loc[("d1", "C"), "pvalue"] = 0.25
    pd.testing.assert_frame_equal(back.reset_index()[rec.columns], rec.iloc[:10], atol=1e-15, rtol=1e-12)


def test_study_record_pairs_by_sample_and_has_no_seconds_without_them():
    from capshift.experiment import RECORD_COLUMNS, study_record
    df = _record_frame()
    shuffled = df.iloc[np.random.default_rng(0).permutation(len(df))]
    order = {(d, m): i for i, (d, m) in enumerate(CELLS)}  # cells in their first order, samples shuffled inside
    shuffled = shuffled.iloc[np.argsort([order[d, m] for d, m in zip(shuffled.dataset, shuffled.method)],
                                        kind="stable")]
    assert shuffled["sample"].tolist() != df["sample"].tolist()
    rec = study_record(shuffled, TASKS)
    want = _expected_record()
    cols = ["dataset", "method", "mean", "std", "n", "best", "pvalue"]
    pd.testing.assert_frame_equal(rec[cols], want[cols], check_dtype=False, atol=1e-15, rtol=1e-12)
    assert rec["cell_seconds"].isna().all() and rec["prepare_seconds"].isna().all()  # NaN, not 0
    assert rec["cell_seconds"].dtype == rec["prepare_seconds"].dtype == np.float64
    empty = study_record(df.iloc[:0], {})  # no rows: an empty record with its columns
    assert empty.empty and list(empty.columns) == RECORD_COLUMNS
    with pytest.raises(ValueError, match=re.escape("results must be a tidy frame with columns ['ae', 'classifier', "
                                                   "'dataset', 'measure', 'method', 'sample']")):
        study_record(df.drop(columns="sample"), TASKS)
    with pytest.raises(ValueError, match=re.escape("task_of has no task for dataset(s) ['d2', 'd3']")):
        study_record(df, {"d1": "binary"})
    with pytest.raises(ValueError, match="results must be a tidy frame"):
        study_record(df.to_dict("list"), TASKS)


def test_pairwise_tests_by_hand():
    from scipy.stats import wilcoxon
    from capshift.experiment import pairwise_tests
    df = _record_frame()
    pt = pairwise_tests(df, TASKS)
    assert list(pt.columns) == ["classifier", "task", "measure", "method_a", "method_b", "mean_a", "mean_b", "n",
                                "pvalue"]
    # binary: D lacks d2 and takes no part; pairs in the order the methods appear; then the multiclass table
    assert list(zip(pt.task, pt.method_a, pt.method_b)) == [("binary", "A", "B"), ("binary", "A", "C"),
                                                            ("binary", "B", "C"), ("multiclass", "A", "B")]
    assert (pt.classifier == "lr").all() and (pt.measure == "accuracy").all() and pt.n.tolist() == [7, 7, 7, 2]
    avg = {"A": (2 + 2.5) / 16, "B": 1 / 8, "C": (13 / 3 + 31 / 4) / 16}  # the mean of the two dataset means
    for row, (a, b) in zip(pt.itertuples(), [("A", "B"), ("A", "C"), ("B", "C")]):
        assert row.mean_a == pytest.approx(avg[a], abs=1e-15) and row.mean_b == pytest.approx(avg[b], abs=1e-15)
    assert (pt.mean_a[3], pt.mean_b[3]) == (1.5 / 8, 3 / 8)
    # C - A: 1, 2, 4 (d1) and 3, 5, 6, 7 (d2), distinct and positive: p = 2 / 2**7; B - A on d3: 1, 2: p = 2 / 4
    assert pt.pvalue[1] == pytest.approx(2 / 2**7, abs=1e-12) and pt.pvalue[3] == pytest.approx(0.5, abs=1e-12)
    pair = {m: np.concatenate([np.asarray(CELLS["d1", m]), CELLS["d2", m]]) / 8 for m in "ABC"}
    assert pt.pvalue[0] == pytest.approx(wilcoxon(pair["A"], pair["B"]).pvalue, abs=1e-12)
    assert pt.pvalue[2] == pytest.approx(wilcoxon(pair["B"], pair["C"]).pvalue, abs=1e-12)
    # pairing by (dataset, sample): the samples shuffled inside each cell give the same table
    shuffled = df.iloc[np.random.default_rng(1).permutation(len(df))]
    order = {(d, m): i for i, (d, m) in enumerate(CELLS)}
    shuffled = shuffled.iloc[np.argsort([order[d, m] for d, m in zip(shuffled.dataset, shuffled.method)],
                                        kind="stable")]
    pd.testing.assert_frame_equal(pairwise_tests(shuffled, TASKS), pt, atol=1e-15, rtol=1e-12)
    with pytest.raises(ValueError, match=re.escape("task_of has no task for dataset(s) ['d3']")):
        pairwise_tests(df, {"d1": "binary", "d2": "binary"})
    # tables in the order they appear: svm's before lr's, multiclass before binary
    first = pd.concat([df[df.dataset == "d3"].assign(classifier="svm"), df[df.dataset == "d3"], df[df.dataset != "d3"]])
    two = pairwise_tests(first, TASKS)
    assert list(zip(two.classifier, two.task, two.method_a)) == [("svm", "multiclass", "A"), ("lr", "multiclass", "A"),
                                                                 ("lr", "binary", "A"), ("lr", "binary", "A"),
                                                                 ("lr", "binary", "B")]
    pd.testing.assert_frame_equal(two.iloc[2:].reset_index(drop=True), pt.iloc[:3], atol=1e-15, rtol=1e-12)


def test_pairwise_tests_p_is_one_when_every_difference_is_zero():
    from capshift.experiment import pairwise_tests
    df = _tidy({("d1", "A"): [1, 2, 3], ("d1", "B"): [1, 2, 3], ("d2", "A"): [5, 5], ("d2", "B"): [5, 5]})
    pt = pairwise_tests(df, {"d1": "binary", "d2": "binary"})
    assert pt[["method_a", "method_b", "n", "pvalue"]].values.tolist() == [["A", "B", 5, 1.0]]
    assert pt.mean_a[0] == pt.mean_b[0] == (2 + 5) / 16
    # differences within round-off (numpy.allclose) count as zero, although all six are positive and distinct
    ae = np.arange(1, 7) / 10
    tiny = pd.DataFrame({"classifier": "lr", "dataset": "d1", "measure": "accuracy", "sample": np.tile(range(6), 2),
                         "method": ["A"] * 6 + ["B"] * 6, "ae": np.concatenate([ae, ae + 1e-10 * np.arange(1, 7)])})
    assert pairwise_tests(tiny, {"d1": "binary"}).pvalue.tolist() == [1.0]


def test_shift_profile_by_hand():
    from capshift.experiment import SHIFT_BINS, shift_profile
    rows = [("d1", "A", 0.7, 4), ("d1", "A", 0.0, 1), ("d1", "A", 0.5, 3), ("d2", "A", 1.0, 6), ("d2", "A", 1.9, 2),
            ("d3", "A", 0.25, 5), ("d1", "B", 0.5, 7)]
    df = pd.DataFrame([dict(classifier="lr", measure="accuracy", dataset=d, method=m, shift=s, ae=v / 8)
                       for d, m, s, v in rows])
    prof = shift_profile(df, TASKS, bins=(0, 0.5, 1, 1.5, 2))
    assert list(prof.columns) == ["classifier", "task", "measure", "method", "shift_lo", "shift_hi", "mean", "n"]
    # bins closed on the right, the first holding 0, pooled over d1 and d2; (1, 1.5] is empty and left out
    got = [(t, m, lo, hi, mean, n) for t, m, lo, hi, mean, n in
           zip(prof.task, prof.method, prof.shift_lo, prof.shift_hi, prof["mean"], prof.n)]
    assert got == [("binary", "A", 0.5, 1.0, 5 / 8, 2), ("binary", "A", 0.0, 0.5, 2 / 8, 2),
                   ("binary", "A", 1.5, 2.0, 2 / 8, 1), ("multiclass", "A", 0.0, 0.5, 5 / 8, 1),
                   ("binary", "B", 0.0, 0.5, 7 / 8, 1)]
    assert (prof.classifier == "lr").all() and (prof.measure == "accuracy").all()
    # the default bins: 0.2-wide up to 0.8, then (0.8, 2]
    default = shift_profile(df, TASKS)
    assert SHIFT_BINS == (0.0, 0.2, 0.4, 0.6, 0.8, 2.0)
    assert sorted(zip(default.method, default.shift_lo, default.shift_hi, default.n)) == [
        ("A", 0.0, 0.2, 1), ("A", 0.2, 0.4, 1), ("A", 0.4, 0.6, 1), ("A", 0.6, 0.8, 1), ("A", 0.8, 2.0, 2),
        ("B", 0.4, 0.6, 1)]
    # two edges make one bin; edges given as ints are floats in the result
    two = shift_profile(df, TASKS, bins=(0, 2))
    assert two.n.tolist() == [5, 1, 1] and two.shift_lo.dtype == two.shift_hi.dtype == np.float64
    # a shift outside the edges goes to the nearest end bin
    inner = shift_profile(df, TASKS, bins=(0.25, 0.5, 1.0))
    assert list(zip(inner.method, inner.shift_lo, inner.shift_hi, inner.n)) == [
        ("A", 0.5, 1.0, 3), ("A", 0.25, 0.5, 2), ("A", 0.25, 0.5, 1), ("B", 0.25, 0.5, 1)]
    for bins, shown in (((0, 0), "[0.0, 0.0]"), ((0, 1, 0.5), "[0.0, 1.0, 0.5]"), ((1,), "[1.0]"),
                        (((0, 1), (1, 2)), "[[0.0, 1.0], [1.0, 2.0]]")):
        with pytest.raises(ValueError, match=re.escape(f"bins must be increasing edges, got {shown}")):
            shift_profile(df, TASKS, bins=bins)
    with pytest.raises(ValueError, match=re.escape("results must be a tidy frame with columns ['ae', 'classifier', "
                                                   "'dataset', 'measure', 'method', 'shift']")):
        shift_profile(df.drop(columns="shift"), TASKS)


# ---- the QuAcc protocol's training prevalences ----
def test_quacc_train_prevalences_closed_forms():
    from capshift.experiment import quacc_train_prevalences
    from capshift.protocols import upp_prevalences
    # binary: n_train evenly spaced positive shares in [0.1, 0.9], negatives first; floor not used
    np.testing.assert_allclose(quacc_train_prevalences(2), np.column_stack([np.arange(9, 0, -1), np.arange(1, 10)]) / 10,
                               atol=1e-15)
    np.testing.assert_allclose(quacc_train_prevalences(2, 3, floor=0.5), [[0.9, 0.1], [0.5, 0.5], [0.1, 0.9]],
                               atol=1e-15)
    assert quacc_train_prevalences(2, 1).tolist() == [[0.5, 0.5]]
    np.testing.assert_allclose(quacc_train_prevalences(2, 2), [[0.9, 0.1], [0.1, 0.9]], atol=1e-15)
    # multiclass: UPP draws of the seed mixed with the uniform vector, (1 - floor) p + floor / n
    np.testing.assert_allclose(quacc_train_prevalences(3), 0.9 * upp_prevalences(3, 9, 0) + 0.1 / 3, atol=1e-15)
    np.testing.assert_allclose(quacc_train_prevalences(4, 5, seed=7, floor=0.4),
                               0.6 * upp_prevalences(4, 5, 7) + 0.1, atol=1e-15)
    np.testing.assert_array_equal(quacc_train_prevalences(3, 4, seed=1, floor=0.0), upp_prevalences(3, 4, 1))
    assert not np.allclose(quacc_train_prevalences(3, 4, seed=1), quacc_train_prevalences(3, 4, seed=2))
    assert quacc_train_prevalences(3, 1, seed=5).shape == (1, 3)
    for kwargs, err, msg in ((dict(n_classes=1), ValueError, "n_classes must be >= 2, got 1"),
                             (dict(n_classes=0), ValueError, "n_classes must be >= 2, got 0"),
                             (dict(n_classes=2.0), TypeError, "n_classes must be an int"),
                             (dict(n_classes=3, n_train=0), ValueError, "n_train must be >= 1, got 0"),
                             (dict(n_classes=3, seed=-1), ValueError, "seed must be in 0..2**32-1"),
                             (dict(n_classes=3, seed=None), TypeError, "seed must be an int"),
                             (dict(n_classes=3, floor=1.0), ValueError, "floor must be in [0.0, 1.0), got 1.0"),
                             (dict(n_classes=3, floor=-0.1), ValueError, "floor must be in [0.0, 1.0), got -0.1"),
                             (dict(n_classes=3, floor="0.1"), TypeError, "floor must be a number")):
        with pytest.raises(err, match=re.escape(msg)):
            quacc_train_prevalences(**kwargs)


# ---- check_run_args: what it returns, and every argument it refuses, by name ----
def test_check_run_args_returns_the_specs_and_measures():
    from capshift import registry
    from capshift.experiment import check_run_args
    specs, measures = check_run_args("lr", ("Naive", "leap_acc"), "upp", 3, 10, "f1", 0, "osqp")
    assert specs == [("Naive", registry.get("Naive")), ("leap_acc", registry.get("LEAP_ACC"))]
    assert measures == ["f1"]
    specs, measures = check_run_args("svm", (m for m in ["ATC"]), "app", 1, 1, ("accuracy", "macro_f1"), 2**32 - 1,
                                     "slsqp")
    assert specs == [("ATC", registry.get("ATC"))] and measures == ["accuracy", "macro_f1"]


@pytest.mark.parametrize("change, err, msg", [
    (dict(classifier="xgb"), ValueError, "unknown classifier 'xgb'; choose one of"),
    (dict(methods="Naive"), TypeError, "methods must be a list of method names, got 'Naive'; e.g. methods=['Naive']"),
    (dict(methods=3), TypeError, "methods must be a list of method names, got 3; e.g. methods=[3]"),
    (dict(methods=[]), ValueError, "methods is empty: name at least one method (see capshift.registry.names())"),
    (dict(methods=["Naive", "LEAP_XYZ"]), ValueError, "unknown method 'LEAP_XYZ'; registered methods: Naive"),
    (dict(protocol="uniform"), ValueError, "unknown protocol 'uniform'; choose one of"),
    (dict(n_samples=0), ValueError, "n_samples must be >= 1, got 0"),
    (dict(n_samples=2.0), TypeError, "n_samples must be an int, got 2.0"),
    (dict(sample_size=0), ValueError, "sample_size must be >= 1, got 0"),
    (dict(sample_size="10"), TypeError, "sample_size must be an int, got '10'"),
    (dict(seed=-1), ValueError, "seed must be in 0..2**32-1 (numpy's seed range), got -1"),
    (dict(seed=1.5), TypeError, "seed must be an int"),
    (dict(solver="cvx"), ValueError, "solver must be one of"),
    (dict(measures=["accuracy", "auc"]), ValueError, "unknown measure 'auc'; known measures:"),
    (dict(measures="auc"), ValueError, "unknown measure 'auc'; known measures:"),
    # the checks run in the order of the arguments: the first bad one is named
    (dict(classifier="xgb", methods=[]), ValueError, "unknown classifier 'xgb'"),
    (dict(methods=[], protocol="uniform"), ValueError, "methods is empty"),
    (dict(protocol="uniform", n_samples=0), ValueError, "unknown protocol"),
    (dict(n_samples=0, sample_size=0), ValueError, "n_samples must be"),
    (dict(sample_size=0, seed=-1), ValueError, "sample_size must be"),
    (dict(seed=-1, solver="cvx"), ValueError, "seed must be"),
    (dict(solver="cvx", measures="auc"), ValueError, "solver must be"),
])
def test_check_run_args_names_the_bad_argument(change, err, msg):
    from capshift.experiment import check_run_args
    args = dict(classifier="lr", methods=["Naive"], protocol="upp", n_samples=3, sample_size=10,
                measures=("accuracy",), seed=0, solver="osqp") | change
    with pytest.raises(err, match="^" + re.escape(msg)):
        check_run_args(**args)


# ---- the QuAcc protocol: sizes, seeds and arguments of its runs (run_experiment spied on), and one real run ----
def _counted_split(counts_L, counts_V, seed=0):
    """A Split whose L and V hold the given numbers of items per class (features: class centre + noise)."""
    from capshift.datasets import Split
    rng = np.random.default_rng(seed)
    n = len(counts_L)

    def part(counts):
        y = np.repeat(np.arange(n), counts)
        return np.eye(n)[y] + rng.normal(size=(len(y), n)), y

    (X_L, y_L), (X_V, y_V), (X_U, y_U) = part(counts_L), part(counts_V), part([20] * n)
    return Split("counted", X_L, y_L, X_V, y_V, X_U, y_U, np.arange(n), n)


def _spy_runs(monkeypatch):
    from capshift import experiment
    calls = []

    def spy(sub, **kwargs):
        calls.append((sub, kwargs))
        return pd.DataFrame({"method": ["Naive", "Naive"], "ae": [0.0, 1.0]})

    monkeypatch.setattr(experiment, "run_experiment", spy)
    return calls


@pytest.mark.parametrize("counts_L, counts_V, train_size, size_T, size_V", [
    ((30, 45), (20, 25), None, 33, 22),          # binary: min_c |L_c| / 0.9 (30 / 0.9 = 33.3), likewise V
    ((30, 45), (20, 25), 0.5, 16, 11),           # a fraction of it
    ((30, 45), (20, 25), 0.05, 4, 4),            # never below 2 n
    ((25, 25, 25), (15, 15, 15), None, 37, 22),  # multiclass: |L| / 2, |V| / 2
    ((25, 25, 25), (15, 15, 15), 0.5, 18, 11),
    ((25, 25, 25), (15, 15, 15), 0.1, 6, 6),
])
def test_quacc_protocol_sizes_seeds_and_runs(monkeypatch, counts_L, counts_V, train_size, size_T, size_V):
    from capshift import protocols
    from capshift.experiment import quacc_train_prevalences, run_quacc_protocol
    calls = _spy_runs(monkeypatch)
    split, n = _counted_split(counts_L, counts_V), len(counts_L)
    df = run_quacc_protocol(split, classifier="svm", methods=["Naive", "ATC"], n_train=3, test_repeats=2,
                            n_test_upp=7, sample_size=11, train_size=train_size, measures=("f1",), seed=5,
                            solver="slsqp")
    prevs = quacc_train_prevalences(n, 3, 5)
    assert len(calls) == 3
    for t, (sub, kwargs) in enumerate(calls):
        # T_t from L and V_t from V at the training prevalence, seeded seed + 1000 + t and seed + 2000 + t
        iT = protocols.sample_at(split.y_L, prevs[t], size_T, 5 + 1000 + t)
        iV = protocols.sample_at(split.y_V, prevs[t], size_V, 5 + 2000 + t)
        np.testing.assert_array_equal(sub.X_L, split.X_L[iT])
        np.testing.assert_array_equal(sub.y_L, split.y_L[iT])
        np.testing.assert_array_equal(sub.X_V, split.X_V[iV])
        np.testing.assert_array_equal(sub.y_V, split.y_V[iV])
        assert sub.X_U is split.X_U and sub.y_U is split.y_U and sub.name == "counted" and sub.n_classes == n
        np.testing.assert_array_equal(sub.classes, np.arange(n))
        protocol, k = ("app", 42) if n == 2 else ("upp", 7)  # binary: the 21-point grid, test_repeats times
        assert kwargs == dict(classifier="svm", methods=["Naive", "ATC"], protocol=protocol, n_samples=k,
                              sample_size=11, measures=("f1",), seed=5, solver="slsqp", progress=False)
    assert df["ae"].tolist() == [0.0, 1.0] * 3 and df.index.tolist() == list(range(6))
    assert df["train_index"].tolist() == [0, 0, 1, 1, 2, 2]
    assert df["train_prev"].tolist() == [tuple(float(v) for v in np.round(p, 4)) for p in prevs for _ in "ab"]


def test_quacc_protocol_defaults_and_refusals(monkeypatch, capsys):
    from capshift import datasets
    from capshift.experiment import DEFAULT_SOLVER, run_quacc_protocol
    calls = _spy_runs(monkeypatch)
    split = _counted_split((30, 45), (20, 25))
    df = run_quacc_protocol(split)
    assert capsys.readouterr().err == ""  # no progress bar by default
    assert len(calls) == 9 and len(calls[0][0].y_L) == 33 and len(calls[0][0].y_V) == 22
    assert calls[0][1] == dict(classifier="lr", methods=("Naive", "LEAP_KDEy", "O-LEAP_KDEy"), protocol="app",
                               n_samples=210, sample_size=1000, measures=("accuracy", "f1"), seed=0,
                               solver=DEFAULT_SOLVER, progress=False)
    assert df["train_prev"].iloc[0] == (0.9, 0.1) and df["train_prev"].iloc[-1] == (0.1, 0.9)
    assert calls[0][0].y_L.mean() == pytest.approx(0.1, abs=0.04)  # T_0 at the first training prevalence
    calls.clear()
    run_quacc_protocol(_counted_split((25, 25, 25), (15, 15, 15)), n_train=1)
    assert calls[0][1]["protocol"] == "upp" and calls[0][1]["n_samples"] == 210
    for kwargs, err, msg in ((dict(train_size=0.0), ValueError, "train_size must be in (0.0, 1.0], got 0.0"),
                             (dict(train_size=1.5), ValueError, "train_size must be in (0.0, 1.0], got 1.5"),
                             (dict(train_size="half"), TypeError, "train_size must be a number"),
                             (dict(test_repeats=0), ValueError, "test_repeats must be >= 1, got 0"),
                             (dict(n_test_upp=0), ValueError, "n_test_upp must be >= 1, got 0"),
                             (dict(n_train=0), ValueError, "n_train must be >= 1, got 0"),
                             (dict(classifier="xgb"), ValueError, "unknown classifier 'xgb'"),
                             (dict(methods=[]), ValueError, "methods is empty"),
                             (dict(sample_size=0), ValueError, "sample_size must be >= 1, got 0"),
                             (dict(measures=["auc"]), ValueError, "unknown measure 'auc'"),
                             (dict(seed=-1), ValueError, "seed must be in 0..2**32-1"),
                             (dict(solver="cvx"), ValueError, "solver must be one of")):
        with pytest.raises(err, match=re.escape(msg)):
            run_quacc_protocol(split, **kwargs)
    run_quacc_protocol(split, train_size=1.0)  # the closed end
    assert len(calls[-1][0].y_L) == 33
    # a dataset name is loaded with the seed; progress=True shows a bar over the training prevalences
    loaded = []
    monkeypatch.setattr(datasets, "load", lambda name, seed: loaded.append((name, seed)) or split)
    run_quacc_protocol("haberman", n_train=2, seed=4, progress=True)
    assert loaded == [("haberman", 4)] and calls[-1][0].name == "counted"
    err = capsys.readouterr().err
    assert "counted: training prevalences: 100%" in err and "2/2" in err


def test_quacc_protocol_one_real_run():
    """Naive, fitted on V_t, predicts h's accuracy on V_t, with h trained on T_t: both drawn as above."""
    from capshift import protocols
    from capshift.experiment import run_quacc_protocol
    split = _counted_split((30, 45), (20, 25))
    df = run_quacc_protocol(split, methods=["Naive"], n_train=2, test_repeats=1, sample_size=20,
                            measures=("accuracy",), seed=3)
    assert len(df) == 2 * 21 and df.groupby("train_index").size().tolist() == [21, 21]
    for t, p in enumerate([(0.9, 0.1), (0.1, 0.9)]):
        iT = protocols.sample_at(split.y_L, p, 33, 1003 + t)
        iV = protocols.sample_at(split.y_V, p, 22, 2003 + t)
        h = make_classifier("lr", 3).fit(split.X_L[iT], split.y_L[iT])
        rows = df[df.train_index == t]
        np.testing.assert_allclose(rows["predicted"], np.mean(h.predict(split.X_V[iV]) == split.y_V[iV]))
        assert sorted(round(q[1], 2) for q in rows["true_prev"]) == [i / 20 for i in range(21)]  # the APP grid


# ---- configuration_study: its columns and values with Naive (h's accuracy on V), and its errors ----
@pytest.fixture(scope="module")
def gauss2():
    from capshift.quacc import gaussian_split
    return gaussian_split(n_classes=2, n_train=60, n_val=50, n_test=80, seed=1)


def _true_and_val(split, classifier, seed, idx, measure):
    from capshift.tables import contingency_table, get_measure
    h = make_classifier(classifier, seed).fit(split.X_L, split.y_L)
    f = get_measure(measure)
    true = [float(f(contingency_table(split.y_U[i], h.predict(split.X_U[i]), 2))) for i in idx]
    return np.array(true), float(f(contingency_table(split.y_V, h.predict(split.X_V), 2)))


def test_configuration_study_columns_and_values_with_naive(gauss2, monkeypatch):
    import warnings
    from capshift import experiment, protocols
    from capshift.baselines import Naive
    from capshift.experiment import configuration_study

    class NoisyNaive(Naive):  # warns when fitted and when predicting
        def fit(self, X, y):
            warnings.warn("fitting", UserWarning)
            return super().fit(X, y)

        def predict_measures(self, *args, **kwargs):
            warnings.warn("predicting", RuntimeWarning)
            return super().predict_measures(*args, **kwargs)

    made = []
    monkeypatch.setattr(experiment, "make_method",
                        lambda *a, **kw: made.append((a[0], kw)) or make_method(*a, **kw))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the configurations' warnings are silenced
        res = configuration_study(gauss2, {"naive": "Naive", "noisy": lambda h: NoisyNaive(h), "atc": "ATC"},
                                  n_samples=3, sample_size=20, classifier="svm", measure="f1", seed=4)
    assert made == [("Naive", dict(random_state=4)), ("ATC", dict(random_state=4))]
    assert list(res.columns) == ["dataset", "n_val", "seed", "configuration", "sample", "true", "predicted", "ae",
                                 "error"]
    assert res.index.tolist() == list(range(9))
    assert (res.dataset == "gauss2").all() and (res.n_val == 50).all() and (res.seed == 4).all()
    assert res.configuration.tolist() == ["naive"] * 3 + ["noisy"] * 3 + ["atc"] * 3
    assert res["sample"].tolist() == [0, 1, 2] * 3
    idx = protocols.upp_indices(gauss2.y_U, 20, 3, 4, n_classes=2)
    true, on_V = _true_and_val(gauss2, "svm", 4, idx, "f1")
    for name in ("naive", "noisy"):
        rows = res[res.configuration == name]
        np.testing.assert_allclose(rows["true"], true, atol=1e-12)
        np.testing.assert_allclose(rows["predicted"], on_V, atol=1e-12)  # h's F1 on V
        np.testing.assert_allclose(rows["error"], on_V - true, atol=1e-12)
        np.testing.assert_allclose(rows["ae"], np.abs(on_V - true), atol=1e-12)
    assert len(set(true)) > 1 and (true != on_V).all()
    atc = res[res.configuration == "atc"]  # ATC predicts accuracy only: NaN, not an error
    np.testing.assert_allclose(atc["true"], true, atol=1e-12)
    assert atc[["predicted", "ae", "error"]].isna().all().all()


def test_configuration_study_gives_hs_posteriors_on_each_sample(gauss2):
    from capshift import protocols
    from capshift.baselines import Naive
    from capshift.experiment import configuration_study
    seen = []

    class Spy(Naive):
        def predict_measures(self, samples, measures, prevalences=None, posteriors=None):
            seen.append(posteriors)
            return super().predict_measures(samples, measures, prevalences, posteriors)

    configuration_study(gauss2, {"spy": lambda h: Spy(h)}, n_samples=3, sample_size=20, seed=1)
    h = make_classifier("lr", 1).fit(gauss2.X_L, gauss2.y_L)
    post = h.predict_proba(gauss2.X_U)  # one predict_proba of U, sliced per sample
    idx = protocols.upp_indices(gauss2.y_U, 20, 3, 1, n_classes=2)
    assert len(seen) == 1 and len(seen[0]) == 3
    for got, i in zip(seen[0], idx):
        np.testing.assert_allclose(got, post[i], atol=1e-12)


def test_configuration_study_defaults(gauss2):
    from capshift import protocols
    from capshift.experiment import configuration_study
    res = configuration_study(gauss2, {"n": "Naive"})
    assert len(res) == 12 and (res.seed == 0).all()
    idx = protocols.upp_indices(gauss2.y_U, 1000, 12, 0, n_classes=2)  # h: LR seeded 0; accuracy
    true, on_V = _true_and_val(gauss2, "lr", 0, idx, "accuracy")
    np.testing.assert_allclose(res["true"], true, atol=1e-12)
    np.testing.assert_allclose(res["predicted"], on_V, atol=1e-12)


def test_configuration_study_refusals(gauss2):
    from capshift.experiment import configuration_study
    for args, kwargs, err, msg in (
            ((np.ones((3, 3)), {"n": "Naive"}), {}, TypeError,
             "split must be a capshift.datasets.Split (e.g. gaussian_split()), got ndarray"),
            ((gauss2, {}), {}, ValueError,
             "configurations must be a non-empty dict: name -> method name or callable(h) -> estimator"),
            ((gauss2, [("n", "Naive")]), {}, ValueError, "configurations must be a non-empty dict"),
            ((gauss2, {"n": "Naive", "x": 3}), {}, TypeError,
             "configurations['x'] must be a registered method name or a callable f(h) returning an unfitted "
             "estimator, got int"),
            ((gauss2, {"n": "NoSuchMethod"}), {}, ValueError, "unknown method 'NoSuchMethod'"),
            ((gauss2, {"n": "Naive"}), dict(n_samples=0), ValueError, "n_samples must be >= 1, got 0"),
            ((gauss2, {"n": "Naive"}), dict(sample_size=0), ValueError, "sample_size must be >= 1, got 0"),
            ((gauss2, {"n": "Naive"}), dict(sample_size=2.5), TypeError, "sample_size must be an int"),
            ((gauss2, {"n": "Naive"}), dict(seed=-1), ValueError, "seed must be in 0..2**32-1"),
            ((gauss2, {"n": "Naive"}), dict(measure="auc"), ValueError, "unknown measure 'auc'"),
            ((gauss2, {"n": "Naive"}), dict(classifier="xgb"), ValueError, "unknown classifier 'xgb'")):
        with pytest.raises(err, match="^" + re.escape(msg)):
            configuration_study(*args, **kwargs)


# ---- run_experiment, run_tables, run_many on a tiny split: defaults, the solver asked, progress bars, index ----
def _spy_made(monkeypatch):
    from capshift import registry
    made, orig = [], registry.make_method

    def spy(*args, **kwargs):
        made.append(orig(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(registry, "make_method", spy)  # the one factory, which the evaluation path calls
    return made


def test_run_experiment_defaults(gauss2, capsys):
    from capshift import protocols
    df = run_experiment(gauss2, methods=("Naive",))
    # LR seeded 0, 1000 UPP samples of 100 items seeded 0, accuracy; a progress bar named after the data, cleared
    assert len(df) == 1000 and df.index.tolist() == list(range(1000))
    assert set(df.measure) == {"accuracy"} and set(df.classifier) == {"lr"}
    idx = protocols.upp_indices(gauss2.y_U, 100, 1000, 0, n_classes=2)
    right = make_classifier("lr", 0).fit(gauss2.X_L, gauss2.y_L).predict(gauss2.X_U) == gauss2.y_U
    np.testing.assert_allclose(df["true"], [right[i].mean() for i in idx], atol=1e-12)
    err = capsys.readouterr().err
    assert "gauss2: methods:" in err and "\n" not in err


def test_run_experiment_passes_the_solver_and_numbers_the_rows(gauss2, monkeypatch, capsys):
    made = _spy_made(monkeypatch)
    df = run_experiment(gauss2, methods=("Naive", "LEAP_ACC"), n_samples=3, sample_size=10, solver="slsqp",
                        progress=False)
    assert df.index.tolist() == list(range(6)) and df.method.tolist() == ["Naive"] * 3 + ["LEAP_ACC"] * 3
    assert [type(e).__name__ for e in made] == ["Naive", "LEAP"] and made[1].solver == "slsqp"
    assert capsys.readouterr().err == ""  # progress=False: no bar
    run_experiment(gauss2, methods=("LEAP_ACC",), n_samples=3, sample_size=10, progress=True)
    err = capsys.readouterr().err
    # the shared quantifier's bar, then the methods' bar, both cleared when done
    assert "gauss2: quantify (acc):" in err and "gauss2: methods:" in err and "\n" not in err


def test_run_tables_defaults_solver_and_progress(gauss2, monkeypatch, capsys):
    from capshift import protocols
    from capshift.tables import accuracy, contingency_table
    true, est = run_tables(gauss2, methods=("Naive",))
    # LR seeded 0, 1000 UPP samples of 100 items seeded 0; Naive: V's table on every sample
    assert true.shape == (1000, 2, 2) and list(est) == ["Naive"]
    h = make_classifier("lr", 0).fit(gauss2.X_L, gauss2.y_L)
    pred = h.predict(gauss2.X_U)
    idx = protocols.upp_indices(gauss2.y_U, 100, 1000, 0, n_classes=2)
    np.testing.assert_allclose(true[::97], [contingency_table(gauss2.y_U[i], pred[i], 2) for i in idx[::97]],
                               atol=1e-12)
    np.testing.assert_allclose(est["Naive"], np.broadcast_to(contingency_table(gauss2.y_V, h.predict(gauss2.X_V), 2),
                                                             (1000, 2, 2)), atol=1e-12)
    made = _spy_made(monkeypatch)
    kw = dict(methods=("LEAP_ACC", "Naive"), n_samples=4, sample_size=10, seed=2, classifier="svm")
    true, est = run_tables(gauss2, **kw)
    assert made[0].solver == "osqp" and capsys.readouterr().err == ""  # the default solver; no bar by default
    df = run_experiment(gauss2, progress=False, **kw)
    for name in ("LEAP_ACC", "Naive"):  # the runner's samples and methods, table by table
        np.testing.assert_allclose(accuracy(est[name]), df[df.method == name]["predicted"], atol=1e-12)
        np.testing.assert_allclose(accuracy(true), df[df.method == name]["true"], atol=1e-12)
    run_tables(gauss2, solver="slsqp", progress=True, **kw)
    assert made[-2].solver == "slsqp" and "gauss2: quantify (acc):" in capsys.readouterr().err
    with pytest.raises(TypeError, match="'ATC' estimates measures directly"):
        run_tables(gauss2, methods=("Naive", "ATC"), n_samples=2, sample_size=10)


def test_run_many_serial_and_parallel_runs(gauss2, capsys):
    import dataclasses

    import joblib
    from capshift.quacc import gaussian_split
    other = dataclasses.replace(gaussian_split(n_classes=2, n_train=60, n_val=50, n_test=80, seed=2), name="other")
    kw = dict(methods=("Naive",), n_samples=3, sample_size=10)
    one = [run_experiment(s, progress=False, **kw) for s in (gauss2, other)]
    capsys.readouterr()
    df = run_many([gauss2, other], **kw)  # n_jobs=1: in this process, each run with its own bar
    cols = [c for c in df.columns if c != "seconds"]
    pd.testing.assert_frame_equal(df[cols], pd.concat(one, ignore_index=True)[cols])
    assert df.index.tolist() == list(range(6)) and df.dataset.tolist() == ["gauss2"] * 3 + ["other"] * 3
    err = capsys.readouterr().err
    assert "datasets: " in err and "gauss2: methods:" in err and "other: methods:" in err
    run_many([gauss2, other], progress=False, **kw)
    assert capsys.readouterr().err == ""
    with joblib.parallel_config(backend="threading"):  # parallel runs (threads here): the runs show no bar
        par = run_many([gauss2, other], n_jobs=2, **kw)
        err = capsys.readouterr().err
        assert "datasets: " in err and ": methods" not in err
        pd.testing.assert_frame_equal(par[cols], df[cols])
        run_many([gauss2, other], n_jobs=2, progress=False, **kw)
        assert capsys.readouterr().err == ""

"""Experiment runner: determinism, shared quantifier estimates, tidy output, oracle bound."""
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

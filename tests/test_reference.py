"""Tests for capshift.reference: the published tables shipped as package data."""
import math

import numpy as np
import pandas as pd
import pytest

from capshift import reference as R


def test_all_tables_load():
    for tid in R.TABLES:
        df = R.paper_table(tid)
        assert len(df) > 0 and {"dataset", "method", "mean", "std"} <= set(df.columns)
        assert df["mean"].dropna().between(0, 1).all()
    assert len(R.paper_table("leap2025_table1")) == 330 and len(R.paper_table("leap2025_table2")) == 275


def test_known_cells():
    t1 = R.paper_values()  # LEAP 2025 Table 1: LR, vanilla accuracy, binary
    assert tuple(t1.loc[("sonar", "ATC"), ["mean", "std"]]) == (0.121, 0.080)
    assert tuple(t1.loc[("pageblocks.5", "Naive"), ["mean", "std"]]) == (0.341, 0.208)
    assert t1.loc[("Average", "Naive"), "mean"] == 0.098
    t2 = R.paper_values(task="multiclass")
    assert tuple(t2.loc[("letter", "O-LEAP_KDEy"), ["mean", "std"]]) == (0.035, 0.026)
    assert set(t2.index.get_level_values("method")) == {
        "Naive", "ATC", "DoC", "DS", "L-CBPE", "NN", "Q-COT", "LEAP_ACC", "LEAP_KDEy", "S-LEAP_KDEy", "O-LEAP_KDEy"}
    assert np.isnan(R.paper_values("ds2024", classifier="kNN")["std"]).all()


@pytest.mark.parametrize("args", [("leap2025", "acc", "LR", "binary"), ("leap2025", "acc", "LR", "multiclass"),
                                  ("leap2025", "f1", "LR", "binary"), ("leap2025", "f1", "LR", "multiclass"),
                                  ("ds2024", "acc", "SVM", "binary"), ("leap2025", "acc", "SVM", "multiclass")])
def test_average_row_is_mean_of_datasets(args):
    v = R.paper_values(*args)["mean"].unstack()
    assert "Average" in v.index
    diff = v.drop("Average").mean() - v.loc["Average"]
    assert diff.abs().max() <= 0.001 + 1e-9  # printed values are rounded to 3 decimals


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="table_id"):
        R.paper_table("leap2025_table7")
    with pytest.raises(ValueError, match="paper"):
        R.paper_values("leap2023")
    with pytest.raises(ValueError, match="classifier='RF'"):
        R.paper_values("leap2025", classifier="RF")  # the paper's RF tables are lost in the text conversion
    with pytest.raises(ValueError, match="task='binary'"):
        R.paper_values("leap2025", classifier="SVM")  # only Table 9 (multiclass) survives for SVM
    with pytest.raises(ValueError, match="measure='f1'"):
        R.paper_values("ds2024", measure="f1")


def test_compare_puts_paper_values_beside_ours_and_pools_the_average_std():
    import numpy as np
    import pandas as pd
    from capshift.reference import compare, paper_values, side_by_side

    rng = np.random.default_rng(0)
    rows = [(d, "lr", m, "accuracy", float(a)) for d in ("cmc.1", "haberman") for m in ("Naive", "SLD-CBPE")
            for a in rng.random(20) * (1 if d == "cmc.1" else 3)]
    res = pd.DataFrame(rows, columns=["dataset", "classifier", "method", "measure", "ae"])
    c = compare(res, aliases={"SLD-CBPE": "L-CBPE"}).set_index(["dataset", "method"])
    pub = paper_values("leap2025", "acc", "LR", "binary")
    assert c.loc[("haberman", "Naive"), "paper_mean"] == pub.loc[("haberman", "Naive"), "mean"]
    assert c.loc[("cmc.1", "SLD-CBPE"), "paper_mean"] == pub.loc[("cmc.1", "L-CBPE"), "mean"]
    assert c.loc[("Average (paper, all datasets)", "Naive"), "paper_mean"] == pub.loc[("Average", "Naive"), "mean"]
    run = c.loc[("Average (datasets run)", "Naive")]
    naive = res[res.method == "Naive"]["ae"]
    assert run["mean"] == pytest.approx(naive.mean()) and run["std"] == pytest.approx(naive.std(ddof=0))
    table = side_by_side(c.reset_index(), "binary", "accuracy", ["Naive"])
    assert list(table.columns) == [("Naive", "ours"), ("Naive", "paper")] and len(table) == 4


def test_compare_average_pools_the_papers_std_like_the_paper():
    # run on every dataset of LEAP 2025 Tables 1-2, "Average (datasets run)" must reproduce the paper's printed
    # Average row from its per-dataset values: mean of the means, and std pooled from per-dataset mean and std
    import pandas as pd
    from capshift.datasets import names

    for task in ("binary", "multiclass"):
        pub = R.paper_values("leap2025", "acc", "LR", task)
        methods = pub.index.get_level_values("method").unique()
        res = pd.DataFrame([(k, "lr", m, "accuracy", 0.1) for k in names(task) for m in methods],
                           columns=["dataset", "classifier", "method", "measure", "ae"])
        c = R.compare(res).set_index(["dataset", "method"])
        run, printed = c.loc["Average (datasets run)"], pub.loc["Average"]
        assert list(run.index) == list(methods)
        # printed values have 3 decimals: rounding of the per-dataset values and of the Average row
        assert (run["paper_mean"] - printed["mean"]).abs().max() <= 0.001
        assert (run["paper_std"] - printed["std"]).abs().max() <= 0.0015
        assert (c.loc["Average (paper, all datasets)", "paper_mean"] == printed["mean"]).all()


def test_compare_rejects_an_unknown_paper():
    import pandas as pd

    res = pd.DataFrame({"dataset": ["cmc.1"], "classifier": ["lr"], "method": ["Naive"], "measure": ["accuracy"],
                        "ae": [0.1]})
    with pytest.raises(ValueError, match="paper must be one of"):
        R.compare(res, paper="leap2023")


def test_interval_table_is_the_papers_table3():
    t = R.interval_table()
    assert len(t) == 29 * 2 * 3 and set(t["quantity"]) == {"AE", "A", "C"}
    v = t.set_index(["dataset", "method", "quantity"])["value"]
    # cells as printed in the paper's Table 3 (seed text lines 499-527)
    assert v[("pageblocks.5", "O-LEAP_KDEy", "C")] == 0.838
    assert v[("mammographic", "DoC", "C")] == 0.0 and v[("wine.1", "DoC", "C")] == 1.0
    assert v[("haberman", "DoC", "A")] == 0.247 and v[("iris.2", "O-LEAP_KDEy", "AE")] == 0.112
    assert t["value"].between(0, 1).all() and t["provenance"].str.contains("line").all()
    assert (t["provenance"].str.contains("suspect")).sum() == 6
    # the paper's finding: coverage far below the nominal 95% for both methods
    assert t[t.quantity == "C"].groupby("method")["value"].mean().max() < 0.5


@pytest.mark.parametrize("task", ["binary", "multiclass"])
@pytest.mark.parametrize("clf", ["LR", "kNN", "SVM", "MLP"])
def test_authors_repository_tables_load_and_their_averages_add_up(task, clf):
    """The authors' repository output (leap2025repo): 7 methods, 29 binary / 21 multiclass datasets, and each
    printed Average is the mean of the dataset means to rounding (3 decimals per cell)."""
    v = R.paper_values("leap2025repo", "acc", clf, task)
    methods = ["Naive", "ATC", "DoC", "LEAP_ACC", "LEAP_KDEy", "S-LEAP_KDEy", "O-LEAP_KDEy"]
    assert sorted(set(v.index.get_level_values("method"))) == sorted(methods)
    datasets = [d for d in dict.fromkeys(v.index.get_level_values("dataset")) if d != "Average"]
    assert len(datasets) == (29 if task == "binary" else 21)
    for m in methods:
        mean = v.loc[[(d, m) for d in datasets], "mean"].mean()
        assert abs(mean - v.loc[("Average", m), "mean"]) <= 0.0015
    # the same baseline cells as the printed LR tables, where the paper prints them (README: 247 of 250 identical)
    if clf == "LR":
        printed = R.paper_values("leap2025", "acc", "LR", task)
        shared = [(d, m) for d in datasets for m in ("Naive", "ATC", "DoC", "S-LEAP_KDEy") if (d, m) in printed.index]
        same = sum(abs(v.loc[k, "mean"] - printed.loc[k, "mean"]) < 1e-9 for k in shared)
        assert same >= len(shared) - 3


def _record(means):
    """A hand-made study record for lr / binary / accuracy: {dataset: {method: mean}} plus Average rows."""
    import pandas as pd
    rows = [("lr", "binary", "accuracy", d, m, v, 0.1, 100, False, 0.5) for d, ms in means.items() for m, v in ms.items()]
    methods = list(next(iter(means.values())))
    rows += [("lr", "binary", "accuracy", "Average", m, float(np.mean([means[d][m] for d in means])), 0.1, 100 * len(means),
              False, 0.5) for m in methods]
    return pd.DataFrame(rows, columns=["classifier", "task", "measure", "dataset", "method", "mean", "std", "n", "best",
                                       "pvalue"])


def test_compare_record_puts_the_repository_cells_beside_ours_on_shared_datasets():
    rec = _record({"haberman": {"Naive": 0.2, "DoC": 0.1, "DS": 0.3}, "sonar": {"Naive": 0.4, "DoC": 0.2, "DS": 0.1}})
    c = R.compare_record(rec, "lr", "binary")
    repo = R.paper_values("leap2025repo", "acc", "LR", "binary")
    cell = c[(c.dataset == "haberman") & (c.method == "Naive")].iloc[0]
    assert cell["paper_mean"] == repo.loc[("haberman", "Naive"), "mean"]
    assert np.isnan(c[(c.dataset == "haberman") & (c.method == "DS")]["paper_mean"].iloc[0])  # not in the repository
    avg = c[c.dataset == "Average (datasets shared)"].set_index("method")
    assert list(avg.index) == ["Naive", "DoC"] and avg["n_datasets"].eq(2).all()
    assert avg.loc["DoC", "mean"] == pytest.approx(0.15)
    assert avg.loc["DoC", "paper_mean"] == pytest.approx((repo.loc[("haberman", "DoC"), "mean"]
                                                          + repo.loc[("sonar", "DoC"), "mean"]) / 2)
    with pytest.raises(ValueError, match="no rows"):
        R.compare_record(rec, "rf", "binary")


@pytest.mark.parametrize("leap, base, p, verdict", [(0.05, 0.08, 1e-6, "reproduced"), (0.08, 0.05, 1e-6, "contradicted"),
                                                    (0.05, 0.08, 0.2, "not enough evidence")])
def test_leap_kdey_verdict_follows_the_means_and_the_test(leap, base, p, verdict):
    import pandas as pd
    rec = _record({"haberman": {"Naive": 0.3, "SLD-CBPE": base, "O-LEAP_KDEy": leap, "LEAP_ACC": 0.01}})
    pairs = pd.DataFrame([("lr", "binary", "accuracy", "SLD-CBPE", "O-LEAP_KDEy", base, leap, 100, p)],
                         columns=["classifier", "task", "measure", "method_a", "method_b", "mean_a", "mean_b", "n", "pvalue"])
    v = R.leap_kdey_verdict(rec, pairs, "lr", "binary", "accuracy")
    assert v["verdict"] == verdict and v["leap"] == "O-LEAP_KDEy" and v["baseline"] == "SLD-CBPE"  # LEAP_ACC is neither
    assert verdict in v["sentence"] and v["pvalue"] == p
    none = R.leap_kdey_verdict(_record({"haberman": {"Naive": 0.3}}), pairs, "lr", "binary", "accuracy")
    assert none["verdict"] == "not testable here"


def test_group_verdict_compares_the_best_of_each_group_and_reads_the_pair_in_either_order():
    import pandas as pd
    rec = _record({"haberman": {"Naive": 0.3, "SLD-CBPE": 0.04, "BCTS-CBPE": 0.06, "O-LEAP_KDEy": 0.05}})
    pairs = pd.DataFrame([("lr", "binary", "accuracy", "O-LEAP_KDEy", "SLD-CBPE", 0.05, 0.04, 100, 1e-4)],
                         columns=["classifier", "task", "measure", "method_a", "method_b", "mean_a", "mean_b", "n", "pvalue"])
    assert R.recorded_pvalue(pairs, "lr", "binary", "accuracy", "SLD-CBPE", "O-LEAP_KDEy") == 1e-4
    assert math.isnan(R.recorded_pvalue(pairs, "lr", "binary", "accuracy", "Naive", "O-LEAP_KDEy"))
    # the CBPE group's best (SLD-CBPE, .04) against O-LEAP_KDEy (.05): lower and significant
    v = R.group_verdict(rec, pairs, "lr", "binary", "accuracy", ["BCTS-CBPE", "SLD-CBPE"], ["O-LEAP_KDEy"],
                        names=("CBPE", "LEAP"))
    assert (v["verdict"], v["leap"], v["baseline"]) == ("reproduced", "SLD-CBPE", "O-LEAP_KDEy")
    assert "best CBPE SLD-CBPE" in v["sentence"]
    back = R.group_verdict(rec, pairs, "lr", "binary", "accuracy", ["O-LEAP_KDEy"], ["SLD-CBPE"])
    assert back["verdict"] == "contradicted"
    # a pair never tested is not a verdict either way
    untested = R.group_verdict(rec, pairs, "lr", "binary", "accuracy", ["Naive"], ["SLD-CBPE"])
    assert untested["verdict"] == "not enough evidence" and math.isnan(untested["pvalue"])
    with pytest.raises(ValueError, match="alpha"):
        R.group_verdict(rec, pairs, "lr", "binary", "accuracy", ["Naive"], ["SLD-CBPE"], alpha=1.5)


def test_group_verdict_says_not_enough_evidence_when_the_test_cannot_see_the_papers_effect():
    import pandas as pd
    rec = _record({"haberman": {"Naive": 0.3, "SLD-CBPE": 0.08, "O-LEAP_KDEy": 0.05}})  # std 0.1, n 100
    pairs = pd.DataFrame([("lr", "binary", "accuracy", "SLD-CBPE", "O-LEAP_KDEy", 0.08, 0.05, 100, 0.2)],
                         columns=["classifier", "task", "measure", "method_a", "method_b", "mean_a", "mean_b", "n", "pvalue"])
    big = R.leap_kdey_verdict(rec, pairs, "lr", "binary", "accuracy", effect=0.1)  # sd 0.141 over 100 pairs: visible
    assert big["verdict"] == "not reproduced" and big["power"] >= 0.8 and big["samples_needed"] <= 100
    small = R.leap_kdey_verdict(rec, pairs, "lr", "binary", "accuracy", effect=0.005)
    assert small["verdict"] == "not enough evidence" and small["power"] < 0.8 and small["samples_needed"] > 100
    assert small["sd"] == pytest.approx(np.hypot(0.1, 0.1)) and small["n"] == 100
    default = R.leap_kdey_verdict(rec, pairs, "lr", "binary", "accuracy")
    assert default["effect"] == R.DEFAULT_EFFECT and default["effect_source"] == "default"


def test_results_group_verdict_tests_the_best_of_each_group_on_paired_samples():
    import pandas as pd
    rng = np.random.default_rng(0)
    rows = []
    for d in ("haberman", "cmc.1"):
        for s in range(60):
            base = rng.random() * 0.1
            for m, shift in (("Naive", 0.05), ("ATC", 0.03), ("O-LEAP_KDEy", 0.0), ("LEAP_KDEy", 0.01)):
                rows.append((d, "lr", m, "accuracy", s, base + shift + rng.normal(0, 0.005)))
    res = pd.DataFrame(rows, columns=["dataset", "classifier", "method", "measure", "sample", "ae"])
    v = R.results_group_verdict(res, "binary", "accuracy", R.LEAP_KDEY, R.PAPER_BASELINES, effect=0.02)
    assert (v["verdict"], v["leap"], v["baseline"], v["n"]) == ("reproduced", "O-LEAP_KDEy", "ATC", 120)
    assert v["pvalue"] < 1e-6 and v["power"] > 0.99
    assert R.results_group_verdict(res, "multiclass", "accuracy", R.LEAP_KDEY, ["Naive"])["verdict"] == "not testable here"


def test_paper_group_effect_is_the_papers_gap_between_the_two_bests():
    pub = R.paper_values("leap2025", "acc", "LR", "binary")["mean"].unstack("method").drop(index="Average")
    eff, n = R.paper_group_effect(R.LEAP_KDEY, R.PAPER_BASELINES, ["haberman", "cmc.1"])
    sub = pub.loc[["haberman", "cmc.1"]].mean()
    assert n == 2 and eff == pytest.approx(sub[list(R.PAPER_BASELINES)].min() - sub[list(R.LEAP_KDEY)].min())
    assert R.paper_group_effect(R.LEAP_KDEY, ["Naive"], classifier="RF") == (pytest.approx(float("nan"), nan_ok=True), 0)


def _record_from_paper(offsets):
    """A study record for LR, binary, accuracy: the paper's Table 1 cells plus ``offsets[(dataset, method)]``."""
    pub = R.paper_values("leap2025", "acc", "LR", "binary")
    rows = []
    for (d, m), off in offsets.items():
        rows.append(dict(classifier="lr", task="binary", measure="accuracy", dataset=d, method=m,
                         mean=pub.loc[(d, m), "mean"] + off, std=0.1, best=False, pvalue=1.0))
    return pd.DataFrame(rows)


def test_fidelity_counts_by_hand():
    ds, ms = ["haberman", "iris.2", "wdbc"], ["Naive", "ATC", "DoC", "LEAP_ACC"]
    off = {(d, m): 0.0 for d in ds for m in ms}
    off["haberman", "Naive"] = 0.03   # out of the band; Naive's average moves by .01 (inside, at the edge)
    off["iris.2", "ATC"] = 0.0104     # inside: 0.01 plus half the last printed digit
    off["wdbc", "DoC"] = -0.0106      # outside
    f = R.fidelity(_record_from_paper(off), "lr", "binary", "accuracy", paper="leap2025")
    assert (f["n_cells"], f["cells_within"]) == (12, 10)
    assert (f["n_averages"], f["averages_within"], f["n_datasets"]) == (4, 4, 3)
    same = R.fidelity(_record_from_paper({k: 0.0 for k in off}), "lr", "binary", paper="leap2025")
    assert same["rho"] == pytest.approx(1.0) and same["cells_within"] == 12
    flipped = _record_from_paper({k: 0.0 for k in off})
    flipped["mean"] = 1 - flipped["mean"]  # the reverse order of the methods' averages
    assert R.fidelity(flipped, "lr", "binary", paper="leap2025")["rho"] == pytest.approx(-1.0)
    aliased = R.fidelity(_record_from_paper(off).replace({"method": {"DoC": "DoC-x"}}), "lr", "binary",
                         paper="leap2025", aliases={"DoC-x": "DoC"})
    assert aliased["cells_within"] == 10
    with pytest.raises(ValueError, match="tol"):
        R.fidelity(_record_from_paper(off), "lr", "binary", paper="leap2025", tol=0)


def test_authors_runs():
    r = R.authors_runs("lr", "binary")
    assert len(r) == 29 and r.loc["iris.2", "h_acc_on_V"] == pytest.approx(0.698113, abs=1e-4)
    assert set(r.columns) >= {"h_acc_on_V", "mean_true_acc", "std_true_acc", "naive_mean_ae"}
    assert len(R.authors_runs("SVM", "multiclass")) == 21
    assert {"hand-digits", "image-seg", "page-block"} <= set(R.authors_runs("lr", "multiclass").index)
    with pytest.raises(ValueError, match="classifier"):
        R.authors_runs("rf")

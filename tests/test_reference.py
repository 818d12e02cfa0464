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


# ----------------------------------------------------------------- published cells read back exactly, by key
def test_paper_table_cells_and_columns_as_in_the_csv():
    t = R.paper_table("leap2025_table1")
    assert list(t.columns) == ["paper", "table", "classifier", "measure", "setting", "dataset", "method", "mean",
                               "std", "best", "dagger"]
    row = t[(t.dataset == "haberman") & (t.method == "LEAP_KDEy")].iloc[0]
    assert (row["paper"], row["mean"], row["std"], row["dagger"]) == ("Volpi2025_LEAP_MLJ", 0.098, 0.082, 1)
    repo = R.paper_table("leap2025repo_binary_lr").set_index(["dataset", "method"])
    assert repo.loc[("pageblocks.5", "LEAP_ACC"), "best"] == "0"  # best read as text, as in the CSV
    assert repo["std"].dtype == float
    t[t.columns[0]] = "changed"  # a copy: the cached table is not touched
    assert R.paper_table("leap2025_table1")["paper"].eq("Volpi2025_LEAP_MLJ").all()


@pytest.mark.parametrize("args, key, mean, std", [
    (("leap2025", "f1", "LR", "binary"), None, None, None),
    (("ds2024", "acc", "LR", "binary"), ("balance.1", "DoC"), 0.026, None),
    (("quacc2025", "acc", "LR", "binary"), ("IMDB", "Naive"), 0.1799, 0.208),
    (("quacc2025", "f1", "LR", "binary"), ("CCAT", "Naive"), 0.1327, 0.229),
    (("leap2025repo", "acc", "LR", "binary"), ("pageblocks.5", "LEAP_ACC"), 0.080, 0.065),
])
def test_paper_values_reads_each_paper_by_key(args, key, mean, std):
    v = R.paper_values(*args)
    assert list(v.columns) == ["mean", "std", "dagger"] and v.index.names == ["dataset", "method"]
    if key is not None:
        assert v.loc[key, "mean"] == mean
        assert (np.isnan(v.loc[key, "std"]) if std is None else v.loc[key, "std"] == std)
    # one (measure, classifier, setting) only: every row of the CSVs of that combination, none of the others
    df = pd.concat([R.paper_table(t) for t in R.TABLES if t.startswith(args[0] + "_")])
    sel = df[(df.measure == args[1]) & (df.classifier == args[2]) & (df.setting == args[3])]
    assert len(v) == len(sel) and list(v.index) == list(zip(sel.dataset, sel.method))


def test_paper_values_error_messages_are_exact():
    with pytest.raises(ValueError) as e:
        R.paper_values("leap2023")
    assert str(e.value) == ("paper must be one of ['ds2024', 'leap2025', 'leap2025repo', 'quacc2025'], "
                            "got 'leap2023'")
    with pytest.raises(ValueError) as e:
        R.paper_values("ds2024", measure="f1")
    assert str(e.value) == "measure='f1' is not available for paper='ds2024'; choose from ['acc']"
    with pytest.raises(ValueError) as e:
        R.paper_values("leap2025", classifier="RF")
    assert str(e.value) == "classifier='RF' is not available for paper='leap2025'; choose from ['LR', 'SVM']"
    with pytest.raises(ValueError) as e:
        R.paper_values("leap2025", classifier="SVM")
    assert str(e.value) == "task='binary' is not available for paper='leap2025'; choose from ['multiclass']"
    with pytest.raises(ValueError) as e:
        R.paper_table("leap2025_table7")
    assert str(e.value) == f"table_id must be one of {sorted(R.TABLES)}, got 'leap2025_table7'"


def test_dataset_shift_tables_cells_by_key():
    t = R.dataset_shift_tables()
    assert list(t.columns) == ["paper", "table", "p_L", "degree", "p_U", "method", "mae", "mark", "provenance"]
    t4 = t[t.table == 4]
    assert t4["p_L"].isna().all() and t4["p_U"].isna().all()  # Table 4 has no p_L, p_U
    cell = t4[(t4.degree == -0.9) & (t4.method == "DyS")].iloc[0]
    assert (cell["mae"], cell["mark"]) == (0.053, "‡")
    assert t4[(t4.degree == -0.6) & (t4.method == "SLD")]["mark"].iloc[0] == "†"
    cc = t4[(t4.degree == -1.0) & (t4.method == "CC")].iloc[0]
    assert cc["mae"] == 0.737 and cc["mark"] == ""  # no mark: an empty string, not NaN
    t5 = t[(t.table == 5) & (t.p_L == 0.5) & (t.p_U == 0.25) & (t.degree == 0.1)].set_index("method")["mae"]
    assert (t5["ACC"], t5["PCC"], t5["PACC"]) == (0.019, 0.104, 0.017)
    assert len(t) == 504 and t["mark"].map(type).eq(str).all() and t["mark"].dtype == object


# ------------------------------------------------------ compare: pairs by (dataset, method), bold, dagger, averages
def _tiny_results():
    ae = {("haberman", "Q-COT"): [.1, .3], ("haberman", "LEAP_KDEy"): [.2, .2], ("haberman", "mine"): [0, .4],
          ("haberman", "S-LEAP_KDEy"): [.1, .1], ("cmc.1", "Q-COT"): [.3, .5], ("cmc.1", "LEAP_KDEy"): [0, .2],
          ("cmc.1", "mine"): [.1, .1], ("cmc.1", "S-LEAP_KDEy"): [.2, .4], ("yeast-multiclass", "Naive"): [.1, .3]}
    rows = [(d, "lr", m, "accuracy", s, a) for (d, m), v in ae.items() for s, a in enumerate(v)]
    return pd.DataFrame(rows, columns=["dataset", "classifier", "method", "measure", "sample", "ae"])


def test_compare_whole_frame_by_hand():
    c = R.compare(_tiny_results(), aliases={"mine": "L-CBPE"})
    assert list(c.columns) == ["task", "measure", "dataset", "method", "mean", "std", "paper_mean", "paper_std",
                               "paper_best", "paper_dagger"]
    run, allp = "Average (datasets run)", "Average (paper, all datasets)"
    ms = ["Q-COT", "LEAP_KDEy", "mine", "S-LEAP_KDEy"]
    assert list(zip(c.task, c.dataset, c.method)) == (
        [("binary", d, m) for d in ("haberman", "cmc.1", run, allp) for m in ms]
        + [("multiclass", d, "Naive") for d in ("yeast", run, allp)])  # REGISTRY's name of yeast-multiclass
    assert c["measure"].eq("accuracy").all()
    nan = float("nan")
    # ours: mean and population std of the two samples; paper: Table 1 cells (mine -> L-CBPE), Table 2 for yeast
    expect = [(.2, .1, .093, .061, True, False), (.2, 0, .098, .082, False, True), (.2, .2, .186, .137, False, False),
              (.1, 0, .103, .085, False, False),
              (.4, .1, .065, .047, False, False), (.1, .1, .075, .059, False, False), (.1, 0, .060, .046, False, False),
              (.3, .1, .055, .042, True, False),
              # Average (datasets run): std pooled over every sample; paper std sqrt(mean(std^2) + var(means))
              (.3, .02 ** .5, .079, (0.002965 + 0.000196) ** .5, True, False),
              (.15, .0075 ** .5, .0865, ((.082 ** 2 + .059 ** 2) / 2 + .0115 ** 2) ** .5, False, False),
              (.15, .15, .123, ((.137 ** 2 + .046 ** 2) / 2 + .063 ** 2) ** .5, False, False),
              (.2, .015 ** .5, .079, ((.085 ** 2 + .042 ** 2) / 2 + .024 ** 2) ** .5, True, False),
              # the paper's own Average row: its bold (S-LEAP_KDEy ties O-LEAP_KDEy at .053) and its dagger
              (nan, nan, .065, .053, False, False), (nan, nan, .063, .069, False, False),
              (nan, nan, .089, .091, False, False), (nan, nan, .053, .055, True, True),
              (.2, .1, .074, .052, False, False), (.2, .1, .074, .052, True, False), (nan, nan, .106, .133, False, False)]
    got = c[["mean", "std", "paper_mean", "paper_std", "paper_best", "paper_dagger"]]
    for row, want in zip(got.itertuples(index=False), expect):
        np.testing.assert_allclose(row[:4], want[:4], atol=1e-12)
        assert (row[4], row[5]) == want[4:]
    assert c["paper_best"].dtype == bool and c["paper_dagger"].dtype == bool


def test_compare_pairs_by_key_not_by_row_order():
    res = _tiny_results()
    c = R.compare(res, aliases={"mine": "L-CBPE"}).set_index(["dataset", "method"])
    c2 = R.compare(res.iloc[::-1], aliases={"mine": "L-CBPE"}).set_index(["dataset", "method"])
    for col in ("mean", "paper_mean", "paper_std", "paper_best", "paper_dagger"):
        pd.testing.assert_series_equal(c2[col].reindex(c.index), c[col], check_exact=False)
    # without the alias "mine" has no published cell
    raw = R.compare(res).set_index(["dataset", "method"])
    assert np.isnan(raw.loc[("haberman", "mine"), "paper_mean"]) and not raw.loc[("haberman", "mine"), "paper_best"]
    assert np.isnan(raw.loc[("Average (paper, all datasets)", "mine"), "paper_std"])


def test_compare_error_messages_are_exact():
    res = _tiny_results()
    with pytest.raises(ValueError) as e:
        R.compare(res.drop(columns="ae"))
    assert str(e.value) == ("results must have columns ['ae', 'classifier', 'dataset', 'measure', 'method']: "
                            "pass run_experiment's output")
    with pytest.raises(ValueError) as e:
        R.compare(res.assign(classifier=["lr"] * (len(res) - 1) + ["svm"]))
    assert str(e.value) == "results must hold a single classifier; compare each classifier separately"
    with pytest.raises(ValueError) as e:
        R.compare(res, paper="leap2023")
    assert str(e.value) == ("paper must be one of ['ds2024', 'leap2025', 'leap2025repo', 'quacc2025'], "
                            "got 'leap2023'")


def test_compare_gives_nan_where_the_paper_has_no_table():
    # found by the mutation review: the fallback frame lacked the 'dagger' column and compare raised KeyError
    res = _tiny_results().assign(measure="brier")
    c = R.compare(res)
    assert c["paper_mean"].isna().all() and c["paper_std"].isna().all()
    assert not c["paper_best"].any() and not c["paper_dagger"].any()
    assert c["paper_dagger"].dtype == bool and len(c) == len(R.compare(_tiny_results()))


def test_side_by_side_cells_are_mean_pm_std_with_three_decimals():
    c = R.compare(_tiny_results(), aliases={"mine": "L-CBPE"})
    t = R.side_by_side(c, "binary", "accuracy")
    assert list(t.columns) == [(m, s) for m in ("Q-COT", "LEAP_KDEy", "mine", "S-LEAP_KDEy") for s in ("ours", "paper")]
    assert list(t.index) == ["haberman", "cmc.1", "Average (datasets run)", "Average (paper, all datasets)"]
    assert t.loc["haberman", ("Q-COT", "ours")] == "0.200 ± 0.100"
    assert t.loc["haberman", ("Q-COT", "paper")] == "0.093 ± 0.061"
    assert t.loc["Average (paper, all datasets)", ("Q-COT", "ours")] == ""
    c.loc[c.method == "mine", "paper_std"] = np.nan  # std not printed: the mean alone
    t = R.side_by_side(c, "binary", "accuracy", methods=["mine", "Q-COT"])
    assert t.loc["cmc.1", ("mine", "paper")] == "0.060" and t.loc["cmc.1", ("Q-COT", "ours")] == "0.400 ± 0.100"
    assert list(t.columns) == [("mine", "ours"), ("mine", "paper"), ("Q-COT", "ours"), ("Q-COT", "paper")]
    with pytest.raises(ValueError) as e:
        R.side_by_side(c, "binary", "f1")
    assert str(e.value) == "comparison has no rows for task='binary', measure='f1'"


# ------------------------------------------------------------- marked tables: bold, dagger, rounding, separators
_SEP = "\u00a0/\u00a0"


def _hand_comparison():
    nan = float("nan")
    rows = [("binary", "accuracy", "d1", "A", .0304, .031, True, False),
            ("binary", "accuracy", "d1", "B", .05, .04, False, True),
            ("binary", "accuracy", "d2", "A", nan, .2, False, False),
            ("binary", "accuracy", "d2", "B", 1.5, nan, False, False),
            ("binary", "accuracy", "d3", "A", .1, nan, False, False),
            ("binary", "accuracy", "d3", "B", nan, nan, False, False),
            ("multiclass", "accuracy", "d9", "A", .3, .3, False, False)]
    return pd.DataFrame(rows, columns=["task", "measure", "dataset", "method", "mean", "paper_mean", "paper_best",
                                       "paper_dagger"])


def _hand_marks():
    return pd.DataFrame([("d1", "A", True, float("nan")), ("d1", "B", False, 0.01), ("d2", "B", False, 0.009)],
                        columns=["dataset", "method", "best", "pvalue"])


def test_marked_table_cells_by_hand():
    t = R.marked_table(_hand_comparison(), _hand_marks(), "binary", "accuracy")
    assert list(t.index) == ["d1", "d2", "d3"] and list(t.columns) == ["A", "B"]
    assert t.loc["d1", "A"] == f"**.030**{_SEP}**.031**"   # both bold; the leading 0 dropped
    assert t.loc["d1", "B"] == f".050†{_SEP}.040†"          # p == alpha: not significantly different
    assert t.loc["d2", "A"] == f"–{_SEP}.200"               # the paper only
    assert t.loc["d2", "B"] == "1.500"                       # p < alpha: no dagger; >= 1 keeps its digit
    assert t.loc["d3", "A"] == ".100" and t.loc["d3", "B"] == ""  # no marks for d3; no values at all
    t2 = R.marked_table(_hand_comparison(), _hand_marks(), "binary", "accuracy", methods=["B"], alpha=0.005,
                        decimals=2)
    assert list(t2.columns) == ["B"] and t2.loc["d1", "B"] == f".05†{_SEP}.04†" and t2.loc["d2", "B"] == "1.50†"
    assert t2.map(type).eq(str).all().all()


def test_marked_table_error_messages_are_exact():
    with pytest.raises(ValueError) as e:
        R.marked_table(_hand_comparison(), _hand_marks(), "binary", "f1")
    assert str(e.value) == "comparison has no rows for task='binary', measure='f1'"
    with pytest.raises(ValueError) as e:
        R.marked_table(_hand_comparison(), _hand_marks().drop(columns=["pvalue", "best"]), "binary", "accuracy")
    assert str(e.value) == ("marks lack the columns ['best', 'pvalue']: pass "
                            "capshift.significance.significance's output")
    with pytest.raises(ValueError) as e:
        R.marked_table(_hand_comparison(), _hand_marks(), "binary", "accuracy", alpha=1.5)
    assert str(e.value) == "alpha must be in (0.0, 1.0), got 1.5"


def test_marked_comparison_marks_each_dataset_and_the_average_by_wilcoxon():
    rows = []
    for s in range(10):
        for d in ("haberman", "cmc.1"):
            q = 0.01 * s + (0.0 if d == "haberman" else 0.05)
            k = 0.01 * s + (0.02 + 0.0012 * s if d == "haberman" else 0.0001 * s * s)
            rows += [(d, "lr", "Q-COT", "accuracy", s, q), (d, "lr", "LEAP_KDEy", "accuracy", s, k),
                     (d, "lr", "Naive", "accuracy", s, 0.5), (d, "lr", "Q-COT", "f1", s, 0.9)]
    rows.append(("yeast-multiclass", "lr", "Q-COT", "accuracy", 0, 0.9))
    res = pd.DataFrame(rows, columns=["dataset", "classifier", "method", "measure", "sample", "ae"])
    marked, comparison = R.marked_comparison(res, "binary", "accuracy", ["LEAP_KDEy", "Q-COT"])
    # haberman: Q-COT lower on every sample (p = 2/2^10 < .01); the paper bolds Q-COT and daggers LEAP_KDEy
    assert list(marked.columns) == ["LEAP_KDEy", "Q-COT"]
    assert marked.loc["haberman"].tolist() == [f".070{_SEP}.098†", f"**.045**{_SEP}**.093**"]
    assert marked.loc["cmc.1"].tolist() == [f"**.048**{_SEP}.075", f".095{_SEP}.065"]
    # Average over the 20 (dataset, sample) pairs: LEAP_KDEy lower, Q-COT not significantly worse
    assert marked.loc["Average (datasets run)"].tolist() == [f"**.059**{_SEP}.086", f".070†{_SEP}**.079**"]
    assert marked.loc["Average (paper, all datasets)"].tolist() == [f"–{_SEP}.063", f"–{_SEP}.065"]
    assert set(comparison["method"]) == {"LEAP_KDEy", "Q-COT"} and set(comparison["task"]) == {"binary"}
    assert comparison.set_index(["dataset", "method"]).loc[("cmc.1", "Q-COT"), "mean"] == pytest.approx(0.095)
    with pytest.raises(ValueError) as e:
        R.marked_comparison(res.drop(columns="sample"), "binary", "accuracy", ["Q-COT"])
    assert str(e.value) == ("results must be a tidy frame of run_experiment/run_grid with columns "
                            "['ae', 'classifier', 'dataset', 'measure', 'method', 'sample']")
    with pytest.raises(ValueError, match="results must be a tidy frame"):
        R.marked_comparison(rows, "binary", "accuracy", ["Q-COT"])


# ------------------------------------------------------- verdicts: the whole dict, its rule, its power and its sentence
def _pairs(a, b, p):
    return pd.DataFrame([("lr", "binary", "accuracy", a, b, 0.0, 0.0, 100, p)],
                        columns=["classifier", "task", "measure", "method_a", "method_b", "mean_a", "mean_b", "n", "pvalue"])


def test_leap_kdey_verdict_whole_dict_and_sentence():
    from capshift.significance import power, samples_needed
    # the Average row decides (haberman alone would pick DoC as the baseline's best)
    rec = _record({"haberman": {"Naive": 0.3, "DoC": 0.01, "O-LEAP_KDEy": 0.05},
                   "sonar": {"Naive": 0.06, "DoC": 0.4, "O-LEAP_KDEy": 0.05}})
    sd, n = float(np.hypot(0.1, 0.1)), 200
    v = R.leap_kdey_verdict(rec, _pairs("Naive", "O-LEAP_KDEy", 0.03), "lr", "binary", "accuracy", alpha=0.05,
                            effect=0.02)
    pw = power(0.02, sd, n, 0.05)
    assert v == {"verdict": "reproduced", "leap": "O-LEAP_KDEy", "leap_mean": 0.05, "baseline": "Naive",
                 "baseline_mean": pytest.approx(0.18), "pvalue": 0.03, "effect": 0.02, "effect_source": "paper",
                 "sd": pytest.approx(sd), "n": n, "power": pytest.approx(pw),
                 "samples_needed": samples_needed(0.02, sd, 0.05, R.MIN_POWER),
                 "sentence": f"lr, binary, accuracy: reproduced — best LEAP-KDEy O-LEAP_KDEy 0.0500 vs best baseline "
                             f"Naive 0.1800 (Wilcoxon p = 0.03; power {pw:.2f} for an effect of 0.020)"}
    # the default alpha (0.01): p = 0.03 does not reject; the power is the one at 0.01
    d = R.leap_kdey_verdict(rec, _pairs("Naive", "O-LEAP_KDEy", 0.03), "lr", "binary", "accuracy", effect=-0.02,
                            effect_source="mine")
    assert d["power"] == pytest.approx(power(0.02, sd, n, 0.01)) and d["effect"] == 0.02  # |effect|
    assert d["verdict"] == ("not reproduced" if d["power"] >= 0.8 else "not enough evidence")
    assert d["samples_needed"] == samples_needed(0.02, sd, 0.01, R.MIN_POWER) and d["effect_source"] == "mine"


@pytest.mark.parametrize("effect", [None, 0, float("nan"), float("inf")])
def test_verdict_effect_falls_back_to_the_default(effect):
    rec = _record({"haberman": {"Naive": 0.3, "O-LEAP_KDEy": 0.05}})
    v = R.leap_kdey_verdict(rec, _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", effect=effect)
    assert (v["effect"], v["effect_source"]) == (R.DEFAULT_EFFECT, "default")
    one = R.leap_kdey_verdict(rec, _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", effect=1)
    assert (one["effect"], one["effect_source"]) == (1.0, "paper")


def test_group_verdict_rule_at_the_edges():
    from capshift.significance import power
    g, b = ["O-LEAP_KDEy"], ["Naive"]
    # equal Averages and a significant test: the group's best is not lower, so the finding is contradicted
    tie = _record({"haberman": {"Naive": 0.05, "O-LEAP_KDEy": 0.05}})
    assert R.group_verdict(tie, _pairs("Naive", "O-LEAP_KDEy", 1e-4), "lr", "binary", "accuracy", g, b)[
        "verdict"] == "contradicted"
    rec = _record({"haberman": {"Naive": 0.3, "O-LEAP_KDEy": 0.05}})
    # n = 1: no power (NaN), so a test that does not reject is not enough evidence, whatever min_power
    one = R.group_verdict(rec.assign(n=1), _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", g, b,
                          effect=0.5)
    assert one["verdict"] == "not enough evidence" and math.isnan(one["power"]) and one["n"] == 1
    two = R.group_verdict(rec.assign(n=2), _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", g, b,
                          effect=0.5)
    assert two["power"] == pytest.approx(power(0.5, np.hypot(0.1, 0.1), 2, 0.01)) and two["n"] == 2
    # min_power decides between the two words when the test does not reject
    big = R.group_verdict(rec, _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", g, b, effect=0.04)
    assert 0.5 < big["power"] < 0.8 and big["verdict"] == "not enough evidence"
    low = R.group_verdict(rec, _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", g, b, effect=0.04,
                          min_power=0.5)
    assert low["verdict"] == "not reproduced" and low["samples_needed"] < big["samples_needed"]
    # no std / no n recorded: sd NaN, n 0, no power, 2 samples needed
    bare = R.group_verdict(rec.drop(columns=["std", "n"]), _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary",
                           "accuracy", g, b)
    assert math.isnan(bare["sd"]) and bare["n"] == 0 and math.isnan(bare["power"]) and bare["samples_needed"] == 2
    assert bare["verdict"] == "not enough evidence"
    inf = R.group_verdict(rec.assign(std=np.inf), _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy",
                          g, b)
    assert inf["samples_needed"] == 2 and math.isnan(inf["power"])
    zero = R.group_verdict(rec.assign(std=0.0), _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", g, b)
    assert zero["samples_needed"] == 2 and zero["power"] == 1.0 and zero["verdict"] == "not reproduced"
    with pytest.raises(ValueError) as e:
        R.group_verdict(rec, _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", g, b, alpha=0)
    assert str(e.value) == "alpha must be in (0.0, 1.0), got 0"


def test_untestable_verdict_names_the_missing_group():
    rec = _record({"haberman": {"Naive": 0.3, "O-LEAP_KDEy": 0.05}})
    nan = float("nan")
    v = R.group_verdict(rec, _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", ["DoC"], ["Naive"],
                        names=("mine", "theirs"), effect_source="x")
    expect = {"verdict": "not testable here", "leap": None, "leap_mean": nan, "baseline": None, "baseline_mean": nan,
              "pvalue": nan, "effect": nan, "effect_source": "x", "sd": nan, "n": 0, "power": nan,
              "samples_needed": 0, "sentence": "lr, binary, accuracy: not testable here (no mine run)"}
    assert v.keys() == expect.keys()
    for k, want in expect.items():
        assert (isinstance(v[k], float) and math.isnan(v[k])) if isinstance(want, float) else v[k] == want, k
    w = R.group_verdict(rec, _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr", "binary", "accuracy", ["Naive"], ["DoC"])
    assert w["sentence"] == "lr, binary, accuracy: not testable here (no against run)" and w["effect_source"] == "paper"
    k = R.leap_kdey_verdict(_record({"haberman": {"Naive": 0.3}}), _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr",
                            "binary", "accuracy")
    assert k["sentence"] == "lr, binary, accuracy: not testable here (no LEAP-KDEy run)" and k["effect_source"] == "paper"
    k = R.leap_kdey_verdict(_record({"haberman": {"O-LEAP_KDEy": 0.3}}), _pairs("Naive", "O-LEAP_KDEy", 0.5), "lr",
                            "binary", "accuracy", effect_source="y")
    assert k["sentence"] == "lr, binary, accuracy: not testable here (no baseline run)" and k["effect_source"] == "y"


def _paired_results(pairs_of_values, methods=("O-LEAP_KDEy", "Naive")):
    rows = [(d, "lr", m, "accuracy", s, v) for d, vals in pairs_of_values.items() for s, pair in enumerate(vals)
            for m, v in zip(methods, pair)]
    return pd.DataFrame(rows, columns=["dataset", "classifier", "method", "measure", "sample", "ae"])


def test_results_group_verdict_whole_dict_by_hand():
    from scipy.stats import wilcoxon
    from capshift.significance import power, samples_needed
    vals = {"haberman": [(0.1, 0.3), (0.2, 0.25), (0.0, 0.4)], "cmc.1": [(0.1, 0.15), (0.3, 0.2)]}
    res = _paired_results(vals)
    res = pd.concat([res, res.iloc[[0]].assign(ae=0.9)], ignore_index=True)  # a duplicate row: the first counts
    diff = np.array([-0.2, -0.05, -0.4, -0.05, 0.1])
    sd = diff.std(ddof=1)
    v = R.results_group_verdict(res, "binary", "accuracy", ["O-LEAP_KDEy"], ["Naive"], alpha=0.5, effect=0.05,
                                effect_source="src", names=("L", "B"), min_power=0.3)
    p = float(wilcoxon(diff).pvalue)
    pw = power(0.05, sd, 5, 0.5)
    assert v == {"verdict": "reproduced", "leap": "O-LEAP_KDEy", "leap_mean": pytest.approx(0.14), "baseline": "Naive",
                 "baseline_mean": pytest.approx(0.26), "pvalue": pytest.approx(p), "effect": 0.05,
                 "effect_source": "src", "sd": pytest.approx(sd), "n": 5, "power": pytest.approx(pw),
                 "samples_needed": samples_needed(0.05, sd, 0.5, 0.3),
                 "sentence": f"binary, accuracy: reproduced — best L O-LEAP_KDEy 0.1400 vs best B Naive 0.2600 "
                             f"(Wilcoxon p = {p:.2g}; power {pw:.2f} for an effect of 0.050)"}
    assert p < 0.5
    d = R.results_group_verdict(res, "binary", "accuracy", ["O-LEAP_KDEy"], ["Naive"])
    assert d["effect_source"] == "default" and d["power"] == pytest.approx(power(0.01, sd, 5, 0.01))
    assert d["verdict"] == "not enough evidence"  # p > 0.01 and little power


def test_results_group_verdict_identical_methods_and_missing_groups():
    res = _paired_results({"haberman": [(0.1, 0.1), (0.2, 0.2), (0.3, 0.3)]})
    v = R.results_group_verdict(res, "binary", "accuracy", ["O-LEAP_KDEy"], ["Naive"], effect=0.05)
    assert v["pvalue"] == 1.0 and v["sd"] == 0.0 and v["verdict"] == "not reproduced"  # sd 0: power 1
    # paired differences all equal to 1 are not "all zero"
    ones = _paired_results({"haberman": [(1.0, 0.0)] * 6})
    o = R.results_group_verdict(ones, "binary", "accuracy", ["O-LEAP_KDEy"], ["Naive"], alpha=0.05)
    assert o["pvalue"] == pytest.approx(2 / 2 ** 6) and o["verdict"] == "contradicted"
    # differences within numpy.allclose of 0 count as none (p = 1), even when they all have one sign
    tiny = _paired_results({"haberman": [(0.1, 0.1 + 1e-10)] * 6}).drop(columns="classifier")  # the columns needed
    assert R.results_group_verdict(tiny, "binary", "accuracy", ["O-LEAP_KDEy"], ["Naive"])["pvalue"] == 1.0
    g = R.results_group_verdict(res, "binary", "accuracy", ["DoC"], ["Naive"], effect_source="e")
    assert g["verdict"] == "not testable here" and g["effect_source"] == "e"
    assert g["sentence"] == "binary, accuracy: not testable here (no group run)"
    a = R.results_group_verdict(res, "binary", "accuracy", ["Naive"], ["DoC"], names=("x", "y"))
    assert a["sentence"] == "binary, accuracy: not testable here (no y run)" and a["effect_source"] == "paper"
    with pytest.raises(ValueError) as e:
        R.results_group_verdict(res.drop(columns="sample"), "binary", "accuracy", ["Naive"], ["DoC"])
    assert str(e.value) == ("results must be a tidy frame of run_experiment/run_grid with columns "
                            "['ae', 'dataset', 'measure', 'method', 'sample']")
    with pytest.raises(ValueError, match="results must be a tidy frame"):
        R.results_group_verdict(res.to_dict(), "binary", "accuracy", ["Naive"], ["DoC"])
    with pytest.raises(ValueError) as e:
        R.results_group_verdict(res, "binary", "accuracy", ["Naive"], ["DoC"], alpha=2)
    assert str(e.value) == "alpha must be in (0.0, 1.0), got 2"


# ------------------------------------------------ compare_record / fidelity: names mapped, by key, averages, the band
def test_compare_record_maps_names_and_keeps_a_fresh_index():
    rows = [("LR", "multiclass", "acc", d, m, v, 0.1, False, 1.0) for d, m, v in (
        ("yeast-multiclass", "Naive", 0.2), ("yeast-multiclass", "DoC", 0.3), ("letter", "Naive", 0.4),
        ("letter", "DoC", 0.1), ("not-a-dataset", "Naive", 0.5), ("letter", "Mine", 0.9))]
    rec = pd.DataFrame(rows, columns=["classifier", "task", "measure", "dataset", "method", "mean", "std", "best",
                                      "pvalue"])
    rec = pd.concat([rec.iloc[[0]].assign(dataset="Average"), rec], ignore_index=True).set_index(
        pd.Index(range(10, 17)))
    c = R.compare_record(rec, "LR", "multiclass", "acc", paper="leap2025")  # the tables' own names pass through
    pub = R.paper_values("leap2025", "acc", "LR", "multiclass")
    assert list(c.index) == list(range(len(c))) and len(c) == 6 + 2
    assert list(c["dataset"][:6]) == ["yeast", "yeast", "letter", "letter", "not-a-dataset", "letter"]
    cells = c.iloc[:6].set_index(["dataset", "method"])
    for k in [("yeast", "Naive"), ("yeast", "DoC"), ("letter", "DoC")]:
        assert (cells.loc[k, "paper_mean"], cells.loc[k, "paper_std"]) == tuple(pub.loc[k, ["mean", "std"]])
    assert np.isnan(cells.loc[("letter", "Mine"), "paper_std"]) and cells["n_datasets"].eq(1).all()
    avg = c.iloc[6:].set_index("method")
    assert list(avg.index) == ["Naive", "DoC"] and avg["n_datasets"].eq(2).all()
    assert avg.loc["Naive", "paper_mean"] == pytest.approx((pub.loc[("yeast", "Naive"), "mean"]
                                                            + pub.loc[("letter", "Naive"), "mean"]) / 2)
    # no cell of the paper at all: the columns stay float
    none = R.compare_record(rec[rec.method == "Mine"], "LR", "multiclass", "acc", paper="leap2025")
    assert none["paper_mean"].dtype == float and none["paper_std"].dtype == float
    with pytest.raises(ValueError) as e:
        R.compare_record(rec, "LR", "binary", "acc")
    assert str(e.value) == "the record has no rows for classifier='LR', task='binary', measure='acc'"


def test_fidelity_band_edges_defaults_and_counts():
    pub = R.paper_values("leap2025", "acc", "LR", "binary")
    tol = 0.010014
    band = tol + 5e-4 + 1e-12
    p = pub.loc[("haberman", "Naive"), "mean"]
    assert (p + band) - p == band  # a difference of exactly the band
    rec = _record_from_paper({("haberman", "Naive"): band, ("haberman", "DoC"): 0.0, ("haberman", "LEAP_ACC"): 0.0})
    f = R.fidelity(rec, "lr", "binary", paper="leap2025", tol=tol)
    assert f == {"n_cells": 3, "cells_within": 3, "n_averages": 3, "averages_within": 3,
                 "rho": pytest.approx(1.0), "n_datasets": 1}
    two = R.fidelity(rec[rec.method != "LEAP_ACC"], "lr", "binary", paper="leap2025")
    assert math.isnan(two["rho"]) and two["n_averages"] == 2 and two["cells_within"] == 1  # rho needs 3 methods
    one = R.fidelity(rec[rec.method == "DoC"], "lr", "binary", paper="leap2025")
    assert (one["n_averages"], one["n_datasets"]) == (1, 1)
    nothing = R.fidelity(rec.replace({"method": {"Naive": "X", "DoC": "Y", "LEAP_ACC": "Z"}}), "lr", "binary",
                         paper="leap2025")
    assert nothing == {"n_cells": 0, "cells_within": 0, "n_averages": 0, "averages_within": 0,
                       "rho": pytest.approx(float("nan"), nan_ok=True), "n_datasets": 0}
    # the default paper is the authors' repository output; the measure is passed on
    repo = R.paper_values("leap2025repo", "acc", "LR", "binary")
    r2 = rec.assign(mean=[repo.loc[(d, m), "mean"] + 0.05 for d, m in zip(rec.dataset, rec.method)])
    assert R.fidelity(r2, "lr", "binary")["cells_within"] == 0
    assert R.fidelity(r2, "lr", "binary", tol=0.06)["cells_within"] == 3
    f1 = R.paper_values("leap2025", "f1", "LR", "binary")
    r3 = rec.assign(measure="f1", mean=[f1.loc[(d, m), "mean"] for d, m in zip(rec.dataset, rec.method)])
    assert R.fidelity(r3, "lr", "binary", "f1", paper="leap2025")["cells_within"] == 3
    with pytest.raises(ValueError) as e:
        R.fidelity(rec, "lr", "binary", paper="leap2025", tol=1.5)
    assert str(e.value) == "tol must be in (0.0, 1.0), got 1.5"


def test_paper_group_effect_edges():
    # default datasets: every dataset of the table, never its Average row
    pub = R.paper_values("leap2025", "acc", "LR", "binary")["mean"].unstack("method").drop(index="Average")
    eff, n = R.paper_group_effect(["O-LEAP_KDEy"], ["Naive", "DoC"])
    assert n == 29 and eff == pytest.approx(min(pub["Naive"].mean(), pub["DoC"].mean()) - pub["O-LEAP_KDEy"].mean())
    # QuAcc's Table 3 has no Average row and a few empty cells: the datasets with an empty cell are left out
    q = R.paper_values("quacc2025", "acc", "LR", "binary")["mean"].unstack("method")
    eff, n = R.paper_group_effect(["LEAP"], ["ATC", "Naive"], paper="quacc2025")
    sub = q[["LEAP", "ATC", "Naive"]].dropna()
    assert n == len(sub) and 0 < n < len(q)
    assert eff == pytest.approx(sub[["ATC", "Naive"]].mean().min() - sub["LEAP"].mean())
    mc = R.paper_values("leap2025", "acc", "LR", "multiclass")["mean"].unstack("method").drop(index="Average")
    assert R.paper_group_effect(["LEAP_ACC"], ["Naive"], task="multiclass") == (
        pytest.approx(mc["Naive"].mean() - mc["LEAP_ACC"].mean()), len(mc))
    # a method with no value on the datasets asked for is left out, not the datasets
    assert R.paper_group_effect(["LEAP", "DoC"], ["Naive"], ["IMDB"], paper="quacc2025") == (
        pytest.approx(q.loc["IMDB", "Naive"] - q.loc["IMDB", "DoC"]), 1)
    nan = pytest.approx(float("nan"), nan_ok=True)
    assert R.paper_group_effect(["nobody"], ["Naive"]) == (nan, 0)
    assert R.paper_group_effect(["Naive"], ["nobody"]) == (nan, 0)
    assert R.paper_group_effect(["Naive"], ["DoC"], datasets=["nowhere"]) == (nan, 0)


def test_authors_runs_error_messages_are_exact():
    pd.testing.assert_frame_equal(R.authors_runs(), R.authors_runs("LR", "binary"))  # the defaults
    with pytest.raises(ValueError) as e:
        R.authors_runs("rf")
    assert str(e.value) == "classifier must be one of ['LR', 'MLP', 'SVM', 'kNN'], got 'rf'"
    with pytest.raises(ValueError) as e:
        R.authors_runs("lr", "ordinal")
    assert str(e.value) == "task must be 'binary' or 'multiclass', got 'ordinal'"


def test_side_by_side_fills_a_missing_cell_with_an_empty_string():
    c = R.compare(_tiny_results(), aliases={"mine": "L-CBPE"})
    c = c[~((c.dataset == "cmc.1") & (c.method == "mine"))]
    t = R.side_by_side(c, "binary", "accuracy", ["mine"])
    assert t.loc["cmc.1", ("mine", "ours")] == "" and t.loc["cmc.1", ("mine", "paper")] == ""
    assert t.loc["haberman", ("mine", "ours")] == "0.200 ± 0.200"


def test_compare_names_order_and_missing_cells():
    # one row, the tables' own classifier and measure names: passed through as they are
    one = pd.DataFrame({"dataset": ["haberman"], "classifier": ["LR"], "method": ["DoC"], "measure": ["acc"],
                        "ae": [0.1]})
    c = R.compare(one)
    assert list(c.index) == list(range(3)) and c["paper_mean"].tolist() == [0.109, 0.109, 0.065]
    assert c["measure"].eq("acc").all()
    # (task, measure) groups in order of appearance: multiclass first here
    res = pd.concat([_tiny_results().iloc[-2:], _tiny_results().iloc[:-2]], ignore_index=True)
    c = R.compare(res, aliases={"sl": "S-LEAP_KDEy"})
    assert list(c.index) == list(range(len(c))) and c["task"].tolist()[:3] == ["multiclass"] * 3
    assert c["task"].tolist()[3:] == ["binary"] * (len(c) - 3)
    # an unaliased name the paper lacks: no value, not bold, no dagger, in the paper's Average row too
    allp = c[c.dataset == "Average (paper, all datasets)"].set_index("method")
    assert np.isnan(allp.loc["mine", "paper_mean"]) and np.isnan(allp.loc["mine", "paper_std"])
    assert not allp.loc["mine", "paper_best"] and not allp.loc["mine", "paper_dagger"]
    cells = c.set_index(["dataset", "method"])
    assert not cells.loc[("haberman", "mine"), "paper_dagger"] and not cells.loc[("haberman", "mine"), "paper_best"]
    # an alias reaches the paper's Average row: S-LEAP_KDEy's bold and dagger there
    sl = R.compare(_tiny_results().replace({"method": {"S-LEAP_KDEy": "sl"}}), aliases={"sl": "S-LEAP_KDEy"})
    row = sl[(sl.dataset == "Average (paper, all datasets)") & (sl.method == "sl")].iloc[0]
    assert (row["paper_mean"], row["paper_std"], row["paper_best"], row["paper_dagger"]) == (.053, .055, True, True)
    # no method the paper has: the paper's columns are float NaN (and the paper's best is False)
    only = R.compare(_tiny_results().iloc[:16].query("method == 'mine'"))
    assert only["paper_mean"].dtype == float and only["paper_std"].dtype == float
    assert only["paper_mean"].isna().all() and not only["paper_best"].iloc[:2].any()


def test_marked_table_keeps_the_comparisons_row_order_and_fills_missing_cells():
    c = _hand_comparison()
    c = pd.concat([c.iloc[4:6], c.iloc[:3]], ignore_index=True)  # d3, d1, d2; d2 has no B row
    t = R.marked_table(c, _hand_marks(), "binary", "accuracy")
    assert list(t.index) == ["d3", "d1", "d2"] and list(t.columns) == ["A", "B"]
    assert t.loc["d2", "B"] == "" and t.loc["d2", "A"] == f"–{_SEP}.200"


def test_marked_comparison_passes_aliases_and_alpha():
    rows = [(d, "lr", m, "accuracy", s, v) for s in range(10) for d in ("haberman", "cmc.1")
            for m, v in (("Q-COT", 0.01 * s), ("mine", 0.01 * s + 0.02 + 0.001 * s))]
    res = pd.DataFrame(rows, columns=["dataset", "classifier", "method", "measure", "sample", "ae"])
    # mine is always worse: p = 2/2^10 ~ .002 on each dataset, under alpha = .01 and over alpha = .001
    marked, comparison = R.marked_comparison(res, "binary", "accuracy", ["mine", "Q-COT"], alpha=0.001,
                                             aliases={"mine": "LEAP_KDEy"})
    assert marked.loc["haberman", "mine"] == f".070†{_SEP}.098†"  # the paper's LEAP_KDEy cell, its dagger
    assert comparison.set_index(["dataset", "method"]).loc[("cmc.1", "mine"), "paper_mean"] == 0.075
    plain, _ = R.marked_comparison(res, "binary", "accuracy", ["mine", "Q-COT"])
    assert plain.loc["haberman", "mine"] == ".070"  # no alias: no paper cell; alpha .01: no dagger

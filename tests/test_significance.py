"""The bold/dagger logic of the experiments chapter (experiment.significance, reference.marked_table), the
per-sample quantification error (q_ae) and the KDEy variant on h's posteriors."""
import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from capshift import experiment, reference


def _frame(values: dict, dataset="d") -> pd.DataFrame:
    rows = [(dataset, s, m, v) for m, vs in values.items() for s, v in enumerate(vs)]
    return pd.DataFrame(rows, columns=["dataset", "sample", "method", "ae"])


def test_best_and_pvalues_match_scipy():
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 0.2, 40)
    df = _frame({"A": base + 0.05, "B": base, "C": base + rng.normal(0, 0.01, 40)})
    sig = experiment.significance(df).set_index("method")
    best = sig.index[sig["best"]].tolist()
    assert best == [sig["mean"].idxmin()] and np.isnan(sig.loc[best[0], "pvalue"])
    for m in sig.index.drop(best[0]):
        assert sig.loc[m, "pvalue"] == pytest.approx(wilcoxon(df[df.method == m]["ae"], df[df.method == best[0]]["ae"]).pvalue)
    assert sig.loc["A", "pvalue"] < 1e-6  # uniformly worse by 0.05: clearly different
    assert (sig["n"] == 40).all()


def test_ties_are_all_best_and_identical_values_get_p_one():
    v = [0.1, 0.3, 0.2, 0.4]
    df = _frame({"A": v, "B": v, "C": [x + 0.1 for x in v]})
    sig = experiment.significance(df).set_index("method")
    assert sig["best"].tolist() == [True, True, False]
    same = _frame({"A": v, "B": v[::-1]})  # equal means, different values: both best
    assert experiment.significance(same)["best"].all()
    df2 = _frame({"A": v, "B": [x + 1e-10 for x in v]})  # worse on every sample, but by nothing measurable
    sig2 = experiment.significance(df2).set_index("method")
    assert sig2["best"].tolist() == [True, False] and sig2.loc["B", "pvalue"] == 1.0


def test_a_method_without_cells_in_a_group_is_absent_not_an_error():
    df = pd.concat([_frame({"A": [0.1, 0.2, 0.3], "B": [0.2, 0.3, 0.4]}, "d1"),
                    _frame({"A": [0.3, 0.2, 0.1]}, "d2")])
    sig = experiment.significance(df, "dataset")
    assert set(map(tuple, sig[["dataset", "method"]].values)) == {("d1", "A"), ("d1", "B"), ("d2", "A")}
    assert sig.set_index(["dataset", "method"]).loc[("d2", "A"), "best"]
    partial = pd.concat([df, _frame({"B": [0.5]}, "d2")])  # B on one of d2's three samples: not paired
    with pytest.raises(ValueError, match="paired"):
        experiment.significance(partial, "dataset")


def test_wilcoxon_marks_keeps_empty_cells_for_missing_methods():
    df = pd.concat([_frame({"A": [0.1, 0.2, 0.3], "B": [0.2, 0.3, 0.4]}, "d1"), _frame({"A": [0.3, 0.2, 0.1]}, "d2")])
    table = experiment.wilcoxon_marks(df, by="dataset", pair=("sample",))
    assert table.loc["d2", "B"] == "" and table.loc["d2", "A"] == "**.200**"
    assert table.loc["d1", "A"] == "**.200**" and table.loc["d1", "B"].endswith(".300")


def _comparison(rows):
    cols = ["task", "measure", "dataset", "method", "mean", "std", "paper_mean", "paper_std", "paper_best", "paper_dagger"]
    return pd.DataFrame([("binary", "accuracy", *r) for r in rows], columns=cols)


def test_marked_table_cells():
    comp = _comparison([("d", "A", 0.0281, 0.01, 0.031, 0.02, False, True),
                        ("d", "B", 0.0302, 0.01, 0.025, 0.02, True, False),
                        ("d", "C", 0.1, 0.01, np.nan, np.nan, False, False),
                        ("Average (paper, all datasets)", "A", np.nan, np.nan, 0.05, 0.01, True, False)])
    marks = pd.DataFrame({"dataset": ["d"] * 3, "method": ["A", "B", "C"], "best": [True, False, False],
                          "pvalue": [np.nan, 0.02, 0.001]})
    t = reference.marked_table(comp, marks, "binary", "accuracy", ["A", "B", "C", "D"]).map(
        lambda c: c.replace("\u00a0", " "))  # the separator's no-break spaces, shown as spaces here
    assert t.loc["d", "A"] == "**.028** / .031†"  # our best in bold; the paper's dagger kept
    assert t.loc["d", "B"] == ".030† / **.025**"  # p = .02 >= .01: dagger; the paper's bold kept
    assert t.loc["d", "C"] == ".100"  # p = .001 < .01: no dagger; no paper value
    assert t.loc["d", "D"] == ""  # a method not run: an empty cell
    assert t.loc["Average (paper, all datasets)", "A"] == "– / **.050**"
    t05 = reference.marked_table(comp, marks, "binary", "accuracy", ["C"], alpha=0.0005)
    assert t05.loc["d", "C"] == ".100†"


def test_compare_marks_the_papers_best_of_its_row():
    res = pd.DataFrame([("iris.2", "lr", m, s, "accuracy", a) for m, a in (("Naive", 0.2), ("O-LEAP_KDEy", 0.1))
                        for s in range(3)], columns=["dataset", "classifier", "method", "sample", "measure", "ae"])
    c = reference.compare(res).set_index(["dataset", "method"])
    pub = reference.paper_values().loc["iris.2"]
    best = pub["mean"].idxmin()
    for m in ("Naive", "O-LEAP_KDEy"):
        assert c.loc[("iris.2", m), "paper_best"] == (pub.loc[m, "mean"] == pub.loc[best, "mean"])
        assert c.loc[("iris.2", m), "paper_dagger"] == (pub.loc[m, "dagger"] == 1)


@pytest.fixture(scope="module")
def small_run():
    return experiment.run_experiment("iris.2", methods=["Naive", "ATC", "O-LEAP_KDEy", "O-LEAP_oracle", "O-LEAP_CC"],
                                     n_samples=15, sample_size=30, progress=False)


def _truth(name, n_samples, sample_size):
    """The true tables of run_experiment's samples, rebuilt from the split and the protocol."""
    from capshift import datasets, protocols
    from capshift.tables import contingency_table
    split = datasets.load(name, seed=0)
    h = experiment.make_classifier("lr", 0).fit(split.X_L, split.y_L)
    idx = protocols.upp_indices(split.y_U, sample_size, n_samples, 0, n_classes=split.n_classes)
    true = np.stack([contingency_table(split.y_U[i], h.predict(split.X_U[i]), split.n_classes) for i in idx])
    return split, h, true


def test_quantification_error_per_sample(small_run):
    acc = small_run[small_run["measure"] == "accuracy"].set_index(["method", "sample"])
    assert (acc.loc["O-LEAP_oracle", "q_ae"] == 0).all()
    assert acc.loc["Naive", "q_ae"].isna().all() and acc.loc["ATC", "q_ae"].isna().all()
    # classify and count estimates the prevalence by h's predicted fractions gamma (the column sums)
    _, _, true = _truth("iris.2", 15, 30)
    expected = np.abs(true.sum(axis=1) - true.sum(axis=2)).mean(axis=1)
    np.testing.assert_allclose(acc.loc["O-LEAP_CC", "q_ae"].to_numpy(), expected, atol=1e-9)
    assert expected.max() > 0


def test_kdey_on_h_posteriors_is_quapys_kdey_on_h():
    from quapy.method.aggregative import KDEyML
    from capshift import datasets
    from capshift.quantifiers import Quantifier
    split = datasets.load("cmc", seed=0)
    h = experiment.make_classifier("lr", 0).fit(split.X_L, split.y_L)
    ours = Quantifier("kdey-h", classifier=h, random_state=0, kdey_backend="quapy").fit(split.X_V, split.y_V, 3)
    ref = KDEyML(h, fit_classifier=False, val_split=None, bandwidth=0.1, random_state=0).fit(split.X_V, split.y_V)
    for i in (slice(0, 50), slice(50, 150), slice(200, 260)):
        np.testing.assert_allclose(ours.quantify(split.X_U[i]), ref.quantify(split.X_U[i]), atol=1e-9)
        # capshift's exact evaluation of the same fitted densities: within QuaPy's SLSQP tolerance
        ours.set_kdey_backend("capshift")
        np.testing.assert_allclose(ours.quantify(split.X_U[i]), ref.quantify(split.X_U[i]), atol=1e-3)
        ours.set_kdey_backend("quapy")
    # and it differs from the paper's surrogate-MLP KDEy (a different model of the densities)
    mlp = Quantifier("kdey", classifier=h, random_state=0).fit(split.X_V, split.y_V, 3)
    assert not np.allclose(mlp.quantify(split.X_U[:100]), ours.quantify(split.X_U[:100]), atol=1e-3)


def test_marked_comparison_keeps_the_task_and_marks_a_clearly_worse_method():
    rng = np.random.default_rng(1)
    rows = []
    for ds in ("iris.2", "wine.1", "cmc"):  # cmc is multiclass: left out of the binary table
        base = rng.uniform(0, 0.1, 30)
        for m, ae in (("O-LEAP_KDEy", base), ("Naive", base + 0.05), ("DoC", base + rng.normal(0, 1e-3, 30))):
            rows += [(ds, "lr", m, s, "accuracy", a) for s, a in enumerate(ae)]
    res = pd.DataFrame(rows, columns=["dataset", "classifier", "method", "sample", "measure", "ae"])
    marked, comp = reference.marked_comparison(res, "binary", "accuracy", ["Naive", "DoC", "O-LEAP_KDEy"])
    assert "cmc" not in marked.index and {"iris.2", "wine.1", "Average (datasets run)"} <= set(marked.index)
    assert set(comp["task"]) == {"binary"}
    for row in ("iris.2", "Average (datasets run)"):
        ours = {m: c.split("\u00a0/")[0] for m, c in marked.loc[row].items()}
        assert "†" not in ours["Naive"] and "**" not in ours["Naive"]  # 0.05 worse on every sample
        assert sum("**" in v for v in ours.values()) >= 1


def test_min_wilcoxon_p_is_scipys_floor():
    from capshift.significance import min_wilcoxon_p

    for n in range(1, 12):  # all differences of one sign, distinct: the most extreme exact outcome
        x = np.arange(1, n + 1, dtype=float)
        assert min_wilcoxon_p(n) == pytest.approx(wilcoxon(x, np.zeros(n)).pvalue)
    assert min_wilcoxon_p(5) == 0.0625 and min_wilcoxon_p(6) < 0.05
    # thousands of pairs (a recorded run): the floor underflows to 0 instead of overflowing
    assert min_wilcoxon_p(1000) == 2.0 ** -999 and min_wilcoxon_p(1650) == 0.0 and min_wilcoxon_p(1) == 1.0
    with pytest.raises(ValueError, match="positive"):
        min_wilcoxon_p(0)


def test_against_reference_verdicts_and_power():
    from capshift.significance import against_reference

    rng = np.random.default_rng(1)
    base = rng.uniform(0.05, 0.2, 30)
    rows = [("s", i, m, v) for m, vs in {"Naive": base, "good": base - 0.03, "bad": base + 0.03,
                                         "same": base + rng.normal(0, 1e-3, 30)}.items()
            for i, v in enumerate(vs)]
    df = pd.DataFrame(rows, columns=["shift", "sample", "method", "ae"])
    res = against_reference(df, "Naive", by="shift", pair="sample").set_index("method")
    assert res.loc["good", "verdict"] == "better" and res.loc["bad", "verdict"] == "worse"
    assert res.loc["same", "verdict"] == "not distinguishable"
    assert res.loc["bad", "difference"] == pytest.approx(0.03) and (res["n"] == 30).all()
    few = df[df["sample"] < 5]  # 5 pairs: even a uniformly better method cannot reach p < 0.05
    res5 = against_reference(few, "Naive", by="shift", pair="sample").set_index("method")
    assert res5.loc["good", "verdict"] == "not distinguishable" and res5.loc["good", "min_p"] == 0.0625
    with pytest.raises(ValueError, match="reference"):
        against_reference(df, "Oracle", by="shift", pair="sample")


def test_compare_groups_detects_a_rise_and_no_change():
    from capshift.significance import compare_groups

    rng = np.random.default_rng(2)
    a = rng.uniform(0, 0.1, 200)
    df = pd.DataFrame({"method": ["up"] * 400 + ["flat"] * 400,
                       "level": (["low"] * 200 + ["high"] * 200) * 2,
                       "ae": np.r_[a, a + 0.05, a, rng.permutation(a)]})
    res = compare_groups(df, "level", "low", "high").set_index("method")
    assert res.loc["up", "change"] == "rises" and res.loc["up", "mean_high"] > res.loc["up", "mean_low"]
    assert res.loc["flat", "change"] == "no significant change" and res.loc["flat", "pvalue"] > 0.5
    with pytest.raises(ValueError, match="no rows"):
        compare_groups(df, "level", "low", "middle")


def test_wilcoxon_marks_rows_in_numeric_order():
    from capshift.significance import wilcoxon_marks

    rows = [(d, s, m, 0.1 + 0.01 * s + (m == "B") * 0.01) for d in (0.0, 0.5, 1.0, -0.5, -1.0)
            for s in range(6) for m in "AB"]
    df = pd.DataFrame(rows, columns=["degree", "sample_id", "method", "ae"]).assign(trial=0)
    assert wilcoxon_marks(df).index.tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]


# ----------------------------------------------------------------------------------- power of the tests (issue 28)
def test_power_closed_form_and_limits():
    from scipy.stats import norm

    from capshift.significance import RANK_ARE, power
    # paired: z = effect / (sd / sqrt(ARE n)); two-sided
    z = 0.01 / (0.05 / np.sqrt(RANK_ARE * 100))
    assert power(0.01, 0.05, 100) == pytest.approx(norm.cdf(z - norm.ppf(0.975)) + norm.cdf(-z - norm.ppf(0.975)), abs=1e-9)
    assert power(-0.01, 0.05, 100) == power(0.01, 0.05, 100)  # the sign does not matter
    assert power(0.0, 0.05, 100) == pytest.approx(0.05) and power(0.01, 0.0, 10) == 1.0
    assert power(0.01, 0.05, 1000) > power(0.01, 0.05, 100) > power(0.01, 0.05, 10)
    # unpaired: se = sd sqrt((1/n + 1/m) / ARE)
    z = 0.01 / (0.05 * np.sqrt((1 / 100 + 1 / 300) / RANK_ARE))
    assert power(0.01, 0.05, 100, n_other=300) == pytest.approx(norm.cdf(z - norm.ppf(0.975)) + norm.cdf(-z - norm.ppf(0.975)),
                                                                abs=1e-9)
    for bad in ({"n": 1}, {"sd": -1.0}, {"alpha": 1.5}, {"effect": np.nan}, {"n": 10, "n_other": 1}):
        kw = {"effect": 0.01, "sd": 0.05, "n": 50, **bad}
        with pytest.raises(ValueError):
            power(**kw)


def test_power_matches_a_simulated_wilcoxon_test():
    from scipy.stats import wilcoxon

    from capshift.significance import power
    rng = np.random.default_rng(0)
    n, effect, sd, reps = 30, 0.5, 1.0, 2000
    hits = sum(wilcoxon(rng.normal(effect, sd, n)).pvalue < 0.05 for _ in range(reps))
    assert abs(hits / reps - power(effect, sd, n)) < 0.04


def test_samples_needed_is_the_smallest_n():
    from capshift.significance import power, samples_needed
    for paired in (True, False):
        n = samples_needed(0.01, 0.05, paired=paired)
        other = (lambda k: None) if paired else (lambda k: k)
        assert power(0.01, 0.05, n, n_other=other(n)) >= 0.8 > power(0.01, 0.05, n - 1, n_other=other(n - 1))
    assert samples_needed(0.01, 0.05, target=0.9) > samples_needed(0.01, 0.05)
    with pytest.raises(ValueError, match="effect is 0"):
        samples_needed(0.0, 0.05)
    with pytest.raises(ValueError, match="target"):
        samples_needed(0.01, 0.05, target=1.0)


def test_verdict_words():
    from capshift.significance import verdict
    assert verdict(0.001, True, 0.3) == "reproduced"
    assert verdict(0.001, False, 0.3) == "contradicted"
    assert verdict(0.4, True, 0.95) == "not reproduced"
    assert verdict(0.4, True, 0.5) == "not enough evidence"
    assert verdict(0.04, True, 0.5, alpha=0.01) == "not enough evidence"
    with pytest.raises(ValueError, match="pvalue"):
        verdict(1.5, True, 0.5)


# ---- what the mutation run of capshift.significance found unpinned (benchmarks/mutation/significance.csv) ----
def test_significance_and_against_reference_name_what_is_missing_or_unpaired():
    from capshift.significance import against_reference, significance

    df = _frame({"A": [0.1, 0.2, 0.3], "B": [0.2, 0.3, 0.4]})
    for fn, args in ((significance, ()), (against_reference, ("A",))):
        kw = {} if fn is significance else {"by": "dataset", "pair": ("sample",)}
        with pytest.raises(ValueError, match=r"^results lack the columns \['ae'\]"):
            fn(df.drop(columns="ae"), *args, **kw)
        with pytest.raises(ValueError, match=r"^results lack the columns \['ae', 'dataset', 'method', 'sample'\]"):
            fn(df.to_dict(), *args, **kw)  # not a frame: every column is missing
    with pytest.raises(ValueError, match=r"^results lack the columns \['ae'\]: pass a tidy frame with columns "
                                         r"\['ae', 'dataset', 'method', 'sample'\]$"):
        significance(df.drop(columns="ae"))
    with pytest.raises(ValueError, match=r"^results have several 'ae' values for one \(dataset, sample, method\) "
                                         r"key; select one measure/classifier before testing$"):
        significance(pd.concat([df, df.assign(ae=df["ae"] + 1)]))  # one key, two different values
    with pytest.raises(ValueError, match=r"^group \{'dataset': 'd'\}: method\(s\) \['B'\] lack values for some of "
                                         r"the 3 \(sample, run\) keys the other methods have: the values are not "
                                         r"paired$"):
        significance(df.drop(index=5).assign(run=0), pair=("sample", "run"))
    with pytest.raises(ValueError, match=r"^group \{'dataset': 'd'\}: the methods' values are not paired$"):
        against_reference(df.drop(index=5), "A", by="dataset", pair="sample")


def test_groups_come_in_order_of_appearance_and_ties_to_the_bound_are_best():
    from capshift.significance import against_reference, compare_groups, significance, wilcoxon_marks

    df = pd.concat([_frame({"A": [0.3, 0.2], "B": [0.1, 0.4]}, dataset="z"),
                    _frame({"A": [0.1, 0.2], "B": [0.3, 0.4]}, dataset="a")])
    assert significance(df)["dataset"].tolist() == ["z", "z", "a", "a"]
    assert against_reference(df, "A", by="dataset", pair="sample")["dataset"].tolist() == ["z", "a"]
    assert wilcoxon_marks(df, by="dataset", pair="sample").index.tolist() == ["z", "a"]
    assert compare_groups(df.assign(level=df["sample"]), "level", 0, 1, by="dataset")["dataset"].tolist() == ["z", "a"]
    # means 1e-12 apart are a tie (the bound is inclusive); all best: the p-value column is still float
    tie = significance(_frame({"A": [0.0], "B": [1e-12]}))
    assert tie["best"].all() and tie["pvalue"].dtype == float and tie["pvalue"].isna().all()


def test_the_shift_papers_marks_at_their_bounds(monkeypatch):
    from capshift import significance as S

    frame = pd.DataFrame({"degree": [0.0] * 6, "method": list("ABCDEF"),
                          "mean": [0.014, 0.02, 0.03, 0.04, 0.05, 1.25], "n": 5,
                          "best": [True, False, False, False, False, False],
                          "pvalue": [np.nan, 0.05, 0.0499, 0.0011, 0.001, 1e-9]})
    monkeypatch.setattr(S, "significance", lambda *a, **k: frame)
    marks = S.wilcoxon_marks(pd.DataFrame({"degree": 0.0, "method": list("ABCDEF"), "ae": 0.0, "trial": 0,
                                           "sample_id": 0}))
    assert marks.loc[0.0].tolist() == ["**.014**", "‡.020", "†.030", "†.040", ".050", "1.250"]
    assert marks.index.name == "degree"


def test_wilcoxon_marks_reads_the_value_column_and_several_group_columns():
    from capshift.significance import wilcoxon_marks

    rows = [(g, h, s, m, 0.1 + 0.05 * (m == "B") + 0.001 * s) for g in ("x", "y") for h in (1, 2) for s in range(8)
            for m in "BA"]
    df = pd.DataFrame(rows, columns=["g", "h", "sample_id", "method", "err"]).assign(trial=0)
    marks = wilcoxon_marks(df, by=("g", "h"), value="err")
    assert marks.index.tolist() == [("x", 1), ("x", 2), ("y", 1), ("y", 2)] and marks.index.name is None
    assert marks.columns.tolist() == ["B", "A"]  # methods in order of appearance
    assert (marks["A"].str.startswith("**")).all() and marks.loc[("x", 1), "B"] == "†.154"  # p = 2 / 2**8


def test_identical_methods_are_indistinguishable_and_verdicts_at_alpha():
    from capshift.significance import against_reference

    base = np.linspace(0.1, 0.3, 12)
    df = pd.DataFrame({"shift": 0, "sample": np.tile(np.arange(12), 3), "method": np.repeat(["R", "same", "up"], 12),
                       "ae": np.r_[base, base, base + 0.01]})
    res = against_reference(df, "R", by="shift", pair="sample").set_index("method")
    assert res.loc["same", "pvalue"] == 1.0 and res.loc["same", "verdict"] == "not distinguishable"
    p = res.loc["up", "pvalue"]
    assert res.loc["up", "verdict"] == "worse" and res.loc["up", "difference"] == pytest.approx(0.01)
    at = against_reference(df, "R", by="shift", pair="sample", alpha=p).set_index("method")
    assert at.loc["up", "verdict"] == "not distinguishable"  # p < alpha is needed, p = alpha is not enough
    assert list(res.columns) == ["shift", "mean", "reference_mean", "difference", "n", "pvalue", "min_p", "verdict"]


def test_compare_groups_columns_bounds_and_falls():
    from capshift.significance import compare_groups

    df = pd.DataFrame({"method": "m", "level": ["lo"] * 20 + ["hi"] * 20,
                       "ae": np.r_[np.linspace(0.3, 0.4, 20), np.linspace(0.1, 0.2, 20)]})
    res = compare_groups(df, "level", "lo", "hi")
    assert list(res.columns) == ["method", "mean_low", "mean_high", "n_low", "n_high", "pvalue", "change"]
    assert res["change"].tolist() == ["falls"] and res["n_low"].tolist() == [20]
    same = compare_groups(df.assign(ae=0.2), "level", "lo", "hi")  # no spread at all: p = 1, no test run
    assert same["pvalue"].tolist() == [1.0] and same["change"].tolist() == ["no significant change"]
    at = compare_groups(df, "level", "lo", "hi", alpha=float(res["pvalue"][0]))
    assert at["change"].tolist() == ["no significant change"]
    one = compare_groups(df.iloc[[0, 20, 21]], "level", "lo", "hi")  # one low row is enough
    assert one["n_low"].tolist() == [1]
    # integer values and a categorical group column (observed groups only)
    ints = df.assign(ae=(df["ae"] * 100).round().astype(int), method=pd.Categorical(["m"] * 40, ["m", "unused"]))
    assert compare_groups(ints, "level", "lo", "hi")["method"].tolist() == ["m"]
    with pytest.raises(ValueError, match=r"^results lack the columns \['ae'\]$"):
        compare_groups(df.drop(columns="ae"), "level", "lo", "hi")
    with pytest.raises(ValueError, match=r"^group \{'method': 'm'\} has no rows with level = 'lo' or 'mid'$"):
        compare_groups(df, "level", "lo", "mid")


def test_power_arguments_and_their_messages():
    from scipy.stats import norm

    from capshift.significance import RANK_ARE, power, samples_needed
    assert 0.05 < power(0.1, 0.2, 2) < 1 and 0.05 < power(0.1, 0.2, 2, n_other=2) < 1  # n = 2 is allowed
    z = 1.0 / (1.0 / np.sqrt(RANK_ARE * 3))  # an effect of exactly 1
    assert power(1.0, 1.0, 3) == pytest.approx(norm.cdf(z - norm.ppf(0.975)) + norm.cdf(-z - norm.ppf(0.975)))
    for kw, msg in (({"effect": np.inf}, r"^effect must be a finite difference of means, got inf$"),
                    ({"sd": -1.0}, r"^sd must be a finite standard deviation >= 0, got -1\.0$"),
                    ({"alpha": 0.0}, r"^alpha must be in \(0, 1\), got 0\.0$"),
                    ({"alpha": 1.0}, r"^alpha must be in \(0, 1\), got 1\.0$"),
                    ({"n": 1}, r"^n and n_other must be integers >= 2, got 1 and None$")):
        with pytest.raises(ValueError, match=msg):
            power(**{"effect": 0.01, "sd": 0.05, "n": 50, **kw})
    assert samples_needed(1.0, 0.001) == 2  # a huge effect: the floor of 2 pairs
    assert samples_needed(0.01, 0.05) == samples_needed(0.01, 0.05, paired=True) < samples_needed(0.01, 0.05,
                                                                                                     paired=False)
    with pytest.raises(ValueError, match="^target must be a power in"):
        samples_needed(0.01, 0.05, target=0.0)
    with pytest.raises(ValueError, match="^effect is 0: no number of samples can detect it$"):
        samples_needed(0.0, 0.05)


def test_verdict_bounds_and_messages():
    from capshift.significance import verdict
    assert verdict(0.05, True, 0.8) == "not reproduced"  # p = alpha does not reject; power = min_power suffices
    assert verdict(0.0, True, 1.0) == "reproduced" and verdict(1.0, True, 0.0) == "not enough evidence"
    with pytest.raises(ValueError, match=r"^pvalue must be in \[0, 1\], got 1\.5$"):
        verdict(1.5, True, 0.5)
    with pytest.raises(ValueError, match=r"^power_ must be in \[0, 1\], got -0\.1$"):
        verdict(0.5, True, -0.1)


def test_against_reference_defaults_group_lists_and_the_zero_shortcut():
    from capshift.significance import against_reference

    base = np.linspace(0.1, 0.3, 20)
    df = pd.DataFrame({"shift": 0.5, "x": "a", "trial": 0, "sample_id": np.tile(np.arange(20), 3),
                       "method": np.repeat(["R", "tiny", "tie"], 20),
                       "ae": np.r_[base, base, base]})
    # exactly representable: 18 differences of +2**-7 and 2 of -9 * 2**-7, so "tie"'s mean difference is exactly 0
    df.loc[df["method"] == "tie", "ae"] = np.r_[np.full(18, 0.5 + 2.0 ** -7), np.full(2, 0.5 - 9 * 2.0 ** -7)]
    df.loc[df["method"] == "R", "ae"] = 0.5
    df.loc[df["method"] == "tiny", "ae"] = 0.5 + 1e-10
    res = against_reference(df, "R").set_index("method")  # by "shift", paired by ("trial", "sample_id")
    assert res.loc["tiny", "pvalue"] == 1.0 and res.loc["tiny", "verdict"] == "not distinguishable"
    assert res.loc["tie", "difference"] == 0.0 and res.loc["tie", "pvalue"] < 0.05
    assert res.loc["tie", "verdict"] == "worse"  # "better" needs a mean below the reference's
    two = against_reference(df, "R", by=["shift", "x"])
    assert two[["shift", "x"]].drop_duplicates().values.tolist() == [[0.5, "a"]]


def test_compare_groups_refuses_a_non_frame_and_samples_needed_corners():
    from capshift.significance import RANK_ARE, compare_groups, power, samples_needed

    with pytest.raises(ValueError, match=r"^results lack the columns \['ae', 'level', 'method'\]$"):
        compare_groups({"ae": [0.1]}, "level", 0, 1)
    assert samples_needed(0.01, 0.05, alpha=0.6) >= 2  # any alpha in (0, 1)
    assert power(0.01, 0.05, samples_needed(0.01, 0.05, alpha=0.6), alpha=0.6) >= 0.8
    assert samples_needed(10.0, 1.0) == 2
    x_is_one = 1 / 2.801585218  # (z_{0.975} + z_{0.8}) * sd / effect = 1: the closed form gives 1 / ARE -> 2
    assert np.ceil(1 / RANK_ARE) == 2 and samples_needed(1.0, x_is_one) == 2


def test_marks_columns_follow_the_methods_order_of_appearance():
    from capshift.significance import wilcoxon_marks

    rows = [("g1", s, "A", 0.1 + s / 100) for s in range(3)] + [("g2", s, "B", 0.2 + s / 100) for s in range(3)]
    rows += [(g, s, "C", 0.3 + s / 100) for g in ("g1", "g2") for s in range(3)]
    df = pd.DataFrame(rows, columns=["degree", "sample_id", "method", "ae"]).assign(trial=0)
    marks = wilcoxon_marks(df)
    assert marks.columns.tolist() == ["A", "B", "C"] and marks.loc["g1", "B"] == "" and marks.loc["g2", "A"] == ""


def test_compare_groups_rises_only_above_the_low_mean():
    from capshift.significance import compare_groups

    # equal means (1/16, exactly) and a significant rank test: not "rises", since the mean is not above
    df = pd.DataFrame({"method": "m", "level": ["lo"] * 16 + ["hi"] * 16,
                       "ae": np.r_[np.zeros(15), 1.0, np.full(16, 0.0625)]})
    res = compare_groups(df, "level", "lo", "hi")
    assert res["mean_low"][0] == res["mean_high"][0] and res["pvalue"][0] < 0.05
    assert res["change"].tolist() == ["falls"]

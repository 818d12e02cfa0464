"""Tests of capshift.shift: the four protocol families of the dataset-shift paper (DMKD 2024, Algorithms 1-4),
their exactness, reproducibility and errors, and the quantifiers' behaviour under each shift on synthetic data."""
import math
import re

import numpy as np
import pandas as pd
import pytest
import quapy as qp
from quapy.method.aggregative import PACC
from sklearn.linear_model import LogisticRegression

from capshift import datasets, experiment, shift, shift_experiments


@pytest.fixture(scope="module")
def synth():
    X, levels, groups = shift.gaussian_shift_data(n_per_cell=300, seed=0)
    keep, y = shift.binarise(levels, 3)
    return X, levels, groups, X[keep], y, groups[keep]


def _pps(synth, **kw):
    _, _, _, Xb, y, _ = synth
    args = dict(train_size=400, test_size=50, n_samples=2, repeats=2, random_state=1) | kw
    return shift.PriorShift(Xb, y, **args)


# ------------------------------------------------------------------------------------------------ taxonomy
def test_taxonomy_is_table_2():
    t = shift.taxonomy()
    assert list(t.index) == ["prior probability shift", "global pure covariate shift",
                             "global mixed covariate shift", "local covariate shift", "concept shift"]
    assert t.loc["prior probability shift", "P(X|Y)"] == "="
    assert t.loc["global pure covariate shift", "P(Y)"] == "="
    assert t.loc["global mixed covariate shift", "P(Y)"] == "≠"
    assert (t.loc[["global pure covariate shift", "global mixed covariate shift"], "P(Y|X)"] == "=").all()
    assert t.loc["concept shift", "P(X)"] == "=" and t.loc["concept shift", "P(Y|X)"] == "≠"


def test_binarise_follows_the_paper():
    keep, y = shift.binarise([1, 2, 3, 4, 5, 3], 3)
    assert keep.tolist() == [True, True, False, True, True, False] and y.tolist() == [0, 0, 1, 1]
    keep, y = shift.binarise([1, 2, 3, 4, 5], 2.5)
    assert keep.all() and y.tolist() == [0, 0, 1, 1, 1]
    assert shift.cut_points([5, 1, 3, 2, 4]) == (1.5, 2.5, 3.5, 4.5)


@pytest.mark.parametrize("labels, cut, err", [
    (["a", "b", "c"], 1.5, TypeError), ([1.5, 2.0, 3.0], 2.5, ValueError), ([1, 2, 3], 3, ValueError),
    ([1, 2, 3], 0.5, ValueError), ([1, 2, 3], float("nan"), TypeError), ([], 1.5, ValueError),
])
def test_binarise_rejects_bad_input(labels, cut, err):
    with pytest.raises(err):
        shift.binarise(labels, cut)


# ------------------------------------------------------------------------------------------------ PPS
def test_prior_shift_hits_prevalences_and_keeps_class_conditionals(synth):
    p = _pps(synth, train_prevalences=[0.02, 0.5, 0.98], test_prevalences=[0.0, 0.3, 1.0])
    y = p.y_
    for trial in p.trials():
        assert len(trial.train_index) == 400
        assert np.isin(trial.train_index, p.train_pool_).all()  # training items from the training pool only
        assert trial.train.prevalence()[1] == pytest.approx(round(400 * trial.params["p_L"]) / 400)
        for k, idx in enumerate(trial.test.indices):
            row = trial.test.parameters.iloc[k]
            assert len(idx) == 50 == row["size"]
            labels = trial.test.labels(k)
            assert labels.mean() == pytest.approx(round(50 * row["p_U"]) / 50) == pytest.approx(row["prevalence"])
            # P(X|Y) fixed: every item of class c is an item of class c of the test pool
            assert np.array_equal(y[p.test_pool_][idx], labels)
            assert row["degree"] == round(row["p_U"] - row["p_L"], 1)
    assert not set(p.train_pool_) & set(p.test_pool_)


def test_prior_shift_is_reproducible(synth):
    a, b, c = _pps(synth), _pps(synth), _pps(synth, random_state=2)
    ta, tb, tc = a.trial(5), b.trial(5), c.trial(5)
    assert np.array_equal(ta.train_index, tb.train_index)
    assert all(np.array_equal(i, j) for i, j in zip(ta.test.indices, tb.test.indices))
    assert not np.array_equal(ta.train_index, tc.train_index)
    pd.testing.assert_frame_equal(a.parameters, b.parameters)


def test_prior_shift_parameters_match_the_samples(synth):
    p = _pps(synth, train_prevalences=[0.3, 0.7], test_prevalences=[0.1, 0.6], repeats=1)
    drawn = pd.concat([t.test.parameters for t in p.trials()], ignore_index=True)
    pd.testing.assert_frame_equal(drawn, p.parameters)
    assert p.total() == len(drawn) == 2 * 2 * 2
    assert len(list(p())) == p.total()  # QuaPy's call yields every test sample of every trial


def test_prior_shift_multiclass():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(900, 3)), np.repeat([0, 1, 2], 300)
    test = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    p = shift.PriorShift(X, y, n_train_draws=4, test_prevalences=test, train_size=200, test_size=40,
                         n_samples=1, repeats=1)
    assert p.train_prevalences_.shape == (4, 3) and (p.train_prevalences_ >= 0.02 - 1e-12).all()
    trial = p.trial(0)
    counts = np.bincount(trial.test.labels(0), minlength=3)
    assert counts.tolist() == [8, 12, 20]
    row = trial.test.parameters.iloc[1]
    assert row["degree"] == round(0.5 * np.abs(np.array([1, 0, 0]) - p.train_prevalences_[0]).sum(), 2)
    with pytest.raises(ValueError, match="test_prevalences must be given.*n_test_draws"):
        shift.PriorShift(X, y, n_train_draws=3)
    draws = shift.PriorShift(X, y, n_train_draws=2, n_test_draws=3, train_size=200, test_size=40, n_samples=1,
                             repeats=1)
    assert draws.test_prevalences_.shape == (3, 3)
    np.testing.assert_allclose(draws.test_prevalences_, shift.dirichlet_prevalences(3, 3, seed=1))


def test_prior_shift_grid_and_draws_cannot_be_misread():
    # issue 23: test_prevalences=1 used to mean "one random draw" (prevalence 0.22 on binary data) while 1.0
    # meant prevalence 1; a bare number is now refused, and draws have their own parameters
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(400, 2)), np.tile([0, 1], 200)
    kw = dict(train_prevalences=[0.5], train_size=100, test_size=40, n_samples=1, repeats=1)
    for bad in (1, 1.0, 0, np.float64(0.5), np.array(1.0)):
        with pytest.raises(TypeError, match=r"bare number.*test_prevalences=\[.*n_test_draws"):
            shift.PriorShift(X, y, test_prevalences=bad, **kw)
    for grid, prev in (([1], 1.0), ([1.0], 1.0), ([0], 0.0), ([0.0], 0.0)):  # 0 and 1 are valid prevalences
        p = shift.PriorShift(X, y, test_prevalences=grid, **kw)
        assert p.parameters["prevalence"].tolist() == [prev]
        assert np.bincount(p.trial(0).test.labels(0), minlength=2)[1] == 40 * prev
    one = shift.PriorShift(X, y, n_test_draws=1, **kw)
    assert one.test_prevalences_.shape == (1, 2)
    with pytest.raises(ValueError, match="either test_prevalences.*or n_test_draws"):
        shift.PriorShift(X, y, test_prevalences=[0.5], n_test_draws=2, **kw)
    with pytest.raises(ValueError, match="n_test_draws must be >= 1"):
        shift.PriorShift(X, y, n_test_draws=0, **kw)
    with pytest.raises(TypeError, match="n_test_draws must be an int"):
        shift.PriorShift(X, y, n_test_draws=2.0, **kw)


@pytest.mark.parametrize("kw, match", [
    (dict(train_prevalences=[0.0, 0.5]), "train_prevalences"),
    (dict(test_prevalences=[0.5, 1.2]), "test_prevalences"),
    (dict(test_prevalences="0.5"), "string"),
    (dict(train_size=0), "train_size"),
    (dict(test_size=10_000, replace=False), "test_prevalences"),
    (dict(train_prop=1.5), "train_prop"),
    (dict(random_state=-1), "random_state"),
    (dict(replace="yes"), "replace"),
])
def test_prior_shift_rejects_bad_arguments(synth, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        p = _pps(synth, **kw)
        p.trial(0)


def test_prior_shift_without_replacement_never_repeats_an_item(synth):
    p = _pps(synth, replace=False, test_prevalences=[0.5], train_prevalences=[0.5])
    t = p.trial(0)
    assert len(np.unique(t.train_index)) == len(t.train_index)
    assert all(len(np.unique(i)) == len(i) for i in t.test.indices)


# ------------------------------------------------------------------------------------------------ covariate
def test_global_covariate_shift_hits_alpha_and_prevalence(synth):
    _, _, _, Xb, y, g = synth
    p = shift.GlobalCovariateShift(Xb, y, g, train_alphas=[0.0, 0.3, 1.0], test_alphas=[0.0, 0.7, 1.0],
                                   train_size=300, test_size=50, n_samples=1, repeats=1)
    grp = p.group_
    for trial in p.trials():
        a_L, p_L = trial.params["alpha_L"], trial.params["p_L"]
        tg, ty = grp[trial.train_index], trial.train.labels
        n_a = math.ceil(round(a_L * 300, 9))
        assert tg.sum() == n_a
        if n_a:
            assert ty[tg == 1].sum() == round(p_L * n_a)
        for k, idx in enumerate(trial.test.indices):
            row = trial.test.parameters.iloc[k]
            sg, sy = grp[p.test_pool_][idx], trial.test.labels(k)
            assert sg.sum() == math.ceil(round(row["alpha_U"] * 50, 9)) == round(row["alpha"] * 50)
            assert sy.mean() == pytest.approx(row["prevalence"])
            assert row["degree"] == round(a_L - row["alpha_U"], 1)
            assert row["pure"] == (row["p_U"] == p_L)


def test_global_covariate_shift_pure_and_mixed(synth):
    _, _, _, Xb, y, g = synth
    kw = dict(train_size=200, test_size=40, n_samples=1, repeats=1, train_alphas=[0.5], test_alphas=[0.2])
    pure = shift.GlobalCovariateShift(Xb, y, g, kind="pure", **kw).parameters
    mixed = shift.GlobalCovariateShift(Xb, y, g, kind="mixed", **kw).parameters
    assert (pure["p_U"] == pure["p_L"]).all() and len(pure) == 3
    assert (mixed["p_U"] != mixed["p_L"]).all() and len(mixed) == 6


def test_local_covariate_shift_changes_only_the_positives_of_group_a(synth):
    _, _, _, Xb, y, g = synth
    p = shift.LocalCovariateShift(Xb, y, g, train_size=600, test_size=120, n_samples=1, repeats=1)
    t = p.trial(0)
    tg, ty = p.group_[t.train_index], t.train.labels
    assert ty.mean() == 0.5 and tg.mean() == 0.5
    assert ty[tg == 1].mean() == pytest.approx(2 / 3) and ty[tg == 0].mean() == pytest.approx(1 / 3)
    cells = []
    for k, idx in enumerate(t.test.indices):
        sg, sy = p.group_[p.test_pool_][idx], t.test.labels(k)
        row = t.test.parameters.iloc[k]
        cells.append([((sg == a) & (sy == c)).sum() for a in (1, 0) for c in (0, 1)])
        assert len(idx) == row["size"] and abs(sy.mean() - row["p_U"]) < 0.01
    cells = np.array(cells)  # columns: A-neg, A-pos, B-neg, B-pos
    assert (cells[:, [0, 2, 3]] == cells[0, [0, 2, 3]]).all()  # the other three cells never move
    assert cells[0, 1] == 0 and np.all(np.diff(cells[:, 1]) > 0)
    mid = t.test.parameters.index[t.test.parameters["p_U"] == 0.5][0]
    assert t.test.parameters.loc[mid, "size"] == 120  # p_U = 0.5 gives the nominal size and the training mix
    assert cells[mid].tolist() == [20, 40, 40, 20]


def test_local_covariate_control_is_prior_shift(synth):
    _, _, _, Xb, y, g = synth
    kw = dict(train_size=600, test_size=120, n_samples=1, repeats=1)
    local = shift.LocalCovariateShift(Xb, y, g, **kw).parameters
    ctrl_p = shift.LocalCovariateShift(Xb, y, g, change_conditionals=False, **kw)
    ctrl = ctrl_p.parameters
    assert (local["size"] == ctrl["size"]).all()
    assert np.allclose(local["prevalence"], ctrl["prevalence"], atol=0.01)
    t = ctrl_p.trial(0)
    for k, idx in enumerate(t.test.indices):
        sg, sy = ctrl_p.group_[ctrl_p.test_pool_][idx], t.test.labels(k)
        if sy.sum() >= 30:  # positives keep the training mix of groups (2/3 from A): P(X|Y) fixed
            assert abs(sg[sy == 1].mean() - 2 / 3) < 0.02


@pytest.mark.parametrize("make, match", [
    (lambda X, y, g: shift.GlobalCovariateShift(X, y, np.zeros(len(y))), "exactly 2 values"),
    (lambda X, y, g: shift.GlobalCovariateShift(X, y * 2, g), "binary"),
    (lambda X, y, g: shift.GlobalCovariateShift(X, y, g, test_alphas=[-0.1]), "test_alphas"),
    (lambda X, y, g: shift.GlobalCovariateShift(X, y, g, group_a=7), "group_a"),
    (lambda X, y, g: shift.GlobalCovariateShift(X, y, g, kind="both"), "kind"),
    (lambda X, y, g: shift.LocalCovariateShift(X, y, g, test_prevalences=[0.1, 0.5]), "0.25"),
    (lambda X, y, g: shift.LocalCovariateShift(X, y, g[:-1]), "groups"),
    (lambda X, y, g: shift.GlobalCovariateShift(X, y, g, train_size=100, test_size=5000, replace=False,
                                                train_alphas=[0.5]), "items of negatives of group B"),
    (lambda X, y, g: shift.LocalCovariateShift(X, y, g, return_type="tuple"), "return_type"),
])
def test_grouped_families_reject_bad_input(synth, make, match):
    _, _, _, Xb, y, g = synth
    with pytest.raises((ValueError, TypeError), match=match):
        make(Xb, y, g)


# ------------------------------------------------------------------------------------------------ concept
def test_concept_shift_relabels_the_same_distribution(synth):
    X, levels, _, _, _, _ = synth
    p = shift.ConceptShift(X, levels, train_size=400, test_size=200, n_samples=3, repeats=1)
    assert np.bincount(p.levels_)[1:].tolist() == [len(p.levels_) // 5] * 5  # balanced levels
    for trial in p.trials():
        c_L = trial.params["c_L"]
        assert np.array_equal(trial.train.labels, (p.levels_[trial.train_index] > c_L).astype(int))
        seen = []
        for k, idx in enumerate(trial.test.indices):
            row = trial.test.parameters.iloc[k]
            lv = p.levels_[p.test_pool_][idx]
            assert np.array_equal(trial.test.labels(k), (lv > row["c_U"]).astype(int))
            assert row["degree"] == c_L - row["c_U"]
            seen.append(lv)
        # P(X) fixed: the samples are uniform draws, so every level is about 1/5 of them
        freq = np.bincount(np.concatenate(seen), minlength=6)[1:] / sum(map(len, seen))
        assert np.abs(freq - 0.2).max() < 0.05


@pytest.mark.parametrize("labels, kw, err", [
    (np.array(["a", "b", "c"] * 100), {}, TypeError),
    (np.repeat([1, 2], 150), {}, ValueError),
    (None, dict(train_cuts=[0.5]), ValueError),
    (None, dict(test_cuts=[5.0]), ValueError),
    (None, dict(balance=1), TypeError),
])
def test_concept_shift_rejects_bad_input(synth, labels, kw, err):
    X, levels, _, _, _, _ = synth
    labels = levels if labels is None else labels
    with pytest.raises(err):
        shift.ConceptShift(X[: len(labels)], labels, **kw)


def test_integer_cut_drops_its_level(synth):
    X, levels, _, _, _, _ = synth
    p = shift.ConceptShift(X, levels, train_cuts=[3], test_cuts=[2], train_size=500, test_size=100, n_samples=1,
                           repeats=1)
    t = p.trial(0)
    assert 3 not in p.levels_[t.train_index] and 2 not in p.levels_[p.test_pool_][t.test.indices[0]]
    assert abs(len(t.test.indices[0]) - t.test.parameters["size"].iloc[0]) <= 25


# ------------------------------------------------------------------------------------------------ QuaPy
def test_quapy_evaluate_accepts_our_protocols(synth):
    p = _pps(synth, train_prevalences=[0.5], test_prevalences=[0.1, 0.9], repeats=1, n_samples=3)
    trial = p.trial(0)
    q = PACC(LogisticRegression()).fit(*trial.train.Xy)
    mae = qp.evaluation.evaluate(q, trial.test, error_metric="mae")
    ours = np.mean([abs(q.quantify(trial.test.data.instances[i])[1] - trial.test.labels(k).mean())
                    for k, i in enumerate(trial.test.indices)])
    assert mae == pytest.approx(ours)
    # the family is a protocol too: with one model, its samples are those of all trials in order
    true, est = qp.evaluation.prediction(q, p)
    assert len(true) == p.total() and np.allclose(true[:, 1], p.parameters["prevalence"])


# ------------------------------------------------------------------------------------------------ behaviour
@pytest.fixture(scope="module")
def pps_results():
    X, levels, _ = shift.gaussian_shift_data(n_per_cell=300, scale=1.5, seed=0)  # overlapping classes: CC errs
    keep, y = shift.binarise(levels, 3)
    p = shift.PriorShift(X[keep], y, train_prevalences=[0.5], test_prevalences=[0.0, 0.1, 0.5, 0.9, 1.0],
                         n_samples=5, repeats=2, train_size=600, test_size=100, random_state=1)
    return experiment.run_shift_quantifiers(p, quantifiers=("CC", "ACC", "PACC", "SLD"))


def test_adjusted_quantifiers_beat_cc_as_prior_shift_grows(pps_results):
    mae = pps_results.groupby(["method", pps_results["degree"].abs() >= 0.4])["ae"].mean().unstack()
    for m in ("ACC", "PACC", "SLD"):
        assert mae.loc[m, True] < mae.loc["CC", True] - 0.05  # large shift: adjusting pays
    assert mae.loc["CC", True] > mae.loc["CC", False] + 0.05  # CC degrades with the shift


def test_no_quantifier_is_unbiased_under_concept_shift(synth):
    X, levels, _, _, _, _ = synth
    p = shift.ConceptShift(X, levels, train_cuts=[1.5, 4.5], test_cuts=[1.5, 4.5], train_size=500, test_size=100,
                           n_samples=5, repeats=1)
    r = experiment.run_shift_quantifiers(p)
    r["bias"] = r["estimate"] - r["true"]
    bias = r[r["degree"] != 0].groupby(["method", "degree"])["bias"].mean().unstack()
    # c_L < c_U: the trained concept of "positive" is wider, so every method overestimates; and vice versa
    assert (bias[-3.0] > 0.2).all() and (bias[3.0] < -0.2).all()


def test_wilcoxon_marks_bands():
    rng = np.random.default_rng(0)
    n = 60
    base = rng.uniform(0.0, 0.1, n)
    rows = []
    for name, vals in (("best", base), ("same", base + rng.normal(0, 1e-3, n)), ("worse", base + 0.05)):
        rows += [{"degree": 0.0, "trial": 0, "sample_id": i, "method": name, "ae": v} for i, v in enumerate(vals)]
    table = experiment.wilcoxon_marks(pd.DataFrame(rows))
    row = table.loc[0.0]
    assert row["best"].startswith("**") or row["same"].startswith("**")
    assert (row["same"] + row["best"]).count("‡") == 1  # not distinguishable from the best
    assert not row["worse"][0] in "‡†"  # p <= 0.001
    with pytest.raises(ValueError, match="columns"):
        experiment.wilcoxon_marks(pd.DataFrame(rows).drop(columns="sample_id"))


def test_cap_methods_under_prior_shift(synth):
    p = _pps(synth, train_prevalences=[0.5], test_prevalences=[0.05, 0.5, 0.95], n_samples=4, repeats=1,
             train_size=800, test_size=100)
    r = experiment.run_shift_cap(p, methods=("Naive", "O-LEAP_KDEy", "LEAP_ACC"))
    assert set(r["method"]) == {"Naive", "O-LEAP_KDEy", "LEAP_ACC"}
    assert r["true"].between(0, 1).all() and r["predicted"].between(0, 1).all()
    naive = r[r["method"] == "Naive"]
    assert naive["predicted"].nunique() == 1  # Naive ignores the sample
    far = r[r["degree"].abs() >= 0.4].groupby("method")["ae"].mean()
    assert far["O-LEAP_KDEy"] < far["Naive"]


# ------------------------------------------------------------------------------------------------ data
def test_marketing_from_keel():
    d = datasets.load_shift("marketing")
    assert d.X.shape == (6876, 13) and d.levels.min() == 1 and d.levels.max() == 9
    assert np.bincount(d.levels)[1:].tolist() == [1255, 529, 505, 618, 527, 846, 784, 1069, 743]
    assert d.group == "age" and d.groups.sum() == 647 + 1610 + 1768  # ages 14-34
    X, y, g = d.binary()
    assert len(y) == 6876 and y.sum() == 846 + 784 + 1069 + 743
    assert datasets.load_shift("marketing", group="sex").groups.sum() == 3809
    with pytest.raises(ValueError, match="group"):
        datasets.load_shift("marketing", group="colour")
    with pytest.raises(ValueError, match="did you mean"):
        datasets.load_shift("marketin")


def test_diabetes_quintiles():
    d = datasets.load_shift("diabetes")
    assert d.X.shape == (442, 10)
    assert np.abs(np.bincount(d.levels)[1:] - 442 / 5).max() <= 2


def test_wine_quality_is_online_and_cached(tmp_path, monkeypatch):
    import ucimlrepo
    monkeypatch.setattr(ucimlrepo, "fetch_ucirepo", lambda **kw: (_ for _ in ()).throw(ConnectionError("offline")))
    with pytest.raises(datasets.DatasetUnavailableError, match="marketing"):
        datasets.load_shift("wine-quality", cache_dir=tmp_path)
    feats = pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4], "b": [1.0, 2.0, 0.5, 0.2]})
    orig = pd.DataFrame({"quality": [3, 5, 6, 9], "color": ["red", "white", "red", "white"]})
    pd.to_pickle({"features": feats, "targets": orig[["quality"]], "original": orig}, tmp_path / "uci_186.pkl")
    d = datasets.load_shift("wine-quality", cache_dir=tmp_path)
    assert d.levels.tolist() == [4, 5, 6, 8] and d.groups.tolist() == [1, 0, 1, 0]


def test_paper_tables_4_5_transcription():
    from capshift import reference
    t = reference.dataset_shift_tables()
    t4, t5 = t[t["table"] == 4], t[t["table"] == 5]
    assert len(t4) == 21 * 6 and len(t5) == 21 * 6 * 3 and t["mae"].between(0, 1).all()
    assert t4.query("degree == -1.0 and method == 'CC'")["mae"].item() == 0.737
    assert t5.query("degree == 1.0 and p_U == 0.75 and method == 'PACC'")[["mae", "mark"]].values.tolist() == [[0.056, "†"]]
    # the text's claims: SLD is the best performer under PPS (Sect. 5.3.2), PCC under global pure covariate
    # shift (Sect. 5.4.2, the p_U = p_L = 0.5 block)
    assert t4.groupby("method")["mae"].mean().idxmin() == "SLD"
    assert t5[t5["p_U"] == 0.5].groupby("method")["mae"].mean().idxmin() == "PCC"


def test_samples_come_with_their_shift_parameters(synth):
    _, _, _, Xb, y, g = synth
    p = shift.GlobalCovariateShift(Xb, y, g, train_prevalences=[0.5], test_prevalences=[0.25, 0.75],
                                   train_alphas=[0.5], test_alphas=[0.0, 1.0], train_size=200, test_size=40,
                                   n_samples=2, repeats=1, return_type="labelled_collection")
    pairs = list(p.with_parameters())
    assert len(pairs) == p.total() == 8
    for lc, params in pairs:
        assert lc.prevalence()[1] == pytest.approx(params["prevalence"])
        assert params["degree"] == round(params["alpha_L"] - params["alpha_U"], 1)
        assert len(lc) == params["size"]


def test_model_selection_picks_from_the_grid(synth, monkeypatch):
    # a grid without the defaults (C=1, class_weight=None): the fitted model must come from the grid search
    monkeypatch.setattr(shift_experiments, "SHIFT_GRID", {"C": [0.001, 1000.0], "class_weight": ["balanced"]})
    p = _pps(synth, train_prevalences=[0.5], repeats=1)
    for name, prefix in (("PACC", "classifier__"), ("SLD", "classifier__estimator__")):
        params = shift_experiments._fit_shift_quantifier(name, p.trial(0).train, 0, True, 50).get_params()
        assert params[prefix + "C"] in (0.001, 1000.0) and params[prefix + "class_weight"] == "balanced"


# ------------------------------------------------------------------------------------------------ hand-made pools
# Tiny pools whose single feature is the row number, so that every sample can be traced back to its items and
# compared with the paper's definitions (counts per class and group, prevalences, degrees, seeds, messages).
def _tiny_grouped(n=10):
    """n items in each (group, class) cell; groups "A" and "B" (A is the default group A, the smaller value)."""
    y = np.tile([0, 1], 2 * n)
    g = np.repeat(["A", "B"], 2 * n)
    return np.arange(4 * n, dtype=float)[:, None], y, g


def _cell_counts(groups_a, labels):
    """[A-neg, A-pos, B-neg, B-pos] counts of a sample (groups_a: 1 for group A)."""
    return [int(((groups_a == a) & (labels == c)).sum()) for a in (1, 0) for c in (0, 1)]


def test_family_defaults_are_the_papers_full_scale():
    X, y, g = _tiny_grouped()
    levels = np.tile([1, 2, 3, 4, 5], 8)
    for p in (shift.PriorShift(X, y), shift.GlobalCovariateShift(X, y, g), shift.LocalCovariateShift(X, y, g),
              shift.ConceptShift(X, levels)):
        assert (p.train_size, p.test_size, p.n_samples, p.repeats) == (5000, 500, 50, 10)
        assert (p.train_prop, p.replace, p.random_state, p.return_type) == (0.6, True, 0, "sample_prev")
    loc = shift.LocalCovariateShift(X, y, g)
    assert loc.change_conditionals is True
    np.testing.assert_allclose(loc.test_prevalences_, np.arange(0.25, 0.76, 0.05))


def test_local_covariate_counts_follow_algorithm_3():
    # N = 12: half from each group, 2/3 of A's half and 1/3 of B's positive; N' = 30: A-neg N'/6 = 5,
    # B-neg N'/3 = 10, B-pos N'/6 = 5 and POS = (p_U (5 + 10 + 5) - 5) / (1 - p_U) positives of A
    X, y, g = _tiny_grouped()
    grid = [0.25, 1 / 3, 0.5, 0.75]
    kw = dict(test_prevalences=grid, train_size=12, test_size=30, n_samples=1, repeats=1)
    want = {True: [[5, 0, 10, 5], [5, 2, 10, 5], [5, 10, 10, 5], [5, 40, 10, 5]],
            # the control: same sizes and prevalences, positives 2/3 from A and negatives 1/3 from A
            False: [[5, 3, 10, 2], [5, 5, 10, 2], [5, 10, 10, 5], [5, 30, 10, 15]]}
    for cc, cells in want.items():
        p = shift.LocalCovariateShift(X, y, g, change_conditionals=cc, **kw)
        t = p.trial(0)
        assert t.params == {"repeat": 0, "p_L": 0.5}
        assert _cell_counts(p.group_[t.train_index], t.train.labels) == [2, 4, 4, 2]
        assert [_cell_counts(p.group_[p.test_pool_][idx], t.test.labels(k))
                for k, idx in enumerate(t.test.indices)] == cells
        expected = pd.DataFrame({"trial": 0, "repeat": 0, "p_L": 0.5, "p_U": grid, "sample": 0,
                                 "sample_id": [0, 1, 2, 3], "degree": [-0.25, -0.17, 0.0, 0.25],
                                 "size": [20, 22, 30, 60], "prevalence": [0.25, 7 / 22, 0.5, 0.75],
                                 "change_conditionals": cc})
        pd.testing.assert_frame_equal(p.parameters, expected)
        pd.testing.assert_frame_equal(t.test.parameters, expected)
    # a degree that rounds to zero from below is +0.0, not -0.0
    d = shift.LocalCovariateShift(X, y, g, **(kw | dict(test_prevalences=[0.499]))).parameters["degree"].item()
    assert d == 0.0 and math.copysign(1.0, d) == 1.0


def test_local_covariate_errors_name_the_argument():
    X, y, g = _tiny_grouped()
    kw = dict(train_size=12, test_size=30, n_samples=1, repeats=1)
    msg = ("test_prevalences must lie in [0.25, 1): changing only the positives of group A cannot reach p_U={} "
           "from the training proportions")
    for bad in (0.2, 1.0):
        with pytest.raises(ValueError, match=re.escape(msg.format(bad))):
            shift.LocalCovariateShift(X, y, g, test_prevalences=[0.5, bad], **kw)
    # 0.25 reached by arithmetic (a rounding error below it) is accepted
    assert shift.LocalCovariateShift(X, y, g, test_prevalences=[0.25 - 1e-9], **kw).parameters["size"].item() == 20
    with pytest.raises(TypeError, match="test_prevalences must be a sequence of numbers, got a string"):
        shift.LocalCovariateShift(X, y, g, test_prevalences="0.5", **kw)
    with pytest.raises(TypeError, match="change_conditionals must be True or False, got 1"):
        shift.LocalCovariateShift(X, y, g, change_conditionals=1, **kw)
    fix = "lower the sample size, drop this grid value, or set replace=True (the paper samples with replacement)"
    with pytest.raises(ValueError, match=re.escape("train_size: the training sample needs 7 items of positives of "
                                                   f"group A, but the pool has 6; {fix}")):
        shift.LocalCovariateShift(X, y, g, **(kw | dict(train_size=20, replace=False)))
    with pytest.raises(ValueError, match=re.escape("test_prevalences: p_U=0.75 needs 16 items of positives of "
                                                   f"group A, but the pool has 4; {fix}")):
        shift.LocalCovariateShift(X, y, g, **(kw | dict(test_prevalences=[0.5, 0.75], test_size=12, replace=False)))


def test_group_a_names_the_group_whose_positives_move():
    X, y, g = _tiny_grouped()
    kw = dict(test_prevalences=[0.75], train_size=12, test_size=30, n_samples=1, repeats=1)
    for name in ("A", "B"):
        p = shift.LocalCovariateShift(X, y, g, group_a=name, **kw)
        assert np.array_equal(p.group_, (g == name).astype(int))
        t = p.trial(0)
        moved = t.test.labels(0) == 1
        assert (g[p.test_pool_][t.test.indices[0]][moved] == name).sum() == 40


# ------------------------------------------------------------------------------------------------ QuaPy interface
def test_family_samples_are_addressed_by_trial_and_position():
    X, y, g = _tiny_grouped()
    p = shift.PriorShift(X, y, train_prevalences=[0.5], test_prevalences=[0.25, 0.75], train_size=8,
                         test_size=4, n_samples=2, repeats=2, random_state=3)
    assert p.samples_parameters() == [(t, k) for t in (0, 1) for k in range(4)]
    assert repr(p) == "PriorShift(2 trials, 8 test samples, train_size=8, test_size=4, random_state=3)"
    for t, k in [(0, 1), (1, 3), (1, 0), (0, 2)]:  # back and forth between trials: the cache follows
        lc, want = p.sample((t, k)), p.trial(t).test
        assert np.array_equal(lc.instances.ravel(), X[p.test_pool_][want.indices[k]].ravel())
        assert np.array_equal(lc.labels, want.labels(k))


# ------------------------------------------------------------------------------------------------ synthetic data
def test_gaussian_shift_data_is_the_documented_mixture():
    X, lv, gr = shift.gaussian_shift_data(n_per_cell=2, n_levels=3, separation=2.0, group_offset=(10, 20),
                                          scale=0.5, seed=4)
    assert lv.dtype == np.int64 and gr.dtype == np.int64
    assert lv.tolist() == [1, 1, 2, 2, 3, 3] * 2 and gr.tolist() == [1] * 6 + [0] * 6  # group A first
    centres = np.array([[(k - 2) * 2.0, 0.0] for k in lv]) + np.where(gr[:, None] == 1, [10.0, 20.0], 0.0)
    rng = np.random.default_rng(4)
    noise = np.vstack([rng.standard_normal((2, 2)) for _ in range(6)])  # one draw per cell, in cell order
    np.testing.assert_allclose(X, centres + 0.5 * noise, rtol=1e-12, atol=1e-12)
    # the defaults: 200 per cell, 5 levels, unit separation, offset (1.5, 2), scale 0.7, seed 0
    X, lv, gr = shift.gaussian_shift_data()
    rng = np.random.default_rng(0)
    noise = np.vstack([rng.standard_normal((200, 2)) for _ in range(10)])
    centres = np.array([[k - 3.0, 0.0] for k in lv]) + np.where(gr[:, None] == 1, [1.5, 2.0], 0.0)
    np.testing.assert_allclose(X, centres + 0.7 * noise, rtol=1e-12, atol=1e-12)
    assert np.bincount(lv).tolist() == [0] + [400] * 5 and gr.sum() == 1000
    # group_offset strings that read as numbers are numbers
    assert np.array_equal(shift.gaussian_shift_data(2, 3, group_offset=("1.5", "2"))[0],
                          shift.gaussian_shift_data(2, 3, group_offset=(1.5, 2.0))[0])


@pytest.mark.parametrize("kw, err, msg", [
    (dict(n_per_cell=0), ValueError, "n_per_cell must be >= 1, got 0"),
    (dict(n_levels=0), ValueError, "n_levels must be >= 1, got 0"),
    (dict(n_levels=2), ValueError, "n_levels must be >= 3 (an ordinal label with a movable cut), got 2"),
    (dict(group_offset=(1.0, float("nan"))), ValueError, "group_offset must be a pair of finite numbers, got (1.0, nan)"),
    (dict(group_offset=(1.0, 2.0, 3.0)), ValueError, "group_offset must be a pair of finite numbers"),
    (dict(separation=0), ValueError, "separation must be a positive number, got 0"),
    (dict(separation=True), ValueError, "separation must be a positive number, got True"),
    (dict(separation="1"), ValueError, "separation must be a positive number, got '1'"),
    (dict(scale=-0.5), ValueError, "scale must be a positive number, got -0.5"),
    (dict(seed=-1), ValueError, "seed must be in 0..2**32-1"),
])
def test_gaussian_shift_data_errors_name_the_argument(kw, err, msg):
    with pytest.raises(err, match=re.escape(msg)):
        shift.gaussian_shift_data(**kw)


def test_gaussian_shift_data_three_levels_is_enough():
    assert np.unique(shift.gaussian_shift_data(n_per_cell=1, n_levels=3)[1]).tolist() == [1, 2, 3]


def test_dirichlet_prevalences_are_the_seeded_draws_mapped_affinely():
    np.testing.assert_allclose(shift.dirichlet_prevalences(3, 4), np.random.default_rng(0).dirichlet(np.ones(3), 4))
    raw = np.random.default_rng(5).dirichlet(np.ones(2), 6)
    np.testing.assert_allclose(shift.dirichlet_prevalences(2, 6, seed=5, min_prevalence=0.02), 0.02 + 0.96 * raw)
    assert not np.allclose(shift.dirichlet_prevalences(3, 4, seed=1), shift.dirichlet_prevalences(3, 4, seed=2))
    # the largest allowed floor, just below 1/n, maps every draw close to uniform
    assert np.allclose(shift.dirichlet_prevalences(2, 3, min_prevalence=0.4999), 0.5, atol=1e-3)


@pytest.mark.parametrize("args, kw, err, msg", [
    ((0, 2), {}, ValueError, "n_classes must be >= 1, got 0"),
    ((1, 2), {}, ValueError, "n_classes must be >= 2, got 1"),
    ((2, 0), {}, ValueError, "k must be >= 1, got 0"),
    ((2, 1.0), {}, TypeError, "k must be an int"),
    ((2, 2), dict(min_prevalence=0.5), ValueError, "min_prevalence must be in [0, 1/n_classes) = [0, 0.5000), got 0.5"),
    ((3, 2), dict(min_prevalence=1 / 3), ValueError, "= [0, 0.3333), got 0.3333333333333333"),
    ((2, 2), dict(min_prevalence=-0.1), ValueError, "min_prevalence must be in [0, 1/n_classes)"),
    ((2, 2), dict(min_prevalence=False), ValueError, "min_prevalence must be in [0, 1/n_classes) = [0, 0.5000), got False"),
    ((2, 2), dict(min_prevalence="0.1"), ValueError, "got '0.1'"),
])
def test_dirichlet_prevalences_errors_name_the_argument(args, kw, err, msg):
    with pytest.raises(err, match=re.escape(msg)):
        shift.dirichlet_prevalences(*args, **kw)


def test_taxonomy_columns():
    t = shift.taxonomy()
    assert list(t.columns) == ["P(X)", "P(Y)", "P(X|Y)", "P(Y|X)", "definition", "experiments", "protocol"]
    assert t.loc["local covariate shift"].tolist() == ["≠", "≠", "≠", "=*", "§4.2.2", "§5.5", "LocalCovariateShift"]


def test_global_covariate_counts_follow_algorithm_2():
    # |A| = ceil(α N'), |B| = N' - |A|, positives round(p |group|) in each group: N' = 10
    X, y, g = _tiny_grouped()
    p = shift.GlobalCovariateShift(X, y, g, train_prevalences=[0.5], test_prevalences=[0.25, 0.5],
                                   train_alphas=[0.5], test_alphas=[0.0, 0.25, 1.0], train_size=8, test_size=10,
                                   n_samples=1, repeats=1)
    assert p.kind == "all" and p.n_classes_ == 2 and p.group_.dtype == np.int64
    t = p.trial(0)
    assert t.params == {"repeat": 0, "p_L": 0.5, "alpha_L": 0.5}
    assert _cell_counts(p.group_[t.train_index], t.train.labels) == [2, 2, 2, 2]
    assert [_cell_counts(p.group_[p.test_pool_][idx], t.test.labels(k)) for k, idx in enumerate(t.test.indices)] == [
        [0, 0, 8, 2], [2, 1, 5, 2], [8, 2, 0, 0], [0, 0, 5, 5], [1, 2, 3, 4], [5, 5, 0, 0]]
    expected = pd.DataFrame({"trial": 0, "repeat": 0, "p_L": 0.5, "alpha_L": 0.5, "p_U": [0.25] * 3 + [0.5] * 3,
                             "alpha_U": [0.0, 0.25, 1.0] * 2, "pure": [False] * 3 + [True] * 3, "sample": 0,
                             "sample_id": range(6), "degree": [0.5, 0.2, -0.5] * 2, "size": 10,
                             "prevalence": [0.2, 0.3, 0.2, 0.5, 0.6, 0.5], "alpha": [0.0, 0.3, 1.0] * 2})
    pd.testing.assert_frame_equal(p.parameters, expected)
    # α N' within 1e-9 of an integer is that integer (0.3 * 10 = 3.0000000000000004 in floating point)
    near = shift.GlobalCovariateShift(X, y, g, train_prevalences=[0.5], test_prevalences=[0.5],
                                      train_alphas=[0.5], test_alphas=[0.3, 0.30000000004, 0.51], train_size=8,
                                      test_size=10, n_samples=1, repeats=1).parameters
    assert near["alpha"].tolist() == [0.3, 0.3, 0.6]
    assert near["degree"].iloc[2] == 0.0 and math.copysign(1.0, near["degree"].iloc[2]) == 1.0  # not -0.0
    # a training sample with a single positive (or negative) is enough
    ok = shift.GlobalCovariateShift(X, y, g, train_prevalences=[0.125, 0.875], train_alphas=[0.0], test_alphas=[0.5],
                                    train_size=8, test_size=10, n_samples=1, repeats=1)
    assert [t.train.labels.sum() for t in ok.trials()] == [1, 7]


def test_grouped_pools_are_the_stratified_split_of_group_and_label():
    from sklearn.model_selection import train_test_split
    X, y, g = _tiny_grouped()
    kw = dict(train_size=8, test_size=10, n_samples=1, repeats=1)
    a, b = shift.GlobalCovariateShift(X, y, g, random_state=5, **kw), shift.GlobalCovariateShift(X, y, g, random_state=5, **kw)
    assert np.array_equal(a.train_pool_, b.train_pool_)
    tr, te = train_test_split(np.arange(40), train_size=0.6, stratify=2 * (g == "A") + y, random_state=5)
    assert np.array_equal(a.train_pool_, np.sort(tr)) and np.array_equal(a.test_pool_, np.sort(te))
    assert _cell_counts(a.group_[a.train_pool_], y[a.train_pool_]) == [6] * 4  # 60% of every cell
    c = shift.GlobalCovariateShift(X, y, g, random_state=6, **kw)
    assert not np.array_equal(a.train_pool_, c.train_pool_)


_FIX = "lower the sample size, drop this grid value, or set replace=True (the paper samples with replacement)"


@pytest.mark.parametrize("kw, err, msg", [
    (dict(train_prevalences=[1.5]), ValueError, "train_prevalences must be <= 1.0, got max 1.5"),
    (dict(test_prevalences=[-0.1]), ValueError, "test_prevalences must be >= 0.0, got min -0.1"),
    (dict(train_alphas=[2]), ValueError, "train_alphas must be <= 1.0, got max 2"),
    (dict(test_alphas="0.5"), TypeError, "test_alphas must be a sequence of numbers, got a string"),
    (dict(train_alphas=[]), ValueError, "train_alphas must be a non-empty 1-d sequence of numbers, got []"),
    (dict(kind="pure", train_prevalences=[0.5], test_prevalences=[0.25]), ValueError,
     "kind='pure' needs a p_U equal to some p_L: train_prevalences and test_prevalences share no value"),
    (dict(train_prevalences=[0.5, 0.0]), ValueError, "train_prevalences: p_L=0.0 (alpha_L=0.5) leaves a class with no "
     "item in a training sample of 8; a classifier cannot learn a missing class"),
    (dict(train_prevalences=[1.0]), ValueError, "train_prevalences: p_L=1.0 (alpha_L=0.5) leaves a class"),
    (dict(train_size=14, train_alphas=[1.0], replace=False), ValueError,
     f"train_alphas: p_L=0.5, alpha_L=1.0 needs 7 items of negatives of group A, but the pool has 6; {_FIX}"),
    (dict(test_prevalences=[1.0], test_alphas=[1.0], replace=False), ValueError,
     f"test_alphas: p_U=1.0, alpha_U=1.0 needs 10 items of positives of group A, but the pool has 4; {_FIX}"),
    (dict(test_prevalences=[0.5], test_alphas=[0.0], replace=False), ValueError,
     f"test_alphas: p_U=0.5, alpha_U=0.0 needs 5 items of negatives of group B, but the pool has 4; {_FIX}"),
    (dict(test_prevalences=[1.0], test_alphas=[0.0], replace=False), ValueError,
     "needs 10 items of positives of group B, but the pool has 4"),
    (dict(groups=np.arange(40) % 12), ValueError, "groups must take exactly 2 values (groups A and B), got 12: "
     "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]; a group attribute with one value cannot shift"),
    (dict(groups=np.repeat(["A", "B"], 20)[:-1]), ValueError, "groups must have shape (40,) (one value per row of X), "
     "got (39,)"),
    (dict(group_a="C"), ValueError, "group_a='C' is not a value of groups (['A', 'B'])"),
    (dict(y=np.arange(40) % 12), ValueError, "y must be binary with both classes present, coded 0 (negative) and 1 "
     "(positive), got values [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]; binarise"),
    (dict(y=np.tile([0, 1], 20)[:-1]), ValueError, "y must have shape (40,) (one label per row of X), got (39,)"),
])
def test_global_covariate_errors_name_the_argument(kw, err, msg):
    X, y, g = _tiny_grouped()
    args = dict(X=X, y=y, groups=g, train_prevalences=[0.5], train_alphas=[0.5], train_size=8, test_size=10,
                n_samples=1, repeats=1) | kw
    with pytest.raises(err, match=re.escape(msg)):
        shift.GlobalCovariateShift(**args)


def test_grouped_labels_and_groups_are_coded_as_ints():
    X, y, g = _tiny_grouped()
    p = shift.LocalCovariateShift(X, y.astype(float), g, train_size=12, test_size=30, n_samples=1, repeats=1)
    assert p.y_.dtype == np.int64 and p.group_.dtype == np.int64
    assert np.array_equal(p.group_, (g == "A").astype(int))  # group_a defaults to the smaller value


def test_binarise_types_and_messages():
    keep, y = shift.binarise(np.array([1.0, 2.0, 3.0]), 1.5)
    assert y.dtype == np.int64 and y.tolist() == [0, 1, 1]
    with pytest.raises(TypeError, match=re.escape("cut_point must be a finite real number, got True")):
        shift.binarise([0, 1, 2], True)
    with pytest.raises(TypeError, match=re.escape("cut_point must be a finite real number, got inf")):
        shift.binarise([0, 1, 2], float("inf"))
    with pytest.raises(ValueError, match=re.escape("cut_point must lie strictly between the smallest and largest "
                                                   "level (1 and 3), got 1; otherwise one class would be empty")):
        shift.binarise([1, 2, 3], 1)
    with pytest.raises(TypeError, match="labels must hold numeric ordinal levels"):
        shift.binarise(["a", "b"], 1.5)


def _tiny_levels():
    """Ten items of each level 1..5 (balanced already, so balancing keeps them all); feature = row number."""
    return np.arange(50, dtype=float)[:, None], np.repeat([1, 2, 3, 4, 5], 10)


def test_concept_shift_parameters_by_hand():
    # pools: 6 items of each level for training, 4 for test; c_L = 3 drops level 3 from training samples
    X, levels = _tiny_levels()
    cuts = [2, 2.5, 2.5000001, 3.0000001]
    p = shift.ConceptShift(X, levels, train_cuts=[3], test_cuts=cuts, train_size=10, test_size=30, n_samples=1,
                           repeats=1)
    assert np.array_equal(p.levels_, levels) and np.bincount(p.levels_[p.test_pool_]).tolist() == [0] + [4] * 5
    expected = pd.DataFrame({"trial": 0, "repeat": 0, "c_L": 3.0, "c_U": [float(c) for c in cuts], "sample": 0,
                             "sample_id": range(4), "degree": [1.0, 0.5, 0.5, 0.0], "size": [24, 30, 30, 30],
                             "prevalence": [0.75, 0.6, 0.6, 0.4], "p_L": 0.5})
    pd.testing.assert_frame_equal(p.parameters, expected)
    assert math.copysign(1.0, p.parameters["degree"].iloc[3]) == 1.0  # not -0.0
    t = p.trial(0)
    assert np.array_equal(t.train.labels, (levels[t.train_index] > 3).astype(int)) and 3 not in levels[t.train_index]
    assert 2 not in levels[p.test_pool_][t.test.indices[0]] and len(t.test.indices[1]) == 30


def test_concept_shift_samples_are_labelled_by_the_test_cut():
    X, levels = _tiny_levels()
    p = shift.ConceptShift(X, levels, train_cuts=[2.5], test_cuts=[1.5, 4.5], train_size=10, test_size=1,
                           n_samples=3, repeats=1, return_type="labelled_collection")
    test = p.trial(0).test
    assert [cut for _, cut in test.samples_parameters()] == [1.5] * 3 + [4.5] * 3
    samples = list(test())
    assert len(samples) == 6
    for k, lc in enumerate(samples):  # single-item samples still know both classes
        assert lc.classes_.tolist() == [0, 1] and len(lc.prevalence()) == 2
        assert np.array_equal(lc.labels, test.labels(k)) and test.labels(k).dtype == lc.labels.dtype == np.int64
        assert np.array_equal(lc.instances, X[p.test_pool_][test.indices[k]])
        assert lc.labels.tolist() == [int(levels[p.test_pool_][test.indices[k]][0] > [1.5, 4.5][k // 3])]


def test_concept_shift_draws_with_replacement_unless_told():
    X, levels = _tiny_levels()
    kw = dict(train_cuts=[2.5], test_cuts=[2.5], n_samples=1, repeats=1)
    p = shift.ConceptShift(X, levels, train_size=100, test_size=60, **kw)  # larger than the pools (30 and 20)
    t = p.trial(0)
    assert len(t.train_index) == 100 and len(t.test.indices[0]) == 60
    with pytest.raises(ValueError, match=re.escape(f"test_size: a uniform sample needs 30 items of the pool, but the "
                                                   f"pool has 20; {_FIX}")):
        shift.ConceptShift(X, levels, train_size=10, test_size=30, replace=False, **kw)
    with pytest.raises(ValueError, match=re.escape("train_size: a uniform sample needs 31 items of the pool, but the "
                                                   "pool has 30")):
        shift.ConceptShift(X, levels, train_size=31, test_size=10, replace=False, **kw)


def test_concept_shift_balances_levels_with_its_own_seeded_draw():
    rng = np.random.default_rng(0)
    levels = np.repeat([1, 2, 3, 4], [12, 5, 8, 20])
    rng.shuffle(levels)
    X = np.arange(len(levels), dtype=float)[:, None]
    kw = dict(train_size=10, test_size=10, n_samples=1, repeats=1)
    p = shift.ConceptShift(X, levels, random_state=7, **kw)
    assert p.balance is True and p.y_.dtype == np.int64 and not p.y_.any()
    # each level subsampled without replacement to the rarest's 5, by the stream seeded (random_state, 2**31 - 1)
    draw = np.random.default_rng([7, 2**31 - 1])
    keep = np.sort(np.concatenate([draw.choice(np.flatnonzero(levels == v), 5, replace=False) for v in (1, 2, 3, 4)]))
    assert np.array_equal(p.X_.ravel(), keep) and np.array_equal(p.levels_, levels[keep])
    again, other = shift.ConceptShift(X, levels, random_state=7, **kw), shift.ConceptShift(X, levels, random_state=8, **kw)
    assert np.array_equal(again.X_, p.X_) and np.array_equal(again.train_pool_, p.train_pool_)
    assert not np.array_equal(other.X_, p.X_)
    natural = shift.ConceptShift(X, levels, balance=False, **kw)
    assert natural.balance is False and np.array_equal(natural.levels_, levels)


@pytest.mark.parametrize("labels, kw, err, msg", [
    (np.repeat([1, 2, 3, 4, 5], 10)[:-1], {}, ValueError, "labels must have shape (50,) (one level per row of X), got (49,)"),
    (np.repeat([1, 2], 25), {}, ValueError, "labels must have at least 3 ordinal levels to move a cut point, got [1, 2]"),
    (np.repeat(["a", "b"], 25), {}, TypeError, "labels must hold numeric ordinal levels"),
    (None, dict(train_cuts=[2.5, 0.5]), ValueError,
     "train_cuts must lie strictly between the smallest and largest level (1 and 5), got 0.5"),
    (None, dict(train_cuts=[1]), ValueError, "train_cuts must lie strictly between the smallest and largest level "
     "(1 and 5), got 1.0"),
    (None, dict(test_cuts=[5]), ValueError, "test_cuts must lie strictly between the smallest and largest level "
     "(1 and 5), got 5.0"),
    (None, dict(test_cuts="2.5"), TypeError, "test_cuts must be a sequence of numbers, got a string"),
    (None, dict(train_cuts=[]), ValueError, "train_cuts must be a non-empty 1-d sequence of numbers"),
    (None, dict(balance=1), TypeError, "balance must be True or False, got 1"),
])
def test_concept_shift_errors_name_the_argument(labels, kw, err, msg):
    X, levels = _tiny_levels()
    with pytest.raises(err, match=re.escape(msg)):
        shift.ConceptShift(X, levels if labels is None else labels, **kw)


def test_concept_shift_accepts_three_levels_and_any_integer_scale():
    X = np.arange(30, dtype=float)[:, None]
    p = shift.ConceptShift(X, np.repeat([1, 2, 3], 10), train_size=5, test_size=5, n_samples=1, repeats=1)
    assert p.train_cuts_.tolist() == p.test_cuts_.tolist() == [1.5, 2.5]
    q = shift.ConceptShift(X, np.repeat([-1, 0, 2], 10), train_size=5, test_size=5, n_samples=1, repeats=1)
    assert q.train_cuts_.tolist() == [-0.5, 1.0]  # cuts below zero are fine


def test_ordinal_labels_checks_and_cut_points():
    assert shift.cut_points([1, 2]) == (1.5,)
    assert shift.cut_points(np.array([6.0, 1.0, 3.0])) == (2.0, 4.5)
    with pytest.raises(ValueError, match=re.escape("labels must have at least 2 levels to be cut, got [3]")):
        shift.cut_points([3, 3])
    with pytest.raises(ValueError, match=re.escape("labels must have at least 2 levels to be cut, got [3]")):
        shift.cut_points([3])
    with pytest.raises(TypeError, match=re.escape("labels must hold numeric ordinal levels (e.g. 1..5 stars), got "
                                                  "dtype <U1; a nominal label has no order to cut: encode ordered "
                                                  "levels as integers first")):
        shift.cut_points(["a", "b"])
    with pytest.raises(ValueError, match=re.escape("labels must be a non-empty 1-d array of ordinal levels, got shape "
                                                   "(2, 2)")):
        shift.binarise([[1, 2], [3, 4]], 2.5)
    with pytest.raises(ValueError, match=re.escape("labels must be a non-empty 1-d array of ordinal levels, got shape "
                                                   "(0,)")):
        shift.cut_points([])
    with pytest.raises(ValueError, match=re.escape("labels must hold integer-valued ordinal levels, got non-integer "
                                                   "values such as 2.5; bin a continuous response")):
        shift.cut_points([1.0, 2.5, 3.0])
    with pytest.raises(ValueError, match="such as nan"):
        shift.cut_points([1.0, np.nan])


def _tiny_binary():
    """Ten items of each class (pools: 6 + 6 for training, 4 + 4 for test); feature = row number."""
    return np.arange(20, dtype=float)[:, None], np.tile([0, 1], 10)


def test_prior_shift_counts_follow_algorithm_1():
    # class counts round(N p), the other class takes the rest; degree p_U - p_L rounded to 1 decimal
    X, y = _tiny_binary()
    p = shift.PriorShift(X, y, train_prevalences=[0.25, 1 / 3], test_prevalences=[0.0, 0.25, 0.3, 0.7],
                         train_size=8, test_size=10, n_samples=1, repeats=1, random_state=3)
    expected = pd.DataFrame({"trial": [0] * 4 + [1] * 4, "repeat": 0, "p_L": [0.25] * 4 + [0.333333] * 4,
                             "p_U": [0.0, 0.25, 0.3, 0.7] * 2, "sample": 0, "sample_id": [0, 1, 2, 3] * 2,
                             "degree": [-0.2, 0.0, 0.0, 0.4, -0.3, -0.1, 0.0, 0.4], "size": 10,
                             "prevalence": [0.0, 0.2, 0.3, 0.7] * 2})
    pd.testing.assert_frame_equal(p.parameters, expected)
    assert p.parameters["p_L"].tolist() == [0.25] * 4 + [0.333333] * 4  # labels rounded to 6 decimals, exactly
    assert math.copysign(1.0, p.parameters["degree"].iloc[6]) == 1.0  # round(0.3 - 1/3, 1) is +0.0, not -0.0
    for t, train_counts in zip(p.trials(), ([6, 2], [5, 3])):
        assert np.bincount(t.train.labels).tolist() == train_counts
        assert np.array_equal(y[t.train_index], t.train.labels) and np.isin(t.train_index, p.train_pool_).all()
        assert [np.bincount(t.test.labels(k), minlength=2).tolist() for k in range(4)] == [[10, 0], [8, 2], [7, 3],
                                                                                            [3, 7]]
        assert t.test.total() == 4 and t.test.sample_size == 10


def test_prior_shift_multiclass_counts_and_degree():
    X, y = np.arange(30, dtype=float)[:, None], np.repeat([0, 1, 2], 10)
    p = shift.PriorShift(X, y, train_prevalences=[[0.2, 0.3, 0.5]], test_prevalences=[[0.45, 0.45, 0.1], [0.5, 0.5, 0.0]],
                         train_size=10, test_size=3, n_samples=1, repeats=1)
    # every share but the last rounded, never more than what is left: 3 x (0.5, 0.5, 0) -> 2, 1, 0
    expected = pd.DataFrame({"trial": 0, "repeat": 0, "p_L": [(0.2, 0.3, 0.5)] * 2,
                             "p_U": [(0.45, 0.45, 0.1), (0.5, 0.5, 0.0)], "sample": 0, "sample_id": [0, 1],
                             "degree": [0.4, 0.5], "size": 3, "prevalence_0": [1 / 3, 2 / 3],
                             "prevalence_1": [1 / 3, 1 / 3], "prevalence_2": [1 / 3, 0.0]})
    pd.testing.assert_frame_equal(p.parameters, expected)
    t = p.trial(0)
    assert np.bincount(t.train.labels).tolist() == [2, 3, 5]
    thirds = shift.PriorShift(X, y, train_prevalences=[[1 / 3] * 3], test_prevalences=[[1 / 3] * 3], train_size=10,
                              test_size=3, n_samples=1, repeats=1).parameters
    assert thirds["p_L"].item() == thirds["p_U"].item() == (0.333333,) * 3  # 6 decimals
    assert [np.bincount(t.test.labels(k), minlength=3).tolist() for k in (0, 1)] == [[1, 1, 1], [2, 1, 0]]


def test_prior_shift_draws_follow_the_seeds():
    X, y = _tiny_binary()
    kw = dict(train_prevalences=[0.5], test_prevalences=[0.5], train_size=8, test_size=10, n_samples=3, repeats=3)
    a, b, c = (shift.PriorShift(X, y, random_state=s, **kw) for s in (3, 3, 4))
    for t in range(3):
        assert np.array_equal(a.trial(t).train_index, b.trial(t).train_index)
        assert all(np.array_equal(i, j) for i, j in zip(a.trial(t).test.indices, b.trial(t).test.indices))
        assert not np.array_equal(a.trial(t).train_index, c.trial(t).train_index)
    # every trial and every sample of a trial has its own draw, even under the same condition
    assert not np.array_equal(a.trial(0).train_index, a.trial(1).train_index)
    idx = a.trial(0).test.indices
    assert not np.array_equal(idx[0], idx[1]) and not np.array_equal(idx[1], idx[2])
    # the classes are shuffled together, not drawn one block after the other
    assert not all(np.array_equal(np.sort(lab), lab) for lab in (a.trial(0).test.labels(k) for k in range(3)))
    # seeded uniform draws: the training grid from random_state, the test grid from random_state + 1
    d = shift.PriorShift(X, y, n_train_draws=2, n_test_draws=3, train_size=8, test_size=10, n_samples=1, repeats=1,
                         random_state=7)
    np.testing.assert_allclose(d.train_prevalences_, shift.dirichlet_prevalences(2, 2, seed=7, min_prevalence=0.02))
    np.testing.assert_allclose(d.test_prevalences_, shift.dirichlet_prevalences(2, 3, seed=8))
    top = shift.PriorShift(X, y, n_test_draws=2, train_size=50, test_size=10, n_samples=1, repeats=1,
                           random_state=2**32 - 1)
    np.testing.assert_allclose(top.test_prevalences_, shift.dirichlet_prevalences(2, 2, seed=0))  # wraps around
    np.testing.assert_allclose(top.train_prevalences_[:, 1], shift.PAPER_TRAIN_PREVALENCES)


_PPS = dict(train_prevalences=[0.5], test_prevalences=[0.5], train_size=8, test_size=10, n_samples=1, repeats=1)


@pytest.mark.parametrize("kw, err, msg", [
    (dict(train_size=0), ValueError, "train_size must be >= 1, got 0"),
    (dict(test_size=0), ValueError, "test_size must be >= 1, got 0"),
    (dict(n_samples=0), ValueError, "n_samples must be >= 1, got 0"),
    (dict(repeats=0), ValueError, "repeats must be >= 1, got 0"),
    (dict(random_state=1.5), TypeError, "random_state must be an int"),
    (dict(train_prop=1.5), ValueError, "train_prop must be in (0.0, 1.0), got 1.5"),
    (dict(replace=1), TypeError, "replace must be True or False, got 1"),
    (dict(return_type="tuple"), ValueError,
     "return_type must be one of ['sample_prev', 'labelled_collection', 'index'], got 'tuple'"),
    (dict(train_prevalences=[0.05]), ValueError, "train_prevalences: [0.95, 0.05] gives class 1 no item in a training "
     "sample of 8, and a classifier cannot learn a missing class; use values >= 1/train_size (the paper uses 0.02 for 0)"),
    (dict(train_prevalences=[0.5, 0.96]), ValueError, "train_prevalences: [0.04, 0.96] gives class 0 no item"),
    (dict(train_prevalences=[0.00001]), ValueError, "train_prevalences: [1.0, 0.0] gives class 1 no item"),  # 4 decimals
    (dict(test_prevalences=1), TypeError, "test_prevalences must be a sequence of prevalences (a grid), got the bare "
     "number 1, which could mean a prevalence or a number of draws: write test_prevalences=[1] for that prevalence, "
     "or n_test_draws=1 for that many random draws on the simplex"),
    (dict(train_prevalences=0.5), TypeError, "write train_prevalences=[0.5] for that prevalence, or n_train_draws=0.5"),
    (dict(test_prevalences="0.5"), TypeError, "test_prevalences must be numbers, got a string"),
    (dict(train_prevalences=[0.5], n_train_draws=2), ValueError, "give either train_prevalences (a grid of "
     "prevalences) or n_train_draws (that many random draws on the simplex), not both"),
    (dict(train_prevalences=None, n_train_draws=0), ValueError, "n_train_draws must be >= 1, got 0"),
    (dict(test_prevalences=[[0.5, 0.5, 0.0]]), ValueError,
     "test_prevalences must be a (k, 2) array of prevalence vectors, got shape (1, 3)"),
    (dict(test_prevalences=[[0.5, 0.6]]), ValueError,
     "test_prevalences rows must be prevalence vectors (values in [0, 1] summing to 1)"),
    (dict(test_prevalences=[[1.5, -0.5]]), ValueError, "test_prevalences rows must be prevalence vectors"),
    (dict(test_prevalences=[[np.nan, 1.0]]), ValueError, "test_prevalences rows must be prevalence vectors"),
    (dict(test_size=5, test_prevalences=[0.5, 1.0], replace=False), ValueError,
     f"test_prevalences: p_U=1.0 needs 5 items of class 1, but the pool has 4; {_FIX}"),
    (dict(train_size=14, test_size=4, replace=False), ValueError,
     f"train_prevalences: p_L=0.5 needs 7 items of class 0, but the pool has 6; {_FIX}"),
])
def test_prior_shift_errors_name_the_argument(kw, err, msg):
    X, y = _tiny_binary()
    with pytest.raises(err, match=re.escape(msg)):
        shift.PriorShift(X, y, **(_PPS | kw))


def test_prior_shift_label_and_grid_errors():
    X, y = _tiny_binary()
    X3, y3 = np.arange(30, dtype=float)[:, None], np.repeat([0, 1, 2], 10)
    kw = dict(train_size=8, test_size=10, n_samples=1, repeats=1)
    with pytest.raises(ValueError, match=re.escape("y must contain every class 0..2 (at least 2 classes), got counts "
                                                   "[10, 0, 20]")):
        shift.PriorShift(X3, np.repeat([0, 2, 2], 10), **kw)
    with pytest.raises(ValueError, match=re.escape("y must contain every class 0..0 (at least 2 classes), got counts "
                                                   "[20]")):
        shift.PriorShift(X, np.zeros(20, dtype=int), **kw)
    with pytest.raises(ValueError, match=re.escape("train_prevalences must be given for 3 classes: a (k, 3) array of "
                                                   "prevalence vectors, or n_train_draws=k for k seeded uniform draws "
                                                   "on the simplex")):
        shift.PriorShift(X3, y3, **kw)
    with pytest.raises(TypeError, match=re.escape("write test_prevalences=[[...3 values...]] for that prevalence")):
        shift.PriorShift(X3, y3, train_prevalences=[[0.2, 0.3, 0.5]], test_prevalences=1, **kw)
    with pytest.raises(ValueError, match=re.escape("test_prevalences must be a (k, 3) array of prevalence vectors, got "
                                                   "shape (0, 3)")):
        shift.PriorShift(X3, y3, train_prevalences=[[0.2, 0.3, 0.5]], test_prevalences=np.zeros((0, 3)), **kw)
    with pytest.raises(ValueError, match=re.escape("every (label, group) combination needs at least 2 items to be "
                                                   "split into a training and a test pool; the smallest has 1")):
        shift.PriorShift(np.arange(5.0)[:, None], [0, 0, 1, 1, 2], train_prevalences=[[0.4, 0.4, 0.2]],
                         test_prevalences=[[0.4, 0.4, 0.2]], **kw)
    p = shift.PriorShift(X, y, **(_PPS | dict(repeats=2)))
    for bad in (-1, 2, True, 1.0):
        with pytest.raises(ValueError, match=re.escape(f"number must be an int in [0, 1], got {bad!r}")):
            p.trial(bad)
    assert p.trial(np.int64(1)).number == 1 and p.n_trials == 2


def test_prior_shift_pools_are_the_stratified_split():
    from sklearn.model_selection import train_test_split
    X, y = _tiny_binary()
    p = shift.PriorShift(X, y, **(_PPS | dict(random_state=9)))
    tr, te = train_test_split(np.arange(20), train_size=0.6, stratify=y, random_state=9)
    assert np.array_equal(p.train_pool_, np.sort(tr)) and np.array_equal(p.test_pool_, np.sort(te))
    half = shift.PriorShift(X, y, **(_PPS | dict(train_prop=0.3)))
    assert np.bincount(y[half.train_pool_]).tolist() == [3, 3] and np.bincount(y[half.test_pool_]).tolist() == [7, 7]
    assert not np.array_equal(p.train_pool_, shift.PriorShift(X, y, **(_PPS | dict(random_state=10))).train_pool_)


def test_trial_holds_the_training_sample_and_the_test_protocol():
    X, y = _tiny_binary()
    p = shift.PriorShift(X, y, **(_PPS | dict(test_prevalences=[0.2, 0.8], n_samples=2, random_state=4)))
    t = p.trial(0)
    assert t.number == 0 and isinstance(t.number, int) and t.params == {"repeat": 0, "p_L": 0.5}
    assert np.array_equal(t.train.instances.ravel(), X[t.train_index].ravel())
    assert t.train.classes_.tolist() == [0, 1]
    test = t.test
    assert (test.random_state, test.sample_size, test.ordinal, test.cuts) == (4, 10, None, None)
    assert np.array_equal(test.data.instances.ravel(), X[p.test_pool_].ravel())
    assert np.array_equal(test.data.labels, y[p.test_pool_]) and test.data.classes_.tolist() == [0, 1]
    assert test.parameters.index.tolist() == [0, 1, 2, 3]
    assert test.total() == 4 and p.total() == 4
    # QuaPy's default return type: (items, prevalence vector) per sample
    for (Xs, prev), idx, row in zip(test(), test.indices, test.parameters.itertuples()):
        assert np.array_equal(Xs.ravel(), X[p.test_pool_][idx].ravel())
        np.testing.assert_allclose(prev, [1 - row.prevalence, row.prevalence])
    index = shift.PriorShift(X, y, **(_PPS | dict(n_samples=2, random_state=4, return_type="index"))).trial(0).test
    assert [(i.tolist(), c) for i, c in index()] == [(i.tolist(), None) for i in index.indices]
    # concept shift: the test protocol carries the test pool's levels and each sample's cut
    Xc, levels = _tiny_levels()
    c = shift.ConceptShift(Xc, levels, train_cuts=[2.5], test_cuts=[1.5, 3.5], train_size=10, test_size=5, n_samples=2,
                           repeats=1)
    ct = c.trial(0)
    assert np.array_equal(ct.test.ordinal, levels[c.test_pool_]) and ct.test.cuts == [1.5, 1.5, 3.5, 3.5]
    assert ct.train.classes_.tolist() == ct.test.data.classes_.tolist() == [0, 1]
    one = shift.ConceptShift(Xc, levels, train_cuts=[2.5], test_cuts=[2.5], train_size=1, test_size=1, n_samples=1,
                             repeats=1).trial(0)
    assert one.train.classes_.tolist() == [0, 1] and len(one.train.prevalence()) == 2  # one item, both classes


def test_without_replacement_every_training_condition_is_checked_at_once():
    X, y = _tiny_binary()
    with pytest.raises(ValueError, match=re.escape(f"train_prevalences: p_L=0.1 needs 11 items of class 0, but the "
                                                   f"pool has 6; {_FIX}")):
        shift.PriorShift(X, y, **(_PPS | dict(train_prevalences=[0.5, 0.1], train_size=12, test_size=4,
                                              replace=False)))
    ok = shift.PriorShift(X, y, **(_PPS | dict(train_size=12, test_size=8, replace=False)))
    assert sorted(ok.trial(0).train_index.tolist()) == ok.train_pool_.tolist()  # the whole pool, once each


@pytest.mark.parametrize("make, err, msg", [
    (lambda X, y, g: shift.PriorShift(X.ravel(), y), ValueError, "^X must be a 2-d array of items x features"),
    (lambda X, y, g: shift.GlobalCovariateShift("X", y, g), TypeError, "^X must be a 2-d array of items x features"),
    (lambda X, y, g: shift.ConceptShift(X.ravel(), y + 1), ValueError, "^X must be a 2-d array of items x features"),
    (lambda X, y, g: shift.GlobalCovariateShift(X, y, g, train_alphas=[[0.5]]), ValueError,
     "train_alphas must be 1-d, got shape (1, 1)"),
    (lambda X, y, g: shift.GlobalCovariateShift(X, y, g, test_alphas=[np.nan]), ValueError,
     "test_alphas contains NaN or infinite values"),
    (lambda X, y, g: shift.GlobalCovariateShift(X, y, g, test_alphas=b"0.5"), TypeError,
     "test_alphas must be a sequence of numbers, got a string"),
])
def test_features_and_grids_errors_name_the_argument(make, err, msg):
    X, y, g = _tiny_grouped()
    with pytest.raises(err, match=("^" if msg[0] == "^" else "") + re.escape(msg.lstrip("^"))):
        make(X, y, g)


def test_a_bare_alpha_is_a_grid_of_one():
    X, y, g = _tiny_grouped()
    p = shift.GlobalCovariateShift(X, y, g, train_prevalences=0.5, test_prevalences=0.5, train_alphas=0.5,
                                   test_alphas=1.0, train_size=8, test_size=10, n_samples=1, repeats=1)
    assert p.train_alphas_.tolist() == [0.5] and p.test_alphas_.tolist() == [1.0] and p.total() == 1


def test_prior_shift_grids_as_arrays():
    X, y = _tiny_binary()
    assert shift.PriorShift(X, y).test_prevalences_[:, 1].tolist() == list(shift.PAPER_TEST_PREVALENCES)
    kw = dict(train_size=8, test_size=10, n_samples=1, repeats=1)
    # binary grids may also be (k, 2) arrays of prevalence vectors
    two = shift.PriorShift(X, y, train_prevalences=[[0.5, 0.5]], test_prevalences=[[0.3, 0.7]], **kw)
    assert two.parameters[["p_L", "p_U", "prevalence"]].values.tolist() == [[0.5, 0.7, 0.7]]
    X3, y3 = np.arange(30, dtype=float)[:, None], np.repeat([0, 1, 2], 10)
    ints = shift.PriorShift(X3, y3, train_prevalences=[[0.2, 0.3, 0.5]], test_prevalences=[[1, 0, 0]], **kw)
    assert ints.test_prevalences_.dtype == np.float64 and all(type(v) is float for v in ints.parameters["p_U"][0])
    # rows summing to 1 within 1e-6 (plus numpy's relative 1e-5) are prevalence vectors
    near = shift.PriorShift(X3, y3, train_prevalences=[[0.2, 0.3, 0.5]], test_prevalences=[[0.2, 0.3, 0.5 + 1.05e-5]],
                            **kw)
    assert near.total() == 1
    with pytest.raises(ValueError, match=re.escape("test_prevalences must be a (k, 3) array of prevalence vectors, got "
                                                   "shape (3,)")):
        shift.PriorShift(X3, y3, train_prevalences=[[0.2, 0.3, 0.5]], test_prevalences=[0.2, 0.3, 0.5], **kw)
    with pytest.raises(ValueError, match=re.escape("y must have one label per item: expected shape (20,), got (19,)")):
        shift.PriorShift(X, y[:-1], **kw)


def test_trial_draws_come_from_the_stream_seeded_by_random_state_and_trial():
    # the documented seeding: trial t draws from numpy's Generator seeded (random_state, t), the training sample
    # first (each class's items with replacement, then shuffled together), then every test sample in turn
    X, y = _tiny_binary()
    p = shift.PriorShift(X, y, train_prevalences=[0.5], test_prevalences=[0.3], train_size=8, test_size=10,
                         n_samples=2, repeats=2, random_state=11)

    def draw(rng, pool, counts):
        cells = [np.flatnonzero(y[pool] == c) for c in (0, 1)]
        return pool[rng.permutation(np.concatenate([rng.choice(cell, k) for cell, k in zip(cells, counts)]))]

    for t in (0, 1):
        rng = np.random.default_rng([11, t])
        trial = p.trial(t)
        assert np.array_equal(trial.train_index, draw(rng, p.train_pool_, (4, 4)))
        for idx in trial.test.indices:
            assert np.array_equal(p.test_pool_[idx], draw(rng, p.test_pool_, (7, 3)))


def test_a_single_item_pool_cell_is_drawn_with_replacement():
    X, y = np.arange(4, dtype=float)[:, None], np.array([0, 0, 1, 1])  # 2 items per class: 1 per pool
    p = shift.PriorShift(X, y, train_prevalences=[0.5], test_prevalences=[0.4], train_size=6, test_size=5,
                         n_samples=1, repeats=1, train_prop=0.5)
    t = p.trial(0)
    assert sorted(t.train_index.tolist()) == sorted(p.train_pool_.tolist() * 3)
    assert sorted(t.test.indices[0].tolist()) == [0, 0, 0, 1, 1] == sorted(y[p.test_pool_][t.test.indices[0]])
    with pytest.raises(ValueError, match=re.escape(f"train_prevalences: p_L=0.5 needs 3 items of class 0, but the "
                                                   f"pool has 1; {_FIX}")):
        shift.PriorShift(X, y, train_prevalences=[0.5], test_prevalences=[0.4], train_size=6, test_size=5,
                         n_samples=1, repeats=1, train_prop=0.5, replace=False)


def test_local_covariate_refuses_a_test_size_that_gives_empty_samples():
    # test_size 1: N'/6, N'/3 and N'/6 all round to 0 (trial() and parameters would divide by zero); 2 gives N'/3 = 1
    X, y, g = _tiny_grouped()
    with pytest.raises(ValueError, match="^" + re.escape("test_size must be at least 2 for local covariate shift: at 1, "
                                                         "a test sample's nominal cells N'/6, N'/3 and N'/6 all round "
                                                         "to 0 items, and so would the sample") + "$"):
        shift.LocalCovariateShift(X, y, g, train_size=12, test_size=1, n_samples=1, repeats=1)
    fam = shift.LocalCovariateShift(X, y, g, train_size=12, test_size=2, n_samples=1, repeats=1)
    assert (fam.parameters["size"] > 0).all()


def test_shift_samples_default_to_quapys_sample_prev():
    from quapy.data import LabelledCollection
    pool = LabelledCollection(np.arange(6, dtype=float)[:, None], [0, 1, 0, 1, 0, 1], classes=[0, 1])
    s = shift.ShiftSamples(pool, [np.array([0, 1, 3]), np.array([2])], pd.DataFrame({"size": [3, 1]}), 5)
    (X0, p0), (X1, p1) = list(s())
    assert X0.ravel().tolist() == [0.0, 1.0, 3.0] and p0.tolist() == pytest.approx([1 / 3, 2 / 3])
    assert X1.ravel().tolist() == [2.0] and p1.tolist() == [1.0, 0.0] and s.random_state == 5

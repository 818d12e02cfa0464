"""Tests of capshift.shift: the four protocol families of the dataset-shift paper (DMKD 2024, Algorithms 1-4),
their exactness, reproducibility and errors, and the quantifiers' behaviour under each shift on synthetic data."""
import math

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

"""Tests of capshift.shift_experiments: the dataset-shift paper's quantifiers as built (DMKD 2024, Sect. 3.3 and
5.2), its model-selection settings reaching QuaPy's grid search, the tidy frames of both experiments traced value by
value on small protocols (a stand-in quantifier whose estimate is a known function of the sample, Naive whose
prediction is h's accuracy on V), the seeds, and the errors. The behaviour of the real quantifiers under each shift
is in tests/test_shift.py."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import quapy as qp
from quapy.method.aggregative import ACC, CC, EMQ, PACC, PCC, DyS
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression

from capshift import evaluation, registry, shift, shift_experiments


@pytest.fixture(scope="module")
def binary_pool():
    X, levels, _ = shift.gaussian_shift_data(n_per_cell=60, seed=0)
    keep, y = shift.binarise(levels, 3)
    return X[keep], y


def _pps(pool, **kw):
    X, y = pool
    args = dict(train_prevalences=[0.5], test_prevalences=[0.2, 0.8], train_size=80, test_size=20, n_samples=2,
                repeats=2, random_state=3) | kw
    return shift.PriorShift(X, y, **args)


# ------------------------------------------------------------------------------------------------ the quantifiers
@pytest.mark.parametrize("name, cls", [("CC", CC), ("ACC", ACC), ("PCC", PCC), ("PACC", PACC), ("DyS", DyS),
                                       ("SLD", EMQ)])
def test_the_papers_quantifiers_on_logistic_regression(name, cls):
    q = shift_experiments.make_shift_quantifier(name, random_state=7)
    assert type(q) is cls
    lr = q.classifier.estimator if name == "SLD" else q.classifier
    assert type(lr) is LogisticRegression
    assert lr.get_params() == LogisticRegression(max_iter=1000, random_state=7).get_params()
    if name in ("ACC", "PACC", "DyS"):  # tpr/fpr (or the validation histograms) by 5-fold cross-validation
        assert q.val_split == 5
    if name == "DyS":  # Maletzke et al.'s best setting
        assert (q.n_bins, q.divergence) == (10, "topsoe")
    if name == "SLD":  # Platt scaling, calibration only for SLD
        assert type(q.classifier) is CalibratedClassifierCV
        assert (q.classifier.method, q.classifier.cv) == ("sigmoid", 5)
    assert shift_experiments.SHIFT_QUANTIFIERS == ("CC", "ACC", "PCC", "PACC", "DyS", "SLD")


def test_the_quantifiers_default_seed_is_0():
    for name in ("CC", "SLD"):
        q = shift_experiments.make_shift_quantifier(name)
        lr = q.classifier.estimator if name == "SLD" else q.classifier
        assert lr.random_state == 0


def test_unknown_quantifier_names_the_choices():
    with pytest.raises(ValueError, match=r"^unknown quantifier 'EMQ'; choose one of \['CC', 'ACC', 'PCC', 'PACC', "
                                         r"'DyS', 'SLD'\]$"):
        shift_experiments.make_shift_quantifier("EMQ")


def test_model_selection_uses_the_papers_settings(binary_pool, monkeypatch):
    """Sect. 5.2: a stratified 40% held-out part, APP with 11 prevalences and 5 repeats at the test sample size (at
    most the held-out part's), MAE, refit; the grid under the classifier's (or the calibrated one's) prefix."""
    seen = {}

    class Search:
        def __init__(self, model, param_grid, protocol, error, refit):
            seen.update(model=model, grid=param_grid, protocol=protocol, error=error, refit=refit)

        def fit(self, X, y):
            seen["fit_size"] = len(y)
            return self

        def best_model(self):
            return "best"

    monkeypatch.setattr(qp.model_selection, "GridSearchQ", Search)
    train = _pps(binary_pool).trial(0).train  # 80 items
    for name, prefix in (("PACC", "classifier__"), ("SLD", "classifier__estimator__")):
        assert shift_experiments._fit_shift_quantifier(name, train, 4, True, 1000) == "best"
        assert type(seen["model"]) is type(shift_experiments.make_shift_quantifier(name))
        assert seen["model"].get_params()[prefix + "random_state"] == 4
        assert seen["grid"] == {prefix + "C": [0.01, 0.1, 1, 10, 100, 1000],
                                prefix + "class_weight": ["balanced", None]}
        assert (seen["error"], seen["refit"], seen["fit_size"]) == ("mae", True, 48)
        app = seen["protocol"]
        assert (app.sample_size, app.n_prevalences, app.repeats, app.random_state) == (32, 11, 5, 4)
        assert len(app.data) == 32 and app.data.prevalence()[1] == pytest.approx(0.5)
    shift_experiments._fit_shift_quantifier("CC", train, 4, True, 10)
    assert seen["protocol"].sample_size == 10  # the test samples' size when it fits in the held-out part
    held_out = seen["protocol"].data.instances.copy()  # the seed draws the held-out part: same seed, same part
    shift_experiments._fit_shift_quantifier("CC", train, 4, True, 10)
    assert np.array_equal(seen["protocol"].data.instances, held_out)
    shift_experiments._fit_shift_quantifier("CC", train, 5, True, 10)
    assert not np.array_equal(np.sort(seen["protocol"].data.instances, axis=0), np.sort(held_out, axis=0))


def test_without_model_selection_the_quantifier_is_fitted_once_on_the_training_sample(binary_pool):
    train = _pps(binary_pool).trial(0).train
    q = shift_experiments._fit_shift_quantifier("CC", train, 2, False, 20)
    ref = LogisticRegression(max_iter=1000, random_state=2).fit(*train.Xy)
    assert np.array_equal(q.classifier.coef_, ref.coef_)


# ------------------------------------------------------------------------------------------------ the quantifiers' frame
class _Halfway:
    """A stand-in quantifier: classify returns the item's true label (the pool is looked up by its row), aggregate
    returns 0.25 + 0.5 * the sample's positive prevalence, so that each row's estimate and AE is known."""

    def __init__(self, X, y):
        self.lookup = {x.tobytes(): label for x, label in zip(X, y)}

    def fit(self, *data):
        return self

    def classify(self, X):
        return np.array([self.lookup[x.tobytes()] for x in X])

    def aggregate(self, labels):
        p = 0.25 + 0.5 * labels.mean()
        return np.array([1 - p, p])


def test_quantifier_rows_trace_each_sample(binary_pool, monkeypatch):
    X, y = binary_pool
    made = []
    monkeypatch.setattr(shift_experiments, "make_shift_quantifier",
                        lambda name, random_state=0: made.append((name, random_state)) or _Halfway(X, y))
    p = _pps(binary_pool)
    r = shift_experiments.run_shift_quantifiers(p, quantifiers=("CC", "PACC"))
    params = pd.concat([p.trial(t).test.parameters for t in range(p.n_trials)], ignore_index=True)
    assert list(r.columns) == ["method"] + list(params.columns) + ["true", "estimate", "ae", "fit_seconds"]
    assert len(r) == 2 * len(params) == 2 * p.total() and r.index.equals(pd.RangeIndex(len(r)))
    # trials in order, each trial's quantifiers in the order asked, each block the trial's samples in order
    per_trial = len(p.trial(0).test.parameters)
    assert r["method"].tolist()[:2 * per_trial] == ["CC"] * per_trial + ["PACC"] * per_trial
    for name in ("CC", "PACC"):
        rows = r[r["method"] == name].reset_index(drop=True)
        pd.testing.assert_frame_equal(rows[params.columns], params)
        assert np.allclose(rows["true"], params["prevalence"])  # the sample's positive prevalence
        assert np.allclose(rows["estimate"], 0.25 + 0.5 * params["prevalence"])
        assert np.allclose(rows["ae"], np.abs(0.25 - 0.5 * params["prevalence"]))
    # two validations of the names, then one fit per (trial, quantifier), seeded by the protocol
    assert made[:2] == [("CC", 0), ("PACC", 0)] and made[2:] == [("CC", 3), ("PACC", 3)] * p.n_trials


def test_a_single_quantifier_name_is_one_quantifier(binary_pool, monkeypatch):
    X, y = binary_pool
    monkeypatch.setattr(shift_experiments, "make_shift_quantifier", lambda name, random_state=0: _Halfway(X, y))
    r = shift_experiments.run_shift_quantifiers(_pps(binary_pool, test_prevalences=[0.5]), quantifiers="PACC")
    assert r["method"].unique().tolist() == ["PACC"]


def test_quantifier_experiment_errors(binary_pool):
    with pytest.raises(ValueError, match="^unknown quantifier 'XX'"):
        shift_experiments.run_shift_quantifiers(_pps(binary_pool), quantifiers=("CC", "XX"))
    multi = _pps(binary_pool)
    multi.n_classes_ = 3
    with pytest.raises(ValueError, match="^run_shift_quantifiers runs the paper's binary quantifiers: pass a binary "
                                         "protocol$"):
        shift_experiments.run_shift_quantifiers(multi)


# ------------------------------------------------------------------------------------------------ the CAP frame
def test_cap_rows_trace_each_sample(binary_pool):
    """Naive predicts h's accuracy on V; the true value is h's accuracy on the sample under the test labels; h and
    V are the trial's split by the protocol's seed and ``val_prop``. ATC, which estimates accuracy only, is left
    out of an F1 run."""
    p = _pps(binary_pool)
    r = shift_experiments.run_shift_cap(p, methods=("Naive", "ATC"), val_prop=0.4)
    f1 = shift_experiments.run_shift_cap(p, methods=("ATC", "Naive"), measure="f1", val_prop=0.4)
    assert r.index.equals(pd.RangeIndex(len(r)))
    assert set(r["method"]) == {"Naive", "ATC"} and set(f1["method"]) == {"Naive"}
    params = pd.concat([p.trial(t).test.parameters for t in range(p.n_trials)], ignore_index=True)
    assert list(r.columns) == ["method"] + list(params.columns) + ["true", "predicted", "ae", "seconds"]
    naive = r[r["method"] == "Naive"].reset_index(drop=True)
    pd.testing.assert_frame_equal(naive[params.columns], params)
    true, predicted = [], []
    for t in range(p.n_trials):
        split, idx, labels = evaluation.trial_split(p.trial(t), 0.4, 3, "PriorShift")
        assert len(split.y_V) == 32  # 40% of the 80 training items
        h = evaluation.train_classifier("lr", 3, split.X_L, split.y_L)
        predicted += [np.mean(h.predict(split.X_V) == split.y_V)] * len(idx)
        true += [np.mean(h.predict(split.X_U[i]) == lab) for i, lab in zip(idx, labels)]
    assert np.allclose(naive["true"], true) and np.allclose(naive["predicted"], predicted)
    assert np.allclose(naive["ae"], np.abs(np.array(predicted) - true))
    assert not np.allclose(r.loc[r["method"] == "ATC", "predicted"], predicted)  # ATC reads the sample


def _hand_run(trial, classifier, seed, val_prop=0.5):
    """The trial's split, h and samples as run_shift_cap makes them (its documented steps, written out)."""
    split, idx, labels = evaluation.trial_split(trial, val_prop, seed, "trial")
    h = evaluation.train_classifier(classifier, seed, split.X_L, split.y_L)
    return split, idx, labels, h


def test_cap_experiment_seeds_reach_the_classifier_and_the_methods(binary_pool):
    """The protocol's seed trains h (an MLP: its initial weights are drawn) and seeds the method (DoC draws its
    validation samples): DoC's predictions are those of the hand run with that seed in both places, and differ
    when either seed differs."""
    p = _pps(binary_pool, repeats=1)
    doc = shift_experiments.run_shift_cap(p, methods="DoC", classifier="mlp")["predicted"]

    def hand(h_seed, method_seed):
        split, idx, labels, h = _hand_run(p.trial(0), "mlp", h_seed)
        est = registry.make_method("DoC", h, random_state=method_seed).fit(split.X_V, split.y_V)
        return [est.predict(split.X_U[i]) for i in idx]

    assert np.allclose(doc, hand(3, 3))
    assert not np.allclose(doc, hand(4, 3)) and not np.allclose(doc, hand(3, 4))


def test_cap_experiment_scores_against_the_test_concept(binary_pool):
    """Under concept shift the samples' labels are those of the test cut, not the pool's stored labels."""
    X, levels, _ = shift.gaussian_shift_data(n_per_cell=40, seed=1)
    p = shift.ConceptShift(X, levels, train_cuts=[2.5], test_cuts=[1.5, 3.5], train_size=80, test_size=20,
                           n_samples=1, repeats=1, random_state=3)
    r = shift_experiments.run_shift_cap(p, methods="Naive")
    split, idx, labels, h = _hand_run(p.trial(0), "lr", 3)
    true = [np.mean(h.predict(split.X_U[i]) == lab) for i, lab in zip(idx, labels)]
    stored = [np.mean(h.predict(split.X_U[i]) == split.y_U[i]) for i in idx]
    assert np.allclose(r["true"], true) and not np.allclose(true, stored)


def test_cap_experiment_seed_comes_from_the_protocol(binary_pool):
    a = shift_experiments.run_shift_cap(_pps(binary_pool), methods="Naive")
    b = shift_experiments.run_shift_cap(_pps(binary_pool, random_state=4), methods="Naive")
    assert a["method"].unique().tolist() == ["Naive"]
    assert not np.allclose(a["predicted"], b["predicted"])
    pd.testing.assert_frame_equal(a.drop(columns="seconds"),
                                  shift_experiments.run_shift_cap(_pps(binary_pool), methods="Naive")
                                  .drop(columns="seconds"))


@pytest.mark.parametrize("kw, err, message", [
    (dict(methods=("Naive", "LEAPP")), ValueError, "LEAPP"),
    (dict(classifier="svm2"), ValueError, "svm2"),
    (dict(measure="precision"), ValueError, "^unknown measure 'precision'"),
    (dict(val_prop=1.5), ValueError, r"^val_prop must be in \(0.0, 1.0\), got 1.5$"),
])
def test_cap_experiment_errors_name_the_argument(binary_pool, kw, err, message):
    with pytest.raises(err, match=message):
        shift_experiments.run_shift_cap(_pps(binary_pool), **kw)


def test_cap_experiment_refuses_a_multiclass_protocol(binary_pool):
    multi = _pps(binary_pool)
    multi.n_classes_ = 3
    with pytest.raises(ValueError, match="^run_shift_cap expects a binary protocol$"):
        shift_experiments.run_shift_cap(multi)


# ------------------------------------------------------------------------------------------------ times and progress
def _clock(monkeypatch):
    """The module's clock ticks one second per reading."""
    ticks = iter(range(10**6))
    monkeypatch.setattr(shift_experiments, "time", SimpleNamespace(perf_counter=lambda: float(next(ticks))))


def test_times_are_the_fit_and_the_per_sample_cost(binary_pool, monkeypatch):
    X, y = binary_pool
    _clock(monkeypatch)
    monkeypatch.setattr(shift_experiments, "make_shift_quantifier", lambda name, random_state=0: _Halfway(X, y))
    p = _pps(binary_pool)
    q = shift_experiments.run_shift_quantifiers(p, quantifiers=("CC", "ACC"))
    assert (q["fit_seconds"] == 1.0).all()  # one reading before the fit, one after it
    cap = shift_experiments.run_shift_cap(p, methods="Naive")
    k = len(p.trial(0).test.parameters)  # samples per trial
    assert k == 4 and np.allclose(cap["seconds"], 1.0 / k)  # the method's time spread over the trial's samples


def test_quantifier_experiment_passes_its_settings_to_each_fit(binary_pool, monkeypatch):
    X, y = binary_pool
    calls = []

    def fit(name, train, seed, model_selection, sample_size):
        calls.append((name, len(train), seed, model_selection, sample_size))
        return _Halfway(X, y)

    monkeypatch.setattr(shift_experiments, "_fit_shift_quantifier", fit)
    p = _pps(binary_pool)
    shift_experiments.run_shift_quantifiers(p, quantifiers=("SLD",), model_selection=True)
    assert calls == [("SLD", 80, 3, True, 20)] * p.n_trials


def test_progress_bars_only_when_asked(binary_pool, monkeypatch, capsys):
    X, y = binary_pool
    monkeypatch.setattr(shift_experiments, "make_shift_quantifier", lambda name, random_state=0: _Halfway(X, y))
    p = _pps(binary_pool, test_prevalences=[0.5])
    shift_experiments.run_shift_quantifiers(p, quantifiers="CC")
    shift_experiments.run_shift_cap(p, methods="Naive")
    assert capsys.readouterr().err == ""
    shift_experiments.run_shift_quantifiers(p, quantifiers="CC", progress=True)
    assert "PriorShift" in capsys.readouterr().err  # the bar is named after the family
    shift_experiments.run_shift_cap(p, methods="Naive", progress=True)
    assert "PriorShift" in capsys.readouterr().err

"""CAP baselines: Naive, ATC, DoC, DS, NN, CBPE, COT/Q-COT, RCA/RCA* (capshift.baselines)."""
import copy
import sys
import time
import warnings
from pathlib import Path

import abstention.calibration
import numpy as np
import pytest
import scipy.sparse as sp
from abstention.calibration import TempScaling
from quapy.method.aggregative import EMQ
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from capshift import CalibrationWarning, DegenerateClassifierWarning, baselines, datasets, experiment, protocols, registry
from capshift.baselines import (ATC, CBPE, COT, DS, NN, RCA, DoC, Naive, RCAStar, atc_threshold, cbpe_table,
                                cot_accuracy, dispersion_score, max_confidence, nuclear_norm_score)
from capshift.quantifiers import Quantifier
from capshift.tables import accuracy, contingency_table, get_measure, macro_f1

sys.path.insert(0, str(Path(__file__).parent))
from test_calibration import _P_V, _SHIFTED, _scaled_posteriors, _separated  # noqa: E402  (the shared problems)


def test_naive_predicts_validation_table():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)); y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0).astype(int)
    h = LogisticRegression().fit(X[:200], y[:200])
    est = Naive(h).fit(X[200:], y[200:])
    C_V = contingency_table(y[200:], h.predict(X[200:]), 2)
    np.testing.assert_array_equal(est.predict_table(X[:10]), C_V)
    assert est.predict(X[:50]) == pytest.approx(accuracy(C_V))
    np.testing.assert_array_equal(est.predict_table_batch([X[:5], X[5:9]]), [C_V, C_V])
    np.testing.assert_array_equal(est.tables_from_prevalences(np.full((3, 2), 0.5)), [C_V] * 3)
    with pytest.raises(Exception, match="not fitted"):
        Naive(h).predict(X)


# -- a large synthetic 3-class problem ----------------------------------------------------------
def _gaussians(m, rng, prev=(1 / 3, 1 / 3, 1 / 3)):
    y = rng.choice(3, size=m, p=prev)
    centres = np.array([[0.0, 0.0], [1.6, 0.0], [0.8, 1.4]])
    return centres[y] + rng.normal(size=(m, 2)), y


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(1)
    X_L, y_L = _gaussians(2000, rng)
    X_V, y_V = _gaussians(3000, rng)
    X_U, y_U = _gaussians(4000, rng)
    h = LogisticRegression().fit(X_L, y_L)
    return h, X_V, y_V, X_U, y_U


@pytest.mark.parametrize("name", [n for n in registry.names("baseline") if n != "Naive"])
def test_iid_accuracy_estimates_are_close(problem, name):
    # 40 IID test samples of 100 items (the validation-sample size of the regression baselines). The
    # accuracy of one sample has standard error se1 = sqrt(a(1-a)/100) (about 0.046); a method that
    # predicts the expected accuracy has a mean AE of about 0.8 se1, so we require < 1.5 se1, and its
    # mean estimate over the 40 samples must be within 3 standard errors of the pooled accuracy
    # (sqrt(a(1-a)/4000), about 0.007) plus 0.01 for the method's own fitting error on V.
    h, X_V, y_V, X_U, y_U = problem
    est = registry.make_method(name, h, 0).fit(X_V, y_V)
    samples = [np.arange(k * 100, (k + 1) * 100) for k in range(40)]
    true = np.array([np.mean(h.predict(X_U[s]) == y_U[s]) for s in samples])
    pred = est.predict_batch([X_U[s] for s in samples], "accuracy",
                             posteriors=[h.predict_proba(X_U[s]) for s in samples])
    a = true.mean()
    se1, se_all = np.sqrt(a * (1 - a) / 100), np.sqrt(a * (1 - a) / 4000)
    assert np.mean(np.abs(pred - true)) < 1.5 * se1, (name, pred, true)
    assert abs(pred.mean() - a) < 3 * se_all + 0.01, (name, pred.mean(), a)


@pytest.mark.parametrize("name", ["CBPE", "SLD-CBPE", "RCA"])
def test_iid_f1_estimates_of_table_methods_are_close(problem, name):
    # the methods that estimate the whole table get macro-F1 from it: on the same 40 IID samples, the
    # mean AE must stay below 1.5 standard deviations of the true per-sample F1 (a method predicting
    # the expected F1 has about 0.8), and the mean estimate within 3 standard errors of the mean true
    # F1 plus 0.01. (The regression baselines are not held to this: their regressor is trained on UPP
    # samples of V, whose F1 is lower than that of IID samples of the same confidence. Nor is L-CBPE: LasCal's
    # temperature, fitted on 100 items, leans to sharpening, +0.03 on the mean F1 here; see CBPE's docstring.)
    h, X_V, y_V, X_U, y_U = problem
    est = registry.make_method(name, h, 0).fit(X_V, y_V)
    samples = [np.arange(k * 100, (k + 1) * 100) for k in range(40)]
    true = np.array([macro_f1(contingency_table(y_U[s], h.predict(X_U[s]), 3)) for s in samples])
    pred = est.predict_batch([X_U[s] for s in samples], "f1", posteriors=[h.predict_proba(X_U[s]) for s in samples])
    sd = true.std()
    assert np.mean(np.abs(pred - true)) < 1.5 * sd, (name, pred, true)
    assert abs(pred.mean() - true.mean()) < 3 * sd / np.sqrt(40) + 0.01, (name, pred.mean(), true.mean())


def test_atc_threshold_reproduces_validation_accuracy(problem):
    h, X_V, y_V, *_ = problem
    for score in ("maxconf", "neg_entropy"):
        est = ATC(h, score=score).fit(X_V, y_V)
        assert est.predict(X_V) == np.mean(h.predict(X_V) == y_V)  # exact: the scores are distinct
    s = np.array([0.9, 0.6, 0.8, 0.7, 0.55])
    assert atc_threshold(s, np.array([1, 0, 1, 0, 1], bool)) == 0.7
    assert atc_threshold(s, np.zeros(5, bool)) == np.inf


def test_atc_is_accuracy_only(problem):
    h, X_V, y_V, X_U, _ = problem
    est = ATC(h).fit(X_V, y_V)
    assert est.supports("accuracy") and est.supports("acc") and not est.supports("f1")
    with pytest.raises(ValueError, match="only estimates"):
        est.predict(X_U[:50], measure="f1")
    with pytest.raises(ValueError, match="only estimates"):
        ATC(h, measure="f1").fit(X_V, y_V)
    with pytest.raises(ValueError, match="only estimates"):
        COT(h, quantifier=None).fit(X_V, y_V).predict_batch([X_U[:50]], "macro_f1")


def test_nuclear_norm_score_by_hand():
    # one-hot rows spread evenly over both classes: singular values sqrt(2), sqrt(2) -> the maximum, 1
    P = np.array([[1, 0], [0, 1], [1, 0], [0, 1.0]])
    assert nuclear_norm_score(P) == pytest.approx((2 * np.sqrt(2)) / np.sqrt(4 * 2))
    assert nuclear_norm_score(P) == pytest.approx(1.0)
    # uniform rows: rank 1, singular value ||P||_F = sqrt(4 * 0.5) -> sqrt(2) / sqrt(8) = 0.5
    assert nuclear_norm_score(np.full((4, 2), 0.5)) == pytest.approx(0.5)
    # all items one-hot on one class: rank 1, sigma = 2 -> 2 / sqrt(8)
    assert nuclear_norm_score(np.array([[1, 0.0]] * 4)) == pytest.approx(2 / np.sqrt(8))


def test_dispersion_score_by_hand():
    Z = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [4.0, 2.0]])
    y = np.array([0, 0, 1, 1])
    # mu = (1.5, 1); mu_0 = (1, 0), mu_1 = (2, 2); sum m_k ||mu_k - mu||^2 = 2 * 1.25 + 2 * 1.25 = 5; n - 1 = 1
    assert dispersion_score(Z, y, 2) == pytest.approx(np.log(5.0))
    # three classes, one never predicted: same sum, divided by n - 1 = 2
    assert dispersion_score(Z, y, 3) == pytest.approx(np.log(2.5))
    assert np.isfinite(dispersion_score(Z, np.zeros(4, int), 2))  # one predicted class: floored, finite


def test_cbpe_recovers_expected_table_with_calibrated_posteriors():
    rng = np.random.default_rng(3)
    m, n = 200_000, 3
    P = rng.dirichlet([0.7, 0.7, 0.7], size=m)  # posteriors first ...
    y = (P.cumsum(axis=1) > rng.random((m, 1))).argmax(axis=1)  # ... then labels drawn from them
    y_pred = P.argmax(axis=1)
    C_hat = cbpe_table(P, y_pred, n)
    assert C_hat.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(C_hat.sum(axis=0), np.bincount(y_pred, minlength=n) / m)
    # E[C_true] = C_hat: each cell is a mean of m Bernoulli-like terms, standard error <= 0.5 / sqrt(m)
    np.testing.assert_allclose(contingency_table(y, y_pred, n), C_hat, atol=4 * 0.5 / np.sqrt(m))



@pytest.fixture(scope="module")
def german():
    return datasets.load("german", seed=0)


@pytest.mark.parametrize("clf", ["mlp", "rf"])
def test_sld_cbpe_on_german_with_mlp_and_rf(german, clf):
    # issue 18: RF's vote fractions have exact 0s and 1s; BCTS takes log-posteriors, so a test sample with a 0
    # came out of BCTS as NaN rows, SLD iterated to QuaPy's MAX_ITER on them and the table was refused. Now the
    # calibrated posteriors are distributions, the run takes well under a second, and under UPP shift the
    # estimate is closer to h's true accuracy than V's accuracy is (Naive).
    d = german
    h = experiment.make_classifier(clf, 0).fit(d.X_L, d.y_L)
    P_V, P_U = h.predict_proba(d.X_V), h.predict_proba(d.X_U)
    if clf == "rf":
        assert (P_U == 0).any() and (P_U == 1).any()  # the case that failed
    idx = protocols.upp_indices(d.y_U, 100, 200, 0, n_classes=2)
    t0 = time.perf_counter()
    est = CBPE(h).fit(d.X_V, d.y_V)
    cal = [est.calibrate(P_U[i]) for i in idx]
    pred = est.predict_batch([d.X_U[i] for i in idx], "accuracy", posteriors=[P_U[i] for i in idx])
    assert time.perf_counter() - t0 < 30
    assert est.bcts_ and 0 < est.floor_ <= P_V[P_V > 0].min()
    for C in cal:
        assert np.isfinite(C).all() and (C >= 0).all() and (C <= 1).all()
        np.testing.assert_allclose(C.sum(axis=1), 1.0, atol=1e-12)
    true = np.array([np.mean(h.predict(d.X_U[i]) == d.y_U[i]) for i in idx])
    naive = np.mean(h.predict(d.X_V) == d.y_V)
    assert np.isfinite(pred).all()
    assert np.mean(np.abs(pred - true)) < min(0.12, np.mean(np.abs(naive - true))), (clf, pred, true)


def test_sld_cbpe_is_quapys_emq_bcts_on_posteriors_without_zeros(problem):
    # raising exact zeros to floor_ leaves positive posteriors alone: without zeros, the calibrated posteriors
    # are QuaPy's EMQ-BCTS (fitted on the same V) to the last bit
    h, X_V, y_V, X_U, _ = problem
    P_V, P = h.predict_proba(X_V), h.predict_proba(X_U[:100])
    assert (P_V > 0).all() and (P > 0).all()
    emq = EMQ(h, fit_classifier=False, val_split=None, exact_train_prev=False, calib="bcts")
    emq.aggregation_fit(P_V, y_V)
    expected = emq.predict_proba(X_U[:100])
    np.testing.assert_array_equal(CBPE(h).fit(X_V, y_V).calibrate(P), expected / expected.sum(axis=1, keepdims=True))


def test_sld_cbpe_falls_back_to_sld_when_bcts_cannot_be_fitted(problem, monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("ABNORMAL_TERMINATION_IN_LNSRCH")  # how abstention reports a failed L-BFGS-B
    monkeypatch.setattr(abstention.calibration, "do_tempscale_optimization", fail)
    h, X_V, y_V, X_U, _ = problem
    est = CBPE(h).fit(X_V, y_V)
    P = h.predict_proba(X_U[:100])
    assert not est.bcts_
    _, expected = EMQ.EM(h.predict_proba(X_V).mean(axis=0), P)  # SLD on h's posteriors, from their mean on V
    np.testing.assert_allclose(est.calibrate(P), expected, atol=1e-12)


@pytest.mark.parametrize("zeros", [False, True])
def test_cbpe_falls_back_when_h_separates_v(zeros):
    # no monkeypatch: h separates V, abstention's fit fails for every floor (test_calibration), so bcts_ is False,
    # BCTS-CBPE returns h's posteriors and SLD-CBPE is SLD from their mean on V, to the bit
    P_val, y_val = _separated(2, zeros)
    P = np.array([[0.9, 0.1], [0.0, 1.0], [0.45, 0.55]])
    h = _PosteriorStub(np.r_[P_val, P])
    X_val, X = np.arange(len(y_val))[:, None], len(y_val) + np.arange(3)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # abstention's overflow, and CBPE's check that V is miscalibrated
        sld_cbpe = CBPE(h, calibration="sld-bcts").fit(X_val, y_val)
        bcts_cbpe = CBPE(h, calibration="bcts").fit(X_val, y_val)
    half = 0.5 * P_val[P_val > 0].min()
    assert not sld_cbpe.bcts_ and not bcts_cbpe.bcts_ and sld_cbpe.floor_ == bcts_cbpe.floor_ == half
    np.testing.assert_array_equal(bcts_cbpe.calibrate(P), P / P.sum(axis=1, keepdims=True))
    prior = P_val.mean(axis=0) / P_val.mean(axis=0).sum()
    np.testing.assert_array_equal(sld_cbpe.train_prevalence_, prior)
    _, expected = EMQ.EM(prior, P)
    np.testing.assert_array_equal(sld_cbpe.calibrate(P), expected / expected.sum(axis=1, keepdims=True))
    assert np.abs(sld_cbpe.calibrate(P) - P).max() > 0.01  # SLD did move the posteriors
    assert sld_cbpe.predict_batch([X], posteriors=[P])[0] == pytest.approx(
        np.trace(cbpe_table(expected / expected.sum(axis=1, keepdims=True), P.argmax(axis=1), 2)), abs=1e-15)

def test_qcot_with_true_prevalence_on_one_hot_posteriors():
    # one-hot posteriors: COT's cost is the L1 mass h must move between its predicted classes and the
    # labels, so 1 - cost = sum_k min(gamma_k, q_k); it equals the accuracy when every error of a class
    # goes to classes that h over-predicts, as here (class-0 items predicted as 1).
    y = np.array([0] * 50 + [1] * 30 + [2] * 20)
    y_pred = y.copy(); y_pred[:12] = 1
    P = np.eye(3)[y_pred]
    q = np.bincount(y, minlength=3) / 100
    assert cot_accuracy(P, q) == pytest.approx(np.mean(y == y_pred), abs=1e-12)
    # and through the estimator, with the oracle quantifier given the true prevalence
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2)); yy = rng.integers(0, 3, 300)
    h = LogisticRegression().fit(X, yy)
    est = COT(h, quantifier="oracle").fit(X, yy)
    got = est.predict_batch([np.zeros((100, 2))], prevalences=q[None], posteriors=[P])
    assert got[0] == pytest.approx(0.88)
    with pytest.raises(ValueError, match="needs the true prevalence"):
        est.predict_batch([np.zeros((100, 2))], posteriors=[P])
    # plain COT transports to V's label distribution instead
    est = COT(h, quantifier=None).fit(X, yy)
    assert est.predict_batch([np.zeros((100, 2))], posteriors=[P])[0] == pytest.approx(
        cot_accuracy(P, np.bincount(yy, minlength=3) / len(yy)), abs=1e-12)
    # errors that cancel out in the counts are invisible to COT: its estimate is then an upper bound
    y_pred2 = y.copy(); y_pred2[:5] = 1; y_pred2[50:55] = 0
    assert cot_accuracy(np.eye(3)[y_pred2], q) == pytest.approx(1.0)
    assert np.mean(y == y_pred2) == pytest.approx(0.9)


def test_qcot_quantifies_a_batch_at_once_as_sample_by_sample(problem, monkeypatch):
    h, X_V, y_V, X_U, _ = problem
    est = COT(h, quantifier="kdey", random_state=0).fit(X_V[:600], y_V[:600])
    samples = [X_U[:100], X_U[100:250], X_U[250:300]]
    calls = []
    batch = Quantifier.quantify_batch
    monkeypatch.setattr(Quantifier, "quantify_batch", lambda self, *a, **k: calls.append(1) or batch(self, *a, **k))
    got = est.predict_batch(samples)
    assert len(calls) == 1  # one quantification of the whole batch
    per_sample = [cot_accuracy(h.predict_proba(X), est.quantifier_.quantify(X)) for X in samples]
    np.testing.assert_allclose(got, per_sample, atol=1e-10, rtol=0)
    # the same from the estimates given (the experiment runner's shared quantifier), and the checks on them
    post = [h.predict_proba(X) for X in samples]
    q = np.stack([est.quantifier_.quantify(X) for X in samples])
    given = est.measures_from_prevalences(post, q, ["accuracy", "f1"])
    assert list(given) == ["accuracy"]  # f1 unsupported: left out, as predict_measures does
    np.testing.assert_allclose(given["accuracy"], per_sample, atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="est_prev must have shape"):
        est.measures_from_prevalences(post, q[:2])
    with pytest.raises(ValueError, match="fewer than the 3 classes"):
        est.measures_from_prevalences([post[0][:2]], q[:1])
    with pytest.raises(ValueError, match="quantifier=None"):
        COT(h, quantifier=None).fit(X_V, y_V).measures_from_prevalences(post, q)


def test_regression_baselines_use_given_posteriors_and_any_measure(problem):
    h, X_V, y_V, X_U, y_U = problem
    for cls in (DoC, DS, NN):
        est = cls(h, n_val_samples=30, random_state=0).fit(X_V, y_V)
        assert est.val_tables_ == {}  # validation samples are drawn at the size of the test samples
        f1 = est.predict_batch([X_U[:100]], "macro_f1")
        true_f1 = macro_f1(contingency_table(y_U[:100], h.predict(X_U[:100]), 3))
        assert f1.shape == (1,) and abs(f1[0] - true_f1) < 0.25  # (F1 of UPP samples of V is lower than IID's)
        assert est.val_tables_[100].shape == (30, 3, 3) and est.val_scores_[100].shape == (30,)
        # one regressor per (sample size, measure): macro-F1 has its own, not the accuracy one rescaled
        assert (100, get_measure("macro_f1")) in est.regressors_
        assert est.predict_batch([X_U[:100]], "accuracy")[0] != f1[0]
        # the caller's posteriors are used instead of h's: a different matrix changes the estimate
        P_fake = np.tile([0.98, 0.01, 0.01], (100, 1))
        assert est.predict_batch([X_U[:100]], posteriors=[P_fake])[0] != est.predict_batch([X_U[:100]])[0]
    a = DoC(h, random_state=0).fit(X_V, y_V).predict(X_U[:100])
    assert a == DoC(h, random_state=0).fit(X_V, y_V).predict(X_U[:100])  # deterministic given the seed


def test_regression_baselines_fit_one_regressor_per_sample_size(problem):
    h, X_V, y_V, X_U, y_U = problem
    est = DS(h, n_val_samples=30, random_state=0).fit(X_V, y_V)
    both = est.predict_batch([X_U[:100], X_U[100:350]])
    assert sorted(est.val_scores_) == [100, 250]
    # each sample is scored against validation samples of its own size: the same as predicting it alone
    assert both[0] == pytest.approx(est.predict(X_U[:100])) and both[1] == pytest.approx(est.predict(X_U[100:350]))
    # the dispersion score grows with the sample size, so the two regressions differ
    assert not np.allclose(est.val_scores_[100].mean(), est.val_scores_[250].mean())
    fixed = DS(h, n_val_samples=30, val_sample_size=100, random_state=0).fit(X_V, y_V)
    assert fixed.predict(X_U[:100]) == pytest.approx(both[0])  # same seed, same size: same validation samples
    with pytest.raises(ValueError, match="val_sample_size=100"):
        fixed.predict(X_U[:250])


def test_rca_table_and_rca_star(problem):
    h, X_V, y_V, X_U, y_U = problem
    rca = RCA(h).fit(X_V, y_V)
    C = rca.predict_table(X_U[:300])
    # the table is h' on V, so its rows sum to V's true prevalence
    np.testing.assert_allclose(C.sum(axis=1), np.bincount(y_V, minlength=3) / len(y_V))
    # a sample h assigns to one class only: h' is the constant classifier of that class
    P_one = np.tile([0.1, 0.8, 0.1], (50, 1))
    one = rca.predict_measures([X_U[:50]], ["accuracy"], posteriors=[P_one])
    assert one["accuracy"][0] == pytest.approx(np.mean(y_V == 1))
    est = RCAStar(h, n_val_samples=20, random_state=0).fit(X_V, y_V)
    assert est.supports("f1")
    true = np.mean(h.predict(X_U[:100]) == y_U[:100])
    assert abs(est.predict(X_U[:100]) - true) < 0.15
    assert est.predict(X_U[:100], "f1") != est.predict(X_U[:100])  # a regressor per measure


def test_bad_input(problem):
    h, X_V, y_V, X_U, _ = problem
    est = DoC(h, n_val_samples=20, random_state=0).fit(X_V, y_V)
    with pytest.raises(ValueError, match="fewer than the 3 classes"):
        est.predict(X_U[:2])
    bad = np.full((50, 3), 0.5)
    with pytest.raises(ValueError, match="sum to 1"):
        est.predict_batch([X_U[:50]], posteriors=[bad])
    with pytest.raises(ValueError, match="one matrix per sample"):
        est.predict_batch([X_U[:50], X_U[50:100]], posteriors=[h.predict_proba(X_U[:50])])
    svc = SVC().fit(X_V[:300], y_V[:300])  # no predict_proba without probability=True
    for cls in (ATC, DoC, DS, NN, CBPE, COT, RCA, RCAStar):
        with pytest.raises(TypeError, match="predict_proba"):
            cls(svc).fit(X_V, y_V)
    with pytest.raises(ValueError, match="score must be"):
        ATC(h, score="margin").fit(X_V, y_V)
    with pytest.raises(ValueError, match="space must be"):
        DS(h, space="pixels").fit(X_V, y_V)
    with pytest.raises(ValueError, match="val_sample_size"):
        NN(h, val_sample_size=2).fit(X_V, y_V)
    with pytest.raises(TypeError, match="estimates measures directly"):
        ATC(h).fit(X_V, y_V).predict_table(X_U[:50])


def test_methods_registry_names():
    assert {"ATC", "ATC-NE", "DoC", "DS", "NN", "SLD-CBPE", "Q-COT", "COT", "RCA", "RCA*"} <= set(registry.names("baseline"))
    h = LogisticRegression().fit(np.eye(2), [0, 1])
    assert not ATC(h).supports("f1") and CBPE(h).supports("f1") and max_confidence(np.eye(2)).tolist() == [1, 1]


# -- LasCal (L-CBPE) and the CBPE calibration variants ---------------------------------------------
# (the calibration functions themselves, and the scaled-logit problem below, are tested in test_calibration.py)


def test_lcbpe_calibrates_and_estimates_under_shift():
    # L-CBPE end to end on the scaled-logit classifier (c = 2, overconfident): its posteriors are LasCal's
    # temperature scaling (h's decisions unchanged), the sample's calibration error drops, and the accuracy
    # estimate beats plain CBPE's on the overconfident posteriors.
    rng = np.random.default_rng(7)
    P_V, y_V, _ = _scaled_posteriors(3000, _P_V, rng, 2.0)
    h = _PosteriorStub(P_V)
    est = CBPE(h, calibration="lascal").fit(np.arange(3000)[:, None], y_V)
    with pytest.warns(CalibrationWarning, match="calibrated"):  # plain CBPE sees h overconfident on V
        plain = CBPE(h, calibration=None).fit(np.arange(3000)[:, None], y_V)
    errs, errs_plain = [], []
    for _ in range(5):
        P_U, y_U, _ = _scaled_posteriors(1000, _SHIFTED, rng, 2.0)
        T, w = est.lascal(P_U)
        C = est.calibrate(P_U)
        np.testing.assert_allclose(C, baselines.temperature_scale(P_U, T), atol=0, rtol=0)
        assert (C.argmax(axis=1) == P_U.argmax(axis=1)).all()
        assert (baselines.classwise_calibration_error(C, y_U).mean()
                < baselines.classwise_calibration_error(P_U, y_U).mean())
        acc = np.mean(P_U.argmax(axis=1) == y_U)
        X = np.zeros((1000, 1))  # posteriors are passed: X only gives the sample's size
        errs.append(abs(est.predict_batch([X], posteriors=[P_U])[0] - acc))
        errs_plain.append(abs(plain.predict_batch([X], posteriors=[P_U])[0] - acc))
    assert np.mean(errs) < np.mean(errs_plain) / 2, (errs, errs_plain)


class _PosteriorStub(ClassifierMixin, BaseEstimator):
    """A fitted 'classifier' whose posteriors are given: item x (one feature) has the posteriors in row x of P."""

    def __init__(self, P):
        self.P = P
        self.classes_ = np.arange(P.shape[1])
        self.n_features_in_ = 1

    def predict_proba(self, X):
        return self.P[np.asarray(X)[:, 0].astype(int)]

    def predict(self, X):
        return self.predict_proba(X).argmax(axis=1)

    def fit(self, X, y):
        return self


def test_lcbpe_degenerate_cases(problem):
    h, X_V, y_V, X_U, y_U = problem
    est = CBPE(h, calibration="lascal").fit(X_V, y_V)
    # one-hot posteriors (a decision tree's): no temperature changes them, so T = 1 and the table is plain CBPE's
    tree = DecisionTreeClassifier(random_state=0).fit(X_V, y_V)
    with pytest.warns(DegenerateClassifierWarning, match="one-hot"):
        one_hot = CBPE(tree, calibration="lascal").fit(X_U[:2000], y_U[:2000])
    P = tree.predict_proba(X_U[2000:2100])
    assert one_hot.lascal(P)[0] == 1.0 and est.lascal(P)[0] == 1.0  # with V's posteriors one-hot, or not
    np.testing.assert_array_equal(one_hot.calibrate(P), P)
    np.testing.assert_array_equal(one_hot.predict_table_batch([X_U[2000:2100]])[0],
                                  CBPE(tree, calibration=None).fit(X_U[:2000], y_U[:2000]).predict_table_batch(
                                      [X_U[2000:2100]])[0])
    # a class absent from the sample: finite weights >= 0 (the absent class near 0), a finite table summing to 1
    keep = np.flatnonzero(y_U != 2)[:100]
    P = h.predict_proba(X_U[keep])
    T, w = est.lascal(P)
    assert np.isfinite(T) and 0.1 <= T <= 20 and (w >= 0).all() and w[2] < 0.3, (T, w)
    C = est.predict_table_batch([X_U[keep]])[0]
    assert np.isfinite(C).all() and C.sum() == pytest.approx(1.0)


def test_cbpe_variants_compute_what_they_name(problem):
    # None: cbpe_table of h's own posteriors, to the bit; "bcts": BCTS alone; "sld": SLD/EM on h's raw posteriors from
    # their mean on V; "sld-bcts" (SLD-CBPE) is checked against QuaPy's EMQ-BCTS above, to the bit.
    h, X_V, y_V, X_U, _ = problem
    P_V, P = h.predict_proba(X_V), h.predict_proba(X_U[:100])
    plain = CBPE(h, calibration=None).fit(X_V, y_V)
    np.testing.assert_array_equal(plain.calibrate(P), P)
    np.testing.assert_array_equal(plain.predict_table_batch([X_U[:100]])[0], cbpe_table(P, P.argmax(axis=1), 3))
    bcts = TempScaling(bias_positions="all")(P_V, np.eye(3)[y_V], posterior_supplied=True)(P)  # QuaPy's BCTS fit
    np.testing.assert_allclose(CBPE(h, calibration="bcts").fit(X_V, y_V).calibrate(P),
                               bcts / bcts.sum(axis=1, keepdims=True), rtol=0, atol=1e-15)
    _, sld = EMQ.EM(P_V.mean(axis=0), P)
    np.testing.assert_allclose(CBPE(h, calibration="sld").fit(X_V, y_V).calibrate(P), sld, rtol=0, atol=1e-12)


# -- leakage: every CBPE variant sees V and the unlabelled sample only -----------------------------
#: Every calibration variant of CBPE, under the name the test runs it as (registered or temporary).
CBPE_VARIANTS = {"CBPE": None, "CBPE[bcts]": "bcts", "CBPE[sld]": "sld", "SLD-CBPE": "sld-bcts", "L-CBPE": "lascal"}


class _LeakyCBPE(CBPE):
    """A CBPE that (wrongly) reads the true test prevalences the runner passes: the test below must catch it."""

    def _tables(self, samples, post, prevalences):
        tables = super()._tables(samples, post, prevalences)
        if prevalences is None:
            return tables
        rows = tables.sum(axis=2, keepdims=True)
        return tables / np.where(rows > 0, rows, 1.0) * prevalences[:, :, None]


@pytest.fixture(scope="module")
def german_context():
    # the runner's own preparation (h on L, 12 UPP samples of 100 from U, their true tables and prevalences)
    return experiment.prepare("german", "lr", [], "upp", 12, 100, 0)


def _relabelled(ctx, y_U):
    """ctx with U's labels replaced by y_U: the true tables, prevalences and shifts the runner derives from them."""
    new = copy.copy(ctx)
    pred_U = ctx.post_U.argmax(axis=1)
    n = ctx.split.n_classes
    new.true_tables = np.stack([contingency_table(y_U[i], pred_U[i], n) for i in ctx.idx])
    new.true_prev = new.true_tables.sum(axis=2)
    new.shift = np.abs(new.true_prev - np.bincount(ctx.split.y_V, minlength=n) / len(ctx.split.y_V)).sum(axis=1)
    return new


def _runs_with_other_labels(ctx, name, cls, params, monkeypatch):
    """The runner's rows (experiment.method_frame) for a method on ctx and on ctx with U's labels flipped (1 - y)
    and permuted: three frames whose "true" values differ and whose "predicted" values must not."""
    spec = registry.MethodSpec(name, cls, "baseline", params)
    monkeypatch.setitem(registry.METHODS, name, spec)
    y = ctx.split.y_U
    others = [_relabelled(ctx, 1 - y), _relabelled(ctx, np.random.default_rng(0).permutation(y))]
    return [experiment.method_frame(c, name, spec, ["accuracy", "f1"], experiment.DEFAULT_SOLVER)
            for c in [ctx] + others]


@pytest.mark.filterwarnings("ignore::capshift.CalibrationWarning")  # h = LR on german is miscalibrated on V
@pytest.mark.parametrize("name", list(CBPE_VARIANTS))
def test_cbpe_variants_never_see_test_labels(german_context, name, monkeypatch):
    frames = _runs_with_other_labels(german_context, name, CBPE, {"calibration": CBPE_VARIANTS[name]}, monkeypatch)
    for other in frames[1:]:
        assert (other["true"].to_numpy() != frames[0]["true"].to_numpy()).mean() > 0.5  # the labels did change
        np.testing.assert_array_equal(other["predicted"].to_numpy(), frames[0]["predicted"].to_numpy())


@pytest.mark.filterwarnings("ignore::capshift.CalibrationWarning")
def test_leakage_test_catches_a_method_that_reads_test_labels(german_context, monkeypatch):
    frames = _runs_with_other_labels(german_context, "LeakyCBPE", _LeakyCBPE, {"calibration": None}, monkeypatch)
    for other in frames[1:]:
        assert not np.array_equal(other["predicted"].to_numpy(), frames[0]["predicted"].to_numpy())


# -- the paper's baselines as the authors' code computes them (issue 30) -----------------------
def test_column_normalised_by_hand():
    C = np.array([[0.3, 0.1, 0.0],
                  [0.1, 0.3, 0.0],
                  [0.0, 0.2, 0.0]])  # class 2 never predicted: its column stays 0
    expected = np.array([[0.75, 1 / 6, 0.0],
                         [0.25, 0.5, 0.0],
                         [0.0, 1 / 3, 0.0]]) / 2  # two non-empty columns
    np.testing.assert_allclose(baselines.column_normalised(C), expected, atol=1e-15)
    assert accuracy(baselines.column_normalised(C)) == pytest.approx((0.75 + 0.5) / 2)  # mean precision, not 0.6
    np.testing.assert_allclose(baselines.column_normalised(np.stack([C, C])), [expected, expected], atol=1e-15)


def test_authors_variants_by_hand(problem):
    h, X_V, y_V, X_U, y_U = problem
    rng = np.random.default_rng(5)
    samples = [X_U[rng.choice(len(y_U), 100, replace=False)] for _ in range(6)]
    # DS/NN-authors: the accuracy regression, reported whatever the measure
    for name, base in (("DS-authors", "DS"), ("NN-authors", "NN")):
        a = registry.make_method(name, h).fit(X_V, y_V)
        b = registry.make_method(base, h).fit(X_V, y_V)
        np.testing.assert_array_equal(a.predict_batch(samples, "f1"), b.predict_batch(samples, "accuracy"))
        np.testing.assert_array_equal(a.predict_batch(samples, "accuracy"), b.predict_batch(samples, "accuracy"))
        assert not np.allclose(b.predict_batch(samples, "macro_f1"), b.predict_batch(samples, "accuracy"))
    # L-CBPE-authors: L-CBPE's table, each column scaled to 1
    a = registry.make_method("L-CBPE-authors", h).fit(X_V, y_V)
    b = registry.make_method("L-CBPE", h).fit(X_V, y_V)
    np.testing.assert_allclose(a.predict_table_batch(samples),
                               baselines.column_normalised(b.predict_table_batch(samples)), atol=1e-12)


def test_authors_options_refuse_other_values(problem):
    h, X_V, y_V, _, _ = problem
    with pytest.raises(ValueError, match="regress must be one of"):
        DS(h, regress="f1").fit(X_V, y_V)
    with pytest.raises(ValueError, match="table must be one of"):
        CBPE(h, table="rows").fit(X_V, y_V)


# -- every method's value on a small hand-made, prior-shifted case --------------------------------
# A stub h (_PosteriorStub: item x has the posteriors of row x) on 2 classes; V and the test sample U are index
# columns into its rows, U's prior differs from V's. Each value below is computed by hand in the comments.
class _Identity(BaseEstimator):
    """A 'regressor' that predicts its feature as it is (so the regression baselines return their feature),
    keeping what it was fitted on."""

    def fit(self, X, y):
        self.X_, self.y_ = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        return self

    def predict(self, X):
        return np.asarray(X, dtype=float)[:, 0]


def _stub_case(P_val, P_test):
    """(h, X_val, X_test): the stub over the rows of P_val then P_test, and the index columns of each."""
    h = _PosteriorStub(np.r_[np.asarray(P_val, float), np.asarray(P_test, float)])
    return h, np.arange(len(P_val))[:, None], len(P_val) + np.arange(len(P_test))[:, None]


# V: 5 items; h right on items 0, 1, 3 (accuracy 3/5); max-confidences 0.9, 0.8, 0.7, 0.6, 0.55.
_ATC_V = [[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4], [0.45, 0.55]]
_ATC_Y = np.array([0, 1, 0, 0, 0])
# U: 4 items, 3 predicted as class 1 (V: 3 of 5); max-confidences 0.95, 0.7 (a tie with the threshold), 0.65, 0.52
_ATC_U = [[0.05, 0.95], [0.3, 0.7], [0.35, 0.65], [0.52, 0.48]]


def test_atc_threshold_and_fraction_by_hand():
    # k = 3 correct of m = 5: t is the (5 - 3 + 1) = 3rd smallest score of (0.55, 0.6, 0.7, 0.8, 0.9) = 0.7, so
    # 3 of V's 5 scores are >= t. On U the scores >= 0.7 are 0.95 and 0.7 (>=: the tie counts): 2 / 4 = 0.5
    # (> would give 0.25; the arg-max 1 of every row would give 1.0).
    h, X_V, X_U = _stub_case(_ATC_V, _ATC_U)
    est = ATC(h).fit(X_V, _ATC_Y)
    assert est.threshold_ == 0.7
    assert est.predict(X_U) == 0.5
    assert est.predict(X_V) == 0.6  # V's own accuracy, 3 / 5
    # ATC-NE: for 2 classes the negative entropy p log p + (1-p) log(1-p) grows with the max-confidence, so the
    # threshold is that of the row (0.3, 0.7) and the same 2 of U's items reach it
    ne = 0.3 * np.log(0.3) + 0.7 * np.log(0.7)
    est = ATC(h, score="neg_entropy").fit(X_V, _ATC_Y)
    assert est.threshold_ == pytest.approx(ne, abs=1e-15)
    assert est.predict(X_U) == 0.5
    # random_state is unused: any seed gives the same threshold and estimate
    assert ATC(h, random_state=7).fit(X_V, _ATC_Y).predict(X_U) == 0.5
    with pytest.raises(ValueError, match=r"score must be one of \['maxconf', 'neg_entropy'\], got 'margin'"):
        ATC(h, score="margin").fit(X_V, _ATC_Y)


def test_atc_threshold_errors_and_scores_by_hand():
    with pytest.raises(ValueError, match="^scores is empty: the threshold needs at least one validation item$"):
        atc_threshold(np.array([]), np.array([], bool))
    with pytest.raises(ValueError, match=r"correct must have one entry per score: expected shape \(3,\), got \(2,\)"):
        atc_threshold(np.array([0.5, 0.6, 0.7]), np.array([True, False]))
    with pytest.raises(TypeError, match="correct must be booleans .* got dtype float64"):
        atc_threshold(np.array([0.5, 0.6]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="scores contains NaN or infinite values"):
        atc_threshold(np.array([np.nan, 0.5]), np.array([True, False]))
    with pytest.raises(ValueError, match=r"scores must be 1-d, got shape \(1, 2\)"):
        atc_threshold(np.array([[0.5, 0.6]]), np.array([True, False]))
    assert atc_threshold(np.array([0.7]), np.array([True])) == 0.7  # a single item
    assert atc_threshold(np.array([0.7]), np.array([False])) == np.inf
    assert atc_threshold(np.array([0.3, 0.9, 0.6]), np.array([1, 1, 1])) == 0.3  # k = m: the smallest score
    assert atc_threshold(np.array([0.3, 0.9, 0.6]), np.array([0, 1, 0])) == 0.9  # k = 1: the largest
    # negative entropy (nats), 0 log 0 = 0: a one-hot row has 0, a uniform row -log n
    np.testing.assert_allclose(baselines.negative_entropy(np.array([[1.0, 0.0], [0.5, 0.5], [0.2, 0.8]])),
                               [0.0, -np.log(2), 0.2 * np.log(0.2) + 0.8 * np.log(0.8)], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(max_confidence(np.array([[0.2, 0.8], [0.7, 0.3]])), [0.8, 0.7])


# DoC: every class-0 item of V has posteriors (0.9, 0.1) and is right, every class-1 item (0.6, 0.4) and is wrong
# (h predicts 0). The stratified halves of V hold one of each whatever the seed: C(V1) = 0.75, A(V1) = 0.5. A
# validation sample with a fraction r of class 0 has C = 0.6 + 0.3 r and A = r, so the regression learns
# A(V1) - A = 0.5 - r from C(V1) - C = 0.3 (0.5 - r) exactly: slope 10/3, intercept 0. U gets
# A(V1) - 10/3 (C(V1) - C(U)).
_DOC_V = [[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.6, 0.4]]
_DOC_Y = np.array([0, 0, 1, 1])


def test_doc_difference_of_confidences_by_hand():
    # U (mostly class 0 by h, which V is not): max-confidences 0.95, 0.9, 0.8, 0.7, C(U) = 0.8375
    # -> 0.5 + 10/3 * 0.0875 = 0.791666...
    U = [[0.95, 0.05], [0.9, 0.1], [0.2, 0.8], [0.7, 0.3]]
    h, X_V, X_U = _stub_case(_DOC_V, U)
    est = DoC(h, n_val_samples=10, random_state=0).fit(X_V, _DOC_Y)
    assert est.ref_score_ == pytest.approx(0.75, abs=1e-15)
    assert est.predict(X_U) == pytest.approx(0.5 + 10 / 3 * 0.0875, abs=1e-9)
    # a confident U: 0.5 + 10/3 * (0.95 - 0.75) = 1.1666..., clipped to 1 unless clip=False
    h, X_V, X_U = _stub_case(_DOC_V, [[0.95, 0.05]] * 2 + [[0.05, 0.95]] * 2)
    assert DoC(h, n_val_samples=10, random_state=0).fit(X_V, _DOC_Y).predict(X_U) == 1.0
    assert DoC(h, n_val_samples=10, random_state=0, clip=False).fit(X_V, _DOC_Y).predict(X_U) == pytest.approx(
        0.5 + 10 / 3 * 0.2, abs=1e-9)
    # an unconfident U: C(U) = 0.55, 0.5 - 10/3 * 0.2 = -0.1666..., clipped to 0 unless clip=False
    h, X_V, X_U = _stub_case(_DOC_V, [[0.55, 0.45]] * 2 + [[0.45, 0.55]] * 2)
    assert DoC(h, n_val_samples=10, random_state=0).fit(X_V, _DOC_Y).predict(X_U) == 0.0
    assert DoC(h, n_val_samples=10, random_state=0, clip=False).fit(X_V, _DOC_Y).predict(X_U) == pytest.approx(
        0.5 - 10 / 3 * 0.2, abs=1e-9)
    h, X_V, X_U = _stub_case(_DOC_V, [[0.95, 0.05]] * 2 + [[0.05, 0.95]] * 2)
    # the regressor sees the differences (feature C(V1) - C(V_i), target A(V1) - A(V_i)) and DoC returns
    # A(V1) - its prediction: with the identity 'regressor', A(V1) - (C(V1) - C(U)) = 0.5 - 0.75 + 0.95 = 0.7
    est = DoC(h, n_val_samples=10, random_state=0, regressor=_Identity()).fit(X_V, _DOC_Y)
    assert est.predict(X_U) == pytest.approx(0.7, abs=1e-12)
    reg = est.regressors_[(4, get_measure("accuracy"))]
    r = est.val_tables_[4].sum(axis=2)[:, 0]  # the fraction of class 0 in each V_i
    np.testing.assert_allclose(reg.X_[:, 0], 0.15 - 0.3 * r, atol=1e-12)
    np.testing.assert_allclose(reg.y_, 0.5 - r, atol=1e-12)
    assert len(np.unique(np.round(r, 9))) > 1 and reg.X_.shape == (10, 1)


def test_ds_and_nn_scores_through_the_regressor_by_hand():
    # with the identity 'regressor' and clip=False, DS and NN return the score of U itself.
    # U = rows (1, 0), (0, 1), (1, 0), (0, 1): h predicts 0, 1, 0, 1.
    U = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
    h, X_V, X_U = _stub_case(_DOC_V, U)
    kw = dict(n_val_samples=5, regressor=_Identity(), clip=False, random_state=0)
    # NN: one-hot rows spread evenly over both classes, singular values sqrt 2, sqrt 2: 2 sqrt 2 / sqrt(4 * 2) = 1
    assert NN(h, **kw).fit(X_V, _DOC_Y).predict(X_U) == pytest.approx(1.0, abs=1e-12)
    # DS on the posteriors: mu = (0.5, 0.5), mu_0 = (1, 0), mu_1 = (0, 1); sum_k m_k ||mu_k - mu||^2 = 2 * 0.5 * 2
    # = 2, over n - 1 = 1: log 2
    # (h predicts class 0 on all of V: DS, which reads h's decisions, says so)
    with pytest.warns(DegenerateClassifierWarning, match="h predicts only class 0 on V: DS reads h's decisions"):
        ds_post = DS(h, space="posteriors", **kw).fit(X_V, _DOC_Y)
    assert ds_post.predict(X_U) == pytest.approx(np.log(2), abs=1e-12)
    # DS on the features (the index column 4, 5, 6, 7): mu = 5.5, mu_0 = 5 (items 4, 6), mu_1 = 6 (items 5, 7):
    # 2 * 0.25 + 2 * 0.25 = 1: log 1 = 0
    with pytest.warns(DegenerateClassifierWarning, match="only class 0"):
        ds_feat = DS(h, **kw).fit(X_V, _DOC_Y)
    assert ds_feat.predict(X_U) == pytest.approx(0.0, abs=1e-12)
    # the regressor learns the measure of the validation samples (not a difference): here a validation sample's
    # accuracy is its fraction of class 0 (class-1 items are wrong), read off its table's first column
    est = NN(h, **kw).fit(X_V, _DOC_Y)
    est.predict(X_U)
    reg = est.regressors_[(4, get_measure("accuracy"))]
    np.testing.assert_allclose(reg.y_, est.val_tables_[4][:, 0, 0], atol=1e-15)
    np.testing.assert_allclose(reg.X_[:, 0], [nuclear_norm_score(h.P[s]) for s in _upp_rows(est, 4)], atol=1e-12)
    with pytest.raises(ValueError, match="space must be 'features' or 'posteriors', got 'pixels'"), \
            pytest.warns(DegenerateClassifierWarning):
        DS(h, space="pixels").fit(X_V, _DOC_Y)
    with pytest.raises(ValueError, match=r"regress must be one of \['measure', 'accuracy'\], got 'f1'"):
        NN(h, regress="f1").fit(X_V, _DOC_Y)
    with pytest.raises(ValueError, match="n_val_samples must be >= 2, got 1"):
        NN(h, n_val_samples=1).fit(X_V, _DOC_Y)
    with pytest.raises(ValueError, match="val_sample_size must be >= 2, got 1"):
        NN(h, val_sample_size=1).fit(X_V, _DOC_Y)
    fixed = NN(h, val_sample_size=2, **kw).fit(X_V, _DOC_Y)
    assert sorted(fixed.val_scores_) == [2]  # drawn at fit
    with pytest.raises(ValueError, match=r"^samples\[1\] has 4 items but val_sample_size=2: the score of NN depends on "
                                         r"the sample size, so the regressor only applies to samples of that size; "
                                         r"leave val_sample_size=None to fit one per size$"):
        fixed.predict_batch([X_U[:2], X_U])


def _upp_rows(est, size):
    """The rows of V (indices into h.P) of est's validation samples of ``size`` items, as drawn at fit."""
    pool = est.pool_idx_
    return [pool[s] for s in protocols.upp_indices(est.y_val_[pool], size, est.n_val_samples, est.seed_,
                                                    n_classes=est.n_classes_)]


def test_regression_baselines_seed_the_split_and_samples():
    # 20 items of V with distinct posteriors: the seed picks the halving of V and the validation samples; the same
    # seed gives the same estimate, another seed another split (and estimate)
    rng = np.random.default_rng(0)
    p = rng.uniform(0.5, 1.0, 24)
    P = np.c_[p, 1 - p]
    y = np.r_[np.zeros(10, int), np.ones(10, int)]
    h, X_V, X_U = _stub_case(P[:20], P[20:])
    fits = [DoC(h, n_val_samples=8, random_state=s).fit(X_V, y) for s in (0, 0, 1)]
    np.testing.assert_array_equal(fits[0].ref_idx_, fits[1].ref_idx_)
    assert fits[0].predict(X_U) == fits[1].predict(X_U)
    assert set(fits[0].ref_idx_) != set(fits[2].ref_idx_)
    assert fits[0].seed_ == 0 and fits[2].seed_ == 1
    assert sorted(np.r_[fits[2].ref_idx_, fits[2].pool_idx_]) == list(range(20))  # the halves split V
    assert len(fits[2].ref_idx_) == 10 and np.bincount(y[fits[2].ref_idx_]).tolist() == [5, 5]  # stratified
    for s in range(2, 6):  # stratified halves of V whatever the seed
        assert np.bincount(y[DoC(h, random_state=s).fit(X_V, y).ref_idx_]).tolist() == [5, 5]
    # random_state=None: a seed is drawn from numpy's global (legacy, frozen-stream) RandomState, in 0..2**31-2
    state = np.random.get_state()
    try:
        np.random.seed(11)
        drawn = [DoC(h, n_val_samples=2).fit(X_V, y).seed_ for _ in range(12)]
        np.random.seed(11)
        assert drawn == [int(np.random.randint(0, 2**31 - 1)) for _ in range(12)]
    finally:
        np.random.set_state(state)
    nn = [NN(h, n_val_samples=8, random_state=s).fit(X_V, y) for s in (0, 1)]
    assert len(nn[0].ref_idx_) == 20  # NN does not split V: both halves are V
    nn[0].predict(X_U), nn[1].predict(X_U)
    assert not np.array_equal(nn[0].val_scores_[4], nn[1].val_scores_[4])  # other validation samples


# CBPE: U = rows (0.9, 0.1), (0.6, 0.4), (0.6, 0.4), (0.2, 0.8), predicted 0, 0, 0, 1 (V: half and half).
# C[i, j] = (1/4) sum over the items predicted j of P[x, i]: column 0 = (2.1, 0.9) / 4, column 1 = (0.2, 0.8) / 4.
_CBPE_V = [[0.8, 0.2], [0.8, 0.2], [0.8, 0.2], [0.8, 0.2], [0.2, 0.8], [0.2, 0.8], [0.2, 0.8], [0.2, 0.8],
           [0.5, 0.5]]
_CBPE_Y = np.array([0, 0, 0, 1, 1, 1, 1, 0, 0])  # calibrated on V: 3 of 4 right at 0.8, a coin at 0.5
_CBPE_U = [[0.9, 0.1], [0.6, 0.4], [0.6, 0.4], [0.2, 0.8]]


def test_cbpe_table_and_measures_by_hand():
    h, X_V, X_U = _stub_case(_CBPE_V, _CBPE_U)
    est = CBPE(h, calibration=None).fit(X_V, _CBPE_Y)
    C = np.array([[0.525, 0.05], [0.225, 0.2]])
    np.testing.assert_allclose(est.predict_table(X_U), C, rtol=0, atol=1e-15)
    assert est.predict(X_U) == pytest.approx(0.725, abs=1e-15)
    # binary F1 of class 1: 2 * 0.2 / (0.25 + 0.425) = 0.4 / 0.675
    assert est.predict(X_U, "f1") == pytest.approx(0.4 / 0.675, abs=1e-12)
    # the LEAP authors' table: columns scaled to 1, (0.7, 0.3) and (0.2, 0.8), then halved
    # no BCTS, no SLD prior without a calibration; "sld" starts from the mean posterior on V, (4.5, 4.5) / 9 (not
    # V's label prevalence, (5, 4) / 9)
    assert (est.calibrator_, est.bcts_, est.floor_, est.train_prevalence_) == (None, False, None, None)
    sld = CBPE(h, calibration="sld").fit(X_V, _CBPE_Y)
    np.testing.assert_allclose(sld.train_prevalence_, [0.5, 0.5], rtol=0, atol=1e-15)
    assert (sld.calibrator_, sld.bcts_, sld.floor_) == (None, False, None)
    authors = CBPE(h, calibration=None, table="column-normalised").fit(X_V, _CBPE_Y)
    np.testing.assert_allclose(authors.predict_table(X_U), [[0.35, 0.1], [0.15, 0.4]], rtol=0, atol=1e-15)
    assert CBPE(h, calibration=None, random_state=3).fit(X_V, _CBPE_Y).predict(X_U) == pytest.approx(0.725,
                                                                                                    abs=1e-15)
    with pytest.raises(ValueError, match=r"table must be one of \['joint', 'column-normalised'\], got 'rows'"):
        CBPE(h, table="rows").fit(X_V, _CBPE_Y)
    with pytest.raises(ValueError, match=r"calibration must be one of \[None, 'bcts', 'sld', 'sld-bcts', 'lascal'\], "
                                         r"got 'platt'"):
        CBPE(h, calibration="platt").fit(X_V, _CBPE_Y)
    with pytest.raises(ValueError, match=r"lascal\(\) needs calibration='lascal', this CBPE has calibration=None"):
        est.lascal(np.array(_CBPE_U))


def test_cbpe_macro_f1_with_a_class_never_predicted():
    # 3 classes, h never predicts class 2 on U: U = (0.7, 0.2, 0.1), (0.1, 0.6, 0.3), (0.5, 0.1, 0.4)
    # C = [[1.2, 0.1, 0], [0.3, 0.6, 0], [0.5, 0.3, 0]] / 3; class 2 has F1 0 (no predictions, true mass 0.8 / 3)
    P_V = np.array([[0.7, 0.2, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7]] * 3)
    h, X_V, X_U = _stub_case(P_V, [[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.5, 0.1, 0.4]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        est = CBPE(h, calibration=None).fit(X_V, np.tile([0, 1, 2], 3))
    C = np.array([[1.2, 0.1, 0], [0.3, 0.6, 0], [0.5, 0.3, 0]]) / 3
    np.testing.assert_allclose(est.predict_table(X_U), C, rtol=0, atol=1e-15)
    f1 = [2 * 1.2 / (2.0 + 1.3), 2 * 0.6 / (1.0 + 0.9), 0.0]  # 2 C_kk / (row sum + column sum), times 3
    assert est.predict(X_U, "macro_f1") == pytest.approx(np.mean(f1), abs=1e-12)
    assert est.predict(X_U, "macro_f1") == pytest.approx(macro_f1(C), abs=1e-15)


def test_cot_transport_cost_by_hand():
    # U = rows (0.7, 0.3), (0.4, 0.6), mass 1/2 each; cost of row p to class k: 1 - p_k.
    # To (1/2, 1/2): row 1 -> 0 (0.3), row 2 -> 1 (0.4): cost 0.35, estimate 0.65.
    # To V's prevalence (1/4, 3/4): x of row 1 to class 0 (x <= 1/4), the rest of class 0 from row 2:
    # cost 0.3 x + 0.7 (1/2 - x) + 0.6 (1/4 - x) + 0.4 (1/4 + x) = 0.6 - 0.6 x, least at x = 1/4: 0.45 -> 0.55
    U = np.array([[0.7, 0.3], [0.4, 0.6]])
    assert cot_accuracy(U, [0.5, 0.5]) == pytest.approx(0.65, abs=1e-12)
    assert cot_accuracy(U, [0.25, 0.75]) == pytest.approx(0.55, abs=1e-12)
    h, X_V, X_U = _stub_case([[0.8, 0.2], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]], U)
    y_V = np.array([0, 1, 1, 1])
    cot = COT(h, quantifier=None).fit(X_V, y_V)
    np.testing.assert_allclose(cot.val_prev_, [0.25, 0.75])
    assert cot.predict(X_U) == pytest.approx(0.55, abs=1e-12)
    qcot = COT(h, quantifier="oracle", random_state=4).fit(X_V, y_V)
    assert qcot.predict_batch([X_U], prevalences=np.array([[0.5, 0.5]]))[0] == pytest.approx(0.65, abs=1e-12)
    with pytest.raises(ValueError, match=r"label_prev must be one distribution \(n,\), got shape \(1, 2\)"):
        cot_accuracy(U, [[0.5, 0.5]])


class _Midpoint(ClassifierMixin, BaseEstimator):
    """A 1-d classifier: class 1 beyond the midpoint t of the class means of its training items."""

    def fit(self, X, y):
        X, y = np.asarray(X, float)[:, 0], np.asarray(y)
        self.t_ = (X[y == 0].mean() + X[y == 1].mean()) / 2
        self.classes_, self.n_features_in_ = np.arange(2), 1
        return self

    def predict_proba(self, X):
        s = 1 / (1 + np.exp(-(np.asarray(X, float)[:, 0] - self.t_)))
        return np.c_[1 - s, s]

    def predict(self, X):
        return (np.asarray(X, float)[:, 0] > self.t_).astype(int)


def test_rca_reverse_table_by_hand():
    # h: t = 0. V = (-2, -1, 1, 2), labels 0, 0, 1, 1 (h right on all). U = (-1, 3, 4, 5), h's pseudo-labels
    # 0, 1, 1, 1 (V: half and half): h' has t' = (-1 + 4) / 2 = 1.5 and predicts 0, 0, 0, 1 on V:
    # table [[2, 0], [1, 1]] / 4, accuracy 0.75
    h = _Midpoint().fit(np.array([[-1.0], [1.0]]), [0, 1])
    X_V, y_V = np.array([[-2.0], [-1.0], [1.0], [2.0]]), np.array([0, 0, 1, 1])
    X_U = np.array([[-1.0], [3.0], [4.0], [5.0]])
    rca = RCA(h).fit(X_V, y_V)
    np.testing.assert_array_equal(rca.predict_table(X_U), [[0.5, 0.0], [0.25, 0.25]])
    # U all on h's side 1: h' is the constant classifier of class 1, table [[0, 2], [0, 2]] / 4
    np.testing.assert_array_equal(rca.predict_table(np.array([[1.0], [2.0], [3.0]])), [[0.0, 0.5], [0.0, 0.5]])
    # RCA*: V = (-2, -2, 1, 1), every stratified half V1 = (-2, 1), where h is right (A = 1) and h' of U is wrong
    # on 1 (A = 0.5): the feature A(h, V1) - A(h', V1) = 0.5, returned by the identity 'regressor'
    X_V = np.array([[-2.0], [-2.0], [1.0], [1.0]])
    star = RCAStar(h, n_val_samples=3, regressor=_Identity(), random_state=0).fit(X_V, y_V)
    assert star.predict(X_U) == pytest.approx(0.5, abs=1e-15)
    np.testing.assert_array_equal(star.ref_table_, [[0.5, 0.0], [0.0, 0.5]])


# -- constructor defaults, evidence and the checks at fit and predict ----------------------------
def test_constructors_store_their_parameters_and_documented_defaults():
    h = _PosteriorStub(np.array(_DOC_V))
    reg = _Identity()
    d = DS(h, "f1", "posteriors", 7, 9, reg, False, 3, "accuracy")
    assert (d.classifier, d.measure, d.space, d.n_val_samples, d.val_sample_size, d.regressor, d.clip,
            d.random_state, d.regress) == (h, "f1", "posteriors", 7, 9, reg, False, 3, "accuracy")
    for cls in (DoC, DS, NN, RCAStar):
        e = cls(h)
        assert (e.measure, e.n_val_samples, e.val_sample_size, e.regressor, e.clip, e.random_state, e.regress) == (
            "accuracy", 100, None, None, True, None, "measure")
    assert DS(h).space == "features"
    a = NN(h, "f1", 7, 9, reg, False, 3, "accuracy")
    assert (a.measure, a.n_val_samples, a.val_sample_size, a.regressor, a.clip, a.random_state, a.regress) == (
        "f1", 7, 9, reg, False, 3, "accuracy")
    c = CBPE(h)
    assert (c.calibration, c.measure, c.random_state, c.table) == ("sld-bcts", "accuracy", None, "joint")
    c = CBPE(h, "lascal", "f1", 2, "column-normalised")
    assert (c.calibration, c.measure, c.random_state, c.table) == ("lascal", "f1", 2, "column-normalised")
    q = COT(h)
    assert (q.quantifier, q.measure, q.random_state) == ("kdey", "accuracy", None)
    q = COT(h, None, "acc", 5)
    assert (q.quantifier, q.measure, q.random_state) == (None, "acc", 5)
    t = ATC(h)
    assert (t.score, t.measure, t.random_state) == ("maxconf", "accuracy", None)
    t = ATC(h, "neg_entropy", "acc", 4)
    assert (t.score, t.measure, t.random_state) == ("neg_entropy", "acc", 4)


def test_evidence_each_method_declares():
    h = _PosteriorStub(np.array(_DOC_V))
    reason = "every class must occur in V"
    for est in (NN(h), DS(h), ATC(h), CBPE(h), COT(h, quantifier=None), COT(h, quantifier="oracle")):
        assert est.evidence() == (1, reason), type(est).__name__
    for est in (DoC(h), RCAStar(h)):  # the stratified halves of V
        assert est.evidence() == (2, "it splits V in two halves stratified by class, each needing every class")
    assert COT(h, quantifier="kdey").evidence() == (5, "its quantifier's posteriors on V are cross-validated in 5 "
                                                       "stratified folds")
    assert COT(h, quantifier=Quantifier("kdey")).evidence()[0] == 5
    assert DS(h).reads_from_h() == ("decisions",)
    assert DS(h, space="posteriors").reads_from_h() == ("decisions", "confidence")


def test_cbpe_warns_when_posteriors_are_miscalibrated_on_v():
    # V: h says 0.9 for the class it predicts and is always wrong: the estimate on V is 0.9, h's accuracy 0; the
    # binomial sd on 4 items, floored at sqrt(1/m / m) = 0.25, so 2 sd = 0.5 < 0.9: warned
    h, X_V, X_U = _stub_case([[0.9, 0.1], [0.9, 0.1], [0.1, 0.9], [0.1, 0.9]], [[0.9, 0.1], [0.2, 0.8]])
    with pytest.warns(CalibrationWarning, match=r"CBPE assumes h's posteriors are calibrated, but on V itself it "
                                                r"estimates h's accuracy at 0\.900 where it is 0\.000 \(more than 2 "
                                                r"binomial sd = 0\.500 apart\)"):
        CBPE(h, calibration=None).fit(X_V, [1, 1, 0, 0])
    # 10 items at confidence 0.9, h right on 2: accuracy 0.2, sd sqrt(0.2 * 0.8 / 10) = 0.1265 (above the floor
    # sqrt(1/10 / 10)), 2 sd = 0.253 < 0.7
    P = [[0.9, 0.1]] * 5 + [[0.1, 0.9]] * 5
    h, X_V, X_U = _stub_case(P, [[0.9, 0.1], [0.2, 0.8]])
    with pytest.warns(CalibrationWarning, match=r"at 0\.900 where it is 0\.200 \(more than 2 binomial sd = 0\.253 apart\), "
                                                r"so its estimates are biased; it needs posteriors calibrated on V's "
                                                r"distribution \(recalibrate h, e\.g\. sklearn's CalibratedClassifierCV, "
                                                r"or use a LEAP method\)$"):
        CBPE(h, calibration=None).fit(X_V, [0, 1, 1, 1, 1, 1, 0, 0, 0, 0])
    # _CBPE_V is calibrated: estimate 6.9 / 9 = 0.767, accuracy 7 / 9 = 0.778: no warning (nor for COT, on the
    # COT case: estimate 0.8, accuracy 1, 2 sd = 0.5)
    h, X_V, X_U = _stub_case(_CBPE_V, _CBPE_U)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CBPE(h, calibration=None).fit(X_V, _CBPE_Y)
    h, X_V, X_U = _stub_case([[0.8, 0.2], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]], [[0.7, 0.3], [0.4, 0.6]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        COT(h, quantifier=None).fit(X_V, [0, 1, 1, 1])
    # labels 1, 0, 0, 0: h is always wrong; V's prevalence (3/4, 1/4): class 1 gets the last row (cost 0.1), class 0
    # the others (0.2 + 0.7 + 0.8): cost 1.8 / 4 = 0.45, estimate 0.55 > 0 + 2 sd = 0.5
    with pytest.warns(CalibrationWarning, match=r"COT assumes h's posteriors are calibrated, but on V itself it "
                                                r"estimates h's accuracy at 0\.550 where it is 0\.000"):
        COT(h, quantifier=None).fit(X_V, [1, 0, 0, 0])


def test_samples_smaller_than_the_classes_are_refused_by_name():
    h, X_V, X_U = _stub_case(_ATC_V, _ATC_U)
    est = ATC(h).fit(X_V, _ATC_Y)
    with pytest.raises(ValueError, match=r"samples\[1\] has 1 items, fewer than the 2 classes: ATC needs test "
                                         r"samples of at least n_classes items \(use larger samples\)"):
        est.predict_batch([X_U, X_U[:1]])
    # predict_proba is applied to the sample when no posteriors are given, and checked under its own name
    assert est.predict_batch([X_U, X_U[:2]]).tolist() == [0.5, 1.0]
    h, X_V, X_U = _stub_case(_CBPE_V, _CBPE_U)
    naive = Naive(h).fit(X_V, _CBPE_Y)
    np.testing.assert_array_equal(naive.tables_from_prevalences([0.3, 0.7]), naive.val_table_[None])
    np.testing.assert_array_equal(naive.predict_table_batch([X_U, X_U, X_U]), [naive.val_table_] * 3)
    with pytest.raises(ValueError, match=r"^pred_prev must have shape \(\.\.\., 2\) \(one entry per class\), got \(3,\)"):
        naive.tables_from_prevalences([0.3, 0.3, 0.4])


def test_score_and_table_functions_name_their_arguments():
    with pytest.raises(ValueError, match=r"P must have shape \(\.\.\., 2\) \(one entry per class\), got \(1, 3\)"):
        cbpe_table(np.array([[0.2, 0.3, 0.5]]), [0], 2)
    with pytest.raises(ValueError, match=r"y_pred has labels \[2\] outside the codeframe 0\.\.1"):
        cbpe_table(np.array([[0.5, 0.5]]), [2], 2)
    with pytest.raises(ValueError, match=r"y_pred must have one label per item: expected shape \(1,\), got \(2,\)"):
        cbpe_table(np.array([[0.5, 0.5]]), [0, 1], 2)
    for f in (nuclear_norm_score, lambda P: cot_accuracy(P, [0.5, 0.5])):
        with pytest.raises(ValueError, match="^P must be a probability distribution"):
            f(np.array([[0.5, 0.6]]))
    with pytest.raises(ValueError, match=r"^label_prev must have shape \(\.\.\., 2\) \(one entry per class\), got \(3,\)"):
        cot_accuracy(np.array([[0.4, 0.6]]), [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="^label_prev must be a probability distribution"):
        cot_accuracy(np.array([[0.4, 0.6]]), [0.2, 0.3])
    # COT with more items than classes (mass 1/m each): the 2-item case above, each row twice
    U = np.array([[0.7, 0.3], [0.7, 0.3], [0.4, 0.6], [0.4, 0.6], [0.4, 0.6], [0.7, 0.3]])
    assert cot_accuracy(U[:4], [0.25, 0.75]) == pytest.approx(0.55, abs=1e-12)
    # 3 items, prevalence (1/3, 2/3): the 0.7-row to class 0 (cost 0.3), the two 0.6-rows to class 1 (0.4 + 0.4):
    # 1.1 / 3 (the other way round, 0.6 + 0.7 + 0.4 = 1.7)
    assert cot_accuracy(U[[0, 2, 3]], [1 / 3, 2 / 3]) == pytest.approx(1 - 1.1 / 3, abs=1e-12)
    # h wrong with certainty on every item: cost 1, estimate 0 (never below: round-off is clipped)
    for m in (3, 20, 21):
        assert 0.0 <= cot_accuracy(np.tile([0.0, 1.0], (m, 1)), [1.0, 0.0]) <= 1e-12
    # integer counts are read as floats; a table with one predicted class keeps its column (divided by 1)
    np.testing.assert_allclose(baselines.column_normalised(np.array([[3, 1], [1, 1]])), [[0.375, 0.25], [0.125, 0.25]],
                               rtol=0, atol=1e-15)
    np.testing.assert_allclose(baselines.column_normalised(np.array([[0.3, 0.0], [0.7, 0.0]])), [[0.3, 0.0], [0.7, 0.0]],
                               rtol=0, atol=1e-15)
    np.testing.assert_array_equal(baselines.column_normalised(np.zeros((2, 2))), np.zeros((2, 2)))
    # exact zeros: 0 log 0 = 0 without a log(0) evaluated (no RuntimeWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert baselines.negative_entropy(np.array([[1.0, 0.0, 0.0]])).tolist() == [0.0]


def test_qcot_quantifier_reads_h_and_the_seed():
    # Q-COT with h's classify-and-count ("cc", which reads h): U of the COT case is predicted 0, 1, so its
    # estimated prevalence is (1/2, 1/2) and the estimate 0.65 (not V's 0.55)
    U = [[0.7, 0.3], [0.4, 0.6]]
    h, X_V, X_U = _stub_case([[0.8, 0.2], [0.3, 0.7], [0.2, 0.8], [0.1, 0.9]], U)
    cc = COT(h, quantifier="cc").fit(X_V, [0, 1, 1, 1])
    np.testing.assert_allclose(cc.quantifier_.quantify(X_U), [0.5, 0.5], atol=1e-12)
    assert cc.predict(X_U) == pytest.approx(0.65, abs=1e-12)
    # the quantifier gets the method's seed (KDEy seeds its surrogate MLP and folds with it) and h
    q = COT(h, quantifier="cc", random_state=3).fit(X_V, [0, 1, 1, 1]).quantifier_
    assert q.random_state == 3 and q.classifier is h


def test_dispersion_score_edge_cases_by_hand():
    Z = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [4.0, 2.0]])
    # sparse features are densified: the same log 5 as test_dispersion_score_by_hand
    assert dispersion_score(sp.csr_matrix(Z), [0, 0, 1, 1], 2) == pytest.approx(np.log(5.0), abs=1e-12)
    # a class predicted once counts: Z = 0, 2, 4 labelled 0, 0, 1: mu = 2, mu_0 = 1, mu_1 = 4: 2 * 1 + 1 * 4 = 6
    assert dispersion_score(np.array([[0.0], [2.0], [4.0]]), [0, 0, 1], 2) == pytest.approx(np.log(6.0), abs=1e-12)
    # one item, or one predicted class: the sum is 0, floored at `floor` before the log
    assert dispersion_score(np.array([[1.0, 2.0]]), [0], 2) == pytest.approx(np.log(1e-12), abs=1e-12)
    assert dispersion_score(Z, np.zeros(4, int), 2, floor=1e-3) == pytest.approx(np.log(1e-3), abs=1e-12)
    with pytest.raises(ValueError, match="n_classes must be >= 2, got 1"):
        dispersion_score(Z, np.zeros(4, int), 1)
    with pytest.raises(ValueError, match=r"Z must be 2-d, got shape \(4,\)"):
        dispersion_score(np.zeros(4), np.zeros(4, int), 2)
    with pytest.raises(ValueError, match="^Z is empty: the dispersion score needs at least one item$"):
        dispersion_score(np.zeros((0, 2)), np.zeros(0, int), 2)
    with pytest.raises(ValueError, match=r"y_pred must have one label per item: expected shape \(4,\), got \(3,\)"):
        dispersion_score(Z, np.zeros(3, int), 2)


def test_cot_evidence_follows_its_quantifiers_folds():
    # a QuaPy quantifier cross-validated in 2 folds needs 2 items of every class (not the 1 of plain COT)
    from quapy.method.aggregative import ACC
    h = _PosteriorStub(np.array(_DOC_V))
    q = Quantifier(ACC(LogisticRegression(), val_split=2))
    assert COT(h, quantifier=q).evidence() == (2, "its quantifier's posteriors on V are cross-validated in 2 "
                                                  "stratified folds")


def test_lcbpe_runs_its_self_check_once_per_sample_size():
    # L-CBPE checks LasCal on IID subsamples of V of each test sample size m <= |V| / 2 (cached per m), through
    # predict_batch as through the experiment runner's posteriors
    rng = np.random.default_rng(4)
    P_V, y_V, _ = _scaled_posteriors(60, _P_V, rng, 1.0)
    P_U, _, _ = _scaled_posteriors(20, _SHIFTED, rng, 1.0)
    h, X_V, X_U = _stub_case(P_V, P_U)
    est = CBPE(h, calibration="lascal", random_state=0).fit(X_V, y_V)
    assert est.lascal_checks_ == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        got = est.predict_batch([X_U[:12], X_U], posteriors=[P_U[:12], P_U])
    assert sorted(est.lascal_checks_) == [12, 20]  # m = 12 and 20 <= 60 / 2; not n = 3
    T = est.lascal(P_U)[0]
    assert got[1] == pytest.approx(np.trace(cbpe_table(baselines.temperature_scale(P_U, T), P_U.argmax(axis=1), 3)),
                                   abs=1e-12)


def test_posterior_checks_name_where_the_posteriors_came_from():
    # h's posteriors on V and on a sample are checked under the call that produced them
    P = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7], [0.5, 0.6]])  # the last row sums to 1.1
    h = _PosteriorStub(P)
    est = ATC(h).fit(np.arange(4)[:, None], [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"^predict_proba\(samples\[1\]\) must be a probability distribution"):
        est.predict_batch([np.array([[0], [1]]), np.array([[0], [4]])])
    wide = _PosteriorStub(np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3]]))
    wide.classes_ = np.arange(2)  # h says 2 classes but its posteriors have 3 columns
    with pytest.raises(ValueError, match=r"^classifier\.predict_proba\(X_val\) must have shape \(\.\.\., 2\)"):
        ATC(wide).fit(np.array([[0], [1]]), [0, 1])
    # a sample smaller than the number of classes is refused with its size (not its number of features)
    P_V = np.array([[0.7, 0.2, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7]] * 3)
    h3, X_V, X_U = _stub_case(P_V, [[0.7, 0.2, 0.1], [0.1, 0.6, 0.3]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        est = CBPE(h3, calibration=None).fit(X_V, np.tile([0, 1, 2], 3))
    with pytest.raises(ValueError, match=r"^samples\[0\] has 2 items, fewer than the 3 classes: CBPE needs test samples"):
        est.predict_batch([X_U])

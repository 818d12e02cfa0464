"""CAP baselines: Naive, ATC, DoC, DS, NN, CBPE, COT/Q-COT, RCA/RCA* (capshift.baselines)."""
import copy
import sys
import time
import warnings
from pathlib import Path

import abstention.calibration
import numpy as np
import pytest
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

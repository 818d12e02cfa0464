"""Tests of capshift.base: the CAPEstimator interface every CAP method inherits.

Pinned with tiny subclasses written here, whose tables (or values) are known, so that every measure is computed by
hand: how fit validates and what it keeps (the validation table, the evidence check, the degenerate-h warnings, a
failed fit leaving the estimator unfitted); how each predict_* routes the measure, the prevalences and the
posteriors to the method's hook and the hook's tables to the measure; the default measure; a batch being the loop
of singles; the intervals' alpha, seed, parameters and calibration (through a recording stand-in for
ConformalInterval, and once with the real one); supports() for each measure; evidence(); h's predicted
fractions; and every error message, naming its argument.
"""
import re
import warnings
from dataclasses import FrozenInstanceError

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError

from capshift import base
from capshift.base import CAPEstimator, SampleEstimate, check_sample
from capshift.tables import accuracy
from capshift.validation import DegenerateClassifierWarning, InsufficientEvidenceWarning


# --------------------------------------------------------------------------------------- a hand-made problem
class _Column(ClassifierMixin, BaseEstimator):
    """h whose decision is the first feature (a class code) and whose posterior of class 1 is the second; counts
    its calls of predict in ``calls``."""

    def __init__(self, n_classes=2):
        self.n_classes = n_classes

    def fit(self, X=None, y=None):
        self.classes_ = np.arange(self.n_classes)
        self.calls = 0
        return self

    def predict(self, X):
        self.calls += 1
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        return X[:, 0].astype(int)

    def predict_proba(self, X):
        p = np.asarray(X, dtype=float)[:, 1]
        return np.c_[1 - p, p]


class _NoProba(ClassifierMixin, BaseEstimator):
    """h with decisions only (no predict_proba)."""

    def fit(self, X=None, y=None):
        self.classes_ = np.arange(2)
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(int)


#: The tables _Fixed returns, chosen by a sample's third feature; their measures by hand below.
TABLES = np.array([[[0.5, 0.1], [0.1, 0.3]],
                   [[0.1, 0.3], [0.1, 0.5]]])
#: Measures of TABLES[0] and TABLES[1]: accuracy the trace; F1 of class 1 2TP / (2TP + FP + FN); balanced
#: accuracy the mean recall; macro-F1 the mean of both classes' F1.
HAND = {"accuracy": (0.8, 0.6), "f1": (0.6 / 0.8, 1.0 / 1.4), "binary_f1": (0.75, 5 / 7),
        "balanced_accuracy": ((5 / 6 + 3 / 4) / 2, (1 / 4 + 5 / 6) / 2),
        "macro_f1": ((5 / 6 + 3 / 4) / 2, (1 / 3 + 5 / 7) / 2)}


class _Fixed(CAPEstimator):
    """A table method: the table of a sample is TABLES[its third feature]; records each call of its hook."""

    def _fit(self, X_val, y_val):
        self.calls = []
        self.fitted_on = (X_val, y_val)

    def _predict_tables(self, samples, prevalences, posteriors):
        self.calls.append((samples, prevalences, posteriors))
        return np.stack([TABLES[int(X[0, 2])] for X in samples])


class _Values(CAPEstimator):
    """A measure-only method of accuracy (named by its alias): the value of a sample is the mean of its third
    feature over 10; records each call of its hook."""

    estimates_tables = False
    supported_measures = ("acc",)

    def _fit(self, X_val, y_val):
        self.calls = []

    def _predict_values(self, samples, measure, prevalences, posteriors):
        self.calls.append((samples, measure, prevalences, posteriors))
        return np.array([X[:, 2].mean() / 10 for X in samples])


def _val():
    """V: 4 items of class 0 (h right on 3) and 6 of class 1 (h right on 5): table [[.3, .1], [.1, .5]]; posteriors
    of class 1 spread over (0.1, 0.9)."""
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
    pred = np.array([0, 0, 0, 1, 1, 1, 1, 1, 1, 0])
    return np.c_[pred, np.linspace(0.1, 0.9, 10), np.zeros(10)], y


def _sample(which, m=3):
    """A sample of m items whose table (for _Fixed) is TABLES[which] and whose value (for _Values) is which / 10."""
    return np.c_[np.arange(m) % 2, np.full(m, 0.5), np.full(m, float(which))]


def _fitted(cls=_Fixed, **kw):
    X, y = _val()
    return cls(_Column().fit(), **kw).fit(X, y)


# ------------------------------------------------------------------------------------------------ fit
def test_fit_keeps_the_validation_table_and_the_shapes():
    est = _fitted()
    np.testing.assert_allclose(est.val_table_, [[0.3, 0.1], [0.1, 0.5]])
    np.testing.assert_array_equal(est.val_pred_, _val()[0][:, 0])
    assert (est.n_features_in_, est.n_classes_) == (3, 2)
    X, y = est.fitted_on
    np.testing.assert_array_equal(X, _val()[0])
    np.testing.assert_array_equal(y, _val()[1])


def test_default_measure_is_accuracy():
    est = _Fixed(_Column().fit())
    assert (est.measure, est.random_state) == ("accuracy", None)
    assert est.get_params()["classifier"] is est.classifier
    est.fit(*_val())
    assert est.predict(_sample(0)) == pytest.approx(0.8)
    assert est.predict(_sample(1)) == pytest.approx(0.6)


def test_fit_errors_name_their_argument():
    X, y = _val()
    with pytest.raises(ValueError, match=r"^X_val is empty \(shape \(0, 3\)\): a sample needs at least one item$"):
        _Fixed(_Column().fit()).fit(X[:0], y[:0])
    with pytest.raises(ValueError, match=r"^y_val must have one label per item: expected shape \(10,\), got \(9,\)$"):
        _Fixed(_Column().fit()).fit(X, y[:9])
    with pytest.raises(ValueError, match=r"^y_val has no items of class\(es\) \[1\]"):
        _Fixed(_Column().fit()).fit(X[:4], y[:4])
    with pytest.raises(TypeError, match=r"^random_state must be "):
        _Fixed(_Column().fit(), random_state="zero").fit(X, y)
    with pytest.raises(ValueError, match=r"^unknown measure 'bogus'"):
        _Fixed(_Column().fit(), measure="bogus").fit(X, y)
    with pytest.raises(ValueError, match=re.escape("_Values only estimates ['acc'], not measure='f1'")):
        _Values(_Column().fit(), measure="f1").fit(X, y)


def test_fit_asks_for_predict_proba_only_when_the_method_needs_it():
    class _NeedsProba(_Fixed):
        needs_proba = True

    X, y = _val()
    _Fixed(_NoProba().fit()).fit(X, y)  # decisions are enough
    with pytest.raises(TypeError, match="predict_proba"):
        _NeedsProba(_NoProba().fit()).fit(X, y)


def test_a_failed_fit_leaves_the_estimator_unfitted():
    class _Fails(_Fixed):
        def _fit(self, X_val, y_val):
            if X_val.shape[0] < 10:
                raise RuntimeError("too few")
            super()._fit(X_val, y_val)

    X, y = _val()
    est = _Fails(_Column().fit()).fit(X, y)
    assert est.predict(_sample(0)) == pytest.approx(0.8)
    with pytest.raises(RuntimeError, match="too few"):
        est.fit(X[1:], y[1:])  # fails in the method's own _fit
    with pytest.raises(NotFittedError, match=r"^This _Fails instance is not fitted yet: call fit\(X_val, y_val\)"):
        est.predict(_sample(0))
    est.fit(X, y)
    with pytest.raises(ValueError, match="X_val is empty"):
        est.fit(X[:0], y[:0])  # fails in the checks: the previous fit is forgotten too
    assert not hasattr(est, "val_table_") and not hasattr(est, "n_classes_")
    with pytest.raises(NotFittedError):
        est.predict_table(_sample(0))


# ------------------------------------------------------------------------------------- declared evidence
def test_evidence_is_the_declared_minimum_and_reason():
    class _Needs3(_Fixed):
        min_per_class = 5.0
        evidence_reason = "five of each, for the test"

    est = _Needs3(_Column().fit())
    assert est.evidence() == (5, "five of each, for the test") and type(est.evidence()[0]) is int
    assert _Fixed(_Column().fit()).evidence() == (1, "every class must occur in V")
    msg = ("y_val has 4 item(s) of class 0: _Needs3 needs at least 5 validation items of every class (five of each, "
           "for the test); collect more validation items of class(es) [0]")
    with pytest.warns(InsufficientEvidenceWarning, match="^" + re.escape(msg + "; its estimate is unreliable")):
        est.fit(*_val())
    assert est.predict(_sample(1)) == pytest.approx(0.6)  # a warning: it still runs

    class _Hard(_Needs3):
        min_per_class_is_hard = True

    with pytest.raises(ValueError, match="^" + re.escape(msg.replace("_Needs3", "_Hard")) + "$"):
        _Hard(_Column().fit()).fit(*_val())


def test_reads_from_h_is_the_declared_tuple():
    class _Reads(_Fixed):
        needs_from_h = ["decisions", "confidence"]

    assert _Reads(_Column().fit()).reads_from_h() == ("decisions", "confidence")
    assert _Fixed(_Column().fit()).reads_from_h() == ()


# ---------------------------------------------------------------------------------------- degenerate h
_WORKS = ("Naive (the validation table: right without shift), LEAP/S-LEAP/O-LEAP with quantifier 'kdey' or "
          "'oracle', and QuAcc (their quantifiers read the covariates x) still work")


class _ReadsDecisions(_Fixed):
    needs_from_h = ("decisions",)


class _ReadsConfidence(_Fixed):
    needs_from_h = ("confidence",)


def _warned(monkeypatch, est, X, y):
    """The calls of warnings.warn made by ``est.fit(X, y)``: [(message, category, stacklevel)]."""
    calls = []
    monkeypatch.setattr(base.warnings, "warn", lambda msg, cat, stacklevel=1: calls.append((msg, cat, stacklevel)))
    est.fit(X, y)
    return calls


def test_degenerate_decisions_warn(monkeypatch):
    X, y = _val()
    X[:, 0] = 1  # h predicts class 1 on every item of V
    assert _warned(monkeypatch, _ReadsDecisions(_Column().fit()), X, y) == [(
        "h predicts only class 1 on V: _ReadsDecisions reads h's decisions, which then carry no information about "
        f"the class, so its estimate cannot be trusted. It needs h to predict at least 2 classes on V; {_WORKS}",
        DegenerateClassifierWarning, 3)]
    assert _warned(monkeypatch, _Fixed(_Column().fit()), X, y) == []  # a method that does not read the decisions
    assert _warned(monkeypatch, _ReadsDecisions(_Column().fit()), *_val()) == []  # two classes predicted
    assert _warned(monkeypatch, _ReadsConfidence(_Column().fit()), *_val()) == []  # h's posteriors vary


def test_degenerate_h_warning_points_at_the_line_calling_fit():
    if hasattr(CAPEstimator.fit, "__wrapped__"):
        pytest.skip("under mutmut a trampoline adds frames")
    X, y = _val()
    X[:, 0] = 0
    with pytest.warns(DegenerateClassifierWarning, match="^h predicts only class 0 on V") as rec:
        _ReadsDecisions(_Column().fit()).fit(X, y)
    assert len(rec) == 1 and rec[0].filename == __file__


@pytest.mark.parametrize("p, what", [(np.r_[np.zeros(5), np.ones(5) - 1e-10], "one-hot on every item"),
                                     (np.full(10, 0.7), "the same for every item"),
                                     (np.full(10, 0.7) + np.r_[np.zeros(9), 5e-10], "the same for every item"),
                                     # the tolerances are inclusive: a largest posterior of exactly 1 - 1e-9 is
                                     # one-hot; "the same" means within 1e-9 of the first item's posteriors
                                     (np.r_[np.zeros(5), np.full(5, 1 - 1e-9)], "one-hot on every item"),
                                     (0.7 + np.r_[0, 8e-10, -8e-10, np.zeros(7)], "the same for every item")])
def test_degenerate_confidence_warns(monkeypatch, p, what):
    X, y = _val()
    X[:, 1] = p
    assert _warned(monkeypatch, _ReadsConfidence(_Column().fit()), X, y) == [(
        f"h's posteriors on V are {what}: _ReadsConfidence reads h's confidence, which then carries no information "
        "beyond h's decision, so its estimate cannot be trusted. It needs posteriors that vary with the item and "
        f"are not all one-hot (e.g. a calibrated probabilistic classifier); {_WORKS}", DegenerateClassifierWarning, 3)]


class _Listed(_Column):
    """h whose posteriors are the features after the first."""

    def predict_proba(self, X):
        return np.asarray(X, dtype=float)[:, 1:]


def test_posteriors_within_exactly_1e_9_of_the_first_items_are_the_same(monkeypatch):
    # 3 classes: the third posterior moves by exactly the double 1e-9 (0.25 - 1e-9 moves by a hair less)
    y = np.array([0, 1, 2, 0, 1, 2])
    P = np.array([[0.75, 0.25, 0.0]] + [[0.75, 0.25 - 1e-9, 1e-9]] * 5)
    assert np.abs(P - P[0]).max() == 1e-9
    calls = _warned(monkeypatch, _ReadsConfidence(_Listed(3).fit()), np.c_[y, P], y)
    assert len(calls) == 1 and calls[0][0].startswith("h's posteriors on V are the same for every item: ")


def test_confidence_that_varies_a_little_is_not_degenerate():
    X, y = _val()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        X[:, 1] = np.r_[np.zeros(5), np.ones(5) - 1e-6]  # almost one-hot
        _ReadsConfidence(_Column().fit()).fit(X, y)
        X[:, 1] = 0.7 + np.r_[np.zeros(9), 1e-6]  # almost the same
        _ReadsConfidence(_Column().fit()).fit(X, y)
        X[:, 1] = np.r_[np.zeros(5), np.ones(5)]  # one-hot, but h has no predict_proba to read
        _ReadsConfidence(_NoProba().fit()).fit(X, y)


# ------------------------------------------------------------------------------------------- prediction
def test_predict_routes_the_measure_and_the_prevalence_to_the_table():
    est = _fitted()
    for name, (v0, v1) in HAND.items():
        assert est.predict(_sample(0), name) == pytest.approx(v0, abs=1e-12)
        assert est.predict(_sample(1), measure=name) == pytest.approx(v1, abs=1e-12)
    assert est.predict(_sample(1), "bacc") == pytest.approx(HAND["balanced_accuracy"][1], abs=1e-12)
    assert est.predict(_sample(1), accuracy) == pytest.approx(0.6, abs=1e-12)  # a callable measure
    assert type(est.predict(_sample(0))) is float
    est.calls.clear()
    X = _sample(1)
    est.predict(X, prevalence=[0.25, 0.75])
    (samples, prev, post), = est.calls
    assert len(samples) == 1 and np.array_equal(samples[0], X) and post is None
    np.testing.assert_array_equal(prev, [[0.25, 0.75]])
    est.predict(X)
    assert est.calls[-1][1] is None


def test_predict_batch_is_the_loop_of_predict():
    est = _fitted(measure="f1")
    samples = [_sample(1), _sample(0, m=5), _sample(1, m=2)]
    out = est.predict_batch(samples)
    assert out.shape == (3,) and out.dtype == float
    np.testing.assert_allclose(out, [est.predict(X) for X in samples], rtol=0, atol=1e-15)
    np.testing.assert_allclose(out, [5 / 7, 0.75, 5 / 7], rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.predict_batch(samples, "accuracy"), [0.6, 0.8, 0.6], rtol=0, atol=1e-12)
    est.calls.clear()
    P = [np.full((3, 2), 0.5), np.tile([0.2, 0.8], (5, 1)), np.full((2, 2), 0.5)]
    np.testing.assert_allclose(est.predict_batch(samples, measure="acc", prevalences=[[0.5, 0.5], [0.1, 0.9], [1, 0]],
                                                 posteriors=P), [0.6, 0.8, 0.6], atol=1e-12)
    (got, prev, post), = est.calls
    assert len(got) == 3 and all(np.array_equal(a, b) for a, b in zip(got, samples))
    np.testing.assert_array_equal(prev, [[0.5, 0.5], [0.1, 0.9], [1, 0]])
    assert len(post) == 3 and all(np.array_equal(a, b) for a, b in zip(post, P))


def test_predict_measures_estimates_each_table_once_for_every_measure():
    est = _fitted()
    samples = [_sample(0), _sample(1)]
    out = est.predict_measures(samples, ["accuracy", "macro_f1", "balanced_accuracy"])
    assert list(out) == ["accuracy", "macro_f1", "balanced_accuracy"] and len(est.calls) == 1
    for name, v in out.items():
        np.testing.assert_allclose(v, HAND[name], rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.predict_measures(samples, "f1")["f1"], HAND["f1"], atol=1e-12)  # one name
    out = est.predict_measures(samples, accuracy)  # one callable
    assert list(out) == [accuracy]
    np.testing.assert_allclose(out[accuracy], [0.8, 0.6], atol=1e-12)


def test_predict_measures_leaves_out_what_the_method_does_not_support():
    est = _fitted(_Values)
    samples = [_sample(3), _sample(7)]
    out = est.predict_measures(samples, ["f1", "accuracy", "acc"])
    assert list(out) == ["accuracy", "acc"]
    np.testing.assert_allclose(out["accuracy"], [0.3, 0.7], atol=1e-12)
    assert est.predict_measures(samples, ["f1", "macro_f1"]) == {}
    assert est.predict_measures(samples, "f1") == {}
    assert len(est.calls) == 2  # once per measure: a measure-only method has no table to share
    assert est.calls[0][1] == "accuracy" and est.calls[1][1] == "acc"
    with pytest.raises(ValueError, match=r"^samples is empty"):  # samples are checked even when nothing is left
        est.predict_measures([], ["f1"])
    with pytest.raises(ValueError, match=r"^unknown measure 'bogus'"):
        est.predict_measures(samples, ["accuracy", "bogus"])


def test_measure_only_methods_route_measure_prevalences_and_posteriors():
    est = _fitted(_Values)
    X = _sample(4)
    assert est.predict(X) == pytest.approx(0.4, abs=1e-12) and type(est.predict(X)) is float
    assert est.calls[-1][1] == "accuracy"
    est.predict(X, "acc", prevalence=[0.4, 0.6])
    samples, measure, prev, post = est.calls[-1]
    assert measure == "acc" and post is None and np.array_equal(samples[0], X)
    np.testing.assert_array_equal(prev, [[0.4, 0.6]])
    P = [np.full((3, 2), 0.5), np.full((3, 2), 0.5)]
    np.testing.assert_allclose(est.predict_batch([X, _sample(9)], prevalences=[[0.4, 0.6], [1, 0]], posteriors=P),
                               [0.4, 0.9], atol=1e-12)
    samples, measure, prev, post = est.calls[-1]
    assert measure == "accuracy" and len(post) == 2 and np.array_equal(post[1], P[1])
    np.testing.assert_array_equal(prev, [[0.4, 0.6], [1, 0]])
    msg = "_Values estimates measures directly, not contingency tables: use predict or predict_batch"
    with pytest.raises(TypeError, match="^" + re.escape(msg) + "$"):
        est.predict_table(X)
    with pytest.raises(TypeError, match="^" + re.escape(msg) + "$"):
        est.predict_table_batch([X])


def test_predict_table_and_its_batch():
    est = _fitted()
    X0, X1 = _sample(0), _sample(1)
    T = est.predict_table(X1)
    np.testing.assert_array_equal(T, TABLES[1])
    (samples, prev, post), = est.calls
    assert len(samples) == 1 and np.array_equal(samples[0], X1) and prev is None and post is None
    np.testing.assert_array_equal(est.predict_table_batch([X1, X0, X1]), TABLES[[1, 0, 1]])
    est.predict_table(X0, prevalence=[0.6, 0.4])
    np.testing.assert_array_equal(est.calls[-1][1], [[0.6, 0.4]])
    assert est.calls[-1][2] is None
    est.predict_table_batch([X0, X1], prevalences=np.array([[0.6, 0.4], [0.3, 0.7]]))
    np.testing.assert_array_equal(est.calls[-1][1], [[0.6, 0.4], [0.3, 0.7]])
    assert est.calls[-1][2] is None and len(est.calls[-1][0]) == 2


def test_the_base_class_has_no_hooks():
    est = CAPEstimator(_Column().fit()).fit(*_val())
    with pytest.raises(NotImplementedError):
        est.predict(_sample(0))
    est.estimates_tables = False
    with pytest.raises(NotImplementedError):
        est.predict(_sample(0))


# ------------------------------------------------------------------------------------ supported measures
def test_supports_each_measure():
    tab, val = _Fixed(_Column().fit()), _Values(_Column().fit())
    for name in ["accuracy", "acc", "ACCURACY", "f1", "binary_f1", "macro_f1", "macro-f1", "balanced_accuracy",
                 "bacc", accuracy]:
        assert tab.supports(name) is True
    for name in ["accuracy", "acc", "Accuracy", accuracy]:
        assert val.supports(name) is True
    for name in ["f1", "binary_f1", "macro_f1", "balanced_accuracy", "bacc"]:
        assert val.supports(name) is False
    for est in (tab, val):
        with pytest.raises(ValueError, match=r"^unknown measure 'bogus'; known measures: \['accuracy', "):
            est.supports("bogus")


def test_unsupported_measure_errors():
    class _OnlyAccuracy(_Fixed):  # decides by itself (supported_measures stays None)
        def supports(self, measure):
            return super().supports(measure) and base.get_measure(measure) is accuracy

    X, y = _val()
    est = _OnlyAccuracy(_Column().fit()).fit(X, y)
    msg = ("_OnlyAccuracy cannot estimate measure='f1' (its supports() says so): choose a measure it supports")
    for call in (lambda: est.predict(_sample(0), "f1"), lambda: est.predict_batch([_sample(0)], "f1"),
                 lambda: est.predict_estimate(_sample(0), measure="f1"),
                 lambda: _OnlyAccuracy(_Column().fit(), measure="f1").fit(X, y)):
        with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
            call()
    val = _fitted(_Values)
    msg = "_Values only estimates ['acc'], not measure='macro_f1'"
    for call in (lambda: val.predict(_sample(0), "macro_f1"), lambda: val.predict_batch([_sample(0)], "macro_f1"),
                 lambda: val.predict_interval(_sample(0), measure="macro_f1"),
                 lambda: val.predict_estimate(_sample(0), measure="macro_f1")):
        with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
            call()
    with pytest.raises(ValueError, match=r"^unknown measure 'bogus'"):
        est.predict(_sample(0), "bogus")


# ---------------------------------------------------------------------------------------- input checks
def test_predict_before_fit_raises_not_fitted():
    est = _Fixed(_Column().fit())
    msg = r"^This _Fixed instance is not fitted yet: call fit\(X_val, y_val\) first$"
    for call in (lambda: est.predict(_sample(0)), lambda: est.predict(_sample(0), "bogus"),
                 lambda: est.predict_batch([_sample(0)]), lambda: est.predict_batch([_sample(0)], "bogus"),
                 lambda: est.predict_measures([_sample(0)], ["accuracy"]), lambda: est.predict_table(_sample(0)),
                 lambda: est.predict_table_batch([_sample(0)]), lambda: est.predict_interval(_sample(0)),
                 lambda: est.predict_interval_batch([_sample(0)]), lambda: est.predict_estimate(_sample(0)),
                 lambda: est.predict_estimate(_sample(0), measure="bogus"),
                 lambda: est.predict_interval_measures([_sample(0)], ["accuracy"])):
        with pytest.raises(NotFittedError, match=msg):
            call()
    with pytest.raises(NotFittedError, match=r"^This _Values instance is not fitted yet"):
        _Values(_Column().fit()).predict_table(_sample(0))  # unfitted comes first


def test_sample_errors_name_the_sample():
    est = _fitted()
    two = np.zeros((3, 2))
    with pytest.raises(ValueError, match=r"^X must be a 2-d array of items x features, got shape \(3,\)"):
        est.predict(np.zeros(3))
    for call, name in [(lambda: est.predict(two), "X"), (lambda: est.predict_table(two), "X"),
                       (lambda: est.predict_interval(two), "X"), (lambda: est.predict_estimate(two), "X"),
                       (lambda: est.predict_batch([_sample(0), two]), "samples[1]"),
                       (lambda: est.predict_measures([two], "f1"), "samples[0]"),
                       (lambda: est.predict_table_batch([_sample(1), two]), "samples[1]"),
                       (lambda: est.predict_interval_batch([two]), "samples[0]")]:
        with pytest.raises(ValueError, match="^" + re.escape(name) + r" has 2 features, but the estimator was fitted"):
            call()
    with pytest.raises(ValueError, match=r"^samples is empty: pass a list with at least one sample$"):
        est.predict_table_batch([])


def test_prevalence_errors():
    est = _fitted()
    X = _sample(0)
    with pytest.raises(ValueError, match=re.escape("prevalence must have shape (2,) (the true prevalence of each "
                                                   "sample), got (1, 2)")):
        est.predict(X, prevalence=[[0.5, 0.5]])
    with pytest.raises(ValueError, match=r"^prevalence must have shape \(\.\.\., 2\)"):
        est.predict_table(X, prevalence=[0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match=r"^prevalence must have shape \(2,\) .*got \(1, 2\)$"):
        est.predict_interval(X, prevalence=[[0.5, 0.5]])
    with pytest.raises(ValueError, match=re.escape("prevalences must have shape (2, 2) (the true prevalence of each "
                                                   "sample), got (2,)")):
        est.predict_batch([X, X], prevalences=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"^prevalences must have shape \(3, 2\) .*got \(2, 2\)$"):
        est.predict_table_batch([X, X, X], prevalences=[[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"^prevalences has negative values"):
        est.predict_interval_batch([X], prevalences=[[-0.5, 1.5]])


def test_posterior_errors():
    est = _fitted()
    X = _sample(0)
    with pytest.raises(ValueError, match=r"^posteriors must hold one matrix per sample: got 1 for 2 samples$"):
        est.predict_batch([X, X], posteriors=[np.full((3, 2), 0.5)])
    with pytest.raises(ValueError, match=r"^posteriors\[1\] has 2 rows but samples\[1\] has 3 items$"):
        est.predict_measures([X, X], "f1", posteriors=[np.full((3, 2), 0.5), np.full((2, 2), 0.5)])
    with pytest.raises(ValueError, match=r"^posteriors\[1\] has 4 rows but samples\[1\] has 5 items$"):
        est.predict_batch([X, _sample(1, m=5)], posteriors=[np.full((3, 2), 0.5), np.full((4, 2), 0.5)])
    with pytest.raises(ValueError, match=r"^posteriors\[0\] must have shape \(\.\.\., 2\) \(one entry per class\), "
                                         r"got \(3, 3\)$"):
        est.predict_batch([X], posteriors=[np.full((3, 3), 1 / 3)])
    with pytest.raises(ValueError, match=r"^posteriors\[0\] has 2 rows but samples\[0\] has 3 items$"):
        est.predict_estimate(X, posteriors=np.full((2, 2), 0.5))


def test_check_sample():
    X = check_sample([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match=r"^X is empty"):
        check_sample(np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"^U is empty"):
        check_sample(np.zeros((0, 2)), "U")
    with pytest.raises(ValueError, match=r"^X has 2 features, but the estimator was fitted on 3 features"):
        check_sample(X, n_features=3)
    check_sample(X, "U", n_features=2)


def test_sample_estimate_is_a_frozen_record():
    e = SampleEstimate(0.7, 0.6, 0.8)
    assert (e.value, e.lower, e.upper, e.table) == (0.7, 0.6, 0.8, None)
    with pytest.raises(FrozenInstanceError):
        e.value = 0.5


# ------------------------------------------------------------------------------------- prediction intervals
class _RecordingInterval:
    """Stands in for ConformalInterval: records how base builds, fits and asks it; its bounds are point -/+ alpha."""

    made: list = []

    def __init__(self, estimator, random_state, **params):
        self.estimator, self.random_state, self.params, self.asked = estimator, random_state, params, []
        _RecordingInterval.made.append(self)

    def fit(self, X_val, y_val, point_estimator=None):
        self.fitted_on = (X_val, y_val, point_estimator)
        return self

    def bounds(self, samples, point, measure, alpha):
        self.asked.append((samples, np.asarray(point), measure, alpha))
        return np.c_[np.asarray(point) - alpha, np.asarray(point) + alpha]


@pytest.fixture
def recording(monkeypatch):
    monkeypatch.setattr(base, "ConformalInterval", _RecordingInterval)
    _RecordingInterval.made.clear()
    return _RecordingInterval.made


def test_predict_interval_calibrates_once_on_V_with_the_methods_parameters(recording):
    est = _fitted(measure="f1")
    X = _sample(1)
    lo, hi = est.predict_interval(X)  # default alpha 0.05, default measure f1
    assert type(lo) is float and type(hi) is float
    assert (lo, hi) == pytest.approx((5 / 7 - 0.05, 5 / 7 + 0.05), abs=1e-12)
    (ci,) = recording
    assert ci.estimator is est and ci.random_state == 0 and ci.params == base.MC_INTERVALS
    X_val, y_val, point_estimator = ci.fitted_on
    assert point_estimator is est
    np.testing.assert_array_equal(X_val, _val()[0])
    np.testing.assert_array_equal(y_val, _val()[1])
    samples, point, measure, alpha = ci.asked[0]
    assert measure == "f1" and alpha == 0.05 and np.array_equal(samples[0], X)
    np.testing.assert_allclose(point, [5 / 7], atol=1e-12)
    assert est.predict_interval(X, 0.2, "accuracy") == pytest.approx((0.4, 0.8), abs=1e-12)
    assert est.predict_interval(X, alpha=0.1, measure="bacc") == pytest.approx((13 / 24 - 0.1, 13 / 24 + 0.1),
                                                                               abs=1e-12)
    assert len(recording) == 1 and [a[2:] for a in ci.asked[1:]] == [("accuracy", 0.2), ("bacc", 0.1)]
    est.fit(*_val())  # a refit forgets the calibration
    est.predict_interval(X)
    assert len(recording) == 2


def test_predict_interval_seed_and_parameters(recording):
    est = _fitted(random_state=7)
    est.interval_params = {"scheme": "split", "n_cal": 30}
    est.predict_interval(_sample(0))
    assert recording[0].random_state == 7 and recording[0].params == {"scheme": "split", "n_cal": 30}


def test_predict_interval_routes_the_prevalence(recording):
    est = _fitted()
    est.predict_interval(_sample(0), prevalence=[0.3, 0.7])
    samples, prev, post = est.calls[-1]
    assert len(samples) == 1 and post is None
    np.testing.assert_array_equal(np.asarray(prev), [[0.3, 0.7]])
    est.predict_interval(_sample(0))
    assert est.calls[-1][1] is None


def test_interval_batch_is_the_loop_of_predict_interval(recording):
    est = _fitted(measure="macro_f1")
    samples = [_sample(0), _sample(1), _sample(0, m=4)]
    out = est.predict_interval_batch(samples, 0.1)
    assert out.shape == (3, 2)
    np.testing.assert_allclose(out, [est.predict_interval(X, 0.1) for X in samples], rtol=0, atol=1e-15)
    m0, m1 = HAND["macro_f1"]
    np.testing.assert_allclose(out, [[m0 - 0.1, m0 + 0.1], [m1 - 0.1, m1 + 0.1], [m0 - 0.1, m0 + 0.1]], atol=1e-12)
    np.testing.assert_allclose(est.predict_interval_batch(samples, measure="acc")[:, 1], [0.85, 0.65, 0.85], atol=1e-12)
    est.predict_interval_batch(samples[:2], prevalences=[[0.3, 0.7], [1, 0]])
    np.testing.assert_array_equal(est.calls[-1][1], [[0.3, 0.7], [1, 0]])


def test_interval_measures_leave_out_what_the_method_does_not_support(recording):
    est = _fitted(_Values)
    samples = [_sample(2), _sample(6)]
    out = est.predict_interval_measures(samples, ["f1", "acc"], alpha=0.25)
    assert list(out) == ["acc"]
    np.testing.assert_allclose(out["acc"], [[-0.05, 0.45], [0.35, 0.85]], atol=1e-12)
    assert est.predict_interval_measures(samples, "f1") == {}
    np.testing.assert_allclose(est.predict_interval_measures(samples, "accuracy")["accuracy"],
                               [[0.15, 0.25], [0.55, 0.65]], atol=1e-12)  # one name, default alpha 0.05
    assert len(recording) == 1


def test_predict_estimate_is_predict_interval_and_table_in_one(recording):
    est = _fitted(measure="binary_f1")
    X = _sample(1)
    e = est.predict_estimate(X)
    assert type(e) is SampleEstimate and type(e.value) is float and type(e.lower) is float
    assert (e.value, e.lower, e.upper) == pytest.approx((5 / 7, 5 / 7 - 0.05, 5 / 7 + 0.05), abs=1e-12)
    np.testing.assert_array_equal(e.table, TABLES[1])
    (samples, prev, post), = est.calls  # the table estimated once
    assert prev is None and post is None and np.array_equal(samples[0], X)
    P = np.tile([0.3, 0.7], (3, 1))
    e = est.predict_estimate(X, 0.2, "accuracy", posteriors=P)
    assert (e.value, e.lower, e.upper) == pytest.approx((0.6, 0.4, 0.8), abs=1e-12)
    assert len(est.calls[-1][2]) == 1 and np.array_equal(est.calls[-1][2][0], P)
    assert recording[0].asked[-1][2:] == ("accuracy", 0.2)
    val = _fitted(_Values)
    e = val.predict_estimate(_sample(4), alpha=0.1, posteriors=P)
    assert (e.value, e.lower, e.upper, e.table) == pytest.approx((0.4, 0.3, 0.5, None), abs=1e-12)
    samples, measure, prev, post = val.calls[-1]
    assert measure == "accuracy" and prev is None and np.array_equal(post[0], P)


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1])
def test_alpha_outside_0_1_is_refused(recording, alpha):
    est = _fitted()
    msg = r"^alpha must be in \(0\.0, 1\.0\), got " + re.escape(repr(alpha)) + "$"
    for call in (lambda: est.predict_interval(_sample(0), alpha), lambda: est.predict_estimate(_sample(0), alpha),
                 lambda: est.predict_interval_batch([_sample(0)], alpha),
                 lambda: est.predict_interval_measures([_sample(0)], ["f1"], alpha)):
        with pytest.raises(ValueError, match=msg):
            call()
    assert recording == []


def test_predict_estimate_with_the_real_interval():
    est = _fitted()
    est.interval_params = {"scheme": "mc", "n_splits": 2, "n_cal": 20, "score": "absolute", "floor": False}
    X = _sample(1)
    e = est.predict_estimate(X, 0.2)
    assert (e.lower, e.upper) == est.predict_interval(X, 0.2)
    assert e.value == est.predict(X) == pytest.approx(0.6)
    np.testing.assert_array_equal(e.table, est.predict_table(X))


# ------------------------------------------------------------------------------------ h's predicted fractions
def test_pred_prev_is_the_fraction_h_assigns_to_each_class():
    est = CAPEstimator(_Column(3).fit())
    X = np.c_[[0, 2, 2, 0, 2], np.zeros(5)]
    est.fit(np.c_[[0, 1, 2], np.zeros(3)], [0, 1, 2])
    np.testing.assert_allclose(est._pred_prev(X), [0.4, 0.0, 0.6], atol=1e-15)


def test_pred_prevs_calls_h_once_on_every_item():
    h = _Column(3).fit()
    est = CAPEstimator(h).fit(np.c_[[0, 1, 2], np.zeros(3)], [0, 1, 2])
    samples = [np.c_[[0, 2, 2, 0, 2], np.zeros(5)], np.c_[[1, 1], np.zeros(2)], np.c_[[2, 0, 1, 2], np.zeros(4)]]
    want = [[0.4, 0.0, 0.6], [0.0, 1.0, 0.0], [0.25, 0.25, 0.5]]
    h.calls = 0
    np.testing.assert_allclose(est._pred_prevs(samples), want, atol=1e-15)
    assert h.calls == 1
    np.testing.assert_allclose(est._pred_prevs(samples[:2]), want[:2], atol=1e-15)
    assert h.calls == 2
    np.testing.assert_allclose(est._pred_prevs([sp.csr_matrix(X) for X in samples]), want, atol=1e-15)
    np.testing.assert_allclose(est._pred_prevs([samples[0], sp.csr_matrix(samples[2])]), want[::2], atol=1e-15)
    np.testing.assert_allclose(est._pred_prevs(samples[2:]), want[2:], atol=1e-15)


# ---------------------------------------------------------------------------------------- float results
def test_measures_are_returned_as_floats():
    est = _fitted()
    samples = [_sample(0), _sample(1)]

    def hits_half(C):  # a callable measure returning booleans: is the accuracy at least 0.7?
        return np.trace(C, axis1=-2, axis2=-1) >= 0.7

    out = est.predict_batch(samples, hits_half)
    assert out.dtype == np.float64 and out.tolist() == [1.0, 0.0]
    assert est.predict_measures(samples, [hits_half])[hits_half].dtype == np.float64

    class _Counts(_Values):  # a measure-only method whose hook returns integers
        def _predict_values(self, samples, measure, prevalences, posteriors):
            return np.array([int(X[0, 2]) for X in samples])

    out = _fitted(_Counts).predict_batch([_sample(3), _sample(1)])
    assert out.dtype == np.float64 and out.tolist() == [3.0, 1.0]


def test_nothing_is_estimated_when_no_measure_is_supported(recording):
    class _AccuracyOnly(_Fixed):
        supported_measures = ("accuracy",)

    est = _fitted(_AccuracyOnly)
    assert est.predict_measures([_sample(0)], ["f1", "macro_f1"]) == {}
    assert est.predict_interval_measures([_sample(0)], ["f1", "macro_f1"]) == {}
    assert est.calls == [] and recording == []
    np.testing.assert_allclose(est.predict_interval_measures([_sample(0)], ["f1", "acc"])["acc"], [[0.75, 0.85]])

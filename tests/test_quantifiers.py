"""capshift.quantifiers on hand-made posteriors: every quantifier's estimate computed by hand.

The target classifier of these tests, :class:`_Posteriors`, reads its posteriors from the first features of
an item (so hand-made items are hand-made posteriors) and predicts their argmax (ties to the lower class).
On them CC, PCC, ACC, PACC and SLD/EMQ have closed-form estimates; the oracle returns the prevalence it is given.
Also pinned: quantify_batch as a loop of quantify, the names and errors of resolve_quantifier and
check_prevalence, min_per_class, the seeded subsample of fit_subsample, digest, unfitted, make_quantifier,
fitted_quantifier and SharedQuantifier's shared fits and estimates, and every error message of the module.
"""
import copy
import hashlib
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from quapy.method.aggregative import ACC, CC, EMQ, PACC, PCC, KDEyML
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError

from capshift import quantifiers
from capshift._acc import ACCEvaluator
from capshift._kdey import KDEyEvaluator
from capshift.quantifiers import (QUANTIFIERS, Quantifier, SharedQuantifier, check_prevalence, digest,
                                  fitted_quantifier, make_quantifier, resolve_quantifier)
from capshift.validation import InsufficientEvidenceWarning


class _Posteriors(ClassifierMixin, BaseEstimator):
    """A classifier over 0..n-1 (fitting learns nothing) whose posteriors are the first n features of x;
    predicts their argmax (ties to the lower class)."""

    def __init__(self, n_classes=2):
        self.n_classes = n_classes

    def fit(self, X=None, y=None):
        self.classes_ = np.arange(self.n_classes)
        return self

    def predict_proba(self, X):
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
        return X[:, :self.n_classes]

    def predict(self, X):
        return self.predict_proba(X).argmax(axis=1)


class _NoProba(ClassifierMixin, BaseEstimator):
    """A fitted classifier over 0..1 with predict only."""

    def fit(self, X=None, y=None):
        self.classes_ = np.arange(2)
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].round().astype(int)


H = _Posteriors(2).fit()
# V: h predicts class 0 right on 3 of its 4 items and class 1 right on 2 of its 4: P(h = i | y = j) is
# A = [[3/4, 1/2], [1/4, 1/2]]; the mean posteriors per class (PACC's matrix) are (0.7, 0.3) and (0.4125, 0.5875)
X_V = np.array([[.9, .1], [.8, .2], [.7, .3], [.4, .6], [.6, .4], [.3, .7], [.55, .45], [.2, .8]])
Y_V = np.array([0, 0, 0, 0, 1, 1, 1, 1])
# samples: 3 items predicted 0 and 2 predicted 1 (CC 0.6: ACC solves 3/4 p + 1/2 (1 - p) = 0.6, p = 0.4);
# 2 sure of class 0, 1 sure of class 1, one undecided (CC 3/4 with the tie; PCC 0.625; PACC solves
# 0.4125 + 0.2875 p = 0.625, p = 17/23; SLD's fixed point with the training prevalence 1/2: p = (2 + p) / 4, 2/3)
S1 = np.array([[1., 0.], [.9, .1], [.6, .4], [.3, .7], [0., 1.]])
S2 = np.array([[1., 0.], [1., 0.], [0., 1.], [.5, .5]])


def _fit(method, **kw):
    return Quantifier(method, kw.pop("classifier", H), **kw).fit(X_V, Y_V, 2)


def _exact(pattern):
    """A pytest ``match`` for exactly the message ``pattern`` (no regex)."""
    return "^" + re.escape(pattern) + "$"


# ---- each quantifier's estimate on hand-made posteriors ----

def test_cc_counts_the_predicted_classes():
    q = _fit("cc")
    np.testing.assert_array_equal(q.classify(S2), [0, 0, 1, 0])
    np.testing.assert_allclose(q.quantify(S2), [0.75, 0.25], atol=1e-12)
    np.testing.assert_allclose(q.quantify(S1), [0.6, 0.4], atol=1e-12)
    np.testing.assert_allclose(q.aggregate(np.array([1, 1, 1, 0])), [0.25, 0.75], atol=1e-12)
    assert q.fast_ is None and q.q_.fit_classifier is False and q.q_.classifier is H


def test_pcc_averages_the_posteriors():
    q = Quantifier(PCC(H, fit_classifier=False)).fit(X_V, Y_V, 2)
    np.testing.assert_allclose(q.classify(S2), S2, atol=0)
    np.testing.assert_allclose(q.quantify(S2), [0.625, 0.375], atol=1e-12)
    np.testing.assert_allclose(q.aggregate(np.array([[.2, .8], [.6, .4]])), [0.4, 0.6], atol=1e-12)


@pytest.mark.parametrize("backend", ["capshift", "quapy"])
def test_acc_inverts_the_misclassification_table(backend):
    q = _fit("acc", kdey_backend=backend)
    np.testing.assert_allclose(q.q_.Pte_cond_estim_, [[.75, .5], [.25, .5]], atol=1e-12)
    assert isinstance(q.fast_, ACCEvaluator) if backend == "capshift" else q.fast_ is None
    assert q.kdey_backend == backend and q.q_.fit_classifier is False and q.q_.val_split is None
    # QuaPy's SLSQP stops at ftol 1e-6; the exact solve is exact
    tol = 1e-12 if backend == "capshift" else 1e-3
    np.testing.assert_allclose(q.quantify(S1), [0.4, 0.6], atol=tol)
    np.testing.assert_allclose(q.aggregate(np.array([0, 0, 0, 0])), [1.0, 0.0], atol=tol)  # clipped at the simplex
    np.testing.assert_allclose(q.quantify_batch([S1, S1[:1], S2[2:3]]), [[0.4, 0.6], [1, 0], [0, 1]], atol=tol)


def test_pacc_inverts_the_mean_posteriors():
    q = Quantifier(PACC(H, fit_classifier=False, val_split=None)).fit(X_V, Y_V, 2)
    np.testing.assert_allclose(q.q_.Pte_cond_estim_, [[.7, .4125], [.3, .5875]], atol=1e-12)
    np.testing.assert_allclose(q.quantify(S2), [17 / 23, 6 / 23], atol=1e-3)  # QuaPy's SLSQP


def test_sld_reaches_the_em_fixed_point():
    q = _fit("sld")
    assert q.q_.fit_classifier is False and q.q_.val_split is None
    # one-hot posteriors stay one-hot under any prior: the fixed point is their count
    np.testing.assert_allclose(q.quantify(np.array([[1., 0.], [0., 1.], [0., 1.]])), [1 / 3, 2 / 3], atol=1e-9)
    # the undecided item takes the current estimate: p = (2 + p) / 4, 2/3 (EM stops within 1e-4 of it)
    np.testing.assert_allclose(q.quantify(S2), [2 / 3, 1 / 3], atol=1e-4)


def test_oracle_returns_the_prevalence_it_is_given():
    q = Quantifier("oracle").fit(X_V, Y_V, 2)
    assert q.q_ is None and q.fast_ is None and q.classify(S1) is None and q.n_features_in_ == 2
    np.testing.assert_array_equal(q.quantify(S1, [0.3, 0.7]), [0.3, 0.7])
    np.testing.assert_array_equal(q.aggregate(None, [-1e-7, 1.0]), [0.0, 1.0])  # round-off clipped
    np.testing.assert_array_equal(q.quantify_batch([S1, S2], [[0.3, 0.7], [1.0, 0.0]]), [[0.3, 0.7], [1.0, 0.0]])
    assert q.quantify_batch([], []).shape == (0, 2)
    with pytest.raises(ValueError, match=_exact("the oracle quantifier needs the true prevalence: pass prevalence=")):
        q.quantify(S1)
    with pytest.raises(ValueError,
                       match=_exact("the oracle quantifier needs the true prevalences: pass prevalences=")):
        q.quantify_batch([S1])
    with pytest.raises(ValueError, match=r"^prevalence must be a probability distribution"):
        q.quantify(S1, [0.3, 0.8])
    with pytest.raises(ValueError, match=r"^prevalence must have shape \(\.\.\., 2\)"):
        q.quantify_batch([S1], [[0.2, 0.3, 0.5]])


@pytest.mark.parametrize("method", ["cc", "acc", "sld", "kdey-h"])
@pytest.mark.parametrize("backend", ["capshift", "quapy"])
def test_quantify_batch_is_quantify_per_sample(method, backend):
    q = _fit(method, kdey_backend=backend)
    samples = [S1, S2, S2[:1], S1[1:4]]
    one = np.stack([q.quantify(X) for X in samples])
    np.testing.assert_allclose(q.quantify_batch(samples), one, atol=1e-9)
    np.testing.assert_allclose(q.quantify_batch([sp.csr_matrix(X) for X in samples]), one, atol=1e-9)
    assert q.quantify_batch([]).shape == (0, 2)


class _Counting(_Posteriors):
    """_Posteriors counting its predict_proba calls."""

    calls = 0

    def predict_proba(self, X):
        type(self).calls += 1
        return super().predict_proba(X)


class _BatchSpy:
    """Wraps a capshift evaluator, recording the batches it is given."""

    def __init__(self, fast):
        self.fast, self.batches = fast, []

    def aggregate(self, P):
        return self.fast.aggregate(P)

    def aggregate_batch(self, Ps):
        self.batches.append([np.array(P) for P in Ps])
        return self.fast.aggregate_batch(Ps)


@pytest.mark.parametrize("method", ["acc", "kdey-h"])
def test_quantify_batch_classifies_once_and_solves_one_batch(method):
    h = _Counting(2).fit()
    q = Quantifier(method, h).fit(X_V, Y_V, 2)
    spy = q.fast_ = _BatchSpy(q.fast_)
    one = np.stack([q.quantify(X) for X in (S1, S2, S2[:1])])
    _Counting.calls = 0
    np.testing.assert_allclose(q.quantify_batch([S1, S2, S2[:1]]), one, atol=1e-9)
    assert _Counting.calls == 1 and len(spy.batches) == 1
    expect = [S1, S2, S2[:1]] if method == "kdey-h" else [[0, 0, 0, 1, 1], [0, 0, 1, 0], [0]]
    assert len(spy.batches[0]) == 3
    for got, want in zip(spy.batches[0], expect):
        np.testing.assert_array_equal(got, want)
    _Counting.calls = 0
    q.quantify_batch([sp.csr_matrix(S1), S2])  # sparse samples are classified one by one
    assert _Counting.calls == 2 and len(spy.batches) == 2


def test_kdey_h_reads_the_classifiers_posteriors():
    q = _fit("kdey-h", bandwidth=0.2, random_state=3)
    assert isinstance(q.fast_, KDEyEvaluator)
    assert (q.q_.classifier is H and q.q_.fit_classifier is False and q.q_.val_split is None
            and q.q_.bandwidth == 0.2 and q.q_.random_state == 3)
    # the class densities hold V's posteriors of each class
    assert [len(k.tree_.data) for k in q.q_.mix_densities] == [4, 4]
    # a sample of class 0's own posteriors is estimated as mostly class 0
    assert q.quantify(X_V[:4])[0] > 0.6 and q.quantify(X_V[4:])[1] > 0.6


def test_kdey_builds_a_surrogate_mlp_with_five_folds():
    q = Quantifier("kdey", random_state=4, bandwidth=0.3)
    assert q.min_per_class == 5 and q.classifier is None
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 10)
    with warnings.catch_warnings():  # the MLP stops at 200 iterations unconverged, silently
        warnings.simplefilter("error")
        q.fit(rng.normal(size=(20, 2)) + 3 * y[:, None], y, 2)
    assert (q.q_.val_split == 5 and q.q_.bandwidth == 0.3 and q.q_.random_state == 4
            and q.q_.classifier.random_state == 4 and type(q.q_.classifier).__name__ == "MLPClassifier")
    assert isinstance(q.fast_, KDEyEvaluator)


@pytest.mark.parametrize("method", ["acc", "sld", "kdey-h", "cc"])
def test_fitting_on_the_classifiers_own_posteriors_is_silent(method):
    # QuaPy warns when a fitted classifier is given val_split=5 (its default for ACC and KDEyML): capshift
    # passes val_split=None (h's predictions on V are already held out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = _fit(method)
    assert getattr(q.q_, "val_split", None) is None


def test_fast_backend_is_only_for_the_gaussian_kdey_and_supported_acc():
    aitchison = Quantifier(KDEyML(H, fit_classifier=False, val_split=None, kernel="aitchison")).fit(X_V, Y_V, 2)
    assert aitchison.fast_ is None
    exact = Quantifier(ACC(H, fit_classifier=False, val_split=None, solver="exact-raise")).fit(X_V, Y_V, 2)
    assert exact.fast_ is None
    np.testing.assert_allclose(exact.quantify(S1), [0.4, 0.6], atol=1e-12)
    sld = _fit("sld")
    assert sld.fast_ is None


def test_set_kdey_backend_switches_inference_without_refitting():
    q = _fit("acc", kdey_backend="quapy")
    fitted = q.q_
    assert q.set_kdey_backend("CapShift") is q and q.kdey_backend == "capshift" and isinstance(q.fast_, ACCEvaluator)
    assert q.q_ is fitted
    np.testing.assert_allclose(q.quantify(S1), [0.4, 0.6], atol=1e-12)
    assert q.set_kdey_backend("quapy").fast_ is None and q.kdey_backend == "quapy"
    with pytest.raises(ValueError, match=r"^unknown kdey_backend 'fast'"):
        q.set_kdey_backend("fast")
    assert q.kdey_backend == "quapy"
    with pytest.raises(NotFittedError, match=_exact("This Quantifier instance is not fitted yet: call "
                                                    "fit(X_val, y_val) first")):
        Quantifier("acc", H).set_kdey_backend("quapy")


# ---- the estimate's checks: a finite, non-negative vector with a positive sum, renormalised ----

class _Fixed(CC):
    """A QuaPy CC whose aggregate returns a fixed vector."""

    def __init__(self, classifier, out):
        super().__init__(classifier, fit_classifier=False)
        self.out = out

    def aggregate(self, classif_predictions):
        return copy.copy(self.out)


@pytest.mark.parametrize("out, expected", [([2.0, 2.0], [0.5, 0.5]), ([-1.0, 3.0], [0.0, 1.0]),
                                           ([0.25, 0.0], [1.0, 0.0]), ([0.6, -0.2], [1.0, 0.0]),
                                           (np.array([1, 3]), [0.25, 0.75]),
                                           (np.array([0.125, 0.375], np.float32), [0.25, 0.75])])
def test_estimates_are_clipped_at_zero_and_renormalised(out, expected):
    q = Quantifier(_Fixed(H, out)).fit(X_V, Y_V, 2)
    est = q.quantify(S1)
    assert est.dtype == np.float64  # a float32 estimate (QuaPy's EMQ gives one) is returned in float64
    np.testing.assert_allclose(est, expected, rtol=1e-15, atol=0)
    np.testing.assert_allclose(q.quantify_batch([S1, S2]), [expected, expected], rtol=1e-15, atol=0)


@pytest.mark.parametrize("out", [[0.0, 0.0], [-1.0, 1.0], [-2.0, 1.0], [np.nan, 1.0], [np.inf, 1.0]])
def test_invalid_estimates_are_refused(out):
    q = Quantifier(_Fixed(H, out)).fit(X_V, Y_V, 2)
    msg = f"the quantifier '_Fixed' returned an invalid prevalence {np.array(out, dtype=float)}; check its input"
    with pytest.raises(RuntimeError, match=_exact(msg)):
        q.quantify(S1)
    with pytest.raises(RuntimeError, match=_exact(msg)):
        q.quantify_batch([S1])


def test_aggregate_silences_the_quantifiers_runtime_warnings_only():
    class _Warns(_Fixed):
        def aggregate(self, classif_predictions):
            warnings.warn("divide by zero", RuntimeWarning)
            warnings.warn(str(self.out), UserWarning)
            return super().aggregate(classif_predictions)

    q = Quantifier(_Warns(H, [1.0, 3.0])).fit(X_V, Y_V, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(q.quantify(S1), [0.25, 0.75])
    assert [(w.category, str(w.message)) for w in caught] == [(UserWarning, "[1.0, 3.0]")]


# ---- names, prevalences and the minimum evidence ----

def test_resolve_quantifier_names_and_instances():
    choices = ("acc", "cc")
    assert resolve_quantifier("ACC", choices) == "acc" and resolve_quantifier("cc", list(choices)) == "cc"
    inst = ACC(H, fit_classifier=False, val_split=None, method="invariant-ratio")
    got = resolve_quantifier(inst, choices)
    assert got is not inst and type(got) is ACC and got.method == "invariant-ratio" and got.classifier is not H
    with pytest.raises(TypeError, match=_exact("quantifier must be one of ('acc', 'cc') or a quapy "
                                               "AggregativeQuantifier instance, got int")):
        resolve_quantifier(3, ["acc", "cc"])
    with pytest.raises(ValueError, match=_exact("unknown quantifier 'pcc'; choose one of ('acc', 'cc') or pass a quapy "
                                                "AggregativeQuantifier instance")):
        resolve_quantifier("pcc", ["acc", "cc"])
    with pytest.raises(ValueError, match="^unknown quantifier 'KDEY'; choose one of"):
        resolve_quantifier("KDEY", choices)


def test_check_prevalence_tolerance_and_messages():
    out = check_prevalence([[-1e-7, 1.0], [0.25, 0.75]], 2)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [[0.0, 1.0], [0.25, 0.75]])
    np.testing.assert_array_equal(check_prevalence([0.5, 0.5 + 0.9e-6], 2), [0.5, 0.5 + 0.9e-6])
    with pytest.raises(ValueError, match=r"^prevalence must be a probability distribution, i\.e\. sum to 1 along "
                                         r"the last axis \(within 1e-06\); found sums such as 1; divide counts"):
        check_prevalence([0.5, 0.5 + 1.1e-6], 2)
    np.testing.assert_array_equal(check_prevalence([0.5, 0.51], 2, atol=0.02), [0.5, 0.51])
    with pytest.raises(ValueError, match=r"^q_hat must be a probability distribution.*\(within 0\.001\)"):
        check_prevalence([0.5, 0.51], 2, name="q_hat", atol=1e-3)
    with pytest.raises(ValueError, match=r"^prevalence must have shape \(\.\.\., 3\) \(one entry per class\), "
                                         r"got \(2,\)$"):
        check_prevalence([0.5, 0.5], 3)
    with pytest.raises(ValueError, match=r"^p has negative values \(min -0\.01\)"):
        check_prevalence([-0.01, 1.01], 2, "p")
    with pytest.raises(TypeError, match="^prevalence must be an array of probabilities"):
        check_prevalence("ab", 2)


def test_names_and_min_per_class():
    assert Quantifier().method == "kdey" and Quantifier().name == "kdey"
    assert Quantifier("ACC", H).name == "ACC"
    assert Quantifier(EMQ(H, fit_classifier=False)).name == "EMQ"
    assert [Quantifier(m).min_per_class for m in ("kdey", "KDEY", "kdey-h", "acc", "cc", "sld", "oracle")] == \
        [5, 5, 1, 1, 1, 1, 1]
    assert Quantifier(PCC(_Posteriors(2), val_split=3)).min_per_class == 3
    assert Quantifier(KDEyML(_Posteriors(2), val_split=7)).min_per_class == 7
    assert Quantifier(KDEyML(H, fit_classifier=False, val_split=None)).min_per_class == 1
    assert Quantifier(KDEyML(_Posteriors(2), val_split=0.4)).min_per_class == 1
    bool_split = PCC(_Posteriors(2))
    bool_split.val_split = True  # a bool is not a fold count
    assert Quantifier(bool_split).min_per_class == 1
    no_fit = PCC(_Posteriors(2), val_split=3)
    no_fit.fit_classifier = False  # folds only when the classifier is fitted
    assert Quantifier(no_fit).min_per_class == 1
    assert Quantifier(CC(H, fit_classifier=False)).min_per_class == 1
    assert [Quantifier(m).is_oracle for m in ("oracle", "Oracle", "kdey", "cc")] == [True, True, False, False]
    assert Quantifier(CC(H, fit_classifier=False)).is_oracle is False


def test_cross_validated_quantifier_needs_its_folds_of_every_class():
    q = Quantifier(PCC(_Posteriors(2), val_split=3))
    y = np.array([0, 0, 0, 0, 1, 1])
    msg = ("y_val has 2 item(s) of class 1: quantifier 'PCC' needs at least 3 validation items of every class (its "
           "classifier's posteriors on V are cross-validated in 3 stratified folds); collect more validation items "
           "of class(es) [1]; its estimate is unreliable until then")
    with warnings.catch_warnings(record=True) as caught:  # scikit-learn's "least populated class" is silenced
        warnings.simplefilter("always")
        q.fit(X_V[:6], y, 2)
    assert [(w.category, str(w.message)) for w in caught] == [(InsufficientEvidenceWarning, msg)]
    assert q.is_fitted
    y1 = np.array([0, 0, 0, 0, 0, 1])
    with pytest.raises(ValueError, match=_exact(
            "y_val has 1 item(s) of class 1: quantifier 'PCC' needs at least 2 validation items of every class "
            "(every training fold of its cross-validation needs every class); collect more validation items of "
            "class(es) [1]")):
        Quantifier(PCC(_Posteriors(2), val_split=3)).fit(X_V[:6], y1, 2)
    with warnings.catch_warnings():  # enough items: no warning at all (scikit-learn's are silenced)
        warnings.simplefilter("error")
        Quantifier(PCC(_Posteriors(2), val_split=3)).fit(X_V[:6], np.array([0, 0, 0, 1, 1, 1]), 2)


class _Learns(BaseEstimator):
    """Not tagged a classifier (so cross-validated in unshuffled folds); learns the classes of its training items
    and gives each the same posterior."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.full((len(X), len(self.classes_)), 1 / len(self.classes_))

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def test_fold_without_a_class_is_reported_once():
    # unshuffled folds of 2: the last fold holds both items of class 1, so its training fold has class 0 only
    # (scikit-learn's "Number of classes in training fold" RuntimeWarning is silenced: capshift's check reports it)
    q = Quantifier(PCC(_Learns(), val_split=3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        q.fit(X_V[:6], np.array([0, 0, 0, 0, 1, 1]), 2)
    assert [w.category for w in caught] == [InsufficientEvidenceWarning]
    np.testing.assert_array_equal(q.quantify(S1), [0.5, 0.5])


class _WarnsAtFit(_Posteriors):
    """_Posteriors whose fit warns."""

    def fit(self, X=None, y=None):
        if X is not None:
            warnings.warn("a warning of the classifier's own", UserWarning)
        return super().fit(X, y)


def test_other_warnings_of_a_fit_reach_the_caller():
    for fit in (lambda q: q.fit(X_V, Y_V, 2), lambda q: fitted_quantifier(q, None, 0, X_V, Y_V, 2)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit(Quantifier(PCC(_WarnsAtFit(2), val_split=2)))
        # the 2 folds' fits and the refit on all of V
        assert [(w.category, str(w.message)) for w in caught] == [(UserWarning, "a warning of the classifier's own")] * 3


def test_two_fold_quantifier_needs_two_items_of_every_class():
    with pytest.raises(ValueError, match=r"^y_val has 1 item\(s\) of class 1: quantifier 'PCC' needs at least 2 "):
        Quantifier(PCC(_Posteriors(2), val_split=2)).fit(X_V[:5], np.array([0, 0, 0, 0, 1]), 2)


def test_single_item_classes_are_enough_without_folds():
    y = np.array([0, 0, 0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = Quantifier("cc", H).fit(X_V[:4], y, 2)
    np.testing.assert_allclose(q.quantify(S1), [0.6, 0.4], atol=1e-12)


# ---- fit: validation, errors, refitting ----

def test_fit_errors():
    with pytest.raises(ValueError, match=_exact("quantifier 'acc' reuses the target classifier: pass classifier=")):
        Quantifier("acc").fit(X_V, Y_V, 2)
    with pytest.raises(ValueError, match=_exact("quantifier 'KDEY-H' reuses the target classifier: pass "
                                                "classifier=")):
        Quantifier("KDEY-H").fit(X_V, Y_V, 2)
    for m in ("sld", "kdey-h"):
        with pytest.raises(TypeError, match=_exact(f"quantifier {m!r} needs posterior probabilities, but _NoProba has "
                                                   "no predict_proba; use 'acc' or 'kdey', or a probabilistic "
                                                   "classifier")):
            Quantifier(m.upper(), _NoProba().fit()).fit(X_V, Y_V, 2)
    np.testing.assert_allclose(Quantifier("cc", _NoProba().fit()).fit(X_V, Y_V, 2).quantify(S1), [0.4, 0.6])
    with pytest.raises(ValueError, match="^classifier must already be trained"):
        Quantifier("cc", _Posteriors(2)).fit(X_V, Y_V, 2)
    with pytest.raises(ValueError, match=_exact("unknown quantifier 'nope'; choose one of " + str(QUANTIFIERS)
                                                + " or pass a quapy AggregativeQuantifier instance")):
        Quantifier("nope", H).fit(X_V, Y_V, 2)
    for m in ("kdey", "kdey-h"):
        with pytest.raises(ValueError, match=_exact("bandwidth must be in (0.0, inf), got 0.0")):
            Quantifier(m, H, bandwidth=0.0).fit(X_V, Y_V, 2)
    with pytest.raises(TypeError, match=r"^random_state must be an int or None in 0\.\.2\*\*32-1, got 'a'"):
        Quantifier("cc", H, random_state="a").fit(X_V, Y_V, 2)
    with pytest.raises(TypeError, match=r"^random_state must be an int or None"):
        Quantifier(CC(H, fit_classifier=False), random_state="a").fit(X_V, Y_V, 2)
    with pytest.raises(ValueError, match=r"^unknown kdey_backend 'fast'"):
        Quantifier("cc", H, kdey_backend="fast").fit(X_V, Y_V, 2)
    with pytest.raises(ValueError, match=_exact("n_classes must be >= 2, got 1")):
        Quantifier("cc", H).fit(X_V, Y_V, 1)
    with pytest.raises(ValueError, match=r"X_val contains NaN"):
        Quantifier("cc", H).fit(np.full((8, 2), np.nan), Y_V, 2)
    with pytest.raises(ValueError, match=r"^y_val must have one label per item"):
        Quantifier("cc", H).fit(X_V, Y_V[:7], 2)
    with pytest.raises(ValueError, match=r"^y_val has labels \[2\] outside"):
        Quantifier("cc", H).fit(X_V, np.r_[Y_V[:7], 2], 2)
    with pytest.raises(ValueError, match=r"^y_val has no items of class\(es\) \[2\]"):
        Quantifier("cc", H).fit(X_V, Y_V, 3)


def test_fit_refuses_a_quantifier_over_other_classes():
    q = Quantifier(CC(_Posteriors(3).fit(), fit_classifier=False))
    with pytest.raises(ValueError, match=_exact("the quantifier's classes [0, 1, 2] are not 0..1: every class must "
                                                "occur in V and labels must be encoded 0..n-1")):
        q.fit(np.c_[X_V, np.zeros(8)], Y_V, 2)
    assert not q.is_fitted
    h = _Posteriors(2).fit()
    h.classes_ = np.array([1, 0])  # the same number of classes in another order
    with pytest.raises(ValueError, match=r"^the quantifier's classes \[1, 0\] are not 0\.\.1"):
        Quantifier(CC(h, fit_classifier=False)).fit(X_V, Y_V, 2)


def test_a_failed_refit_leaves_the_quantifier_unfitted():
    q = _fit("cc")
    assert q.is_fitted and q.n_classes_ == 2
    q.classifier = None
    with pytest.raises(ValueError, match="reuses the target classifier"):
        q.fit(X_V, Y_V, 2)
    assert not q.is_fitted
    with pytest.raises(NotFittedError, match="^This Quantifier instance is not fitted yet"):
        q.quantify(S1)
    with pytest.raises(NotFittedError, match="^This Quantifier instance is not fitted yet"):
        q.quantify_batch([S1])
    with pytest.raises(NotFittedError, match="^This Quantifier instance is not fitted yet"):
        Quantifier("oracle").aggregate(None, [0.5, 0.5])


def test_classify_checks_the_feature_count():
    q = _fit("cc")
    msg = ("X has 3 features, but the estimator was fitted on 2 features: pass items with the same columns as the "
           "validation set")
    with pytest.raises(ValueError, match=_exact(msg)):
        q.classify(np.c_[S1, np.zeros(5)])
    with pytest.raises(ValueError, match=_exact(msg)):
        q.quantify_batch([S1, np.c_[S1, np.zeros(5)]])
    with pytest.raises(ValueError, match=_exact(msg)):
        q.quantify_batch([sp.csr_matrix(np.c_[S1, np.zeros(5)])])
    X3 = np.c_[X_V, np.full(8, 7.0)]  # h reads the first two features only
    q3 = Quantifier("cc", H).fit(X3, Y_V, 2)
    assert q3.n_features_in_ == 3
    np.testing.assert_allclose(q3.quantify(np.c_[S1, np.ones(5)]), [0.6, 0.4], atol=1e-12)


def test_unfitted_copies_the_parameters():
    q = Quantifier("kdey-h", H, random_state=5, bandwidth=0.3, kdey_backend="quapy", max_fit_items=50)
    q.fit(X_V, Y_V, 2)
    u = q.unfitted()
    assert type(u) is Quantifier and u is not q and not u.is_fitted
    assert (u.method, u.classifier, u.random_state, u.bandwidth, u.kdey_backend, u.max_fit_items) == \
        ("kdey-h", H, 5, 0.3, "quapy", 50)
    d = Quantifier()
    assert (d.method, d.classifier, d.random_state, d.bandwidth, d.kdey_backend, d.max_fit_items) == \
        ("kdey", None, None, 0.1, "capshift", quantifiers.MAX_FIT_ITEMS)


# ---- the KDEy subsample of a large V ----

def _labels():
    """900 items of class 0, 585 of class 1, 15 of class 2: above the floor of 3 * 400 items."""
    return np.r_[np.zeros(900, int), np.ones(585, int), np.full(15, 2)]


def test_fit_subsample_shares_and_floor():
    y = _labels()
    sub = Quantifier("kdey", random_state=0, max_fit_items=10).fit_subsample(y)
    # M = max(10, 400 * 3) = 1200 of 1500: shares 720, 468 (468.0), 12 (= 15 * 1200 / 1500)
    assert np.bincount(y[sub]).tolist() == [720, 468, 12]
    assert np.all(np.diff(sub) > 0)  # sorted, no repeats
    big = Quantifier("KDEY-H", H, random_state=0, max_fit_items=1450).fit_subsample(y)
    # M = 1450: 870, 565.5 -> 566 (round half to even), 14.5 -> 14
    assert np.bincount(y[big]).tolist() == [870, 566, 14]
    assert Quantifier("kdey", max_fit_items=1500).fit_subsample(y) is None   # |V| = M: all of V
    assert len(Quantifier("kdey", max_fit_items=1499).fit_subsample(y)) == 1499
    y2 = np.r_[np.zeros(995, int), np.full(5, 1)]  # a class of 5 items keeps them all (min(5, 10)); M = 800
    assert np.bincount(y2[Quantifier("kdey", random_state=1, max_fit_items=2).fit_subsample(y2)]).tolist() == [796, 5]
    y3 = np.r_[np.zeros(1985, int), np.full(15, 1)]  # 15 * 800 / 2000 = 6 raised to 10
    assert np.bincount(y3[Quantifier("kdey", random_state=1, max_fit_items=2).fit_subsample(y3)]).tolist() == [794, 10]


def test_fit_subsample_is_seeded():
    y = _labels()
    subs = {s: Quantifier("kdey", random_state=s, max_fit_items=10).fit_subsample(y) for s in (0, 1)}
    assert not np.array_equal(subs[0], subs[1])
    np.testing.assert_array_equal(Quantifier("kdey", random_state=0, max_fit_items=10).fit_subsample(y), subs[0])
    # None draws as seed 0: the subsample (and so the densities) is reproducible even without a seed
    np.testing.assert_array_equal(Quantifier("kdey", max_fit_items=10).fit_subsample(list(y)), subs[0])
    # the draw: numpy's Generator seeded [seed, 17], each class's items in turn, without replacement
    rng = np.random.default_rng([1, 17])
    expect = np.sort(np.concatenate([rng.choice(np.flatnonzero(y == c), k, replace=False)
                                     for c, k in ((0, 720), (1, 468), (2, 12))]))
    np.testing.assert_array_equal(subs[1], expect)


def test_fit_subsample_reads_all_of_v_for_other_quantifiers():
    y = _labels()
    assert Quantifier("kdey", max_fit_items=None).fit_subsample(y) is None
    assert Quantifier("cc", H, max_fit_items=10).fit_subsample(y) is None
    assert Quantifier("oracle", max_fit_items=10).fit_subsample(y) is None
    assert Quantifier(KDEyML(H, fit_classifier=False, val_split=None), max_fit_items=10).fit_subsample(y) is None
    assert Quantifier(KDEyML(H, fit_classifier=False, val_split=None), max_fit_items=1).fit_subsample(y) is None
    with pytest.raises(ValueError, match=_exact("max_fit_items must be >= 2, got 1")):
        Quantifier("cc", H, max_fit_items=1).fit_subsample(y)
    with pytest.raises(TypeError, match=r"^max_fit_items must be an int, got 2\.5"):
        Quantifier("kdey", max_fit_items=2.5).fit_subsample(y)
    with pytest.raises(TypeError, match=_exact("random_state must be an int or None in 0..2**32-1, got 'a' (str)")):
        Quantifier("kdey", random_state="a", max_fit_items=10).fit_subsample(y)


def test_kdey_h_is_fitted_on_the_subsample():
    y = _labels()
    rng = np.random.default_rng(0)
    P = rng.dirichlet([1, 1, 1], size=len(y))
    q = Quantifier("kdey-h", _Posteriors(3).fit(), random_state=2, max_fit_items=10)
    sub = q.fit_subsample(y)
    q.fit(P, y, 3)
    assert [len(k.tree_.data) for k in q.q_.mix_densities] == [720, 468, 12]
    np.testing.assert_array_equal(np.sort(q.q_.mix_densities[2].tree_.data, axis=0),
                                  np.sort(P[sub][y[sub] == 2], axis=0))


# ---- make_quantifier, fitted_quantifier ----

def test_make_quantifier():
    q = Quantifier("cc", H)
    assert make_quantifier(q, None, 3) is q
    m = make_quantifier("ACC", H, 7)
    assert type(m) is Quantifier and (m.method, m.classifier, m.random_state) == ("ACC", H, 7) and not m.is_fitted
    assert make_quantifier("kdey", H).random_state is None


def test_fitted_quantifier_fits_once_and_checks_classes():
    q = fitted_quantifier("cc", H, 0, X_V, Y_V, 2)
    assert q.is_fitted and q.random_state == 0
    np.testing.assert_allclose(q.quantify(S1), [0.6, 0.4], atol=1e-12)
    fitted = q.q_
    again = fitted_quantifier(q, None, 1, X_V[:4], Y_V[:4], 2)  # fitted: returned as it is, not refitted
    assert again is q and again.q_ is fitted
    with pytest.raises(ValueError, match=_exact("the shared quantifier was fitted on 2 classes, the classifier has 3")):
        fitted_quantifier(q, H, 0, X_V, Y_V, 3)
    with warnings.catch_warnings():  # the method warns under its own name: the quantifier's warning is silenced
        warnings.simplefilter("error")
        p = fitted_quantifier(PCC(_Posteriors(2), val_split=3), None, 0, X_V[:6], np.array([0, 0, 0, 0, 1, 1]), 2)
    assert p.is_fitted
    unfit = Quantifier("cc", H)
    assert fitted_quantifier(unfit, None, None, X_V, Y_V, 2) is unfit and unfit.is_fitted


# ---- digest ----

def _blake(*chunks):
    h = hashlib.blake2b(digest_size=20)
    for c in chunks:
        h.update(c)
    return h.hexdigest()


def test_digest_of_known_parts():
    a = np.array([[1, 2, 3]], dtype=np.int64)
    assert digest() == _blake()
    assert digest(None) == _blake(b"<none>")
    assert digest(a) == _blake(b"(dtype('int64'), (1, 3))", a.tobytes())
    assert digest("x", 2) == _blake(b"'x'", b"2")
    m = sp.csr_array(np.array([[0.0, 2.0], [3.0, 0.0]]))
    assert digest(m) == _blake(b"<sparse (2, 2)>", b"(dtype('float64'), (2,))", np.array([2.0, 3.0]).tobytes(),
                               b"(dtype('int64'), (2,))", np.array([1, 0], np.int64).tobytes(),
                               b"(dtype('int64'), (3,))", np.array([0, 1, 2], np.int64).tobytes())
    assert len(digest(a)) == 40


def test_digest_changes_with_any_part():
    a = np.arange(6.0).reshape(2, 3)
    base = digest(a, np.array([0, 1]), 2)
    assert digest(a.copy(), np.array([0, 1]), 2) == base
    assert digest(np.asfortranarray(a), np.array([0, 1]), 2) == base  # the values, not the memory layout
    changed = [digest(a + 1e-12, np.array([0, 1]), 2), digest(a.reshape(3, 2), np.array([0, 1]), 2),
               digest(a.astype(np.float32), np.array([0, 1]), 2), digest(a, np.array([1, 0]), 2),
               digest(a, np.array([0, 1]), 3), digest(a, np.array([0, 1])), digest(np.array([0, 1]), a, 2),
               digest(a, np.array([0, 1]), "2"), digest(a, np.array([0, 1]), 2.0), digest(a, np.array([0, 1]), None)]
    assert len(set(changed + [base])) == len(changed) + 1
    assert digest(None) != digest("<none>") != digest(np.array([])) != digest(sp.csr_array((0, 0)))


def test_digest_of_sparse_matrices_reads_their_entries():
    dense = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]])
    base = digest(sp.csr_array(dense))
    assert digest(sp.csc_matrix(dense)) == base and digest(sp.coo_array(dense)) == base
    i32 = np.int32  # the index type scipy gives the matrices above (the test below takes another)
    dup = sp.csr_array((np.array([1.0, 1.0, 3.0, 4.0]), np.array([1, 1, 0, 2], i32), np.array([0, 2, 4], i32)),
                       shape=(2, 3))
    zero = sp.csr_array((np.array([0.0, 2.0, 3.0, 4.0]), np.array([0, 1, 0, 2], i32), np.array([0, 2, 4], i32)),
                        shape=(2, 3))
    unsorted = sp.csr_array((np.array([2.0, 4.0, 3.0]), np.array([1, 2, 0], i32), np.array([0, 1, 3], i32)),
                            shape=(2, 3))
    before = [(m.data.copy(), m.indices.copy(), m.indptr.copy()) for m in (dup, zero, unsorted)]
    # duplicates summed, explicit zeros dropped, indices sorted
    assert digest(dup) == base and digest(zero) == base and digest(unsorted) == base
    for m, arrays in zip((dup, zero, unsorted), before):  # the caller's matrices are not touched
        for a, b in zip((m.data, m.indices, m.indptr), arrays):
            np.testing.assert_array_equal(a, b)
    assert digest(sp.csr_array(dense.T)) != base and digest(sp.csr_array(dense * 2)) != base
    assert digest(sp.csr_array(np.c_[dense, np.zeros(2)])) != base  # the shape counts
    assert digest(dense) != base


def test_digest_of_sparse_matrices_ignores_the_index_type():
    m = sp.csr_array(np.array([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]]))
    wide = sp.csr_array((m.data, m.indices.astype(np.int64), m.indptr.astype(np.int64)), shape=m.shape)
    assert (m != wide).nnz == 0 and digest(wide) == digest(m)


# ---- SharedQuantifier ----

def test_shared_quantifier_fits_once_per_validation_set():
    cache = {}
    a = SharedQuantifier("cc", H, random_state=0, cache=cache)
    b = a.unfitted()
    assert type(b) is SharedQuantifier and b.cache is cache and not b.is_fitted
    assert (b.method, b.classifier, b.random_state, b.bandwidth, b.kdey_backend, b.max_fit_items) == \
        ("cc", H, 0, 0.1, "capshift", quantifiers.MAX_FIT_ITEMS)
    assert a.fit(X_V, Y_V, 2) is a
    b.fit(X_V.copy(), list(Y_V), 2)
    assert len(cache) == 1 and b.q_ is a.q_ and b.n_classes_ == 2 and b.n_features_in_ == 2
    fit = next(iter(cache.values()))
    assert type(fit) is Quantifier and fit.q_ is a.q_
    b.fit(X_V[:6], Y_V[:6], 2)  # another V: another fit
    assert len(cache) == 2 and b.q_ is not a.q_
    SharedQuantifier("cc", H, random_state=1, cache=cache).fit(X_V, Y_V, 2)  # another seed: another fit
    SharedQuantifier("acc", H, random_state=0, cache=cache).fit(X_V, Y_V, 2)
    SharedQuantifier("cc", H, random_state=0, kdey_backend="quapy", cache=cache).fit(X_V, Y_V, 2)
    SharedQuantifier("cc", H, random_state=0, bandwidth=0.2, cache=cache).fit(X_V, Y_V, 2)
    SharedQuantifier("cc", H, random_state=0, max_fit_items=9, cache=cache).fit(X_V, Y_V, 2)
    assert len(cache) == 7
    SharedQuantifier("CC", H, random_state=0, cache=cache).fit(X_V, Y_V, 2)  # the name as given
    assert len(cache) == 8
    fresh = SharedQuantifier("cc", H)
    assert fresh.cache == {} and SharedQuantifier("cc", H).cache is not fresh.cache
    assert SharedQuantifier().method == "kdey"


def test_shared_quantifier_keys_its_fits_by_items_labels_and_classes():
    cache = {}
    a = SharedQuantifier("acc", H, cache=cache).fit(X_V, Y_V, 2)
    moved = X_V.copy()
    moved[[3, 6]] = moved[[6, 3]]  # the same labels on other items: h is right on 4 of 4 and 3 of 4
    b = a.unfitted().fit(moved, Y_V, 2)
    assert len(cache) == 2
    np.testing.assert_allclose(b.q_.Pte_cond_estim_, [[1, .25], [0, .75]], atol=1e-12)
    relabelled = Y_V.copy()
    relabelled[[3, 4]] = [1, 0]  # the same items, two labels swapped: h is right on 4 of 4 and 3 of 4
    c = a.unfitted().fit(X_V, relabelled, 2)
    assert len(cache) == 3
    np.testing.assert_allclose(c.q_.Pte_cond_estim_, [[1, .25], [0, .75]], atol=1e-12)
    with pytest.raises(ValueError, match=r"^y_val has no items of class\(es\) \[2\]"):  # not the stored fit
        a.unfitted().fit(X_V, Y_V, 3)
    with pytest.raises(ValueError, match=r"^Input X_val contains NaN"):
        a.unfitted().fit(np.full((8, 2), np.nan), Y_V, 2)


def test_shared_quantifier_fits_with_its_parameters():
    y = _labels()
    P = np.random.default_rng(0).dirichlet([1, 1, 1], size=len(y))
    q = SharedQuantifier("kdey-h", _Posteriors(3).fit(), random_state=2, bandwidth=0.2, kdey_backend="quapy",
                         max_fit_items=10)
    q.fit(P, y, 3)
    assert q.q_.random_state == 2 and q.q_.bandwidth == 0.2 and q.fast_ is None
    # the subsample of seed 2 (M = 1200 of 1500 items)
    assert [len(k.tree_.data) for k in q.q_.mix_densities] == [720, 468, 12]
    sub = q.fit_subsample(y)
    np.testing.assert_array_equal(np.sort(q.q_.mix_densities[2].tree_.data, axis=0),
                                  np.sort(P[sub][y[sub] == 2], axis=0))
    u = q.unfitted()
    assert (u.random_state, u.bandwidth, u.kdey_backend, u.max_fit_items, u.cache) == (2, 0.2, "quapy", 10, q.cache)


def test_shared_quantifier_reuses_the_fitted_backend():
    cache = {}
    a = SharedQuantifier("acc", H, cache=cache).fit(X_V, Y_V, 2)
    b = SharedQuantifier("acc", H, cache=cache).fit(X_V, Y_V, 2)
    assert isinstance(a.fast_, ACCEvaluator) and b.fast_ is a.fast_
    q = SharedQuantifier("acc", H, kdey_backend="quapy", cache=cache).fit(X_V, Y_V, 2)
    assert q.fast_ is None and q.q_ is not a.q_


def test_shared_quantifier_returns_the_stored_estimates():
    cache = {}
    a = SharedQuantifier("acc", H, cache=cache).fit(X_V, Y_V, 2)
    plain = _fit("acc")
    first = a.quantify_batch([S1, S2])
    np.testing.assert_array_equal(first, plain.quantify_batch([S1, S2]))
    np.testing.assert_allclose(first[0], [0.4, 0.6], atol=1e-12)
    assert len(cache) == 2
    first[:] = -1  # a copy: the stored estimate is untouched
    b = a.unfitted().fit(X_V, Y_V, 2)
    again = b.quantify_batch([S1.copy(), S2.copy()])
    assert len(cache) == 2
    np.testing.assert_array_equal(again, plain.quantify_batch([S1, S2]))
    # the same items split otherwise are other samples
    other = b.quantify_batch([np.r_[S1, S2[:1]], S2[1:]])
    assert len(cache) == 3
    np.testing.assert_allclose(other, [plain.quantify(np.r_[S1, S2[:1]]), plain.quantify(S2[1:])], atol=1e-12)
    # another fit: other estimates of the same samples
    c = a.unfitted().fit(X_V[1:], Y_V[1:], 2)  # A = [[2/3, 1/2], [1/3, 1/2]]: 1/2 + p/6 = 0.6, p = 0.6
    np.testing.assert_allclose(c.quantify_batch([S1]), [[0.6, 0.4]], atol=1e-12)
    assert len(cache) == 5
    stored = {k: v for k, v in cache.items() if k[0] == "q"}
    for k, v in stored.items():
        assert k[1][0] == "fit" and v.dtype == np.float64


def test_shared_quantifier_does_not_store_sparse_empty_or_oracle_batches():
    cache = {}
    a = SharedQuantifier("cc", H, cache=cache).fit(X_V, Y_V, 2)
    np.testing.assert_allclose(a.quantify_batch([sp.csr_matrix(S1), S2]), [[0.6, 0.4], [0.75, 0.25]], atol=1e-12)
    assert a.quantify_batch([]).shape == (0, 2)
    assert len(cache) == 1
    o = SharedQuantifier("oracle", cache=cache).fit(X_V, Y_V, 2)
    np.testing.assert_array_equal(o.quantify_batch([S1], [[0.2, 0.8]]), [[0.2, 0.8]])
    assert len(cache) == 2
    with pytest.raises(NotFittedError, match="^This SharedQuantifier instance is not fitted yet"):
        SharedQuantifier("cc", H).quantify_batch([S1])
    for bad in ([np.c_[S1, np.zeros(5)]], [S1, np.c_[S1, np.zeros(5)]]):
        with pytest.raises(ValueError, match=r"^X has 3 features, but the estimator was fitted on 2"):
            a.quantify_batch(bad)


def test_shared_quantifier_keys_its_estimates_by_the_items():
    a = SharedQuantifier("cc", H).fit(X_V, Y_V, 2)
    np.testing.assert_allclose(a.quantify_batch([S1, S2]), [[0.6, 0.4], [0.75, 0.25]], atol=1e-12)
    # the same sizes, other items
    np.testing.assert_allclose(a.quantify_batch([np.tile([0., 1.], (5, 1)), np.tile([1., 0.], (4, 1))]),
                               [[0, 1], [1, 0]], atol=1e-12)

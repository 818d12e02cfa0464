"""capshift's ACC inference (capshift._acc) against QuaPy's ACC on the same fitted misclassification matrix.

QuaPy minimises ``||A p - b||`` over the simplex with SLSQP at ``ftol = 1e-6`` (finite-difference gradients, from
the uniform prevalence); capshift solves the same problem exactly. The tests check the exact solution by its KKT
conditions and by hand-computed cases, and against QuaPy's path to SLSQP's accuracy (never a worse objective).
"""
import warnings

import numpy as np
import pytest
from quapy.method.aggregative import ACC
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

from capshift import registry
from capshift._acc import ACCEvaluator, acc_supported, adjustment_system
from capshift.quantifiers import Quantifier


class Lookup(ClassifierMixin, BaseEstimator):
    """A 'classifier' whose prediction is the integer in the first column: fixes A and b exactly."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(int)


def _lookup_acc(confusion, **kw):
    """A QuaPy ACC fitted on validation items whose (true, predicted) counts are ``confusion[true][pred]``."""
    C = np.asarray(confusion)
    y = np.concatenate([np.full(C[t].sum(), t) for t in range(len(C))])
    pred = np.concatenate([np.repeat(np.arange(len(C)), C[t]) for t in range(len(C))])
    clf = Lookup().fit(None, np.arange(len(C)))
    return ACC(clf, fit_classifier=False, val_split=None, **kw).fit(pred[:, None].astype(float), y)


def _sample(pred_counts):
    return np.repeat(np.arange(len(pred_counts)), pred_counts)


def _blobs(n, m, seed, prev=None, d=5):
    rng = np.random.default_rng(seed)
    y = rng.choice(n, size=m, p=prev)
    if prev is None:
        y[:n] = np.arange(n)   # V: every class present
    centres = 1.5 * np.random.default_rng(n).normal(size=(n, d))  # overlapping classes: a non-trivial A
    return centres[y] + rng.normal(size=(m, d)), y


def _agrees_with_quapy(acc, P, p, A, b, atol, slack):
    """QuaPy's own (SLSQP) estimate for the sample P is within ``atol`` of the exact ``p``, and its objective
    ||A q - b|| is not below p's by more than ``slack``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = acc.aggregate(P)
    np.testing.assert_allclose(q, p, atol=atol)
    assert np.linalg.norm(A @ p - b) <= np.linalg.norm(A @ q - b) + slack


def test_two_classes_by_hand():
    # class 0: 7 predicted 0, 3 predicted 1 (fpr 0.3); class 1: 2 predicted 0, 8 predicted 1 (tpr 0.8)
    acc = _lookup_acc([[7, 3], [2, 8]])
    np.testing.assert_allclose(acc.Pte_cond_estim_, [[0.7, 0.2], [0.3, 0.8]])
    ev = ACCEvaluator(acc)
    # p_1 = (b_1 - fpr) / (tpr - fpr), then clipped to [0, 1] (on a segment the clipped minimiser is exact)
    for counts, expected in [([9, 11], [0.5, 0.5]), ([16, 4], [1.0, 0.0]), ([2, 18], [0.0, 1.0]),
                             ([13, 7], [0.9, 0.1]), ([3, 0], [1.0, 0.0])]:
        P = _sample(counts)
        np.testing.assert_allclose(ev.aggregate(P), expected, atol=1e-14)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(acc.aggregate(P), expected, atol=1e-3)   # QuaPy's SLSQP


def test_kkt_with_an_active_constraint():
    acc = _lookup_acc([[8, 1, 1], [2, 7, 1], [1, 1, 8]])
    A = acc.Pte_cond_estim_
    ev = ACCEvaluator(acc)
    P = _sample([1, 14, 5])
    b = ev.counts(P)
    np.testing.assert_allclose(b, [0.05, 0.7, 0.25])
    unconstrained = np.linalg.solve(A, b)
    assert unconstrained.sum() == pytest.approx(1) and unconstrained.min() < -0.05   # the bound matters here
    p = ev.aggregate(P)
    assert p.min() >= 0 and p.sum() == pytest.approx(1, abs=1e-15)
    g = A.T @ (A @ p - b)                          # gradient of 0.5 ||A p - b||^2
    support = p > 0
    assert support.sum() == 2 and p[0] == 0.0     # class 0's cell is at its bound
    mu = g[support].mean()                          # multiplier of sum(p) = 1
    assert np.abs(g[support] - mu).max() < 1e-15   # stationary on the free cells
    assert g[~support].min() > mu + 1e-3            # the fixed cell's bound multiplier is strictly positive
    # and the minimiser on the edge p_0 = 0 by hand: one variable t = p_1, p_2 = 1 - t
    d, e = A[:, 1] - A[:, 2], b - A[:, 2]
    np.testing.assert_allclose(p[1:], [d @ e / (d @ d), 1 - d @ e / (d @ d)], atol=1e-15)
    # QuaPy's SLSQP reaches it to its tolerance, with no better objective
    _agrees_with_quapy(acc, P, p, A, b, atol=1e-3, slack=1e-15)


def test_interior_solution_is_the_inverse():
    acc = _lookup_acc([[8, 1, 1], [2, 7, 1], [1, 1, 8]])
    ev = ACCEvaluator(acc)
    P = _sample([6, 7, 7])
    expected = np.linalg.solve(acc.Pte_cond_estim_, ev.counts(P))
    assert expected.min() > 0
    np.testing.assert_allclose(ev.aggregate(P), expected, atol=1e-15)


@pytest.mark.parametrize("n", [2, 3, 10])
def test_agrees_with_quapy_on_fitted_classifiers(n):
    X_L, y_L = _blobs(n, 60 * n, seed=1)
    X_V, y_V = _blobs(n, 60 * n, seed=2)
    h = LogisticRegression(max_iter=2000).fit(X_L, y_L)
    fast = Quantifier("acc", h).fit(X_V, y_V, n)
    slow = Quantifier("acc", h, kdey_backend="quapy").fit(X_V, y_V, n)
    assert isinstance(fast.fast_, ACCEvaluator) and slow.fast_ is None
    np.testing.assert_array_equal(fast.q_.Pte_cond_estim_, slow.q_.Pte_cond_estim_)
    rng = np.random.default_rng(3)
    prevs = [rng.dirichlet(np.full(n, 0.5)) for _ in range(7)] + [np.r_[0.0, np.full(n - 1, 1 / (n - 1))]]
    samples = [_blobs(n, 100, seed=10 + s, prev=prev)[0] for s, prev in enumerate(prevs)]
    A = fast.q_.Pte_cond_estim_
    active = 0
    for Xs in samples:
        p, q = fast.quantify(Xs), slow.quantify(Xs)
        b = fast.fast_.counts(fast.classify(Xs))
        np.testing.assert_allclose(p, q, atol=2e-3)                                 # SLSQP's tolerance
        assert np.linalg.norm(A @ p - b) <= np.linalg.norm(A @ q - b) + 1e-12       # never a worse objective
        g = A.T @ (A @ p - b)
        mu = g[p > 0].mean()
        assert np.abs(g[p > 0] - mu).max() < 1e-12 and np.all(g[p == 0] >= mu - 1e-12)   # KKT
        active += (p == 0).any()
    assert n == 2 or active > 0    # the constrained case is exercised
    batch = fast.quantify_batch(samples)
    np.testing.assert_allclose(batch, np.stack([fast.quantify(Xs) for Xs in samples]), atol=1e-14)
    switched = slow.set_kdey_backend("capshift")   # same fit, other inference
    assert switched is slow and isinstance(slow.fast_, ACCEvaluator)
    np.testing.assert_allclose(slow.quantify_batch(samples), batch, atol=1e-14)


def test_invariant_ratio_method():
    acc = _lookup_acc([[8, 1, 1], [2, 7, 1], [1, 1, 8]], method="invariant-ratio", norm="mapsimplex")
    A = adjustment_system(acc)
    np.testing.assert_array_equal(A[-1], 1.0)
    ev = ACCEvaluator(acc)
    for counts in ([6, 7, 7], [1, 14, 5], [0, 3, 17]):
        P = _sample(counts)
        b = ev.counts(P)
        assert b[-1] == 1.0
        _agrees_with_quapy(acc, P, ev.aggregate(P), A, b, atol=2e-3, slack=1e-12)


def test_unsupported_cases_keep_quapys_path():
    singular = _lookup_acc([[5, 5, 0], [4, 6, 0], [0, 0, 10]])
    singular.Pte_cond_estim_[:, 1] = singular.Pte_cond_estim_[:, 0]   # two classes confused at identical rates
    assert not acc_supported(singular)
    with pytest.raises(ValueError, match="singular"):
        ACCEvaluator(singular)
    never = _lookup_acc([[9, 0, 1], [8, 0, 2], [1, 0, 9]])          # class 1 never predicted: a zero row
    assert not acc_supported(never)
    exact = _lookup_acc([[8, 1, 1], [2, 7, 1], [1, 1, 8]], solver="exact-raise")
    assert not acc_supported(exact)
    with pytest.raises(ValueError, match="solver='minimize'"):
        ACCEvaluator(exact)
    assert not acc_supported(ACC(Lookup().fit(None, [0, 1, 2]), fit_classifier=False, val_split=None))   # unfitted
    ev = ACCEvaluator(_lookup_acc([[8, 1, 1], [2, 7, 1], [1, 1, 8]]))
    with pytest.raises(ValueError, match="not among"):
        ev.counts(np.array([0, 3]))
    with pytest.raises(ValueError, match="at least one"):
        ev.counts(np.array([], dtype=int))
    assert ev.aggregate_batch([]).shape == (0, 3)
    # through Quantifier: a class h never predicts on V leaves QuaPy's aggregate in charge, and it still answers
    X_V = np.array([[0.0], [0.0], [2.0], [2.0], [2.0], [0.0]])
    y_V = np.array([0, 0, 1, 2, 2, 1])
    q = Quantifier(ACC(Lookup().fit(None, [0, 1, 2]), fit_classifier=False, val_split=None)).fit(X_V, y_V, 3)
    assert q.fast_ is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = q.quantify(np.array([[0.0], [2.0]]))
    assert p.shape == (3,) and p.sum() == pytest.approx(1)


def test_leap_acc_estimates_agree():
    n = 3
    X_L, y_L = _blobs(n, 200, seed=1)
    X_V, y_V = _blobs(n, 200, seed=2)
    h = LogisticRegression(max_iter=2000).fit(X_L, y_L)
    rng = np.random.default_rng(5)
    samples = [_blobs(n, 100, seed=20 + s, prev=rng.dirichlet(np.full(n, 0.5)))[0] for s in range(6)]
    fast = registry.make_method("LEAP_ACC", h, random_state=0).fit(X_V, y_V)
    slow = registry.make_method("LEAP_ACC", h, random_state=0,
                                quantifier=Quantifier("acc", h, random_state=0, kdey_backend="quapy")).fit(X_V, y_V)
    assert isinstance(fast.quantifier_.fast_, ACCEvaluator) and slow.quantifier_.fast_ is None
    np.testing.assert_allclose(fast.predict_batch(samples), slow.predict_batch(samples), atol=1e-3)


# -- Pinned by mutation testing (issue 32): messages, boundaries, exact output -----------------------------------------
def _with_matrix(M, method="inversion"):
    acc = _lookup_acc([[7, 3], [2, 8]], method=method)
    acc.Pte_cond_estim_ = np.asarray(M)
    return acc


def _msg(fn, *args):
    with pytest.raises(ValueError) as e:
        fn(*args)
    return str(e.value)


def test_adjustment_system_messages():
    unfitted = ACC(Lookup())
    assert _msg(adjustment_system, unfitted) == "the ACC quantifier is not fitted (no Pte_cond_estim_)"
    acc = _lookup_acc([[7, 3], [2, 8]])
    acc.method = "foo"
    assert _msg(adjustment_system, acc) == ("unknown ACC method 'foo'; choose one of "
                                            "('inversion', 'invariant-ratio')")


@pytest.mark.parametrize("M, shape", [
    ([[np.nan, 0.0], [0.0, 1.0]], (2, 2)),       # non-finite
    (np.ones((2, 3)) / 2, (2, 3)),               # non-square, 2 rows
    (np.ones((3, 2)) / 3, (3, 2)),               # non-square, 3 rows
    (np.ones(2) / 2, (2,)),                      # 1-D
    (np.ones((2, 2, 2)) / 2, (2, 2, 2)),         # 3-D with square leading dims
    ([[1.0]], (1, 1)),                           # n < 2
])
def test_adjustment_system_rejects_bad_matrices(M, shape):
    acc = _with_matrix(M)
    assert _msg(adjustment_system, acc) == ("ACC's misclassification matrix must be a finite square (n, n) "
                                            f"array, n >= 2, got {shape}")
    assert acc_supported(acc) is False   # the exception is caught: not supported


def test_adjustment_system_casts_to_float():
    A = adjustment_system(_with_matrix(np.eye(2, dtype=int)))
    assert A.dtype == np.float64
    np.testing.assert_array_equal(A, np.eye(2))
    A = adjustment_system(_with_matrix(np.eye(2, dtype=int), method="invariant-ratio"))
    assert A.dtype == np.float64
    np.testing.assert_array_equal(A, [[1.0, 0.0], [1.0, 1.0]])


def test_acc_supported_rejects_bad_norm_with_good_method():
    acc = _lookup_acc([[7, 3], [2, 8]])
    acc.norm = "foo"
    assert acc_supported(acc) is False
    assert _msg(ACCEvaluator, acc) == (
        "ACCEvaluator reproduces ACC(solver='minimize') with method in ('inversion', 'invariant-ratio') and norm in "
        "['clip', 'mapsimplex', 'condsoftmax', None], got solver='minimize', method='inversion', norm='foo'")


def test_acc_supported_threshold_is_strict_and_relative_to_largest():
    # singular values exactly (1, 1e-8): s[-1] == RCOND * s[0], not strictly above -> unsupported
    assert acc_supported(_with_matrix(np.diag([1.0, 1e-8]))) is False
    # (10, 1e-8): 1e-8 < 1e-8 * 10 -> unsupported (but it would be above RCOND / 10)
    assert acc_supported(_with_matrix(np.diag([10.0, 1e-8]))) is False
    # (1, 1e-3, 1e-9): below RCOND * s[0] = 1e-8, but above RCOND * s[1] = 1e-11
    assert acc_supported(_with_matrix(np.diag([1.0, 1e-3, 1e-9]))) is False
    assert acc_supported(_with_matrix(np.diag([1.0, 2e-8]))) is True


def test_evaluator_messages():
    class NotACC:
        pass
    assert _msg(ACCEvaluator, NotACC()) == "ACCEvaluator needs a fitted quapy ACC, got NotACC"
    assert _msg(ACCEvaluator, ACC(Lookup())) == "ACCEvaluator needs a fitted quapy ACC, got ACC (not fitted)"
    assert _msg(ACCEvaluator, _with_matrix(np.diag([1.0, 1e-9]))) == (
        "ACC's misclassification matrix is (numerically) singular: its adjustment loss has no unique minimiser "
        "(is there a class h never predicts on V?)")


def test_evaluator_keeps_acc_and_checks_class_count():
    acc = _lookup_acc([[7, 3], [2, 8]])
    ev = ACCEvaluator(acc)
    assert ev.acc is acc
    acc.classifier.classes_ = np.array([0, 1, 2])   # ACC.classes_ reads the classifier's
    assert _msg(ACCEvaluator, acc) == "ACC's matrix is (2, 2) for 3 classes"


def test_counts_messages():
    ev = ACCEvaluator(_lookup_acc([[7, 3], [2, 8]]))
    assert _msg(ev.counts, []) == "ACC needs at least one prediction per sample"
    assert _msg(ev.counts, [0, 5, 1, 5, 7]) == "predicted labels [5, 7] are not among ACC's classes [0, 1]"

"""Tests of capshift.conformal: the split-conformal quantile, the schemes of ConformalInterval, the finite-evidence
interval and its floor, adjusted classify and count, and their exact error messages (the interval study and its
coverage are in tests/test_uncertainty.py)."""
import math
import re

import numpy as np
import pytest
from scipy.stats import betabinom
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import StratifiedKFold, train_test_split

from capshift import conformal as C, experiment, protocols
from capshift.tables import accuracy, class_counts, contingency_table


# ------------------------------------------------------------------------------------- the conformal quantile
def test_conformal_quantile_is_the_ceil_k_plus_1_order_statistic():
    # 9 hand-made residuals, shuffled: ceil(10 * (1 - alpha))-th smallest of the sorted ones
    r = [0.7, 0.1, 0.9, 0.3, 0.5, 0.2, 0.8, 0.4, 0.6]
    s = sorted(r)
    for alpha, rank in [(0.5, 5), (0.35, 7), (0.3, 7), (0.25, 8), (0.15, 9), (0.11, 9)]:
        assert rank == math.ceil(10 * (1 - alpha))
        assert C.conformal_quantile(r, alpha) == s[rank - 1]
    assert C.conformal_quantile(r, 0.09) == float("inf")  # rank 10 > 9 residuals
    assert C.conformal_quantile(np.array([[0.2, 0.4], [0.1, 0.3]]), 0.5) == 0.3  # raveled: rank ceil(5 * .5) = 3


def test_conformal_quantile_errors():
    with pytest.raises(ValueError, match=r"^alpha must be in \(0\.0, 1\.0\), got 1\.0$"):
        C.conformal_quantile([0.1, 0.2], 1.0)
    for bad in ([], [0.1, np.nan], [0.1, np.inf], [0.1, None]):
        with pytest.raises(ValueError, match="^residuals must be a non-empty array of finite numbers$"):
            C.conformal_quantile(bad, 0.1)


# --------------------------------------------------------------------------------------- a hand-made problem
class _Echo(ClassifierMixin, BaseEstimator):
    """h whose decision is the first feature (0 or 1): its contingency table on any part of V is set by hand."""

    def fit(self, X, y=None):
        self.classes_ = np.arange(2)
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(int)


def _echo_data(wrong=(10, 4), per_class=(40, 40)):
    """V with ``per_class`` items of each class, of which h gets ``wrong`` wrong; column 1 numbers the items
    (classes interleaved, so that every split mixes them)."""
    y = np.concatenate([np.full(m, c) for c, m in enumerate(per_class)])
    pred = np.concatenate([np.r_[np.full(m - w, c), np.full(w, 1 - c)]
                           for c, (m, w) in enumerate(zip(per_class, wrong))])
    order = np.argsort(np.r_[np.arange(per_class[0]) * 2, np.arange(per_class[1]) * 2 + 1], kind="stable")
    y, pred = y[order], pred[order]
    X = np.stack([pred, np.arange(len(y))], axis=1).astype(float)
    return X, y


@pytest.fixture(scope="module")
def echo():
    """h = _Echo; V: 40 items of class 0 (10 predicted 1), 40 of class 1 (4 predicted 0): h's table in counts
    [[30, 10], [4, 36]], accuracy 66/80."""
    X, y = _echo_data()
    return _Echo().fit(X, y), X, y


def _naive(h, **kw):
    """Naive predicts the table of the part of V it was fitted on: a constant, hand-computable point."""
    return experiment.make_method("Naive", h, **kw)


def _ci(h, **kw):
    return C.ConformalInterval(_naive(h), **kw)


def test_echo_problem_is_as_documented(echo):
    h, X, y = echo
    ci = _ci(h, n_cal=4).fit(X, y)
    np.testing.assert_array_equal(ci.val_counts_, [[30, 10], [4, 36]])
    assert ci.n_val_ == 80 and ci.n_classes_ == 2


# ------------------------------------------------------------------------------------ fit: exact error messages
class _NotABaseEstimator:
    """Has a classifier and the three methods, but is no scikit-learn estimator."""
    classifier = _Echo()

    def fit(self, X, y):
        return self

    predict_batch = predict_measures = fit


class _NoPredictMeasures(BaseEstimator):
    def __init__(self, classifier=None):
        self.classifier = classifier

    def fit(self, X, y):
        return self

    predict_batch = fit
    predict_measures = 1  # not callable


def _cap_message(name):
    return re.escape(f"estimator must be a capshift CAPEstimator (e.g. experiment.make_method(name, h)), got {name}")


class _WithoutPredictMeasures(BaseEstimator):
    def __init__(self, classifier=None):
        self.classifier = classifier

    def fit(self, X, y):
        return self

    predict_batch = fit


@pytest.mark.parametrize("estimator, name", [(_Echo(), "_Echo"), (_NotABaseEstimator(), "_NotABaseEstimator"),
                                             (_NoPredictMeasures(_Echo()), "_NoPredictMeasures"),
                                             (_WithoutPredictMeasures(_Echo()), "_WithoutPredictMeasures")])
def test_fit_refuses_what_is_not_a_cap_estimator(echo, estimator, name):
    _, X, y = echo
    with pytest.raises(TypeError, match="^" + _cap_message(name) + "$"):
        C.ConformalInterval(estimator).fit(X, y)


@pytest.mark.parametrize("kw, exc, message", [
    ({"cal_fraction": 1.5}, ValueError, "cal_fraction must be in (0.0, 1.0), got 1.5"),
    ({"n_cal": 1}, ValueError, "n_cal must be >= 2, got 1"),
    ({"refit": 1}, TypeError, "refit must be True or False, got 1"),
    ({"random_state": -1}, ValueError, "random_state must be in 0..2**32-1 (numpy's seed range), got -1; use a "
                                       "smaller seed"),
    ({"scheme": "jackknife"}, ValueError, "scheme must be one of ('split', 'mc', 'cv', 'bootstrap', 'rates'), got "
                                          "'jackknife'"),
    ({"n_splits": 1}, ValueError, "n_splits must be >= 2, got 1"),
    ({"bins": 0}, ValueError, "bins must be >= 1, got 0"),
    ({"max_cal_size": 1}, ValueError, "max_cal_size must be >= 2, got 1"),
    ({"score": "t"}, ValueError, "score must be one of ('absolute', 'studentised', 'both'), got 't'"),
    ({"floor": "yes"}, TypeError, "floor must be True, False, \"union\" or \"auto\", got 'yes'"),
    ({"bin_by": "shift"}, ValueError, "bin_by must be one of ('predicted', 'prevalence'), got 'shift'"),
    ({"rate_model": "bayes"}, ValueError,
     "rate_model must be one of ('halvings', 'posterior', 'response', 'auto'), got 'bayes'"),
    ({"propagate": 1}, TypeError, "propagate must be True, False or \"auto\", got 1"),
    ({"propagate": "Auto"}, TypeError, "propagate must be True, False or \"auto\", got 'Auto'"),
    ({"scheme": "cv", "n_splits": 3}, ValueError, "n_splits=3 folds need at least 6 items of every class in y_val, "
                                                  "got counts [5, 9]; use fewer folds"),
])
def test_fit_errors_name_the_argument(kw, exc, message):
    X, y = _echo_data(wrong=(1, 1), per_class=(5, 9))
    h = _Echo().fit(X, y)
    with pytest.raises(exc, match="^" + re.escape(message) + "$"):
        _ci(h, **kw).fit(X, y)


def test_fit_checks_v():
    X, y = _echo_data(wrong=(1, 1), per_class=(5, 9))
    h = _Echo().fit(X, y)
    with pytest.raises(ValueError, match=r"^X_val is empty \(shape \(0, 2\)\)"):
        _ci(h).fit(X[:0], y[:0])
    with pytest.raises(ValueError, match=r"^y_val must have one label per item: expected shape \(14,\), got \(13,\)$"):
        _ci(h).fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"^y_val has labels \[2\] outside the codeframe 0\.\.1"):
        _ci(h).fit(X, np.r_[y[:-1], 2])
    # a class of h absent from V: its count is 0
    with pytest.raises(ValueError, match=re.escape("got counts [14, 0]")):
        _ci(h).fit(X, np.zeros(14, dtype=int))


def test_fit_needs_four_items_of_every_class():
    X, y = _echo_data(wrong=(1, 1), per_class=(3, 9))
    h = _Echo().fit(X, y)
    with pytest.raises(ValueError, match="^" + re.escape(
            "y_val needs at least 4 items of every class to split V into a fit part and a calibration part, got "
            "counts [3, 9]") + "$"):
        _ci(h).fit(X, y)
    # the bounds themselves are accepted: 4 items, 2 splits, 2 calibration samples, 1 bin, max_cal_size 2,
    # and a cv of k folds with exactly 2k items of a class
    X, y = _echo_data(wrong=(1, 1), per_class=(4, 9))
    ci = _ci(h, n_cal=2, n_splits=2, bins=1, max_cal_size=2, floor=np.bool_(True)).fit(X, y)
    assert ci.n_val_ == 13
    assert _ci(h, scheme="cv", n_splits=2, n_cal=2).fit(X, y).n_fit_ == pytest.approx((6 + 7) / 2)
    assert _ci(h, max_cal_size=None, n_cal=2).fit(X, y).max_cal_size is None


def test_default_parameters():
    ci = C.ConformalInterval("m")
    assert ci.get_params() == {"estimator": "m", "cal_fraction": 0.5, "n_cal": 500, "refit": False,
                               "scheme": "split", "n_splits": 5, "pool_correction": False, "pool_size": None,
                               "bins": 1, "score": "absolute", "floor": False, "bin_by": "predicted",
                               "prior": "jeffreys", "max_cal_size": 2000, "random_state": 0,
                               "rate_model": "halvings", "propagate": False}
    assert C.MAX_CAL_SIZE == 2000 and C.FLOOR_DRAWS == 4000 and C.RATE_DRAWS == 200
    assert C.RATE_MODELS == ("halvings", "posterior", "response", "auto")


# --------------------------------------------------------------------------------------- fit: the schemes
def _items(X_part):
    """The item numbers (column 1 of the echo problem's X) of a part of V, as a sorted list."""
    return sorted(X_part[:, 1].astype(int).tolist())


def test_split_scheme_is_one_stratified_seeded_split(echo):
    h, X, y = echo
    ci = _ci(h, n_cal=4, cal_fraction=0.25, random_state=3).fit(X, y)
    (cal, X_c, y_c, p_c), = ci.folds_
    # the calibration part: a quarter of each class; the fit part: the rest, whose table the method holds
    assert np.bincount(y_c).tolist() == [10, 10] and ci.part_sizes_ == (60, 20) and ci.n_fit_ == 60.0
    np.testing.assert_array_equal(p_c, X_c[:, 0])
    np.testing.assert_array_equal(ci.fit_counts_[0] + C._counts(y_c, p_c, 2), ci.val_counts_)
    np.testing.assert_array_equal(cal.val_table_ * 60, ci.fit_counts_[0])
    # sklearn's stratified split with the seed, the seed also the method's
    _, cal_idx = train_test_split(np.arange(80), test_size=0.25, stratify=y, random_state=3)
    assert _items(X_c) == sorted(cal_idx.tolist()) and cal.random_state == 3
    assert _items(_ci(h, n_cal=4, cal_fraction=0.25, random_state=4).fit(X, y).folds_[0][1]) != _items(X_c)
    assert _ci(h, n_cal=4).fit(X, y).part_sizes_ == (40, 40)  # cal_fraction .5 by default
    # no refit: the point prediction is the calibrated method's (split conformal's exact guarantee)
    assert ci.estimator_ is cal and ci.calibrator_ is cal and ci.scale_ == 1.0
    full = _naive(h).fit(X, y)
    assert _ci(h, n_cal=4).fit(X, y, point_estimator=full).estimator_ is not full
    # refit=True: the method on all of V (or the one given)
    refit = _ci(h, n_cal=4, refit=True, random_state=3).fit(X, y)
    assert refit.estimator_ is not refit.calibrator_ and refit.estimator_.random_state == 3
    np.testing.assert_array_equal(refit.estimator_.val_table_ * 80, ci.val_counts_)
    assert _ci(h, n_cal=4, refit=True).fit(X, y, point_estimator=full).estimator_ is full


def _halving(y, j, seed, fraction=0.5):
    """Split j of the "mc" and "rates" schemes: sklearn's stratified split seeded by seed + 7919 (j + 1)."""
    return train_test_split(np.arange(len(y)), test_size=fraction, stratify=y,
                            random_state=(seed + 7919 * (j + 1)) % 2**32)


@pytest.mark.parametrize("seed", [5, 2**32 - 1])
def test_mc_scheme_splits_are_seeded_and_refit_on_v(echo, seed):
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=3, n_cal=4, random_state=seed).fit(X, y)
    assert len(ci.folds_) == 3 and ci.calibrator_ is ci.folds_[0][0]
    for j, (cal, X_c, y_c, p_c) in enumerate(ci.folds_):
        fit_idx, cal_idx = _halving(y, j, seed)
        assert _items(X_c) == sorted(cal_idx.tolist())
        np.testing.assert_array_equal(ci.fit_counts_[j], C._counts(y[fit_idx], X[fit_idx, 0], 2))
        np.testing.assert_array_equal(cal.val_table_ * 40, ci.fit_counts_[j])
    assert ci.n_fit_ == 40.0 and ci.part_sizes_ == (40, 40)
    # refit on all of V for the point prediction, or the method given
    assert all(ci.estimator_ is not f[0] for f in ci.folds_)
    np.testing.assert_array_equal(ci.estimator_.val_table_ * 80, ci.val_counts_)
    full = _naive(h).fit(X, y)
    assert _ci(h, scheme="mc", n_splits=2, n_cal=4).fit(X, y, point_estimator=full).estimator_ is full


def test_cv_scheme_folds_partition_v(echo):
    h, X, y = echo
    ci = _ci(h, scheme="cv", n_splits=4, n_cal=4, random_state=2).fit(X, y)
    cal_parts = [_items(f[1]) for f in ci.folds_]
    assert sorted(sum(cal_parts, [])) == list(range(80))  # every item calibrates exactly once
    assert ci.n_fit_ == 60.0 and ci.part_sizes_ == (60, 20)
    expected = [sorted(c.tolist()) for _, c in StratifiedKFold(4, shuffle=True, random_state=2).split(X, y)]
    assert cal_parts == expected
    other = _ci(h, scheme="cv", n_splits=4, n_cal=4, random_state=3).fit(X, y)
    assert [_items(f[1]) for f in other.folds_] != cal_parts
    for j, (cal, X_c, y_c, p_c) in enumerate(ci.folds_):
        np.testing.assert_array_equal(ci.fit_counts_[j] + C._counts(y_c, p_c, 2), ci.val_counts_)
    assert all(ci.estimator_ is not f[0] for f in ci.folds_)


def test_bootstrap_scheme_resamples_each_class_and_calibrates_on_v(echo):
    h, X, y = echo
    ci = _ci(h, scheme="bootstrap", n_splits=3, n_cal=4, random_state=6, pool_correction=True,
             pool_size=20).fit(X, y)
    rng = np.random.default_rng([6, 1])
    for j, (cal, X_c, y_c, p_c) in enumerate(ci.folds_):
        fit = np.concatenate([rng.choice(np.flatnonzero(y == c), 40) for c in range(2)])
        np.testing.assert_array_equal(ci.fit_counts_[j], C._counts(y[fit], X[fit, 0], 2))
        assert ci.fit_counts_[j].sum(axis=1).tolist() == [40, 40]  # V's class counts
        np.testing.assert_array_equal(X_c, X)  # V itself plays the test pool
    assert ci.n_fit_ == 80.0 and ci.part_sizes_ == (80, 80)
    assert ci.scale_ == 1.0  # no pool correction for the bootstrap
    other = _ci(h, scheme="bootstrap", n_splits=3, n_cal=4, random_state=7).fit(X, y)
    assert not np.array_equal(other.fit_counts_[0], ci.fit_counts_[0])


@pytest.mark.parametrize("seed", [5, 2**32 - 1])
def test_rates_scheme_halvings_and_no_refit(echo, seed):
    h, X, y = echo
    ci = _ci(h, scheme="rates", n_splits=3, n_cal=4, cal_fraction=0.25, random_state=seed).fit(X, y)
    assert len(ci.half_counts_) == 3 and ci.folds_ == []
    for j, (a, b) in enumerate(ci.half_counts_):
        ia, ib = _halving(y, j, seed, 0.25)
        np.testing.assert_array_equal(a, C._counts(y[ia], X[ia, 0], 2))
        np.testing.assert_array_equal(b, C._counts(y[ib], X[ib, 0], 2))
    assert ci.part_sizes_ == (60, 20) and ci.n_fit_ == 80.0
    assert len(ci.fit_counts_) == 1 and ci.fit_counts_[0] is ci.val_counts_
    # the method fitted on all of V (seeded), or the one given, is the point prediction and the calibrator
    assert ci.calibrator_ is ci.estimator_ and ci.estimator_.random_state == seed
    np.testing.assert_array_equal(ci.estimator_.val_table_ * 80, ci.val_counts_)
    assert ci.val_data_[0] is not None and np.array_equal(ci.val_data_[2], X[:, 0])
    full = _naive(h).fit(X, y)
    halved = _ci(h, scheme="rates", n_splits=2, n_cal=4).fit(X, y, point_estimator=full)
    assert halved.estimator_ is full and halved.part_sizes_ == (40, 40)  # cal_fraction .5 by default
    # (1/|V| + 1/|V|) / (1/60 + 1/20)
    assert ci.scale_ == pytest.approx(math.sqrt((2 / 80) / (1 / 60 + 1 / 20)))


def test_pool_scale_is_the_variance_ratio_of_the_rate_differences(echo):
    h, X, y = echo
    # fit part 60, calibration part 20; at test time V (80) against a pool of 20: (1/80 + 1/20) / (1/60 + 1/20)
    ratio = math.sqrt((1 / 80 + 1 / 20) / (1 / 60 + 1 / 20))
    for scheme in ("split", "mc"):
        ci = _ci(h, scheme=scheme, n_splits=2, n_cal=4, cal_fraction=0.25, pool_correction=True,
                 pool_size=20).fit(X, y)
        assert ci.scale_ == pytest.approx(ratio)
        assert _ci(h, scheme=scheme, n_splits=2, n_cal=4, cal_fraction=0.25, pool_size=20).fit(X, y).scale_ == 1.0
    rates = _ci(h, scheme="rates", n_splits=2, n_cal=4, cal_fraction=0.25, pool_size=20).fit(X, y)
    assert rates.scale_ == pytest.approx(ratio)  # the rates scheme always scales, pool_correction or not
    with pytest.raises(ValueError, match=r"^pool_size must be >= 1, got 0$"):
        _ci(h, scheme="rates", n_splits=2, n_cal=4, pool_size=0).fit(X, y)
    with pytest.raises(ValueError, match=r"^pool_size must be >= 1, got 0$"):
        _ci(h, n_cal=4, pool_correction=True, pool_size=0).fit(X, y)


def test_with_options_copies_the_fit_and_sets_the_options(echo):
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=4).fit(X, y)
    other = ci.with_options(1, bins=3, score="both", floor=np.bool_(True), bin_by="prevalence")
    assert (other.pool_correction, other.bins, other.score, other.floor, other.bin_by) == (True, 3, "both", True,
                                                                                         "prevalence")
    assert type(other.pool_correction) is bool and type(other.floor) is bool
    assert other.scale_ == pytest.approx(math.sqrt(0.5)) and other.folds_ is ci.folds_
    assert (ci.pool_correction, ci.bins, ci.score, ci.floor, ci.bin_by, ci.scale_) == (False, 1, "absolute", False,
                                                                                       "predicted", 1.0)
    back = other.with_options(False)  # the defaults
    assert (back.pool_correction, back.bins, back.score, back.floor, back.bin_by, back.scale_) == \
        (False, 1, "absolute", False, "predicted", 1.0)
    with pytest.raises(ValueError, match=r"^bins must be >= 1, got 0$"):
        ci.with_options(False, bins=0)
    with pytest.raises(ValueError, match=r"^score must be one of"):
        ci.with_options(False, score="t")
    with pytest.raises(TypeError, match=r'^floor must be True, False, "union" or "auto", got 1$'):
        ci.with_options(False, floor=1)
    with pytest.raises(ValueError, match=r"^bin_by must be one of"):
        ci.with_options(False, bin_by="x")
    assert ci.with_options(False, propagate=np.bool_(True)).propagate is True and ci.propagate is False
    assert other.with_options(False).propagate is False
    assert ci.with_options(False, propagate="auto").propagate == "auto"
    with pytest.raises(TypeError, match=r'^propagate must be True, False or "auto", got \'yes\'$'):
        ci.with_options(False, propagate="yes")
    with pytest.raises(NotFittedError, match="^This ConformalInterval instance is not fitted yet"):
        _ci(h).with_options(False)


def test_calibration_size_is_the_sample_size_up_to_max_cal_size(echo):
    h, X, y = echo
    ci = _ci(h, max_cal_size=30)
    assert [ci._cal_size(m) for m in (1, 29, 30, 31, 500)] == [1, 29, 30, 30, 30]
    ci.max_cal_size = None
    assert ci._cal_size(10**6) == 10**6
    ci.max_cal_size = 1
    with pytest.raises(ValueError, match=r"^max_cal_size must be >= 2, got 1$"):
        ci._cal_size(5)


def test_unfitted_copy_keeps_h_and_replaces_a_fitted_quantifier(echo):
    from capshift.quantifiers import Quantifier
    h, X, y = echo
    shared = Quantifier("cc", classifier=h).fit(X, y, 2)
    est = experiment.make_method("LEAP_ACC", h, quantifier=shared, random_state=1).fit(X, y)
    copy = C.unfitted_copy(est, 9)
    assert type(copy) is type(est) and copy.random_state == 9 and copy.classifier is h
    assert not hasattr(copy, "val_table_")  # unfitted
    q = copy.get_params()["quantifier"]
    assert type(q) is Quantifier and q is not shared and not hasattr(q, "q_") and hasattr(shared, "q_")
    assert (q.method, q.classifier, q.random_state) == ("cc", h, shared.random_state)
    plain = C.unfitted_copy(_naive(h, random_state=1), 4)
    assert plain.get_params() == {**_naive(h).get_params(), "random_state": 4}
    # h a scikit-learn estimator with parameters of its own: only the method's own parameters are passed on
    from sklearn.linear_model import LogisticRegression
    lr = LogisticRegression(C=0.5).fit(X, y)
    lr_copy = C.unfitted_copy(_naive(lr, random_state=1), 4)
    assert lr_copy.classifier is lr and lr_copy.get_params(deep=False) == {
        **_naive(lr).get_params(deep=False), "random_state": 4}


# ------------------------------------------------------------------------------------ calibration samples
@pytest.mark.parametrize("seed, per_class", [(2, (40, 40)), (2**32 - 1, (40, 40)), (2, (30, 50))])
def test_calibration_samples_by_hand(seed, per_class):
    X, y = _echo_data(per_class=per_class)
    h = _Echo().fit(X, y)
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=3, random_state=seed).fit(X, y)
    c = ci._calibration(30, "accuracy")
    per_fold = 2  # max(2, ceil(3 / 2))
    assert len(c["true"]) == 2 * per_fold and c["fold"].tolist() == [0, 0, 1, 1]
    for j, (cal, X_c, y_c, p_c) in enumerate(ci.folds_):
        # the fold's samples: UPP on its calibration part, seeded by seed + j
        idx = protocols.upp_indices(y_c, 30, per_fold, seed=(seed + j) % 2**32, n_classes=2)
        fit = ci.fit_counts_[j]
        pool = C._counts(y_c, p_c, 2)
        for s, i in enumerate(idx):
            k = 2 * j + s
            table = contingency_table(y_c[i], p_c[i], 2)
            prev, gamma = table.sum(axis=1), table.sum(axis=0)
            assert c["true"][k] == pytest.approx(accuracy(table))
            assert c["pred"][k] == pytest.approx(np.trace(fit) / fit.sum())  # Naive: the fit part's accuracy
            # the pool's expected value at the sample's prevalence: its rates mixed by that prevalence
            assert c["expected"][k] == pytest.approx(sum(prev[i_] * pool[i_, i_] / pool[i_].sum() for i_ in range(2)))
            np.testing.assert_allclose(c["gamma"][k], gamma)
            fit_pred = np.bincount(cal.val_pred_, minlength=2) / len(cal.val_pred_)
            assert c["dist"][k] == pytest.approx(np.abs(gamma - fit_pred).sum())
            assert c["prev_dist"][k] == pytest.approx(
                np.abs(C.acc_prevalence(fit, gamma) - fit.sum(axis=1) / fit.sum()).sum())
    if per_class[0] != per_class[1]:
        return
    # cached per (size, measure name): a measure given by its function shares the entry of its name
    assert ci._calibration(30, accuracy) is c and set(ci.calibration_) == {(30, "accuracy")}
    ci._calibration(30, "f1")
    assert set(ci.calibration_) == {(30, "accuracy"), (30, "f1")}


def test_calibration_samples_per_fold_is_n_cal_over_the_folds(echo):
    h, X, y = echo
    for n_splits, n_cal, per_fold in [(3, 7, 3), (3, 6, 2), (3, 2, 2), (2, 5, 3)]:
        ci = _ci(h, scheme="mc", n_splits=n_splits, n_cal=n_cal).fit(X, y)
        assert ci._calibration(20, "accuracy")["fold"].tolist() == np.repeat(np.arange(n_splits), per_fold).tolist()


@pytest.mark.parametrize("seed", [3, 2**32 - 1])
def test_rates_calibration_by_hand(echo, seed):
    h, X, y = echo
    ci = _ci(h, scheme="rates", n_splits=2, n_cal=3, random_state=seed, cal_fraction=0.25).fit(X, y)
    c = ci._calibration(25, "accuracy")
    idx = protocols.upp_indices(y, 25, 3, seed=seed, n_classes=2)
    tables = [contingency_table(y[i], X[i, 0], 2) for i in idx]
    prev = np.array([t.sum(axis=1) for t in tables])
    gamma = np.array([t.sum(axis=0) for t in tables])
    V = ci.val_counts_
    # halving-major: 2 halvings x 3 samples
    np.testing.assert_allclose(c["true"], np.tile([accuracy(t) for t in tables], 2))
    np.testing.assert_allclose(c["pred"], np.full(6, 66 / 80))  # Naive fitted on all of V
    by_hand = [p @ (np.diag(a) / a.sum(axis=1) - np.diag(b) / b.sum(axis=1)) for a, b in ci.half_counts_ for p in prev]
    np.testing.assert_allclose(c["rate"], by_hand, atol=1e-15)
    np.testing.assert_allclose(c["gamma"], np.tile(gamma, (2, 1)))
    np.testing.assert_allclose(c["dist"], np.tile(np.abs(gamma - [34 / 80, 46 / 80]).sum(axis=1), 2))
    prev_dist = [np.abs(C.acc_prevalence(V, g) - [0.5, 0.5]).sum() for g in gamma]
    np.testing.assert_allclose(c["prev_dist"], np.tile(prev_dist, 2))
    assert c["fold"].tolist() == [0] * 6
    # the residuals: |scale x rate discrepancy + predicted - true|
    np.testing.assert_allclose(ci._residuals(25, "accuracy"),
                               np.abs(ci.scale_ * np.array(by_hand) + 66 / 80 - c["true"]), atol=1e-15)


def test_residuals_scale_the_pool_part_only(echo):
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=4, pool_correction=True, pool_size=20).fit(X, y)
    c = ci._calibration(30, "accuracy")
    s = math.sqrt((1 / 80 + 1 / 20) / (1 / 40 + 1 / 40))
    np.testing.assert_allclose(ci._residuals(30, "accuracy"),
                               np.abs(s * (c["pred"] - c["expected"]) + c["expected"] - c["true"]), atol=1e-15)
    assert not np.allclose(s * (c["pred"] - c["expected"]) + c["expected"] - c["true"], c["pred"] - c["true"])


def _evidence_sd(counts, acc_counts, gamma, size):
    """The studentised scale by hand: the standard deviation of the sample's accuracy, the sum of independent
    beta-binomial error counts (variance n a b (a + b + n) / ((a + b)^2 (a + b + 1))), at least 1/size."""
    counts = np.asarray(counts, dtype=float)
    N = class_counts(C.acc_prevalence(acc_counts, gamma), size)
    var = 0.0
    for i in range(2):
        a, b, n = counts[i, 1 - i] + 0.5, counts[i, i] + 0.5, N[i]
        var += n * a * b * (a + b + n) / ((a + b) ** 2 * (a + b + 1))
    return max(math.sqrt(var) / size, 1 / size)


def test_studentised_scale_is_the_accuracys_evidence_sd(echo):
    h, X, y = echo
    V = np.array([[30, 10], [4, 36]])
    g = np.array([0.4, 0.6])
    assert C.ConformalInterval._sd(V, V, g, 50) == pytest.approx(_evidence_sd(V, V, g, 50), rel=1e-9)
    # scaled evidence (fewer items) with the rates of V for the prevalence: two tables, two roles
    assert C.ConformalInterval._sd(V / 2, V, g, 50) == pytest.approx(_evidence_sd(V / 2, V, g, 50), rel=1e-9)
    assert C.ConformalInterval._sd(V / 2, V, g, 50) != pytest.approx(C.ConformalInterval._sd(V, V, g, 50))
    skew = np.array([[30, 10], [1, 3]])
    assert C.ConformalInterval._sd(V, skew, g, 50) == pytest.approx(_evidence_sd(V, skew, g, 50), rel=1e-9)
    # never below the resolution 1/size: an errorless h on a large V, a sample of 10
    big = np.diag([5000.0, 5000.0])
    assert C.ConformalInterval._sd(big, big, np.array([0.5, 0.5]), 10) == 0.1
    # calibration: each sample's scale under its fold's fit table; the residuals divided by it
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=4, score="studentised").fit(X, y)
    r = ci._residuals(30, "accuracy", True)
    c = ci._calibration(30, "accuracy")
    scales = [_evidence_sd(ci.fit_counts_[j], ci.fit_counts_[j], gam, 30) for j, gam in zip(c["fold"], c["gamma"])]
    np.testing.assert_allclose(c["scale"], scales, rtol=1e-9)
    np.testing.assert_allclose(r, ci._residuals(30, "accuracy", False) / c["scale"], rtol=1e-12)
    # test samples: V's table shrunk to the fit parts' number of items, V's rates for the prevalence, the capped size
    ci.max_cal_size = 30
    samples = [X[:20], X[10:70]]
    scales, gammas = ci._test_scales(samples)
    for Xs, sc, gam in zip(samples, scales, gammas):
        np.testing.assert_allclose(gam, np.bincount(Xs[:, 0].astype(int), minlength=2) / len(Xs))
        assert sc == pytest.approx(_evidence_sd(ci.val_counts_ * 40 / 80, ci.val_counts_, gam, min(len(Xs), 30)),
                                   rel=1e-9)
    ci.score = "absolute"
    assert ci._test_scales(samples)[0].tolist() == [1.0, 1.0]


def test_half_widths_of_each_score(echo):
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=40).fit(X, y)
    samples = [X[:30], X[X[:, 0] == 1][:30]]
    a = ci.quantiles(samples, "accuracy", 0.1)
    q = C.conformal_quantile(ci._residuals(30, "accuracy"), 0.1)
    assert a.tolist() == [q, q]  # one half-width per size
    st = ci.with_options(False, score="studentised")
    scales = st._test_scales(samples)[0]
    s = st.quantiles(samples, "accuracy", 0.1)
    np.testing.assert_allclose(s, C.conformal_quantile(ci._residuals(30, "accuracy", True), 0.1) * scales)
    assert s[0] != s[1]
    np.testing.assert_array_equal(ci.with_options(False, score="both").quantiles(samples, "accuracy", 0.1),
                                  np.maximum(a, s))
    # the union: the studentised half-width where it is the larger (a sample rich in the class h errs on most)
    rich = [X[X[:, 0] == 0][:30]]
    a1 = ci.quantiles(rich, "accuracy", 0.1)
    s1 = ci.with_options(False, score="studentised").quantiles(rich, "accuracy", 0.1)
    assert s1[0] > a1[0] and ci.with_options(False, score="both").quantiles(rich, "accuracy", 0.1)[0] == s1[0]
    with pytest.raises(ValueError, match=r"^alpha must be in \(0\.0, 1\.0\), got 0$"):
        ci.quantiles(samples, "accuracy", 0)
    ci.bins = 0
    with pytest.raises(ValueError, match=r"^bins must be >= 1, got 0$"):
        ci.quantiles(samples, "accuracy", 0.1)
    ci.bins, ci.score = 1, "t"
    with pytest.raises(ValueError, match=r"^score must be one of"):
        ci.quantiles(samples, "accuracy", 0.1)


def _three_bins(ci, bin_by):
    """Calibration samples of 20 items for accuracy, their residuals, the two edges of 3 Mondrian bins of the shift
    proxy ``bin_by`` names, and each sample's bin (searchsorted side="right", as ConformalInterval)."""
    c = ci._calibration(20, "accuracy")
    proxy = c["dist"] if bin_by == "predicted" else c["prev_dist"]
    edges = np.quantile(proxy, [1 / 3, 2 / 3])
    return c, ci._residuals(20, "accuracy"), edges, np.searchsorted(edges, proxy, side="right")


@pytest.mark.parametrize("bin_by", ["predicted", "prevalence"])
def test_mondrian_bins_by_hand(echo, bin_by):
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=60, bins=3, bin_by=bin_by).fit(X, y)
    c, r, edges, members = _three_bins(ci, bin_by)
    ref = np.bincount(ci.estimator_.val_pred_, minlength=2) / 80
    val_prev = np.array([0.5, 0.5])
    # three test samples: h predicts class 0 for none, a fifth, half of the items
    samples = [X[X[:, 0] == 1][:20], np.r_[X[X[:, 0] == 0][:4], X[X[:, 0] == 1][:16]],
               np.r_[X[X[:, 0] == 0][:10], X[X[:, 0] == 1][:10]]]
    got = ci.quantiles(samples, "accuracy", 0.3)
    bins_hit = set()
    for Xs, qi in zip(samples, got):
        gam = np.bincount(Xs[:, 0].astype(int), minlength=2) / 20
        d = np.abs(gam - ref).sum() if bin_by == "predicted" else np.abs(C.acc_prevalence(ci.val_counts_, gam)
                                                                         - val_prev).sum()
        assert ci._test_dist(gam, ref) == pytest.approx(d)
        b = np.searchsorted(edges, d, side="right")
        bins_hit.add(int(b))
        assert qi == C.conformal_quantile(r[members == b], 0.3)
    assert len(bins_hit) >= 2
    # a bin of too few scores for alpha (inf) falls back to all of them: 60 scores, 20 per bin; alpha = .04
    # needs rank 21 in a bin (inf) and rank 59 in all
    np.testing.assert_array_equal(ci.quantiles(samples, "accuracy", 0.04), C.conformal_quantile(r, 0.04))


@pytest.mark.parametrize("bin_by", ["predicted", "prevalence"])
def test_an_empty_mondrian_bin_falls_back_to_all_scores(echo, bin_by):
    # a shift proxy equal on every calibration sample (a classifier that predicts one class on V's samples):
    # the edges tie, every calibration sample falls in the last bin, and a test sample of another proxy finds its
    # bin empty; it gets the quantile of all the scores (before: conformal_quantile raised on the empty bin)
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=60, bins=4, bin_by=bin_by).fit(X, y)
    c, r = ci._calibration(20, "accuracy"), ci._residuals(20, "accuracy")
    c["dist"], c["prev_dist"] = np.full(len(r), 5.0), np.full(len(r), 5.0)  # beyond any test sample's proxy
    samples = [X[X[:, 0] == 1][:20], np.r_[X[X[:, 0] == 0][:10], X[X[:, 0] == 1][:10]]]
    np.testing.assert_array_equal(ci.quantiles(samples, "accuracy", 0.1), C.conformal_quantile(r, 0.1))
    assert np.isfinite(ci.bounds(samples, [0.5, 0.5], "accuracy", 0.1)).all()


def test_two_mondrian_bins_split_at_the_median(echo):
    # bins=2 is Mondrian too (only bins=1 takes all scores): the edge is the median of the shift proxy
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=60, bins=2).fit(X, y)
    c, r = ci._calibration(20, "accuracy"), ci._residuals(20, "accuracy")
    edges = np.quantile(c["dist"], [0.5])
    members = np.searchsorted(edges, c["dist"], side="right")
    ref = np.bincount(ci.estimator_.val_pred_, minlength=2) / 80
    samples = [X[X[:, 0] == 1][:20], np.r_[X[X[:, 0] == 0][:10], X[X[:, 0] == 1][:10]]]
    got = ci.quantiles(samples, "accuracy", 0.3)
    want = [C.conformal_quantile(r[members == np.searchsorted(edges, ci._test_dist(
        np.bincount(Xs[:, 0].astype(int), minlength=2) / 20, ref), side="right")], 0.3) for Xs in samples]
    np.testing.assert_array_equal(got, want)
    assert set(want) != {C.conformal_quantile(r, 0.3)}  # the bins' quantiles are not all the pooled one


# ------------------------------------------------------------------------------- intervals and the floor
def test_bounds_are_point_plus_minus_q_clipped(echo):
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=40).fit(X, y)
    samples = [X[:30], X[X[:, 0] == 1][:30]]
    q = ci.quantiles(samples, "accuracy", 0.2)
    b = ci.bounds(samples, [0.5, 0.95], "accuracy", 0.2)
    np.testing.assert_allclose(b, np.clip([[0.5 - q[0], 0.5 + q[0]], [0.95 - q[1], 0.95 + q[1]]], 0, 1))
    assert q[1] > 0.05 and b[1, 1] == 1.0  # clipped above
    assert ci.bounds(samples, [0.02, 0.5], "accuracy", 0.2)[0, 0] == 0.0  # and below


@pytest.mark.parametrize("measure", ["accuracy", "f1"])
def test_floor_widens_each_side_to_the_evidence_reach(echo, measure):
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=40, floor=True, max_cal_size=20, random_state=4).fit(X, y)
    samples = [X[:60], X[X[:, 0] == 1][:30]]
    point = np.array([0.5, 0.6])
    q = ci.quantiles(samples, measure, 0.2)
    b = ci.bounds(samples, point, measure, 0.2)
    for i, Xs in enumerate(samples):
        gam = np.bincount(Xs[:, 0].astype(int), minlength=2) / len(Xs)
        # the evidence interval at the sample's own size (not the capped calibration size), seeded as the method
        lo, hi, c = C.evidence_interval(ci.val_counts_, C.acc_prevalence(ci.val_counts_, gam), len(Xs), 0.2,
                                        measure, n_draws=4000, random_state=4)
        assert b[i, 0] == pytest.approx(point[i] - max(q[i], c - lo), abs=1e-12)
        assert b[i, 1] == pytest.approx(point[i] + max(q[i], hi - c), abs=1e-12)
    ci.floor = False
    np.testing.assert_allclose(ci.bounds(samples, point, measure, 0.2), np.stack([point - q, point + q], axis=1))


def test_floor_of_an_errorless_classifier(echo):
    # no error on V: every residual is 0, the interval is the evidence interval's reach alone, clipped at 1
    X, y = _echo_data(wrong=(0, 0))
    h = _Echo().fit(X, y)
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=40, floor=True).fit(X, y)
    assert ci.quantiles([X[:50]], "accuracy", 0.1)[0] == 0.0
    lo, hi, c = C.evidence_interval([[40, 0], [0, 40]], [0.5, 0.5], 50, 0.1)
    assert (hi, c) == (1.0, 1.0) and lo < 1.0
    lower, upper = ci.predict_interval(X[:50], alpha=0.1)
    assert lower == pytest.approx(1.0 - (c - lo)) and upper == 1.0


def test_predict_interval_batch_and_its_errors(echo):
    h, X, y = echo
    unfitted = _ci(h)
    for call in (lambda: unfitted.predict(X), lambda: unfitted.predict_interval_batch([X])):
        with pytest.raises(NotFittedError, match="^This ConformalInterval instance is not fitted yet"):
            call()
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=40).fit(X, y)
    assert ci.predict(X[:30]) == pytest.approx(66 / 80) and isinstance(ci.predict(X[:30]), float)
    assert ci.predict(X[:30], "f1") == pytest.approx(ci.estimator_.predict(X[:30], "f1"))
    samples = (X[:30], X[X[:, 0] == 1][:30])  # a tuple is a list of samples too
    b = ci.predict_interval_batch(samples, alpha=0.2)
    np.testing.assert_array_equal(b, ci.bounds(list(samples), [66 / 80] * 2, "accuracy", 0.2))
    assert ci.predict_interval(samples[1], alpha=0.2) == tuple(b[1])
    assert ci.predict_interval(samples[1]) == tuple(ci.bounds([samples[1]], [66 / 80], "accuracy", 0.05)[0])
    # the method's own measure by default
    f1 = C.ConformalInterval(_naive(h, measure="f1"), scheme="mc", n_splits=2, n_cal=40).fit(X, y)
    np.testing.assert_array_equal(f1.predict_interval_batch([X[:30]], 0.2),
                                  f1.bounds([X[:30]], [f1.estimator_.predict(X[:30], "f1")], "f1", 0.2))
    with pytest.raises(ValueError, match=r"^alpha must be in \(0\.0, 1\.0\), got 1\.5$"):
        ci.predict_interval_batch([X[:30]], alpha=1.5)
    for bad in ([], (), X[:30]):
        with pytest.raises(ValueError, match=r"^samples must be a non-empty list of samples \(one \(m, d\) array "
                                             r"each\)$"):
            ci.predict_interval_batch(bad)
    with pytest.raises(ValueError, match=r"^samples\[1\] is empty"):
        ci.predict_interval_batch([X[:30], X[:0]])


# --------------------------------------------------------------------------------------- tables and counts
def test_fractions_and_counts():
    np.testing.assert_array_equal(C._fractions([0, 2, 2, 0, 2], 4), [0.4, 0, 0.6, 0])
    # rows: true classes; columns: h's decisions
    np.testing.assert_array_equal(C._counts([0, 0, 1, 2, 2, 2], [0, 1, 1, 0, 2, 2], 3),
                                  [[1, 1, 0], [0, 1, 0], [1, 0, 2]])
    assert C._counts([1], [1], 2).dtype == float and C._counts([1], [1], 2).shape == (2, 2)
    np.testing.assert_array_equal(C._counts([0, 1], [0, 0], 2), [[1, 0], [1, 0]])  # the last cell empty


@pytest.mark.parametrize("bad", [[1, 2], [[1, 2, 3], [4, 5, 6]], [[3]], [[1, np.nan], [0, 1]],
                                 [[1, np.inf], [0, 1]], [[1, -1], [0, 1]], np.zeros((2, 2, 2))])
def test_check_counts_message(bad):
    shape = np.asarray(bad, dtype=float).shape
    with pytest.raises(ValueError, match="^" + re.escape(f"val_counts must be an (n, n) table of non-negative "
                                                         f"counts, n >= 2, got shape {shape}") + "$"):
        C._check_counts(bad)


def test_check_counts_accepts_zeros():
    np.testing.assert_array_equal(C._check_counts([[0, 0], [0, 0]]), np.zeros((2, 2)))
    assert C._check_counts([[1, 2], [3, 4]]).dtype == float


def test_acc_prevalence_by_hand():
    # an errorless h on 10 + 10 items: R = [[10.5, .5], [.5, 10.5]] / 11 (Jeffreys), p @ R = [.3, .7] at p = .28
    np.testing.assert_allclose(C.acc_prevalence([[10, 0], [0, 10]], [0.3, 0.7]), [0.28, 0.72], atol=1e-9)
    V = np.array([[80, 20], [10, 90]])
    R = (V + 0.5) / (V + 0.5).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(C.acc_prevalence(V, np.array([0.6, 0.4]) @ R), [0.6, 0.4], atol=1e-9)
    W = np.array([[40, 8], [6, 46]])  # rows of 48 and 52 items
    R = (W + 0.5) / (W + 0.5).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(C.acc_prevalence(W, np.array([0.3, 0.7]) @ R), [0.3, 0.7], atol=1e-9)
    # beyond the simplex: bounded to [0, 1], renormalised to sum 1
    np.testing.assert_allclose(C.acc_prevalence(V, [1.0, 0.0]), [1.0, 0.0], atol=1e-8)
    np.testing.assert_allclose(C.acc_prevalence(V, [2.0, 0.0]), [1.0, 0.0], atol=1e-8)
    # fractions summing to 3: the exact solution (1.71, 1.29) is bounded to (1, 1) before renormalising
    np.testing.assert_allclose(C.acc_prevalence(V, [1.5, 1.5]), [0.5, 0.5], atol=1e-8)
    p = C.acc_prevalence(V, [0.3, 0.3])  # fractions summing to .6: p @ R = g has a solution summing to .6
    assert p.sum() == pytest.approx(1.0) and p[0] == pytest.approx(C.acc_prevalence(V, [0.5, 0.5])[0], abs=1e-6)
    # no predictions at all: the uniform prevalence
    np.testing.assert_array_equal(C.acc_prevalence(V, [0.0, 0.0]), [0.5, 0.5])


@pytest.mark.parametrize("g", [[0.5, 0.5, 0.0], [0.5, np.nan], [0.5, np.inf], [1.1, -0.1], [[0.5, 0.5]], [None, 0.5]])
def test_acc_prevalence_message(g):
    with pytest.raises(ValueError, match="^" + re.escape(f"pred_fractions must be 2 non-negative fractions, got "
                                                         f"{g!r}") + "$"):
        C.acc_prevalence([[3, 1], [1, 3]], g)
    with pytest.raises(ValueError, match="^val_counts must be"):
        C.acc_prevalence([[3, 1]], [0.5, 0.5])


# ---------------------------------------------------------------------------------- the evidence interval
# Class 0: 1 error in 4 items (Jeffreys: error probability 1.5 / 5 = .3 for one item), class 1: none in 4
# (.5 / 5 = .1). A sample of 2 items, one per class: errors 0, 1, 2 with probabilities .63, .34, .03.
HAND_V = [[3, 1], [0, 4]]


def test_evidence_interval_by_hand():
    lo, hi, plug = C.evidence_interval(HAND_V, [0.5, 0.5], 2, alpha=0.1)
    assert (lo, hi) == (0.5, 1.0)  # P(E <= 0) = .63 >= .05; P(E <= 1) = .97 >= .95
    assert plug == pytest.approx(0.5 * 0.75 + 0.5 * 1.0)
    assert C.evidence_interval(HAND_V, [0.5, 0.5], 2, alpha=0.02)[:2] == (0.0, 1.0)  # .97 < .99: 2 errors
    # 1 - alpha/2 = P(E <= 1) = .97 exactly: that count is in (the 1e-12 slack absorbs the cdf's round-off)
    assert C.evidence_interval(HAND_V, [0.5, 0.5], 2, alpha=0.06)[:2] == (0.5, 1.0)
    sd = C._evidence(HAND_V, [0.5, 0.5], 2, 0.1, "accuracy")[3]
    assert sd == pytest.approx(math.sqrt(0.46 - 0.4**2) / 2)  # E[E] = .4, E[E^2] = .46
    # the default alpha is .05
    assert C.evidence_interval(HAND_V, [0.5, 0.5], 2) == C.evidence_interval(HAND_V, [0.5, 0.5], 2, 0.05)


def test_evidence_interval_lower_quantile_by_hand():
    # class 0 only, 2 items: errors ~ BetaBinomial(2, 1.5, 3.5): P(0) = 3.5 * 4.5 / (5 * 6) = .525,
    # P(1) = 2 * 1.5 * 3.5 / 30 = .35, P(2) = 1.5 * 2.5 / 30 = .125
    assert C.evidence_interval(HAND_V, [1.0, 0.0], 2, alpha=0.9)[:2] == (0.5, 1.0)   # .45 <= .525 < .55
    assert C.evidence_interval(HAND_V, [1.0, 0.0], 2, alpha=0.2)[:2] == (0.0, 1.0)   # .9 > .875
    assert C.evidence_interval(HAND_V, [1.0, 0.0], 2, alpha=0.26)[:2] == (0.5, 1.0)  # .87 <= .875
    # a larger sample: the quantiles of scipy's beta-binomial of the class's errors
    bb = betabinom(20, 1.5, 3.5)
    for alpha in (0.5, 0.8):
        lo, hi, _ = C.evidence_interval(HAND_V, [1.0, 0.0], 20, alpha=alpha)
        assert (lo, hi) == pytest.approx((1 - bb.ppf(1 - alpha / 2) / 20, 1 - bb.ppf(alpha / 2) / 20), abs=1e-12)
        assert bb.ppf(alpha / 2) > 0
    sd = C._evidence(HAND_V, [1.0, 0.0], 2, 0.1, "accuracy")[3]
    mean, second = 0.35 + 2 * 0.125, 0.35 + 4 * 0.125
    assert sd == pytest.approx(math.sqrt(second - mean**2) / 2)


def test_evidence_interval_three_classes_and_an_unseen_class():
    # 3 classes: Jeffreys' Dirichlet puts (n - 1) / 2 = 1 pseudo-error per row; one item of class 0 with V's
    # row [1, 0, 0]: error probability 1 / (1 + 1.5) = .4, P(E = 0) = .6
    V = [[1, 0, 0], [0, 50, 0], [0, 0, 50]]
    assert C.evidence_interval(V, [1.0, 0.0, 0.0], 1, alpha=0.5) == (0.0, 1.0, 1.0)  # .6 < .75
    assert C.evidence_interval(V, [1.0, 0.0, 0.0], 1, alpha=0.9) == (1.0, 1.0, 1.0)  # .6 >= .55
    assert C._evidence(V, [1.0, 0.0, 0.0], 1, 0.5, "accuracy")[3] == pytest.approx(math.sqrt(0.4 * 0.6))
    # a class absent from V: its rates are uniform in the plug-in (and Jeffreys' 1/2 each in the posterior)
    lo, hi, plug = C.evidence_interval([[0, 0], [1, 3]], [0.5, 0.5], 2, alpha=0.1)
    assert plug == pytest.approx(0.5 * 0.5 + 0.5 * 0.75)
    # errors: class 0 Bernoulli(.5), class 1 Bernoulli(.3): P(E <= 0) = .35, P(E <= 1) = .85 + ... = .85
    assert (lo, hi) == (0.0, 1.0)  # .95 > .85: 2 errors; .05 <= .35: 0 errors
    sd = C._evidence([[0, 0], [1, 3]], [0.5, 0.5], 2, 0.1, "accuracy")[3]
    assert sd == pytest.approx(math.sqrt(0.25 + 0.21) / 2)


def test_evidence_interval_perks_prior_by_hand():
    # Perks' 1/n per cell: with 3 classes (n - 1) / n = 2/3 pseudo-error per row; one item of class 0 with V's row
    # [1, 0, 0]: error probability (2/3) / (1 + 1) = 1/3, P(E = 0) = 2/3 (Jeffreys: .6, the test above)
    V = [[1, 0, 0], [0, 50, 0], [0, 0, 50]]
    assert C.evidence_interval(V, [1.0, 0.0, 0.0], 1, alpha=0.7, prior="perks") == (1.0, 1.0, 1.0)  # 2/3 >= .65
    assert C.evidence_interval(V, [1.0, 0.0, 0.0], 1, alpha=0.7) == (0.0, 1.0, 1.0)  # Jeffreys: .6 < .65
    assert C._evidence(V, [1.0, 0.0, 0.0], 1, 0.5, "accuracy", prior="perks")[3] == pytest.approx(math.sqrt(2) / 3)
    # a larger sample: the quantiles of scipy's beta-binomial BetaBinomial(20, 2/3, 4/3)
    bb = betabinom(20, 2 / 3, 1 + 1 / 3)
    lo, hi, _ = C.evidence_interval(V, [1.0, 0.0, 0.0], 20, alpha=0.5, prior="perks")
    assert (lo, hi) == pytest.approx((1 - bb.ppf(0.75) / 20, 1 - bb.ppf(0.25) / 20), abs=1e-12)
    # two classes: 1/n = 1/2, Jeffreys' prior exactly, on both paths
    for measure in ("accuracy", "f1"):
        assert C.evidence_interval(HAND_V, [0.3, 0.7], 40, 0.1, measure, 200, 3, prior="perks") == \
            C.evidence_interval(HAND_V, [0.3, 0.7], 40, 0.1, measure, 200, 3)
    # the Monte Carlo path draws Dirichlet(V[i] + 1/n)
    W = np.array([[30, 5, 5], [4, 40, 6], [2, 3, 45]])
    rng = np.random.default_rng(7)
    counts = class_counts([0.2, 0.3, 0.5], 30)
    rates = np.stack([rng.dirichlet(W[i] + 1 / 3, 50) for i in range(3)], axis=1)
    tables = np.stack([rng.multinomial(counts[i], rates[:, i]) for i in range(3)], axis=1) / 30
    from capshift.tables import macro_f1
    assert C.evidence_interval(W, [0.2, 0.3, 0.5], 30, 0.2, "macro_f1", 50, 7, prior="perks")[:2] == \
        pytest.approx(tuple(np.quantile(macro_f1(tables), [0.1, 0.9])), abs=1e-12)
    with pytest.raises(ValueError, match="^" + re.escape("prior must be one of ('jeffreys', 'perks'), got 'flat'")):
        C.evidence_interval(HAND_V, [0.5, 0.5], 2, prior="flat")


def test_evidence_interval_monte_carlo_path_by_hand():
    # measures other than accuracy: n_draws seeded draws of Jeffreys' Dirichlet rates, then each class's items
    # classified by them (rows: true classes); the interval holds the alpha/2 and 1 - alpha/2 quantiles, the sd
    # their spread. Balanced accuracy (the mean of the rows' recalls) tells rows from columns.
    from capshift.tables import balanced_accuracy as bacc
    V = np.array([[40, 8], [6, 46]])
    rng = np.random.default_rng(7)
    counts = class_counts([0.3, 0.7], 30)
    rates = np.stack([rng.dirichlet(V[i] + 0.5, 50) for i in range(2)], axis=1)
    tables = np.stack([rng.multinomial(counts[i], rates[:, i]) for i in range(2)], axis=1) / 30
    values = bacc(tables)
    lo, hi, plug, sd = C._evidence(V, [0.3, 0.7], 30, 0.2, "balanced_accuracy", 50, 7)
    assert (lo, hi) == pytest.approx(tuple(np.quantile(values, [0.1, 0.9])), abs=1e-12)
    assert np.quantile(values, 1 - 0.2 / 3) != pytest.approx(hi, abs=1e-6)  # the draws tell the quantiles apart
    assert sd == pytest.approx(values.std(), abs=1e-12)
    assert plug == pytest.approx(bacc(counts[:, None] / 30 * V / V.sum(axis=1, keepdims=True)))
    assert C.evidence_interval(V, [0.3, 0.7], 30, 0.2, "balanced_accuracy", 50, 7) == (lo, hi, plug)
    # seeded; the defaults are 4000 draws and seed 0
    big = 10**5  # a large sample: quantiles of (nearly) continuous values, which every draw moves
    default = C.evidence_interval(V, [0.3, 0.7], big, measure="f1")
    assert default == C.evidence_interval(V, [0.3, 0.7], big, 0.05, "f1", 4000, 0)
    assert default[:2] != C.evidence_interval(V, [0.3, 0.7], big, 0.05, "f1", 4000, 1)[:2]
    assert default[:2] != C.evidence_interval(V, [0.3, 0.7], big, 0.05, "f1", 3999, 0)[:2]
    assert len(set(C.evidence_interval(V, [0.3, 0.7], 30, 0.2, "f1", 2, 0))) >= 2  # 2 draws suffice
    with pytest.raises(ValueError, match=r"^n_draws must be >= 2, got 1$"):
        C.evidence_interval(V, [0.3, 0.7], 30, measure="f1", n_draws=1)
    with pytest.raises(ValueError, match=r"^random_state must be in 0\.\.2\*\*32-1"):
        C.evidence_interval(V, [0.3, 0.7], 30, measure="f1", random_state=-1)


def test_evidence_interval_input_checks():
    # a prevalence within round-off of the simplex is accepted (and clipped), beyond it refused
    assert C.evidence_interval(HAND_V, [1 + 1e-13, -1e-13], 2, 0.1) == C.evidence_interval(HAND_V, [1.0, 0.0], 2, 0.1)
    assert C.evidence_interval(HAND_V, [0.5, 0.5 + 5e-7], 2, 0.1) == C.evidence_interval(HAND_V, [0.5, 0.5], 2, 0.1)
    for bad in ([1 + 2e-12, -2e-12], [0.5, 0.5 + 2e-6], [0.5, 0.5, 0.0], [np.nan, 1.0], [0.7, 0.5]):
        p = np.asarray(bad, dtype=float)
        with pytest.raises(ValueError, match="^" + re.escape(f"prevalence must be 2 non-negative fractions summing "
                                                             f"to 1, got {p!r}") + "$"):
            C.evidence_interval(HAND_V, bad, 2)
    with pytest.raises(ValueError, match=r"^size must be >= 1, got 0$"):
        C.evidence_interval(HAND_V, [0.5, 0.5], 0)
    with pytest.raises(ValueError, match=r"^alpha must be in \(0\.0, 1\.0\), got 0$"):
        C.evidence_interval(HAND_V, [0.5, 0.5], 2, alpha=0)
    with pytest.raises(ValueError, match=r"^val_counts must be"):
        C.evidence_interval([[1, -1], [0, 1]], [0.5, 0.5], 2)
    assert C.evidence_interval(HAND_V, [0.5, 0.5], 1, 0.1)[2] == 0.75  # one item: counts [1, 0] (ties to class 0)


def test_convolve_is_numpys_below_the_threshold_and_fft_above():
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(1000)), rng.dirichlet(np.ones(1000))
    assert len(a) * len(b) == C.FFT_ABOVE == 10**6
    np.testing.assert_array_equal(C._convolve(a, b), np.convolve(a, b))  # at the threshold: numpy's, exactly
    # above it: FFT, equal up to round-off and never negative (sparse pmfs give FFT noise around 0)
    c = np.zeros(1001)
    c[::100] = 1 / 11
    out = C._convolve(a, c)
    np.testing.assert_allclose(out, np.convolve(a, c), atol=1e-15)
    assert np.all(out >= 0) and not np.array_equal(out, np.convolve(a, c))
    sparse = np.zeros(2000)
    sparse[[0, 1999]] = 0.5
    out = C._convolve(sparse, sparse)
    np.testing.assert_allclose(out, np.convolve(sparse, sparse), atol=1e-15)
    assert out.min() == 0.0


# ---------------------------------------------------------------------- what reaches the method and its checks
@pytest.mark.parametrize("scheme", ["rates", "mc"])
def test_calibration_passes_the_samples_prevalences_and_the_measure(echo, scheme):
    h, X, y = echo
    # S-LEAP with the oracle quantifier: the fit part's rates of h mixed by the sample's true prevalence, which
    # the calibration must pass (the oracle refuses to guess it)
    ci = C.ConformalInterval(experiment.make_method("S-LEAP_oracle", h), scheme=scheme, n_splits=2, n_cal=4,
                             random_state=1).fit(X, y)
    c = ci._calibration(25, "accuracy")
    if scheme == "rates":
        parts = [(ci.val_counts_, y, X[:, 0], 4, 1)]
    else:
        parts = [(ci.fit_counts_[j], y_c, p_c, 2, 1 + j) for j, (_, _, y_c, p_c) in enumerate(ci.folds_)]
    k = 0
    for fit, y_p, pred_p, m, seed in parts:
        for i in protocols.upp_indices(y_p, 25, m, seed=seed, n_classes=2):
            prev = contingency_table(y_p[i], pred_p[i], 2).sum(axis=1)
            assert c["pred"][k] == pytest.approx(prev @ (np.diag(fit) / fit.sum(axis=1)))
            k += 1
    assert k == 4
    # the measure asked for, not the method's own: F1 of the fit part's table for Naive
    naive = _ci(h, scheme=scheme, n_splits=2, n_cal=4).fit(X, y)
    f = naive._calibration(25, "f1")
    V = naive.val_counts_ if scheme == "rates" else naive.fit_counts_[0]
    assert f["pred"][0] == pytest.approx(2 * V[1, 1] / (2 * V[1, 1] + V[0, 1] + V[1, 0]))


def test_a_failed_fit_leaves_the_interval_unfitted():
    # the cv check comes after V's table is kept: still no fit, so every method asks for one
    X, y = _echo_data(wrong=(1, 1), per_class=(5, 9))
    ci = _ci(_Echo().fit(X, y), scheme="cv", n_splits=3)
    with pytest.raises(ValueError, match="^n_splits=3 folds need"):
        ci.fit(X, y)
    for call in (lambda: ci.with_options(False), lambda: ci.predict(X), lambda: ci.predict_interval_batch([X])):
        with pytest.raises(NotFittedError, match="^This ConformalInterval instance is not fitted yet"):
            call()


@pytest.mark.parametrize("scheme", ["rates", "mc"])
def test_a_seed_changed_after_fit_is_checked_when_drawing(echo, scheme):
    h, X, y = echo
    ci = _ci(h, scheme=scheme, n_splits=2, n_cal=4).fit(X, y)
    ci.random_state = -1
    with pytest.raises(ValueError, match=r"^random_state must be in 0\.\.2\*\*32-1"):
        ci.quantiles([X[:20]], "accuracy", 0.2)
    ci.random_state = 0
    ci.quantiles([X[:20]], "accuracy", 0.2)
    ci.floor, ci.random_state = True, -1
    with pytest.raises(ValueError, match=r"^random_state must be in 0\.\.2\*\*32-1"):
        ci.bounds([X[:20]], [0.5], "accuracy", 0.2)


def test_predict_interval_passes_the_measure(echo):
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=40).fit(X, y)
    sample = X[X[:, 0] == 1][:30]
    f1 = ci.predict_interval_batch([sample], 0.2, "f1")
    np.testing.assert_array_equal(f1, ci.bounds([sample], [ci.estimator_.predict(sample, "f1")], "f1", 0.2))
    assert ci.predict_interval(sample, 0.2, "f1") == tuple(f1[0])
    assert ci.predict_interval(sample, 0.2, "f1") != ci.predict_interval(sample, 0.2)


def test_rates_of_a_half_with_one_item_of_a_class():
    # 4 items of class 0 among 44: a quarter of V holds 1 of them (stratified splits round so)
    X, y = _echo_data(wrong=(1, 4), per_class=(4, 40))
    h = _Echo().fit(X, y)
    ci = _ci(h, scheme="rates", n_splits=2, n_cal=3, cal_fraction=0.25).fit(X, y)
    c = ci._calibration(20, "accuracy")
    idx = protocols.upp_indices(y, 20, 3, seed=0, n_classes=2)
    prev = np.array([np.bincount(y[i], minlength=2) / 20 for i in idx])
    for j, (a, b) in enumerate(ci.half_counts_):
        assert b[0].sum() == 1
        ra, rb = np.diag(a) / a.sum(axis=1), np.diag(b) / b.sum(axis=1)
        np.testing.assert_allclose(c["rate"][3 * j: 3 * j + 3], prev @ (ra - rb), atol=1e-15)


@pytest.mark.parametrize("scheme,part", [("split", "calibration part"), ("mc", "calibration part"),
                                         ("rates", "second half")])
def test_fit_refuses_a_part_missing_a_class(scheme, part):
    # 4 items of class 0 among 44: a stratified tenth of V holds none of them (found by the mutation review: fit
    # let it through, and the calibration failed later, for "rates" with an unrelated message)
    X, y = _echo_data(wrong=(1, 4), per_class=(4, 40))
    with pytest.raises(ValueError, match=rf"^the {part} of split 0 of V has no item of class\(es\) \[0\]: use a "
                                         r"larger V or a smaller cal_fraction$"):
        _ci(_Echo().fit(X, y), scheme=scheme, n_splits=2, n_cal=3, cal_fraction=0.1).fit(X, y)


@pytest.mark.parametrize("scheme,part", [("split", "fit part"), ("mc", "fit part"), ("rates", "first half")])
def test_fit_refuses_a_first_part_missing_the_last_class(scheme, part):
    # the mirror case: 4 items of class 1 (the last) among 44, and a stratified tenth of V as the *first* part
    # (cal_fraction 0.9): the check counts every class up to n - 1, not only those up to the largest label seen
    X, y = _echo_data(wrong=(4, 1), per_class=(40, 4))
    with pytest.raises(ValueError, match=rf"^the {part} of split 0 of V has no item of class\(es\) \[1\]: use a "
                                         r"larger V or a smaller cal_fraction$"):
        _ci(_Echo().fit(X, y), scheme=scheme, n_splits=2, n_cal=3, cal_fraction=0.9).fit(X, y)


def test_rates_scheme_studentised_scores(echo):
    h, X, y = echo
    ci = _ci(h, scheme="rates", n_splits=2, n_cal=5, score="studentised").fit(X, y)
    r = ci._residuals(20, "accuracy", True)
    c = ci._calibration(20, "accuracy")
    assert c["fold"].dtype.kind == "i"
    np.testing.assert_allclose(c["scale"], [_evidence_sd(ci.val_counts_, ci.val_counts_, g, 20) for g in c["gamma"]],
                               rtol=1e-9)
    np.testing.assert_allclose(r, ci._residuals(20, "accuracy") / c["scale"], rtol=1e-12)


def test_evidence_interval_prevalence_of_non_numbers():
    with pytest.raises(ValueError, match="^" + re.escape("prevalence must be 2 non-negative fractions summing to 1, "
                                                         "got array([nan,  1.])") + "$"):
        C.evidence_interval(HAND_V, [None, 1.0], 2)


def test_evidence_counts_renormalise_the_clipped_prevalence():
    # a prevalence summing to 1 + 5e-7 (within the tolerance) is divided by its sum: raw counts 1.5 + 1e-7,
    # 5.5 - 1e-7, 3 of 10 items give the extra item to class 0 (multiplying by the sum would give it to class 1)
    p = np.array([1.5 + 1e-7, 5.5 - 1e-7, 3.0]) * (1 + 5e-7) / 10
    V = np.diag([10.0, 20.0, 30.0]) + 1
    mle = np.diag(V) / V.sum(axis=1)
    assert C.evidence_interval(V, p, 10, 0.1)[2] == pytest.approx(np.array([2, 5, 3]) @ mle / 10, abs=1e-12)
    # a slightly negative entry (round-off) is clipped to 0 before the sum: raw 1.5 + 1e-13, 5.5 - 1e-13, 3, 0
    q = np.array([(1.5 + 1e-13) / 10, (5.5 - 1e-13) / 10, 0.3, -9e-13])
    W = np.diag([10.0, 20.0, 30.0, 40.0]) + 1
    mle = np.diag(W) / W.sum(axis=1)
    assert C.evidence_interval(W, q, 10, 0.1)[2] == pytest.approx(np.array([2, 5, 3, 0]) @ mle / 10, abs=1e-12)
    # the bound itself: -1e-12 is within round-off
    assert C.evidence_interval(HAND_V, [1 + 1e-12, -1e-12], 2, 0.1) == C.evidence_interval(HAND_V, [1, 0], 2, 0.1)


def test_evidence_plug_in_of_a_class_seen_once():
    # one item of class 0 in V, classified right: its plug-in rates are [1, 0]
    lo, hi, plug = C.evidence_interval([[1, 0], [1, 3]], [0.5, 0.5], 2, 0.1)
    assert plug == pytest.approx(0.5 * 1.0 + 0.5 * 0.75)


def test_evidence_interval_quantiles_at_exact_cdf_values():
    # V = [[1, 1], [1, 1]]: each class's item is wrong with probability 1.5 / 3 = .5; errors in a sample of 2:
    # P(0) = .25, P(1) = .5, P(2) = .25. alpha = .5: alpha/2 = P(E <= 0) and 1 - alpha/2 = P(E <= 1) exactly
    assert C.evidence_interval([[1, 1], [1, 1]], [0.5, 0.5], 2, 0.5) == (0.5, 1.0, 0.5)


def _at_least_80_percent(table):
    """A 0/1 measure, given as booleans: is the accuracy at least .8?"""
    return accuracy(table) >= 0.8


def _at_least_80_percent_float(table):
    return (accuracy(table) >= 0.8).astype(float)


@pytest.mark.parametrize("scheme", ["rates", "mc"])
def test_a_boolean_measure_counts_as_its_float_version(echo, scheme):
    h, X, y = echo
    ci = _ci(h, scheme=scheme, n_splits=2, n_cal=20, floor=True).fit(X, y)
    samples = [X[:20], X[X[:, 0] == 1][:20]]
    for alpha in (0.3, 0.6):
        np.testing.assert_array_equal(ci.bounds(samples, [0.5, 0.5], _at_least_80_percent, alpha),
                                      ci.bounds(samples, [0.5, 0.5], _at_least_80_percent_float, alpha))
    V = np.array([[40, 8], [6, 46]])
    b = C._evidence(V, [0.3, 0.7], 30, 0.2, _at_least_80_percent, 50, 7)
    assert b == C._evidence(V, [0.3, 0.7], 30, 0.2, _at_least_80_percent_float, 50, 7) and b[3] > 0


def test_floor_draws_are_seeded_by_random_state(echo):
    # a measure other than accuracy: the floor's evidence interval is Monte Carlo, seeded by random_state
    h, X, y = echo
    sample = X[np.r_[np.arange(80), np.arange(80), np.arange(0, 80, 2)]]  # 200 items (V's, repeated)
    gam = np.bincount(sample[:, 0].astype(int), minlength=2) / 200
    prev = C.acc_prevalence([[30, 10], [4, 36]], gam)
    reach = {}
    for seed in (0, 4):
        lo, hi, c = C.evidence_interval([[30, 10], [4, 36]], prev, 200, 0.5, "balanced_accuracy", 4000, seed)
        reach[seed] = (c - lo, hi - c)
    assert reach[0] != reach[4]
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=20, floor=True, random_state=4).fit(X, y)
    # calibration residuals set to 0 (predictions = truths in the cached calibration): the floor alone decides
    c = ci._calibration(200, "balanced_accuracy")
    c["pred"], c["expected"] = c["true"].copy(), c["true"].copy()
    assert ci.quantiles([sample], "balanced_accuracy", 0.5)[0] == 0.0
    b = ci.bounds([sample], [0.5], "balanced_accuracy", 0.5)[0]
    assert tuple(b) == pytest.approx((0.5 - reach[4][0], 0.5 + reach[4][1]), abs=1e-12)


@pytest.mark.parametrize("bin_by", ["predicted", "prevalence"])
def test_a_test_sample_on_a_bin_edge_goes_to_the_upper_bin(echo, bin_by):
    # the rates scheme measures test and calibration samples against the same reference (V), so a test sample
    # with a calibration sample's fractions of h's predictions can sit exactly on an edge: like the calibration
    # samples (searchsorted side="right"), it belongs to the bin above
    h, X, y = echo
    ci = _ci(h, scheme="rates", n_splits=2, n_cal=60, bins=3, bin_by=bin_by).fit(X, y)
    c, r, edges, members = _three_bins(ci, bin_by)
    zeros, ones = X[X[:, 0] == 0], X[X[:, 0] == 1]
    on_edge = 0
    for k in range(21):
        sample = np.r_[zeros[:k], ones[:20 - k]]
        d = ci._test_dist(np.bincount(sample[:, 0].astype(int), minlength=2) / 20, np.array([34, 46]) / 80)
        b = int(np.sum(edges <= d))  # edges at or below the sample's proxy
        on_edge += d in edges
        assert ci.quantiles([sample], "accuracy", 0.3)[0] == C.conformal_quantile(r[members == b], 0.3)
    assert on_edge >= 1


# ------------------------------------------------------------------------------------ the union floor
def test_union_floor_by_hand(echo):
    # floor="union": each side at least the conformal half-width, the evidence interval's reach from its plug-in
    # value, and the distance from the point to that interval's end (so that it contains the interval)
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=40, floor="union").fit(X, y)
    samples = [X[:30], X[X[:, 0] == 1][:30]]
    point = np.array([0.3, 0.99])
    q = ci.quantiles(samples, "accuracy", 0.2)
    b = ci.bounds(samples, point, "accuracy", 0.2)
    beyond_reach = []
    for i, Xs in enumerate(samples):
        gam = np.bincount(Xs[:, 0].astype(int), minlength=2) / 30
        lo, hi, c = C.evidence_interval(ci.val_counts_, C.acc_prevalence(ci.val_counts_, gam), 30, 0.2)
        below = max(q[i], c - lo, point[i] - lo)
        above = max(q[i], hi - c, hi - point[i])
        assert b[i, 0] == pytest.approx(max(point[i] - below, 0.0), abs=1e-12)
        assert b[i, 1] == pytest.approx(min(point[i] + above, 1.0), abs=1e-12)
        beyond_reach += [below > max(q[i], c - lo), above > max(q[i], hi - c)]
    assert beyond_reach == [False, True, True, False]  # each point reaches back to the evidence interval
    assert ci.with_options(False, floor="union").floor == "union"
    with pytest.raises(TypeError, match='^floor must be True, False, "union" or "auto", got \'Union\'$'):
        ci.with_options(False, floor="Union")
    # "auto": the union for two classes
    np.testing.assert_array_equal(ci.with_options(False, floor="auto").bounds(samples, point, "accuracy", 0.2), b)


class _Hits:
    """A measure given as a callable object (no ``__name__``): the fraction of items of one class h gets right."""

    def __init__(self, cls):
        self.cls = cls

    def __call__(self, table):
        return np.asarray(table, dtype=float)[..., self.cls, self.cls]

    def __repr__(self):
        return f"_Hits({self.cls})"


def test_callable_measures_are_cached_by_themselves(echo):
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=20).fit(X, y)
    h0, h1 = _Hits(0), _Hits(1)
    q0, q1 = ci.quantiles([X[:20]], h0, 0.3), ci.quantiles([X[:20]], h1, 0.3)
    assert set(ci.calibration_) == {(20, h0), (20, h1)}
    fresh = _ci(h, scheme="mc", n_splits=2, n_cal=20).fit(X, y)
    assert fresh.quantiles([X[:20]], _Hits(1), 0.3) == q1 and q0 != q1


def test_two_lambda_measures_are_calibrated_apart(echo):
    # found by the mutation review: the cache was keyed by a callable's __name__, and two lambdas shared one
    h, X, y = echo
    ci = _ci(h, scheme="mc", n_splits=2, n_cal=20).fit(X, y)
    ci.quantiles([X[:20]], lambda t: _Hits(0)(t), 0.3)
    q1 = ci.quantiles([X[:20]], lambda t: _Hits(1)(t), 0.3)
    fresh = _ci(h, scheme="mc", n_splits=2, n_cal=20).fit(X, y)
    assert q1 == fresh.quantiles([X[:20]], lambda t: _Hits(1)(t), 0.3)


def test_a_calibration_part_missing_the_last_class_is_refused():
    # 4 items of class 1 among 44: a stratified tenth of V holds none of them; the interval cannot be calibrated
    # (fit refuses it, naming the part and the class)
    X, y = _echo_data(wrong=(4, 1), per_class=(40, 4))
    ci = _ci(_Echo().fit(X, y), scheme="mc", n_splits=2, n_cal=3, cal_fraction=0.1)
    with pytest.raises(ValueError, match=r"class\(es\) \[1\]"):
        ci.fit(X, y)
        ci.quantiles([X[:20]], "accuracy", 0.4)


class _EchoFloat(_Echo):
    """h trained on labels 0.0/1.0: it predicts floats (as scikit-learn does then)."""

    def fit(self, X, y=None):
        self.classes_ = np.array([0.0, 1.0])
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(float)


@pytest.mark.parametrize("bin_by", ["predicted", "prevalence"])
def test_a_classifier_predicting_floats_gives_the_same_intervals(echo, bin_by):
    _, X, y = echo
    ints = _ci(_Echo().fit(X, y), scheme="rates", n_splits=2, n_cal=20, bins=2, bin_by=bin_by, score="both")
    floats = _ci(_EchoFloat().fit(X, y), scheme="rates", n_splits=2, n_cal=20, bins=2, bin_by=bin_by, score="both")
    samples = [X[:20], X[X[:, 0] == 1][:20]]
    np.testing.assert_array_equal(floats.fit(X, y).predict_interval_batch(samples, 0.3),
                                  ints.fit(X, y).predict_interval_batch(samples, 0.3))


# ------------------------------------------------------------------------------------ the floor's prior
class _Echo3(_Echo):
    def fit(self, X, y=None):
        self.classes_ = np.arange(3)
        return self


@pytest.mark.parametrize("floor", [True, "union"])
def test_floor_uses_the_prior_of_the_evidence_interval(floor):
    # 3 classes of 60 items, h wrong on 2, 0 and 1 of them: the floor's evidence interval under each prior
    y = np.repeat([0, 1, 2], 60)
    pred = y.copy()
    pred[[0, 1, 120]] = [1, 2, 0]
    X = np.stack([pred, np.arange(180)], axis=1).astype(float)
    h = _Echo3().fit(X, y)
    ci = C.ConformalInterval(_naive(h), scheme="mc", n_splits=2, n_cal=40, floor=floor, prior="perks",
                             random_state=2).fit(X, y)
    Xs, point = X[::2], np.array([0.9])
    q = ci.quantiles([Xs], "accuracy", 0.1)[0]
    gam = np.bincount(pred[::2], minlength=3) / 90
    bounds = {}
    for prior in C.PRIORS:
        lo, hi, c = C.evidence_interval(ci.val_counts_, C.acc_prevalence(ci.val_counts_, gam), 90, 0.1,
                                        prior=prior)
        below, above = max(q, c - lo), max(q, hi - c)
        if floor == "union":
            below, above = max(below, 0.9 - lo), max(above, hi - 0.9)
        bounds[prior] = np.clip([0.9 - below, 0.9 + above], 0, 1)
    np.testing.assert_allclose(ci.bounds([Xs], point, "accuracy", 0.1)[0], bounds["perks"], atol=1e-12)
    jeffreys = ci.with_options(False, floor=floor, prior="jeffreys")
    np.testing.assert_allclose(jeffreys.bounds([Xs], point, "accuracy", 0.1)[0], bounds["jeffreys"], atol=1e-12)
    # reaches below: Jeffreys .061 (1 pseudo-error per class), Perks .050 (2/3), the conformal half-width .033
    assert bounds["jeffreys"][0] < bounds["perks"][0] - 0.005
    # "auto": the reach alone (floor=True) for more than two classes
    reach = ci.with_options(False, floor=True, prior="perks").bounds([Xs], point, "accuracy", 0.1)
    np.testing.assert_array_equal(ci.with_options(False, floor="auto", prior="perks").bounds([Xs], point, "accuracy",
                                                                                            0.1), reach)
    with pytest.raises(ValueError, match="^" + re.escape("prior must be one of ('jeffreys', 'perks'), got 'Perks'")):
        ci.with_options(False, prior="Perks")
    with pytest.raises(ValueError, match="^" + re.escape("prior must be one of ('jeffreys', 'perks'), got None")):
        C.ConformalInterval(_naive(h), prior=None).fit(X, y)


def _beta_binomial_moments(m, a, b):
    """Mean and variance of a beta-binomial count of m trials with Beta(a, b) success rate."""
    return m * a / (a + b), m * a * b * (a + b + m) / ((a + b) ** 2 * (a + b + 1))


@pytest.mark.parametrize("prior, a0", [("perks", 1 / 3), ("jeffreys", 0.5)])
def test_posterior_pools_are_the_posterior_predictive(prior, a0):
    V = np.array([[8.0, 1, 1], [2, 15, 3], [0, 0, 10]])
    pools = C.posterior_pools(V, 60, prior, 20000, random_state=3)
    assert len(pools) == 20000 and all(v is pools[0][0] for v, _ in pools)
    np.testing.assert_array_equal(pools[0][0], V)
    P = np.stack([p for _, p in pools])
    # the pool's 60 items split as V's classes (10, 20, 10 of 40): 15, 30, 15, in every draw
    np.testing.assert_array_equal(P.sum(axis=2), np.tile([15, 30, 15], (20000, 1)))
    # each cell: beta-binomial, Beta(V's cell + a0, the rest of its row + 2 a0) over the row's pool items
    for i, j in [(0, 0), (1, 2), (2, 2), (2, 0)]:
        mean, var = _beta_binomial_moments(P[0, i].sum(), V[i, j] + a0, V[i].sum() - V[i, j] + 2 * a0)
        assert P[:, i, j].mean() == pytest.approx(mean, abs=4 * math.sqrt(var / 20000))
        assert P[:, i, j].var() == pytest.approx(var, rel=0.06)
    # a class h never errs on in V still errs in some pools (the prior), never in all
    assert 0 < (P[:, 2, :2].sum(axis=1) > 0).mean() < 1
    # seeded: the seed matters, and the same seed gives the same pools
    again = np.stack([p for _, p in C.posterior_pools(V, 60, prior, 20000, random_state=3)])
    np.testing.assert_array_equal(again, P)
    assert not np.array_equal(np.stack([p for _, p in C.posterior_pools(V, 60, prior, 50, random_state=4)]), P[:50])


def test_posterior_pools_messages():
    V = np.array([[3.0, 1], [1, 3]])
    with pytest.raises(ValueError, match=r"^pool_size must be >= 1, got 0$"):
        C.posterior_pools(V, 0)
    with pytest.raises(ValueError, match=r"^draws must be >= 1, got 0$"):
        C.posterior_pools(V, 10, draws=0)
    with pytest.raises(ValueError, match=r"^prior must be one of"):
        C.posterior_pools(V, 10, prior="flat")
    with pytest.raises(ValueError, match=r"^val_counts holds no item: h's table on V is needed in counts$"):
        C.posterior_pools(np.zeros((2, 2)), 10)
    with pytest.raises(ValueError, match=r"^random_state must be"):
        C.posterior_pools(V, 10, random_state=-1)
    # one item in V is enough; the defaults: Perks' prior, RATE_DRAWS pools, seed 0
    assert len(C.posterior_pools(np.array([[1.0, 0], [0, 0]]), 3, draws=2)) == 2
    default = C.posterior_pools(V, 10)
    assert len(default) == C.RATE_DRAWS
    same = C.posterior_pools(V, 10, "perks", C.RATE_DRAWS, 0)
    assert all(np.array_equal(p, q) for (_, p), (_, q) in zip(default, same))
    assert default[0][1].dtype == np.float64


def test_rates_scheme_posterior_checks_pool_size(echo):
    h, X, y = echo
    with pytest.raises(ValueError, match=r"^pool_size must be >= 1, got 0$"):
        _ci(h, scheme="rates", rate_model="posterior", n_cal=4, pool_size=0).fit(X, y)


@pytest.mark.parametrize("pool_size, pool", [(None, 80), (20, 20)])
def test_rates_scheme_posterior_rate_model(echo, pool_size, pool):
    h, X, y = echo
    ci = _ci(h, scheme="rates", rate_model="posterior", n_cal=3, pool_size=pool_size, prior="perks",
             random_state=5).fit(X, y)
    assert ci.scale_ == 1.0 and ci.part_sizes_ == (80, pool)
    expected = C.posterior_pools(ci.val_counts_, pool, "perks", C.RATE_DRAWS, 5)
    assert len(ci.half_counts_) == C.RATE_DRAWS
    for (a, b), (c, d) in zip(ci.half_counts_, expected):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    # the residuals: |V's measure - the pool's at the sample's prevalence + predicted - true|, unscaled
    c = ci._calibration(25, "accuracy")
    idx = protocols.upp_indices(y, 25, 3, seed=5, n_classes=2)
    prev = np.array([contingency_table(y[i], X[i, 0], 2).sum(axis=1) for i in idx])
    rate = [p @ (np.diag(a) / a.sum(axis=1) - np.diag(b) / b.sum(axis=1)) for a, b in expected for p in prev]
    np.testing.assert_allclose(c["rate"], rate, atol=1e-15)
    np.testing.assert_allclose(ci._residuals(25, "accuracy"), np.abs(np.array(rate) + 66 / 80 - c["true"]),
                               atol=1e-15)
    # the halvings model on the same V: another rate term, so other intervals
    halv = _ci(h, scheme="rates", n_splits=4, n_cal=3, pool_size=pool_size, prior="perks", random_state=5).fit(X, y)
    assert not np.allclose(halv.bounds([X[:25]], [0.8], "accuracy", 0.1), ci.bounds([X[:25]], [0.8], "accuracy", 0.1))
    # the prior of the draws is the one set at fit: Jeffreys' gives other pools for three classes only, and
    # with_options does not redraw
    assert ci.with_options(False, prior="jeffreys").half_counts_ is ci.half_counts_


# ------------------------------------------------------------------- the rate discrepancy propagated (issue 31)
def test_propagated_discrepancy_two_classes_by_hand():
    A = np.array([[90.0, 10.0], [60.0, 40.0]])  # fpr .10, tpr .40
    B = np.array([[17.0, 3.0], [11.0, 9.0]])  # fpr .15, tpr .45
    p = np.array([[0.3, 0.7], [0.7, 0.3], [1.0, 0.0]])
    # ACC with A's rates on B's fractions: p1_hat = (g1 - .10) / .30, g1 = .15 p0 + .45 p1
    p1 = (np.array([0.3 * 0.15 + 0.7 * 0.45, 0.7 * 0.15 + 0.3 * 0.45, 0.15]) - 0.1) / 0.3
    acc_hat = (1 - p1) * 0.9 + p1 * 0.4
    acc = p @ np.array([0.85, 0.45])
    np.testing.assert_allclose(C.propagated_discrepancy(A, B, p), acc_hat - acc, atol=1e-12)
    np.testing.assert_allclose(C.propagated_discrepancy(A, B, p)[0], -0.10333333333333333, atol=1e-12)
    # the measure's difference at the true prevalence alone, .3 x .05 - .7 x .05 = -.02, is five times smaller
    # equal rates: no discrepancy, whatever the prevalence and measure
    np.testing.assert_allclose(C.propagated_discrepancy(A, A * 3, p, "f1"), 0.0, atol=1e-12)
    # F1 of class 1: tables of p_hat under A's rates and of p under B's
    t_hat = np.stack([(1 - p1) * 0.9, (1 - p1) * 0.1, p1 * 0.6, p1 * 0.4], axis=1).reshape(-1, 2, 2)
    t = p[:, :, None] * (B / B.sum(axis=1, keepdims=True))[None]
    f1 = lambda t: 2 * t[:, 1, 1] / (2 * t[:, 1, 1] + t[:, 0, 1] + t[:, 1, 0])  # noqa: E731
    np.testing.assert_allclose(C.propagated_discrepancy(A, B, p, "f1"), f1(t_hat) - f1(t), atol=1e-12)


def test_propagated_discrepancy_clips_and_renormalises_three_classes():
    A = np.array([[8.0, 1.0, 1.0], [1.0, 8.0, 1.0], [1.0, 1.0, 8.0]])
    B = np.array([[5.0, 4.0, 1.0], [1.0, 8.0, 1.0], [1.0, 1.0, 8.0]])
    Ra, Rb = A / 10, B / 10
    p = np.array([[0.9, 0.1, 0.0], [0.2, 0.3, 0.5]])
    raw = p @ Rb @ np.linalg.inv(Ra)
    assert raw[0].min() < 0 and raw[1].min() > 0  # the first is clipped, the second is not
    p_hat = np.clip(raw, 0, None)
    p_hat /= p_hat.sum(axis=1, keepdims=True)
    expected = (p_hat * np.diag(Ra)).sum(axis=1) - (p * np.diag(Rb)).sum(axis=1)
    np.testing.assert_allclose(C.propagated_discrepancy(A, B, p), expected, atol=1e-12)
    # a classifier that predicts one class on pool a (rank-1 rates): the pseudo-inverse spreads the estimate
    # evenly, and its accuracy is the prevalence of that class, 1/3 for any p
    const = np.array([[0.0, 10.0, 0.0], [0.0, 10.0, 0.0], [0.0, 10.0, 0.0]])
    np.testing.assert_allclose(C.propagated_discrepancy(const, B, p), 1 / 3 - (p * np.diag(Rb)).sum(axis=1),
                               atol=1e-12)


def test_propagated_discrepancy_messages():
    A = np.array([[9.0, 1.0], [2.0, 8.0]])
    p = np.array([[0.5, 0.5]])
    with pytest.raises(ValueError, match=r"^counts_a and counts_b must have the same shape, got \(2, 2\) and "
                                         r"\(3, 3\)$"):
        C.propagated_discrepancy(A, np.eye(3), p)
    with pytest.raises(ValueError, match=r"^every true class \(row\) of counts_a and counts_b needs an item: h's rates "
                                         r"are undefined for a class the pool lacks$"):
        C.propagated_discrepancy(A, np.array([[9.0, 1.0], [0.0, 0.0]]), p)
    with pytest.raises(ValueError, match=r"^every true class \(row\) of counts_a and counts_b needs an item"):
        C.propagated_discrepancy(np.array([[0.0, 0.0], [2.0, 8.0]]), A, p)
    with pytest.raises(ValueError, match=r"^prevalences must be an \(m, 2\) array, one prevalence per row, got "
                                         r"shape \(2,\)$"):
        C.propagated_discrepancy(A, A, np.array([0.5, 0.5]))
    for bad, message in ((np.array([[0.5, 0.3, 0.2]]), r"must have shape \(\.\.\., 2\)"),
                         (np.array([[np.nan, 1.0]]), "contains NaN"), (np.array([[-0.1, 1.1]]), "has negative values"),
                         (np.array([[0.5, 0.6]]), "must be a probability distribution")):
        with pytest.raises(ValueError, match=r"^prevalences " + message):
            C.propagated_discrepancy(A, A, bad)
    with pytest.raises(ValueError, match=r"^val_counts must be an \(n, n\) table"):
        C.propagated_discrepancy(-A, A, p)


@pytest.mark.parametrize("rate_model", ["halvings", "posterior"])
def test_rates_scheme_propagate_by_hand(echo, rate_model):
    h, X, y = echo
    ci = _ci(h, scheme="rates", n_splits=4, n_cal=3, rate_model=rate_model, propagate=True,
             random_state=5).fit(X, y)
    c = ci._calibration(25, "accuracy")
    idx = protocols.upp_indices(y, 25, 3, seed=5, n_classes=2)
    prev = np.array([contingency_table(y[i], X[i, 0], 2).sum(axis=1) for i in idx])
    np.testing.assert_array_equal(c["prev"], prev)
    rate = np.concatenate([C.propagated_discrepancy(a, b, prev) for a, b in ci.half_counts_])
    # Naive is not the point here: the residual pairs each in-sample error with each propagated discrepancy
    expected = np.abs(ci.scale_ * rate + c["pred"] - c["true"])
    np.testing.assert_allclose(ci._residuals(25, "accuracy"), expected, atol=1e-15)
    np.testing.assert_allclose(c["rate_propagated"], rate, atol=0)
    # without propagate: the measure's difference, a narrower band on this h (tpr - fpr = .65)
    plain = ci.with_options(False)
    assert plain.propagate is False
    np.testing.assert_allclose(plain._residuals(25, "accuracy"), np.abs(ci.scale_ * c["rate"] + c["pred"] - c["true"]),
                               atol=1e-15)
    assert not np.allclose(rate, c["rate"])
    assert np.abs(rate).mean() > np.abs(c["rate"]).mean()
    # the cached term is the measure's own
    f1 = ci._residuals(25, "f1")
    c1 = ci._calibration(25, "f1")
    rate1 = np.concatenate([C.propagated_discrepancy(a, b, prev, "f1") for a, b in ci.half_counts_])
    np.testing.assert_allclose(f1, np.abs(ci.scale_ * rate1 + c1["pred"] - c1["true"]), atol=1e-15)


def test_propagate_auto_is_true_for_two_classes_only(echo):
    h, X, y = echo
    kw = dict(scheme="rates", n_splits=3, n_cal=3, random_state=2)
    on = _ci(h, propagate=np.bool_(True), **kw).fit(X, y)
    auto = _ci(h, propagate="auto", **kw).fit(X, y)
    off = _ci(h, **kw).fit(X, y)
    np.testing.assert_array_equal(auto._residuals(25, "accuracy"), on._residuals(25, "accuracy"))
    assert not np.allclose(auto._residuals(25, "accuracy"), off._residuals(25, "accuracy"))
    # three classes: "auto" is the measure's difference, True is not
    rng = np.random.default_rng(0)
    y3 = np.repeat([0, 1, 2], 30)
    pred3 = np.where(rng.random(90) < 0.7, y3, rng.integers(0, 3, 90))
    X3 = np.stack([pred3, np.arange(90)], axis=1).astype(float)
    h3 = _Echo3().fit(X3, y3)
    kw3 = dict(scheme="rates", n_splits=3, n_cal=3, random_state=2)
    auto3 = _ci(h3, propagate="auto", **kw3).fit(X3, y3)
    np.testing.assert_array_equal(auto3._residuals(60, "accuracy"), _ci(h3, **kw3).fit(X3, y3)._residuals(60, "accuracy"))
    assert not np.allclose(auto3._residuals(60, "accuracy"),
                           _ci(h3, propagate=True, **kw3).fit(X3, y3)._residuals(60, "accuracy"))


class _Echo3(_Echo):
    """_Echo for three classes."""

    def fit(self, X, y=None):
        self.classes_ = np.arange(3)
        return self


def test_propagated_discrepancy_rows_of_other_sizes_and_a_pool_never_predicting_a_class():
    # rows of different sizes: each row is normalised by its own count (a row of one item is a pool's row too)
    A = np.array([[9.0, 1.0], [1.0, 0.0]])  # fpr .1, tpr 0: class 1 seen once, predicted 0
    B = np.array([[30.0, 10.0], [2.0, 3.0]])  # fpr .25, tpr .6
    p = np.array([[0.5, 0.5]])
    # fractions of predictions of class 1: g1 = .5 x .25 + .5 x .6 = .425; tpr - fpr < 0 under A's rates: the raw
    # estimate (g1 - .1) / (0 - .1) is negative, clipped to 0, so p_hat = (1, 0):
    # accuracy 0.9 under A's rates, 0.675 under B's at p
    np.testing.assert_allclose(C.propagated_discrepancy(A, B, p), [0.9 - 0.675], atol=1e-12)
    # the other way round (the one-item row in pool b): g1 = .05, p1 = (.05 - .25) / .35 < 0, p_hat = (1, 0):
    # accuracy .75 under B's rates, .45 under A's at p
    np.testing.assert_allclose(C.propagated_discrepancy(B, A, p), [0.75 - 0.45], atol=1e-12)
    B2 = np.array([[7.0, 3.0], [1.0, 4.0]])  # fpr .3, tpr .8
    p2 = np.array([[0.2, 0.8]])  # equal rates from rows of other sizes: no discrepancy
    np.testing.assert_allclose(C.propagated_discrepancy(B2 * [[1], [3]], B2 * [[2], [1]], p2), 0.0, atol=1e-12)
    # pool a: h predicts class 1 always (rank-1 rates); pool b never predicts class 1: ACC sees nothing to adjust
    # (p @ R_b @ pinv(R_a) = 0), and the estimate is uniform: accuracy 1/3 under R_a
    const = np.array([[0.0, 4.0, 0.0], [0.0, 5.0, 0.0], [0.0, 6.0, 0.0]])
    never = np.array([[5.0, 0.0, 5.0], [3.0, 0.0, 1.0], [1.0, 0.0, 9.0]])
    p3 = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    expected = 1 / 3 - p3 @ np.array([0.5, 0.0, 0.9])
    np.testing.assert_allclose(C.propagated_discrepancy(const, never, p3), expected, atol=1e-12)


# ------------------------------------------------------------ the method's own response as the rate term (issue 31)
class _Tilt(BaseEstimator):
    """A CAP method by hand: fitted, it keeps h's accuracy on its part of V; on a sample it predicts that accuracy
    times the sample's fraction of h's predictions of class 1 (half of it for F1), so that its response to a
    halving (a minus b) is (acc_a - acc_b) times that fraction on the very sample it reads."""

    def __init__(self, classifier=None, random_state=0, measure="accuracy"):
        self.classifier, self.random_state, self.measure = classifier, random_state, measure

    def fit(self, X, y):
        self.acc_ = float(np.mean(self.classifier.predict(X) == y))
        self.val_pred_ = self.classifier.predict(X)
        return self

    def predict_batch(self, samples, measure=None, prevalences=None):
        weight = {"accuracy": 1.0, "f1": 0.5}[measure]  # the measure must be passed on
        return [weight * self.acc_ * float(np.mean(self.classifier.predict(S))) for S in samples]

    def predict_measures(self, X, measures):
        return {m: self.predict_batch([X], m)[0] for m in measures}


@pytest.mark.parametrize("seed", [5, 2**32 - 1])
def test_rates_scheme_response_by_hand(echo, seed):
    h, X, y = echo
    ci = C.ConformalInterval(_Tilt(h), scheme="rates", rate_model="response", n_splits=3, n_cal=7,
                             random_state=seed).fit(X, y)
    assert len(ci.half_methods_) == 3
    acc = []
    for j, (ma, mb, b) in enumerate(ci.half_methods_):
        ia, ib = _halving(y, j, seed)
        np.testing.assert_array_equal(b, ib)
        assert ma.acc_ == np.mean(X[ia, 0] == y[ia]) and mb.acc_ == np.mean(X[ib, 0] == y[ib])
        assert ma.random_state == seed and mb.random_state == seed
        acc.append((ma.acc_, mb.acc_))
    assert len({a for a, _ in acc}) > 1  # the halvings differ
    c = ci._calibration(25, "accuracy")
    idx = protocols.upp_indices(y, 25, 7, seed=seed, n_classes=2)
    prev = np.array([contingency_table(y[i], X[i, 0], 2).sum(axis=1) for i in idx])
    # calibration sample i is paired with halving i mod 3 only: a sample of its second half at prevalence p_i
    rate = []
    for i, p in enumerate(prev):
        ma, mb, b = ci.half_methods_[i % 3]
        S = X[b][protocols.sample_at(y[b], p, 25, (seed + 104729 * (i + 1)) % 2**32)]
        assert np.bincount(y[b][protocols.sample_at(y[b], p, 25, (seed + 104729 * (i + 1)) % 2**32)],
                           minlength=2) @ [0, 1] == round(25 * p[1])
        rate.append((ma.acc_ - mb.acc_) * S[:, 0].mean())
    np.testing.assert_allclose(c["rate"], rate, atol=1e-15)
    np.testing.assert_allclose(ci._calibration(25, "f1")["rate"], 0.5 * np.array(rate), atol=1e-15)
    # n_cal scores, not n_splits x n_cal: every array of the calibration is of the n_cal samples
    assert {len(c[k]) for k in ("pred", "true", "rate", "dist", "prev_dist", "fold", "gamma")} == {7}
    pred = np.array([(66 / 80) * X[i, 0].mean() for i in idx])
    np.testing.assert_allclose(c["pred"], pred, atol=1e-15)
    np.testing.assert_allclose(ci._residuals(25, "accuracy"), np.abs(ci.scale_ * np.array(rate) + pred - c["true"]),
                               atol=1e-15)
    assert ci.scale_ == pytest.approx(math.sqrt((2 / 80) / (2 / 40)))
    # the Mondrian bins and the floor run on those n_cal scores
    b = ci.with_options(False, bins=2, floor="auto", bin_by="prevalence").bounds([X[:25], X[30:70]], [0.5, 0.6],
                                                                               "accuracy", 0.2)
    assert b.shape == (2, 2) and np.all(b[:, 0] <= [0.5, 0.6]) and np.all(b[:, 1] >= [0.5, 0.6])


def test_rates_scheme_response_with_fewer_calibration_samples_than_halvings(echo):
    h, X, y = echo
    ci = C.ConformalInterval(_Tilt(h), scheme="rates", rate_model="response", n_splits=3, n_cal=2,
                             random_state=4).fit(X, y)
    c = ci._calibration(25, "accuracy")
    idx = protocols.upp_indices(y, 25, 2, seed=4, n_classes=2)
    rate = []
    for i, j in enumerate(idx):  # samples 0 and 1 on halvings 0 and 1; halving 2 has none
        ma, mb, b = ci.half_methods_[i]
        p = contingency_table(y[j], X[j, 0], 2).sum(axis=1)
        rate.append((ma.acc_ - mb.acc_) * X[b][protocols.sample_at(y[b], p, 25, 4 + 104729 * (i + 1)), 0].mean())
    np.testing.assert_allclose(c["rate"], rate, atol=1e-15)


def test_rates_scheme_response_seed_and_model_matter(echo):
    h, X, y = echo
    kw = dict(scheme="rates", n_splits=3, n_cal=7)
    one = C.ConformalInterval(_Tilt(h), rate_model="response", random_state=1, **kw).fit(X, y)
    other = C.ConformalInterval(_Tilt(h), rate_model="response", random_state=2, **kw).fit(X, y)
    assert not np.array_equal(one._residuals(25, "accuracy"), other._residuals(25, "accuracy"))
    again = C.ConformalInterval(_Tilt(h), rate_model="response", random_state=1, **kw).fit(X, y)
    np.testing.assert_array_equal(one._residuals(25, "accuracy"), again._residuals(25, "accuracy"))
    # the halvings' measure difference on the same V is another term
    halv = C.ConformalInterval(_Tilt(h), random_state=1, **kw).fit(X, y)
    assert not hasattr(halv, "half_methods_") and len(halv._residuals(25, "accuracy")) == 21


def test_rates_scheme_response_refuses_the_propagation(echo):
    h, X, y = echo
    message = (r"^propagate=True propagates h's rates through ACC, a surrogate of the method's response, which "
               r"rate_model=\"response\" measures itself: use propagate=False$")
    with pytest.raises(ValueError, match=message):
        _ci(h, scheme="rates", rate_model="response", propagate=True, n_splits=2, n_cal=3).fit(X, y)
    with pytest.raises(ValueError, match=r"^propagate='auto' propagates"):
        _ci(h, scheme="rates", rate_model="response", propagate="auto", n_splits=2, n_cal=3).fit(X, y)
    ci = _ci(h, scheme="rates", rate_model="response", n_splits=2, n_cal=3).fit(X, y)
    with pytest.raises(ValueError, match=message):
        ci.with_options(False, propagate=True)
    assert ci.with_options(False, propagate=False).propagate is False
    assert "response" in C.RATE_MODELS


def test_rates_scheme_auto_rate_model_is_the_response_for_two_classes(echo):
    h, X, y = echo
    kw = dict(scheme="rates", n_splits=3, n_cal=7, random_state=3)
    auto = C.ConformalInterval(_Tilt(h), rate_model="auto", **kw).fit(X, y)
    resp = C.ConformalInterval(_Tilt(h), rate_model="response", **kw).fit(X, y)
    assert auto.rate_model == "auto" and auto.rate_model_ == resp.rate_model_ == "response"
    assert len(auto.half_methods_) == 3 and auto.response_fallbacks_ == {}
    np.testing.assert_array_equal(auto._residuals(25, "accuracy"), resp._residuals(25, "accuracy"))
    assert len(auto._residuals(25, "accuracy")) == 7  # n_cal scores, not n_splits x n_cal
    with pytest.raises(ValueError, match=r"^propagate=True propagates"):
        C.ConformalInterval(_Tilt(h), rate_model="auto", propagate=True, **kw).fit(X, y)
    with pytest.raises(ValueError, match=r"^propagate='auto' propagates"):
        auto.with_options(False, propagate="auto")


def test_rates_scheme_auto_rate_model_is_the_halvings_for_three_classes():
    # 3 classes of 60 items, h wrong on 2, 0 and 1 of them
    y = np.repeat([0, 1, 2], 60)
    pred = y.copy()
    pred[[0, 1, 120]] = [1, 2, 0]
    X = np.stack([pred, np.arange(180)], axis=1).astype(float)
    h = _Echo3().fit(X, y)
    kw = dict(scheme="rates", n_splits=2, n_cal=20, random_state=2)
    auto = _ci(h, rate_model="auto", **kw).fit(X, y)
    halv = _ci(h, rate_model="halvings", **kw).fit(X, y)
    assert auto.rate_model_ == halv.rate_model_ == "halvings"
    assert not hasattr(auto, "half_methods_") and not hasattr(auto, "response_fallbacks_")
    np.testing.assert_array_equal(auto._residuals(30, "accuracy"), halv._residuals(30, "accuracy"))
    assert len(auto._residuals(30, "accuracy")) == 40  # n_splits x n_cal
    # the propagation is allowed where "auto" takes the halvings ("auto" propagates two classes only)
    assert auto.with_options(False, propagate=True).propagate is True
    assert _ci(h, rate_model="auto", propagate="auto", **kw).fit(X, y).rate_model_ == "halvings"


class _FailsOnHalves(_Tilt):
    """_Tilt whose fits on fewer than 80 items (the halves of the echo problem's V) fail on any batch holding a
    sample where h predicts class 1 for more than half of the items."""

    def predict_batch(self, samples, measure=None, prevalences=None):
        if len(self.val_pred_) < 80 and any(np.mean(self.classifier.predict(S)) > 0.5 for S in samples):
            raise ValueError("no calibration for this half")
        return super().predict_batch(samples, measure, prevalences)


@pytest.mark.parametrize("measure", ["accuracy", "f1"])
def test_rates_scheme_response_falls_back_to_the_halvings_term_on_the_samples_a_half_fails_on(echo, measure):
    h, X, y = echo
    ci = C.ConformalInterval(_FailsOnHalves(h), scheme="rates", rate_model="response", n_splits=2, n_cal=9,
                             random_state=3).fit(X, y)
    c = ci._calibration(25, measure)
    idx = protocols.upp_indices(y, 25, 9, seed=3, n_classes=2)
    weight = {"accuracy": 1.0, "f1": 0.5}[measure]
    rate, fell = [], 0
    for i, j in enumerate(idx):
        p = np.bincount(y[j], minlength=2) / 25
        ia, ib = _halving(y, i % 2, 3)
        ma, mb, b = ci.half_methods_[i % 2]
        S = X[b][protocols.sample_at(y[b], p, 25, 3 + 104729 * (i + 1))]
        if S[:, 0].mean() <= 0.5:  # both halves' fits predict this sample: the response
            rate.append(weight * (ma.acc_ - mb.acc_) * S[:, 0].mean())
            continue
        fell += 1
        # the halvings' term at p: the table p_c * (rate of predicting k among class c) under a's rates minus b's
        terms = []
        for part in (ia, ib):
            r1 = [np.mean(X[part][y[part] == k, 0] == 1) for k in (0, 1)]  # each class's rate of predictions of 1
            t = np.array([[p[0] * (1 - r1[0]), p[0] * r1[0]], [p[1] * (1 - r1[1]), p[1] * r1[1]]])
            f1 = 2 * t[1, 1] / (2 * t[1, 1] + t[0, 1] + t[1, 0])
            terms.append(t[0, 0] + t[1, 1] if measure == "accuracy" else f1)
        rate.append(terms[0] - terms[1])
    assert 0 < fell < 9  # some samples fall back, not all: the response is kept where the fits predict
    np.testing.assert_allclose(c["rate"], rate, atol=1e-15)
    assert ci.response_fallbacks_ == {(25, measure): fell}
    lo, hi = ci.predict_interval_batch([X[:25]], 0.1, measure)[0]
    assert lo < hi
    # the halvings' term needs no fit on a half
    ok = C.ConformalInterval(_FailsOnHalves(h), scheme="rates", n_splits=2, n_cal=3).fit(X, y)
    assert ok.predict_interval_batch([X[:25]], 0.1, "accuracy").shape == (1, 2)
    assert not hasattr(ok, "response_fallbacks_")


def test_rates_scheme_response_counts_no_fallback_where_every_half_predicts(echo):
    h, X, y = echo
    ci = C.ConformalInterval(_Tilt(h), scheme="rates", rate_model="response", n_splits=2, n_cal=5).fit(X, y)
    assert ci.response_fallbacks_ == {}
    ci._calibration(25, "accuracy"), ci._calibration(40, "f1")
    assert ci.response_fallbacks_ == {(25, "accuracy"): 0, (40, "f1"): 0}

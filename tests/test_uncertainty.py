"""Tests of capshift.uncertainty: the conformal quantile, split-conformal coverage on exchangeable synthetic data,
the paper's bootstrap interval, Table 3's scores, and errors."""
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from capshift import experiment, protocols, uncertainty as U
from capshift.tables import accuracy, contingency_table


def test_conformal_quantile_is_the_finite_sample_rank():
    r = np.arange(1, 20)  # 19 residuals
    assert U.conformal_quantile(r, 0.1) == 18  # ceil(20 * 0.9) = 18th smallest
    assert U.conformal_quantile(r, 0.05) == 19
    assert U.conformal_quantile(r, 0.01) == float("inf")  # too few residuals for 99%
    with pytest.raises(ValueError, match="alpha"):
        U.conformal_quantile(r, 1.0)
    with pytest.raises(ValueError, match="residuals"):
        U.conformal_quantile([], 0.1)


@pytest.fixture(scope="module")
def gaussian_problem():
    rng = np.random.default_rng(0)

    def draw(m):
        y = rng.integers(0, 2, m)
        return rng.normal(size=(m, 2)) + 1.2 * y[:, None], y

    X_L, y_L = draw(2000)
    X_V, y_V = draw(2000)
    X_U, y_U = draw(4000)
    h = LogisticRegression().fit(X_L, y_L)
    return h, X_V, y_V, X_U, y_U


def test_split_conformal_covers_on_exchangeable_samples(gaussian_problem):
    h, X_V, y_V, X_U, y_U = gaussian_problem
    ci = U.ConformalInterval(experiment.make_method("LEAP_ACC", h), n_cal=200, random_state=0).fit(X_V, y_V)
    idx = protocols.upp_indices(y_U, 100, 200, seed=1)
    samples = [X_U[i] for i in idx]
    true = np.array([accuracy(contingency_table(y_U[i], h.predict(X_U[i]), 2)) for i in idx])
    bounds = ci.predict_interval_batch(samples, alpha=0.1)
    scores = U.interval_scores(bounds[:, 0], bounds[:, 1], true)
    # the split-conformal guarantee (>= 0.9 marginally) up to the sampling error of 200 test samples
    assert scores["C"] >= 0.9 - 3 * np.sqrt(0.09 / 200)
    assert 0 < scores["A"] < 0.5
    # the interval is built around the point prediction of the fitted (split) method
    point = ci.estimator_.predict_batch(samples)
    assert np.all((bounds[:, 0] <= point + 1e-12) & (point <= bounds[:, 1] + 1e-12))
    # narrower at a lower confidence level
    assert ci.predict_interval_batch(samples, alpha=0.5)[:, 1].mean() < bounds[:, 1].mean()


@pytest.mark.parametrize("scheme", ["cv", "bootstrap"])
def test_other_schemes_refit_on_all_of_v(gaussian_problem, scheme):
    h, X_V, y_V, X_U, _ = gaussian_problem
    ci = U.ConformalInterval(experiment.make_method("S-LEAP_CC", h), n_cal=40, scheme=scheme, n_splits=3,
                             random_state=0).fit(X_V, y_V)
    assert len(ci.folds_) == 3 and ci.estimator_ is not ci.folds_[0][0]
    lo, hi = ci.predict_interval(X_U[:200])
    assert 0 <= lo <= ci.predict(X_U[:200]) <= hi <= 1
    assert len(ci.residuals_[(200, "accuracy")]) == 3 * 14  # ceil(40 / 3) per fold


def test_bootstrap_interval_of_the_paper(gaussian_problem):
    h, X_V, y_V, X_U, _ = gaussian_problem
    est = experiment.make_method("LEAP_ACC", h).fit(X_V, y_V)
    lo, hi = U.bootstrap_interval(est, X_U[:300], alpha=0.1, n_boot=60, random_state=0)
    assert 0 <= lo < hi <= 1
    assert U.bootstrap_interval(est, X_U[:300], alpha=0.1, n_boot=60, random_state=0) == (lo, hi)  # seeded
    wide = U.bootstrap_interval(est, X_U[:300], alpha=0.5, n_boot=60, random_state=0)
    assert wide[1] - wide[0] <= hi - lo  # a 50% interval is no wider than a 90% one


@pytest.mark.parametrize("call, match", [
    (lambda h, e: U.ConformalInterval(h).fit(np.zeros((10, 2)), np.zeros(10)), "CAPEstimator"),
    (lambda h, e: U.ConformalInterval(e, scheme="jackknife").fit(np.zeros((10, 2)), np.tile([0, 1], 5)), "scheme"),
    (lambda h, e: U.ConformalInterval(e).fit(np.zeros((6, 2)), np.array([0, 0, 0, 1, 1, 1])), "at least 4"),
    (lambda h, e: U.ConformalInterval(e).predict_interval(np.zeros((3, 2))), "fit"),
    (lambda h, e: U.interval_scores([0.5], [0.4], [0.45]), "lower"),
    (lambda h, e: U.interval_scores([0.5, 0.1], [0.6], [0.5]), "shape"),
])
def test_bad_input(gaussian_problem, call, match):
    h = gaussian_problem[0]
    with pytest.raises(Exception, match=match):
        call(h, experiment.make_method("LEAP_ACC", h))


def test_bad_alpha_and_empty_batch(gaussian_problem):
    h, X_V, y_V, X_U, _ = gaussian_problem
    ci = U.ConformalInterval(experiment.make_method("LEAP_ACC", h), n_cal=20).fit(X_V, y_V)
    for alpha in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            ci.predict_interval(X_U[:50], alpha=alpha)
    with pytest.raises(ValueError, match="samples"):
        ci.predict_interval_batch([])

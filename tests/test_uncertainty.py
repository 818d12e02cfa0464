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


def _two_gaussians(seed, shift):
    """A sampler of m items of two classes: unit Gaussians in 2-d whose means are ``shift`` apart."""
    rng = np.random.default_rng(seed)

    def draw(m):
        y = rng.integers(0, 2, m)
        return rng.normal(size=(m, 2)) + shift * y[:, None], y
    return draw


@pytest.fixture(scope="module")
def gaussian_problem():
    draw = _two_gaussians(0, 1.2)
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
    assert len(ci._residuals(200, "accuracy")) == 3 * 14  # ceil(40 / 3) per fold


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


# ---------------------------------------------------------------------------------- predict_interval (mixin)
CHEAP_INTERVALS = {"scheme": "mc", "n_splits": 4, "n_cal": 120, "pool_correction": False, "score": "both",
                   "floor": True}


def _with_cheap_intervals(est):
    est.interval_params = CHEAP_INTERVALS  # instance attribute: the class default stays
    return est


@pytest.mark.parametrize("name", ["Naive", "LEAP_ACC", "S-LEAP_CC", "DoC", "O-LEAP_oracle"])
def test_predict_interval_contains_the_point_and_is_seeded(gaussian_problem, name):
    h, X_V, y_V, X_U, y_U = gaussian_problem
    kw = {"n_val_samples": 10} if name == "DoC" else {}
    est = _with_cheap_intervals(experiment.make_method(name, h, random_state=3, **kw)).fit(X_V, y_V)
    samples = [X_U[:200], X_U[200:400]]
    prev = np.stack([np.bincount(y_U[:200], minlength=2) / 200, np.bincount(y_U[200:400], minlength=2) / 200])
    b = est.predict_interval_batch(samples, alpha=0.1, prevalences=prev)
    point = est.predict_batch(samples, prevalences=prev)
    assert b.shape == (2, 2) and np.all((b[:, 0] <= point + 1e-12) & (point <= b[:, 1] + 1e-12))
    assert np.all((0 <= b) & (b <= 1))
    # alone and in a batch: the same interval up to round-off (batched solves and KDEy products)
    assert est.predict_interval(samples[0], alpha=0.1, prevalence=prev[0]) == pytest.approx(tuple(b[0]), abs=1e-12)
    again = _with_cheap_intervals(experiment.make_method(name, h, random_state=3, **kw)).fit(X_V, y_V)
    assert np.array_equal(again.predict_interval_batch(samples, alpha=0.1, prevalences=prev), b)  # seeded
    wide = est.predict_interval_batch(samples, alpha=0.02, prevalences=prev)
    narrow = est.predict_interval_batch(samples, alpha=0.5, prevalences=prev)
    # nested: a higher confidence level never gives a narrower interval
    assert np.all(wide[:, 0] <= b[:, 0] + 1e-12) and np.all(b[:, 1] <= wide[:, 1] + 1e-12)
    assert np.all(narrow[:, 1] - narrow[:, 0] <= b[:, 1] - b[:, 0] + 1e-12)


def test_predict_interval_measures_matches_single_measures(gaussian_problem):
    h, X_V, y_V, X_U, _ = gaussian_problem
    est = _with_cheap_intervals(experiment.make_method("S-LEAP_CC", h)).fit(X_V, y_V)
    samples = [X_U[:150], X_U[150:300]]
    both = est.predict_interval_measures(samples, ["accuracy", "f1"], alpha=0.1)
    assert set(both) == {"accuracy", "f1"}
    assert np.array_equal(both["f1"], est.predict_interval_batch(samples, 0.1, measure="f1"))
    # refitting forgets the calibration
    est.fit(X_V, y_V)
    assert not hasattr(est, "interval_")


def test_mc_conformal_covers_exchangeable_samples(gaussian_problem):
    # V and U come from one Gaussian distribution (an infinite pool): the residuals of methods fitted on halves
    # of V on UPP samples of the other halves upper-bound those of the method fitted on V on UPP samples of U
    h, X_V, y_V, X_U, y_U = gaussian_problem
    est = experiment.make_method("LEAP_ACC", h, random_state=0)
    est.interval_params = {"scheme": "mc", "n_splits": 5, "n_cal": 200, "pool_correction": False}
    est.fit(X_V, y_V)
    idx = protocols.upp_indices(y_U, 100, 200, seed=5)
    true = np.array([accuracy(contingency_table(y_U[i], h.predict(X_U[i]), 2)) for i in idx])
    b = est.predict_interval_batch([X_U[i] for i in idx], alpha=0.1)
    assert U.interval_scores(b[:, 0], b[:, 1], true)["C"] >= 0.9 - 3 * np.sqrt(0.09 / 200)


def test_pool_correction_scale_is_the_variance_ratio(gaussian_problem):
    h, X_V, y_V, _, _ = gaussian_problem
    ci = U.ConformalInterval(experiment.make_method("S-LEAP_CC", h), scheme="mc", n_splits=2, n_cal=10,
                             pool_correction=True).fit(X_V, y_V)
    # halves of V: (1/|V| + 1/|V|) / (1/(|V|/2) + 1/(|V|/2)) = 1/2
    assert ci.scale_ == pytest.approx(np.sqrt(0.5))
    ci_inf = U.ConformalInterval(experiment.make_method("S-LEAP_CC", h), scheme="mc", n_splits=2, n_cal=10,
                                 pool_correction=True, pool_size=10**12).fit(X_V, y_V)
    assert ci_inf.scale_ == pytest.approx(np.sqrt(0.25), rel=1e-6)


def test_bootstrap_prevalences_agree_with_quapy(gaussian_problem):
    from joblib import parallel_config
    from quapy.method.aggregative import CC
    from quapy.method.confidence import AggregativeBootstrap
    h, X_V, y_V, X_U, _ = gaussian_problem
    est = experiment.make_method("S-LEAP_CC", h).fit(X_V, y_V)
    ours = U.bootstrap_prevalences(est, X_U[:300], n_boot=50, random_state=3)
    ref = AggregativeBootstrap(CC(h, fit_classifier=False), n_test_samples=50, random_state=3).fit(X_V, y_V)
    with parallel_config(backend="sequential"):
        _, region = ref.predict_conf(X_U[:300])
    np.testing.assert_allclose(ours, region.samples, atol=1e-12)


def test_propagated_interval_is_seeded_and_nested(gaussian_problem):
    h, X_V, y_V, X_U, _ = gaussian_problem
    est = experiment.make_method("S-LEAP_CC", h).fit(X_V, y_V)
    lo, hi = U.propagated_interval(est, X_U[:400], alpha=0.1, n_boot=200, random_state=1)
    assert 0 <= lo <= est.predict(X_U[:400]) <= hi <= 1
    assert U.propagated_interval(est, X_U[:400], alpha=0.1, n_boot=200, random_state=1) == (lo, hi)
    lo2, hi2 = U.propagated_interval(est, X_U[:400], alpha=0.5, n_boot=200, random_state=1)
    assert lo <= lo2 <= hi2 <= hi
    with pytest.raises(TypeError, match="quantifier"):
        U.propagated_interval(experiment.make_method("S-LEAP_oracle", h).fit(X_V, y_V), X_U[:100])


def test_predict_interval_bad_input(gaussian_problem):
    h, X_V, y_V, X_U, _ = gaussian_problem
    est = _with_cheap_intervals(experiment.make_method("Naive", h)).fit(X_V, y_V)
    for alpha in (0.0, 1.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            est.predict_interval(X_U[:50], alpha=alpha)
    with pytest.raises(ValueError, match="samples"):
        est.predict_interval_batch([])
    with pytest.raises(ValueError, match="measure"):
        experiment.make_method("ATC", h).fit(X_V, y_V).predict_interval(X_U[:50], measure="f1")


def test_folds_never_reuse_a_quantifier_fitted_on_all_of_v(gaussian_problem):
    # the experiment runner shares one Quantifier fitted on V between methods; calibrating with it would
    # evaluate it on its own training items
    from capshift.quantifiers import Quantifier
    h, X_V, y_V, X_U, _ = gaussian_problem
    shared = Quantifier("acc", classifier=h).fit(X_V, y_V, 2)
    est = _with_cheap_intervals(experiment.make_method("LEAP_ACC", h, quantifier=shared)).fit(X_V, y_V)
    est.predict_interval(X_U[:100])
    folds = est.interval_.folds_
    assert est.quantifier_ is shared and all(fold[0].quantifier_ is not shared for fold in folds)
    assert all(len(fold[0].val_pred_) < len(y_V) for fold in folds)  # each fold fitted on its part of V only


# ---------------------------------------------------------------------- finite evidence, studentised scores
def test_evidence_interval_is_scipys_beta_binomial():
    from scipy.stats import betabinom, beta
    V = np.array([[90, 10], [5, 45]])  # class 0: 10 errors in 100 items
    for size in (50, 500):
        lo, hi, plug = U.evidence_interval(V, [1.0, 0.0], size, alpha=0.1)
        bb = betabinom(size, 10 + 0.5, 90 + 0.5)  # Jeffreys posterior of the error rate, then the sample's errors
        assert hi == pytest.approx(1 - bb.ppf(0.05) / size) and lo == pytest.approx(1 - bb.ppf(0.95) / size)
        assert plug == pytest.approx(0.9)
    # a very large sample: the Jeffreys interval of the error rate itself (Brown, Cai & DasGupta 2001)
    lo, hi, _ = U.evidence_interval(V, [1.0, 0.0], 200_000, alpha=0.05)
    assert lo == pytest.approx(1 - beta.ppf(0.975, 10.5, 90.5), abs=2e-4)
    assert hi == pytest.approx(1 - beta.ppf(0.025, 10.5, 90.5), abs=2e-4)


def test_evidence_interval_of_an_errorless_classifier_is_not_empty_and_shrinks_with_v():
    widths = []
    for n_v in (20, 200, 2000):
        lo, hi, plug = U.evidence_interval(np.diag([n_v, n_v]), [0.5, 0.5], 500, alpha=0.05)
        assert plug == 1.0 and hi == 1.0 and lo < 1.0
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2] > 0


def test_evidence_interval_other_measures_is_seeded_and_brackets_the_plug_in():
    V = np.array([[40, 8], [6, 46]])
    a = U.evidence_interval(V, [0.3, 0.7], 300, alpha=0.1, measure="f1", random_state=4)
    assert a == U.evidence_interval(V, [0.3, 0.7], 300, alpha=0.1, measure="f1", random_state=4)
    assert a[0] < a[2] < a[1]
    # the exact convolution (accuracy) and the Monte Carlo path (any other measure: here accuracy in disguise) agree
    from capshift import conformal, tables
    exact = U.evidence_interval(V, [0.3, 0.7], 300, alpha=0.1)
    mc = conformal._evidence(V, [0.3, 0.7], 300, 0.1, lambda C: tables.accuracy(C), 20000, 0)
    assert mc[0] == pytest.approx(exact[0], abs=0.01) and mc[1] == pytest.approx(exact[1], abs=0.01)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: U.evidence_interval([[1, 2]], [0.5, 0.5], 10), ValueError, "val_counts"),
    (lambda: U.evidence_interval([[1, -2], [0, 3]], [0.5, 0.5], 10), ValueError, "val_counts"),
    (lambda: U.evidence_interval([[1, 2], [0, 3]], [0.7, 0.5], 10), ValueError, "prevalence"),
    (lambda: U.evidence_interval([[1, 2], [0, 3]], [0.5, 0.5], 0), ValueError, "size"),
    (lambda: U.evidence_interval([[1, 2], [0, 3]], [0.5, 0.5], 10, alpha=2), ValueError, "alpha"),
])
def test_evidence_interval_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_acc_prevalence_inverts_the_validation_rates():
    V = np.array([[80, 20], [10, 90]])  # P(h = 1 | y = 0) = 0.2, P(h = 1 | y = 1) = 0.9 (up to the Jeffreys 1/2)
    p = np.array([0.3, 0.7])
    R = (V + 0.5) / (V + 0.5).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(U.acc_prevalence(V, p @ R), p, atol=1e-9)
    np.testing.assert_allclose(U.acc_prevalence(V, [1.0, 0.0]), [1.0, 0.0], atol=1e-8)  # clipped to the simplex


@pytest.fixture(scope="module")
def separable_problem():
    draw = _two_gaussians(1, 12.0)
    X_L, y_L = draw(400)
    return LogisticRegression().fit(X_L, y_L), draw


def test_errorless_classifier_gets_an_interval_that_shrinks_with_v(separable_problem):
    # h makes no error on V: every conformal residual is 0; the floor still leaves h's plausible error rates
    h, draw = separable_problem
    X_U, _ = draw(500)
    widths = []
    for n_v in (60, 600):
        X_V, y_V = draw(n_v)
        assert np.all(h.predict(X_V) == y_V)
        est = _with_cheap_intervals(experiment.make_method("LEAP_ACC", h)).fit(X_V, y_V)
        lo, hi = est.predict_interval(X_U, alpha=0.05)
        assert hi == 1.0 and lo < 1.0
        assert est.interval_.quantiles([X_U], "accuracy", 0.05)[0] < 1e-4  # the conformal part alone: ~ zero width
        widths.append(hi - lo)
    assert widths[0] > widths[1] > 0


def test_studentised_and_union_scores(gaussian_problem):
    h, X_V, y_V, X_U, y_U = gaussian_problem
    ci = U.ConformalInterval(experiment.make_method("LEAP_ACC", h), scheme="mc", n_splits=3, n_cal=60,
                             score="absolute", random_state=0).fit(X_V, y_V)
    samples = [X_U[:100], X_U[100:300]]
    a = ci.quantiles(samples, "accuracy", 0.1)
    s = ci.with_options(False, score="studentised").quantiles(samples, "accuracy", 0.1)
    b = ci.with_options(False, score="both").quantiles(samples, "accuracy", 0.1)
    np.testing.assert_array_equal(b, np.maximum(a, s))
    assert s[0] > s[1]  # a smaller sample: a larger evidence scale
    # the scale is one function of (counts, prevalence, size) for calibration and test samples
    c = ci._calibration(100, "accuracy")
    assert np.all(c["scale"] >= 1 / 100) and len(c["scale"]) == len(c["true"])
    # every measure is studentised by the accuracy's scale (F1's own would vanish where a class is absent)
    ci.with_options(False, score="studentised").quantiles(samples, "f1", 0.1)
    np.testing.assert_array_equal(ci._calibration(100, "f1")["scale"], c["scale"])
    with pytest.raises(ValueError, match="score"):
        U.ConformalInterval(experiment.make_method("LEAP_ACC", h), score="t").fit(X_V, y_V)
    with pytest.raises(TypeError, match="floor"):
        U.ConformalInterval(experiment.make_method("LEAP_ACC", h), floor="yes").fit(X_V, y_V)


def test_default_interval_covers_a_synthetic_pps_problem(gaussian_problem):
    # V and U from one distribution, UPP test samples (prior probability shift): the default construction
    # (Monte Carlo cross-conformal, union of absolute and studentised scores, evidence floor) reaches 1-α
    h, X_V, y_V, X_U, y_U = gaussian_problem
    est = experiment.make_method("S-LEAP_CC", h, random_state=0)
    est.interval_params = {**est.interval_params, "n_splits": 5, "n_cal": 200}
    est.fit(X_V, y_V)
    idx = protocols.upp_indices(y_U, 200, 200, seed=7)
    true = np.array([accuracy(contingency_table(y_U[i], h.predict(X_U[i]), 2)) for i in idx])
    b = est.predict_interval_batch([X_U[i] for i in idx], alpha=0.1)
    sc = U.interval_scores(b[:, 0], b[:, 1], true)
    assert sc["C"] >= 0.9 - 3 * np.sqrt(0.09 / 200) and sc["A"] < 0.3


def _results(rows):
    import pandas as pd
    return pd.DataFrame(rows, columns=["dataset", "method", "kind", "true", "predicted", "lower", "upper"])


def test_error_structure_and_coverage_by_scale():
    # dataset a: every error +0.1 (pure bias); dataset b: errors ±0.05 around 0 (pure spread)
    rows = [("a", "M", "k", 0.5, 0.6, 0.45, 0.75)] * 4 + \
           [("b", "M", "k", 0.5, 0.5 + e, 0.5 + e - 0.06, 0.5 + e + 0.06) for e in (0.05, -0.05, 0.05, -0.05)]
    r = _results(rows)
    s = U.error_structure(r).set_index("dataset")
    assert s.loc["a", "bias"] == pytest.approx(0.1) and s.loc["a", "spread"] == pytest.approx(0.0, abs=1e-12)
    assert s.loc["a", "ratio"] == np.inf and s.loc["b", "bias"] == pytest.approx(0.0, abs=1e-12)
    assert s.loc["b", "spread"] == pytest.approx(np.std([0.05, -0.05] * 2, ddof=1))
    c = U.coverage_by_scale(r, [1.0, 0.5, 0.9, 2.0]).set_index("scale")
    # scale 1 = the intervals' own coverage (summarise_intervals' C); a: covered while c * 0.15 >= 0.1
    own = U.summarise_intervals(r.assign(sample=0, ae=(r.predicted - r.true).abs()))
    own = own[own.kind == "k"].set_index("dataset").C
    assert c.loc[1.0, "mean_C"] == pytest.approx(own.mean()) and c.loc[1.0, "min_C"] == own.min() == 1.0
    assert c.loc[0.5, "min_C"] == 0.0 and c.loc[0.5, "worst"] == "a"   # 0.075 < 0.1: the biased dataset is lost
    assert c.loc[0.9, "mean_C"] == 1.0 and c.loc[2.0, "mean_C"] == 1.0  # 0.9 x 0.15 and 0.9 x 0.06 still cover
    # a bound clipped at the end of the range stays there: a perfect classifier's samples (true = 1) stay covered
    perfect = _results([("p", "M", "k", 1.0, 0.95, 0.9, 1.0)] * 3)
    assert U.coverage_by_scale(perfect, [0.1]).min_C.iloc[0] == 1.0
    mono = U.coverage_by_scale(r, np.linspace(0.1, 2, 20))
    assert np.all(np.diff(mono.mean_C) >= 0)                            # wider never covers less
    with pytest.raises(ValueError, match="scales"):
        U.coverage_by_scale(r, [0.0, 1.0])
    with pytest.raises(ValueError, match="columns"):
        U.error_structure(r.drop(columns=["upper"]))


def test_recorded_per_sample_intervals_match_the_recorded_summary():
    # the chapter's two full-scale records: the per-sample file summarises to the summary's rows
    import pathlib

    import pandas as pd
    book = pathlib.Path(__file__).resolve().parents[1] / "book" / "measured"
    per = pd.read_csv(book / "uncertainty_full_scale_samples.csv", comment="#")
    summ = pd.read_csv(book / "uncertainty_full_scale.csv", comment="#")
    mine = U.summarise_intervals(per.assign(ae=(per.predicted - per.true).abs()))
    mine = mine[mine.kind == "conformal-mc-both"].set_index(["dataset", "method"]).sort_index()
    ref = summ[(summ.kind == "conformal-mc-both") & summ.dataset.isin(per.dataset.unique())]
    ref = ref.set_index(["dataset", "method"]).sort_index()
    assert len(mine) == len(ref) == 34
    np.testing.assert_allclose(mine.C, ref.C, atol=1e-9)
    np.testing.assert_allclose(mine.A, ref.A, atol=1e-4)


def test_winkler_score_by_hand():
    # alpha = .1: a miss costs 2 / .1 = 20 times its distance, on top of the width
    w = U.winkler_score([0.2, 0.2, 0.2], [0.4, 0.4, 0.4], [0.3, 0.5, 0.1], alpha=0.1)
    np.testing.assert_allclose(w, [0.2, 0.2 + 20 * 0.1, 0.2 + 20 * 0.1])
    np.testing.assert_allclose(U.winkler_score([0.5], [0.5], [0.5], alpha=0.05), [0.0])
    np.testing.assert_allclose(U.winkler_score([0.0], [0.9], [0.95], alpha=0.05), [0.9 + 40 * 0.05])
    with pytest.raises(ValueError, match="lower must not exceed"):
        U.winkler_score([0.5], [0.4], [0.45])
    with pytest.raises(ValueError, match="finite"):
        U.winkler_score([np.nan], [0.4], [0.45])
    with pytest.raises(ValueError, match="alpha"):
        U.winkler_score([0.1], [0.4], [0.45], alpha=0)


def test_compare_constructions_by_hand():
    import pandas as pd
    # two datasets of 2 samples, alpha = .5 (oracle: twice the median absolute error of the dataset)
    r = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "construction": "c", "task": "binary",
                      "true": [0.5, 0.5, 0.5, 0.5], "predicted": [0.5, 0.6, 0.7, 0.5],
                      "lower": [0.4, 0.55, 0.65, 0.55], "upper": [0.6, 0.65, 0.75, 0.7]})
    per = U.dataset_scores(r, alpha=0.5, by=["task"])
    assert per.set_index("dataset")["C"].to_dict() == {"a": 0.5, "b": 0.0}
    out = U.compare_constructions(per, by=["task"]).iloc[0]
    assert out["C_se"] == pytest.approx(np.std([0.5, 0.0], ddof=1) / np.sqrt(2)) and out["datasets"] == 2
    assert out["C"] == 0.25 and out["worst_C"] == 0.0 and out["worst"] == "b"  # both of b's miss .5
    assert out["A"] == pytest.approx((0.2 + 0.1 + 0.1 + 0.15) / 4)
    # oracle a: 2 * median(0, .1) = .1; b: 2 * median(.2, 0) = .2 -> mean over samples .15
    assert out["oracle"] == pytest.approx(0.15)
    assert out["ratio"] == pytest.approx(out["A"] / 0.15)
    # Winkler: widths plus 4 x the misses (a2 by .05, b1 by .15, b2 by .05)
    assert out["W"] == pytest.approx((0.2 + 0.3 + 0.7 + 0.35) / 4)
    with pytest.raises(ValueError, match="columns"):
        U.dataset_scores(r.drop(columns="construction"))
    with pytest.raises(ValueError, match="columns"):
        U.compare_constructions(r)


def test_mondrian_bins_by_estimated_prevalence(gaussian_problem):
    h, X_V, y_V, X_U, y_U = gaussian_problem
    ci = U.ConformalInterval(experiment.make_method("LEAP_ACC", h), scheme="mc", n_splits=3, n_cal=120,
                             random_state=0).fit(X_V, y_V)
    c = ci._calibration(100, "accuracy")
    # the calibration proxy: L1 distance between the ACC prevalence (the fold's rates) and the fit part's prevalence
    j, g = c["fold"][0], c["gamma"][0]
    fit = ci.fit_counts_[j]
    assert c["prev_dist"][0] == pytest.approx(np.abs(U.acc_prevalence(fit, g) - fit.sum(1) / fit.sum()).sum())
    # four equal-count bins by that proxy: a sample far from V's prevalence gets the quantile of the far bin
    by = ci.with_options(False, bins=4, bin_by="prevalence")
    near = X_U[np.flatnonzero(y_U == 0)[:50].tolist() + np.flatnonzero(y_U == 1)[:50].tolist()]
    far = X_U[np.flatnonzero(y_U == 1)[:100]]
    q = by.quantiles([near, far], "accuracy", 0.1)
    edges = np.quantile(c["prev_dist"], [0.25, 0.5, 0.75])
    r = ci._residuals(100, "accuracy")
    for X, qi in zip([near, far], q):
        b = np.searchsorted(edges, by._test_dist(np.bincount(h.predict(X), minlength=2) / len(X),
                                                 None), side="right")
        assert qi == U.conformal_quantile(r[np.searchsorted(edges, c["prev_dist"], side="right") == b], 0.1)
    with pytest.raises(ValueError, match="bin_by"):
        ci.with_options(False, bins=4, bin_by="shift")
    with pytest.raises(ValueError, match="bin_by"):
        U.ConformalInterval(experiment.make_method("LEAP_ACC", h), bin_by="x").fit(X_V, y_V)


def test_rates_scheme_scores_by_hand(gaussian_problem):
    from capshift.tables import accuracy as acc
    h, X_V, y_V, X_U, y_U = gaussian_problem
    full = experiment.make_method("S-LEAP_CC", h, random_state=0).fit(X_V, y_V)
    ci = U.ConformalInterval(experiment.make_method("S-LEAP_CC", h), scheme="rates", n_splits=3, n_cal=40,
                             random_state=0).fit(X_V, y_V, point_estimator=full)
    assert ci.estimator_ is full and ci.folds_ == []  # no refit: the method fitted on V is the only fit
    # halves of V, test pool as large as V: (1/|V| + 1/|V|) / (1/(|V|/2) + 1/(|V|/2)) = 1/2
    assert ci.scale_ == pytest.approx(np.sqrt(0.5))
    c = ci._calibration(100, "accuracy")
    assert len(c["rate"]) == 3 * 40
    # the first calibration sample: V's items by UPP, predicted by the method fitted on V; its rate discrepancy
    # under the second halving = accuracy at its prevalence with the first half's rates minus the second half's
    i = protocols.upp_indices(y_V, 100, 40, seed=0, n_classes=2)[0]
    table = contingency_table(y_V[i], h.predict(X_V[i]), 2)
    assert c["true"][0] == pytest.approx(acc(table))
    assert c["pred"][0] == pytest.approx(full.predict(X_V[i], "accuracy"))
    a, b = ci.half_counts_[1]
    p = table.sum(axis=1)
    by_hand = sum(p[k] * (a[k, k] / a[k].sum() - b[k, k] / b[k].sum()) for k in range(2))
    assert c["rate"][40] == pytest.approx(by_hand)
    r = ci._residuals(100, "accuracy")
    assert r[40] == pytest.approx(abs(np.sqrt(0.5) * by_hand + c["pred"][0] - c["true"][0]))
    # the seed chooses the halvings and the samples
    other = U.ConformalInterval(experiment.make_method("S-LEAP_CC", h), scheme="rates", n_splits=3, n_cal=40,
                                random_state=1).fit(X_V, y_V, point_estimator=full)
    assert not np.allclose(other._calibration(100, "accuracy")["rate"], c["rate"])
    assert not np.array_equal(other.half_counts_[0][0], ci.half_counts_[0][0])
    # with an infinite test pool the discrepancy is V's against the population only: 1/|V| against 4/|V|
    inf = U.ConformalInterval(experiment.make_method("S-LEAP_CC", h), scheme="rates", n_splits=3, n_cal=40,
                              pool_size=10**12).fit(X_V, y_V, point_estimator=full)
    assert inf.scale_ == pytest.approx(0.5, rel=1e-6)


def test_rates_scheme_covers_a_synthetic_pps_problem(gaussian_problem):
    h, X_V, y_V, X_U, y_U = gaussian_problem
    full = experiment.make_method("O-LEAP_CC", h, random_state=0).fit(X_V, y_V)
    ci = U.ConformalInterval(experiment.make_method("O-LEAP_CC", h), scheme="rates", n_splits=10, n_cal=200,
                             floor=True, random_state=0).fit(X_V, y_V, point_estimator=full)
    idx = protocols.upp_indices(y_U, 200, 200, seed=7)
    true = np.array([accuracy(contingency_table(y_U[i], h.predict(X_U[i]), 2)) for i in idx])
    b = ci.predict_interval_batch([X_U[i] for i in idx], alpha=0.1)
    sc = U.interval_scores(b[:, 0], b[:, 1], true)
    assert sc["C"] >= 0.9 - 3 * np.sqrt(0.09 / 200) and sc["A"] < 0.3


def test_predict_interval_default_per_family(gaussian_problem):
    from capshift import conformal, registry
    h, X_V, y_V, X_U, _ = gaussian_problem
    for name in ("O-LEAP_KDEy", "LEAP_ACC", "S-LEAP_CC", "SLD-CBPE", "CBPE", "L-CBPE"):
        assert registry.make_method(name, h).interval_params == conformal.RATES_INTERVALS, name
    for name in ("DoC", "ATC", "Naive", "DS"):
        assert registry.make_method(name, h).interval_params == conformal.MC_INTERVALS, name
    # the rates default refits nothing: its calibrator is the method fitted on V
    est = registry.make_method("LEAP_ACC", h, random_state=0)
    est.interval_params = {**est.interval_params, "n_cal": 30, "n_splits": 3}
    est.fit(X_V, y_V).predict_interval(X_U[:100])
    assert est.interval_.scheme == "rates" and est.interval_.estimator_ is est and est.interval_.folds_ == []


def test_mondrian_bin_with_too_few_scores_falls_back_to_all(gaussian_problem):
    h, X_V, y_V, X_U, _ = gaussian_problem
    full = experiment.make_method("LEAP_ACC", h, random_state=0).fit(X_V, y_V)
    # 8 calibration samples x 2 halvings = 16 scores, 4 per bin: too few for alpha = .05 (19 needed) in a bin,
    # and too few in all; with alpha = .2 (4 needed in all, 4 in a bin) the bins hold
    ci = U.ConformalInterval(experiment.make_method("LEAP_ACC", h), scheme="rates", n_splits=2, n_cal=8, bins=4,
                             bin_by="prevalence", random_state=0).fit(X_V, y_V, point_estimator=full)
    r = ci._residuals(100, "accuracy")
    # alpha = .15: a bin of 4 scores needs rank ceil(5 x .85) = 5 (inf), all 16 need rank 15 (finite)
    assert len(r) == 16 and np.isfinite(U.conformal_quantile(r, 0.15))
    assert ci.quantiles([X_U[:100]], "accuracy", 0.15)[0] == U.conformal_quantile(r, 0.15)
    # alpha = .25: rank ceil(5 x .75) = 4 of the bin's 4 scores, the bin's own quantile (finite)
    assert np.isfinite(ci.quantiles([X_U[:100]], "accuracy", 0.25)[0])


def test_calibration_size_is_capped(gaussian_problem):
    """A sample larger than max_cal_size gets the half-width of a sample of max_cal_size items (its calibration
    and bins), computed once; the floor is still at the sample's own size."""
    h, X_V, y_V, X_U, _ = gaussian_problem
    full = experiment.make_method("LEAP_ACC", h, random_state=0).fit(X_V, y_V)
    ci = U.ConformalInterval(experiment.make_method("LEAP_ACC", h), scheme="rates", n_splits=3, n_cal=40, bins=2,
                             bin_by="prevalence", max_cal_size=150, random_state=0).fit(X_V, y_V, point_estimator=full)
    big, small = X_U[:600], X_U[600:750]
    q_big = ci.quantiles([big], "accuracy", 0.1)[0]
    assert set(ci.calibration_) == {(150, "accuracy")}  # no calibration at 600 items
    # the cap's bins and scores: the same quantile as a 150-item sample with the 600-item sample's shift proxy
    c = ci._calibration(150, "accuracy")
    r = ci._residuals(150, "accuracy")
    gamma = np.bincount(h.predict(big), minlength=2) / 600
    edges = np.quantile(c["prev_dist"], [0.5])
    b = np.searchsorted(edges, ci._test_dist(gamma, None), side="right")
    assert q_big == U.conformal_quantile(r[np.searchsorted(edges, c["prev_dist"], side="right") == b], 0.1)
    assert ci.quantiles([small], "accuracy", 0.1)[0] > 0 and set(ci.calibration_) == {(150, "accuracy")}
    # without the cap, 600 items are calibrated at 600 (narrower: less sampling noise than 150 items)
    exact = ci.with_options(False, bins=2, bin_by="prevalence")
    exact.max_cal_size = None
    exact.calibration_ = {}
    assert exact.quantiles([big], "accuracy", 0.1)[0] < q_big and (600, "accuracy") in exact.calibration_
    with pytest.raises(ValueError, match="max_cal_size"):
        U.ConformalInterval(experiment.make_method("LEAP_ACC", h), scheme="rates", max_cal_size=1).fit(X_V, y_V)


def test_split_scores_by_hand():
    import pandas as pd
    # one dataset, two splits of 2 samples, alpha = .5; split 0's errors +.1, +.1 (a bias), split 1's -.1, +.3
    r = pd.DataFrame({"dataset": "a", "construction": "c", "task": "binary", "split": [0, 0, 1, 1],
                      "true": [0.5, 0.5, 0.5, 0.5], "predicted": [0.6, 0.6, 0.4, 0.8],
                      "lower": [0.45, 0.55, 0.3, 0.6], "upper": [0.75, 0.65, 0.45, 0.9]})
    out = U.split_scores(r, alpha=0.5, by=["task"]).iloc[0]
    # per split (dataset_scores' oracle): 2 * median(.1, .1) = .2 and 2 * median(.1, .3) = .4
    assert out["oracle_split"] == pytest.approx(0.3)
    # without the split: 2 * median(.1, .1, .1, .3) = .2
    assert out["oracle"] == pytest.approx(0.2)
    # covered: the first sample of split 0 only
    assert out["C"] == 0.25 and out["worst_split_C"] == 0.0 and out["splits"] == 2 and out["n"] == 4
    # the splits' coverages .5 and 0: standard deviation sqrt(.125), over sqrt(2)
    assert out["C_se"] == pytest.approx(0.25)
    assert np.isnan(U.split_scores(r[r.split == 0], alpha=0.5, by=["task"]).iloc[0]["C_se"])  # one split
    assert out["A"] == pytest.approx((0.3 + 0.1 + 0.15 + 0.3) / 4)
    # squared split means .01 (x2) and .01 (x2) over squared errors .01 + .01 + .01 + .09
    assert out["bias_share"] == pytest.approx(0.04 / 0.12)
    assert out["AE"] == pytest.approx(0.15)
    pooled = U.compare_constructions(U.split_scores(r, alpha=0.5, by=["task"]), by=["task"]).iloc[0]
    assert pooled["ratio"] == pytest.approx(out["A"] / 0.2)
    # no error at all: no bias share
    exact = r.assign(predicted=r["true"])
    assert U.split_scores(exact, alpha=0.5, by=["task"]).iloc[0]["bias_share"] == 0.0
    with pytest.raises(ValueError, match="'split' column"):
        U.split_scores(r.drop(columns="split"))
    with pytest.raises(ValueError, match="alpha"):
        U.split_scores(r, alpha=1.5)


def test_union_floor_contains_the_evidence_interval(gaussian_problem):
    # floor="union": the reach floor's interval, extended to contain the evidence interval itself, and no more
    from capshift.conformal import acc_prevalence, evidence_interval
    h, X_V, y_V, X_U, y_U = gaussian_problem
    ci = U.ConformalInterval(experiment.make_method("LEAP_ACC", h), scheme="rates", n_splits=2, n_cal=40,
                             random_state=0).fit(X_V, y_V)
    samples = [X_U[:100], X_U[100:400]]
    # point predictions placed off the evidence's centre, below and above it
    point = np.array([0.5, 0.97])
    reach = ci.with_options(False, floor=True).bounds(samples, point, "accuracy", 0.05)
    union = ci.with_options(False, floor="union").bounds(samples, point, "accuracy", 0.05)
    for i, X in enumerate(samples):
        g = np.bincount(h.predict(X), minlength=2) / len(X)
        lo, hi = evidence_interval(ci.val_counts_, acc_prevalence(ci.val_counts_, g), len(X), 0.05, "accuracy")[:2]
        assert union[i, 0] == pytest.approx(max(min(reach[i, 0], lo), 0.0))
        assert union[i, 1] == pytest.approx(min(max(reach[i, 1], hi), 1.0))
    assert union[0, 1] > reach[0, 1] and union[1, 0] < reach[1, 0]  # each reaches back to the evidence
    assert ci.with_options(False, floor="union").floor == "union"
    with pytest.raises(TypeError, match='True, False, "union" or "auto"'):
        ci.with_options(False, floor="Union")


def test_coverage_floor_verdicts_with_the_records_power():
    import pandas as pd
    rows = pd.DataFrame({"task": "binary", "construction": ["c"] * 3 + ["d"] * 2 + ["e"],
                         "dataset": ["a", "b", "x", "a", "b", "a"],
                         "C": [0.95, 0.80, 0.70, 0.90, 0.86, 0.84], "C_se": [0.01, 0.02, 0.20, 0.01, 0.01, np.nan]})
    out = U.coverage_floor(rows, by=["task"]).set_index("construction")
    # c: b is below .85 by .05 > 2 x .02 (missed); x is below but within 2 x .20
    assert out.loc["c", "verdict"] == "missed" and out.loc["c", "below"] == "b, x"
    assert out.loc["c", "clearly_below"] == "b" and out.loc["c", "lowest"] == 0.70
    assert out.loc["d", "verdict"] == "met" and out.loc["d", "below"] == ""
    # one split (C_se NaN): a dataset below the floor is below it
    assert out.loc["e", "verdict"] == "missed"
    wide = U.coverage_floor(rows.assign(C_se=rows.C_se * 3), by=["task"]).set_index("construction")
    assert wide.loc["c", "verdict"] == "not enough evidence" and wide.loc["c", "clearly_below"] == ""
    assert U.coverage_floor(rows, floor=0.8, by=["task"]).set_index("construction").loc["c", "below"] == "x"
    assert U.coverage_floor(rows, z=0.0, by=["task"]).set_index("construction").loc["c", "clearly_below"] == "b, x"
    with pytest.raises(ValueError, match="z must be"):
        U.coverage_floor(rows, z=-1, by=["task"])
    with pytest.raises(ValueError, match="floor"):
        U.coverage_floor(rows, floor=1.5, by=["task"])
    with pytest.raises(ValueError, match="C_se"):
        U.coverage_floor(rows.drop(columns="C_se"), by=["task"])


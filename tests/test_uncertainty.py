"""Tests of capshift.uncertainty: the conformal quantile, split-conformal coverage on exchangeable synthetic data,
the paper's bootstrap interval (its resamples, seed and quantile levels), the propagated interval step by step,
interval_experiment's rows kind by kind, Table 3's scores and the study's summaries (coverage, width, Winkler
score, per-dataset and per-split figures, the coverage floor's verdicts) by hand, and the errors' messages."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).parent))
from _synthetic import problem, split  # noqa: E402

from capshift import experiment, protocols, uncertainty as U  # noqa: E402
from capshift.tables import accuracy, contingency_table  # noqa: E402


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
    for name in ("O-LEAP_KDEy", "LEAP_ACC", "S-LEAP_CC"):
        assert registry.make_method(name, h).interval_params == conformal.RATES_INTERVALS, name
    # the CBPE family: the same, with the method's own response as the rate term for two classes
    assert conformal.CBPE_INTERVALS == {**conformal.RATES_INTERVALS, "rate_model": "auto"}
    for name in ("SLD-CBPE", "CBPE", "L-CBPE", "BCTS-CBPE"):
        assert registry.make_method(name, h).interval_params == conformal.CBPE_INTERVALS, name
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



# ------------------------------------------------------------ interval_experiment: Table 3's protocol, kind by kind
def test_interval_experiment_rows_are_the_documented_constructions():
    """Every kind's rows are the construction its docstring names, with the run's alpha, measure, sizes and seed:
    rebuilt here from the public pieces (the UPP samples of evaluation.prepare, bootstrap_interval,
    propagated_interval, ConformalInterval). "conformal" comes first: its method is fitted on half of V, and the
    later kinds' point prediction is still the method fitted on all of V; the Monte Carlo kinds share the fits of
    the first one ("conformal-mc-stud": its score and floor are not the defaults), and the others are its options."""
    from capshift import evaluation, registry
    from capshift.conformal import unfitted_copy
    from capshift.tables import f1
    sp = split()
    kinds = ["conformal", "bootstrap", "conformal-mc-stud", "conformal-mc-pool", "conformal-mc-bins", "conformal-mc",
             "conformal-mc-floor", "conformal-mc-both", "propagated", "conformal-refit", "conformal-cv",
             "residual-bootstrap", "conformal-rates"]
    r = U.interval_experiment(sp, methods=["S-LEAP_CC"], kinds=kinds, classifier="lr", n_samples=5, sample_size=100,
                              alpha=0.2, n_boot=20, n_boot_samples=2, n_cal=20, n_splits=3, measure="f1", seed=1)
    assert list(r.columns) == ["dataset", "method", "kind", "sample", "true", "predicted", "lower", "upper", "ae"]
    assert list(r["kind"].unique()) == kinds
    assert set(r["dataset"]) == {"synthetic"} and set(r["method"]) == {"S-LEAP_CC"}
    ctx = evaluation.prepare(sp, "lr", [], "upp", 5, 100, 1)
    samples, true = ctx.samples(), np.array([f1(T) for T in ctx.true_tables])
    base = registry.make_method("S-LEAP_CC", ctx.h, random_state=1)
    full = unfitted_copy(base, 1).fit(sp.X_V, sp.y_V)
    expect = {}
    for kind, interval in (("bootstrap", U.bootstrap_interval), ("propagated", U.propagated_interval)):
        # the first n_boot_samples samples only, each with the seed + its index
        expect[kind] = (full.predict_batch(samples[:2], "f1"),
                        [interval(full, X, 0.2, 20, "f1", random_state=1 + k) for k, X in enumerate(samples[:2])])
    # kind: ConformalInterval's (scheme, refit, n_splits); the Monte Carlo kinds share one set of fits
    settings = {"conformal": ("split", False, 5), "conformal-refit": ("split", True, 5),
                "conformal-cv": ("cv", False, 5), "residual-bootstrap": ("bootstrap", False, 5),
                "conformal-mc": ("mc", False, 3)}
    for kind, (scheme, refit, n_splits) in settings.items():
        ci = U.ConformalInterval(base, n_cal=20, refit=refit, scheme=scheme, n_splits=n_splits, random_state=1)
        ci.fit(sp.X_V, sp.y_V, point_estimator=None if kind == "conformal" else full)
        expect[kind] = (ci.estimator_.predict_batch(samples, "f1"), ci.predict_interval_batch(samples, 0.2, "f1"))
    mc = ci
    for kind, options in {"conformal-mc-pool": (True,), "conformal-mc-bins": (False, 4),
                          "conformal-mc-floor": (False, 1, "absolute", True),
                          "conformal-mc-stud": (False, 1, "studentised", True),
                          "conformal-mc-both": (False, 1, "both", True)}.items():
        expect[kind] = (expect["conformal-mc"][0], mc.with_options(*options).predict_interval_batch(samples, 0.2, "f1"))
    rates = U.ConformalInterval(base, n_cal=20, scheme="rates", n_splits=3, bins=4, floor=True, bin_by="prevalence",
                                random_state=1).fit(sp.X_V, sp.y_V, point_estimator=full)
    expect["conformal-rates"] = (full.predict_batch(samples, "f1"), rates.predict_interval_batch(samples, 0.2, "f1"))
    for kind in kinds:
        got, (point, bounds) = r[r["kind"] == kind], expect[kind]
        k = len(point)
        assert list(got["sample"]) == list(range(k)), kind
        np.testing.assert_allclose(got["true"], true[:k], rtol=0, atol=1e-12, err_msg=kind)
        np.testing.assert_allclose(got["predicted"], point, rtol=0, atol=1e-12, err_msg=kind)
        np.testing.assert_allclose(got[["lower", "upper"]], bounds, rtol=0, atol=1e-12, err_msg=kind)
        np.testing.assert_allclose(got["ae"], np.abs(point - true[:k]), rtol=0, atol=1e-12, err_msg=kind)
    # the half of V the split kind fits on gives another point prediction than all of V; "conformal-rates" bins by
    # the estimated prevalence (by the prediction, its intervals would differ here)
    assert not np.allclose(expect["conformal"][0], full.predict_batch(samples, "f1"))
    by_pred = rates.with_options(False, bins=4, floor=True).predict_interval_batch(samples, 0.2, "f1")
    assert not np.allclose(by_pred, expect["conformal-rates"][1])


# --------------------------------------------------- interval_scores, winkler_score: coverage, width and score by hand
def test_interval_scores_by_hand_with_the_round_off_slack():
    # widths .2, 0, .2, .1; covered: inside, on a zero-width interval, missed above, on the lower bound
    s = U.interval_scores([0.1, 0.2, 0.5, 0.3], [0.3, 0.2, 0.7, 0.4], [0.2, 0.2, 0.8, 0.3])
    assert s["A"] == pytest.approx(0.125) and s["C"] == 0.75
    one = U.interval_scores([0.1], [0.3], [0.2])  # a single interval
    assert one["A"] == pytest.approx(0.2) and one["C"] == 1.0
    # bounds that are clipped sums: lower above upper, or true beyond a bound, by 1e-12 is round-off, not a miss
    eps = 0.5 + 1e-12
    assert U.interval_scores([eps], [0.5], [0.5])["C"] == 1.0
    assert U.interval_scores([0.4], [0.5], [eps])["C"] == 1.0
    assert U.interval_scores([0.5 + 3e-12], [0.6], [0.5])["C"] == 0.0
    # read as floats: 0/1 bounds given as booleans are the interval [0, 1]
    assert U.interval_scores([False, False], [True, True], [True, False]) == {"A": 1.0, "C": 1.0}
    with pytest.raises(ValueError, match=r"^lower must not exceed upper$"):
        U.interval_scores([0.5 + 3e-12], [0.5], [0.5])
    with pytest.raises(ValueError, match=r"1-d arrays of one shape, got \(1, 1\), \(1, 1\), \(1, 1\)"):
        U.interval_scores([[0.1]], [[0.2]], [[0.15]])
    with pytest.raises(ValueError, match=r"1-d arrays of one shape, got \(0,\)"):
        U.interval_scores([], [], [])


def test_winkler_score_on_the_bounds_and_its_errors():
    from fractions import Fraction
    # alpha = .2: a miss costs 2 / .2 = 10 times its distance to the bound it misses; on a bound is no miss
    w = U.winkler_score([0.2] * 4, [0.4] * 4, [0.2, 0.4, 0.1, 0.55], alpha=0.2)
    np.testing.assert_allclose(w, [0.2, 0.2, 0.2 + 10 * 0.1, 0.2 + 10 * 0.15], rtol=0, atol=1e-12)
    # lower above upper by round-off (1e-12) is accepted
    assert U.winkler_score([0.5 + 1e-12], [0.5], [0.5], alpha=0.2)[0] == pytest.approx(0.0, abs=1e-10)
    # any real numbers, read as floats
    assert U.winkler_score([Fraction(1, 5)], [Fraction(2, 5)], [Fraction(1, 2)], alpha=0.5)[0] == pytest.approx(0.6)
    with pytest.raises(ValueError, match=r"^lower, upper and true must be 1-d arrays of one shape, got \(2,\), \(1,\), "
                                         r"\(1,\)$"):
        U.winkler_score([0.1, 0.2], [0.3], [0.2])
    with pytest.raises(ValueError, match=r"got \(1, 1\), \(1, 1\), \(1, 1\)"):
        U.winkler_score([[0.1]], [[0.2]], [[0.15]])
    with pytest.raises(ValueError, match=r"^lower, upper and true must be finite \(an unbounded side: clip it to the "
                                         r"measure's range\)$"):
        U.winkler_score([0.1], [np.inf], [0.2])
    with pytest.raises(ValueError, match=r"^lower must not exceed upper$"):
        U.winkler_score([0.5 + 3e-12], [0.5], [0.5])
    with pytest.raises(ValueError, match=r"^alpha must be in \(0.0, 1.0\), got 1.0$"):
        U.winkler_score([0.1], [0.2], [0.15], alpha=1.0)


# ------------------------------------------------ dataset_scores, coverage_floor, compare_constructions: by hand
def _scores_frame():
    import pandas as pd
    # dataset b (first), then a; alpha = .5 makes a miss cost 4 times its distance
    return pd.DataFrame({"task": "binary", "construction": "c", "dataset": ["b", "b", "a", "a", "a"],
                         "true": [0.5] * 5, "predicted": [0.6, 0.5, 0.5, 0.7, 0.4],
                         "lower": [0.55, 0.4, 0.45, 0.65, 0.3], "upper": [0.7, 0.6, 0.55, 0.75, 0.45]})


def test_dataset_scores_per_dataset_by_hand():
    out = U.dataset_scores(_scores_frame(), alpha=0.5, by=["task"])
    assert list(out.columns) == ["task", "construction", "dataset", "C", "A", "W", "AE", "n", "oracle"]
    assert list(out["dataset"]) == ["b", "a"]  # in order of appearance
    b, a = out.iloc[0], out.iloc[1]
    # b: .5 below [.55, .7] by .05 (W .15 + .2), inside [.4, .6] (W .2); errors .1 and 0
    assert b["C"] == 0.5 and b["n"] == 2
    assert (b["A"], b["W"], b["AE"]) == pytest.approx((0.175, 0.275, 0.05))
    assert b["oracle"] == pytest.approx(2 * 0.05)  # twice the median of (.1, 0)
    # a: inside, below [.65, .75] by .15 (W .1 + .6), above [.3, .45] by .05 (W .15 + .2); errors 0, .2, .1
    assert a["C"] == pytest.approx(1 / 3) and a["n"] == 3
    assert (a["A"], a["W"], a["AE"]) == pytest.approx((0.35 / 3, 1.15 / 3, 0.1))
    assert a["oracle"] == pytest.approx(2 * 0.1)
    with pytest.raises(ValueError, match=r"^alpha must be in \(0.0, 1.0\), got 1.5$"):
        U.dataset_scores(_scores_frame(), alpha=1.5, by=["task"])
    with pytest.raises(ValueError, match=r"^alpha must be in"):
        U.split_scores(_scores_frame().assign(split=0), alpha=0, by=["task"])
    with pytest.raises(ValueError, match=r"^results must have a 'split' column \(the seed of each sample's L/V/U "
                                         r"split\)$"):
        U.split_scores(_scores_frame(), by=["task"])


def test_coverage_floor_verdicts_at_the_boundary():
    import pandas as pd
    # floor .75, z = 2 (exact binary fractions): m has a dataset exactly at the floor, n one exactly 2 standard
    # errors below it, x one just more than 2 below it
    rows = pd.DataFrame({"task": "binary", "construction": ["x", "x", "m", "m", "n"],
                         "dataset": ["a", "b", "a", "b", "a"], "C": [0.9, 0.5, 0.75, 1.0, 0.5],
                         "C_se": [0.0, 0.12, 0.0, 0.0, 0.125]})
    out = U.coverage_floor(rows, floor=0.75, z=2.0, by=["task"])
    assert list(out["construction"]) == ["x", "m", "n"]  # in order of appearance
    assert list(out["verdict"]) == ["missed", "met", "not enough evidence"]
    assert list(out["below"]) == ["b", "", "a"] and list(out["clearly_below"]) == ["b", "", ""]
    assert list(out["lowest"]) == [0.5, 0.75, 0.5]
    # z is a number of standard errors in [0, 10]
    assert list(U.coverage_floor(rows, floor=0.75, z=10.0, by=["task"])["verdict"]) == \
        ["not enough evidence", "met", "not enough evidence"]
    with pytest.raises(ValueError, match=r"^z must be in \[0.0, 10.0\], got 10.5$"):
        U.coverage_floor(rows, z=10.5, by=["task"])
    with pytest.raises(ValueError, match=r"^floor must be in \(0.0, 1.0\), got 1.5$"):
        U.coverage_floor(rows, floor=1.5, by=["task"])


def test_compare_constructions_pairs_rows_by_key():
    import pandas as pd
    per = pd.DataFrame({"task": "binary", "construction": ["d", "d", "c"], "dataset": ["a", "b", "a"],
                        "C": [0.5, 1.0, 0.8], "A": [0.2, 0.1, 0.3], "W": [0.3, 0.1, 0.4], "oracle": [0.1, 0.3, 0.2],
                        "n": [2, 2, 5]})  # exactly the columns it needs
    out = U.compare_constructions(per, by=["task"])
    assert list(out["construction"]) == ["d", "c"]  # in order of appearance
    d, c = out.iloc[0], out.iloc[1]
    # d: weighted by the datasets' samples; the datasets as clusters: sd(.5, 1) / sqrt(2) = .25
    assert (d["C"], d["A"], d["W"], d["oracle"], d["ratio"]) == pytest.approx((0.75, 0.15, 0.2, 0.2, 0.75))
    assert d["C_se"] == pytest.approx(0.25) and (d["worst_C"], d["worst"], d["datasets"], d["n"]) == (0.5, "a", 2, 4)
    # c: one dataset, no spread between datasets
    assert c["C_se"] == 0.0 and (c["worst_C"], c["worst"], c["datasets"], c["n"]) == (0.8, "a", 1, 5)
    assert c["ratio"] == pytest.approx(1.5)
    # shuffled rows, with their own index (here the dataset column itself): the same figures per construction
    for shuffled in (per.iloc[[2, 1, 0]], per.iloc[[1, 2, 0]].set_index("dataset", drop=False)):
        again = U.compare_constructions(shuffled, by=["task"]).set_index("construction").loc[["d", "c"]]
        pd.testing.assert_frame_equal(again.reset_index()[out.columns], out)


# ---------------------------------------- summarise_intervals, error_structure, coverage_by_scale: by hand
def test_summarise_intervals_by_hand():
    import pandas as pd
    cols = ["dataset", "method", "kind", "sample", "true", "predicted", "lower", "upper"]
    rows = [("b", "M", "conformal-mc", 0, 0.5, 0.6, 0.4, 0.7), ("b", "M", "conformal-mc", 1, 0.5, 0.5, 0.45, 0.55),
            ("b", "M", "conformal-mc", 2, 0.5, 0.8, 0.6, 0.9),
            ("b", "M", "conformal-cv", 0, 0.5, 0.6, 0.5, 0.7), ("b", "M", "conformal-cv", 1, 0.5, 0.5, 0.4, 0.6),
            ("b", "M", "conformal-cv", 2, 0.5, 0.8, 0.3, 0.9),
            ("b", "M", "conformal", 0, 0.5, 0.55, 0.5, 0.6), ("b", "M", "conformal", 1, 0.5, 0.45, 0.4, 0.5),
            ("b", "M", "conformal", 2, 0.5, 0.5, 0.45, 0.55),
            ("b", "M", "bootstrap", 0, 0.5, 0.6, 0.58, 0.62),
            ("a", "M", "conformal-mc", 0, 0.9, 0.85, 0.8, 0.9), ("a", "M", "conformal-mc", 1, 0.9, 0.9, 0.85, 0.95)]
    r = pd.DataFrame(rows, columns=cols)
    r["ae"] = (r["predicted"] - r["true"]).abs()
    out = U.summarise_intervals(r, alpha=0.5)
    assert list(out.columns) == ["dataset", "method", "kind", "AE", "A", "C", "n"]
    assert list(out.index) == list(range(7))
    assert list(zip(out["dataset"], out["kind"])) == [("b", "conformal-mc"), ("b", "conformal-cv"), ("b", "conformal"),
                                                      ("b", "bootstrap"), ("a", "conformal-mc"), ("b", "oracle"),
                                                      ("a", "oracle")]
    np.testing.assert_allclose(out["A"], [0.7 / 3, 1 / 3, 0.1, 0.04, 0.1, 0.2, 0.05], rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["C"], [2 / 3, 1.0, 1.0, 0.0, 1.0, 0.5, 0.5], rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["AE"], [0.4 / 3, 0.4 / 3, 0.1 / 3, 0.1, 0.025, 0.4 / 3, 0.025], rtol=0, atol=1e-12)
    # the oracle: each sample once (the kinds on all of V share its point prediction), twice the 1-alpha quantile of
    # its absolute errors (b: median of .1, 0, .3; a: of .05, 0); the split kind and the bootstrap are not its reference
    assert list(out["n"]) == [3, 3, 3, 1, 2, 3, 2]
    with pytest.raises(ValueError, match=r"^alpha must be in \(0.0, 1.0\), got 0$"):
        U.summarise_intervals(r, alpha=0)
    with pytest.raises(ValueError, match="columns"):
        U.summarise_intervals(r.drop(columns="ae"))


def test_error_structure_ratio_and_coverage_by_hand():
    # b (first): errors .1 and .3, bias .2, spread sd(.1, .3) = sqrt(.02); a: no error at all
    r = _results([("b", "M", "k", 0.5, 0.6, 0.4, 0.7), ("b", "M", "k", 0.5, 0.8, 0.7, 0.9),
                  ("a", "M", "k", 0.5, 0.5, 0.5, 0.5), ("a", "M", "k", 0.5, 0.5, 0.5, 0.5)])
    s = U.error_structure(r)
    assert list(s.columns) == ["dataset", "method", "kind", "bias", "spread", "ratio", "C"]
    assert list(s["dataset"]) == ["b", "a"]  # in order of appearance
    b, a = s.iloc[0], s.iloc[1]
    assert (b["bias"], b["spread"], b["ratio"]) == pytest.approx((0.2, np.sqrt(0.02), 0.2 / np.sqrt(0.02)))
    assert b["C"] == 0.5 and a["C"] == 1.0  # a's samples lie on their (zero-width) intervals
    assert a["spread"] == 0.0 and a["ratio"] == np.inf  # no spread: inf, even with no bias


def test_coverage_by_scale_bounds_ends_and_order():
    from fractions import Fraction
    import pandas as pd
    one = 1.0 - 1e-12
    r = _results([
        # k2, b: true above the point; the upper side shrinks with the scale (covered at 1, missed at .5)
        ("b", "M", "k2", 0.58, 0.5, 0.4, 0.6),
        # k2, a: a lower bound at 0 stays there (true 0 stays covered)
        ("a", "M", "k2", 0.0, 0.05, 0.0, 0.1),
        # k1: bounds within round-off (1e-12) of the range's ends count as at the ends
        ("b", "M", "k1", 0.0, 0.1, 1e-12, 0.2), ("a", "M", "k1", one, 0.9, 0.8, one)])
    c = U.coverage_by_scale(r, [1.0, 0.5])
    assert list(c.columns) == ["method", "kind", "scale", "mean_C", "min_C", "worst"]
    assert list(zip(c["kind"], c["scale"])) == [("k2", 1.0), ("k2", 0.5), ("k1", 1.0), ("k1", 0.5)]
    assert list(c["mean_C"]) == [1.0, 0.5, 1.0, 1.0] and list(c["min_C"]) == [1.0, 0.0, 1.0, 1.0]
    assert list(c["worst"]) == ["b"] * 4  # a tie goes to the first dataset in order of appearance
    # scales are any positive reals, read as floats
    pd.testing.assert_frame_equal(U.coverage_by_scale(r, [Fraction(1, 2)]), c[c["scale"] == 0.5].reset_index(drop=True))
    for bad in ([], [np.inf], [[1.0, 2.0]], [-1.0]):
        with pytest.raises(ValueError, match=r"^scales must be a non-empty list of positive finite factors, got "):
            U.coverage_by_scale(r, bad)


# ------------------------------------- bootstrap_interval, bootstrap_prevalences, propagated_interval: draws and errors
class _FirstColumnMean:
    """A fitted stand-in for a CAP estimator: its prediction for a sample is the mean of the sample's first column
    (so a resample's prediction tells which items it drew); it records what it was asked."""
    val_table_ = None

    def __init__(self):
        self.calls = []

    def predict_batch(self, samples, measure=None):
        self.calls.append((samples, measure))
        return np.array([X[:, 0].mean() for X in samples])


def test_bootstrap_interval_resamples_items_and_takes_the_alpha_quantiles():
    X = np.column_stack([np.arange(5) / 4, np.zeros(5)])  # item i has first feature i / 4
    est = _FirstColumnMean()
    lo, hi = U.bootstrap_interval(est, X, alpha=0.2, n_boot=50, measure="f1", random_state=3)
    samples, measure = est.calls[0]
    assert measure == "f1" and len(samples) == 50 and all(s.shape == (5, 2) for s in samples)
    # each resample: 5 of the sample's items with replacement, every item among them
    drawn = np.concatenate([np.rint(s[:, 0] * 4).astype(int) for s in samples])
    assert set(drawn) == set(range(5)) and any(len(set(s[:, 0])) < 5 for s in samples)
    values = [s[:, 0].mean() for s in samples]
    assert (lo, hi) == (np.quantile(values, 0.1), np.quantile(values, 0.9))
    assert 0 < lo < hi < 1
    # the seed chooses the resamples: the same seed the same interval, another seed others
    assert U.bootstrap_interval(est, X, alpha=0.2, n_boot=50, measure="f1", random_state=3) == (lo, hi)
    U.bootstrap_interval(est, X, alpha=0.2, n_boot=50, measure="f1", random_state=4)
    assert not all(np.array_equal(a, b) for a, b in zip(est.calls[-1][0], samples))
    # the defaults: alpha .05, 500 resamples, seed 0, the estimator's own measure
    assert U.bootstrap_interval(est, X) == U.bootstrap_interval(est, X, 0.05, 500, None, 0)
    assert len(est.calls[-2][0]) == 500 and est.calls[-2][1] is None
    assert len(U.bootstrap_interval(est, X, n_boot=2)) == 2  # the fewest resamples
    # predictions outside [0, 1] are clipped to it
    assert U.bootstrap_interval(est, X - 2, n_boot=20) == (0.0, 0.0)
    assert U.bootstrap_interval(est, X + 2, n_boot=20) == (1.0, 1.0)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"alpha": 0.0}, ValueError, r"^alpha must be in \(0.0, 1.0\), got 0.0$"),
    ({"n_boot": 1}, ValueError, r"^n_boot must be >= 2, got 1$"),
    ({"random_state": "a"}, TypeError, r"^random_state must be an int"),
    ({"X": np.zeros((0, 2))}, ValueError, r"^X is empty"),
])
def test_bootstrap_interval_errors_name_the_argument(kwargs, exc, match):
    args = {"X": np.zeros((4, 2)), **kwargs}
    with pytest.raises(exc, match=match):
        U.bootstrap_interval(_FirstColumnMean(), **args)


def test_bootstrap_prevalences_defaults_errors_and_the_simplex(gaussian_problem):
    from quapy.method.aggregative import CC
    from capshift.quantifiers import Quantifier
    from sklearn.exceptions import NotFittedError
    h, X_V, y_V, X_U, _ = gaussian_problem
    est = experiment.make_method("S-LEAP_CC", h).fit(X_V, y_V)
    q = U.bootstrap_prevalences(est, X_U[:100])
    assert q.shape == (500, 2) and np.array_equal(q, U.bootstrap_prevalences(est, X_U[:100], 500, 0))
    assert U.bootstrap_prevalences(est, X_U[:100], n_boot=2).shape == (2, 2)
    with pytest.raises(ValueError, match=r"^n_boot must be >= 2, got 1$"):
        U.bootstrap_prevalences(est, X_U[:100], n_boot=1)
    with pytest.raises(TypeError, match=r"^random_state must be an int"):
        U.bootstrap_prevalences(est, X_U[:100], random_state="a")
    with pytest.raises(NotFittedError, match="LEAP"):
        U.bootstrap_prevalences(experiment.make_method("S-LEAP_CC", h), X_U[:100])
    # a fit that failed half-way (after setting n_features_in_) leaves the method unfitted
    broken = experiment.make_method("S-LEAP_CC", h, measure="no such measure")
    with pytest.raises(ValueError, match="unknown measure"):
        broken.fit(X_V, y_V)
    with pytest.raises(NotFittedError, match="LEAP"):
        U.bootstrap_prevalences(broken, X_U[:100])
    with pytest.raises(TypeError, match=r"^DoC has no QuaPy quantifier to bootstrap: pass a LEAP-family method with a "
                                        r"quantifier other than 'oracle'$"):
        U.bootstrap_prevalences(experiment.make_method("DoC", h).fit(X_V, y_V), X_U[:100])

    class Stretched(CC):
        """CC's estimate stretched off the simplex: 2 p - 1/4 (negative when p < 1/8)."""
        def aggregate(self, classif_predictions):
            return 2 * super().aggregate(classif_predictions) - 0.25

    odd = experiment.make_method("S-LEAP_CC", h, quantifier=Quantifier(Stretched(h, fit_classifier=False), h))
    odd.fit(X_V, y_V)
    # a sample of 8 items, one of class 1 by h: some resamples have no item of class 1 (CC's p = 0 -> -1/4)
    X = np.concatenate([X_U[h.predict(X_U) == 0][:7], X_U[h.predict(X_U) == 1][:1]])
    p = U.bootstrap_prevalences(est, X, n_boot=50, random_state=2)
    raw = np.clip(2 * p - 0.25, 0, None)
    assert np.any(p[:, 1] == 0)
    np.testing.assert_allclose(U.bootstrap_prevalences(odd, X, n_boot=50, random_state=2),
                               raw / raw.sum(axis=1, keepdims=True), rtol=0, atol=1e-12)


def _propagated_by_hand(est, X, alpha, n_boot, measure, seed):
    """propagated_interval's four steps, written out: 1. the quantifier's bootstrap; 2. the tables at (gamma, q*);
    3. the sample's true labels, per class h predicts, multinomial given the table's column (uniform for a class h
    never predicts: it draws nothing); 4. the alpha/2 and 1 - alpha/2 quantiles of the measure."""
    from capshift.tables import get_measure
    q = U.bootstrap_prevalences(est, X, n_boot, seed)
    n = est.n_classes_
    counts = np.bincount(est.classifier.predict(X), minlength=n)
    tables = est.tables_from_prevalences(np.repeat([counts / counts.sum()], n_boot, axis=0), q)
    col = tables / tables.sum(axis=1, keepdims=True)
    col[:, :, counts == 0] = 1 / n
    rng = np.random.default_rng([seed, 2])
    draws = np.stack([rng.multinomial(counts[j], col[:, :, j]) for j in range(n)], axis=2)
    return tuple(np.quantile(get_measure(measure)(draws / counts.sum()), [alpha / 2, 1 - alpha / 2]))


def test_propagated_interval_is_the_documented_construction(gaussian_problem):
    h, X_V, y_V, X_U, _ = gaussian_problem
    est = experiment.make_method("S-LEAP_CC", h).fit(X_V, y_V)
    pred = h.predict(X_U)
    # 30 items h predicts as class 0 and one as class 1; 200 items (many distinct F1 values); class 0 only
    for X, alpha, measure in ((np.concatenate([X_U[pred == 0][:30], X_U[pred == 1][:1]]), 0.2, "f1"),
                              (X_U[:200], 0.5, "f1"), (X_U[pred == 0][:30], 0.2, "accuracy")):
        lo, hi = U.propagated_interval(est, X, alpha=alpha, n_boot=40, measure=measure, random_state=1)
        assert (lo, hi) == pytest.approx(_propagated_by_hand(est, X, alpha, 40, measure, 1), abs=1e-12)
    assert lo == hi == 1.0  # h predicts class 0 only, and the bootstrap of CC sees class 0 only
    lo, hi = U.propagated_interval(est, X_U[:200], alpha=0.5, n_boot=40, measure="f1", random_state=1)
    assert 0 < lo < hi < 1
    # three classes, one of which h never predicts in the sample
    h3, X_V3, y_V3, X_U3, _ = problem(3)
    est3 = experiment.make_method("S-LEAP_CC", h3).fit(X_V3, y_V3)
    X3 = X_U3[h3.predict(X_U3) != 2][:60]
    assert np.bincount(h3.predict(X3), minlength=3)[2] == 0
    assert U.propagated_interval(est3, X3, alpha=0.2, n_boot=40, random_state=1) == \
        pytest.approx(_propagated_by_hand(est3, X3, 0.2, 40, "accuracy", 1), abs=1e-12)
    # the defaults: alpha .05, 500 draws, seed 0, the estimator's measure (here F1: many distinct values)
    est_f1 = experiment.make_method("S-LEAP_CC", h, measure="f1").fit(X_V, y_V)
    assert U.propagated_interval(est_f1, X_U[:200]) == U.propagated_interval(est_f1, X_U[:200], 0.05, 500, "f1", 0)
    with pytest.raises(ValueError, match=r"^alpha must be in \(0.0, 1.0\), got 1.0$"):
        U.propagated_interval(est, X_U[:200], alpha=1.0)
    cot = experiment.make_method("Q-COT", h, quantifier="cc").fit(X_V, y_V)
    with pytest.raises(TypeError, match=r"^COT does not build tables from prevalences: use a LEAP-family method$"):
        U.propagated_interval(cot, X_U[:200])


def test_interval_experiment_defaults_and_errors():
    import pandas as pd
    # the defaults of the cheap arguments: classifier "lr", alpha .05, accuracy, seed 0, 20 bootstrap samples;
    # "propagated" needs a method that builds tables from prevalences: DoC gets no rows of it, and its bootstrap
    kw = {"methods": ["DoC"], "kinds": ["propagated", "bootstrap"], "n_samples": 21, "sample_size": 40, "n_boot": 10}
    r = U.interval_experiment(split(), **kw)
    assert len(r) == 20 and list(r["sample"]) == list(range(20)) and set(r["kind"]) == {"bootstrap"}
    pd.testing.assert_frame_equal(r, U.interval_experiment(split(), **kw, classifier="lr", alpha=0.05,
                                                           measure="accuracy", n_boot_samples=20, seed=0))
    with pytest.raises(ValueError, match=re.escape(f"kinds must be among {list(U.KINDS)}, got ['a', 'b']")):
        U.interval_experiment(split(), kinds=["b", "a"], n_samples=2, sample_size=40)
    for name in ("n_samples", "sample_size", "n_boot_samples"):
        with pytest.raises(ValueError, match=rf"^{name} must be >= 1, got 0$"):
            U.interval_experiment(split(), **{name: 0})


def test_interval_experiment_gives_naive_and_the_oracle_no_propagated_rows():
    # both build tables from prevalences but have no QuaPy quantifier to bootstrap (the TypeError of
    # propagated_interval): no rows, as for the methods outside the LEAP family
    for name in ("Naive", "O-LEAP_oracle"):
        assert U.interval_experiment(split(), methods=[name], kinds=["propagated"], n_samples=2, sample_size=40).empty


def test_paired_winkler_by_hand():
    import pandas as pd
    # group g1: 3 datasets, differences -.3, -.2, -.1 (mean -.2, sd .1, se .1/sqrt 3 = .0577): lower by 3.5 se
    # group g2: differences +.1, -.1, +.3 (mean .1, se .2/sqrt 3 = .1155): not enough evidence; z = .5: higher
    # group g3: one dataset (se NaN): not enough evidence whatever the difference
    w_ref = {"g1": [1.0, 1.0, 1.0], "g2": [0.5, 0.5, 0.5], "g3": [2.0]}
    w_new = {"g1": [0.7, 0.8, 0.9], "g2": [0.6, 0.4, 0.8], "g3": [0.1]}
    rows = []
    for g in w_ref:
        for i, (a, b) in enumerate(zip(w_new[g], w_ref[g])):
            rows += [(g, f"d{i}", "new", a), (g, f"d{i}", "ref", b)]
    rows.append(("g1", "only-ref", "ref", 9.0))  # a dataset scored by one construction only does not count
    rows.append(("g1", "x", "other", 0.0))
    scores = pd.DataFrame(rows, columns=["cell", "dataset", "construction", "W"])
    out = U.paired_winkler(scores, "new", "ref", by=["cell"]).set_index("cell")
    assert list(out.index) == ["g1", "g2", "g3"]
    np.testing.assert_allclose(out["diff"], [-0.2, 0.1, -1.9], atol=1e-12)
    np.testing.assert_allclose(out.loc[["g1", "g2"], "se"], [0.1 / np.sqrt(3), 0.2 / np.sqrt(3)], atol=1e-12)
    assert np.isnan(out.loc["g3", "se"])
    np.testing.assert_allclose(out["ratio"], [0.8, 0.6 / 0.5, 0.05], atol=1e-12)
    assert list(out["datasets"]) == [3, 3, 1]
    assert list(out["verdict"]) == ["lower", "not enough evidence", "not enough evidence"]
    loose = U.paired_winkler(scores, "new", "ref", z=0.5, by=["cell"]).set_index("cell")
    assert list(loose["verdict"]) == ["lower", "higher", "not enough evidence"]
    # z = 0: the sign decides; swapped constructions: the opposite verdict
    assert list(U.paired_winkler(scores, "ref", "new", z=0.0, by=["cell"])["verdict"])[:2] == ["higher", "lower"]
    # exactly z standard errors is not enough: g1's difference is 3.46 se
    at = U.paired_winkler(scores, "new", "ref", z=0.2 / (0.1 / np.sqrt(3)), by=["cell"]).set_index("cell")
    assert at.loc["g1", "verdict"] == "not enough evidence"


def test_paired_winkler_messages():
    import pandas as pd
    scores = pd.DataFrame({"cell": "g", "dataset": ["a", "a"], "construction": ["new", "ref"], "W": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"^construction 'nwe' is not in scores \(constructions: \['new', 'ref'\]\)$"):
        U.paired_winkler(scores, "nwe", "ref", by=["cell"])
    with pytest.raises(ValueError, match=r"^reference 'default' is not in scores"):
        U.paired_winkler(scores, "new", "default", by=["cell"])
    with pytest.raises(ValueError, match=r"^scores must be dataset_scores' or split_scores' rows, with the columns"):
        U.paired_winkler(scores.drop(columns="W"), "new", "ref", by=["cell"])
    with pytest.raises(ValueError, match="^z must be"):
        U.paired_winkler(scores, "new", "ref", z=11, by=["cell"])
    # the default cells: task, method, size, measure
    with pytest.raises(ValueError, match=r"'measure', 'method', 'size', 'task'"):
        U.paired_winkler(scores, "new", "ref")


def test_paired_winkler_boundary_and_default_z():
    import pandas as pd

    def scores(diffs):
        rows = []
        for cell, ds in diffs.items():
            for i, d in enumerate(ds):
                rows += [(cell, f"d{i}", "new", 1.0 + d), (cell, f"d{i}", "ref", 1.0)]
        return pd.DataFrame(rows, columns=["cell", "dataset", "construction", "W"])

    # exact binary fractions: two datasets, differences -1 and 0 (mean -.5, se .5), and +1 and 0
    at = U.paired_winkler(scores({"g": [-1.0, 0.0], "h": [1.0, 0.0]}), "new", "ref", z=1.0, by=["cell"])
    assert list(at["se"]) == [0.5, 0.5] and list(at["diff"]) == [-0.5, 0.5]
    assert list(at["verdict"]) == ["not enough evidence"] * 2  # exactly z standard errors away: not beyond
    # the default z is 2: a difference of 2.5 standard errors (-.625, se .25) is lower, and not at z = 3
    s = scores({"g": [-0.375, -0.875], "h": [0.375, 0.875]})
    assert list(U.paired_winkler(s, "new", "ref", by=["cell"])["verdict"]) == ["lower", "higher"]
    assert list(U.paired_winkler(s, "new", "ref", z=3.0, by=["cell"])["verdict"]) == ["not enough evidence"] * 2

"""capshift.pps_check: the PPS diagnostic's statistic, p-value, verdict, seeds and errors (issue 32).

Most tests use a domain "classifier" that scores an item by its first feature (whatever it was fitted on): the
held-out AUC is then the Mann-Whitney AUC of that feature over the held-out items, which the test computes itself,
and the classifier records what it was fitted on and what it scored."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import mannwhitneyu, norm
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from capshift.pps_check import (DEFAULT_LEVEL, _distinct, detectable_auc, pps_test, reference_sample,
                                stratified_rank_test)


class FirstFeature(ClassifierMixin, BaseEstimator):
    """Scores an item by its first feature (in [0, 1]); records ("fit", X, y) and ("score", X) in ``log``."""

    log: list = []

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        FirstFeature.log.append(("fit", X, np.asarray(y)))
        return self

    def predict_proba(self, X):
        FirstFeature.log.append(("score", X))
        x = (X.toarray() if sp.issparse(X) else np.asarray(X))[:, 0]
        return np.c_[1 - x, x]


@pytest.fixture(autouse=True)
def _clear_log():
    FirstFeature.log.clear()


def _data(m=30, m_val=80, seed=0):
    """A batch (m, 2) and V (m_val, 2) of distinct items, first feature in (0, 1), V's classes alternating."""
    rng = np.random.default_rng(seed)
    Xb = np.c_[rng.random(m), np.arange(m)]
    Xv = np.c_[rng.random(m_val), 1000 + np.arange(m_val)]
    return Xb, Xv, np.tile([0, 1], m_val // 2)


def _split(m, yv, q, seed):
    """pps_test's halving of distinct items, its seed streams pinned: the reference is reference_sample(y_val, q, m,
    seed), the batch is taken in the order of default_rng([seed, 1]).permutation(m), both cut to the same size s;
    the first half of each side fits, the rest is scored. Returns (batch fit, batch test, ref fit, ref test)."""
    ref = reference_sample(yv, q, m, seed)
    s = min(len(ref), m)
    b = np.random.default_rng([seed, 1]).permutation(m)[:s]
    h = s // 2
    return b[:h], b[h:s], ref[:h], ref[h:s]


# ------------------------------------------------------------------------------------------------ detectable_auc
def test_detectable_auc_closed_form():
    # n1 = n0 = k = n - n // 2; se = sqrt((2k + 1) / (12 k^2)); 0.5 + (z_(1-level) + z_power) se
    z = norm.ppf(0.95) + norm.ppf(0.8)
    assert detectable_auc(2) == pytest.approx(0.5 + z * np.sqrt(3 / 12), rel=1e-12)  # k = 1
    assert detectable_auc(7) == pytest.approx(0.5 + z * np.sqrt(9 / 192), rel=1e-12)  # k = 4 (odd n rounds up)
    assert detectable_auc(10) == pytest.approx(0.5 + z * np.sqrt(11 / 300), rel=1e-12)  # k = 5
    z2 = norm.ppf(0.99) + norm.ppf(0.9)
    assert detectable_auc(10, level=0.01, power=0.9) == pytest.approx(0.5 + z2 * np.sqrt(11 / 300), rel=1e-12)


@pytest.mark.parametrize("args, kw, message", [
    ((1,), {}, "n_items must be >= 2, got 1"),
    ((10,), {"level": 1.5}, r"level must be in \(0.0, 1.0\), got 1.5"),
    ((10,), {"power": 0}, r"power must be in \(0.0, 1.0\), got 0"),
])
def test_detectable_auc_refuses_bad_arguments(args, kw, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        detectable_auc(*args, **kw)


# ------------------------------------------------------------------------------------------------ reference_sample
def test_reference_sample_is_stratified_without_replacement_and_seeded():
    y = np.array([0, 1, 0, 1, 1, 0, 1, 1, 0, 1])  # 4 of class 0, 6 of class 1
    # at q = (0.5, 0.5) V supplies at most floor(4 / 0.5) = 8 items without repeating one: 4 + 4
    r = reference_sample(y, [0.5, 0.5], 100, 3)
    assert r.dtype == np.int64 and len(r) == 8 and len(set(r)) == 8
    assert sorted(r[y[r] == 0]) == [0, 2, 5, 8] and len(r[y[r] == 1]) == 4
    # the seed's stream: class by class, then shuffled
    rng = np.random.default_rng(3)
    want = np.r_[rng.choice([0, 2, 5, 8], 4, replace=False), rng.choice([1, 3, 4, 6, 7, 9], 4, replace=False)]
    assert r.tolist() == rng.permutation(want).tolist()
    assert reference_sample(y, [0.5, 0.5], 100, 4).tolist() != r.tolist()
    # size smaller than what V supplies: round(q_i * size) of class i
    r = reference_sample(y, [0.25, 0.75], 4, 0)
    assert (y[r] == 0).sum() == 1 and (y[r] == 1).sum() == 3
    # a class with q = 0 does not limit the size (V's 4 items of class 0 are all the reference)
    assert sorted(reference_sample(y, [1.0, 0.0], 100, 0)) == [0, 2, 5, 8]
    assert sorted(reference_sample(y, [0.0, 1.0], 100, 0)) == [1, 3, 4, 6, 7, 9]
    # a class absent from V with q > 0: V supplies nothing at q
    assert len(reference_sample(np.zeros(5, int), [0.5, 0.5], 100, 0)) == 0


def test_reference_sample_class_absent_from_v_at_q_zero_is_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0 / 0 for the absent class
        assert sorted(reference_sample(np.zeros(5, int), [1.0, 0.0], 3, 0)) == [2, 3, 4]


def test_reference_sample_has_size_items_by_largest_remainders():
    # rounding each class would give 10 + 10 for size 19 at (.5, .5) and 7 + 7 + 7 for 20 at thirds (found by the
    # mutation review): the remainders go to the classes of largest fractional part, ties to the first
    y2 = np.tile([0, 1], 20)
    assert np.bincount(y2[reference_sample(y2, [0.5, 0.5], 19, 0)]).tolist() == [10, 9]
    y3 = np.tile([0, 1, 2], 20)
    assert np.bincount(y3[reference_sample(y3, [1 / 3] * 3, 20, 0)]).tolist() == [7, 7, 6]
    assert np.bincount(y3[reference_sample(y3, [0.25, 0.35, 0.4], 10, 0)]).tolist() == [3, 3, 4]
    # the largest remainder, not the smallest share: 5 + 2.7 + 2.3 -> [5, 3, 2]
    assert np.bincount(y3[reference_sample(y3, [0.5, 0.27, 0.23], 10, 0)]).tolist() == [5, 3, 2]
    # 8 classes, 3 items left for remainders .75 (class 1, 5) and .5 (classes 0, 2, 4): ties go to the first class
    # (a stable sort; numpy's default sort orders ties of 8 values otherwise)
    raw = np.array([4.5, 3.75, 5.5, 4.0, 5.5, 4.75, 4.0, 3.0])
    y8 = np.tile(np.arange(8), 10)
    assert np.bincount(y8[reference_sample(y8, raw / 35, 35, 0)]).tolist() == [5, 4, 5, 4, 5, 5, 4, 3]


@pytest.mark.parametrize("args, exc, message", [
    (([0, 5], [0.5, 0.5], 10, 0), ValueError, r"y_val has labels \[5\] outside the codeframe 0..1"),
    (([0, 1], [0.5, 0.6], 10, 0), ValueError, "prevalence must be a probability distribution"),
    (([0, 1], [[0.5, 0.3, 0.2]] * 2, 10, 0), ValueError, r"prevalence must have shape \(\.\.\., 2\)"),
    (([0, 1], [0.5, 0.5], 0, 0), ValueError, "size must be >= 1, got 0"),
    (([0, 1], [0.5, 0.5], 3, -1), ValueError, r"seed must be in 0..2\*\*32-1"),
])
def test_reference_sample_refuses_bad_arguments(args, exc, message):
    with pytest.raises(exc, match=f"^{message}"):
        reference_sample(*args)


# ------------------------------------------------------------------------------------------------ distinct rows
def test_distinct_keeps_the_first_occurrence_of_each_row_dense_or_sparse():
    X = np.array([[1.0, 2], [3, 4], [1, 2], [5, 6], [3, 4], [1, 2]])
    assert _distinct(X).tolist() == [0, 1, 3]
    assert _distinct(sp.csr_matrix(X)).tolist() == [0, 1, 3]
    assert _distinct(X[[3, 0, 3]]).tolist() == [0, 1]


# ------------------------------------------------------------------------------------------------ stratified_rank_test
def test_stratified_rank_test_hand_computed():
    # stratum 0: one batch item, no reference: skipped
    # stratum 1: batch 0.5, 0.9 vs reference 0.2, 0.5, 0.3: u = 2.5 + 3 = 5.5 of 6 pairs; N = 5, one tie of 2:
    #   v = 2 * 3 / 12 * (6 - 6 / 20) = 2.85, weight 1 / 6
    # stratum 2: batch 0.6 vs reference 0.4, 0.7, 0.1: u = 2 of 3 pairs; N = 4, no tie: v = 3 / 12 * 5 = 1.25, w 1/5
    scores = np.array([0.5, 0.4, 0.8, 0.2, 0.6, 0.5, 0.7, 0.9, 0.1, 0.3])
    batch = np.array([1, 0, 1, 0, 1, 0, 0, 1, 0, 0], dtype=bool)
    strata = np.array([1, 2, 0, 1, 2, 1, 2, 1, 2, 1])
    auc, p = stratified_rank_test(scores, batch, strata)
    num = (5.5 - 3) / 6 + (2 - 1.5) / 5
    var = 2.85 / 36 + 1.25 / 25
    assert auc == pytest.approx(7.5 / 9, rel=1e-12)
    assert p == pytest.approx(norm.sf(num / np.sqrt(var)), rel=1e-9)


def test_stratified_rank_test_one_stratum_is_the_tie_corrected_mann_whitney_test():
    scores = np.array([0.3, 0.1, 0.3, 0.8, 0.5, 0.3, 0.9, 0.2, 0.5])
    batch = np.array([1, 0, 0, 1, 1, 0, 1, 0, 0], dtype=bool)
    auc, p = stratified_rank_test(scores, batch, np.zeros(9, int))
    ref = mannwhitneyu(scores[batch], scores[~batch], alternative="greater", method="asymptotic",
                       use_continuity=False)
    assert auc == pytest.approx(ref.statistic / (4 * 5), rel=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_stratified_rank_test_single_pair_and_degenerate_cases():
    # one pair: u = 1, num = 0.5 / 3, var = (1 / 12 * 3) / 9: z = 1
    auc, p = stratified_rank_test(np.array([0.3, 0.6]), np.array([False, True]), np.array([4, 4]))
    assert auc == 1.0 and p == pytest.approx(norm.sf(1.0), rel=1e-12)
    # every score tied within its stratum: no evidence
    tied = stratified_rank_test(np.full(6, 0.5), np.array([1, 0, 1, 0, 0, 1], dtype=bool), np.array([0, 0, 0, 1, 1, 1]))
    assert tied == (0.5, 1.0)
    # no stratum holds both sides
    one_sided = np.array([1, 1, 0, 0], dtype=bool)
    assert stratified_rank_test(np.arange(4.0), one_sided, np.array([0, 0, 1, 1])) == (0.5, 1.0)


# ------------------------------------------------------------------------------------------------ pps_test: statistic
def test_pps_test_is_the_held_out_mann_whitney_test_of_the_domain_scores():
    """Unstratified: the domain classifier is fitted on the first half of each side and the AUC / one-sided p-value
    are scipy's Mann-Whitney test of its scores on the other halves."""
    Xb, Xv, yv = _data()
    for kw, seed in (({}, 0), ({"random_state": 7}, 7)):  # the default seed is 0
        FirstFeature.log.clear()
        t = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature(), **kw)
        bf, bt, rf, rt = _split(30, yv, [0.5, 0.5], seed)
        (_, X_fit, y_fit), (_, X_scored) = FirstFeature.log
        assert isinstance(X_fit, np.ndarray) and isinstance(X_scored, np.ndarray)
        np.testing.assert_array_equal(X_fit, np.r_[Xb[bf], Xv[rf]])
        assert y_fit.tolist() == [1] * 15 + [0] * 15
        np.testing.assert_array_equal(X_scored, np.r_[Xb[bt], Xv[rt]])
        ref = mannwhitneyu(Xb[bt, 0], Xv[rt, 0], alternative="greater")
        assert t.auc == pytest.approx(ref.statistic / 15 ** 2, rel=1e-12)
        assert t.pvalue == pytest.approx(ref.pvalue, rel=1e-12)
        assert (t.n_batch, t.n_reference, t.level, t.note) == (30, 30, DEFAULT_LEVEL, "")
        assert t.doubtful == (t.pvalue < 0.05)


def test_pps_test_p_value_closed_form_on_separated_scores():
    """Batch scored above every reference item: AUC 1 and the normal approximation with continuity correction,
    n1 = n0 = 15; below: AUC 0 and a one-sided p-value near 1."""
    Xb, Xv, yv = _data()
    sigma = np.sqrt(15 * 15 * 31 / 12)
    high = pps_test(np.c_[0.5 + Xb[:, 0] / 2, Xb[:, 1]], np.c_[Xv[:, 0] / 2, Xv[:, 1]], yv, [0.5, 0.5],
                    classifier=FirstFeature())
    assert high.auc == 1.0 and high.pvalue == pytest.approx(norm.sf((225 - 112.5 - 0.5) / sigma), rel=1e-9)
    assert high.doubtful
    low = pps_test(np.c_[Xb[:, 0] / 2, Xb[:, 1]], np.c_[0.5 + Xv[:, 0] / 2, Xv[:, 1]], yv, [0.5, 0.5],
                   classifier=FirstFeature())
    assert low.auc == 0.0 and low.pvalue == pytest.approx(norm.sf((0 - 112.5 - 0.5) / sigma), rel=1e-9)
    assert not low.doubtful


def test_pps_test_verdict_is_pvalue_strictly_below_level():
    Xb, Xv, yv = _data()
    t = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature())
    at = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature(), level=t.pvalue)
    above = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature(), level=np.nextafter(t.pvalue, 1))
    assert at.pvalue == t.pvalue and at.level == t.pvalue and not at.doubtful  # a tie is not doubtful
    assert above.doubtful


def test_pps_test_on_min_items_items_is_run_and_below_is_not():
    Xb, Xv, yv = _data(m=4, m_val=40)
    t = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature(), min_items=4)
    _, bt, _, rt = _split(4, yv, [0.5, 0.5], 0)
    assert t.pvalue == pytest.approx(mannwhitneyu(Xb[bt, 0], Xv[rt, 0], alternative="greater").pvalue, rel=1e-12)
    Xb, Xv, yv = _data(m=20, m_val=40)
    assert np.isfinite(pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature()).pvalue)  # s = 20 = min_items
    FirstFeature.log.clear()
    t = pps_test(Xb[:18], Xv, yv, [0.5, 0.5], classifier=FirstFeature(), level=0.1)
    assert np.isnan(t.auc) and np.isnan(t.pvalue)
    assert (t.n_batch, t.n_reference, t.level, t.doubtful) == (18, 18, 0.1, False)
    assert t.note == "not tested: 18 items on the smaller side, fewer than min_items=20"
    t = pps_test(Xb, Xv[:12], yv[:12], [0.5, 0.5], classifier=FirstFeature())  # V supplies 12 at q-hat
    assert np.isnan(t.pvalue) and (t.n_batch, t.n_reference, t.level, t.doubtful) == (20, 12, 0.05, False)
    assert t.note == "not tested: 12 items on the smaller side, fewer than min_items=20"
    assert FirstFeature.log == []  # no domain classifier for the small batch


def _posteriors(m, n, shift):
    """(m, n) posteriors: top class (i + shift) % n with a largest posterior from a few repeated levels."""
    levels = np.array([0.45, 0.5, 0.6, 0.6, 0.7, 0.75, 0.75, 0.75, 0.8, 0.9, 0.95])
    i = np.arange(m)
    conf = levels[(5 * i + shift) % len(levels)]
    P = np.repeat(((1 - conf) / (n - 1))[:, None], n, axis=1)
    P[i, (i + shift) % n] = conf
    return P


@pytest.mark.parametrize("n", [2, 3])
def test_pps_test_stratified_by_posteriors_is_the_van_elteren_test_of_the_held_out_items(n):
    """With posteriors, the held-out items are stratified by the class of their largest posterior and n_bins (4)
    quantile bins of it, over the held-out items of that class (a value on a bin edge goes to the upper bin)."""
    Xb, Xv, _ = _data(m=40, m_val=90)
    yv = np.arange(90) % n
    Pb, Pv = _posteriors(40, n, 0), _posteriors(90, n, 3)
    q = [0.4, 0.6] if n == 2 else [0.3, 0.3, 0.4]
    t = pps_test(Xb, Xv, yv, q, classifier=FirstFeature(), posteriors_batch=Pb, posteriors_val=Pv)
    _, bt, _, rt = _split(40, yv, q, 0)
    P = np.r_[Pb[bt], Pv[rt]]
    top, conf = P.argmax(1), P.max(1)
    strata = np.zeros(len(P), int)
    for c in range(n):
        edges = np.quantile(conf[top == c], [0.25, 0.5, 0.75])
        strata[top == c] = 4 * c + (conf[top == c, None] >= edges).sum(1)
    is_batch = np.r_[np.ones(len(bt), bool), np.zeros(len(rt), bool)]
    want = stratified_rank_test(np.r_[Xb[bt, 0], Xv[rt, 0]], is_batch, strata)
    assert (t.auc, t.pvalue) == pytest.approx(want, rel=1e-12)
    plain = stratified_rank_test(np.r_[Xb[bt, 0], Xv[rt, 0]], is_batch, np.zeros(len(P), int))
    assert t.pvalue != pytest.approx(plain[1], rel=1e-6)  # the strata matter here
    two = pps_test(Xb, Xv, yv, q, classifier=FirstFeature(), posteriors_batch=Pb, posteriors_val=Pv, n_bins=2)
    assert two.pvalue != pytest.approx(t.pvalue, rel=1e-6)


# --------------------------------------------------------------------------------------------- pps_test: what it reads
def test_pps_test_caps_the_batch_at_a_seeded_subsample():
    """A batch larger than max_items is tested on the sorted draw of default_rng([random_state, 2]), posteriors
    included; the note says so."""
    Xb, Xv, yv = _data(m=60, m_val=200)
    Pb = np.c_[1 - Xb[:, 0], Xb[:, 0]] * 0.5 + 0.25
    Pv = np.c_[1 - Xv[:, 0], Xv[:, 0]] * 0.5 + 0.25
    for seed in (0, 5):
        t = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature(), max_items=30, random_state=seed,
                     posteriors_batch=Pb, posteriors_val=Pv)
        cut = np.sort(np.random.default_rng([seed, 2]).choice(60, 30, replace=False))
        u = pps_test(Xb[cut], Xv, yv, [0.5, 0.5], classifier=FirstFeature(), random_state=seed,
                     posteriors_batch=Pb[cut], posteriors_val=Pv)
        assert (t.auc, t.pvalue, t.n_batch, t.n_reference) == (u.auc, u.pvalue, 60, 30)
        assert t.note == "tested on 30 of the batch's 60 items (a random 30)" and u.note == ""
    # a batch of exactly max_items is read whole
    t = pps_test(Xb[:30], Xv[:24], yv[:24], [0.5, 0.5], classifier=FirstFeature(), max_items=30)
    assert t.note == "tested on 24 of the batch's 30 items (V supplies 24 at q-hat)"
    assert pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature(), max_items=None).n_reference == 60
    # without posteriors
    t = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature(), max_items=40, random_state=2)
    cut = np.sort(np.random.default_rng([2, 2]).choice(60, 40, replace=False))
    u = pps_test(Xb[cut], Xv, yv, [0.5, 0.5], classifier=FirstFeature(), random_state=2)
    assert (t.auc, t.pvalue, t.n_reference) == (u.auc, u.pvalue, 40)
    assert t.note == "tested on 40 of the batch's 60 items (a random 40)"


def test_pps_test_reads_distinct_items_with_their_posteriors():
    Xb, Xv, yv = _data(m=40, m_val=60)
    Pb = np.c_[1 - Xb[:, 0], Xb[:, 0]]
    Pv = np.c_[Xv[:, 0], 1 - Xv[:, 0]]
    rep = np.r_[np.arange(40), [3, 7, 7, 20, 31]]  # five repeats of earlier rows, at the end
    t = pps_test(Xb[rep], Xv, yv, [0.5, 0.5], classifier=FirstFeature(), posteriors_batch=Pb[rep],
                 posteriors_val=Pv)
    u = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature(), posteriors_batch=Pb, posteriors_val=Pv)
    assert (t.auc, t.pvalue, t.n_batch, t.n_reference) == (u.auc, u.pvalue, 45, 40)
    assert t.note == "tested on 40 of the batch's 45 items (distinct ones)" and u.note == ""
    # repeats and a V that supplies fewer: both reasons
    t = pps_test(Xb[rep], Xv[:30], yv[:30], [0.5, 0.5], classifier=FirstFeature())
    assert t.note == "tested on 30 of the batch's 45 items (distinct ones, V supplies 30 at q-hat)"


def test_pps_test_default_classifier_is_standardised_logistic_regression():
    rng = np.random.default_rng(5)
    # the shift is in a feature of scale 1e-3, beside noise of scale 1e3: unstandardised, the penalty hides it
    Xv = np.c_[rng.normal(size=100) * 1e-3, rng.normal(size=100) * 1e3]
    Xb = np.c_[(rng.normal(size=60) + 1.0) * 1e-3, rng.normal(size=60) * 1e3]
    yv = np.tile([0, 1], 50)
    t = pps_test(Xb, Xv, yv, [0.5, 0.5])
    lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    same = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=lr)
    raw = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=LogisticRegression(max_iter=1000))
    assert (t.auc, t.pvalue) == (same.auc, same.pvalue) and t.doubtful
    assert abs(t.auc - raw.auc) > 0.05


def test_pps_test_reads_sparse_items():
    Xb, Xv, yv = _data()
    Sb, Sv = sp.csr_matrix(Xb), sp.csr_matrix(Xv)
    dense = pps_test(Xb, Xv, yv, [0.5, 0.5], classifier=FirstFeature())
    FirstFeature.log.clear()
    sparse = pps_test(Sb, Sv, yv, [0.5, 0.5], classifier=FirstFeature())
    assert (sparse.auc, sparse.pvalue, sparse.note) == (dense.auc, dense.pvalue, dense.note)
    assert sp.issparse(FirstFeature.log[0][1])
    # the default classifier standardises sparse items without centring them
    t = pps_test(Sb, Sv, yv, [0.5, 0.5])
    u = pps_test(Sb, Sv, yv, [0.5, 0.5],
                 classifier=make_pipeline(StandardScaler(with_mean=False), LogisticRegression(max_iter=1000)))
    assert (t.auc, t.pvalue) == (u.auc, u.pvalue)


# ------------------------------------------------------------------------------------------------ pps_test: errors
_TOGETHER = "posteriors_batch and posteriors_val go together: pass both or neither$"
_P = {"posteriors_batch": np.full((30, 2), 0.5), "posteriors_val": np.full((40, 2), 0.5)}


@pytest.mark.parametrize("kw, message", [
    ({"X_batch": np.ones(5)}, r"X_batch must be a 2-d array of items x features, got shape \(5,\)"),
    ({"X_batch": np.r_[np.zeros((29, 2)), [[np.nan, 1]]]}, "Input X_batch contains NaN"),
    ({"X_val": np.r_[np.zeros((39, 2)), [[np.nan, 1]]]}, "Input X_val contains NaN"),
    ({"X_val": np.ones((40, 3))}, "X_val has 3 features, but the estimator was fitted on 2 features"),
    ({"prevalence": [0.5, 0.6]}, "prevalence must be a probability distribution"),
    ({"y_val": np.tile([0, 1], 20)[:-1]}, r"y_val must have one label per item: expected shape \(40,\), got \(39,\)"),
    ({"y_val": np.r_[np.tile([0, 1], 20)[:-1], 2]}, r"y_val has labels \[2\] outside the codeframe 0..1"),
    ({"y_val": np.zeros(40, int)}, r"y_val has no items of class\(es\) \[1\]"),
    ({"level": 1.5}, r"level must be in \(0.0, 1.0\), got 1.5"),
    ({"min_items": 3}, "min_items must be >= 4, got 3"),
    ({"random_state": -1}, r"random_state must be in 0..2\*\*32-1"),
    ({"max_items": 10}, "max_items must be >= 20, got 10"),
    ({"max_items": 7, "min_items": 8}, "max_items must be >= 8, got 7"),
    ({"posteriors_batch": _P["posteriors_batch"]}, _TOGETHER),
    ({"posteriors_val": _P["posteriors_val"]}, _TOGETHER),
    ({**_P, "posteriors_batch": np.full((30, 2), 0.6)}, "posteriors_batch must be a probability distribution"),
    ({**_P, "posteriors_val": np.full((40, 2), 0.6)}, "posteriors_val must be a probability distribution"),
    ({**_P, "posteriors_batch": np.full((30, 3), 1 / 3)}, r"posteriors_batch must have shape \(\.\.\., 2\)"),
    ({**_P, "posteriors_val": np.full((40, 3), 1 / 3)}, r"posteriors_val must have shape \(\.\.\., 2\)"),
    ({**_P, "posteriors_batch": np.full((29, 2), 0.5)},
     "posteriors_batch / posteriors_val must have one row per item: got 29 and 40 rows for 30 and 40 items$"),
    ({**_P, "posteriors_val": np.full((39, 2), 0.5)},
     "posteriors_batch / posteriors_val must have one row per item: got 30 and 39 rows for 30 and 40 items$"),
    ({**_P, "n_bins": 0}, "n_bins must be >= 1, got 0$"),
    # the checks run in this order: V's labels before the posteriors
    ({"y_val": np.zeros(40, int), "posteriors_val": _P["posteriors_val"]}, r"y_val has no items of class\(es\) \[1\]"),
    ({"y_val": np.r_[np.tile([0, 1], 20)[:-1], 2], "posteriors_val": _P["posteriors_val"]},
     r"y_val has labels \[2\] outside"),
    # V's class 1 items all repeat class-0 rows: after the repeats are dropped V has no class 1
    ({"X_val": np.repeat(np.arange(20.0), 2)[:, None] * [1, 1]}, r"y_val has no items of class\(es\) \[1\]"),
])
def test_pps_test_refuses_bad_arguments_naming_them(kw, message):
    Xb, Xv, yv = _data(m=30, m_val=40)
    args = {"X_batch": Xb, "X_val": Xv, "y_val": yv, "prevalence": [0.5, 0.5], "classifier": FirstFeature(), **kw}
    with pytest.raises(ValueError, match=f"^{message}"):
        pps_test(**args)

"""capshift's KDEy-ML inference (capshift._kdey) against QuaPy's KDEyML on the same fitted densities.

The reference is QuaPy: its fitted ``KernelDensity`` objects evaluated by scikit-learn
(``KDEyML.pdf``), its objective (``KDEyML.aggregate``, both the density form below 30 classes and the
log-space form from 30 on, written here from QuaPy's source), minimised to high accuracy by cvxpy + Clarabel
(QuaPy's own SLSQP stops at ``ftol = 1e-6``, up to ~1e-4 away from the optimum: against it the test asserts
an objective no worse and agreement to 1e-3).
"""
import warnings
from types import SimpleNamespace

import cvxpy as cp
import numpy as np
import pytest
import quapy as qp
from quapy.method.aggregative import KDEyML
from scipy.special import logsumexp
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KernelDensity

from capshift._kdey import KDEyEvaluator, check_kdey_backend, mixture_ml, release_weight
from capshift import quantifiers
from capshift.quantifiers import Quantifier

N_CLASSES = (3, 10, 26, 32)  # 32: QuaPy's log-space objective (n >= 30)


def _data(n, m, seed, prev=None):
    rng = np.random.default_rng(seed)
    prev = np.full(n, 1 / n) if prev is None else prev
    y = rng.choice(n, size=m, p=prev)
    y[:n] = np.arange(n)  # every class present
    centres = 2.0 * rng.normal(size=(n, 6))
    return centres[y] + rng.normal(size=(m, 6)), y


_FITTED = {}


def _fitted(n):
    if n not in _FITTED:
        X, y = _data(n, 40 * n, seed=n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = KDEyML(LogisticRegression(max_iter=2000), val_split=3, random_state=0).fit(X, y)
        rng = np.random.default_rng(100 + n)
        samples = []
        for s in range(3):  # shifted test samples: random prevalence, classes absent from some
            prev = rng.dirichlet(np.full(n, 0.5))
            Xs, _ = _data(n, 100, seed=1000 * n + s, prev=prev)
            samples.append(q.classify(Xs))
        _FITTED[n] = (q, samples)
    return _FITTED[n]


def _quapy_log_densities(q, P):
    """QuaPy's (scikit-learn's) log densities of the posteriors P (m, n) under each class: (n, m)."""
    return np.array([q.pdf(k, P, q.kernel, log_densities=True) for k in q.mix_densities])


def _quapy_objective(q, logd):
    """QuaPy's KDEyML.aggregate objective as a function of p, on QuaPy's log densities (n, m)."""
    n = logd.shape[0]
    if n >= 30:
        return lambda p: -np.sum(logsumexp(np.log(qp.error.smooth(p, eps=1e-12))[:, None] + logd, axis=0))
    D = np.exp(logd)
    return lambda p: -np.sum(np.log(p @ D + 1e-12))


def _clarabel(q, logd):
    """Minimiser of QuaPy's objective by cvxpy + Clarabel (rescaled per item: same minimiser)."""
    n = logd.shape[0]
    D = np.exp(logd - logd.max(axis=0))
    c = 1e-12 * (D.sum(axis=0) if n >= 30 else np.exp(-logd.max(axis=0)))
    p = cp.Variable(n)
    prob = cp.Problem(cp.Maximize(cp.sum(cp.log(D.T @ p + c))), [p >= 0, cp.sum(p) == 1])
    with warnings.catch_warnings():  # Clarabel may call 1e-12 "inaccurate": the 1e-6 assertion is the judge
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500)
    x = np.clip(p.value, 0.0, None)
    return x / x.sum()


@pytest.mark.parametrize("n", N_CLASSES)
def test_log_densities_equal_sklearn(n):
    q, samples = _fitted(n)
    ev = KDEyEvaluator(q)
    for P in samples:
        ref, ours = _quapy_log_densities(q, P), ev.log_densities(P)
        assert ours.shape == ref.shape == (n, len(P))
        # relative to each item's largest class density (what the mixture likelihood sees)
        err = np.abs(np.exp(ours - ref.max(axis=0)) - np.exp(ref - ref.max(axis=0))).max()
        assert err < 1e-10


@pytest.mark.parametrize("n", N_CLASSES)
def test_prevalence_equals_exact_optimum_of_quapy_objective(n):
    q, samples = _fitted(n)
    ev = KDEyEvaluator(q)
    for P in samples:
        logd, ours = _quapy_log_densities(q, P), ev.aggregate(P)
        assert ours.min() >= 0 and abs(ours.sum() - 1) < 1e-12
        ref = _clarabel(q, logd)
        np.testing.assert_allclose(ours, ref, atol=1e-6, rtol=0)
        f = _quapy_objective(q, logd)
        quapy_est = q.aggregate(P)          # QuaPy's own estimate (SLSQP, ftol 1e-6)
        assert f(ours) <= f(quapy_est) + 1e-9 * (1 + abs(f(quapy_est)))
        assert f(ours) <= f(ref) + 1e-9 * (1 + abs(f(ref)))
        np.testing.assert_allclose(ours, quapy_est, atol=1e-3, rtol=0)


def test_batch_equals_single_and_quantifier_backends():
    q, samples = _fitted(10)
    ev = KDEyEvaluator(q)
    batch = ev.aggregate_batch(samples)
    np.testing.assert_allclose(batch, np.stack([ev.aggregate(P) for P in samples]), atol=1e-12)
    assert ev.aggregate_batch([]).shape == (0, 10)


def test_quantifier_backends_on_one_fit():
    X, y = _data(4, 400, seed=7)
    Xu, _ = _data(4, 300, seed=8, prev=np.array([0.6, 0.3, 0.1, 0.0]))
    samples = [Xu[:100], Xu[100:200], Xu[200:]]
    fast = Quantifier("kdey", random_state=0).fit(X, y, 4)
    slow = Quantifier("kdey", random_state=0, kdey_backend="quapy").fit(X, y, 4)
    assert fast.fast_ is not None and slow.fast_ is None
    for Xs in samples:  # same seed, same fitted densities: QuaPy's estimate is the same optimum to SLSQP's tolerance
        P = fast.classify(Xs)
        np.testing.assert_allclose(fast.q_.aggregate(P), slow.q_.aggregate(P), atol=1e-12)
        np.testing.assert_allclose(fast.quantify(Xs), slow.quantify(Xs), atol=1e-3)
    np.testing.assert_allclose(fast.quantify_batch(samples), np.stack([fast.quantify(Xs) for Xs in samples]),
                               atol=1e-10)
    np.testing.assert_allclose(slow.quantify_batch(samples), np.stack([slow.quantify(Xs) for Xs in samples]),
                               atol=1e-12)
    switched = slow.set_kdey_backend("capshift")  # same fit, other inference
    assert switched is slow and slow.fast_ is not None
    np.testing.assert_allclose(slow.quantify_batch(samples), fast.quantify_batch(samples), atol=1e-10)


def test_mixture_ml_kkt_and_recovery():
    rng = np.random.default_rng(0)
    n, m = 8, 400
    # well-separated components: the ML weights of a large sample are near its true mixture
    D = np.full((n, m), 1e-3)
    truth = np.array([0.4, 0.3, 0.2, 0.1, 0, 0, 0, 0])
    comp = rng.choice(n, size=m, p=truth)
    D[comp, np.arange(m)] = 1.0
    p = mixture_ml(D, np.full(m, 1e-12))
    g = -(D / (p @ D + 1e-12)).sum(axis=1)
    mu = g[p > 1e-9].mean()
    assert np.abs(g[p > 1e-9] - mu).max() < 1e-8 * abs(mu)    # stationary on the support
    assert np.all(g[p <= 1e-9] >= mu - 1e-8 * abs(mu))        # no class wants weight
    np.testing.assert_allclose(p, np.bincount(comp, minlength=n) / m, atol=0.02)
    assert np.all(p[4:] < 1e-9)


def test_backend_names():
    assert check_kdey_backend("QuaPy") == "quapy"
    with pytest.raises(ValueError, match="kdey_backend"):
        check_kdey_backend("fast")
    with pytest.raises(TypeError, match="kdey_backend"):
        check_kdey_backend(None)


def test_kdey_fits_a_stratified_subsample_of_a_large_v(monkeypatch):
    """max_fit_items: the KDEy quantifiers' densities hold a stratified subsample of V (every class its share,
    at least 10), chosen by the seed; other quantifiers and a small V read all of V. (The per-class floor is
    lowered here to show the shares; it is tested below.)"""
    from sklearn.linear_model import LogisticRegression
    monkeypatch.setattr(quantifiers, "MIN_FIT_PER_CLASS", 10)
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(900, int), np.ones(285, int), np.full(15, 2)]
    X = rng.normal(size=(len(y), 3)) + y[:, None]
    q = Quantifier("kdey", random_state=0, max_fit_items=300)
    sub = q.fit_subsample(y)
    # shares 900/1200, 285/1200, 15/1200 of 300: 225, 71 (71.25), 10 (3.75 raised to 10)
    assert np.bincount(y[sub]).tolist() == [225, 71, 10] and len(np.unique(sub)) == len(sub)
    q.fit(X, y, 3)
    assert sum(len(k.tree_.data) for k in q.q_.mix_densities) == 306  # the densities hold the subsample only
    assert not np.array_equal(Quantifier("kdey", random_state=1, max_fit_items=300).fit_subsample(y), sub)
    assert np.array_equal(Quantifier("kdey", random_state=0, max_fit_items=300).fit_subsample(y), sub)
    assert Quantifier("kdey", max_fit_items=None).fit_subsample(y) is None
    assert Quantifier("kdey", max_fit_items=1200).fit_subsample(y) is None  # V no larger than the cap
    h = LogisticRegression().fit(X, y)
    assert Quantifier("sld", h, max_fit_items=300).fit_subsample(y) is None
    assert len(Quantifier("kdey-h", h, max_fit_items=300).fit_subsample(y)) == 306
    assert Quantifier("kdey", max_fit_items=300).unfitted().max_fit_items == 300
    with pytest.raises(ValueError, match="max_fit_items"):
        Quantifier("kdey", max_fit_items=1).fit(X, y, 3)


def test_kdey_subsample_keeps_min_fit_per_class_items_per_class():
    # the subsample grows to MIN_FIT_PER_CLASS items per class of V when max_fit_items gives fewer: 3 classes of
    # 5,000 items with max_fit_items=300 keep 1,200 (shares 3000/5000, 1500/5000, 500/5000: 720, 360, 120); V no
    # larger than that floor (letter's 26 classes of 7,000 items: 10,400) is read whole
    floor = quantifiers.MIN_FIT_PER_CLASS
    y = np.r_[np.zeros(3000, int), np.ones(1500, int), np.full(500, 2)]
    sub = Quantifier("kdey", random_state=0, max_fit_items=300).fit_subsample(y)
    assert len(sub) == 3 * floor and np.bincount(y[sub]).tolist() == [3 * floor * k // 5000 for k in (3000, 1500, 500)]
    letter = np.repeat(np.arange(26), 7000 // 26 + 1)[:7000]
    assert Quantifier("kdey", max_fit_items=2000).fit_subsample(letter) is None
    assert len(Quantifier("kdey", max_fit_items=2000).fit_subsample(np.repeat([0, 1], 50_000))) == 2000


# ---- hand-made densities: closed-form Gaussian kernel values, the bandwidth, far points, chunks, QuaPy's switch ----

class _HandKDEy:
    """What KDEyEvaluator reads of a fitted KDEyML, on hand-made centres: the kernel name, one scikit-learn
    KernelDensity per class (Gaussian, bandwidth h) and transform_posteriors (the identity, as QuaPy's for the
    Gaussian kernel; this stand-in keeps it for any kernel name)."""

    def __init__(self, centres, h=1.0, kernel="gaussian"):
        self.kernel = kernel
        self.mix_densities = [KernelDensity(bandwidth=h).fit(np.asarray(v, dtype=float).reshape(len(v), -1))
                              for v in centres]

    def transform_posteriors(self, X, kernel):
        return X


def _closed_form_log_density(x, V, h):
    """log((1/N) sum_j N(x; v_j, h² I)): the Gaussian KDE of the centres V (N, d) at x (d,)."""
    V = np.asarray(V, dtype=float).reshape(len(V), -1)
    sq = ((np.asarray(x, dtype=float) - V) ** 2).sum(axis=1)
    return logsumexp(-sq / (2 * h * h)) - np.log(len(V)) - 0.5 * V.shape[1] * np.log(2 * np.pi * h * h)


def test_log_densities_closed_form_2d_with_bandwidth():
    # class 0: centres (0, 0), (1, 0); class 1: (0, 2); h = 0.5, so e.g. class 0 at (0, 0) is
    # log((1 + e^-2) / 2) - log(2 pi 0.25) = -0.5413... and class 1 at (0.5, 2) is -0.5 - log(pi / 2)
    centres = [[[0.0, 0.0], [1.0, 0.0]], [[0.0, 2.0]]]
    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 2.0]])
    ev = KDEyEvaluator(_HandKDEy(centres, h=0.5))
    ours = ev.log_densities(X)
    assert ours[0, 0] == pytest.approx(np.log((1 + np.exp(-2)) / 2) - np.log(2 * np.pi * 0.25), rel=1e-13)
    assert ours[1, 2] == pytest.approx(-0.5 - np.log(np.pi / 2), rel=1e-13)
    ref = np.array([[_closed_form_log_density(x, V, 0.5) for x in X] for V in centres])
    np.testing.assert_allclose(ours, ref, rtol=1e-13)
    # the bandwidth enters both the exponent and the normaliser: h = 1 gives other numbers
    ours1 = KDEyEvaluator(_HandKDEy(centres, h=1.0)).log_densities(X)
    np.testing.assert_allclose(ours1, [[_closed_form_log_density(x, V, 1.0) for x in X] for V in centres], rtol=1e-13)


def test_log_densities_far_from_every_centre_keep_their_ratio_silently():
    # 1-d, h = 1: at x = 60 every kernel value underflows (e^-1250 from 10, e^-1800 from 0), yet the densities
    # are e^-550 apart and both are kept; a class ~e^-10^7 below the nearest is -inf (density 0), without warnings
    centres = [[0.0], [10.0], [5000.0]]
    X = np.array([[0.0], [60.0], [1.0]])   # the far point in the middle of the sample
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = KDEyEvaluator(_HandKDEy(centres)).log_densities(X)
    half_log_2pi = 0.5 * np.log(2 * np.pi)
    expected = -0.5 * (X[:, 0] - np.array([[0.0], [10.0]])) ** 2 - half_log_2pi
    np.testing.assert_allclose(ours[:2], expected, rtol=1e-13)
    assert ours[1, 1] == pytest.approx(-1250 - half_log_2pi, rel=1e-13)
    assert np.all(ours[2] == -np.inf)
    # near a centre, a class e^-780 below the nearest is 0 too (x = 0.5: e^-0.125 from 0, e^-780.1 from 40)
    near = KDEyEvaluator(_HandKDEy([[0.0], [40.0]])).log_densities(np.array([[0.5]]))
    assert near[0, 0] == pytest.approx(-0.125 - half_log_2pi, rel=1e-13) and near[1, 0] == -np.inf


def test_log_densities_of_a_sample_larger_than_one_chunk():
    # 5,000 centres: 200 test points per chunk (1e6 kernel entries), so 450 points take three chunks
    A, B = np.linspace(0.0, 1.0, 2500), np.linspace(0.5, 1.5, 2500)
    X = np.linspace(-0.2, 1.7, 450)[:, None]
    ours = KDEyEvaluator(_HandKDEy([A, B], h=0.1)).log_densities(X)
    ref = [logsumexp(-(X - V) ** 2 / (2 * 0.1 ** 2), axis=1) - np.log(len(V)) - 0.5 * np.log(2 * np.pi * 0.1 ** 2)
           for V in (A, B)]
    np.testing.assert_allclose(ours, ref, atol=1e-10, rtol=0)


def test_log_densities_of_float32_posteriors_are_those_of_their_float64_values():
    centres = [[[0.7, 0.2, 0.1], [0.6, 0.3, 0.1]], [[0.1, 0.8, 0.1]], [[0.2, 0.2, 0.6]]]
    P = np.array([[0.71, 0.19, 0.1], [0.15, 0.7, 0.15], [0.3, 0.3, 0.4]], dtype=np.float32)
    ours = KDEyEvaluator(_HandKDEy(centres, h=0.05)).log_densities(P)
    ref = np.array([[_closed_form_log_density(x, V, 0.05) for x in P.astype(float)] for V in centres])
    np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_log_densities_apply_quapys_aitchison_transform():
    # kernel "aitchison": QuaPy fits and evaluates the densities on the clr transform of the posteriors
    q = KDEyML(LogisticRegression(), kernel="aitchison", bandwidth=0.3)
    V = [np.array([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]]), np.array([[0.1, 0.8, 0.1]]), np.array([[0.2, 0.2, 0.6]])]
    q.mix_densities = [KernelDensity(bandwidth=0.3).fit(q.transform_posteriors(v, "aitchison")) for v in V]
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0.25, 0.25, 0.5]])
    ours = KDEyEvaluator(q).log_densities(P)
    np.testing.assert_allclose(ours, _quapy_log_densities(q, P), rtol=1e-12)
    clr = q.transform_posteriors(P, "aitchison")   # log P minus its row mean (QuaPy smooths P first)
    np.testing.assert_allclose(clr, np.log(P) - np.log(P).mean(axis=1, keepdims=True), atol=1e-9)
    assert ours[1, 1] == pytest.approx(_closed_form_log_density(clr[1], q.transform_posteriors(V[1], "aitchison"),
                                                                0.3), rel=1e-12)


@pytest.mark.parametrize("n, kernel, log_space", [(30, "gaussian", True), (29, "gaussian", False),
                                                  (20, "aitchison", True), (19, "aitchison", False)])
def test_objective_form_switches_where_quapys_does(n, kernel, log_space):
    # QuaPy's switch: log space from 30 classes, or from 20 for a non-Gaussian kernel. Items x = 0, 60, 0 (h = 1):
    # class 0 explains 0, class 1 (centre 10) is e^-550 closer to 60, the other classes are far from everything.
    # In log space the item at 60 counts for class 1: ML weights (2/3, 1/3). In QuaPy's density form its
    # densities (e^-1250, e^-1800) are 0 next to epsilon 1e-12: the item does not count, and the weights are (1, 0).
    centres = [[0.0], [10.0]] + [[1000.0 * i] for i in range(2, n)]
    ev = KDEyEvaluator(_HandKDEy(centres, kernel=kernel))
    assert ev.log_space is log_space
    p = ev.aggregate(np.array([[0.0], [60.0], [0.0]]))
    np.testing.assert_allclose(p[:2], [2 / 3, 1 / 3] if log_space else [1.0, 0.0], atol=1e-9)
    assert np.all(p[2:] == 0)


def test_log_space_offset_is_per_item():
    # QuaPy's log-space objective smooths p by (p + eps) / (1 + n eps): an offset eps times each item's summed
    # densities (relative to its largest). The items 0, 60, 0 of the test above 3,000 times over, 30 classes: each
    # item has one class of relative density 1 and the others below e^-50, so n0 / (p0 + eps) = n1 / (p1 + eps),
    # p0 = 2/3 (1 + 2 eps) - eps
    ev = KDEyEvaluator(_HandKDEy([[0.0], [10.0]] + [[1000.0 * i] for i in range(2, 30)]))
    p = ev.aggregate(np.tile([[0.0], [60.0], [0.0]], (3_000, 1)))
    np.testing.assert_allclose(p[:2], [2 / 3 + 1e-12 / 3, 1 / 3 - 1e-12 / 3], rtol=0, atol=1e-11)


def test_sample_whose_densities_all_underflow_gets_quapys_uniform_estimate():
    # found by the mutation review: EM divided 0 by 0 and the estimate was nan (with a RuntimeWarning)
    ev = KDEyEvaluator(_HandKDEy([[0.0], [10.0]]))
    np.testing.assert_allclose(ev.aggregate(np.array([[60.0]])), [0.5, 0.5])


def test_densities_other_than_gaussian_euclidean_are_refused():
    msg = r"class 1: the capshift KDEy backend needs Gaussian kernels with the Euclidean metric; use kdey_backend='quapy'"
    V = np.array([[0.0], [1.0]])
    for other in (KernelDensity(kernel="tophat").fit(V), KernelDensity(metric="manhattan").fit(V),
                  SimpleNamespace(bandwidth_=1.0, tree_=SimpleNamespace(data=V))):   # no kernel attribute
        hand = _HandKDEy([[0.0], [1.0]])
        hand.mix_densities[1] = other
        with pytest.raises(ValueError, match=msg):
            KDEyEvaluator(hand)


def test_density_without_metric_attribute_is_read_as_euclidean():
    hand = _HandKDEy([[0.0], [1.0, 3.0]], h=0.5)
    ref = KDEyEvaluator(hand).log_densities(np.array([[0.5], [2.0]]))
    hand.mix_densities[1] = SimpleNamespace(kernel="gaussian", bandwidth_=0.5,
                                            tree_=SimpleNamespace(data=np.array([[1.0], [3.0]])))
    np.testing.assert_allclose(KDEyEvaluator(hand).log_densities(np.array([[0.5], [2.0]])), ref, rtol=1e-15)


def test_backend_errors_name_the_choices():
    with pytest.raises(TypeError, match=r"^kdey_backend must be one of \('capshift', 'quapy'\), got int$"):
        check_kdey_backend(1)
    with pytest.raises(ValueError) as err:
        check_kdey_backend("fast")
    assert str(err.value) == ("unknown kdey_backend 'fast'; choose one of ('capshift', 'quapy') ('capshift': vectorised "
                              "densities and an exact Newton solve, 'quapy': QuaPy's KDEyML.aggregate)")


# ---- mixture_ml: the EM start, closed-form ML weights, the active set and the KKT release ----

def test_mixture_ml_start_is_em_from_uniform():
    # one kind of item, densities (1, 1/2, 1/4) under three classes: an EM step multiplies each weight by its
    # density over the mixture's, so t steps from uniform give weights proportional to (1, 2^-t, 4^-t); with
    # max_iter=0 the result is that start, the classes at or below 1e-3 / 3 set to 0 (4^-10 is, 2^-11 is not)
    D, c = np.tile([[1.0], [0.5], [0.25]], (1, 4)), np.full(4, 1e-300)
    np.testing.assert_allclose(mixture_ml(D, c, max_iter=0), [1024 / 1025, 1 / 1025, 0], rtol=1e-13)
    np.testing.assert_allclose(mixture_ml(D, c, max_iter=0, em_steps=11), [2048 / 2049, 1 / 2049, 0], rtol=1e-13)
    np.testing.assert_allclose(mixture_ml(D, c, max_iter=0, em_steps=5),
                               np.array([1, 2 ** -5, 2 ** -10]) / (1 + 2 ** -5 + 2 ** -10), rtol=1e-13)
    np.testing.assert_allclose(mixture_ml(D, c, max_iter=0, em_steps=0), np.full(3, 1 / 3), rtol=1e-15)
    # two kinds of item, densities (1, 0) and (1/2, 1), offset 1/2: from (1/2, 1/2) the mixture densities plus c
    # are 1 and 5/4, one step gives (1/2 (1 + 2/5) / 2, 1/2 (4/5) / 2) = (0.35, 0.2) -> (7/11, 4/11); the next,
    # at 25/22 and 13/11, gives (539, 200) / 739
    D2, c2 = np.array([[1.0, 0.5], [0.0, 1.0]]), np.full(2, 0.5)
    np.testing.assert_allclose(mixture_ml(D2, c2, max_iter=0, em_steps=1), [7 / 11, 4 / 11], rtol=1e-14)
    np.testing.assert_allclose(mixture_ml(D2, c2, max_iter=0, em_steps=2), [539 / 739, 200 / 739], rtol=1e-14)
    # Newton's method from that start ends at the optimum: all the weight on the class of largest density
    np.testing.assert_allclose(mixture_ml(D, c), [1, 0, 0], atol=1e-15)


def test_mixture_ml_two_kinds_of_items_closed_form():
    # three items of densities (1, 1/4), one of (1/4, 1), offset c = 0.1: the stationarity condition
    # sum_k (a_k - b_k) / (b_k + c + p (a_k - b_k)) = 0 is linear in p, p = (2.475 - 0.2625) / 2.25 = 59/60
    # (1e-9: the stopping test's Newton decrement -g.d is at round-off near the optimum and may skip the last
    # quadratic step; here that leaves 3.5e-10)
    D, c = np.array([[1, 1, 1, 0.25], [0.25, 0.25, 0.25, 1]]), np.full(4, 0.1)
    np.testing.assert_allclose(mixture_ml(D, c), [59 / 60, 1 / 60], rtol=0, atol=1e-9)
    # a third class of density 1/2 on every item gets no weight (its gradient -2.76 is above the common -3.45),
    # whether EM leaves it out from the start or Newton's ratio test drops it (em_steps=0: start uniform)
    D3 = np.vstack([D, np.full(4, 0.5)])
    for em_steps in (10, 0):
        np.testing.assert_allclose(mixture_ml(D3, c, em_steps=em_steps), [59 / 60, 1 / 60, 0], rtol=0, atol=1e-9)
    # a class of density 0.3 on every item: EM leaves 1.9e-4 < 1e-3 / 3 on it, and the start drops it
    np.testing.assert_allclose(mixture_ml(np.vstack([D, np.full(4, 0.3)]), c), [59 / 60, 1 / 60, 0], rtol=0, atol=1e-9)
    # a class of tiny density (EM leaves it out at once) or of none at all (Newton from uniform drops it) neither
    D5 = np.vstack([D3, np.full(4, 1e-3), np.zeros(4)])
    for em_steps in (10, 0):
        np.testing.assert_allclose(mixture_ml(D5, c, em_steps=em_steps), [59 / 60, 1 / 60, 0, 0, 0], rtol=0, atol=1e-9)


def test_mixture_ml_releases_a_class_the_em_start_left_out():
    # separated classes, one item of 10,000 from class 1: EM puts 1e-4 < 1e-3 / 2 on it, so Newton starts on
    # class 0 alone; the KKT check adds class 1 back. Optimum: n0 / (p0 + c) = n1 / (p1 + c), p1 = (1 + 2c) / N - c
    N, c = 10_000, 1e-12
    D = np.zeros((2, N))
    D[0, 1:] = D[1, 0] = 1.0
    p = mixture_ml(D, np.full(N, c))
    np.testing.assert_allclose(p, [1 - ((1 + 2 * c) / N - c), (1 + 2 * c) / N - c], rtol=0, atol=1e-12)
    assert mixture_ml(D, np.full(N, c), max_iter=0)[1] == 0   # the start leaves class 1 out


def test_mixture_ml_two_classes_of_the_same_density():
    # classes 1 and 2 have the same densities: the objective is flat along p1 - p2 and only p1 + p2 = 1/60 is
    # determined (the 59/60 case above, items repeated 1,000 times); the flat direction must not stop the solve
    D = np.tile([[1, 1, 1, 0.25], [0.25, 0.25, 0.25, 1], [0.25, 0.25, 0.25, 1]], (1, 1000))
    p = mixture_ml(D, np.full(4000, 0.1))
    np.testing.assert_allclose([p[0], p[1] + p[2]], [59 / 60, 1 / 60], rtol=0, atol=1e-9)
    assert p.min() >= 0


def _assert_kkt(D, c, p, rtol):
    """p minimises -sum_k log(p . D[:, k] + c[k]) on the simplex: a common gradient mu on its support, and no
    class outside it whose gradient is below mu."""
    g = -(D / (p @ D + c)).sum(axis=1)
    on = p > 1e-9
    mu = g[on].mean()
    assert np.abs(g[on] - mu).max() <= rtol * abs(mu)
    assert np.all(g[~on] >= mu - rtol * abs(mu))


def test_mixture_ml_from_a_uniform_start_backtracks_to_the_optimum():
    # heavy-tailed densities (uniform ** 20: most items explained by one or two classes), a class of density 0,
    # EM skipped: Newton's method starts at the uniform weights, far from the optimum, where full steps overshoot
    rng = np.random.default_rng(5)
    for _ in range(60):
        D = rng.random((7, 28)) ** 20
        D[5] = 0.0
        c = np.full(28, 1e-3)
        p = mixture_ml(D, c, em_steps=0)
        assert p[5] == 0 and abs(p.sum() - 1) < 1e-12
        _assert_kkt(D, c, p, 1e-6)


def _refined(D, c, p, steps=3):
    """p after `steps` more Newton steps on its support, with the simplex constraint eliminated (the last
    supported class takes 1 - the others): a reference for where p's own solve should have stopped."""
    S = np.flatnonzero(p > 0)
    q = p.copy()
    for _ in range(steps):
        r = 1.0 / (q @ D + c)
        g, H = -(D[S] * r).sum(axis=1), (D[S] * r) @ (D[S] * r).T
        # reduced coordinates: dq_S = Z x with Z = [I; -1]
        Z = np.vstack([np.eye(len(S) - 1), -np.ones(len(S) - 1)])
        x = np.linalg.lstsq(Z.T @ H @ Z, -Z.T @ g, rcond=None)[0]
        q[S] += Z @ x
    return q


def test_mixture_ml_stops_within_1e_11_of_the_optimum():
    # the solver stops on its squared Newton decrement d'Hd at 1e-26 (1 + |f|) or where it stops shrinking;
    # computed as -g'd (equal in exact arithmetic) it came out negative at round-off and, with a 1e-20 threshold,
    # stopped up to 3e-9 short on these problems (now: 3e-13)
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(300):
        n, m = rng.integers(2, 12), rng.integers(2, 3000)
        D = rng.uniform(size=(n, m)) ** rng.integers(1, 50)
        if rng.uniform() < 0.3:
            D[rng.integers(n)] = 0.0
        c = np.full(m, 10 ** rng.uniform(-12, -1))
        p = mixture_ml(D, c)
        if (p > 0).sum() > 1:
            worst = max(worst, np.abs(_refined(D, c, p) - p).max())
    assert worst <= 1e-11


# ---- mixture_ml: the KKT check's tolerance decides a class at the margin; a flat direction made by a mixture ----

def test_mixture_ml_kkt_check_releases_a_class_only_beyond_its_tolerance():
    # class 0 has density s on every one of m items, class 1 density x on item 0 only, offset c: at p = (1, 0) the
    # multiplier is mu = g0 = -m s / (s + c) and g1 = -x / (s + c). A class at 0 is released when g1 < mu - tol,
    # tol = 1e-10 (1 + |mu|); then the optimum is t* = (s + c)(x - m s) / (m s (x - s)) on class 1. Here Newton's
    # first step from the EM start drops class 1 at 0 (ratio test), and the KKT check decides
    m, s, c = 1000, 1e-3, 1.0
    mu = -m * s / (s + c)
    tol = 1e-10 * (1 + abs(mu))
    D = np.zeros((2, m))
    D[0] = s
    for kappa in (0.5, 1.25):                      # g1 = mu - kappa tol
        D[1, 0] = x = (abs(mu) + kappa * tol) * (s + c)
        p = mixture_ml(D, np.full(m, c))
        if kappa < 1:                              # within the tolerance: left at exactly 0 (t* would be 1e-10)
            assert p.tolist() == [1.0, 0.0]
        else:                                      # beyond it: released, and given its optimal weight 2.5e-10
            t = (s + c) * (x - m * s) / (m * s * (x - s))
            np.testing.assert_allclose(p, [1 - t, t], rtol=1e-5, atol=0)
    assert mixture_ml(D, np.full(m, c), max_iter=0)[1] > 0.1   # the EM start keeps class 1: the ratio test drops it


def test_mixture_ml_flat_direction_of_a_mixture_class_keeps_the_optimal_mixture_density():
    # class 2's densities are the mean of classes 0 and 1: the objective is flat along (1, 1, -2), and only the
    # mixture density p . D (what the objective sees) is determined; it is the optimum's to 1e-12 (the Newton
    # matrix's ridge along the flat direction keeps the decrement d'Hd >= 0, so the solve does not stop early)
    rng = np.random.default_rng(3)
    for _ in range(12):
        m = int(rng.integers(100, 800))
        D = rng.uniform(size=(6, m)) ** int(rng.integers(1, 10))
        D[2] = 0.5 * (D[0] + D[1])
        c = np.full(m, 1e-6)
        p = mixture_ml(D, c)
        q, ref = p @ D, _refined(D, c, p) @ D
        assert np.abs(q - ref).max() <= 1e-12 * ref.max()


def test_mixture_ml_start_keeps_only_classes_strictly_above_the_threshold():
    # one item of densities (1, x): one EM step from (1/2, 1/2) gives (1, x) / (1 + x); at x = 0.0005 / 0.9995 the
    # second weight is the float 1e-3 / 2 itself, which the start leaves out (free: p > 1e-3 / n); a float above, in
    x = 0.0005 / 0.9995
    D, c = np.array([[1.0], [x]]), np.array([0.5])
    assert mixture_ml(D, c, max_iter=0, em_steps=1).tolist() == [1.0, 0.0]
    D[1, 0] = np.nextafter(x, 1.0)
    np.testing.assert_allclose(mixture_ml(D, c, max_iter=0, em_steps=1), [1 - 5e-4, 5e-4], rtol=1e-12)


def test_mixture_ml_kkt_check_releases_every_violator_at_its_best_weight():
    # separated classes (density 1 on their own items): class 0 on 9,997 items, class 1 on one, class 2 on two. EM
    # leaves classes 1 and 2 out (weights ~1e-4 < 1e-3 / 3); Newton's first iteration is done on class 0 alone and
    # the KKT check releases classes 1 and 2 together, each at the best weight along e_j - p: class 1 at t = 1 / N
    # (up to c), then class 2 at 2 / (N - 1) of the rest, i.e. n_i / N after one iteration. The optimum: n_i / (p_i +
    # c) equal, p_i = n_i (1 + 3c) / N - c
    N, c = 10_000, 1e-12
    D = np.zeros((3, N))
    D[0, 3:] = D[1, 0] = D[2, 1:3] = 1.0
    n = np.array([N - 3, 1, 2])
    assert mixture_ml(D, np.full(N, c), max_iter=0).tolist() == [1.0, 0.0, 0.0]
    np.testing.assert_allclose(mixture_ml(D, np.full(N, c), max_iter=1), n / N, rtol=0, atol=1e-11)
    np.testing.assert_allclose(mixture_ml(D, np.full(N, c)), n * (1 + 3 * c) / N - c, rtol=0, atol=1e-12)


def test_release_weight_closed_forms():
    # class 0 alone on a items, class 1 alone on b: along (1 - t) e_0 + t e_1 the minimiser solves a (t + c) =
    # b (1 - t + c), t = (b (1 + c) - a c) / (a + b); class 2 explains nothing and stays at 0
    a, b, c = 3, 1, 1e-3
    D = np.zeros((3, a + b))
    D[0, :a] = D[1, a:] = 1.0
    p = release_weight(D, np.full(a + b, c), np.array([1.0, 0.0, 0.0]), 1)
    np.testing.assert_allclose(p, [1 - 0.2495, 0.2495, 0.0], rtol=0, atol=1e-15)
    # from (1/2, 0, 1/2) class 0's items have likelihood (1 - t) / 2 + c: t = (b (1 + 2c) - a c) / (a + b)
    np.testing.assert_allclose(release_weight(D, np.full(a + b, c), np.array([0.5, 0.0, 0.5]), 1),
                               [0.5 * (1 - 0.24975), 0.24975, 0.5 * (1 - 0.24975)], rtol=0, atol=1e-15)
    assert release_weight(D, np.full(a + b, c), np.array([1.0, 0.0, 0.0]), 2).tolist() == [1.0, 0.0, 0.0]
    # a class that already has weight keeps it: from (.8, .2, 0), 3 (.8 (1 - t) + c) = .2 + .8 t + c gives
    # t = (.2 - 2c) / 3.2, and class 1 ends at .2 (1 - t) + t
    t = (0.2 - 2 * c) / 3.2
    np.testing.assert_allclose(release_weight(D, np.full(a + b, c), np.array([0.8, 0.2, 0.0]), 1),
                               [0.8 * (1 - t), 0.2 * (1 - t) + t, 0.0], rtol=0, atol=1e-15)
    # a class that explains every item better than p takes all the weight; one that explains them as well (flat
    # along e_j - p) or worse takes none
    D2 = np.array([[1.0, 1.0], [2.0, 2.0], [1.0, 1.0], [0.5, 0.5]])
    start = np.array([1.0, 0.0, 0.0, 0.0])
    assert release_weight(D2, np.full(2, c), start, 1).tolist() == [0.0, 1.0, 0.0, 0.0]
    assert release_weight(D2, np.full(2, c), start, 2).tolist() == start.tolist()
    assert release_weight(D2, np.full(2, c), start, 3).tolist() == start.tolist()


def test_mixture_ml_checks_kkt_after_a_flat_direction_stops_the_newton_steps():
    # a flat direction (class 3 the mean of classes 0 and 1) can keep the decrement at its round-off floor, above
    # 1e-26 (1 + |f|): the Newton steps then stop on "no longer shrinking", and the KKT check must still run and
    # release class 4 (the only class of item 0, which EM left out at ~1e-4 < 1e-3 / 5): the end is the optimum
    rng = np.random.default_rng(0)
    for _ in range(3):
        m = int(rng.integers(6000, 9000))
        D = np.zeros((5, m))
        D[:3, 1:] = rng.uniform(size=(3, m - 1)) ** int(rng.integers(1, 6))
        D[3] = 0.5 * (D[0] + D[1])
        D[4, 0] = 1.0
        c = np.full(m, 10 ** rng.uniform(-12, -3))
        assert mixture_ml(D, c, max_iter=0)[4] == 0
        p = mixture_ml(D, c)
        assert p[4] > 5e-5
        _assert_kkt(D, c, p, 1e-9)
        q, ref = p @ D, _refined(D, c, p) @ D
        assert np.abs(q - ref).max() <= 1e-12 * ref.max()


def test_log_space_objective_is_quapys_up_to_a_constant():
    # QuaPy's log-space objective -sum_k logsumexp(log((p + eps) / (1 + n eps)) + logd_k) is, up to a constant,
    # -sum_k log(p . D_k + eps s_k) with D_k = exp(logd_k - max) and s_k = sum_i D_ik: item 1 below has relative
    # density 1 under 29 classes (s = 29), so where those classes have weights ~1e-12 the offset is half the term
    n = 30
    ev = KDEyEvaluator(_HandKDEy([[0.0], [10.0]] + [[1000.0 * i] for i in range(2, n)]))
    assert ev.log_space
    logd = np.full((n, 3), -5.0)
    logd[0] = [-1.0, -np.inf, -3.0]   # item 0: class 0 (the others e^-4 below); item 1: every class but 0
    logd[7, 2] = -2.0                 # item 2: classes 0 and 7 ahead
    D, c = ev._objective(logd)
    np.testing.assert_allclose(c, 1e-12 * D.sum(axis=0), rtol=1e-15)
    F = _quapy_objective(None, logd)
    diffs = []
    for tiny in (None, 1e-9, 1e-12, 0.0):
        p = np.full(n, 1 / n) if tiny is None else np.r_[1 - (n - 1) * tiny, np.full(n - 1, tiny)]
        diffs.append(F(p) + np.log(p @ D + c).sum())
    np.testing.assert_allclose(diffs, diffs[0], rtol=1e-12)



def test_mixture_ml_halves_a_blocked_step_that_ends_on_the_barrier():
    # class 1 alone explains item 0 (densities (0, 1)); on the other 49 items class 0 has density 1 and class 1 1/2.
    # From the uniform start (em_steps=0) Newton's step overshoots below p1 = 0 (amax = 0.42); the ratio test stops
    # it at p1 = 0, where item 0's term is -log(c): with c = 3.773e-7 the objective there is 6.6e-4 above the
    # start's, short of Armijo's decrease 1e-4 amax d'Hd = 1.5e-3, so the step is halved and one iteration gives
    # (3/4, 1/4). The optimum: 2 (1 - t/2 + c) = (N - 1)(t + c), t = (2 - (N - 3) c) / N
    N, c = 50, 3.773e-7
    D = np.vstack([np.r_[0.0, np.ones(N - 1)], np.r_[1.0, np.full(N - 1, 0.5)]])
    f = lambda p: -np.log(np.asarray(p) @ D + c).sum()
    assert 5e-4 < f([1, 0]) - f([0.5, 0.5]) < 1e-3
    np.testing.assert_allclose(mixture_ml(D, np.full(N, c), em_steps=0, max_iter=1), [0.75, 0.25], rtol=1e-12)
    t = (2 - (N - 3) * c) / N
    np.testing.assert_allclose(mixture_ml(D, np.full(N, c), em_steps=0), [1 - t, t], rtol=0, atol=1e-12)

def test_mixture_ml_reaches_the_optimum_when_the_kkt_check_releases_many_classes():
    # separated classes: class 0 on N - 9 items, classes 1-9 on one item each; EM leaves 1-9 out (1 / N < 1e-3 / 10)
    # and each must be released. Optimum: p_i = n_i (1 + 10c) / N - c
    N, k, c = 12_000, 9, 1e-12
    D = np.zeros((k + 1, N))
    D[0, k:] = 1.0
    D[1 + np.arange(k), np.arange(k)] = 1.0
    n = np.r_[N - k, np.ones(k)]
    np.testing.assert_allclose(mixture_ml(D, np.full(N, c)), n * (1 + (k + 1) * c) / N - c, rtol=0, atol=1e-12)

"""Calibration of h's posteriors (capshift.calibration): temperature scaling, BCTS with its zero floor, SLD, LasCal
and its RLLS weights. The CBPE variants built on them are tested in test_baselines.py."""
import linecache
import pickle
import re
import warnings

import abstention.label_shift
import cvxpy as cp
import numpy as np
import pytest
from abstention.calibration import TempScaling
from quapy.method.aggregative import EMQ
from scipy.optimize import minimize_scalar
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

from capshift import base, baselines, calibration, experiment, validation
from capshift.baselines import CBPE
from capshift.calibration import BCTS, FLOOR_STEPS, RLLS, mean_posterior, rlls_weights, sld_adjust
from capshift.validation import CalibrationWarning


# -- LasCal and RLLS ---------------------------------------------------------------------------------------------
_MU = np.array([[0.0, 0.0], [1.6, 0.0], [0.8, 1.4]])  # 3 Gaussian classes (unit covariance), test_baselines' centres
_P_V = np.full(3, 1 / 3)
_SHIFTED = np.array([0.6, 0.3, 0.1])


def _scaled_posteriors(m, prior, rng, c):
    """m items of the 3 Gaussians drawn with class prior ``prior``: the posteriors of a classifier whose logits are
    c times the Bayes log-posteriors for the uniform source prior (miscalibrated by a known temperature: dividing
    its logits by T = c restores them), the labels, and the exact target posteriors p_U(y|x)."""
    y = rng.choice(3, size=m, p=prior)
    X = _MU[y] + rng.normal(size=(m, 2))
    loglik = -0.5 * ((X[:, None, :] - _MU[None]) ** 2).sum(axis=-1)
    z = np.log(_P_V) + loglik
    P = np.exp(c * z - (c * z).max(axis=1, keepdims=True))
    Pt = np.exp(np.log(prior) + loglik - loglik.max(axis=1, keepdims=True))
    return P / P.sum(axis=1, keepdims=True), y, Pt / Pt.sum(axis=1, keepdims=True)


def test_temperature_scale():
    P = np.array([[0.7, 0.2, 0.1], [1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    np.testing.assert_allclose(calibration.temperature_scale(P, 1.0), P, atol=1e-15)
    flat, sharp = calibration.temperature_scale(P, 2.0), calibration.temperature_scale(P, 0.5)
    np.testing.assert_allclose(flat[0], np.sqrt(P[0]) / np.sqrt(P[0]).sum())  # softmax(log P / 2) = sqrt(P), normalised
    np.testing.assert_allclose(sharp[0], P[0] ** 2 / (P[0] ** 2).sum())
    assert flat[1].tolist() == [1, 0, 0] and sharp[2].tolist() == [0.5, 0.5, 0]  # zeros stay 0, ties stay tied


@pytest.mark.parametrize("c", [2.0, 0.5])
def test_lascal_recovers_a_known_temperature_under_label_shift(c):
    # h's logits are c times the Bayes log-posteriors of V (uniform prior); the target U has prior (.6, .3, .1).
    # The temperature minimising U's true classwise CE (E_U over 200k items of mean_k (f_k - p_U(k|x))^2, with
    # p_U(y|x) exact) is c here (checked on a grid c * 2^(j/24): the label-shift optimum coincides with c within
    # the grid's 3% step), so LasCal, fitted on V's labels and U's posteriors only, must land near c. Spread: over 20
    # repetitions with |V| = |U| = 4000, log T has sd 0.08 (measured), so the median of 5 has sd about 0.045;
    # 15% (3 sd) is the tolerance. Uncalibrated (T = 1) is 100% (c = 2) or 50% (c = 0.5) off.
    rng = np.random.default_rng(0)
    grid = c * 2.0 ** (np.arange(-24, 25) / 24)
    P, _, Pt = _scaled_posteriors(200_000, _SHIFTED, np.random.default_rng(1), c)
    ce = [np.mean((calibration.temperature_scale(P, T) - Pt) ** 2) for T in grid]
    assert grid[int(np.argmin(ce))] == pytest.approx(c, rel=0.03)
    Ts = []
    for _ in range(5):
        P_V, y_V, _ = _scaled_posteriors(4000, _P_V, rng, c)
        P_U, _, _ = _scaled_posteriors(4000, _SHIFTED, rng, c)
        w = calibration.rlls_weights(P_V, y_V, P_U)
        Ts.append(calibration.lascal_temperature(P_V, y_V, P_U, w)[0])
    assert np.median(Ts) == pytest.approx(c, rel=0.15), Ts


def test_lascal_calibration_error_by_hand():
    # one bin (n_bins=1): the target scores of class 1 are t = (.2, .4, .6, .8), so the bin is (.2, .8] (the
    # authors' half-open bins) with m_b = 3 target items; V's class-1 items with scores in it: .3 and .7 (not .9),
    # 2 of |V| = 4. c = w_1 * (2/4) * (m - 1)/(m_b - 1) = 1.5 * 0.5 * 3/2 = 1.125 (not clipped), and the estimate is
    # ((.4 - c)^2 + (.6 - c)^2 + (.8 - c)^2) / 4 = 0.22671875.
    t = np.array([0.2, 0.4, 0.6, 0.8])
    s = np.array([0.3, 0.5, 0.9, 0.7])
    P = np.column_stack([1 - t, t])
    P_val = np.column_stack([1 - s, s])
    ce = calibration.lascal_calibration_error(P_val, [1, 0, 1, 1], P, [0.5, 1.5], n_bins=1)
    assert ce[1] == pytest.approx(0.22671875, abs=1e-15)
    # the labelled counterpart: leave-one-out frequency of class 1 among the other items of the bin
    lab = calibration.classwise_calibration_error(P, [0, 1, 1, 0], n_bins=1)
    assert lab[1] == pytest.approx(((0.4 - 0.5) ** 2 + (0.6 - 0.5) ** 2 + (0.8 - 1.0) ** 2) / 4, abs=1e-15)


def test_lascal_rlls_weights_are_the_authors_estimator():
    # LasCal's default weights ("rlls-hard") are abstention's RLLSImbalanceAdapter (Azizzadenesheli et al. 2019,
    # the regularised BBSE): ours solve the same convex problem
    rng = np.random.default_rng(2)
    P_V, y_V, _ = _scaled_posteriors(1000, _P_V, rng, 2.0)
    P_U, _, _ = _scaled_posteriors(300, _SHIFTED, rng, 2.0)
    theirs = abstention.label_shift.RLLSImbalanceAdapter()(
        valid_labels=np.eye(3)[y_V], tofit_initial_posterior_probs=P_U, valid_posterior_probs=P_V).multipliers
    np.testing.assert_allclose(calibration.rlls_weights(P_V, y_V, P_U), theirs, atol=1e-6)


def test_lascal_rlls_weights_estimate_the_prior_ratio():
    rng = np.random.default_rng(3)
    P_V, y_V, _ = _scaled_posteriors(8000, _P_V, rng, 1.0)
    P_U, _, _ = _scaled_posteriors(8000, _SHIFTED, rng, 1.0)
    w = calibration.rlls_weights(P_V, y_V, P_U)
    np.testing.assert_allclose(w, _SHIFTED / (np.bincount(y_V) / len(y_V)), atol=0.15)  # true ratio (1.8, .9, .3)


def test_lascal_calibration_error_is_consistent():
    # The label-free estimate (V's labels reweighted by w, U's posteriors) converges to the labelled classwise CE of
    # U (the authors' estimator with U's labels, which LasCal never sees). Gap: sum over the 3 classes of
    # |label-free - labelled|, mean over 10 repetitions with |V| = |U| = n, h overconfident (c = 2). Measured, for
    # the true weights / RLLS's / w = 1 (ignoring the shift): 0.128 / 0.148 / 0.102 at n = 250, 0.030 / 0.043 /
    # 0.062 at 1000, 0.014 / 0.027 / 0.047 at 4000, 0.005 / 0.007 / 0.037 at 16000. A consistent estimator must
    # shrink the gap with n: n = 4000 must be at least 3 times better than n = 250 (root-n: 4); without the
    # importance weights it must not be (it stays more than twice the weighted gap at n = 4000).
    def gaps(n):
        rng = np.random.default_rng(5)
        out = []
        for _ in range(10):
            P_V, y_V, _ = _scaled_posteriors(n, _P_V, rng, 2.0)
            P_U, y_U, _ = _scaled_posteriors(n, _SHIFTED, rng, 2.0)
            labelled = calibration.classwise_calibration_error(P_U, y_U)
            weights = [_SHIFTED / (np.bincount(y_V, minlength=3) / n), calibration.rlls_weights(P_V, y_V, P_U), np.ones(3)]
            out.append([np.abs(calibration.lascal_calibration_error(P_V, y_V, P_U, w) - labelled).sum() for w in weights])
        return np.mean(out, axis=0)
    small, large = gaps(250), gaps(4000)
    assert large[0] < small[0] / 3 and large[1] < small[1] / 3, (small, large)
    assert large[2] > 2 * large[0], (small, large)


def _lascal_temperature_reference(P_val, y_val, P, w, p=2):
    """LasCal's temperature search as it was before the vectorised search (commit 33cd65f), one loss evaluation at a
    time on the public functions: the grid's losses, then bounded Brent on log T around the best grid value."""
    from scipy.optimize import minimize_scalar
    grid = calibration.LASCAL_TEMPERATURES

    def loss(T):
        return float(np.mean(calibration.lascal_calibration_error(
            calibration.temperature_scale(P_val, T), y_val, calibration.temperature_scale(P, T), w, p=p)))

    if ((P == 0) | (P == P.max(axis=1, keepdims=True))).all():
        return 1.0, loss(1.0)
    losses = np.array([loss(T) for T in grid])
    if np.ptp(losses) == 0.0:
        return 1.0, loss(1.0)
    k = int(np.argmin(losses))
    best_T, best = float(grid[k]), float(losses[k])
    lo, hi = np.log(grid[max(k - 1, 0)]), np.log(grid[min(k + 1, grid.size - 1)])
    res = minimize_scalar(lambda u: loss(np.exp(u)), bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
    if res.fun < best:
        best_T, best = float(np.exp(res.x)), float(res.fun)
    return best_T, best


def test_lascal_temperature_on_a_one_value_grid_is_that_value_with_its_loss():
    rng = np.random.default_rng(3)
    P_val, P = rng.dirichlet(np.ones(3), size=60), rng.dirichlet(np.ones(3), size=20)
    y_val, w = rng.integers(0, 3, 60), np.array([0.5, 1.0, 1.5])

    def loss(T):
        return float(np.mean(calibration.lascal_calibration_error(
            calibration.temperature_scale(P_val, T), y_val, calibration.temperature_scale(P, T), w)))
    assert calibration.lascal_temperature(P_val, y_val, P, w, temperatures=[2.0]) == (2.0, loss(2.0))
    assert loss(2.0) != loss(1.0)  # so returning T = 1 or its loss would fail


def test_lascal_temperature_is_the_one_loss_at_a_time_search():
    # lascal_temperature evaluates the loss for the 100 grid temperatures and all classes at once (and L-CBPE keeps
    # V's side of the grid between samples); it must give the temperature and loss of the loss-by-loss search
    # exactly (==, not approx: the binned loss jumps, so a last-bit difference could move Brent's path). Cases with
    # exact zeros and ties (rounded posteriors), samples of 1 to 150 items (above 128 numpy sums by halves), p = 3.
    rng = np.random.default_rng(7)
    for case in range(24):
        n, n_v, m = int(rng.integers(2, 9)), int(rng.integers(30, 300)), int([1, 2, 7, 40, 100, 150][case % 6])
        conc = [0.2, 1.0, 3.0][case % 3]
        P_val, P = rng.dirichlet(np.full(n, conc), size=n_v), rng.dirichlet(np.full(n, conc), size=m)
        if case % 4 == 1:  # exact zeros
            P_val, P = [np.where(Q < 0.05, 0.0, Q) for Q in (P_val, P)]
        if case % 4 == 2:  # ties
            P_val, P = [np.round(Q, 1) + 1e-9 for Q in (P_val, P)]
        P_val, P = [Q / Q.sum(axis=1, keepdims=True) for Q in (P_val, P)]
        y_val, w = rng.integers(0, n, n_v), rng.uniform(0, 2, n) * (rng.random(n) > 0.1)
        p = 3 if case % 5 == 4 else 2
        assert calibration.lascal_temperature(P_val, y_val, P, w, p=p) == \
            _lascal_temperature_reference(P_val, y_val, P, w, p=p), case
    # L-CBPE on a real classifier: LR on german, UPP samples of 100, temperatures of est.lascal against the reference
    ctx = experiment.prepare("german", "lr", [], "upp", 6, 100, 0)
    est = CBPE(ctx.h, calibration="lascal").fit(ctx.split.X_V, ctx.split.y_V)
    P_val = ctx.h.predict_proba(ctx.split.X_V)
    for idx in ctx.idx:
        P = ctx.h.predict_proba(ctx.split.X_U[idx])
        T, w = est.lascal(P)
        assert T == _lascal_temperature_reference(P_val, ctx.split.y_V, P, w)[0]



def test_fminbound_many_is_scipys_bounded_search_on_each_function():
    # the lockstep search must reproduce scipy's minimize_scalar(method="bounded") on every function: same minimiser,
    # value and number of evaluations (==), on smooth, flat, stepped and noisy functions, with maxfun reached too
    from scipy.optimize import minimize_scalar
    rng = np.random.default_rng(11)
    shift, scale = rng.uniform(-2, 2, 12), rng.uniform(0.1, 3, 12)

    def one(x, i):
        kind = i % 4
        if kind == 0:
            return (x - shift[i]) ** 2 * scale[i]
        if kind == 1:
            return np.zeros_like(x) if np.ndim(x) else 0.0  # flat: every step is a tie
        if kind == 2:
            return np.floor((x - shift[i]) * 7 * scale[i]) ** 2  # stepped, as the binned LasCal loss
        return np.abs(x - shift[i]) + 0.05 * np.sin(40 * x * scale[i])  # many local minima

    lo, hi = rng.uniform(-3, 0, 12), rng.uniform(0.01, 3, 12)
    calls = []
    for maxfun, xatol in ((500, 1e-4), (500, 1e-9), (6, 1e-4), (1, 1e-4)):
        x, fx = calibration._fminbound_many(lambda u, idx: (calls.append(len(idx)),
                                                            np.array([one(a, i) for a, i in zip(u, idx)]))[1],
                                            lo, hi, xatol=xatol, maxfun=maxfun)
        for i in range(12):
            res = minimize_scalar(lambda u: one(u, i), bounds=(lo[i], hi[i]), method="bounded",
                                  options={"xatol": xatol, "maxiter": maxfun})
            assert (x[i], fx[i]) == (res.x, res.fun), (maxfun, xatol, i)
    assert calls[0] == 12 and min(calls) < 12  # all functions at once, then only those not yet converged


def test_lascal_temperatures_of_a_stack_are_those_of_each_sample():
    # LasCalLoss.temperatures searches a stack of samples at once (in chunks, with the lockstep search): each
    # sample's (T, loss) must be lascal_temperature's on that sample alone (==), whatever the chunk size; samples
    # with one-hot rows (T = 1), ties and zero weights mixed in
    rng = np.random.default_rng(5)
    for n, n_v, m in ((2, 150, 40), (5, 300, 100), (3, 80, 7)):
        P_val = rng.dirichlet(np.full(n, 0.7), size=n_v)
        y_val = rng.integers(0, n, n_v)
        P = rng.dirichlet(np.full(n, 0.7), size=(9, m))
        P[3] = np.eye(n)[rng.integers(0, n, m)]  # one-hot: T = 1
        P[5] = np.round(P[5], 1) + 1e-9
        P[5] /= P[5].sum(axis=1, keepdims=True)
        w = rng.uniform(0, 2, (9, n))
        w[7] = 0.0  # zero weights
        expected = [calibration.lascal_temperature(P_val, y_val, P[i], w[i]) for i in range(9)]
        for chunk in (1 << 21, 1):
            loss = calibration.LasCalLoss(P_val, y_val, 15, 2, calibration.LASCAL_TEMPERATURES)
            loss.CHUNK = chunk
            T, value = loss.temperatures(P, w)
            assert [(float(a), float(b)) for a, b in zip(T, value)] == expected, (n, chunk)
        assert expected[3][0] == 1.0 and len({T for T, _ in expected}) > 1  # searched, not all T = 1


def test_the_row_sums_of_the_used_entries_are_numpys_sums_of_each_row():
    # LasCal's loss sums each row's used entries as np.sum(x[u]) does (pairwise summation: sequential below 8 terms,
    # 8 accumulators up to 128, halves above), bit for bit, whatever the rows' lengths and how many entries are used
    rng = np.random.default_rng(11)
    for m in (1, 3, 7, 8, 9, 16, 17, 99, 100, 127, 128, 129, 300):
        X = rng.random((400, m)) ** 3 * 10.0 ** rng.uniform(-8, 2, (400, 1))
        use = rng.random((400, m)) > rng.uniform(0, 0.6, (400, 1))
        use[0] = False  # a row with nothing used sums to 0
        got = calibration._pairwise_row_sums(X, use)
        assert got.tolist() == [float(np.sum(x[u])) for x, u in zip(X, use)], m
        assert got[0] == 0.0


def test_short_rows_are_summed_and_maximised_as_numpy_does():
    # the running sum and maximum over a short last axis (fewer than 8 terms) equal numpy's reductions (==)
    rng = np.random.default_rng(12)
    for n in range(1, 12):
        A = rng.random((6, 50, n)) * 10.0 ** rng.uniform(-12, 3, (6, 50, n))
        assert np.array_equal(calibration._row_sum(A), A.sum(axis=-1, keepdims=True)), n
        assert np.array_equal(calibration._row_max(A), A.max(axis=-1, keepdims=True)), n


def test_rlls_solves_each_distinct_problem_once(monkeypatch):
    # RLLS reads a sample through its size and the counts of h's decisions: samples that share them share the
    # solution (solved once), and the weights are those of a fresh RLLS (==)
    rng = np.random.default_rng(4)
    P_V, y_V, _ = _scaled_posteriors(600, _P_V, rng, 1.0)
    samples = [_scaled_posteriors(50, _SHIFTED, rng, 1.0)[0] for _ in range(6)]
    samples += [samples[0][::-1].copy(), samples[1][:40]]  # the counts of sample 0; a different size
    rlls = calibration.RLLS(P_V, y_V, 3)
    solved = []
    original = calibration.RLLS._solve
    monkeypatch.setattr(calibration.RLLS, "_solve", lambda self, mu: (solved.append(mu), original(self, mu))[1])
    for P in samples:
        w, ok = rlls.weights(P)
        assert ok and np.array_equal(w, calibration.RLLS(P_V, y_V, 3).weights(P)[0])
    distinct = {(len(P), np.bincount(P.argmax(axis=1), minlength=3).tobytes()) for P in samples}
    assert len(distinct) == 7 and len(solved) == 7 + 8  # 7 distinct problems here; one per fresh RLLS
    w = rlls.weights(samples[0])[0]
    w[:] = -1.0  # the caller's copy: the cached solution is not changed
    assert (rlls.weights(samples[0])[0] >= 0).all()


# -- BCTS, its zero floor, and SLD -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lr_problem():
    """LR on 3 Gaussian classes: posteriors on V (with labels) and on a shifted sample, none of them exactly 0."""
    rng = np.random.default_rng(1)
    X_L, y_L = _MU[(y := rng.choice(3, 2000))] + rng.normal(size=(2000, 2)), y
    h = LogisticRegression().fit(X_L, y_L)
    y_V = rng.choice(3, 3000)
    X_V = _MU[y_V] + rng.normal(size=(3000, 2))
    X_U = _MU[rng.choice(3, 200, p=_SHIFTED)] + rng.normal(size=(200, 2))
    P_V, P = h.predict_proba(X_V), h.predict_proba(X_U)
    assert (P_V > 0).all() and (P > 0).all()
    return h, P_V, y_V, X_U, P


def test_bcts_is_abstentions_tempscaling_and_quapys_emq_bcts(lr_problem):
    # without exact zeros, BCTS is the calibration function QuaPy's EMQ(calib="bcts") fits (abstention's
    # TempScaling(bias_positions="all") on the one-hot labels), its prior is QuaPy's train_prevalence, and SLD from it
    # gives QuaPy's EMQ-BCTS prevalence estimate and posteriors, read through QuaPy's public API
    h, P_V, y_V, X_U, P = lr_problem
    bcts = BCTS().fit(P_V, y_V)
    assert bcts.bcts_ and bcts.floor_ == 0.5 * P_V.min()
    f = TempScaling(bias_positions="all")(P_V, np.eye(3)[y_V], posterior_supplied=True)
    np.testing.assert_array_equal(bcts.calibrate(P), f(P))
    emq = EMQ(h, fit_classifier=False, val_split=None, exact_train_prev=False, calib="bcts")
    emq.aggregation_fit(P_V, y_V)
    np.testing.assert_array_equal(bcts.prior_, emq.train_prevalence)
    np.testing.assert_array_equal(bcts.prior_, f(P_V).mean(axis=0) / f(P_V).mean(axis=0).sum())
    theirs = emq.aggregate(P)
    ours, _ = EMQ.EM(bcts.prior_, bcts.calibrate(P))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    assert np.abs(theirs - mean_posterior(P)).max() > 0.01  # SLD moved the prior: the comparison is not vacuous
    expected = emq.predict_proba(X_U)
    np.testing.assert_array_equal(sld_adjust(bcts.calibrate(P), bcts.prior_),
                                  expected / expected.sum(axis=1, keepdims=True))


def test_bcts_calibrates_an_overconfident_classifier():
    # logits twice the Bayes log-posteriors: BCTS (fitted on V's labels) brings the sample's posteriors back to the
    # Bayes posteriors (temperature about 2), and its NLL on the sample drops well below the uncalibrated one
    rng = np.random.default_rng(4)
    P_V, y_V, _ = _scaled_posteriors(4000, _P_V, rng, 2.0)
    P, y, P_true = _scaled_posteriors(2000, _P_V, rng, 2.0)
    C = BCTS().fit(P_V, y_V).calibrate(P)
    assert np.abs(C - P_true).mean() < 0.01 < np.abs(P - P_true).mean()

    def nll(Q):
        return -np.mean(np.log(Q[np.arange(len(y)), y]))
    assert nll(C) < nll(P) - 0.05 and nll(C) == pytest.approx(nll(P_true), abs=0.01)


def _nll_of_floor(P_val, y_val, floor):
    """NLL on V of abstention's BCTS fitted on V with exact zeros raised to floor (NaN if the fit fails)."""
    Pf = np.where(P_val > 0, P_val, floor)
    n = P_val.shape[1]
    try:
        Q = TempScaling(bias_positions="all")(Pf, np.eye(n)[y_val], posterior_supplied=True)(Pf)
    except AssertionError:
        return np.nan
    return -np.mean(np.log(Q[np.arange(len(y_val)), y_val]))


def _votes(rows):
    """Binary vote fractions of a 10-NN: (P (m, 2), y (m,)) from (fraction of votes for class 1, label) pairs."""
    p1 = np.array([r[0] for r in rows])
    return np.column_stack([1 - p1, p1]), np.array([r[1] for r in rows])


_MIXED = [(0.2, 0), (0.3, 1), (0.6, 0), (0.7, 1), (0.8, 1), (0.4, 0), (0.1, 0), (0.9, 1)]


@pytest.mark.parametrize("confident_miss", [False, True])
def test_bcts_floor_is_chosen_by_likelihood(confident_miss):
    # 10-NN vote fractions: unanimous items (posteriors 0 and 1) and mixed ones; the smallest positive posterior is
    # 0.1 (1 - 0.9 here, a hair below), so the candidate floors are 0.05 * (1, 1e-3, 1e-6, 1e-9, 1e-12). Without a confident miss, every zero is
    # on a class the item does not have: the smaller the floor, the surer (and righter) the unanimous items, so the
    # smallest floor wins. One unanimous item of the wrong class (posterior 0 on its label) costs log(1 / floor):
    # then the largest floor wins. In both cases floor_ is the candidate of smallest NLL, computed here directly
    # with abstention.
    rows = [(0.0, 0)] * 4 + [(1.0, 1)] * 4 + _MIXED + ([(1.0, 0)] if confident_miss else [])
    P_val, y_val = _votes(rows)
    bcts = BCTS().fit(P_val, y_val)
    candidates = 0.5 * P_val[P_val > 0].min() * FLOOR_STEPS
    np.testing.assert_allclose(candidates, 0.05 * FLOOR_STEPS, rtol=1e-14)
    nll = np.array([_nll_of_floor(P_val, y_val, f) for f in candidates])
    assert np.isfinite(nll).all()
    assert bcts.bcts_ and bcts.floor_ == candidates[int(np.argmin(nll))]
    if confident_miss:
        assert bcts.floor_ == candidates[0] and (np.diff(nll) > 0).all() and nll[-1] - nll[0] > 0.05, nll
    else:
        assert bcts.floor_ == candidates[-1] and nll[0] - nll.min() > 0.004, nll
    # the floor raises exact zeros on every sample, and leaves positive posteriors alone
    P = np.array([[1.0, 0.0], [0.3, 0.7]])
    f = TempScaling(bias_positions="all")(np.where(P_val > 0, P_val, bcts.floor_), np.eye(2)[y_val],
                                          posterior_supplied=True)
    np.testing.assert_array_equal(bcts.calibrate(P), f(np.where(P > 0, P, bcts.floor_)))
    C = bcts.calibrate(P)
    assert 0 < C[0, 1] < C[1, 0]  # the zero became a positive posterior, below a 3-vote one


def _separated(n_classes, zeros):
    """V that h separates perfectly: every item's largest posterior (0.6 to 0.95) is on its label; with ``zeros``,
    the other classes of a quarter of the items get exactly 0 (the rest of the mass on the label)."""
    conf = np.tile(np.linspace(0.6, 0.95, 8), n_classes)
    y = np.repeat(np.arange(n_classes), 8)
    P = np.repeat(((1 - conf) / (n_classes - 1))[:, None], n_classes, axis=1)
    P[np.arange(len(y)), y] = conf
    if zeros:
        P[::4] = np.eye(n_classes)[y[::4]]
    return P, y


@pytest.mark.parametrize("zeros", [False, True])
def test_bcts_falls_back_when_abstention_cannot_fit(zeros):
    # h separates V: the likelihood grows without bound as the temperature goes to 0 and abstention's L-BFGS-B stops
    # abnormally (an AssertionError, QuaPy's RuntimeError) for every candidate floor; BCTS then leaves the
    # posteriors as they are and SLD starts from their mean on V
    P_val, y_val = _separated(2, zeros)
    half = 0.5 * P_val[P_val > 0].min()
    candidates = half * FLOOR_STEPS if zeros else [half]
    assert all(np.isnan(_nll_of_floor(P_val, y_val, f)) for f in candidates)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # abstention's overflow on its way to failing
        bcts = BCTS().fit(P_val, y_val)
    assert bcts.bcts_ is False and bcts.floor_ == half
    np.testing.assert_array_equal(bcts.prior_, P_val.mean(axis=0) / P_val.mean(axis=0).sum())
    P = np.array([[0.9, 0.1], [0.0, 1.0], [0.45, 0.55]])
    np.testing.assert_array_equal(bcts.calibrate(P), P)


def test_bcts_pickles_and_refits_to_the_same_map():
    # abstention's calibration function is a lambda: BCTS drops it when pickled and refits it at floor_ on load
    P_val, y_val = _votes([(0.0, 0)] * 4 + [(1.0, 1)] * 4 + _MIXED + [(1.0, 0)])
    bcts = BCTS().fit(P_val, y_val)
    again = pickle.loads(pickle.dumps(bcts))
    P = np.array([[1.0, 0.0], [0.3, 0.7], [0.5, 0.5]])
    np.testing.assert_array_equal(again.calibrate(P), bcts.calibrate(P))
    assert (again.bcts_, again.floor_) == (bcts.bcts_, bcts.floor_)
    np.testing.assert_array_equal(again.prior_, bcts.prior_)


def test_bcts_and_sld_bad_input():
    P_val, y_val = _votes([(0.0, 0)] * 4 + [(1.0, 1)] * 4 + _MIXED)
    with pytest.raises(NotFittedError):
        BCTS().calibrate(P_val)
    with pytest.raises(ValueError, match="y_val"):
        BCTS().fit(P_val, np.full(len(P_val), 2))
    with pytest.raises(ValueError, match="P_val"):
        BCTS().fit(P_val * 2, y_val)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 2\)"):
        BCTS().fit(P_val, y_val).calibrate(np.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match="prior"):
        sld_adjust(P_val, [0.2, 0.2])
    with pytest.raises(ValueError, match="prior"):
        sld_adjust(P_val, [[0.5, 0.5]])
    with pytest.raises(ValueError, match="sum to 1"):
        mean_posterior([[0.5, 0.6]])


def test_mean_posterior_and_sld_by_hand():
    # SLD's fixed point: posteriors calibrated for the prior (1/2, 1/2), two items with likelihood ratio
    # p(x|0)/p(x|1) = 4 and one with 1/4. The sample's likelihood in its prior q of class 0 is
    # (1 + 3q)^2 (1 - 3q/4) up to a constant, maximal (concave) at q = 7/9, where the adjusted posteriors of class 0
    # are 4q / (1 + 3q) = 14/15 and q / (4 - 3q) = 7/15 (their mean is q again).
    P = np.array([[0.8, 0.2], [0.8, 0.2], [0.2, 0.8]])
    np.testing.assert_allclose(mean_posterior(P), [0.6, 0.4], rtol=0, atol=1e-15)
    Q = sld_adjust(P, [0.5, 0.5])
    np.testing.assert_allclose(Q[:, 0], [14 / 15, 14 / 15, 7 / 15], atol=1e-3)
    np.testing.assert_allclose(Q.mean(axis=0), [7 / 9, 2 / 9], atol=1e-3)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-15)
    _, theirs = EMQ.EM(np.array([0.5, 0.5]), P)
    np.testing.assert_array_equal(Q, theirs / theirs.sum(axis=1, keepdims=True))


def test_moved_names_are_the_same_objects():
    # calibration's functions left capshift.baselines (issue 29) but stay importable from there, and
    # check_posteriors moved to capshift.validation, importable from base and baselines too
    for name in ["temperature_scale", "classwise_calibration_error", "lascal_calibration_error", "lascal_temperature",
                 "rlls_weights", "LASCAL_TEMPERATURES"]:
        assert getattr(baselines, name) is getattr(calibration, name) and name in baselines.__all__
    assert base.check_posteriors is validation.check_posteriors is baselines.check_posteriors


# -- RLLS, BCTS, SLD, temperature scaling and the classwise error pinned (issue 32: mutation testing) ------------------
# -- temperature scaling ---------------------------------------------------------------------------------------------
def test_temperature_scale_by_hand_and_its_errors():
    P = np.array([[0.8, 0.2], [0.5, 0.5]])
    # softmax(log P / T) = P^(1/T) normalised: at T = 1/2, (.64, .04) / .68
    np.testing.assert_allclose(calibration.temperature_scale(P, 0.5)[0], [0.64 / 0.68, 0.04 / 0.68], rtol=1e-14)
    for T in [0.0, -1.0, np.inf, np.nan]:
        with pytest.raises(ValueError, match=r"^T must be a finite temperature > 0, got "):
            calibration.temperature_scale(P, T)
    with pytest.raises(ValueError, match=r"^T must be a finite temperature > 0, got 0\.0$"):
        calibration.temperature_scale(P, 0)
    with pytest.raises(ValueError, match=r"^P must be a probability distribution"):
        calibration.temperature_scale([[0.5, 0.6]], 1.0)


def test_temperature_scale_keeps_zeros_without_warnings():
    # log 0 = -inf is taken without numpy's divide-by-zero warning; the zero stays 0 at every temperature
    P = np.array([[0.6, 0.4, 0.0], [0.0, 0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for T in [0.5, 1.0, 3.0]:
            Q = calibration.temperature_scale(P, T)
            assert Q[0, 2] == 0.0 and Q[1].tolist() == [0.0, 0.0, 1.0]

# -- classwise calibration error -------------------------------------------------------------------------------------
def _two_bins():
    # class-1 scores t = (.2, .4, .6, .8), labels (0, 1, 0, 1). Two equal-mass bins: edges (.2, .6, .8), so .2 lies
    # on the lowest edge (in no bin), (.2, .6] holds .4 and .6 (m_b = 2) and (.6, .8] holds .8 alone (m_b = 1, adds 0).
    t = np.array([0.2, 0.4, 0.6, 0.8])
    return np.column_stack([1 - t, t]), np.array([0, 1, 0, 1])


def test_classwise_calibration_error_with_a_pair_and_a_single_item_bin():
    P, y = _two_bins()
    # class 1: item .4 (label 1) against the other item's label 0, item .6 (label 0) against 1:
    # (|.4 - 0|^2 + |.6 - 1|^2) / 4 = .08; class 0 is the mirror image (scores .6 and .4 against 1 and 0)
    np.testing.assert_allclose(calibration.classwise_calibration_error(P, y, n_bins=2), [0.08, 0.08], rtol=1e-12)
    np.testing.assert_allclose(calibration.classwise_calibration_error(P, y, n_bins=2, p=3), [0.032, 0.032],
                               rtol=1e-12)
    np.testing.assert_allclose(calibration.classwise_calibration_error(P, y, n_bins=2, p=1), [0.2, 0.2], rtol=1e-12)


def test_classwise_calibration_error_of_items_in_no_bin_is_zero():
    # one item, or a constant score: every item lies on the lowest edge, in no bin (half-open bins (e_b, e_b+1])
    np.testing.assert_array_equal(calibration.classwise_calibration_error([[0.3, 0.7]], [1]), [0.0, 0.0])
    np.testing.assert_array_equal(calibration.classwise_calibration_error(np.full((5, 2), 0.5), [0, 1, 1, 1, 0],
                                                                          n_bins=3), [0.0, 0.0])


def test_classwise_calibration_error_defaults_to_15_bins():
    rng = np.random.default_rng(0)
    P = rng.dirichlet([1, 1, 1], size=60)
    y = rng.choice(3, 60)
    ce = calibration.classwise_calibration_error(P, y)
    np.testing.assert_array_equal(ce, calibration.classwise_calibration_error(P, y, n_bins=15, p=2))
    assert not np.array_equal(ce, calibration.classwise_calibration_error(P, y, n_bins=16, p=2))


def test_classwise_calibration_error_bad_input_names_the_argument():
    P, y = _two_bins()
    with pytest.raises(ValueError, match=r"^P must be a probability distribution"):
        calibration.classwise_calibration_error([[0.5, 0.6]], [0])
    with pytest.raises(ValueError, match=r"^y has labels \[2\] outside"):
        calibration.classwise_calibration_error(P, [0, 1, 2, 1])
    for bad in ([0, 1, 0], [0, 1, 0, 1, 1]):
        with pytest.raises(ValueError, match=r"^y must have one label per item: expected shape \(4,\)"):
            calibration.classwise_calibration_error(P, bad)


# -- RLLS ------------------------------------------------------------------------------------------------------------
def _rho(alpha, delta, n, n_v):
    """RLLS's regularisation weight (Azizzadenesheli et al. 2019, abstention's RLLSImbalanceAdapter)."""
    L = np.log(2 * n / delta)
    return alpha * 3 * (2 * L / (3 * n_v) + np.sqrt(2 * L / n_v))


# h decides V's 4 items right: C = diag(1/2, 1/2). A target sample of 4 items of which h puts 3 in class 0:
# mu_U - mu_V = (1/4, -1/4), and C theta = b has theta = (1/2, -1/2), w = (1.5, 0.5), the true ratio of priors.
_P_PERFECT = np.array([[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]])
_Y_PERFECT = np.array([0, 0, 1, 1])
_P_TARGET = np.array([[0.6, 0.4], [0.6, 0.4], [0.6, 0.4], [0.3, 0.7]])


def test_rlls_attributes_by_hand():
    # V: labels (0, 0, 0, 1), h's decisions (0, 0, 1, 1): C[i, j] = p_V(h = i, y = j), mu_V = h's decision
    # frequencies (row sums), p_val = V's label frequencies (column sums), rho as in the paper with the defaults
    P_val = np.array([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.3, 0.7]])
    r = RLLS(P_val, [0, 0, 0, 1], 2)
    np.testing.assert_array_equal(r.C, [[0.5, 0.0], [0.25, 0.25]])
    np.testing.assert_array_equal(r.mu_val, [0.5, 0.5])
    np.testing.assert_array_equal(r.p_val, [0.75, 0.25])
    assert r.rho == pytest.approx(_rho(0.01, 0.05, 2, 4), rel=1e-14)
    assert RLLS(P_val, [0, 0, 0, 1], 2, alpha=0.3, delta=0.2).rho == pytest.approx(_rho(0.3, 0.2, 2, 4), rel=1e-14)


def test_rlls_recovers_the_prior_ratio_without_noise():
    # ||C theta - b|| + rho ||theta|| (norms, not squares) is minimised by the exact solution C^-1 b when rho < 1/2
    w = rlls_weights(_P_PERFECT, _Y_PERFECT, _P_TARGET)
    np.testing.assert_allclose(w, [1.5, 0.5], atol=1e-6)
    # h never decides class 1 on the sample: mu_U = (1, 0), theta = (1, -1) on the constraint's boundary
    w = rlls_weights(_P_PERFECT, _Y_PERFECT, _P_TARGET[:3])
    np.testing.assert_allclose(w, [2.0, 0.0], atol=1e-6)
    w, ok = RLLS(_P_PERFECT, _Y_PERFECT, 2).weights(_P_TARGET[:3])
    assert ok and w.shape == (2,)


@pytest.mark.parametrize("delta", [0.05, 0.1])
def test_rlls_regularisation_switches_at_rho_equal_to_the_singular_value(delta):
    # with C = I/2 and b along (1, -1), the objective along theta = s b / |b| is |s/2 - |b|| + rho s: the exact
    # solution (w = (1.5, .5)) for rho < 1/2, theta = 0 (w = 1, no shift) for rho > 1/2. 2% either side of the alpha
    # that makes rho = 1/2 pins rho's formula (and the alpha, delta that reach it) to 2%.
    alpha = 0.5 / _rho(1.0, delta, 2, 4)
    kw = {} if delta == 0.05 else {"delta": delta}  # 0.05: the default delta
    np.testing.assert_allclose(rlls_weights(_P_PERFECT, _Y_PERFECT, _P_TARGET, alpha=0.98 * alpha, **kw), [1.5, 0.5],
                               atol=1e-6)
    np.testing.assert_allclose(rlls_weights(_P_PERFECT, _Y_PERFECT, _P_TARGET, alpha=1.02 * alpha, **kw), [1.0, 1.0],
                               atol=1e-6)
    for a, expected in [(0.98 * alpha, [1.5, 0.5]), (1.02 * alpha, [1.0, 1.0])]:
        w, ok = RLLS(_P_PERFECT, _Y_PERFECT, 2, a, **kw).weights(_P_TARGET)
        assert ok
        np.testing.assert_allclose(w, expected, atol=1e-6)


def test_rlls_weights_stay_non_negative_through_the_constraint():
    # h is right on 3 of 4 items of each class: C = [[3/8, 1/8], [1/8, 3/8]], mu_V = (1/2, 1/2). On a sample where h
    # decides class 0 for 9 of 10 items, b = (.4, -.4) and C theta = b has theta = (1.6, -1.6): w_1 = -0.6 < 0. The
    # constraint theta >= -1 binds: w_1 = 0 exactly and theta_0 minimises the objective on the line theta_1 = -1
    # (w_0 = 2.2003), not the clipped exact solution (w_0 = 2.6).
    P_val = np.array([[0.9, 0.1]] * 3 + [[0.3, 0.7]] + [[0.2, 0.8]] * 3 + [[0.6, 0.4]])
    y_val = np.repeat([0, 1], 4)
    P = np.array([[0.7, 0.3]] * 9 + [[0.1, 0.9]])
    C, rho, b = np.array([[0.375, 0.125], [0.125, 0.375]]), _rho(0.01, 0.05, 2, 8), np.array([0.4, -0.4])
    res = minimize_scalar(lambda s: np.linalg.norm(C @ [s, -1.0] - b) + rho * np.hypot(s, 1.0), bounds=(0, 5),
                          method="bounded", options={"xatol": 1e-10})
    assert 1 + res.x == pytest.approx(2.20035, abs=1e-4)
    w = rlls_weights(P_val, y_val, P)
    assert w[1] == pytest.approx(0.0, abs=1e-7) and w[0] == pytest.approx(1 + res.x, abs=1e-4)


def test_rlls_pickles_without_its_compiled_problem_and_cache():
    # a compiled cvxpy problem does not pickle: RLLS drops it (and its cache of solutions) and rebuilds on demand,
    # giving the weights of a fresh RLLS; a state pickled before the cache existed loads with an empty cache
    r = RLLS(_P_PERFECT, _Y_PERFECT, 2)
    w, ok = r.weights(_P_TARGET)
    state = r.__getstate__()
    assert state["_problem"] is None and state["_solved"] == {} and r._solved  # r itself keeps both
    again = pickle.loads(pickle.dumps(r))
    np.testing.assert_array_equal(again.weights(_P_TARGET)[0], RLLS(_P_PERFECT, _Y_PERFECT, 2).weights(_P_TARGET)[0])
    old = RLLS.__new__(RLLS)
    old.__setstate__({k: v for k, v in state.items() if k != "_solved"})
    assert old._solved == {}
    np.testing.assert_allclose(old.weights(_P_TARGET)[0], w, atol=1e-12)


def test_rlls_weights_bad_input_names_the_argument():
    with pytest.raises(ValueError, match=r"^P_val must be a probability distribution"):
        rlls_weights([[0.5, 0.6]] * 4, _Y_PERFECT, _P_TARGET)
    with pytest.raises(ValueError, match=r"^y_val has labels \[2\] outside"):
        rlls_weights(_P_PERFECT, [0, 0, 1, 2], _P_TARGET)
    for bad in ([0, 0, 1], [0, 0, 1, 1, 1]):
        with pytest.raises(ValueError, match=r"^y_val must have one label per item: expected shape \(4,\)"):
            rlls_weights(_P_PERFECT, bad, _P_TARGET)
    with pytest.raises(ValueError, match=r"^P must have shape \(\.\.\., 2\)"):
        rlls_weights(_P_PERFECT, _Y_PERFECT, np.full((4, 3), 1 / 3))
    with pytest.raises(ValueError, match=r"^P must be a probability distribution"):
        rlls_weights(_P_PERFECT, _Y_PERFECT, [[0.5, 0.6]])


def test_rlls_weights_do_not_warn_when_solved():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rlls_weights(_P_PERFECT, _Y_PERFECT, _P_TARGET)


def _check_fallback(record):
    w = rlls_weights(_P_PERFECT, _Y_PERFECT, _P_TARGET)
    np.testing.assert_array_equal(w, [1.0, 1.0])
    assert len(record) == 1 and record[0].category is CalibrationWarning
    assert str(record[0].message) == "RLLS could not solve for the label-shift weights; using w = 1 (no shift)"
    # stacklevel=2: the warning points at rlls_weights' caller, not at the warnings.warn call in calibration.py
    assert "warnings.warn" not in linecache.getline(record[0].filename, record[0].lineno)


def test_rlls_falls_back_to_no_shift_when_the_solver_raises(monkeypatch):
    def fail(self, *args, **kwargs):
        raise cp.error.SolverError("no solver could solve it")
    monkeypatch.setattr(cp.Problem, "solve", fail)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _check_fallback(record)
    w, ok = RLLS(_P_PERFECT, _Y_PERFECT, 2).weights(_P_TARGET)
    assert ok is False and w.shape == (2,) and (w == 1).all()


def test_rlls_falls_back_to_no_shift_when_the_solver_is_not_optimal(monkeypatch):
    # the solver returns a solution (theta.value is set) but reports it as not optimal: it is not used
    monkeypatch.setattr(cp.Problem, "status", property(lambda self: cp.INFEASIBLE_INACCURATE))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _check_fallback(record)
    w, ok = RLLS(_P_PERFECT, _Y_PERFECT, 2).weights(_P_TARGET)
    assert ok is False and w.shape == (2,) and (w == 1).all()


# -- SLD and the mean posterior --------------------------------------------------------------------------------------
def test_sld_and_mean_posterior_bad_input_names_the_argument():
    with pytest.raises(ValueError, match=r"^P must be a probability distribution"):
        mean_posterior([[0.5, 0.6]])
    with pytest.raises(ValueError, match=r"^P must be a probability distribution"):
        sld_adjust([[0.5, 0.6]], [0.5, 0.5])
    with pytest.raises(ValueError, match=r"^prior must have shape \(\.\.\., 2\)"):
        sld_adjust([[0.5, 0.5]], [0.5, 0.3, 0.2])
    with pytest.raises(ValueError, match=r"^prior must be a probability distribution"):
        sld_adjust([[0.5, 0.5]], [0.5, 0.6])


def test_sld_leaves_posteriors_at_their_own_mean_unchanged():
    # Saerens et al.: p'(y|x) ~ p(y|x) pi'(y)/pi(y); started from the prior the posteriors' mean already is, the
    # estimate does not move, so the posteriors come back as they are
    P = np.array([[0.8, 0.2], [0.4, 0.6], [0.3, 0.7]])
    np.testing.assert_allclose(sld_adjust(P, mean_posterior(P)), P, atol=1e-12)
    np.testing.assert_allclose(mean_posterior(P), [0.5, 0.5], atol=1e-15)


# -- BCTS ------------------------------------------------------------------------------------------------------------
def _underconfident(m=100):
    """Binary V whose logits are a quarter of the Bayes log-odds: BCTS's temperature is small (about 1/4)."""
    rng = np.random.default_rng(0)
    y = rng.choice(2, m)
    z = 0.5 * (np.where(y == 1, 1.0, -1.0) + rng.normal(size=m))
    return np.column_stack([1 / (1 + np.exp(z)), 1 / (1 + np.exp(-z))]), y


def test_bcts_fits_without_warnings_and_rejects_overflow():
    P_val, y_val = _underconfident()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bcts = BCTS().fit(P_val, y_val)
    assert bcts.bcts_ and bcts.floor_ == 0.5 * P_val.min()
    # a log-posterior of -690 divided by the small temperature overflows exp: NaN rows are refused
    with np.errstate(all="ignore"), pytest.raises(ValueError) as e:
        bcts.calibrate(np.array([[1.0, 1e-300]]))
    assert str(e.value) == ("the BCTS-calibrated posteriors are not finite (the temperature-scaled logits overflow "
                            "exp)")
    with pytest.raises(ValueError, match=r"^P must have shape \(\.\.\., 2\)"):
        bcts.calibrate(np.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match=r"^P must be a probability distribution"):
        bcts.calibrate([[0.5, 0.6]])


def test_bcts_fit_bad_input_names_the_argument():
    P_val, y_val = _underconfident(10)
    with pytest.raises(ValueError, match=r"^P_val must be a probability distribution"):
        BCTS().fit(P_val * 2, y_val)
    with pytest.raises(ValueError, match=r"^y_val has labels \[2\] outside"):
        BCTS().fit(P_val, np.full(10, 2))
    for bad in (y_val[:9], np.r_[y_val, 0]):
        with pytest.raises(ValueError, match=r"^y_val must have one label per item: expected shape \(10,\)"):
            BCTS().fit(P_val, bad)


def test_bcts_map_failures_are_runtime_errors_with_quapys_message():
    # h separates V: abstention's fit fails (QuaPy's message); a map applied to the wrong number of columns fails
    P_val = np.array([[0.9, 0.1], [0.7, 0.3], [0.2, 0.8], [0.4, 0.6]])
    y_val = np.array([0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(RuntimeError, match=r"^calibration bcts failed at fit time: "):
            calibration._fit_bcts_map(P_val, y_val, 2)
    P, y = _underconfident()
    f = calibration._fit_bcts_map(P, y, 2)
    with pytest.raises(RuntimeError, match=r"^calibration bcts failed at predict time: "):
        calibration._apply_bcts_map(f, np.full((2, 3), 1 / 3))


def test_bcts_pickles_without_its_map():
    # abstention's map is a lambda: dropped (None) from the pickled state, refitted on load when BCTS was fitted;
    # a fallback BCTS (no fit) loads without a map and still returns the posteriors as they are
    P_val, y_val = _underconfident()
    bcts = BCTS().fit(P_val, y_val)
    assert bcts.__getstate__()["_map"] is None and bcts._map is not None
    P = np.array([[0.7, 0.3], [0.2, 0.8]])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(bcts)).calibrate(P), bcts.calibrate(P))
    sep = np.array([[0.9, 0.1], [0.7, 0.3], [0.2, 0.8], [0.4, 0.6]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fallback = BCTS().fit(sep, [0, 0, 1, 1])
    assert fallback.bcts_ is False and fallback.__getstate__()["_map"] is None
    again = pickle.loads(pickle.dumps(fallback))
    assert again._map is None
    np.testing.assert_array_equal(again.calibrate(P), P)


def test_bcts_floor_search_skips_failures_and_keeps_the_first_of_equals(monkeypatch):
    # the floor search without abstention's numerics: the first candidate's fit fails (skipped, the search goes on)
    # and every other candidate calibrates V to the same posteriors (equal NLL): the first of them, 5e-5, is kept
    p1 = np.array([0.0] * 4 + [1.0] * 4 + [0.2, 0.3, 0.6, 0.7, 0.8, 0.4, 0.1, 0.9])
    P_val, y_val = np.column_stack([1 - p1, p1]), np.array([0] * 4 + [1] * 4 + [0, 1, 0, 1, 1, 0, 0, 1])
    candidates = 0.5 * P_val[P_val > 0].min() * FLOOR_STEPS
    real_fit, floors = calibration._fit_bcts_map, []

    def fit(P, y, n):
        floors.append(P.min())
        if len(floors) == 1:
            raise RuntimeError("calibration bcts failed at fit time: (test)")
        return real_fit(P, y, n)
    monkeypatch.setattr(calibration, "_fit_bcts_map", fit)
    monkeypatch.setattr(calibration, "_apply_bcts_map", lambda f, P: np.full(P.shape, 0.5))
    bcts = BCTS().fit(P_val, y_val)
    np.testing.assert_array_equal(floors, candidates)
    assert bcts.bcts_ and bcts.floor_ == candidates[1]
    np.testing.assert_array_equal(bcts.prior_, [0.5, 0.5])


# -- LasCal's argument checks: each argument named in its message ----------------------------------------------------
def test_lascal_bad_input_names_the_argument():
    t = np.array([0.2, 0.4, 0.6, 0.8])
    P = np.column_stack([1 - t, t])
    y, w = [0, 1, 0, 1], [1.0, 1.0]
    for f in (calibration.lascal_calibration_error, calibration.lascal_temperature):
        with pytest.raises(ValueError, match=r"^P_val must be a probability distribution"):
            f([[0.5, 0.6]] * 4, y, P, w)
        with pytest.raises(ValueError, match=r"^y_val has labels \[2\] outside"):
            f(P, [0, 1, 2, 1], P, w)
        for bad in ([0, 1, 0], [0, 1, 0, 1, 1]):
            with pytest.raises(ValueError, match=r"^y_val must have one label per item: expected shape \(4,\)"):
                f(P, bad, P, w)
        with pytest.raises(ValueError, match=r"^P must have shape \(\.\.\., 2\)"):
            f(P, y, np.full((4, 3), 1 / 3), [1.0, 1.0, 1.0])
        with pytest.raises(ValueError, match=r"^P must be a probability distribution"):
            f(P, y, [[0.5, 0.6]], w)
        with pytest.raises(ValueError, match=r"^weights contains NaN or infinite values$"):
            f(P, y, P, [1.0, np.nan])
        with pytest.raises(ValueError, match=r"^weights must be 1-d, got shape \(1, 2\)$"):
            f(P, y, P, [[1.0, 1.0]])
        # three weights for two classes (none negative), and a negative weight
        for bad in ([1.0, 1.0, 1.0], [1.5, -0.5]):
            with pytest.raises(ValueError, match=r"^weights must be 2 non-negative importance weights "
                                                 r"p_U\(y\)/p_V\(y\), got \["):
                f(P, y, P, bad)
        with pytest.raises(ValueError, match=r"^n_bins must be >= 1, got 0$"):
            f(P, y, P, w, n_bins=0)
        for p in (0.5, np.inf, np.nan, "2"):
            with pytest.raises(ValueError, match=r"^p must be a number >= 1 \(the L_p norm of the calibration "
                                                 rf"error\), got {re.escape(repr(p))}$"):
                f(P, y, P, w, p=p)
    with pytest.raises(ValueError, match=r"^n_bins must be >= 1, got 0$"):
        calibration.classwise_calibration_error(P, y, n_bins=0)
    message = r"^temperatures must be a non-empty 1-d array of positive values$"
    for bad in ([], [1.0, 0.0], [0.0, 1.0], [2.0, -1.0]):
        with pytest.raises(ValueError, match=message):
            calibration.lascal_temperature(P, y, P, w, temperatures=bad)
    with pytest.raises(ValueError, match=r"^temperatures contains NaN or infinite values$"):
        calibration.lascal_temperature(P, y, P, w, temperatures=[1.0, np.nan])
    with pytest.raises(ValueError, match=r"^temperatures must be 1-d, got shape \(1, 2\)$"):
        calibration.lascal_temperature(P, y, P, w, temperatures=[[1.0, 2.0]])


# -- the lockstep bounded search: scipy's evaluated points, one by one ----------------------------------------------
def _scipy_bounded_points(f, lo, hi, **options):
    """The points scipy's minimize_scalar(method="bounded") evaluates f at, in order, and its (x, fun)."""
    points = []
    res = minimize_scalar(lambda u: (points.append(u), f(u))[1], bounds=(lo, hi), method="bounded", options=options)
    return points, res.x, res.fun


@pytest.mark.parametrize("xatol", [1e-4, 0.0, 0.01, 0.1])
def test_fminbound_many_evaluates_scipys_points(xatol):
    # each function of the stack is evaluated at scipy's points in scipy's order, and the search ends at scipy's
    # (x, f(x)), floats: V-shapes and parabolas whose minimum lies inside, on a bound or between the golden points,
    # a degenerate interval, stepped and clipped functions (equal values: ties, parabolic fits on the edge of
    # acceptance), integer-valued functions and integer bounds (as scipy accepts them); with xatol = 0 the searches
    # around x = 0 run to the budget (500 evaluations). Every step is taken without numpy's warnings (parabolic fits
    # through equal values divide 0 by 0). scipy's bounded search is plain IEEE arithmetic (+, *, /, sqrt), so the
    # lockstep search gives its points bit for bit on any machine.
    problems = [(lambda u: abs(u), 0, 1), (lambda u: u * u, -1, 2), (lambda u: abs(u), -1, 2),
                (lambda u: (u - 0.3) ** 2, 0, 1), (lambda u: abs(u), 0, 0), (lambda u: abs(u), -1, 0),
                (lambda u: int(np.floor(4 * u) ** 2), -2, 1), (lambda u: abs(u + 0.7), -2, 1),
                (lambda u: min((u + 0.4) ** 2, 0.05), -1, 1),
                (lambda u: float(np.round((u - 0.925) * 4) ** 2), -2, 0.5)]
    integer_valued = [(lambda u: int(np.floor(4 * u) ** 2), -2, 1), (lambda u: int(abs(round(3 * u - 1))), -1, 2)]
    for stack in (problems, integer_valued):
        points = [[] for _ in stack]

        def func(x, idx):
            for u, i in zip(x, idx):
                points[i].append(u)
            return np.array([stack[i][0](u) for u, i in zip(x, idx)])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            x, fx = calibration._fminbound_many(func, [lo for _, lo, _ in stack], [hi for _, _, hi in stack],
                                                xatol=xatol)
        assert x.dtype == fx.dtype == np.float64
        for i, (f, lo, hi) in enumerate(stack):
            assert (points[i], x[i], fx[i]) == _scipy_bounded_points(f, lo, hi, xatol=xatol), i
    if xatol == 0.0:
        assert len(_scipy_bounded_points(abs, -1, 0, xatol=0.0)[0]) == 500  # scipy's default budget, reached


# -- LasCal's estimate with a pair and a single-item bin, and LasCalLoss against it -----------------------------------
def test_lascal_calibration_error_with_a_pair_and_a_single_item_bin():
    P, y = _two_bins()
    # V = the target with its labels, w = (1, 2). Class 1: target bins (.2, .6] = {.4, .6} (m_b = 2) and
    # (.6, .8] = {.8} (m_b = 1: adds 0); V's class-1 items .4 and .8 put pos = (1, 1), so
    # c_0 = 2 * (1/4) * 3/1 = 1.5 and the estimate is ((.4 - 1.5)^2 + (.6 - 1.5)^2) / 4 = .505. Class 0 is the
    # mirror image with w = 1: c_0 = .75, ((.6 - .75)^2 + (.4 - .75)^2) / 4 = .03625.
    ce = calibration.lascal_calibration_error(P, y, P, [1.0, 2.0], n_bins=2)
    np.testing.assert_allclose(ce, [0.03625, 0.505], rtol=1e-12)


def test_lascal_loss_is_the_one_temperature_at_a_time_loss_for_every_size():
    # LasCalLoss interpolates the equal-mass edges row by row (np.interp of _adaptive_edges) and counts the items
    # per bin in a narrow integer type: for sample sizes m from 1 to 22 (an edge between the last two sorted scores
    # when 15 < m < 30 with 15 bins, or m = 3 with 2 bins) and 1, 2, 3 or 15 bins, its losses on the grid and at one
    # temperature per sample are the mean of lascal_calibration_error at that temperature
    rng = np.random.default_rng(21)
    n, n_v, grid = 3, 40, np.array([0.5, 1.0, 2.5])
    P_val, y_val = rng.dirichlet(np.full(n, 0.8), size=n_v), rng.integers(0, n, n_v)
    for n_bins in (1, 2, 3, 15):
        loss = calibration.LasCalLoss(P_val, y_val, n_bins, 2, grid)
        for m in (1, 2, 3, 4, 5, 8, 17, 22):
            P = rng.dirichlet(np.full(n, 0.8), size=(2, m))
            w = rng.uniform(0.2, 2.0, (2, n))
            expected = [[float(np.mean(calibration.lascal_calibration_error(
                calibration.temperature_scale(P_val, T), y_val, calibration.temperature_scale(P[i], T), w[i],
                n_bins=n_bins))) for T in grid] for i in range(2)]
            # two routes to the same sums: equal up to the order of a floating-point sum on another CPU
            np.testing.assert_allclose(loss.losses(np.log(P), w), expected, rtol=1e-12, atol=1e-15,
                                       err_msg=f"{n_bins} bins, m = {m}")
            np.testing.assert_allclose(loss.losses(np.log(P), w, grid[[2, 0]]), [expected[0][2], expected[1][0]],
                                       rtol=1e-12, atol=1e-15, err_msg=f"{n_bins} bins, m = {m}")


def test_lascal_loss_pickles_without_its_grid_table():
    # V's side at the grid's temperatures is rebuilt on demand, not pickled: the copy gives the same losses (==)
    rng = np.random.default_rng(22)
    P_val, y_val = rng.dirichlet(np.ones(3), size=30), rng.integers(0, 3, 30)
    loss = calibration.LasCalLoss(P_val, y_val, 15, 2, calibration.LASCAL_TEMPERATURES)
    L, w = np.log(rng.dirichlet(np.ones(3), size=(2, 20))), np.array([[0.5, 1.0, 1.5], [1.0, 1.0, 1.0]])
    before = loss.losses(L, w)
    state = loss.__getstate__()
    assert state.keys() == loss.__dict__.keys() and state["_grid_val"] is None and loss._grid_val is not None
    again = pickle.loads(pickle.dumps(loss))
    assert again._grid_val is None
    np.testing.assert_array_equal(again.losses(L, w), before)
    np.testing.assert_array_equal(again._grid_val, loss._grid_val)


def test_lascal_loss_chunks_hold_as_many_samples_as_chunk_allows(monkeypatch):
    # LasCalLoss.losses splits a stack into chunks of CHUNK elements per temporary: K temperatures x n classes x
    # max(m, |V| at one temperature per sample, whose V side is |V| wide) per sample, as many whole samples as fit
    # (at least one); the chunks run over the samples once, in order, and give the losses of one chunk (==).
    # Here G = 3, n = 2, m = 1 item per sample, |V| = 6: 6 elements per sample on the grid, 12 at one temperature.
    rng = np.random.default_rng(23)
    P_val, y_val = rng.dirichlet(np.ones(2), size=6), np.array([0, 1, 0, 1, 1, 0])
    L, w = np.log(rng.dirichlet(np.ones(2), size=(7, 1))), rng.uniform(0.5, 1.5, (7, 2))
    Ts = np.array([0.5, 1.0, 2.0, 3.0, 0.7, 1.3, 4.0])
    loss = calibration.LasCalLoss(P_val, y_val, 15, 2, np.array([0.5, 1.0, 2.0]))
    whole = loss.losses(L, w), loss.losses(L, w, Ts)
    chunks = []
    original = calibration.LasCalLoss._losses
    monkeypatch.setattr(calibration.LasCalLoss, "_losses", lambda self, L, w, T, on_grid: (
        chunks.append((len(L), T.shape[1])), original(self, L, w, T, on_grid))[1])
    for chunk, on_grid, at_Ts in ((25, [(4, 3), (3, 3)], [(2, 1)] * 3 + [(1, 1)]), (1, [(1, 3)] * 7, [(1, 1)] * 7)):
        loss.CHUNK = chunk
        chunks.clear()
        assert loss.losses(L, w).tolist() == whole[0].tolist() and chunks == on_grid, chunk
        chunks.clear()
        assert loss.losses(L, w, Ts).tolist() == whole[1].tolist() and chunks == at_Ts, chunk


def test_short_rows_of_a_vector_are_summed_and_maximised():
    for v in (np.array([3.0, -1.0, 2.5]), np.arange(12.0)):
        assert calibration._row_sum(v).tolist() == [v.sum()] and calibration._row_max(v).tolist() == [v.max()]


# -- LasCal's temperature where it cannot matter, and its search ----------------------------------------------------
def test_lascal_temperature_of_rows_uniform_on_supports_of_different_sizes_is_one():
    # rows uniform on their support (here of 1, 2 and 3 classes: maxima 1, 1/2 and 1/3) do not change with T, so
    # T = 1, with the loss at T = 1 (V's side, which does change with T, would pull a search elsewhere)
    rng = np.random.default_rng(24)
    P_val, y_val = rng.dirichlet(np.ones(3), size=60), rng.integers(0, 3, 60)
    P = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]] * 4)
    w = np.array([0.5, 1.0, 1.5])
    expected = float(np.mean(calibration.lascal_calibration_error(P_val, y_val, P, w)))
    T, value = calibration.lascal_temperature(P_val, y_val, P, w)
    assert T == 1.0 and value == pytest.approx(expected, rel=1e-12)
    grid_losses = calibration.LasCalLoss(P_val, y_val, 15, 2, calibration.LASCAL_TEMPERATURES).losses(
        calibration._log_posteriors(P)[None], w[None])
    assert np.ptp(grid_losses) > 0 and 1.0 not in calibration.LASCAL_TEMPERATURES  # a search would not give 1


def test_lascal_temperature_of_a_loss_constant_on_a_two_value_grid_is_one():
    # one target item lies on its bins' lowest edge, in no bin: the loss is 0 at every temperature, T = 1
    rng = np.random.default_rng(25)
    P_val, y_val = rng.dirichlet(np.ones(3), size=30), rng.integers(0, 3, 30)
    P = np.array([[0.2, 0.3, 0.5]])
    assert calibration.lascal_temperature(P_val, y_val, P, [1.0, 1.0, 1.0], temperatures=[2.0, 3.0]) == (1.0, 0.0)


def test_lascal_temperature_on_a_one_value_grid_is_not_searched(monkeypatch):
    # the neighbours of a one-value grid's only value are that value: no interval to search, one loss evaluation
    rng = np.random.default_rng(3)
    P_val, P = rng.dirichlet(np.ones(3), size=60), rng.dirichlet(np.ones(3), size=20)
    y_val, w = rng.integers(0, 3, 60), np.array([0.5, 1.0, 1.5])
    searched = []
    monkeypatch.setattr(calibration, "_fminbound_many", lambda *args, **kw: searched.append(args))
    T, _ = calibration.lascal_temperature(P_val, y_val, P, w, temperatures=[0.3])
    assert T == 0.3 and searched == []


def test_lascal_temperature_keeps_the_grid_value_on_a_tie_with_the_search():
    # 10 target items of distinct scores and 15 bins: every bin holds at most one item and the loss is 0, except at
    # the lowest temperatures, where scores round to exactly 1 (ties: bins of two items). The first grid temperature of
    # loss 0 is the best; the search between its neighbours reaches loss 0 too: on a tie the grid's value is kept
    t = np.array([0.142, 0.457, 0.005, 0.08, 0.96, 0.002, 0.81, 0.02, 0.331, 0.813])
    v = np.array([0.05, 0.05, 0.05, 0.95, 0.95, 0.95, 0.95, 0.95, 0.05, 0.05, 0.95, 0.05, 0.05, 0.05, 0.95])
    P, P_val = np.column_stack([1 - t, t]), np.column_stack([1 - v, v])
    y_val, w = np.array([1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0]), np.array([1.5, 0.4])
    grid = calibration.LASCAL_TEMPERATURES
    grid_losses = calibration.LasCalLoss(P_val, y_val, 15, 2, grid).losses(np.log(P)[None], w[None])[0]
    k = int(np.argmin(grid_losses))
    assert grid_losses[k] == 0.0 and grid_losses[0] > 0.0 and (grid_losses[k:] == 0.0).all()
    assert calibration.lascal_temperature(P_val, y_val, P, w) == (float(grid[k]), 0.0)

"""Property-based tests (Hypothesis) of tables, equations and emq: invariants on random valid input, and
ValueError on random invalid input."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import confusion_matrix

from capshift import emq, equations, tables
from capshift.leap import leap_table, oleap_table, sleap_table

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def tables_(draw, n=None, low=0.0):
    """A random (n, n) contingency table (sums to 1); ``low`` > 0 keeps every cell (so every row) non-empty."""
    n = draw(st.integers(2, 5)) if n is None else n
    w = draw(arrays(np.float64, (n, n), elements=st.floats(low, 1.0)))
    if w.sum() <= 0:
        w = np.ones((n, n))
    return w / w.sum()


@st.composite
def simplex(draw, n, low=0.0):
    w = draw(arrays(np.float64, (n,), elements=st.floats(low, 1.0)))
    if w.sum() <= 0:
        w = np.ones(n)
    return w / w.sum()


# ------------------------------------------------------------------------------------------ tables
@SETTINGS
@given(tables_())
def test_measures_of_valid_tables_are_in_range(C):
    for name in tables.MEASURES:
        v = tables.measure_value(C, name)
        assert 0 - 1e-12 <= v <= 1 + 1e-12, name
    assert tables.accuracy(C) == pytest.approx(np.trace(C))
    np.testing.assert_allclose(tables.true_prevalence(C).sum(), 1)
    np.testing.assert_allclose(tables.predicted_prevalence(C).sum(), 1)
    assert tables.macro_f1(C) == pytest.approx(np.mean([tables.f1(C, k) for k in range(C.shape[0])]))


@SETTINGS
@given(st.integers(2, 4).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=60))))
def test_contingency_table_is_sklearns_normalised_confusion_matrix(args):
    n, pairs = args
    y, p = map(np.array, zip(*pairs))
    C = tables.contingency_table(y, p, n)
    np.testing.assert_allclose(C, confusion_matrix(y, p, labels=range(n), normalize="all"))
    assert tables.accuracy(C) == pytest.approx(np.mean(y == p))


@SETTINGS
@given(tables_(), st.floats(1.001, 1000.0))
def test_tables_not_summing_to_one_are_refused(C, k):
    for f in (tables.accuracy, tables.f1, tables.macro_f1, tables.balanced_accuracy, tables.true_prevalence):
        with pytest.raises(ValueError, match="sum to 1"):
            f(C * k)


@SETTINGS
@given(tables_(), st.floats(1e-4, 1.0), st.data())
def test_tables_with_a_negative_cell_are_refused(C, eps, data):
    n = C.shape[0]
    i, j = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    D = C.copy()
    D[i, j] -= C[i, j] + eps  # that cell becomes -eps
    D[(i + 1) % n, j] += C[i, j] + eps  # the total stays 1
    with pytest.raises(ValueError, match="negative"):
        tables.accuracy(D)


# ------------------------------------------------------------------------------------------ equations
@st.composite
def pps(draw):
    """A validation table V (every cell > 0) and the exact test table under PPS for a prevalence q."""
    n = draw(st.integers(2, 4))
    V = draw(tables_(n, low=0.05))
    q = draw(simplex(n, low=0.05))
    R = V / V.sum(axis=1, keepdims=True)
    return V, q, q[:, None] * R


@SETTINGS
@given(pps())
def test_leap_family_is_exact_on_noise_free_pps(case):
    V, q, C = case
    gamma = C.sum(axis=0)
    np.testing.assert_allclose(sleap_table(V, q), C, atol=1e-9)
    T, path = leap_table(V, gamma, q, return_path=True)
    assert path == "exact"
    np.testing.assert_allclose(T, C, atol=1e-9)
    np.testing.assert_allclose(oleap_table(V, gamma, q), C, atol=1e-5)
    system = equations.governing_system(V)
    np.testing.assert_allclose(system.residual(C, gamma, q), 0, atol=1e-12)


@SETTINGS
@given(pps().filter(lambda c: c[0].shape == (2, 2)))
def test_binary_closed_forms_match_the_table(case):
    V, q, C = case
    tpr = V[1, 1] / V[1].sum()
    gamma = C.sum(axis=0)
    np.testing.assert_allclose(equations.binary_table_closed_form(tpr, gamma[1], q[1]), C, atol=1e-12)
    assert equations.binary_accuracy_closed_form(tpr, gamma[1], q[1]) == pytest.approx(np.trace(C))
    assert equations.binary_f1_closed_form(tpr, gamma[1], q[1]) == pytest.approx(tables.f1(C))


@SETTINGS
@given(st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not 0 <= x <= 1))
def test_closed_forms_refuse_values_outside_unit_interval(x):
    for f in (equations.binary_accuracy_closed_form, equations.binary_f1_closed_form,
              equations.binary_table_closed_form):
        with pytest.raises(ValueError, match="q_pos"):
            f(0.8, 0.5, x)
        with pytest.raises(ValueError, match="tpr"):
            f(x, 0.5, 0.5)


# ------------------------------------------------------------------------------------------ emq
@st.composite
def pairs(draw):
    n = draw(st.integers(2, 5))
    return draw(simplex(n)), draw(simplex(n))


@SETTINGS
@given(pairs())
def test_emq_identities(pq):
    p, q = pq
    for name in emq.MEASURES:
        D = emq.get_measure(name, sample_size=100)
        assert D(p, p) == pytest.approx(0, abs=1e-12), name  # identity of indiscernibles (one direction)
        assert D(p, q) >= -1e-12, name  # non-negativity
        assert np.isfinite(D(p, q)), name
    assert emq.ae(p, q) == pytest.approx(np.abs(p - q).mean())
    assert emq.se(p, q) == pytest.approx(((p - q) ** 2).mean())
    assert 0 <= emq.nae(p, q) <= 1 + 1e-12
    assert 0 <= emq.nkld(p, q, sample_size=100) <= 1 + 1e-12
    assert emq.ae(p, q) == pytest.approx(emq.ae(q, p))  # AE is symmetric


@SETTINGS
@given(pairs(), st.floats(1.001, 10.0))
def test_emq_refuses_non_distributions(pq, k):
    p, q = pq
    with pytest.raises(ValueError, match="sum to 1"):
        emq.ae(p * k, q)
    with pytest.raises(ValueError, match="p_hat"):
        emq.kld(p, q * k, sample_size=10)

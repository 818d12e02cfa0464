"""Governing equations: the true test table satisfies them; ranks; binary closed forms (Eqs. 24-31)."""
import numpy as np
import pytest

from capshift import equations as E
from capshift.leap import leap_table
from capshift.tables import accuracy, f1, predicted_prevalence


def _pps_pair(n, seed):
    rng = np.random.default_rng(seed)
    V = rng.random((n, n)) + n * np.eye(n)
    V /= V.sum()
    q = rng.dirichlet(np.ones(n))
    U = V / V.sum(1, keepdims=True) * q[:, None]
    return V, U, q


@pytest.mark.parametrize("n", [2, 3, 6])
def test_true_table_satisfies_all_groups(n):
    V, U, q = _pps_pair(n, n)
    S = E.governing_system(V)
    assert S.A.shape == ((n + 1) ** 2, n * n)
    np.testing.assert_allclose(S.residual(U, predicted_prevalence(U), q), 0, atol=1e-12)
    # a table that is not a PPS image of V violates group 3
    W = np.full((n, n), 1 / n**2)
    r = S.residual(W, predicted_prevalence(W), W.sum(1))
    assert np.abs(r[S.group == 3]).max() > 1e-3


@pytest.mark.parametrize("n", [2, 3, 5])
def test_ranks(n):
    V, _, _ = _pps_pair(n, 0)
    rows = {r["system"].split(" (")[0]: r for r in E.rank_summary(V)}
    assert rows["group 1"]["rank"] == 1
    assert rows["group 2"]["rank"] == n and rows["group 4"]["rank"] == n
    assert rows["group 3"]["rank"] == n * (n - 1)  # one degree of freedom per row: its scale
    assert rows["pooled, all four groups"]["rank"] == n * n  # over-constrained yet identified
    assert rows["LEAP selection"]["equations"] == n * n
    assert rows["LEAP selection"]["rank"] == n * n


def test_leap_selection_is_eq23_binary():
    V = np.array([[0.4, 0.1], [0.15, 0.35]])
    S = E.governing_system(V, drop_class=0)
    tpr = 0.35 / 0.5
    # Eq. 23 in the paper's unknown order (TN, FN, FP, TP) = our cells (0,0), (1,0), (0,1), (1,1)
    order = [0, 2, 1, 3]
    np.testing.assert_allclose(S.A.toarray()[:, order], [[1, 1, 1, 1], [0, 0, 1, 1], [0, tpr, 0, tpr - 1], [0, 1, 0, 1]])


def test_binary_closed_forms_agree_with_solver():
    rng = np.random.default_rng(3)
    for _ in range(20):
        V = rng.dirichlet(np.ones(4)).reshape(2, 2) + np.diag([0.3, 0.3]); V /= V.sum()
        tpr, fpr = V[1, 1] / V[1].sum(), V[0, 1] / V[0].sum()
        q = rng.uniform(0.05, 0.95)
        g = q * tpr + (1 - q) * fpr  # consistent gamma: Eq. 24's cells are non-negative
        T = leap_table(V, [1 - g, g], [1 - q, q])
        np.testing.assert_allclose(E.binary_table_closed_form(tpr, g, q), T, atol=1e-9)
        assert E.binary_accuracy_closed_form(tpr, g, q) == pytest.approx(accuracy(T))
        assert E.binary_accuracy_from_validation(V, g) == pytest.approx(accuracy(T))
        assert E.binary_f1_closed_form(tpr, g, q) == pytest.approx(f1(T, 1))
        assert E.binary_f1_from_validation(V, g) == pytest.approx(f1(T, 1))
        tn, fp, fn, tp = V.ravel()
        eq31 = 2 * tp * (g * tn - (1 - g) * fp) / (g * tn * (2 * tp + fn) - fp * (fn + (1 - g) * tp))
        assert eq31 == pytest.approx(f1(T, 1))  # the printed Eq. 31


def test_absent_class_is_a_clear_error():
    V = np.array([[0.5, 0.5, 0], [0, 0, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="no items of true class"):
        E.governing_system(V)
    with pytest.raises(ValueError, match="drop_class"):
        E.governing_system(np.eye(2) / 2, drop_class=5)
    with pytest.raises(ValueError, match="tpr == fpr"):
        E.binary_accuracy_from_validation(np.full((2, 2), 0.25), 0.5)

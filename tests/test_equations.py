"""Governing equations: the true test table satisfies them; ranks; binary closed forms (Eqs. 24-31)."""
import re
import warnings
from decimal import Decimal
from fractions import Fraction

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


# -- The system written out by hand, shapes, batches, messages and closed-form edges (issue 32: mutation testing) ------
# V with rates R = [[0.8, 0.2], [0.3, 0.7]] (tpr = 0.7, fpr = 0.2)
V2 = np.array([[0.4, 0.1], [0.15, 0.35]])
R2 = np.array([[0.8, 0.2], [0.3, 0.7]])
V3 = np.array([[0.20, 0.05, 0.05],
               [0.04, 0.24, 0.02],
               [0.06, 0.04, 0.30]])
COUNTS = np.array([[40, 10], [15, 35]])


def _exact(msg):
    """A regex matching exactly ``msg`` (the whole message)."""
    return "^" + re.escape(msg) + "$"


def _pps_table(V, q):
    R = V / V.sum(1, keepdims=True)
    return q[:, None] * R


# ------------------------------------------------------------------------------- validation_rates
def test_validation_rates_by_hand():
    np.testing.assert_allclose(E.validation_rates(V2), R2, atol=1e-15)


def test_validation_rates_names_val_table_in_table_errors():
    with pytest.raises(ValueError, match=r"^val_table entries must sum to 1"):
        E.validation_rates(COUNTS)


def test_validation_rates_refuses_a_batch():
    with pytest.raises(ValueError, match=_exact("val_table must be a single (n, n) table, got shape (2, 2, 2)")):
        E.validation_rates(np.stack([V2, V2]))


@pytest.mark.parametrize("absent, V", [
    ([1], [[0.3, 0.1, 0.1], [0.0, 0.0, 0.0], [0.1, 0.1, 0.3]]),
    ([0, 2], [[0.0, 0.0, 0.0], [0.2, 0.5, 0.3], [0.0, 0.0, 0.0]]),
])
def test_absent_classes_are_listed_exactly(absent, V):
    msg = (f"val_table has no items of true class(es) {absent}: their rates P(Yhat|Y) cannot be estimated "
           "from the validation set; collect validation items of every class")
    with pytest.raises(ValueError, match=_exact(msg)):
        E.validation_rates(V)


# ------------------------------------------------------------------------------- governing_system by hand
def test_full_2x2_system_written_out_by_hand():
    S = E.governing_system(V2)
    # unknowns x = (C00, C01, C10, C11)
    A = [[1, 1, 1, 1],          # group 1: all cells sum to 1
         [1, 0, 1, 0],          # group 2: column 0 = gamma_0
         [0, 1, 0, 1],          # group 2: column 1 = gamma_1
         [-0.2, 0.8, 0, 0],     # group 3 (0,0): C00 = 0.8 (C00 + C01)
         [0.2, -0.8, 0, 0],     # group 3 (0,1): C01 = 0.2 (C00 + C01)
         [0, 0, -0.7, 0.3],     # group 3 (1,0): C10 = 0.3 (C10 + C11)
         [0, 0, 0.7, -0.3],     # group 3 (1,1): C11 = 0.7 (C10 + C11)
         [1, 1, 0, 0],          # group 4: row 0 = q_0
         [0, 0, 1, 1]]          # group 4: row 1 = q_1
    assert S.A.shape == (9, 4)
    np.testing.assert_allclose(S.A.toarray(), A, atol=1e-15)
    np.testing.assert_array_equal(S.b0, [1, 0, 0, 0, 0, 0, 0, 0, 0])
    assert S.b0.dtype == np.float64
    np.testing.assert_array_equal(S.G, [[0, 0], [1, 0], [0, 1]] + [[0, 0]] * 6)
    np.testing.assert_array_equal(S.H, [[0, 0]] * 7 + [[1, 0], [0, 1]])
    np.testing.assert_array_equal(S.group, [1, 2, 2, 3, 3, 3, 3, 4, 4])
    assert S.group.dtype.kind == "i"
    np.testing.assert_array_equal(S.index, [[-1, -1], [-1, 0], [-1, 1], [0, 0], [0, 1], [1, 0], [1, 1],
                                            [0, -1], [1, -1]])
    assert S.index.dtype.kind == "i" and S.index.shape == (9, 2)
    assert S.n_classes == 2
    # right-hand side for gamma = (0.45, 0.55), q = (0.3, 0.7)
    np.testing.assert_allclose(S.rhs([0.45, 0.55], [0.3, 0.7]), [1, 0.45, 0.55, 0, 0, 0, 0, 0.3, 0.7])


def test_indices_and_groups_of_a_3x3_system_with_a_dropped_class():
    S = E.governing_system(V3, drop_class=1)
    keep = [0, 2]
    expected_index = ([(-1, -1)] + [(-1, j) for j in keep] + [(i, j) for i in keep for j in keep]
                      + [(i, -1) for i in keep])
    np.testing.assert_array_equal(S.index, expected_index)
    np.testing.assert_array_equal(S.group, [1, 2, 2, 3, 3, 3, 3, 4, 4])
    assert S.A.shape == (9, 9)
    # group 2/4 right-hand sides pick the kept classes' gamma and q
    np.testing.assert_array_equal(S.G[1:3], [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(S.H[-2:], [[1, 0, 0], [0, 0, 1]])


def test_groups_are_pooled_in_the_order_given():
    S = E.governing_system(V2, groups=(4, 2))
    np.testing.assert_array_equal(S.group, [4, 4, 2, 2])
    np.testing.assert_array_equal(S.index, [[0, -1], [1, -1], [-1, 0], [-1, 1]])
    np.testing.assert_array_equal(S.A.toarray(), [[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]])


@pytest.mark.parametrize("groups, rows", [((3,), 4), ((4,), 2), ((2,), 2), ((2, 4), 4)])
def test_matrix_has_n_squared_columns_even_when_a_row_or_column_is_untouched(groups, rows):
    # dropping the last class leaves the last row's (or column's) cells out of these equations, but
    # the unknowns are still all n^2 cells
    S = E.governing_system(V3, groups=groups, drop_class=2)
    assert S.A.shape == (rows, 9)


def test_drop_class_accepts_every_class_and_refuses_others():
    for d in range(3):
        S = E.governing_system(V3, drop_class=d)
        assert S.A.shape == (9, 9)
        assert not np.any(S.index == d)
    with pytest.raises(ValueError, match=_exact("drop_class must be >= 0, got -1")):
        E.governing_system(V3, drop_class=-1)
    with pytest.raises(ValueError, match=_exact("drop_class must be <= 2, got 3")):
        E.governing_system(V3, drop_class=3)


def test_groups_not_iterable_is_a_type_error_naming_groups():
    with pytest.raises(TypeError, match=_exact("groups must be a sequence of group ids from [1, 2, 3, 4], got 5")):
        E.governing_system(V2, groups=5)


@pytest.mark.parametrize("n, d", [(2, 0), (2, 1), (3, 0), (3, 2)])
def test_square_system_recovers_a_noise_free_table_exactly(n, d):
    V = V2 if n == 2 else V3
    q = np.array([0.3, 0.7]) if n == 2 else np.array([0.5, 0.2, 0.3])
    U = _pps_table(V, q)
    S = E.governing_system(V, drop_class=d)
    x = np.linalg.solve(S.A.toarray(), S.rhs(U.sum(0), q))
    np.testing.assert_allclose(x.reshape(n, n), U, atol=1e-12)


# ------------------------------------------------------------------------------- rhs / residual / select
def test_rhs_and_residual_accept_exact_fractions():
    S = E.governing_system(V2)
    T = [[Fraction(2, 5), Fraction(1, 10)], [Fraction(3, 20), Fraction(7, 20)]]  # V2 itself
    g = [Fraction(11, 20), Fraction(9, 20)]
    q = [Fraction(1, 2), Fraction(1, 2)]
    r = S.residual(T, g, q)
    assert r.dtype == np.float64
    np.testing.assert_allclose(r, 0, atol=1e-15)
    b = S.rhs([Decimal("0.55"), Decimal("0.45")], [Decimal("0.5"), Decimal("0.5")])
    assert b.dtype == np.float64
    np.testing.assert_allclose(b, [1, 0.55, 0.45, 0, 0, 0, 0, 0.5, 0.5])


def test_residual_of_a_batch_is_the_stack_of_residuals():
    S = E.governing_system(V3)
    rng = np.random.default_rng(0)
    Ts = [_pps_table(V3, rng.dirichlet(np.ones(3))) for _ in range(4)]
    Ts[1] = np.full((3, 3), 1 / 9)  # not a PPS image: non-zero group-3 residuals
    T = np.stack(Ts)
    g, q = T.sum(1), T.sum(2)
    r = S.residual(T, g, q)
    assert r.shape == (4, 16)
    for t in range(4):
        np.testing.assert_allclose(r[t], S.residual(T[t], g[t], q[t]), atol=1e-15)
    assert np.abs(r[1]).max() > 1e-3
    # a table off its own marginals, written out: W = [[1, 0], [0, 0]] against gamma = q = (0.5, 0.5)
    S2 = E.governing_system(V2)
    np.testing.assert_allclose(S2.residual([[1, 0], [0, 0]], [0.5, 0.5], [0.5, 0.5]),
                               [0, 0.5, -0.5, -0.2, 0.2, 0, 0, 0.5, -0.5], atol=1e-15)


def test_select_keeps_every_field_of_the_selected_rows():
    S = E.governing_system(V2)
    sub = S.select(S.group == 4)
    np.testing.assert_array_equal(sub.A.toarray(), [[1, 1, 0, 0], [0, 0, 1, 1]])
    np.testing.assert_array_equal(sub.b0, [0, 0])
    np.testing.assert_array_equal(sub.G, [[0, 0], [0, 0]])
    np.testing.assert_array_equal(sub.H, [[1, 0], [0, 1]])
    np.testing.assert_array_equal(sub.group, [4, 4])
    np.testing.assert_array_equal(sub.index, [[0, -1], [1, -1]])
    np.testing.assert_allclose(sub.rhs([0.45, 0.55], [0.3, 0.7]), [0.3, 0.7])
    top = S.select(S.group <= 2)
    np.testing.assert_array_equal(top.b0, [1, 0, 0])
    np.testing.assert_array_equal(top.G, [[0, 0], [1, 0], [0, 1]])
    np.testing.assert_array_equal(top.index, [[-1, -1], [-1, 0], [-1, 1]])


def test_select_treats_a_0_1_mask_as_a_mask():
    S = E.governing_system(V2)
    mask01 = (S.group == 3).astype(int)  # [0, 0, 0, 1, 1, 1, 1, 0, 0]
    sub = S.select(mask01)
    np.testing.assert_array_equal(sub.group, [3, 3, 3, 3])
    np.testing.assert_array_equal(sub.index, [[0, 0], [0, 1], [1, 0], [1, 1]])
    np.testing.assert_allclose(sub.A.toarray(), S.A.toarray()[3:7])


# ------------------------------------------------------------------------------- ranks
def test_system_rank_passes_tol_through():
    S = E.governing_system(V2)
    sv = np.linalg.svd(S.A.toarray(), compute_uv=False)
    assert E.system_rank(S) == 4
    assert E.system_rank(S, tol=(sv[0] + sv[1]) / 2) == 1
    assert E.system_rank(S, tol=sv[0] * 2) == 0


def test_system_rank_error_names_the_type_given():
    with pytest.raises(TypeError, match=_exact("system must be a GoverningSystem (from governing_system(val_table)), "
                                               "got ndarray")):
        E.system_rank(V2)


@pytest.mark.parametrize("V", [V2, V3])
def test_rank_summary_exact_rows(V):
    n = V.shape[0]
    expected = [
        {"system": "group 1 (Eq. 8: cells sum to 1)", "equations": 1, "rank": 1, "unknowns": n * n},
        {"system": "group 2 (Eq. 11: column sums = predicted-class fractions gamma)", "equations": n, "rank": n,
         "unknowns": n * n},
        {"system": "group 3 (Eq. 15: PPS: class-conditional rates of V hold in U)", "equations": n * n,
         "rank": n * (n - 1), "unknowns": n * n},
        {"system": "group 4 (Eq. 21: row sums = estimated true prevalence q)", "equations": n, "rank": n,
         "unknowns": n * n},
        {"system": "pooled, all four groups", "equations": (n + 1) ** 2, "rank": n * n, "unknowns": n * n},
        {"system": "LEAP selection (class 0 dropped)", "equations": n * n, "rank": n * n, "unknowns": n * n},
    ]
    rows = E.rank_summary(V)
    assert rows == expected
    for row in rows:
        assert all(type(row[k]) is int for k in ("equations", "rank", "unknowns"))


# ------------------------------------------------------------------------------- binary closed forms
def test_binary_forms_name_val_table_in_table_errors():
    for f in (E.binary_accuracy_from_validation, E.binary_f1_from_validation):
        with pytest.raises(ValueError, match=r"^val_table entries must sum to 1"):
            f(COUNTS, 0.5)


def test_binary_table_closed_form_by_hand_and_batched():
    # tpr = 0.7, gamma = 0.45, q = 0.5: TN = 1 - 0.45 + 0.5 * (-0.3) = 0.4, FN = 0.15, FP = 0.1, TP = 0.35
    np.testing.assert_allclose(E.binary_table_closed_form(0.7, 0.45, 0.5), [[0.4, 0.1], [0.15, 0.35]], atol=1e-15)
    tpr = np.array([0.9, 0.8, 0.7])
    T = E.binary_table_closed_form(tpr, 0.5, 0.4)
    assert T.shape == (3, 2, 2)
    for k in range(3):
        np.testing.assert_allclose(T[k], E.binary_table_closed_form(tpr[k], 0.5, 0.4), atol=1e-15)
    np.testing.assert_allclose(T[:, 1, 1], 0.4 * tpr)  # TP = q tpr
    np.testing.assert_allclose(T[:, 0, 1], 0.5 - 0.4 * tpr)  # FP = gamma - q tpr


def test_binary_f1_closed_form_is_one_when_nothing_is_positive():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert E.binary_f1_closed_form(0.7, 0.0, 0.0) == 1.0
        np.testing.assert_array_equal(E.binary_f1_closed_form(0.7, [0.0, 0.5], [0.0, 0.5]), [1.0, 0.7])


def test_binary_f1_closed_form_return_types():
    v = E.binary_f1_closed_form(0.7, 0.45, 0.5)
    assert type(v) is float and v == pytest.approx(0.7 / 0.95)
    a = E.binary_f1_closed_form([0.7, 0.9], 0.45, 0.5)
    assert isinstance(a, np.ndarray) and a.shape == (2,)
    np.testing.assert_allclose(a, [0.7 / 0.95, 0.9 / 0.95])
    one = E.binary_f1_closed_form([0.7], 0.45, 0.5)
    assert isinstance(one, np.ndarray) and one.shape == (1,)


def test_binary_from_validation_tpr_equals_fpr_messages():
    V = np.full((2, 2), 0.25)
    with pytest.raises(ValueError, match=_exact("val_table has tpr == fpr (TN*TP == FP*FN): Eq. 27 is undefined")):
        E.binary_accuracy_from_validation(V, 0.5)
    with pytest.raises(ValueError, match=_exact("val_table has tpr == fpr: ACC (Eq. 19) is undefined")):
        E.binary_f1_from_validation(V, 0.5)


def test_binary_f1_from_validation_clips_q_like_acc():
    # V2: tpr = 0.7, fpr = 0.2. gamma = 0.1 < fpr: ACC's q = -0.2 -> 0, F1 = 0
    assert E.binary_f1_from_validation(V2, 0.1) == 0.0
    # gamma = 0.9 > tpr: ACC's q = 1.4 -> 1, F1 = 2 * 1 * 0.7 / (0.9 + 1)
    assert E.binary_f1_from_validation(V2, 0.9) == pytest.approx(1.4 / 1.9)
    # inside: gamma = 0.45 -> q = 0.5, F1 = 2 * 0.5 * 0.7 / 0.95
    assert E.binary_f1_from_validation(V2, 0.45) == pytest.approx(0.7 / 0.95)


def test_binary_accuracy_from_validation_by_hand():
    # Eq. 27 with V2 and gamma = 0.45: q = 0.5, table = V2 itself, accuracy 0.75
    assert E.binary_accuracy_from_validation(V2, 0.45) == pytest.approx(0.75)

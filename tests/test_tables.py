"""Contingency tables and measures agree with scikit-learn; batch shapes; degenerate input."""
import numpy as np
import pytest
from sklearn import metrics

from capshift import tables as T


@pytest.mark.parametrize("n", [2, 3, 7])
def test_measures_agree_with_sklearn(n):
    rng = np.random.default_rng(n)
    y, yp = rng.integers(0, n, 500), rng.integers(0, n, 500)
    C = T.contingency_table(y, yp, n)
    np.testing.assert_allclose(C, metrics.confusion_matrix(y, yp, labels=range(n), normalize="all"))
    assert T.accuracy(C) == pytest.approx(metrics.accuracy_score(y, yp))
    assert T.macro_f1(C) == pytest.approx(metrics.f1_score(y, yp, average="macro"))
    np.testing.assert_allclose(T.precision(C), metrics.precision_score(y, yp, average=None, zero_division=0))
    np.testing.assert_allclose(T.recall(C), metrics.recall_score(y, yp, average=None, zero_division=0))
    assert T.balanced_accuracy(C) == pytest.approx(metrics.balanced_accuracy_score(y, yp))
    assert T.f1(C, pos=1) == pytest.approx(metrics.f1_score(y == 1, yp == 1))
    np.testing.assert_allclose(T.true_prevalence(C), np.bincount(y, minlength=n) / 500)
    np.testing.assert_allclose(T.predicted_prevalence(C), np.bincount(yp, minlength=n) / 500)


def test_batch_shapes_match_loop():
    rng = np.random.default_rng(0)
    B = rng.dirichlet(np.ones(9), size=(4, 5)).reshape(4, 5, 3, 3)
    for name, f in T.MEASURES.items():
        out = f(B)
        assert out.shape == (4, 5), name
        assert out[2, 3] == pytest.approx(f(B[2, 3])), name


def test_f1_empty_denominator_is_one():
    # everything is a true negative of class 1: F1 of class 1 is 1 by the paper's convention (Sect. 5.14)
    C = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert T.f1(C, 1) == 1.0
    assert T.measure_value(C, "f1") == 1.0
    assert np.isfinite(T.macro_f1(C)) and np.isfinite(T.balanced_accuracy(C))


def test_registry_and_errors():
    assert T.get_measure("acc") is T.accuracy
    with pytest.raises(ValueError, match="known measures"):
        T.get_measure("kappa")
    with pytest.raises(ValueError, match="outside the codeframe"):
        T.contingency_table([0, 1, 3], [0, 1, 1], 3)
    with pytest.raises(ValueError, match="empty"):
        T.contingency_table([], [], 2)
    with pytest.raises(ValueError, match="same length"):
        T.contingency_table([0, 1], [0], 2)
    with pytest.raises(TypeError, match="integer class indices"):
        T.contingency_table(["a", "b"], ["a", "a"], 2)
    with pytest.raises(ValueError, match="sum to 1"):
        T.check_table(np.ones((2, 2)))
    with pytest.raises(ValueError, match="sum to 1"):  # the tolerance is absolute, 1e-6 by default
        T.check_table(np.full((2, 2), 0.25 + 2e-6))
    with pytest.raises(ValueError, match="pos must be"):
        T.f1(np.eye(2) / 2, pos=2)


def test_one_item_sample():
    C = T.contingency_table([1], [0], 2)
    assert C[1, 0] == 1.0 and T.accuracy(C) == 0.0


def test_f1_is_binary_f1_for_two_classes_and_macro_f1_beyond():
    """The "f1" measure: F1 of class 1 for n = 2 (not macro-F1), macro-F1 for n >= 3 (not class 1's F1); hand
    computed, and scikit-learn's on the labels the tables come from."""
    C2 = np.array([[6, 2], [1, 3]]) / 12  # class 1: precision 3/5, recall 3/4, F1 = 2/3; class 0: F1 = 12/15
    assert T.get_measure("f1")(C2) == pytest.approx(2 / 3)
    assert T.macro_f1(C2) == pytest.approx((2 / 3 + 0.8) / 2)  # differs, so the two branches are told apart
    y = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    yp = np.array([0, 1, 0, 1, 2, 2, 2, 0, 2])
    C3 = T.contingency_table(y, yp, 3)
    assert T.get_measure("f1")(C3) == pytest.approx(metrics.f1_score(y, yp, average="macro"))
    assert T.get_measure("f1")(C3) != pytest.approx(T.f1(C3, 1))
    # on a stack of tables too (the shape test reads the classes, the last axis)
    stack = np.stack([C2, C2[::-1, ::-1]])
    np.testing.assert_allclose(T.get_measure("f1")(stack), [2 / 3, T.f1(C2[::-1, ::-1], 1)])


def test_balanced_accuracy_averages_the_recall_of_the_present_classes_only():
    """A class with no item in the sample (an empty row) is left out of the mean, even when h predicts it."""
    y = np.array([0, 0, 0, 1, 1, 1, 1])
    yp = np.array([0, 2, 0, 1, 1, 2, 1])  # class 2 never true, but predicted twice
    C = T.contingency_table(y, yp, 3)
    assert T.balanced_accuracy(C) == pytest.approx((2 / 3 + 3 / 4) / 2)  # not divided by 3
    assert T.balanced_accuracy(C) == pytest.approx(metrics.balanced_accuracy_score(y, yp))


def test_measure_value_is_a_float_for_one_table_and_an_array_for_a_stack():
    C = np.array([[0.4, 0.1], [0.2, 0.3]])
    v = T.measure_value(C, "accuracy")
    assert type(v) is float and v == pytest.approx(0.7)
    vs = T.measure_value(np.stack([C, C.T]), "accuracy")
    assert isinstance(vs, np.ndarray) and vs.dtype == float and vs.shape == (2,)
    np.testing.assert_allclose(vs, [0.7, 0.7])
    assert type(T.measure_value(np.array([[1, 0], [0, 0]]), "accuracy")) is float  # an integer table: a float


# ---- what the mutation run of this module found unpinned (benchmarks/mutation/tables.csv) ----
_TABLE_FUNCTIONS = [T.accuracy, T.precision, T.recall, T.f1, T.macro_f1, T.balanced_accuracy, T.true_prevalence,
                    T.predicted_prevalence, T.MEASURES["f1"]]


@pytest.mark.parametrize("fn", _TABLE_FUNCTIONS, ids=lambda f: f.__name__)
def test_every_measure_names_its_argument_c_and_the_fix(fn):
    with pytest.raises(ValueError, match=r"^C entries must sum to 1 \(fractions of the sample\), got sums in "
                                         r"\[2, 2\]; divide counts by the sample size "
                                         r"\(confusion_matrix\(\.\.\., normalize='all'\)\)$"):
        fn(np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match=r"^C must have shape \(\.\.\., n, n\) with n >= 2, got \(2,\)$"):
        fn(np.array([0.5, 0.5]))


def test_check_table_names_the_argument_in_every_message():
    with pytest.raises(TypeError, match="^table must be an array of fractions, got a string$"):
        T.check_table("0.5")
    with pytest.raises(TypeError, match=r"^table must be a numeric array of shape \(\.\.\., n, n\), got list$"):
        T.check_table([["a", "b"], ["c", "d"]])
    for bad in (np.full((2, 3), 1 / 6), np.ones((1, 1)), np.array([0.5, 0.5])):  # not square, n < 2, not a table
        with pytest.raises(ValueError, match=r"^table must have shape \(\.\.\., n, n\) with n >= 2, got "):
            T.check_table(bad)
    with pytest.raises(ValueError, match="^table contains NaN or infinite entries$"):
        T.check_table([[np.nan, 0.5], [0.25, 0.25]])
    with pytest.raises(ValueError, match=r"^table has negative entries \(min -0\.1\); tables hold fractions"):
        T.check_table([[0.6, -0.1], [0.25, 0.25]])
    with pytest.raises(ValueError, match="^counts entries must sum to 1"):
        T.check_table(np.ones((2, 2)), "counts")


def test_check_table_tolerances_are_strict_bounds_and_clip_to_zero():
    # an entry of exactly -atol is within the tolerance and becomes 0.0; a sum off by exactly atol passes
    C = np.array([[0.5 + 1e-6, -1e-6], [0.25, 0.25]])
    out = T.check_table(C)
    assert out[0, 1] == 0.0 and out[0, 0] == C[0, 0] and out[1, 1] == 0.25
    exact = np.array([[0.5, 0.25], [0.125, 0.125]])
    assert np.array_equal(T.check_table(exact, atol=0.0), exact)  # |sum - 1| = 0 is not above a tolerance of 0


def test_batches_with_any_leading_shape_and_their_axes():
    # a (2, 1, n, n) batch: the table axes are the last two, whatever the leading ones (a valid table whose
    # second axis has length 1 is not a 1-class table)
    rng = np.random.default_rng(0)
    C = rng.dirichlet(np.ones(4), size=(2, 1)).reshape(2, 1, 2, 2)
    assert T.accuracy(C).shape == (2, 1)
    np.testing.assert_array_equal(T.true_prevalence(C), C.sum(axis=3))  # rows: the true class
    np.testing.assert_array_equal(T.predicted_prevalence(C), C.sum(axis=2))
    np.testing.assert_array_equal(T.f1(C, 1), np.stack([[T.f1(C[i, 0], 1)] for i in range(2)]))
    np.testing.assert_array_equal(T.MEASURES["f1"](C), T.f1(C, 1))  # binary: F1 of class 1, not macro-F1
    D = rng.dirichlet(np.ones(9), size=3).reshape(3, 3, 3)  # not symmetric: rows and columns differ
    np.testing.assert_array_equal(T.true_prevalence(D), D.sum(axis=2))


def test_precision_and_recall_of_an_absent_class_default_to_zero():
    C = np.array([[0.5, 0.0, 0.0], [0.25, 0.25, 0.0], [0.0, 0.0, 0.0]])  # class 2 neither present nor predicted
    assert T.precision(C).tolist() == [0.5 / 0.75, 1.0, 0.0]
    assert T.recall(C).tolist() == [1.0, 0.5, 0.0]
    assert T.precision(C, empty=np.nan)[2] != T.precision(C, empty=np.nan)[2]  # the fallback is the argument


def test_contingency_table_argument_names_and_codeframe():
    with pytest.raises(ValueError, match="^n_classes must be"):
        T.contingency_table([0], [0], 1)
    with pytest.raises(ValueError, match=r"^y_true has labels \[3\] outside the codeframe"):
        T.contingency_table([0, 3], [0, 1], 3)
    with pytest.raises(ValueError, match=r"^y_pred has labels \[5\] outside the codeframe"):
        T.contingency_table([0, 1], [0, 5], 3)
    with pytest.raises(ValueError, match=r"^cannot build a contingency table from an empty sample \(y_true has no "
                                         r"items\)$"):
        T.contingency_table([], [], 2)


def test_f1_pos_is_a_class_index_and_lookups_keep_callables():
    with pytest.raises(ValueError, match="^pos must be"):
        T.f1(np.eye(2) / 2, pos=-1)

    def mine(C):
        return np.ones(np.shape(C)[:-2], dtype=int)

    assert T.get_measure(mine) is mine
    with pytest.raises(TypeError, match="^measure must be a name or a callable, got int$"):
        T.get_measure(3)
    stack = np.stack([np.eye(2) / 2] * 3)
    assert T.measure_value(stack, mine).dtype == float  # a measure's integers come back as floats
    assert T.measure_value(np.eye(2) / 2) == 1.0 and T.measure_value(np.array([[0.25, 0.25], [0.5, 0.0]])) == 0.25


# ---- class_counts: largest remainders (the sample sizes of the conformal calibration and the PPS check) ----

def test_class_counts_are_largest_remainders_ties_to_the_first_class():
    assert T.class_counts([0.5, 0.5], 7).tolist() == [4, 3]
    assert T.class_counts([1 / 3, 1 / 3, 1 / 3], 4).tolist() == [2, 1, 1]
    assert T.class_counts([1 / 3, 1 / 3, 1 / 3], 5).tolist() == [2, 2, 1]
    assert T.class_counts([0.25, 0.25, 0.5], 2).tolist() == [1, 0, 1]
    assert T.class_counts([0.15, 0.6, 0.25], 10).tolist() == [2, 6, 2]   # raw 1.5, 6, 2.5: ties to the first
    assert T.class_counts([0.12, 0.18, 0.7], 10).tolist() == [1, 2, 7]   # remainders .2 and .8: the larger
    assert T.class_counts([0.1, 0.2, 0.7], 10).tolist() == [1, 2, 7]     # exact: nothing to add
    assert T.class_counts([0.0, 1.0], 3).tolist() == [0, 3]


def test_class_counts_break_ties_by_class_order_for_many_classes():
    # 18 classes, remainders .5, .25, .75 repeated: 9 items to add go to the six .75s, then the first three .5s
    # (a stable sort; numpy's default sort is not stable beyond 16 items)
    raw = np.r_[np.full(5, 2), np.ones(13)] + np.tile([0.5, 0.25, 0.75], 6)
    expected = np.floor(raw).astype(int)
    expected[[2, 5, 8, 11, 14, 17, 0, 3, 6]] += 1
    assert T.class_counts(raw / 32, 32).tolist() == expected.tolist()


def test_class_counts_sum_to_size_and_name_bad_arguments():
    assert T.class_counts([0.5, 0.5], 19).tolist() == [10, 9]       # rounding each class gives 10 + 10
    assert T.class_counts([1 / 3] * 3, 20).tolist() == [7, 7, 6]
    assert T.class_counts([0.26, 0.74], 10).tolist() == [3, 7]      # remainders .6 and .4
    assert T.class_counts([0.5, 0.5], 0).tolist() == [0, 0]
    assert T.class_counts([0.5, 0.5], 3).dtype == np.int64
    with pytest.raises(ValueError, match="size must be >= 0"):
        T.class_counts([0.5, 0.5], -1)
    with pytest.raises(ValueError, match="prevalence .*sum"):
        T.class_counts([0.5, 0.6], 10)
    with pytest.raises(ValueError, match=r"prevalence must be one distribution, shape \(n,\), got shape \(2, 2\)"):
        T.class_counts([[0.5, 0.5], [0.5, 0.5]], 10)


def test_averaged_measures_with_an_absent_class_by_hand():
    """Macro-F1 averages over every class (an undefined F1, class neither true nor predicted, counts 1); balanced
    accuracy over the classes present in the sample only (scikit-learn's definitions, checked beside)."""
    y, absent, predicted_only = np.array([0, 0, 1, 1]), np.array([0, 0, 0, 1]), np.array([0, 2, 1, 1])
    C = T.contingency_table(y, absent, 3)  # class 2 neither true nor predicted
    assert T.macro_f1(C) == pytest.approx((0.8 + 2 / 3 + 1) / 3, abs=1e-15)  # F1: 1 / 1.25, 0.5 / 0.75, undefined
    assert T.balanced_accuracy(C) == pytest.approx((1 + 0.5) / 2, abs=1e-15)  # not (1 + 0.5 + 0) / 3
    C = T.contingency_table(y, predicted_only, 3)  # class 2 predicted once, never true
    assert T.macro_f1(C) == pytest.approx((2 / 3 + 1 + 0) / 3, abs=1e-15)
    assert T.balanced_accuracy(C) == pytest.approx((0.5 + 1) / 2, abs=1e-15)
    assert T.macro_f1(C) == pytest.approx(metrics.f1_score(y, predicted_only, labels=[0, 1, 2], average="macro",
                                                           zero_division=1.0))

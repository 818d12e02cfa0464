"""Input validation (capshift.validation): the checks every public entry point runs on its arguments."""
import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.utils import check_array

import capshift.validation as validation
from capshift.validation import (ATOL, InsufficientEvidenceWarning, MAX_SEED, check_X, check_class_evidence,
                                 check_classifier, check_distribution, check_every_class, check_finite_array,
                                 check_fitted, check_fraction, check_int, check_labels, check_posteriors,
                                 check_samples, check_seed, predict_codes)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_check_X_returns_a_finite_float_array_itself(dtype):
    # the fast path for finite float arrays must return what check_array returns for them: the array itself
    X = np.random.default_rng(0).normal(size=(7, 3)).astype(dtype)
    assert check_X(X, n_features=3) is X and check_array(X) is X
    F = np.asfortranarray(X)
    assert check_X(F) is F


@pytest.mark.parametrize("X, error, words", [
    (np.array([[0.0, np.nan]]), ValueError, "NaN"),
    (np.array([[0.0, np.inf]]), ValueError, "infinity"),
    (np.zeros((0, 2)), ValueError, "empty"),
    (np.zeros((2, 0)), ValueError, "feature"),
    (np.zeros(3), ValueError, "reshape one item"),
    (np.zeros((2, 4)), ValueError, "fitted on 3 features"),
    (np.array([["a", "b", "c"]]), ValueError, "X"),
])
def test_check_X_names_the_problem(X, error, words):
    # arrays the fast path does not take go through check_array and keep their messages
    with pytest.raises(error, match=words):
        check_X(X, n_features=3)


def test_check_X_converts_what_is_not_a_float_array():
    # integers, lists and subclasses of ndarray are converted by check_array, never returned as they are
    ints = np.arange(6).reshape(3, 2)
    out = check_X(ints)
    assert out.dtype.kind in "iu" and np.array_equal(out, ints)
    assert isinstance(check_X([[1.0, 2.0]]), np.ndarray)
    masked = np.ma.masked_array(np.ones((2, 2)))
    assert type(check_X(masked)) is np.ndarray


def test_check_samples_names_the_bad_sample():
    good = np.ones((4, 2))
    with pytest.raises(ValueError, match=r"samples\[1\]"):
        check_samples([good, np.array([[1.0, np.nan]])], 2)
    assert all(a is b for a, b in zip(check_samples([good, good], 2), [good, good]))


# -- Every check pinned: what it accepts and returns, what it refuses, the exception type and the whole message (issue 32: mutation testing) ---
def _raises(error, message, f, *args, **kwargs):
    """f(*args, **kwargs) raises exactly ``error`` (not a subclass) with exactly ``message``."""
    with pytest.raises(error) as info:
        f(*args, **kwargs)
    assert type(info.value) is error
    assert str(info.value) == message
    return info.value


# --- check_int -------------------------------------------------------------------------------------------------------

def test_check_int_accepts_ints_and_numpy_ints_from_1_by_default():
    assert check_int(1, "n") == 1 and type(check_int(1, "n")) is int
    out = check_int(np.int32(7), "n")
    assert out == 7 and type(out) is int
    assert check_int(-5, "n", min_value=None) == -5       # no lower bound
    assert check_int(5, "n", max_value=5) == 5             # both bounds inclusive
    assert check_int(0, "n", min_value=0) == 0


@pytest.mark.parametrize("value, shown", [(True, "True (bool)"), (2.5, "2.5 (float)"), (2.0, "2.0 (float)"),
                                          ("3", "'3' (str)"), (None, "None (NoneType)")])
def test_check_int_refuses_non_integers_with_a_type_error(value, shown):
    _raises(TypeError, f"n_bins must be an int, got {shown}", check_int, value, "n_bins")


def test_check_int_refuses_values_out_of_range():
    _raises(ValueError, "n must be >= 1, got 0", check_int, 0, "n")
    _raises(ValueError, "n must be >= 3, got 2", check_int, 2, "n", min_value=3)
    _raises(ValueError, "n must be <= 5, got 6", check_int, 6, "n", max_value=5)


# --- check_seed ------------------------------------------------------------------------------------------------------

def test_check_seed_returns_an_int_in_numpys_range():
    assert check_seed(0) == 0
    out = check_seed(np.uint64(MAX_SEED))
    assert out == MAX_SEED == 2**32 - 1 and type(out) is int
    assert check_seed(5, allow_none=True) == 5
    _raises(ValueError, "seed must be in 0..2**32-1 (numpy's seed range), got -1; use a smaller seed", check_seed, -1)
    _raises(ValueError, "rs must be in 0..2**32-1 (numpy's seed range), got 4294967296; use a smaller seed",
            check_seed, 2**32, "rs")


def test_check_seed_refuses_none_unless_allowed():
    _raises(TypeError, "seed must be an int (None would make the results irreproducible) in 0..2**32-1, got None "
            "(NoneType)", check_seed, None)
    assert check_seed(None, allow_none=True) is None


@pytest.mark.parametrize("seed, shown", [(True, "True (bool)"), (1.0, "1.0 (float)"), ("1", "'1' (str)")])
def test_check_seed_refuses_non_integers(seed, shown):
    _raises(TypeError, f"seed must be an int (None would make the results irreproducible) in 0..2**32-1, got {shown}",
            check_seed, seed)
    _raises(TypeError, f"random_state must be an int or None in 0..2**32-1, got {shown}",
            check_seed, seed, "random_state", allow_none=True)


def test_check_seed_refuses_a_random_state_unless_none_is_allowed():
    rs = np.random.RandomState(0)
    with pytest.raises(TypeError, match=r"^seed must be an int \(None would make the results irreproducible\)"):
        check_seed(rs)
    with pytest.raises(TypeError, match=r"^seed must be an int or None in 0\.\.2\*\*32-1, got Generator"):
        check_seed(np.random.default_rng(0), allow_none=True)


def _untemper(y):
    """The inverse of MT19937's output tempering: the state word whose output is y."""
    y ^= y >> 18
    y ^= (y << 15) & 0xEFC60000
    t = y
    for _ in range(5):
        t = y ^ ((t << 7) & 0x9D2C5680)
    y = t & 0xFFFFFFFF
    t = y
    for _ in range(3):
        t = y ^ (t >> 11)
    return t & 0xFFFFFFFF


def test_check_seed_draws_an_int_seed_from_a_random_state():
    out = check_seed(np.random.RandomState(0), allow_none=True)
    assert type(out) is int and out == np.random.RandomState(0).randint(0, 2**31 - 1) == 209652396
    # the draw is from 0..2**31-2: a RandomState whose next 32-bit output is 2**31-2 gives that seed
    rs = np.random.RandomState(0)
    key = rs.get_state()[1].copy()
    key[623] = _untemper(2**31 - 2)
    rs.set_state(("MT19937", key, 623))
    assert check_seed(rs, allow_none=True) == 2**31 - 2


# --- check_fraction --------------------------------------------------------------------------------------------------

def test_check_fraction_default_interval_is_open_0_1():
    out = check_fraction(0.5, "f")
    assert out == 0.5 and type(out) is float
    assert check_fraction(np.float32(0.25), "f") == 0.25 and type(check_fraction(np.float32(0.25), "f")) is float
    assert check_fraction(1e-12, "f") == 1e-12 and check_fraction(1 - 1e-12, "f") == 1 - 1e-12  # just inside
    _raises(ValueError, "f must be in (0.0, 1.0), got 0.0", check_fraction, 0.0, "f")
    _raises(ValueError, "f must be in (0.0, 1.0), got 1.0", check_fraction, 1.0, "f")
    _raises(ValueError, "f must be in (0.0, 1.0), got -0.5", check_fraction, -0.5, "f")
    _raises(ValueError, "f must be in (0.0, 1.0), got 1.5", check_fraction, 1.5, "f")
    _raises(ValueError, "f must be in (0.0, 1.0), got 0", check_fraction, 0, "f")  # an int 0 (shown as given)


@pytest.mark.parametrize("closed, lb, rb, low_ok, high_ok", [
    ("neither", "(", ")", False, False), ("left", "[", ")", True, False),
    ("right", "(", "]", False, True), ("both", "[", "]", True, True)])
def test_check_fraction_closed_sets_which_bounds_are_inclusive(closed, lb, rb, low_ok, high_ok):
    for value, ok in ((2.0, low_ok), (4.0, high_ok)):
        if ok:
            assert check_fraction(value, "alpha", low=2.0, high=4.0, closed=closed) == value
        else:
            _raises(ValueError, f"alpha must be in {lb}2.0, 4.0{rb}, got {value!r}",
                    check_fraction, value, "alpha", low=2.0, high=4.0, closed=closed)
    assert check_fraction(3, "alpha", low=2.0, high=4.0, closed=closed) == 3.0
    for value in (1.5, 4.5, float("nan")):
        _raises(ValueError, f"alpha must be in {lb}2.0, 4.0{rb}, got {value!r}",
                check_fraction, value, "alpha", low=2.0, high=4.0, closed=closed)


def test_check_fraction_refuses_infinity_even_inside_infinite_bounds():
    _raises(ValueError, "x must be in [-inf, inf], got inf", check_fraction, np.inf, "x", -np.inf, np.inf, "both")
    assert check_fraction(3.0, "x", -np.inf, np.inf, "both") == 3.0


@pytest.mark.parametrize("value, shown", [(True, "True (bool)"), ("0.5", "'0.5' (str)"), (None, "None (NoneType)"),
                                          (0.5j, "0.5j (complex)")])
def test_check_fraction_refuses_non_numbers(value, shown):
    _raises(TypeError, f"gamma must be a number, got {shown}", check_fraction, value, "gamma")


# --- check_finite_array ----------------------------------------------------------------------------------------------

def test_check_finite_array_returns_floats():
    out = check_finite_array([1, 2], "a")
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.0]
    out = check_finite_array([[0.0, 1.0]], "a", ndim=2, low=0.0, high=1.0)  # bounds inclusive
    assert out.tolist() == [[0.0, 1.0]]


def test_check_finite_array_refusals():
    _raises(TypeError, "a must be numeric (an array of floats), got str", check_finite_array, "abc", "a")
    _raises(TypeError, "a must be numeric (an array of floats), got list", check_finite_array, [object()], "a")
    _raises(ValueError, "a must be 1-d, got shape (2, 2)", check_finite_array, np.ones((2, 2)), "a", ndim=1)
    _raises(ValueError, "a contains NaN or infinite values", check_finite_array, [0.5, np.nan], "a")
    _raises(ValueError, "a contains NaN or infinite values", check_finite_array, [0.5, -np.inf], "a")
    _raises(ValueError, "a must be >= 0, got min -0.25", check_finite_array, [0.5, -0.25], "a", low=0)
    _raises(ValueError, "a must be <= 1, got max 2.5", check_finite_array, [0.5, 2.5], "a", high=1)


# --- check_samples ---------------------------------------------------------------------------------------------------

_NOT_A_LIST = "samples must be a list of 2-d arrays, one per test sample, got {}; for a single sample use predict(X) or pass [X]"


def test_check_samples_single_is_one_sample_named_X():
    X = np.ones((3, 2))
    out = check_samples(X, 2, single=True)
    assert isinstance(out, list) and len(out) == 1 and out[0] is X
    _raises(ValueError, "X has 3 features, but the estimator was fitted on 2 features: pass items with the same "
            "columns as the validation set", check_samples, np.ones((2, 3)), 2, single=True)


def test_check_samples_reads_a_3d_array_as_k_samples():
    S = np.arange(24, dtype=float).reshape(2, 3, 4)
    out = check_samples(S, 4)
    assert len(out) == 2 and all(np.array_equal(o, s) for o, s in zip(out, S))


@pytest.mark.parametrize("samples, kind", [
    (np.ones((2, 2)), "ndarray"), (np.ones((1, 2, 2, 2)), "ndarray"), (sp.csr_matrix(np.eye(2)), "csr_matrix"),
    (pd.DataFrame(np.eye(2)), "DataFrame"), (iter([np.eye(2)]), "list_iterator"), (5, "int"), ("ab", "str"),
    (b"ab", "bytes")])
def test_check_samples_refuses_what_is_not_a_list_of_samples(samples, kind):
    _raises(TypeError, _NOT_A_LIST.format(kind), check_samples, samples, 2)


def test_check_samples_refuses_an_empty_list_and_checks_each_samples_features():
    _raises(ValueError, "samples is empty: pass a list with at least one sample", check_samples, [], 2)
    _raises(ValueError, "samples[1] has 3 features, but the estimator was fitted on 2 features: pass items with the "
            "same columns as the validation set", check_samples, (np.ones((2, 2)), np.ones((2, 3))), 2)


# --- check_X ---------------------------------------------------------------------------------------------------------

_NOT_2D = "{} must be a 2-d array of items x features (ndarray, DataFrame or sparse matrix), got {}"


@pytest.mark.parametrize("X, kind", [(None, "NoneType"), (5.0, "float"), (3, "int"), ("abc", "str"), (b"ab", "bytes"),
                                     (np.float64(1.0), "float64")])
def test_check_X_refuses_scalars_and_strings_with_a_type_error(X, kind):
    _raises(TypeError, _NOT_2D.format("X", kind), check_X, X)
    _raises(TypeError, _NOT_2D.format("X_test", kind), check_X, X, "X_test")


def test_check_X_fast_path_skips_check_array(monkeypatch):
    # a finite float ndarray (even 1 x 1, with n_features given) is returned without calling check_array
    def spy(*args, **kwargs):
        raise AssertionError("check_array called")
    monkeypatch.setattr(validation, "check_array", spy)
    for X in (np.ones((1, 1)), np.ones((1, 1), dtype=np.float32), np.ones((2, 3))):
        assert check_X(X) is X
        assert check_X(X, n_features=X.shape[1]) is X


def test_check_X_refuses_empty_and_nd_arrays():
    _raises(ValueError, "X is empty (shape (0, 3)): a sample needs at least one item", check_X, np.zeros((0, 3)))
    _raises(ValueError, "X is empty (shape (0,)): a sample needs at least one item", check_X, np.zeros(0))
    _raises(ValueError, "X: Found array with dim 3, while dim <= 2 is required.", check_X, np.ones((2, 2, 2)))


@pytest.mark.parametrize("X", [np.zeros(3), [0.0, 0.0, 0.0], pd.Series([1.0, 2.0, 3.0])])
def test_check_X_says_how_to_reshape_one_item(X):
    _raises(ValueError, "X_val must be a 2-d array of items x features, got shape (3,); reshape one item with "
            "X.reshape(1, -1)", check_X, X, "X_val")


def test_check_X_names_the_argument_in_check_arrays_messages():
    _raises(ValueError, "Input X_val contains NaN.", check_X, np.array([[0.0, np.nan]]), "X_val")
    _raises(ValueError, "Input X_val contains infinity or a value too large for dtype('float64').",
            check_X, np.array([[0.0, np.inf]]), "X_val")
    _raises(ValueError, "Input X_val contains NaN.", check_X, sp.csr_matrix(np.array([[0.0, np.nan]])), "X_val")


def test_check_X_accepts_csr_and_csc_and_converts_other_sparse_formats():
    for fmt in ("csr", "csc"):
        S = sp.random(3, 2, density=0.5, format=fmt, random_state=0)
        out = check_X(S, n_features=2)
        assert sp.issparse(out) and out.format == fmt and (out != S).nnz == 0
    out = check_X(sp.coo_matrix(np.eye(2)))
    assert out.format == "csr" and np.array_equal(out.toarray(), np.eye(2))


def test_check_X_refuses_sparse_where_a_method_needs_dense():
    _raises(TypeError, "Sparse data was passed for X_val, but dense data is required. Use '.toarray()' to convert to "
            "a dense numpy array.", check_X, sp.csr_matrix(np.eye(2)), "X_val", accept_sparse=False)


def test_check_X_refuses_dates_with_a_type_error():
    _raises(TypeError, "X_val must hold numbers, got dtype datetime64[D]",
            check_X, np.array([[np.datetime64("2020-01-01")]]), "X_val")


# --- check_labels ----------------------------------------------------------------------------------------------------

def test_check_labels_returns_int64_codes():
    y = np.array([0, 1, 1], dtype=np.int64)
    assert check_labels(y, 2) is y  # already int64 codes: not copied
    for dtype in (np.float64, np.float32, np.float16):
        out = check_labels(np.array([0.0, 1.0, 2.0], dtype=dtype), 3)
        assert out.dtype == np.int64 and out.tolist() == [0, 1, 2]
    out = check_labels(np.array([True, False]), 2)
    assert out.dtype == np.int64 and out.tolist() == [1, 0]
    out = check_labels(pd.Series([1, 0], index=[5, 7]), 2, n_items=2)
    assert out.dtype == np.int64 and out.tolist() == [1, 0]


@pytest.mark.parametrize("y, dtype", [(np.array([0.5, 1.0]), "float64"), (np.array([0.0, np.nan]), "float64"),
                                      (np.array([0.0, np.inf]), "float64"), (np.array(["a", "b"]), "<U1"),
                                      (np.array([0, 1], dtype=object), "object")])
def test_check_labels_refuses_what_is_not_integral(y, dtype):
    _raises(TypeError, f"y_val must hold integer class indices 0..n_classes-1, got dtype {dtype}; encode labels first "
            "(e.g. sklearn.preprocessing.LabelEncoder)", check_labels, y, 4, "y_val")


def test_check_labels_refuses_codes_outside_range_n_classes():
    _raises(ValueError, "y has labels [-1, 5] outside the codeframe 0..2; pass the right n_classes or re-encode the "
            "labels", check_labels, np.array([0, 1, 5, -1, 2, 5]), 3)
    _raises(ValueError, "y has labels [2] outside the codeframe 0..1; pass the right n_classes or re-encode the "
            "labels", check_labels, [0, 1, 2], 2)
    _raises(ValueError, "y has labels [-1] outside the codeframe 0..1; pass the right n_classes or re-encode the "
            "labels", check_labels, [0, -1], 2)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 62, reason="needs an extended-precision long double")
def test_check_labels_reports_a_bad_integral_float_exactly():
    big = 2**60 + 1
    _raises(ValueError, f"y has labels [{big}] outside the codeframe 0..1; pass the right n_classes or re-encode the "
            "labels", check_labels, np.array([big], dtype=np.longdouble), 2)


def test_check_labels_shape_errors():
    _raises(ValueError, "y must be a 1-d array of class indices, got shape (2, 2)", check_labels, np.zeros((2, 2)), 2)
    _raises(ValueError, "y_val must have one label per item: expected shape (3,), got (2,)",
            check_labels, [0, 1], 2, "y_val", 3)


# --- check_every_class, check_class_evidence -------------------------------------------------------------------------

def test_check_every_class():
    assert check_every_class([0, 1, 1], 2) is None         # one item of a class is enough
    assert check_every_class(np.array([1.0, 0.0]), 2) is None  # integral float codes
    _raises(ValueError, "y_val has no items of class(es) [0, 2]: CAP methods need every class of the classifier in "
            "the validation set (their rates cannot be estimated otherwise); collect validation items of every class",
            check_every_class, [1, 1, 3], 4)
    _raises(ValueError, "y_cal has no items of class(es) [2]: CAP methods need every class of the classifier in "
            "the validation set (their rates cannot be estimated otherwise); collect validation items of every class",
            check_every_class, [0, 1], 3, "y_cal")


_EVIDENCE = ("y_val has 1 item(s) of class 1, 0 item(s) of class 2: DoC needs at least 2 validation items of every "
             "class (its rates); collect more validation items of class(es) [1, 2]")


def test_check_class_evidence_counts_and_accepts_the_minimum():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counts = check_class_evidence(np.array([0.0, 0.0, 1.0, 1.0]), 2, 2, "DoC", "its rates")
    assert counts.tolist() == [2, 2]


def test_check_class_evidence_hard_raises():
    _raises(ValueError, _EVIDENCE, check_class_evidence, [0, 0, 1], 3, 2, "DoC", "its rates", hard=True)
    _raises(ValueError, _EVIDENCE.replace("y_val", "y_cal", 1), check_class_evidence, [0, 0, 1], 3, 2, "DoC",
            "its rates", "y_cal", True)


def test_check_class_evidence_warns_by_default():
    with pytest.warns(InsufficientEvidenceWarning) as record:
        counts = check_class_evidence([0, 0, 1], 3, 2, "DoC", "its rates")
    assert counts.tolist() == [2, 1, 0]
    assert len(record) == 1 and type(record[0].message) is InsufficientEvidenceWarning
    assert str(record[0].message) == _EVIDENCE + "; its estimate is unreliable until then"


def test_check_class_evidence_warns_at_level_3(monkeypatch):
    calls = []
    monkeypatch.setattr(validation.warnings, "warn", lambda *a, **k: calls.append((a, k)))
    check_class_evidence([0, 0, 1], 3, 2, "DoC", "its rates")
    assert calls == [((_EVIDENCE + "; its estimate is unreliable until then", InsufficientEvidenceWarning),
                      {"stacklevel": 3})]


def test_check_class_evidence_warning_points_at_the_methods_caller():
    if hasattr(check_class_evidence, "__wrapped__"):
        pytest.skip("under mutmut a trampoline adds frames")

    def method():  # a CAP method's fit, which calls check_class_evidence
        return check_class_evidence([0, 0, 1], 3, 2, "DoC", "its rates")

    with pytest.warns(InsufficientEvidenceWarning) as record:
        line = inspect.currentframe().f_lineno; method()  # noqa: E702
    assert record[0].filename == __file__ and record[0].lineno == line


# --- check_classifier, predict_codes ---------------------------------------------------------------------------------

class _Fitted(ClassifierMixin, BaseEstimator):
    """A 'fitted' classifier with the given classes_ and (optionally) predictions."""

    def __init__(self, classes=(0, 1), pred=None):
        self.classes = classes
        self.pred = pred

    def fit(self, X, y):
        return self

    def predict(self, X):
        return self.pred


class _FittedProba(_Fitted):
    def predict_proba(self, X):
        return np.full((len(X), 2), 0.5)


def _fitted(classes, cls=_Fitted, pred=None):
    h = cls(classes, pred)
    h.classes_ = np.asarray(classes)
    return h


def test_check_classifier_returns_the_number_of_classes():
    assert check_classifier(_fitted([0, 1, 2])) == 3        # no predict_proba needed by default
    assert check_classifier(_fitted([0.0, 1.0])) == 2       # integral float classes
    assert check_classifier(_fitted([0, 1], _FittedProba), need_proba=True) == 2


_CLASSES = "classifier.classes_ must be 0..n-1 with n >= 2, got {}; encode the labels (e.g. with capshift.datasets.load) before training"


@pytest.mark.parametrize("classes, shown", [([0], "[0]"), ([1, 2], "[1, 2]"), (["a", "b"], "['a', 'b']"),
                                            ([False, True], "[False, True]"), ([0, 2], "[0, 2]")])
def test_check_classifier_refuses_classes_other_than_0_to_n_minus_1(classes, shown):
    _raises(ValueError, _CLASSES.format(shown), check_classifier, _fitted(classes))


def test_check_classifier_refuses_a_fitted_estimator_without_classes():
    _raises(ValueError, _CLASSES.format("[]"), check_classifier, LinearRegression().fit([[0.0], [1.0]], [0, 1]))


def test_check_classifier_refuses_what_is_not_a_fitted_classifier():
    _raises(TypeError, "classifier must be a fitted scikit-learn classifier with predict(), got object",
            check_classifier, object())
    _raises(ValueError, "classifier must already be trained (CAP methods never fit it): call classifier.fit(X_L, y_L) "
            "first", check_classifier, LogisticRegression())

    class PredictOnly:
        def predict(self, X):
            return X
    _raises(TypeError, "classifier must be a scikit-learn estimator, got PredictOnly", check_classifier, PredictOnly())


def test_check_classifier_needs_predict_proba_when_asked():
    _raises(TypeError, "this method needs posterior probabilities, but _Fitted has no predict_proba (for an SVC, wrap "
            "it: CalibratedClassifierCV(SVC(), ensemble=False))", check_classifier, _fitted([0, 1]), need_proba=True)


def test_predict_codes_gives_int64_codes():
    pred = np.array([0, 1, 1], dtype=np.int64)
    assert predict_codes(_fitted([0, 1], pred=pred), None) is pred  # int64 decisions are returned as they are
    for dtype in (np.float64, np.float32, np.int32):
        out = predict_codes(_fitted([0, 1], pred=np.array([1, 0], dtype=dtype)), None)
        assert out.dtype == np.int64 and out.tolist() == [1, 0]
    out = predict_codes(_fitted([0, 1], pred=[1, 0]), None)
    assert out.dtype == np.int64 and out.tolist() == [1, 0]


# --- check_distribution, check_posteriors ----------------------------------------------------------------------------

def test_check_distribution_returns_float64_and_clips_round_off():
    out = check_distribution([0, 1])
    assert out.dtype == np.float64 and out.tolist() == [0.0, 1.0]
    out = check_distribution([-5e-7, 1.0])          # round-off below 0, within ATOL: clipped to 0
    assert out.tolist() == [0.0, 1.0]
    atol = 2.0**-20                                 # exactly -atol is still round-off (a sum of exactly 1)
    out = check_distribution([-atol, 1.0 + atol], atol=atol)
    assert out.tolist() == [0.0, 1.0 + atol]
    out = check_distribution([[0.25, 0.75], [1.0, 0.0]], n_classes=2)
    assert out.shape == (2, 2) and out.tolist() == [[0.25, 0.75], [1.0, 0.0]]


def test_check_distribution_tolerance_on_the_sum():
    assert check_distribution([0.5, 0.5 + 0.9 * ATOL]).tolist() == [0.5, 0.5 + 0.9 * ATOL]  # just inside ATOL
    _raises(ValueError, "prevalence must be a probability distribution, i.e. sum to 1 along the last axis (within "
            "1e-06); found sums such as 1; divide counts by their total (probabilities, not scores or logits)",
            check_distribution, [0.5, 0.5 + 1.1 * ATOL])                                    # just outside
    atol = 2.0**-20                                       # a sum exactly 1 + atol is inside (the bound is inclusive)
    assert check_distribution([0.5, 0.5 + atol], atol=atol).tolist() == [0.5, 0.5 + atol]
    _raises(ValueError, "p must be a probability distribution, i.e. sum to 1 along the last axis (within "
            "9.53674e-07); found sums such as 0.6; divide counts by their total (probabilities, not scores or logits)",
            check_distribution, [[0.5, 0.5 + atol], [0.3, 0.3], [0.5, 0.5]], "p", atol=atol)


def test_check_distribution_refusals():
    _raises(TypeError, "prevalence must be an array of probabilities (floats), got a string 'ab'", check_distribution, "ab")
    _raises(TypeError, "prevalence must be an array of probabilities (floats), got list", check_distribution, ["a", "b"])
    _raises(TypeError, "q must be an array of probabilities (floats), got dict", check_distribution, {}, "q")
    _raises(ValueError, "prevalence must have shape (..., n) with n >= 2 classes, got shape ()", check_distribution, 1.0)
    _raises(ValueError, "prevalence must have shape (..., n) with n >= 2 classes, got shape (1,)", check_distribution, [1.0])
    _raises(ValueError, "q must have shape (..., n) with n >= 3 classes, got shape (2,)",
            check_distribution, [0.5, 0.5], "q", min_classes=3)
    _raises(ValueError, "prevalence must have shape (..., 3) (one entry per class), got (2,)",
            check_distribution, [0.5, 0.5], n_classes=3)
    _raises(ValueError, "prevalence contains NaN or infinite values; probabilities are finite fractions",
            check_distribution, [0.5, np.nan])
    _raises(ValueError, "prevalence has negative values (min -0.5); probabilities must be >= 0",
            check_distribution, [-0.5, 1.5])
    _raises(ValueError, "prevalence has negative values (min -2e-06); probabilities must be >= 0",
            check_distribution, [-2 * ATOL, 1.0 + 2 * ATOL])


def test_check_posteriors_returns_rows_clipped_to_0_1():
    out = check_posteriors([[1.0 + 5e-7, -5e-7], [0.25, 0.75]], n_classes=2)
    assert out.dtype == np.float64 and out.tolist() == [[1.0, 0.0], [0.25, 0.75]]
    assert check_posteriors([[0.5, 0.6]], atol=0.2).tolist() == [[0.5, 0.6]]  # atol is passed on


def test_check_posteriors_refusals():
    want = "posteriors must be a non-empty 2-d array of shape {} (pass classifier.predict_proba(X)), got shape {}"
    _raises(ValueError, want.format("(m, n)", "(2,)"), check_posteriors, [0.5, 0.5])
    _raises(ValueError, want.format("(m, 2)", "(2,)"), check_posteriors, [0.5, 0.5], n_classes=2)
    _raises(ValueError, want.format("(m, n)", "(0, 2)"), check_posteriors, np.zeros((0, 2)))
    _raises(ValueError, want.format("(m, n)", "(1, 1, 2)"), check_posteriors, [[[0.5, 0.5]]])
    _raises(ValueError, "P must have shape (..., 3) (one entry per class), got (1, 2)",
            check_posteriors, [[0.5, 0.5]], 3, "P")
    _raises(ValueError, "posteriors must be a probability distribution, i.e. sum to 1 along the last axis (within "
            "1e-06); found sums such as 0.9; divide counts by their total (probabilities, not scores or logits)",
            check_posteriors, [[0.5, 0.4]])


# --- check_fitted ----------------------------------------------------------------------------------------------------

def test_check_fitted_sklearn_estimators():
    lr = LogisticRegression()
    _raises(NotFittedError, "This LogisticRegression instance is not fitted yet: call fit(X_val, y_val) first",
            check_fitted, lr, "coef_")
    lr.fit([[0.0], [1.0]], [0, 1])
    assert check_fitted(lr, "coef_") is None and check_fitted(lr, ["coef_", "classes_"]) is None
    assert check_fitted(lr, None) is None  # None: scikit-learn's own test of fittedness
    # the named attributes are what is checked, not any fitted attribute
    _raises(NotFittedError, "This LogisticRegression instance is not fitted yet: call fit(X_val, y_val) first",
            check_fitted, lr, "b_")
    with pytest.raises(TypeError, match="is a class, not an instance"):
        check_fitted(LogisticRegression, "coef_")


def test_check_fitted_other_objects():
    class Quantifier:
        pass
    q = Quantifier()
    q.a_ = 1
    assert check_fitted(q, "a_") is None and check_fitted(q, ["a_"]) is None and check_fitted(q, ("a_",)) is None
    for attributes in ("b_", ["a_", "b_"], ("b_",)):
        _raises(NotFittedError, "This Quantifier instance is not fitted yet: call fit(X_val, y_val) first",
                check_fitted, q, attributes)


# -- bad input found by the mutation run's review, refused with a message naming the argument ---------------------------
def test_complex_values_are_refused_not_truncated_to_their_real_parts():
    P = np.array([[0.5 + 3j, 0.5]])
    _raises(TypeError, "posteriors must be an array of probabilities (floats), got complex values", check_posteriors, P)
    _raises(TypeError, "prior must be an array of probabilities (floats), got complex values", check_distribution,
            [0.5 + 0j, 0.5], "prior")
    _raises(TypeError, "weights must be numeric (an array of floats), got complex values", check_finite_array,
            np.array([1 + 0j, 2.0]), "weights")


def test_a_huge_int_fraction_is_a_value_error_naming_the_argument():
    _raises(ValueError, f"f must be in (0.0, 1.0), got {10**400!r}", check_fraction, 10**400, "f")
    _raises(ValueError, f"f must be in (0.0, 1.0), got {-10**400!r}", check_fraction, -10**400, "f")


def test_labels_beyond_int64_are_reported_as_given():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cast warning on the way
        _raises(ValueError, "y has labels [100000000000000000000] outside the codeframe 0..1; pass the right n_classes "
                "or re-encode the labels", check_labels, np.array([1e20, 0.0]), 2)
        _raises(ValueError, f"y has labels [{2**63}] outside the codeframe 0..1; pass the right n_classes or re-encode "
                "the labels", check_labels, np.array([2**63, 1], dtype=np.uint64), 2)
    out = check_labels(np.array([1.0, 0.0]), 2)
    assert out.dtype == np.int64 and out.tolist() == [1, 0]


def test_a_duck_typed_classifier_is_a_type_error_naming_it():
    class Duck:  # fit, predict and a fitted attribute, but not a scikit-learn estimator
        classes_ = np.array([0, 1])

        def fit(self, X, y):
            return self

        def predict(self, X):
            return np.zeros(len(X), dtype=int)
    _raises(TypeError, "classifier must be a scikit-learn estimator, got Duck", check_classifier, Duck())


def test_predict_codes_gives_int64_codes_of_h_on_X():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    h = LogisticRegression().fit(X, np.array([0.0, 0.0, 1.0, 1.0]))  # trained on float labels: predicts floats
    assert h.predict(X).dtype == np.float64
    out = predict_codes(h, X)
    assert out.dtype == np.int64 and out.tolist() == [0, 0, 1, 1]
    assert predict_codes(h, X[::-1]).tolist() == [1, 1, 0, 0]  # h's decisions on these X, not on others

"""Input validation (capshift.validation): the checks every public entry point runs on its arguments."""
import numpy as np
import pytest
from sklearn.utils import check_array

from capshift.validation import check_samples, check_X


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

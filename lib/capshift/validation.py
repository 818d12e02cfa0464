"""The one validation layer of capshift, on scikit-learn's utilities.

Every public function and CAP estimator validates its input here, so that the same mistake gets the
same message everywhere: a ``ValueError`` or ``TypeError`` that names the argument, says what was
wrong and how to fix it (never a NaN or a number computed from invalid input).

- :func:`check_X`: a sample of items, ``(m, d)``, through :func:`sklearn.utils.check_array` (finite,
  2-d, numeric; pandas DataFrames are read by position; CSR/CSC sparse matrices pass where a method
  supports them), optionally with the feature count remembered at fit.
- :func:`check_labels`: class codes ``0..n-1`` (integral floats such as 0.0/1.0 read from a CSV are codes).
- :func:`check_classifier`: a fitted classifier over ``0..n-1``; :func:`predict_codes` its decisions as int codes.
- :func:`check_distribution`: the one probability-vector check (prevalences, posterior rows), tolerance :data:`ATOL`;
  :func:`check_posteriors` a posterior matrix (m, n) through it.
- :func:`check_int`, :func:`check_seed`, :func:`check_fraction`: scalar arguments.
- :func:`check_fitted`: scikit-learn's ``check_is_fitted`` (raises ``NotFittedError``).
- :func:`check_class_evidence`: the per-class minimum of validation items a CAP method declares.

Where an input is valid but the estimate computed from it cannot be trusted, capshift warns with one of its
own warning classes (never by relaying a dependency's warning), each message naming the problem and the
minimum the method needs: :class:`CAPWarning` and its subclasses :class:`InsufficientEvidenceWarning` (too
few validation items of a class or of a cell) and :class:`DegenerateClassifierWarning` (h constant on V, or
one-hot posteriors) and :class:`CalibrationWarning`. Filter them as usual, e.g. ``warnings.simplefilter("error", capshift.CAPWarning)``.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

__all__ = ["check_samples", "CAPWarning", "InsufficientEvidenceWarning", "DegenerateClassifierWarning", "CalibrationWarning",
           "check_class_evidence",
           "ATOL", "MAX_SEED", "check_X", "check_labels", "check_classifier", "predict_codes",
           "check_distribution", "check_posteriors", "check_every_class", "check_int", "check_seed", "check_fraction", "check_fitted", "check_finite_array"]

class CAPWarning(UserWarning):
    """Base class of capshift's warnings: the input is valid, but the estimate it leads to may not be trusted."""


class InsufficientEvidenceWarning(CAPWarning):
    """The validation set has fewer items of a class (or of a contingency-table cell) than the method declares it
    needs (``CAPEstimator.min_per_class``, QuAcc's ``min_per_cell``); the message names the classes or cells,
    their counts and the minimum."""


class DegenerateClassifierWarning(CAPWarning):
    """h is degenerate on V (it predicts a single class, or its posteriors are one-hot everywhere), so a method
    that reads h's decisions or confidences cannot be trusted; the message says what the method needs."""


class CalibrationWarning(CAPWarning):
    """A method that assumes h's posteriors calibrated (CBPE, COT) finds them miscalibrated on V: its own estimate of
    h's accuracy on V is further from the truth than sampling explains; the message gives both and the remedy."""


#: Tolerance of every "sums to 1" and "non-negative" check (tables, prevalences, posteriors).
ATOL = 1e-6
#: Largest seed numpy and scikit-learn accept.
MAX_SEED = 2**32 - 1


def check_int(value, name: str, min_value: int | None = 1, max_value: int | None = None) -> int:
    """``value`` as a Python int in ``[min_value, max_value]``; TypeError for non-integers (bools, floats
    such as 2.5, strings), ValueError outside the range. Integral numpy integers are accepted."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    value = int(value)
    if min_value is not None and value < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {value}")
    if max_value is not None and value > max_value:
        raise ValueError(f"{name} must be <= {max_value}, got {value}")
    return value


def check_seed(seed, name: str = "seed", allow_none: bool = False):
    """A seed: an int in ``0..2**32 - 1`` (what numpy and scikit-learn accept), returned as int.

    ``allow_none``: also accept None (returned as None: fresh randomness, scikit-learn's convention for
    ``random_state``) and a ``numpy.random.RandomState`` (an int seed is drawn from it). TypeError for other
    types, ValueError for ints out of range.
    """
    if allow_none and seed is None:
        return None
    if allow_none and isinstance(seed, np.random.RandomState):
        return int(seed.randint(0, 2**31 - 1))
    kinds = "an int or None" if allow_none else "an int (None would make the results irreproducible)"
    if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be {kinds} in 0..2**32-1, got {seed!r} ({type(seed).__name__})")
    if not 0 <= int(seed) <= MAX_SEED:
        raise ValueError(f"{name} must be in 0..2**32-1 (numpy's seed range), got {seed}; use a smaller seed")
    return int(seed)


def check_fraction(value, name: str, low: float = 0.0, high: float = 1.0, closed: str = "neither") -> float:
    """A finite real number in the interval (low, high) (``closed``: "neither", "left", "right" or "both")."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    try:
        v = float(value)
    except OverflowError:  # an int beyond float's range: not finite, refused below with the value given
        v = math.nan
    lo_ok = v >= low if closed in ("left", "both") else v > low
    hi_ok = v <= high if closed in ("right", "both") else v < high
    if not (np.isfinite(v) and lo_ok and hi_ok):
        lb = "[" if closed in ("left", "both") else "("
        rb = "]" if closed in ("right", "both") else ")"
        raise ValueError(f"{name} must be in {lb}{low}, {high}{rb}, got {value!r}")
    return v


def check_finite_array(a, name: str, ndim: int | None = None, low=None, high=None) -> np.ndarray:
    """``a`` as a finite float ndarray (optionally of ``ndim`` dims, values in [low, high])."""
    if np.iscomplexobj(a):  # numpy would drop the imaginary parts with a mere warning
        raise TypeError(f"{name} must be numeric (an array of floats), got complex values")
    try:
        arr = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be numeric (an array of floats), got {type(a).__name__}") from e
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-d, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if low is not None and np.any(arr < low):
        raise ValueError(f"{name} must be >= {low}, got min {arr.min():.6g}")
    if high is not None and np.any(arr > high):
        raise ValueError(f"{name} must be <= {high}, got max {arr.max():.6g}")
    return arr


def check_samples(samples, n_features: int, single: bool = False) -> list:
    """A list of test samples, each checked by :func:`check_X` (shape ``(m_i, d)`` with ``d = n_features``).

    ``single``: ``samples`` is one sample, named ``X`` in errors (returned as a one-item list). A 3-d array
    (k, m, d) is k samples. Raises TypeError for a single array, a sparse matrix, a DataFrame or a non-sequence
    where a list is expected (one sample: ``predict(X)`` or ``[X]``), ValueError for an empty list, and
    check_X's errors naming ``samples[i]``."""
    if single:
        return [check_X(samples, "X", n_features=n_features)]
    if isinstance(samples, np.ndarray) and samples.ndim == 3:
        samples = list(samples)
    if isinstance(samples, (str, bytes, np.ndarray)) or sp.issparse(samples) or hasattr(samples, "iloc") \
            or not hasattr(samples, "__len__"):
        raise TypeError(f"samples must be a list of 2-d arrays, one per test sample, got {type(samples).__name__}; "
                        "for a single sample use predict(X) or pass [X]")
    samples = list(samples)
    if not samples:
        raise ValueError("samples is empty: pass a list with at least one sample")
    return [check_X(X, f"samples[{i}]", n_features=n_features) for i, X in enumerate(samples)]


_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def check_X(X, name: str = "X", n_features: int | None = None, accept_sparse: bool = True):
    """A sample of items, shape ``(m, d)`` with ``m >= 1``, finite and numeric.

    Returns a numpy array (a pandas DataFrame becomes its values, so rows are read by position) or a
    CSR/CSC matrix (``accept_sparse``). ``n_features``: the feature count seen at fit (ValueError if it
    differs). Raises ValueError/TypeError naming ``name``.
    """
    if X is None or isinstance(X, (str, bytes)) or np.isscalar(X):
        raise TypeError(f"{name} must be a 2-d array of items x features (ndarray, DataFrame or sparse matrix), "
                        f"got {type(X).__name__}")
    if type(X) is np.ndarray and X.dtype in _FLOATS and X.ndim == 2 and X.shape[0] >= 1 and X.shape[1] >= 1 \
            and (n_features is None or X.shape[1] == n_features) and np.isfinite(X).all():
        return X  # what check_array returns for it (the array itself), without its per-call overhead (~0.15 ms)
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1 and shape[0] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(shape)}): a sample needs at least one item")
    try:
        out = check_array(X, accept_sparse=("csr", "csc") if accept_sparse else False, dtype="numeric",
                          ensure_2d=True, ensure_min_samples=1, input_name=name)
    except (ValueError, TypeError) as e:
        msg = str(e)
        if "Expected 2D array" in msg or "Expected a 2-dimensional" in msg:
            msg = (f"{name} must be a 2-d array of items x features, got shape {np.shape(X)}; "
                   "reshape one item with X.reshape(1, -1)")
        elif name not in msg:
            msg = f"{name}: {msg}"
        raise type(e)(msg) from None
    if out.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got dtype {out.dtype}")
    if sp.issparse(out) and not np.all(np.isfinite(out.data)):  # check_array does check; belt and braces
        raise ValueError(f"{name} contains NaN or infinity")
    if n_features is not None and out.shape[1] != n_features:
        raise ValueError(f"{name} has {out.shape[1]} features, but the estimator was fitted on {n_features} "
                         "features: pass items with the same columns as the validation set")
    return out


def check_labels(y, n_classes: int, name: str = "y", n_items: int | None = None) -> np.ndarray:
    """Class codes as an int64 ndarray (m,), each in ``0..n_classes-1``.

    Integral floats (0.0, 1.0, as read from a CSV) are codes; other floats, strings and objects are a
    TypeError (encode labels first, e.g. with ``sklearn.preprocessing.LabelEncoder``). ``n_items``: the
    required length. A pandas Series is read by position.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of class indices, got shape {y.shape}")
    if n_items is not None and y.shape[0] != n_items:
        raise ValueError(f"{name} must have one label per item: expected shape ({n_items},), got {y.shape}")
    if y.size and not np.issubdtype(y.dtype, np.integer):
        if y.dtype.kind == "b":
            y = y.astype(np.int64)
        elif not (np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) and np.all(np.mod(y, 1) == 0)):
            raise TypeError(f"{name} must hold integer class indices 0..n_classes-1, got dtype {y.dtype}; "
                            "encode labels first (e.g. sklearn.preprocessing.LabelEncoder)")
    # the range is checked before the cast to int64, which would wrap a label beyond its range (1e20, 2**63)
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        bad = np.unique(y[(y < 0) | (y >= n_classes)])
        raise ValueError(f"{name} has labels {[int(b) for b in bad]} outside the codeframe 0..{n_classes - 1}; "
                         "pass the right n_classes or re-encode the labels")
    return y.astype(np.int64, copy=False)


def check_every_class(y, n_classes: int, name: str = "y_val") -> None:
    """ValueError if a class of ``0..n_classes-1`` has no item in the codes ``y`` (every CAP method needs V to
    contain every class: the class-conditional rates of an absent class are unknown)."""
    counts = np.bincount(np.asarray(y, dtype=np.int64), minlength=n_classes)
    if np.any(counts == 0):
        raise ValueError(f"{name} has no items of class(es) {np.flatnonzero(counts == 0).tolist()}: CAP methods need "
                         "every class of the classifier in the validation set (their rates cannot be estimated "
                         "otherwise); collect validation items of every class")


def check_class_evidence(y, n_classes: int, minimum: int, who: str, why: str, name: str = "y_val",
                         hard: bool = False) -> np.ndarray:
    """Check that every class has at least ``minimum`` items in the codes ``y`` (a method's declared minimum
    validation evidence); return the per-class counts, int (n_classes,).

    Below the minimum: ValueError when ``hard`` (the method cannot run at all), otherwise an
    :class:`InsufficientEvidenceWarning` (the method runs, its estimate is unreliable). Either message names
    ``who`` (the method), the classes and their counts, the minimum and ``why`` it is needed.
    """
    counts = np.bincount(np.asarray(y, dtype=np.int64), minlength=n_classes)
    low = np.flatnonzero(counts < minimum)
    if low.size:
        msg = (f"{name} has {', '.join(f'{counts[c]} item(s) of class {c}' for c in low)}: {who} needs at least "
               f"{minimum} validation items of every class ({why}); collect more validation items of "
               f"class(es) {low.tolist()}")
        if hard:
            raise ValueError(msg)
        warnings.warn(msg + "; its estimate is unreliable until then", InsufficientEvidenceWarning, stacklevel=3)
    return counts


def check_classifier(classifier, need_proba: bool = False) -> int:
    """Check h is a fitted classifier over the classes ``0..n-1`` (ints, or integral floats); return n.

    Raises TypeError (no ``predict``; no ``predict_proba`` when ``need_proba``) or ValueError (not
    fitted, classes not ``0..n-1``).
    """
    if not hasattr(classifier, "predict"):
        raise TypeError(f"classifier must be a fitted scikit-learn classifier with predict(), "
                        f"got {type(classifier).__name__}")
    try:
        check_is_fitted(classifier)
    except NotFittedError as e:
        raise ValueError("classifier must already be trained (CAP methods never fit it): call "
                         "classifier.fit(X_L, y_L) first") from e
    except (TypeError, AttributeError) as e:  # AttributeError: scikit-learn reads the tags of its own estimators
        raise TypeError(f"classifier must be a scikit-learn estimator, got {type(classifier).__name__}") from e
    classes = np.asarray(getattr(classifier, "classes_", []))
    n = classes.size
    ok = n >= 2 and classes.dtype.kind in "iuf" and np.array_equal(classes, np.arange(n))
    if not ok:
        raise ValueError(f"classifier.classes_ must be 0..n-1 with n >= 2, got {classes.tolist()}; "
                         "encode the labels (e.g. with capshift.datasets.load) before training")
    if need_proba and not hasattr(classifier, "predict_proba"):
        raise TypeError(f"this method needs posterior probabilities, but {type(classifier).__name__} has no "
                        "predict_proba (for an SVC, wrap it: CalibratedClassifierCV(SVC(), ensemble=False))")
    return n


def predict_codes(classifier, X) -> np.ndarray:
    """h's decisions on ``X`` as int64 class codes (m,) (a classifier trained on 0.0/1.0 predicts floats)."""
    pred = np.asarray(classifier.predict(X))
    return pred if pred.dtype == np.int64 else pred.astype(np.int64)


def check_distribution(p, name: str = "prevalence", n_classes: int | None = None, atol: float = ATOL,
                       min_classes: int = 2) -> np.ndarray:
    """Validate probability vector(s) of shape ``(..., n)``: finite, >= 0, summing to 1 along the last axis.

    Entries in ``[-atol, 0)`` (solver round-off) are clipped to 0. ``n_classes``: required length of the last
    axis. Returns float64. TypeError for non-numeric input; ValueError naming ``name`` otherwise.
    """
    if isinstance(p, (str, bytes)):
        raise TypeError(f"{name} must be an array of probabilities (floats), got a string {p!r}")
    if np.iscomplexobj(p):  # numpy would drop the imaginary parts with a mere warning
        raise TypeError(f"{name} must be an array of probabilities (floats), got complex values")
    try:
        arr = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be an array of probabilities (floats), got {type(p).__name__}") from e
    if arr.ndim < 1 or arr.shape[-1] < min_classes:
        raise ValueError(f"{name} must have shape (..., n) with n >= {min_classes} classes, got shape {arr.shape}")
    if n_classes is not None and arr.shape[-1] != n_classes:
        raise ValueError(f"{name} must have shape (..., {n_classes}) (one entry per class), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values; probabilities are finite fractions")
    if np.any(arr < -atol):
        raise ValueError(f"{name} has negative values (min {arr.min():.3g}); probabilities must be >= 0")
    sums = arr.sum(axis=-1)
    if np.any(np.abs(sums - 1.0) > atol):
        bad = sums[np.abs(sums - 1.0) > atol]
        raise ValueError(f"{name} must be a probability distribution, i.e. sum to 1 along the last axis (within "
                         f"{atol:g}); found sums such as "
                         f"{float(bad.flat[0]):.6g}; divide counts by their total (probabilities, not scores or logits)")
    return np.where(arr < 0, 0.0, arr)


def check_posteriors(P, n_classes: int | None = None, name: str = "posteriors", atol: float = ATOL) -> np.ndarray:
    """Validate a posterior matrix: float (m, n), m >= 1, finite, in [0, 1], rows summing to 1 (within ``atol``).

    ``n_classes``: required number of columns (None: any). Returns a float ndarray (m, n) with round-off
    below 0 clipped. Raises TypeError for non-numeric input and ValueError naming ``name`` (wrong shape,
    NaN, negative entries, rows not summing to 1: pass ``classifier.predict_proba(X)``, not scores or logits).
    """
    P = check_distribution(P, name, n_classes=n_classes, atol=atol)
    if P.ndim != 2 or P.shape[0] < 1:
        want = "(m, n)" if n_classes is None else f"(m, {n_classes})"
        raise ValueError(f"{name} must be a non-empty 2-d array of shape {want} (pass classifier.predict_proba(X)), "
                         f"got shape {P.shape}")
    return np.clip(P, 0.0, 1.0)


def check_fitted(estimator, attributes) -> None:
    """scikit-learn's ``check_is_fitted``: ``NotFittedError`` (a ValueError) naming the class before ``fit``."""
    msg = f"This {type(estimator).__name__} instance is not fitted yet: call fit(X_val, y_val) first"
    if not hasattr(estimator, "__sklearn_tags__"):  # capshift's own helpers (Quantifier) are not sklearn estimators
        attrs = [attributes] if isinstance(attributes, str) else list(attributes)
        if not all(hasattr(estimator, a) for a in attrs):
            raise NotFittedError(msg)
        return
    check_is_fitted(estimator, attributes, msg=msg)

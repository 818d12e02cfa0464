"""Dataset-shift protocols beyond prior probability shift: the taxonomy and four protocol families.

Source: P. González, A. Moreo, F. Sebastiani, "Binary quantification and dataset shift: an experimental
investigation", Data Mining and Knowledge Discovery 38(4), 2024 (the *dataset-shift paper*). Holds

- :func:`taxonomy`: its Table 2 (which of P(X), P(Y), P(X|Y), P(Y|X) change under each shift type);
- :func:`binarise`: its ``binarise_dataset`` (Sect. 5.1): an ordinal label cut at a point;
- four protocol families, one per algorithm of its Sect. 5, each usable on any labelled dataset:
  :class:`PriorShift` (Algorithm 1, binary as in the paper and multiclass beyond it),
  :class:`GlobalCovariateShift` (Algorithm 2, pure and mixed), :class:`LocalCovariateShift`
  (Algorithm 3) and :class:`ConceptShift` (Algorithm 4);
- :class:`ShiftSamples`, the test samples of one training condition, and :class:`Trial`;
- :func:`gaussian_shift_data`: synthetic two-dimensional Gaussian mixtures with an ordinal label and a
  group attribute, on which every family produces its shift (the paper's Figures 1-5; the tests).

How a protocol is used. A family first splits the dataset once into a training pool and a test pool
(stratified by label and group, ``train_prop`` = 0.6 as the authors' code). It then generates *trials*:
for each repetition and each training condition (a training prevalence p_L, a group proportion α_L, a
cut point c_L) one training sample L drawn from the training pool, and a :class:`ShiftSamples` protocol of
test samples drawn from the test pool at every test condition, ``n_samples`` per condition::

    proto = PriorShift(X, y, train_size=1000, test_size=100, n_samples=5, repeats=1, random_state=0)
    for trial in proto.trials():
        q = quapy.method.aggregative.PACC(LogisticRegression()).fit(*trial.train.Xy)
        report = quapy.evaluation.evaluation_report(q, trial.test, error_metrics=["ae"])
        trial.test.parameters            # one row per sample: p_L, p_U, degree, size, ...

:class:`ShiftSamples` is a QuaPy ``OnLabelledCollectionProtocol`` (so QuaPy's ``evaluate`` /
``evaluation_report`` accept it, including its pre-classification speed-up), and every family is itself
a QuaPy ``AbstractStochasticSeededProtocol`` whose call yields the test samples of all trials in order
(``family.parameters`` describes them row by row). Samples are drawn **with replacement** by default, as
in the paper; with ``replace=False`` a request the pool cannot supply raises a ValueError naming the
argument. Counts are rounded deterministically (``round``; the remainder goes to the other class or
group), so a sample's prevalence and group proportion are the requested ones up to that rounding, and
``parameters`` reports the realised values. Every random choice comes from ``numpy.random.Generator``
streams seeded by ``(random_state, trial number)``: the same arguments give the same samples.

Paper values (full scale): training samples of 5,000, test samples of 500, 50 test samples per
condition and training condition, 10 repetitions; these are the defaults. Degrees of shift as the
paper: PPS ``p_U - p_L`` rounded to 1 decimal (Table 4's rows; its Sect. 5.3.1 text writes the
opposite sign, its caption and Figure 6 this one), global covariate ``α_L - α_U``, local covariate
``p_U - p_L`` rounded to 2 decimals, concept ``c_L - c_U``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd
from quapy.data import LabelledCollection
from quapy.protocol import AbstractStochasticSeededProtocol, OnLabelledCollectionProtocol
from sklearn.model_selection import train_test_split

from .validation import MAX_SEED, check_finite_array, check_fraction, check_int, check_labels, check_seed, check_X

__all__ = ["taxonomy", "binarise", "cut_points", "ShiftSamples", "Trial", "PriorShift", "GlobalCovariateShift",
           "LocalCovariateShift", "ConceptShift", "PROTOCOLS", "dirichlet_prevalences", "gaussian_shift_data",
           "PAPER_TRAIN_PREVALENCES", "PAPER_TEST_PREVALENCES"]

#: Algorithm 1's training prevalences (0 and 1 replaced by 0.02 and 0.98: a classifier needs both classes).
PAPER_TRAIN_PREVALENCES = (0.02, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.98)
#: Algorithm 1's test prevalences, 0 to 1 in steps of 0.1.
PAPER_TEST_PREVALENCES = tuple(np.round(np.linspace(0, 1, 11), 2))
_ALPHAS = tuple(np.round(np.linspace(0, 1, 11), 2))  # Algorithm 2's group proportions
_LOCAL_PREVALENCES = tuple(np.round(np.arange(0.25, 0.7501, 0.05), 2))  # Algorithm 3's p_U grid


# ---------------------------------------------------------------------------------------------------------
# Taxonomy and binarisation
# ---------------------------------------------------------------------------------------------------------
_TABLE2 = [  # shift, P(X), P(Y), P(X|Y), P(Y|X), definition, experiments; "≠" changes, "=" invariant
    ("prior probability shift", "≠", "≠", "=", "≠", "§4.1", "§5.3", "PriorShift"),
    ("global pure covariate shift", "≠", "=", "≠", "=", "§4.2.1", "§5.4", "GlobalCovariateShift(kind='pure')"),
    ("global mixed covariate shift", "≠", "≠", "≠", "=", "§4.2.1", "§5.4", "GlobalCovariateShift(kind='mixed')"),
    ("local covariate shift", "≠", "≠", "≠", "=*", "§4.2.2", "§5.5", "LocalCovariateShift"),
    ("concept shift", "=", "≠", "≠", "≠", "§4.3", "§5.6", "ConceptShift"),
]


def taxonomy() -> pd.DataFrame:
    """Table 2 of the dataset-shift paper: for each shift type, whether P(X), P(Y), P(X|Y), P(Y|X) change
    ("≠") or stay ("=") between training and test data ("=*": may be compromised by an extreme change of
    P(Y)), the sections defining and testing it, and the capshift protocol that generates it.

    Returns a DataFrame indexed by shift type with columns ``P(X)``, ``P(Y)``, ``P(X|Y)``, ``P(Y|X)``,
    ``definition``, ``experiments``, ``protocol``. The paper's Table 1 (the consensus, blanks where the
    literature is silent) is Table 2 without its greyed-out assumptions: P(X) and P(Y|X) for PPS, P(Y)
    and P(X|Y) for covariate shift, P(X) and P(Y) for concept shift.
    """
    cols = ["shift", "P(X)", "P(Y)", "P(X|Y)", "P(Y|X)", "definition", "experiments", "protocol"]
    return pd.DataFrame(_TABLE2, columns=cols).set_index("shift")


def _ordinal(labels, name: str) -> np.ndarray:
    """An ordinal label as an int64 array; TypeError/ValueError if it is not integer-valued."""
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array of ordinal levels, got shape {arr.shape}")
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold numeric ordinal levels (e.g. 1..5 stars), got dtype {arr.dtype}; a "
                        "nominal label has no order to cut: encode ordered levels as integers first")
    if arr.dtype.kind == "f" and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))):
        raise ValueError(f"{name} must hold integer-valued ordinal levels, got non-integer values such as "
                         f"{arr[np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))[0]]}; bin a "
                         "continuous response into levels first")
    return arr.astype(np.int64)


def binarise(labels, cut_point: float) -> tuple[np.ndarray, np.ndarray]:
    """The paper's ``binarise_dataset`` (Sect. 5.1): level i > c is positive (1), i < c negative (0), and
    items with i == c are removed (an integer cut drops its own level; a half-integer keeps every item).

    ``labels``: int array (m,) of ordinal levels; ``cut_point``: a real strictly between the smallest and
    the largest level. Returns ``(keep, y)``: bool mask (m,) of the items kept and int64 array
    (keep.sum(),) of their binary labels. Raises TypeError for a non-numeric label or cut point, ValueError
    for a non-integer label or a cut point outside (min level, max level).
    """
    levels = _ordinal(labels, "labels")
    if isinstance(cut_point, bool) or not isinstance(cut_point, Real) or not math.isfinite(cut_point):
        raise TypeError(f"cut_point must be a finite real number, got {cut_point!r}")
    lo, hi = levels.min(), levels.max()
    if not lo < cut_point < hi:
        raise ValueError(f"cut_point must lie strictly between the smallest and largest level ({lo} and {hi}), "
                         f"got {cut_point}; otherwise one class would be empty")
    keep = levels != cut_point
    return keep, (levels[keep] > cut_point).astype(np.int64)


def cut_points(labels) -> tuple[float, ...]:
    """The half-integer cut points between consecutive observed levels of an ordinal label (for 1..5 stars:
    1.5, 2.5, 3.5, 4.5, Algorithm 4's grid). Raises as :func:`binarise`."""
    lv = np.unique(_ordinal(labels, "labels"))
    if lv.size < 2:
        raise ValueError(f"labels must have at least 2 levels to be cut, got {lv.tolist()}")
    return tuple(float(a + b) / 2 for a, b in zip(lv[:-1], lv[1:]))


# ---------------------------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------------------------
def _grid(values, name: str, low: float | None = 0.0, high: float | None = 1.0) -> np.ndarray:
    """A non-empty 1-d grid of finite reals in [low, high]; ValueError/TypeError name the argument."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of numbers, got a string")
    arr = check_finite_array(np.atleast_1d(values), name, ndim=1, low=low, high=high)
    if arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence of numbers, got {values!r}")
    return arr


def _features(X, name: str = "X"):
    """Items x features, finite and numeric (DataFrames read by position, sparse kept): the validation layer's."""
    return check_X(X, name)


def _binary_labels(y, m: int, name: str = "y") -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (m,):
        raise ValueError(f"{name} must have shape ({m},) (one label per row of X), got {y.shape}")
    vals = np.unique(y)
    if not np.array_equal(vals, [0, 1]):
        raise ValueError(f"{name} must be binary with both classes present, coded 0 (negative) and 1 (positive), "
                         f"got values {vals.tolist()[:10]}; binarise an ordinal label with capshift.shift.binarise")
    return y.astype(np.int64)


def _groups(groups, m: int, group_a, name: str = "groups") -> np.ndarray:
    """Group attribute -> int array with 1 for group A, 0 for group B."""
    g = np.asarray(groups)
    if g.shape != (m,):
        raise ValueError(f"{name} must have shape ({m},) (one value per row of X), got {g.shape}")
    vals = np.unique(g)
    if vals.size != 2:
        raise ValueError(f"{name} must take exactly 2 values (groups A and B), got {vals.size}: "
                         f"{vals.tolist()[:10]}; a group attribute with one value cannot shift")
    a = vals[0] if group_a is None else group_a
    if a not in vals:
        raise ValueError(f"group_a={group_a!r} is not a value of {name} ({vals.tolist()})")
    return (g == a).astype(np.int64)


def _counts(size: int, shares) -> np.ndarray:
    """Split ``size`` items by ``shares`` (summing to 1): round every share but the last, the last takes the
    rest (the deterministic rounding the docstrings promise)."""
    shares = np.asarray(shares, dtype=float)
    c = np.round(size * shares[:-1]).astype(np.int64)
    c = np.minimum(c, size - np.concatenate([[0], np.cumsum(c)[:-1]]))
    return np.append(c, size - c.sum())


def _draw(rng: np.random.Generator, cells: list[np.ndarray], counts, replace: bool, what: str, arg: str,
          cell_names: list[str]) -> np.ndarray:
    """Indices: counts[k] items of cells[k] (with or without replacement), shuffled together."""
    out = []
    for cell, k, cname in zip(cells, counts, cell_names):
        if k == 0:
            continue
        if len(cell) == 0 or (not replace and k > len(cell)):
            fix = ("lower the sample size or drop this grid value" if len(cell) == 0 else
                   "lower the sample size, drop this grid value, or set replace=True (the paper samples with "
                   "replacement)")
            raise ValueError(f"{arg}: {what} needs {k} items of {cname}, but the pool has {len(cell)}; {fix}")
        out.append(rng.choice(cell, size=k, replace=replace))
    idx = np.concatenate(out) if out else np.empty(0, dtype=np.int64)
    return rng.permutation(idx)


def _split_pools(strata: np.ndarray, train_prop: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The paper's split_stratified: training-pool and test-pool indices, stratified by ``strata``."""
    check_fraction(train_prop, "train_prop")
    _, counts = np.unique(strata, return_counts=True)
    if counts.min() < 2:
        raise ValueError("every (label, group) combination needs at least 2 items to be split into a training "
                         f"and a test pool; the smallest has {counts.min()}")
    idx = np.arange(len(strata))
    tr, te = train_test_split(idx, train_size=train_prop, stratify=strata, random_state=seed)
    return np.sort(tr), np.sort(te)


# ---------------------------------------------------------------------------------------------------------
# Test samples of one training condition, and a trial
# ---------------------------------------------------------------------------------------------------------
class ShiftSamples(OnLabelledCollectionProtocol):
    """The test samples of one trial: a QuaPy protocol over the test pool.

    Yields ``(X_sample, prevalence)`` (``return_type="sample_prev"``, QuaPy's default), a
    ``LabelledCollection`` (``"labelled_collection"``) or ``(indices, cut)`` (``"index"``). ``parameters``
    is a DataFrame with one row per sample, in yield order: the trial's training parameters, the test
    parameters, ``sample`` (its number within its test condition), ``sample_id`` (its position in the
    trial: ``(trial, sample_id)`` identifies it in the whole protocol), ``degree`` (the paper's degree of shift), ``size`` and the realised ``prevalence`` of the
    positive class (binary) or ``prevalence_<k>`` (multiclass). ``indices[k]`` are the sample's row indices
    into ``pool`` (the test pool, a ``LabelledCollection``), and :meth:`labels` its true labels (under the
    test concept for :class:`ConceptShift`). Built by the families; not meant to be built directly.
    """

    def __init__(self, pool: LabelledCollection, indices: list[np.ndarray], parameters: pd.DataFrame,
                 random_state: int, ordinal=None, cuts=None, sample_size: int | None = None,
                 return_type: str = "sample_prev"):
        super().__init__(random_state)
        self.data = pool
        self.indices = indices
        self.parameters = parameters.reset_index(drop=True)
        self.ordinal = ordinal  # the test pool's ordinal levels (concept shift), else None
        self.cuts = cuts  # per-sample cut point (concept shift), else None
        self.sample_size = sample_size
        self.collator = OnLabelledCollectionProtocol.get_collator(return_type)

    def samples_parameters(self):
        return [(idx, None if self.cuts is None else self.cuts[k]) for k, idx in enumerate(self.indices)]

    def labels(self, k: int) -> np.ndarray:
        """True labels (size,) of sample k."""
        idx = self.indices[k]
        if self.cuts is None:
            return np.asarray(self.data.labels)[idx]
        return (self.ordinal[idx] > self.cuts[k]).astype(np.int64)

    def sample(self, params):
        idx, cut = params
        if cut is None:
            return self.data.sampling_from_index(idx)
        return LabelledCollection(self.data.instances[idx], (self.ordinal[idx] > cut).astype(np.int64),
                                  classes=[0, 1])

    def total(self) -> int:
        return len(self.indices)

    def with_parameters(self):
        """Yield ``(sample, parameters)``: each sample as the protocol's call yields it, with its row of
        :attr:`parameters` as a dict (the shift parameters that generated it)."""
        for sample, (_, row) in zip(self(), self.parameters.iterrows()):
            yield sample, row.to_dict()


@dataclass
class Trial:
    """One training condition of one repetition: ``params`` (dict: ``repeat`` and the training parameters),
    ``train`` (the training sample, a QuaPy ``LabelledCollection``; ``train_index`` its row indices into the
    family's ``X``) and ``test`` (its :class:`ShiftSamples`)."""

    number: int
    params: dict
    train: LabelledCollection
    train_index: np.ndarray
    test: ShiftSamples


# ---------------------------------------------------------------------------------------------------------
# The families
# ---------------------------------------------------------------------------------------------------------
class _ShiftFamily(AbstractStochasticSeededProtocol):
    """Shared machinery: pools, trials, QuaPy interface. Subclasses define the conditions and the draws."""

    shift = ""  # the shift type, a row of taxonomy()

    def __init__(self, train_size, test_size, n_samples, repeats, train_prop, replace, random_state, return_type):
        super().__init__(check_seed(random_state, "random_state"))
        self.train_size = check_int(train_size, "train_size")
        self.test_size = check_int(test_size, "test_size")
        self.n_samples = check_int(n_samples, "n_samples")
        self.repeats = check_int(repeats, "repeats")
        self.train_prop = train_prop
        if not isinstance(replace, bool):
            raise TypeError(f"replace must be True or False, got {replace!r}")
        self.replace = replace
        if return_type not in OnLabelledCollectionProtocol.RETURN_TYPES:
            raise ValueError(f"return_type must be one of {OnLabelledCollectionProtocol.RETURN_TYPES}, "
                             f"got {return_type!r}")
        self.return_type = return_type
        self.collator = OnLabelledCollectionProtocol.get_collator(return_type)

    def _check_supply(self):
        """Without replacement, draw every condition of the first repetition once, so that a request the pools
        cannot supply fails when the protocol is built, not halfway through an experiment."""
        if not self.replace:
            for t in range(len(self._train_conditions())):
                self.trial(t)

    # -- to implement -------------------------------------------------------------------------------------
    def _train_conditions(self) -> list[dict]:
        raise NotImplementedError

    def _test_conditions(self, train: dict) -> list[dict]:
        raise NotImplementedError

    def _draw_train(self, rng, cond) -> np.ndarray:
        raise NotImplementedError

    def _draw_test(self, rng, train, cond) -> np.ndarray:
        raise NotImplementedError

    def _sample_row(self, train: dict, cond: dict) -> dict:
        """Degree, size and realised prevalence of a test sample (deterministic given the conditions)."""
        raise NotImplementedError

    def _train_labels(self, train: dict, idx: np.ndarray) -> np.ndarray:
        return self.y_[idx]

    def _cuts(self, conds) -> list | None:
        return None

    # -- public -------------------------------------------------------------------------------------------
    @property
    def n_trials(self) -> int:
        return self.repeats * len(self._train_conditions())

    def trial(self, number: int) -> Trial:
        """Trial ``number`` (0 .. n_trials-1: repetition-major, then training conditions in grid order)."""
        if isinstance(number, bool) or not isinstance(number, Integral) or not 0 <= number < self.n_trials:
            raise ValueError(f"number must be an int in [0, {self.n_trials - 1}], got {number!r}")
        conds = self._train_conditions()
        rep, c = divmod(int(number), len(conds))
        train = {"repeat": rep, **conds[c]}
        rng = np.random.default_rng([self.random_state, int(number)])
        tr_idx = self.train_pool_[self._draw_train(rng, train)]
        train_lc = LabelledCollection(self.X_[tr_idx], self._train_labels(train, tr_idx), classes=self.classes_)
        tests = [t for t in self._test_conditions(train) for _ in range(self.n_samples)]
        indices = [self._draw_test(rng, train, t) for t in tests]
        params = pd.DataFrame([{"trial": int(number), **train, **t, "sample": k % self.n_samples,
                                "sample_id": k, **self._sample_row(train, t)} for k, t in enumerate(tests)])
        if getattr(self, "_pool", None) is None:
            self._pool = LabelledCollection(self.X_[self.test_pool_], self.y_[self.test_pool_], classes=self.classes_)
        pool = self._pool
        ordinal = None if getattr(self, "levels_", None) is None else self.levels_[self.test_pool_]
        return Trial(int(number), train, train_lc, tr_idx,
                     ShiftSamples(pool, indices, params, self.random_state, ordinal, self._cuts(tests),
                                  self.test_size, self.return_type))

    def trials(self):
        """Iterate over all trials (a generator: each trial's samples are drawn when it is reached)."""
        for t in range(self.n_trials):
            yield self.trial(t)

    @property
    def parameters(self) -> pd.DataFrame:
        """One row per test sample of every trial, in the order the protocol yields them (computed
        without drawing: the realised sizes and prevalences are fixed by the rounding of counts)."""
        conds = self._train_conditions()
        rows = []
        for t in range(self.n_trials):
            rep, c = divmod(t, len(conds))
            train = {"repeat": rep, **conds[c]}
            first = len(rows)
            for cond in self._test_conditions(train):
                rows += [{"trial": t, **train, **cond, "sample": s, "sample_id": len(rows) - first + s,
                          **self._sample_row(train, cond)} for s in range(self.n_samples)]
        return pd.DataFrame(rows)

    # -- QuaPy's AbstractStochasticSeededProtocol ---------------------------------------------------------
    def samples_parameters(self):
        return [(t, k) for t in range(self.n_trials) for k in range(self._n_tests_per_trial(t))]

    def _n_tests_per_trial(self, t):
        conds = self._train_conditions()
        rep, c = divmod(t, len(conds))
        return len(self._test_conditions({"repeat": rep, **conds[c]})) * self.n_samples

    def sample(self, params):
        t, k = params
        if getattr(self, "_cache", (None,))[0] != t:
            self._cache = (t, self.trial(t).test)
        test = self._cache[1]
        return test.sample(test.samples_parameters()[k])

    def __call__(self):
        for trial in self.trials():  # trial by trial: each is drawn once
            yield from trial.test()

    def with_parameters(self):
        """Yield ``(sample, parameters)`` for every test sample of every trial, in the order of the call; the
        parameters (a dict) are those of :attr:`parameters`' row for the sample."""
        for trial in self.trials():
            yield from trial.test.with_parameters()

    def total(self) -> int:
        return sum(self._n_tests_per_trial(t) for t in range(self.n_trials))

    def __repr__(self):
        return (f"{type(self).__name__}({self.n_trials} trials, {self.total()} test samples, train_size="
                f"{self.train_size}, test_size={self.test_size}, random_state={self.random_state})")


class PriorShift(_ShiftFamily):
    """Prior probability shift (PPS), Algorithm 1: P(Y) changes, P(X|Y) stays (every class is drawn from the
    same pool in training and test).

    Parameters
    ----------
    X : array-like (m, d)
        Features (dense or scipy sparse).
    y : int array (m,)
        Class labels 0..n-1, every class present (binary: 1 = positive). For an ordinal label, binarise it
        first (:func:`binarise`; the paper cuts 1-5 stars at 3).
    train_prevalences, test_prevalences : sequence of float or (k, n) array
        Grids of prevalences, always a sequence (a bare number is refused with TypeError: write ``[1.0]`` for
        the single prevalence 1, ``[0.0]`` for 0). Binary: grids of the positive prevalence in [0, 1], defaults
        :data:`PAPER_TRAIN_PREVALENCES` and :data:`PAPER_TEST_PREVALENCES`. Multiclass (beyond the paper, which
        leaves it to future work): (k, n) arrays of prevalence vectors (e.g.
        ``capshift.protocols.app_prevalences``). A training prevalence that leaves a class with no item raises
        ValueError.
    train_size, test_size, n_samples, repeats : int
        Items per training sample (paper 5,000) and test sample (500), test samples per test condition
        and training condition (50), repetitions (10).
    train_prop : float
        Fraction of the data in the training pool (0.6, as the authors' ``split_stratified``).
    replace : bool
        Draw with replacement within each class (True, the paper's sampling).
    random_state : int
        Seed of the pool split and of every draw.
    return_type : str
        What QuaPy's call yields: "sample_prev", "labelled_collection" or "index".
    n_train_draws, n_test_draws : int or None
        Instead of a grid: k seeded uniform draws on the simplex (:func:`dirichlet_prevalences`, any number of
        classes; the training ones keep every class at >= 0.02). Give either the grid or the number of draws,
        not both (ValueError).

    ``parameters`` columns: ``trial, repeat, p_L, p_U, sample, degree`` (``p_U - p_L`` rounded to 1
    decimal), ``size``, ``prevalence`` (realised positive prevalence). Multiclass: ``p_L``/``p_U`` are
    tuples, ``degree`` is the total-variation distance ½‖p_U − p_L‖₁ rounded to 2 decimals (PPS has no
    sign beyond two classes) and ``prevalence_<k>`` the realised vector.
    """

    shift = "prior probability shift"

    def __init__(self, X, y, train_prevalences=None, test_prevalences=None, train_size: int = 5000,
                 test_size: int = 500, n_samples: int = 50, repeats: int = 10, train_prop: float = 0.6,
                 replace: bool = True, random_state: int = 0, return_type: str = "sample_prev",
                 n_train_draws: int | None = None, n_test_draws: int | None = None):
        super().__init__(train_size, test_size, n_samples, repeats, train_prop, replace, random_state, return_type)
        self.X_ = _features(X)
        # class codes through the validation layer (integral floats such as 0.0/1.0 are codes), any number of classes
        y = check_labels(y, np.iinfo(np.int64).max, "y", n_items=self.X_.shape[0])
        n = int(y.max()) + 1
        if n < 2 or np.any(np.bincount(y, minlength=n) == 0):
            raise ValueError(f"y must contain every class 0..{n - 1} (at least 2 classes), got counts "
                             f"{np.bincount(y, minlength=n).tolist()}")
        self.y_, self.n_classes_, self.classes_ = y, n, np.arange(n)
        self.train_prevalences_ = self._prevalences(train_prevalences, n_train_draws, "train", True)
        self.test_prevalences_ = self._prevalences(test_prevalences, n_test_draws, "test", False)
        counts = np.array([_counts(self.train_size, p) for p in self.train_prevalences_])
        if np.any(counts == 0):
            k = np.argwhere(counts == 0)[0]
            raise ValueError(f"train_prevalences: {self.train_prevalences_[k[0]].round(4).tolist()} gives class "
                             f"{k[1]} no item in a training sample of {self.train_size}, and a classifier cannot "
                             "learn a missing class; use values >= 1/train_size (the paper uses 0.02 for 0)")
        self.train_pool_, self.test_pool_ = _split_pools(self.y_, train_prop, self.random_state)
        self._cells = {part: [pool[self.y_[pool] == c] for c in range(n)]
                       for part, pool in (("train", self.train_pool_), ("test", self.test_pool_))}
        self._cells["train"] = [np.searchsorted(self.train_pool_, c) for c in self._cells["train"]]
        self._cells["test"] = [np.searchsorted(self.test_pool_, c) for c in self._cells["test"]]
        self._check_supply()

    def _prevalences(self, value, draws, part, train):
        n, name, dname = self.n_classes_, f"{part}_prevalences", f"n_{part}_draws"
        if draws is not None:
            if value is not None:
                raise ValueError(f"give either {name} (a grid of prevalences) or {dname} (that many random draws on "
                                 f"the simplex), not both")
            return dirichlet_prevalences(n, check_int(draws, dname),
                                         seed=(self.random_state + (0 if train else 1)) % (MAX_SEED + 1),
                                         min_prevalence=0.02 if train else 0.0)
        if value is None:
            if n > 2:
                raise ValueError(f"{name} must be given for {n} classes: a (k, {n}) array of prevalence vectors, "
                                 f"or {dname}=k for k seeded uniform draws on the simplex")
            value = PAPER_TRAIN_PREVALENCES if train else PAPER_TEST_PREVALENCES
        if not isinstance(value, (str, bytes)) and np.ndim(value) == 0:  # 1 or 1.0: a prevalence or a count?
            one = f"[{value!r}]" if n == 2 else f"[[...{n} values...]]"
            raise TypeError(f"{name} must be a sequence of prevalences (a grid), got the bare number {value!r}, which "
                            f"could mean a prevalence or a number of draws: write {name}={one} for that prevalence, "
                            f"or {dname}={value!r} for that many random draws on the simplex")
        arr = np.asarray(value, dtype=float) if not isinstance(value, str) else None
        if arr is None:
            raise TypeError(f"{name} must be numbers, got a string")
        if n == 2 and arr.ndim <= 1:
            p = _grid(arr, name)
            return np.stack([1 - p, p], axis=1)
        if arr.ndim != 2 or arr.shape[1] != n or arr.shape[0] == 0:
            raise ValueError(f"{name} must be a (k, {n}) array of prevalence vectors, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0) or not np.allclose(arr.sum(1), 1, atol=1e-6):
            raise ValueError(f"{name} rows must be prevalence vectors (values in [0, 1] summing to 1)")
        return arr

    def _train_conditions(self):
        return [{"p_L": self._label(p)} for p in self.train_prevalences_]

    def _test_conditions(self, train):
        return [{"p_U": self._label(p)} for p in self.test_prevalences_]

    def _label(self, p):
        return round(float(p[1]), 6) if self.n_classes_ == 2 else tuple(np.round(p, 6).tolist())

    def _vec(self, label):
        return np.array([1 - label, label]) if self.n_classes_ == 2 else np.asarray(label)

    def _draw_train(self, rng, cond):
        p = self._vec(cond["p_L"])
        return _draw(rng, self._cells["train"], _counts(self.train_size, p), self.replace,
                     f"p_L={cond['p_L']}", "train_prevalences", [f"class {c}" for c in range(self.n_classes_)])

    def _draw_test(self, rng, train, cond):
        p = self._vec(cond["p_U"])
        return _draw(rng, self._cells["test"], _counts(self.test_size, p), self.replace,
                     f"p_U={cond['p_U']}", "test_prevalences", [f"class {c}" for c in range(self.n_classes_)])

    def _sample_row(self, train, cond):
        pl, pu = self._vec(train["p_L"]), self._vec(cond["p_U"])
        real = _counts(self.test_size, pu) / self.test_size
        if self.n_classes_ == 2:
            return {"degree": round(float(pu[1] - pl[1]), 1) + 0.0, "size": self.test_size, "prevalence": real[1]}
        return {"degree": round(0.5 * float(np.abs(pu - pl).sum()), 2) + 0.0, "size": self.test_size,
                **{f"prevalence_{k}": v for k, v in enumerate(real)}}


class _GroupedFamily(_ShiftFamily):
    """Families on a binary label and a two-valued group attribute (groups A and B)."""

    def _setup(self, X, y, groups, group_a):
        self.X_ = _features(X)
        m = self.X_.shape[0]
        self.y_ = _binary_labels(y, m)
        self.group_ = _groups(groups, m, group_a)  # 1 = group A
        self.n_classes_, self.classes_ = 2, np.array([0, 1])
        self.train_pool_, self.test_pool_ = _split_pools(2 * self.group_ + self.y_, self.train_prop,
                                                         self.random_state)
        # cells[(part)][(group, class)] -> positions within that pool; group 1 = A
        self._cells = {}
        for part, pool in (("train", self.train_pool_), ("test", self.test_pool_)):
            self._cells[part] = {(g, c): np.flatnonzero((self.group_[pool] == g) & (self.y_[pool] == c))
                                 for g in (1, 0) for c in (0, 1)}

    def _grouped_draw(self, rng, part, n_a_neg, n_a_pos, n_b_neg, n_b_pos, what, arg):
        cells = self._cells[part]
        keys = [(1, 0), (1, 1), (0, 0), (0, 1)]
        names = ["negatives of group A", "positives of group A", "negatives of group B", "positives of group B"]
        return _draw(rng, [cells[k] for k in keys], [n_a_neg, n_a_pos, n_b_neg, n_b_pos], self.replace, what,
                     arg, names)


def _group_counts(size: int, alpha: float, p: float) -> tuple[int, int, int, int]:
    """Algorithm 2's counts: |A| = ceil(α N), |B| = floor((1-α) N); positives round(p |group|) in each."""
    n_a = min(size, math.ceil(round(alpha * size, 9)))
    n_b = size - n_a
    pa, pb = int(round(p * n_a)), int(round(p * n_b))
    return n_a - pa, pa, n_b - pb, pb


class GlobalCovariateShift(_GroupedFamily):
    """Global covariate shift, Algorithm 2: the proportion α of group A changes between training and test,
    with the positive prevalence p fixed within each group. ``kind="pure"`` keeps P(Y) (p_U = p_L: only
    P(X) and P(X|Y) change), ``"mixed"`` changes it too (p_U ≠ p_L), ``"all"`` (default) is the paper's
    full grid of both.

    Parameters
    ----------
    X, y : features (m, d) and binary labels (m,), 1 = positive (binarise an ordinal label first).
    groups : array (m,) with exactly two values; ``group_a`` names group A (default: the smaller value).
        The paper's groups are the review categories (A = Books, B = Electronics).
    train_prevalences, test_prevalences : sequence of float
        p_L and p_U grids (paper: 0.25, 0.5, 0.75 both).
    train_alphas, test_alphas : sequence of float in [0, 1]
        α_L and α_U grids (paper: 0, 0.1, ..., 1 both).
    Other parameters as :class:`PriorShift`.

    ``parameters`` columns: ``trial, repeat, p_L, alpha_L, p_U, alpha_U, pure, sample, degree``
    (α_L − α_U), ``size``, ``prevalence``, ``alpha`` (realised share of group A).
    """

    shift = "global covariate shift"

    def __init__(self, X, y, groups, train_prevalences=(0.25, 0.5, 0.75), test_prevalences=(0.25, 0.5, 0.75),
                 train_alphas=_ALPHAS, test_alphas=_ALPHAS, kind: str = "all", group_a=None,
                 train_size: int = 5000, test_size: int = 500, n_samples: int = 50, repeats: int = 10,
                 train_prop: float = 0.6, replace: bool = True, random_state: int = 0,
                 return_type: str = "sample_prev"):
        super().__init__(train_size, test_size, n_samples, repeats, train_prop, replace, random_state, return_type)
        if kind not in ("all", "pure", "mixed"):
            raise ValueError(f"kind must be 'all', 'pure' or 'mixed', got {kind!r}")
        self.kind = kind
        self.train_prevalences_ = _grid(train_prevalences, "train_prevalences")
        self.test_prevalences_ = _grid(test_prevalences, "test_prevalences")
        self.train_alphas_ = _grid(train_alphas, "train_alphas")
        self.test_alphas_ = _grid(test_alphas, "test_alphas")
        if kind == "pure" and not set(self.train_prevalences_) & set(self.test_prevalences_):
            raise ValueError("kind='pure' needs a p_U equal to some p_L: train_prevalences and test_prevalences "
                             "share no value")
        for p in self.train_prevalences_:
            for a in self.train_alphas_:
                an, ap, bn, bp = _group_counts(self.train_size, a, p)
                if ap + bp == 0 or an + bn == 0:
                    raise ValueError(f"train_prevalences: p_L={p} (alpha_L={a}) leaves a class with no item in a "
                                     f"training sample of {self.train_size}; a classifier cannot learn a missing class")
        self._setup(X, y, groups, group_a)
        self._check_supply()

    def _train_conditions(self):
        return [{"p_L": float(p), "alpha_L": float(a)} for p in self.train_prevalences_ for a in self.train_alphas_]

    def _test_conditions(self, train):
        out = []
        for p in self.test_prevalences_:
            pure = bool(np.isclose(p, train["p_L"]))
            if self.kind == "all" or (self.kind == "pure") == pure:
                out += [{"p_U": float(p), "alpha_U": float(a), "pure": pure} for a in self.test_alphas_]
        return out

    def _draw_train(self, rng, cond):
        return self._grouped_draw(rng, "train", *_group_counts(self.train_size, cond["alpha_L"], cond["p_L"]),
                                  f"p_L={cond['p_L']}, alpha_L={cond['alpha_L']}", "train_alphas")

    def _draw_test(self, rng, train, cond):
        return self._grouped_draw(rng, "test", *_group_counts(self.test_size, cond["alpha_U"], cond["p_U"]),
                                  f"p_U={cond['p_U']}, alpha_U={cond['alpha_U']}", "test_alphas")

    def _sample_row(self, train, cond):
        an, ap, bn, bp = _group_counts(self.test_size, cond["alpha_U"], cond["p_U"])
        return {"degree": round(train["alpha_L"] - cond["alpha_U"], 1) + 0.0, "size": self.test_size,
                "prevalence": (ap + bp) / self.test_size, "alpha": (an + ap) / self.test_size}


class LocalCovariateShift(_GroupedFamily):
    """Local covariate shift, Algorithm 3: only the positives of group A change in number, so P(X|Y=1)
    changes while P(X|Y=0) stays.

    Training samples (``train_size`` N): half from each group, 2/3 of group A's half positive and 1/3 of
    group B's, so p_L = 1/2. A test sample keeps the other three cells at their nominal ``test_size`` (N')
    shares -- N'/6 negatives of A, N'/3 negatives of B, N'/6 positives of B -- and takes as many positives
    of A as make the prevalence p_U: POS = (p_U (N'/6 + N'/2) - N'/6) / (1 - p_U). Sizes thus vary with
    p_U (N'·2/3 at 0.25, N' at 0.5, 2N' at 0.75), reported per sample in ``parameters["size"]``. (Line 16
    of Algorithm 3 prints the constant as 200/3 for N' = 500; it is N'/6 = 250/3, the value for which
    p_U = 0.5 gives the training proportions at size 500, as the text says and the authors' code has.)

    ``change_conditionals=False`` gives the paper's control (Figure 11's blue boxes): samples of the same
    sizes and prevalences, drawn with the training proportions of A and B within each class, i.e. PPS.

    Parameters
    ----------
    test_prevalences : sequence of float
        p_U grid, within [0.25, 1) (paper: 0.25, 0.30, ..., 0.75); values below 0.25 cannot be reached by
        changing only the positives of A and raise ValueError.
    Other parameters as :class:`GlobalCovariateShift`.

    ``parameters`` columns: ``trial, repeat, p_L, p_U, sample, degree`` (p_U − p_L, 2 decimals),
    ``size``, ``prevalence``, ``change_conditionals``.
    """

    shift = "local covariate shift"

    def __init__(self, X, y, groups, test_prevalences=_LOCAL_PREVALENCES, change_conditionals: bool = True,
                 group_a=None, train_size: int = 5000, test_size: int = 500, n_samples: int = 50,
                 repeats: int = 10, train_prop: float = 0.6, replace: bool = True, random_state: int = 0,
                 return_type: str = "sample_prev"):
        super().__init__(train_size, test_size, n_samples, repeats, train_prop, replace, random_state, return_type)
        if round(self.test_size / 6) + round(self.test_size / 3) + round(self.test_size / 6) == 0:
            raise ValueError(f"test_size must be at least 2 for local covariate shift: at {self.test_size}, a test "
                             "sample's nominal cells N'/6, N'/3 and N'/6 all round to 0 items, and so would the sample")
        self.test_prevalences_ = _grid(test_prevalences, "test_prevalences")
        low = self.test_prevalences_[(self.test_prevalences_ < 0.25 - 1e-9) | (self.test_prevalences_ >= 1)]
        if low.size:
            raise ValueError(f"test_prevalences must lie in [0.25, 1): changing only the positives of group A "
                             f"cannot reach p_U={low[0]} from the training proportions")
        if not isinstance(change_conditionals, bool):
            raise TypeError(f"change_conditionals must be True or False, got {change_conditionals!r}")
        self.change_conditionals = change_conditionals
        self._setup(X, y, groups, group_a)
        self._check_supply()

    def _test_counts(self, p):
        n = self.test_size
        a_neg, b_neg, b_pos = round(n / 6), round(n / 3), round(n / 6)
        a_pos = max(0, int(round((p * (a_neg + b_neg + b_pos) - b_pos) / (1 - p))))
        if self.change_conditionals:
            return a_neg, a_pos, b_neg, b_pos
        size = a_neg + a_pos + b_neg + b_pos
        pos = int(round(p * size))
        a_pos = int(round(pos * 2 / 3))
        a_neg = int(round((size - pos) / 3))
        return a_neg, a_pos, size - pos - a_neg, pos - a_pos

    def _train_conditions(self):
        return [{"p_L": 0.5}]

    def _test_conditions(self, train):
        return [{"p_U": float(p)} for p in self.test_prevalences_]

    def _draw_train(self, rng, cond):
        half = self.train_size // 2
        a_pos, b_pos = int(round(half * 2 / 3)), int(round((self.train_size - half) / 3))
        return self._grouped_draw(rng, "train", half - a_pos, a_pos, self.train_size - half - b_pos, b_pos,
                                  "the training sample", "train_size")

    def _draw_test(self, rng, train, cond):
        return self._grouped_draw(rng, "test", *self._test_counts(cond["p_U"]), f"p_U={cond['p_U']}",
                                  "test_prevalences")

    def _sample_row(self, train, cond):
        an, ap, bn, bp = self._test_counts(cond["p_U"])
        size = an + ap + bn + bp
        return {"degree": round(cond["p_U"] - train["p_L"], 2) + 0.0, "size": size, "prevalence": (ap + bp) / size,
                "change_conditionals": self.change_conditionals}


class ConceptShift(_ShiftFamily):
    """Concept shift, Algorithm 4: an ordinal label binarised at a cut point c_L in training and c_U in test,
    so P(Y|X) and P(X|Y) change while P(X) does not (training and test items come from the same pool).

    The data are first balanced over the levels (each level subsampled, without replacement, to the size
    of the rarest, as the paper imposes 0.2 per star), then split into pools. Training samples of
    ``train_size`` and test samples of ``test_size`` are uniform draws from their pool (P(X) fixed),
    labelled by :func:`binarise` at c_L and c_U. With an integer cut the items of that level are dropped
    from the sample, which then has fewer items (``parameters["size"]``); half-integer cuts (the default)
    keep all of them.

    Parameters
    ----------
    X : features (m, d).
    labels : int array (m,) of ordinal levels (>= 3 distinct values: with 2 levels there is one cut only).
    train_cuts, test_cuts : sequence of float or None
        c_L and c_U grids, each strictly between the smallest and largest level (default: every
        half-integer between consecutive levels, :func:`cut_points`; 1.5 ... 4.5 for 5 stars).
    balance : bool
        Balance the levels first (True, the paper's choice; False keeps the natural level distribution).
    Other parameters as :class:`PriorShift`.

    ``parameters`` columns: ``trial, repeat, c_L, c_U, sample, degree`` (c_L − c_U), ``size``,
    ``prevalence`` (expected positive prevalence of the test pool at c_U; samples are uniform draws, so the
    realised one varies around it), ``p_L`` (the training pool's at c_L).
    """

    shift = "concept shift"

    def __init__(self, X, labels, train_cuts=None, test_cuts=None, balance: bool = True, train_size: int = 5000,
                 test_size: int = 500, n_samples: int = 50, repeats: int = 10, train_prop: float = 0.6,
                 replace: bool = True, random_state: int = 0, return_type: str = "sample_prev"):
        super().__init__(train_size, test_size, n_samples, repeats, train_prop, replace, random_state, return_type)
        X = _features(X)
        levels = _ordinal(labels, "labels")
        if levels.shape != (X.shape[0],):
            raise ValueError(f"labels must have shape ({X.shape[0]},) (one level per row of X), got {levels.shape}")
        lv = np.unique(levels)
        if lv.size < 3:
            raise ValueError(f"labels must have at least 3 ordinal levels to move a cut point, got {lv.tolist()}")
        default = cut_points(levels)
        self.train_cuts_ = self._cuts_grid(default if train_cuts is None else train_cuts, "train_cuts", lv)
        self.test_cuts_ = self._cuts_grid(default if test_cuts is None else test_cuts, "test_cuts", lv)
        if not isinstance(balance, bool):
            raise TypeError(f"balance must be True or False, got {balance!r}")
        self.balance = balance
        rng = np.random.default_rng([self._random_state, 2**31 - 1])
        keep = np.arange(len(levels))
        if balance:
            k = np.bincount(np.searchsorted(lv, levels)).min()
            keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(levels == v), k, replace=False) for v in lv]))
        self.X_, self.levels_ = X[keep], levels[keep]
        self.y_ = np.zeros(len(keep), dtype=np.int64)  # placeholder: labels depend on the cut of each sample
        self.n_classes_, self.classes_ = 2, np.array([0, 1])
        self.train_pool_, self.test_pool_ = _split_pools(self.levels_, train_prop, self.random_state)
        self._pool_levels = {"train": self.levels_[self.train_pool_], "test": self.levels_[self.test_pool_]}
        self._check_supply()

    @staticmethod
    def _cuts_grid(values, name, lv):
        arr = _grid(values, name, low=None, high=None)
        bad = arr[(arr <= lv[0]) | (arr >= lv[-1])]
        if bad.size:
            raise ValueError(f"{name} must lie strictly between the smallest and largest level ({lv[0]} and "
                             f"{lv[-1]}), got {bad[0]}")
        return arr

    def _train_conditions(self):
        return [{"c_L": float(c)} for c in self.train_cuts_]

    def _test_conditions(self, train):
        return [{"c_U": float(c)} for c in self.test_cuts_]

    def _uniform(self, rng, pool_size, size, cut, levels, arg):
        """A uniform draw from the pool (P(X) fixed), without the items of an integer cut's own level."""
        idx = _draw(rng, [np.arange(pool_size)], [size], self.replace, "a uniform sample", arg, ["the pool"])
        return idx[levels[idx] != cut]

    def _draw_train(self, rng, cond):
        lv = self._pool_levels["train"]
        return self._uniform(rng, len(lv), self.train_size, cond["c_L"], lv, "train_size")

    def _draw_test(self, rng, train, cond):
        lv = self._pool_levels["test"]
        return self._uniform(rng, len(lv), self.test_size, cond["c_U"], lv, "test_size")

    def _train_labels(self, train, idx):
        return (self.levels_[idx] > train["c_L"]).astype(np.int64)

    def _cuts(self, conds):
        return [c["c_U"] for c in conds]

    def _sample_row(self, train, cond):
        lv_te, lv_tr = self._pool_levels["test"], self._pool_levels["train"]
        kept = lv_te != cond["c_U"]
        share = kept.mean()
        return {"degree": round(train["c_L"] - cond["c_U"], 6) + 0.0, "size": int(round(self.test_size * share)),
                "prevalence": float((lv_te[kept] > cond["c_U"]).mean()),
                "p_L": float((lv_tr[lv_tr != train["c_L"]] > train["c_L"]).mean())}


#: The families by the name of the shift they generate (rows of :func:`taxonomy`).
PROTOCOLS = {"prior": PriorShift, "global covariate": GlobalCovariateShift, "local covariate": LocalCovariateShift,
             "concept": ConceptShift}


# ---------------------------------------------------------------------------------------------------------
# Prevalence draws and synthetic data
# ---------------------------------------------------------------------------------------------------------
def dirichlet_prevalences(n_classes: int, k: int, seed: int = 0, min_prevalence: float = 0.0) -> np.ndarray:
    """k prevalence vectors drawn uniformly from the simplex (Dirichlet(1, ..., 1), the multiclass analogue of
    the binary grid), then mapped affinely to keep every class at ``min_prevalence`` or more:
    p -> m + (1 - n m) p (for two classes and m = 0.02 this maps 0 to 0.02 and 1 to 0.98, Algorithm 1's
    replacement). Returns float (k, n_classes), rows summing to 1. Raises TypeError/ValueError for bad
    arguments (``min_prevalence`` must be in [0, 1/n_classes)).
    """
    n, k = check_int(n_classes, "n_classes"), check_int(k, "k")
    if n < 2:
        raise ValueError(f"n_classes must be >= 2, got {n}")
    if isinstance(min_prevalence, bool) or not isinstance(min_prevalence, Real) or not 0 <= min_prevalence < 1 / n:
        raise ValueError(f"min_prevalence must be in [0, 1/n_classes) = [0, {1 / n:.4f}), got {min_prevalence!r}")
    p = np.random.default_rng(check_seed(seed)).dirichlet(np.ones(n), size=k)
    return min_prevalence + (1 - n * min_prevalence) * p


def gaussian_shift_data(n_per_cell: int = 200, n_levels: int = 5, separation: float = 1.0,
                        group_offset=(1.5, 2.0), scale: float = 0.7, seed: int = 0):
    """Synthetic two-dimensional data on which every protocol family produces its shift (the paper's
    Figures 1-5 are of this kind).

    Each (group, level) cell is a Gaussian with covariance ``scale² I``: level k of group B is centred at
    ``((k - (n_levels + 1) / 2) * separation, 0)``, group A at the same point plus ``group_offset``, so the
    two groups are two displaced copies of the ordinal structure (P(X|Y) differs between groups) and a
    linear boundary learnt on one group is off on the other. ``n_per_cell`` items per cell.

    Returns ``(X, levels, groups)``: float64 (m, 2), int64 (m,) levels 1..n_levels, int64 (m,) 1 for
    group A and 0 for group B; m = 2 · n_levels · n_per_cell. Binarise the levels with :func:`binarise`
    (at the middle level, as the paper cuts stars at 3) for the binary families.
    """
    n, L = check_int(n_per_cell, "n_per_cell"), check_int(n_levels, "n_levels")
    if L < 3:
        raise ValueError(f"n_levels must be >= 3 (an ordinal label with a movable cut), got {L}")
    off = np.asarray(group_offset, dtype=float)
    if off.shape != (2,) or not np.all(np.isfinite(off)):
        raise ValueError(f"group_offset must be a pair of finite numbers, got {group_offset!r}")
    for v, name in ((separation, "separation"), (scale, "scale")):
        if isinstance(v, bool) or not isinstance(v, Real) or not v > 0:
            raise ValueError(f"{name} must be a positive number, got {v!r}")
    rng = np.random.default_rng(check_seed(seed))
    X, lv, gr = [], [], []
    for g in (1, 0):
        for k in range(1, L + 1):
            centre = np.array([(k - (L + 1) / 2) * separation, 0.0]) + (off if g == 1 else 0.0)
            X.append(centre + scale * rng.standard_normal((n, 2)))
            lv.append(np.full(n, k))
            gr.append(np.full(n, g))
    return np.vstack(X), np.concatenate(lv).astype(np.int64), np.concatenate(gr).astype(np.int64)

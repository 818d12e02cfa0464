"""Sampling protocols that generate prior-probability-shifted test samples, through QuaPy.

Holds :func:`upp_indices` / :func:`upp_prevalences` (uniform prevalence protocol: prevalence vectors drawn
uniformly from the simplex with the Kraemer algorithm, as ``quapy.protocol.UPP``; LEAP, Machine Learning
2025, Sect. 5.2 uses 1000 samples of size 100), :func:`app_indices` / :func:`app_prevalences` (artificial
prevalence protocol, the grid of ``quapy.protocol.APP``), :func:`npp_indices` (natural prevalence protocol,
``quapy.protocol.NPP``) and :func:`sample_prevalence`.

The protocols as objects: :class:`Protocol` (one interface: ``indices(y, sample_size, n_samples, seed)``, a
``name``, the parameters that enter a grid cell's key) and its registry, :func:`names` / :func:`make_protocol` /
:func:`register`, which the experiment runner, the grid's cell key and the CLI read. Adding a protocol is one
subclass and one ``@register``. Two kinds: the PPS protocols (``kind = "pps"``: UPP, APP, NPP) draw test samples
from the U of a split; the dataset-shift families (``kind = "shift"``, :class:`ShiftFamily`: prior, global pure and
mixed covariate, local covariate and concept shift, the algorithms of :mod:`capshift.shift`) draw the training
samples too, from a dataset of :data:`capshift.datasets.SHIFT_DATASETS`.

Sampling is QuaPy's ``LabelledCollection.sampling_index``: for a requested prevalence p it takes
``round(size * p_i)`` items of class i (the rounding remainder is assigned to random classes with
probability p), drawn **with replacement** within each class, then shuffles. The authors' code samples
in the same way (it uses QuaPy's protocols), so a sample may repeat an item of the test pool U.
All functions are deterministic given ``seed``; the global NumPy random state is restored afterwards
(``quapy.util.temp_seed``). Because that state is global, every draw holds one lock of this module for its
whole stream, so draws in threads (joblib's threading backend, Dask's threaded workers) do not interleave.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np
import quapy.functional as F
from quapy.data import LabelledCollection
from quapy.protocol import APP as _QuaPyAPP
from quapy.protocol import NPP as _QuaPyNPP
from quapy.util import temp_seed

from . import datasets, shift
from .validation import check_distribution, check_int, check_seed

__all__ = ["upp_indices", "upp_prevalences", "app_indices", "app_prevalences", "npp_indices", "sample_at",
           "sample_prevalence", "Protocol", "UPP", "APP", "NPP", "ShiftFamily", "PriorShiftFamily",
           "GlobalPureCovariateShift", "GlobalMixedCovariateShift", "LocalCovariateShiftFamily", "ConceptShiftFamily",
           "PROTOCOLS", "register", "names", "make_protocol"]


def _pos_int(value, arg: str) -> int:
    return check_int(value, arg, min_value=1)


def _seed(seed) -> int:
    return check_seed(seed, "seed")


def _collection(y, n_classes) -> LabelledCollection:
    y = np.asarray(y)
    if y.ndim != 1 or len(y) == 0 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y must be a non-empty 1-d integer array of class codes 0..n-1, got shape {y.shape} "
                         f"and dtype {y.dtype}")
    n = int(y.max()) + 1 if n_classes is None else _pos_int(n_classes, "n_classes")
    counts = np.bincount(y, minlength=n) if y.min() >= 0 else None
    if counts is None or len(counts) > n:
        raise ValueError(f"y must hold class codes in 0..{n - 1} (n_classes={n}), found {y.min()}..{y.max()}")
    if (counts == 0).any():
        raise ValueError(f"class(es) {np.flatnonzero(counts == 0).tolist()} have no item in y, so samples with a "
                         f"positive prevalence for them cannot be drawn; sample from a pool containing every class "
                         f"(e.g. Split.y_U) or pass the right n_classes")
    return LabelledCollection(y.reshape(-1, 1), y, classes=np.arange(n))


def _kraemer(n_classes: int, repeats: int) -> np.ndarray:
    # (repeats, n_classes) even for repeats=1, where QuaPy returns a 1-d vector; draws from the global RNG
    return F.uniform_simplex_sampling(n_classes, size=repeats).reshape(repeats, n_classes)


#: Held by every draw of this module: QuaPy's streams use NumPy's global random state (``temp_seed``), which
#: two threads drawing at once would interleave.
_DRAW_LOCK = threading.RLock()


@contextmanager
def _seeded(seed):
    """``quapy.util.temp_seed(seed)`` under this module's lock (one stream at a time in the process)."""
    with _DRAW_LOCK, temp_seed(seed):
        yield


def upp_prevalences(n_classes: int, repeats: int, seed: int) -> np.ndarray:
    """The prevalence vectors requested by :func:`upp_indices` with the same arguments.

    Returns float ndarray (repeats, n_classes), rows uniform on the probability simplex (Kraemer
    algorithm, ``quapy.functional.uniform_simplex_sampling``), drawn first under ``temp_seed(seed)``
    as QuaPy's UPP does. Raises TypeError/ValueError for non-int or < 1 ``repeats``/``n_classes``
    (``n_classes`` must be >= 2).
    """
    n_classes, repeats = _pos_int(n_classes, "n_classes"), _pos_int(repeats, "repeats")
    if n_classes < 2:
        raise ValueError(f"n_classes must be >= 2, got {n_classes}")
    with _seeded(_seed(seed)):
        return _kraemer(n_classes, repeats)


def upp_indices(y, sample_size: int, repeats: int, seed: int, n_classes: int | None = None) -> list[np.ndarray]:
    """Index arrays of UPP samples drawn from the labels ``y`` (LEAP 2025 Sect. 5.2; QuaPy's ``UPP``).

    ``y``: int array (m,) of class codes 0..n-1, every class present; ``sample_size``: items per sample;
    ``repeats``: number of samples; ``seed``: random seed; ``n_classes``: defaults to ``max(y) + 1``.
    Returns a list of ``repeats`` int arrays of shape (sample_size,), indices into ``y`` (with
    replacement within each class); sample k has prevalence ``upp_prevalences(n, repeats, seed)[k]`` up
    to rounding. Identical to ``quapy.protocol.UPP(..., random_state=seed, return_type='index')``
    (which, unlike this function, fails for repeats=1). Raises TypeError/ValueError on bad arguments.
    """
    lc = _collection(y, n_classes)
    sample_size, repeats, seed = _pos_int(sample_size, "sample_size"), _pos_int(repeats, "repeats"), _seed(seed)
    with _seeded(seed):  # the random stream of QuaPy's UPP: prevalences first, then the samples
        return [lc.sampling_index(sample_size, *p) for p in _kraemer(lc.n_classes, repeats)]


def app_prevalences(n_classes: int, n_prevalences: int = 21, repeats: int = 1) -> np.ndarray:
    """The APP grid: every prevalence vector whose entries are multiples of 1/(n_prevalences-1), each
    repeated ``repeats`` times (``quapy.protocol.APP.prevalence_grid`` plus the last class; the binary
    test protocol of the QuAcc paper, Sect. "Evaluation Protocol", uses the 21-point grid). Returns float
    ndarray (n_points * repeats, n_classes), rows summing to 1, in QuaPy's order, where n_points =
    C(n_prevalences + n_classes - 2, n_classes - 1). Raises TypeError/ValueError for bad arguments
    (n_prevalences and n_classes must be >= 2).
    """
    n_classes, repeats = _pos_int(n_classes, "n_classes"), _pos_int(repeats, "repeats")
    if _pos_int(n_prevalences, "n_prevalences") < 2 or n_classes < 2:
        raise ValueError(f"n_prevalences and n_classes must be >= 2, got {n_prevalences} and {n_classes}")
    dummy = LabelledCollection(np.zeros((n_classes, 1)), np.arange(n_classes))
    grid = _QuaPyAPP(dummy, sample_size=1, n_prevalences=n_prevalences, repeats=repeats, sanity_check=None).prevalence_grid()
    return np.hstack([grid, np.clip(1 - grid.sum(axis=1, keepdims=True), 0, 1)])


def app_indices(y, sample_size: int, n_prevalences: int = 21, repeats: int = 1, seed: int = 0,
                n_classes: int | None = None) -> list[np.ndarray]:
    """Index arrays of APP samples (QuaPy's ``APP``, ``return_type='index'``): one sample per grid point
    of :func:`app_prevalences` (in the same order), ``repeats`` per point.

    Arguments and returned arrays as in :func:`upp_indices`. The number of samples is
    C(n_prevalences + n_classes - 2, n_classes - 1) * repeats, so keep n_prevalences small for many
    classes. Raises TypeError/ValueError on bad arguments.
    """
    lc = _collection(y, n_classes)
    sample_size, repeats = _pos_int(sample_size, "sample_size"), _pos_int(repeats, "repeats")
    if _pos_int(n_prevalences, "n_prevalences") < 2:
        raise ValueError(f"n_prevalences must be >= 2, got {n_prevalences}")
    app = _QuaPyAPP(lc, sample_size=sample_size, n_prevalences=n_prevalences, repeats=repeats, random_state=_seed(seed),
              sanity_check=None, return_type="index")
    with _DRAW_LOCK:
        return list(app())


def npp_indices(y, sample_size: int, repeats: int, seed: int, n_classes: int | None = None) -> list[np.ndarray]:
    """Index arrays of NPP samples (QuaPy's ``NPP``, ``return_type='index'``): ``repeats`` samples of
    ``sample_size`` items drawn uniformly from ``y``, with replacement (as the other protocols), so each
    sample's prevalence is that of the pool up to sampling noise (the natural prevalence protocol; no prior shift
    beyond the pool's own). Arguments and returned arrays as in :func:`upp_indices`. Raises TypeError/ValueError
    on bad arguments."""
    lc = _collection(y, n_classes)
    sample_size, repeats = _pos_int(sample_size, "sample_size"), _pos_int(repeats, "repeats")
    npp = _QuaPyNPP(lc, sample_size=sample_size, repeats=repeats, random_state=_seed(seed), return_type="index")
    with _DRAW_LOCK:
        return list(npp())


def sample_at(y, prevalence, size: int, seed: int) -> np.ndarray:
    """Indices (``size``,) into ``y`` of one sample with the requested class ``prevalence`` (n,).

    QuaPy's ``LabelledCollection.sampling_index`` (within-class sampling with replacement, as the
    protocols above); used for the training/validation samples of the QuAcc paper's protocol
    (QuAcc 2025, Sect. "Evaluation Protocol"). Raises ValueError for labels outside 0..n-1, a
    class absent from ``y``, a bad ``size`` or ``seed``, or a prevalence that is not a distribution.
    """
    prevalence = check_distribution(prevalence, "prevalence")
    if prevalence.ndim != 1:
        raise ValueError(f"prevalence must be a 1-d distribution over the classes, got shape {prevalence.shape}")
    lc = _collection(y, len(prevalence))
    with _seeded(_seed(seed)):
        return lc.sampling_index(_pos_int(size, "size"), *prevalence)


def sample_prevalence(y, idx, n_classes: int) -> np.ndarray:
    """Prevalence vector of the sample ``y[idx]``: float ndarray (n_classes,) summing to 1, entry i =
    fraction of the items with class code i (``quapy.functional.prevalence_from_labels``).

    ``y``: int array (m,) of class codes 0..n_classes-1; ``idx``: int array of indices into ``y`` (e.g. one
    array of :func:`upp_indices`). Raises TypeError/ValueError for a non-int or < 1 ``n_classes``,
    ValueError for an empty sample, indices outside ``y`` or a class code outside 0..n_classes-1 (which
    would otherwise be left out of the fractions).
    """
    n = _pos_int(n_classes, "n_classes")
    idx = np.asarray(idx)
    y = np.asarray(y)
    if idx.size == 0:
        raise ValueError("idx is empty: the prevalence of an empty sample is undefined")
    if idx.dtype.kind not in "iu":
        raise TypeError(f"idx must hold integer indices into y, got dtype {idx.dtype}")
    if idx.min() < -len(y) or idx.max() >= len(y):
        raise ValueError(f"idx holds indices outside 0..{len(y) - 1} (y has {len(y)} items)")
    labels = y[idx]
    if labels.min() < 0 or labels.max() >= n:
        raise ValueError(f"y[idx] holds class codes {labels.min()}..{labels.max()}, outside 0..{n - 1} (n_classes={n})")
    return F.prevalence_from_labels(labels, np.arange(n))


# ------------------------------------------------------------------------------------------- protocols as objects
class Protocol:
    """A sampling protocol: which test samples to draw from a labelled pool (as QuaPy's
    ``AbstractStochasticSeededProtocol``, but returning indices for any pool, seed and number of samples).

    Subclasses set ``name`` (the registry key, lower case), ``description`` (one line, for the CLI's help) and
    implement :meth:`indices`; constructor parameters are keyword arguments stored as attributes of the same name,
    with their defaults in ``defaults``. Register a subclass with :func:`register`."""

    name: str = ""
    description: str = ""
    defaults: dict = {}
    #: "pps": test samples drawn from the U of a split (:meth:`indices`); "shift": a dataset-shift family that
    #: draws training samples too (:class:`ShiftFamily`)
    kind: str = "pps"

    def __init__(self, **params):
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise ValueError(f"protocol {self.name!r} has no parameter(s) {unknown}; its parameters are "
                             f"{sorted(self.defaults) or 'none'}")
        for k, v in {**self.defaults, **params}.items():
            setattr(self, k, tuple(v) if isinstance(v, list) else v)  # a grid as a tuple: one key for one grid

    def get_params(self) -> dict:
        """The protocol's parameters (name -> value), defaults included."""
        return {k: getattr(self, k) for k in self.defaults}

    def key(self) -> str:
        """The protocol as it enters a grid cell's key: its name, followed by the parameters that differ from the
        defaults (``"app(n_prevalences=11)"``), so that a cell drawn with other parameters is never reused."""
        changed = {k: v for k, v in self.get_params().items() if v != self.defaults[k]}
        return self.name + (f"({', '.join(f'{k}={v!r}' for k, v in sorted(changed.items()))})" if changed else "")

    def indices(self, y, sample_size: int, n_samples: int, seed: int, n_classes: int | None = None) -> list:
        """``n_samples`` int arrays of shape (``sample_size``,): indices into the pool's labels ``y`` (int (m,),
        codes 0..n-1) of the test samples, deterministic given ``seed``. Raises TypeError/ValueError naming the
        argument for labels that are not class codes with every class present, sizes < 1 or a bad seed."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_params().items())})"


#: The registered protocols: name -> :class:`Protocol` subclass.
PROTOCOLS: dict[str, type[Protocol]] = {}


def register(cls: type[Protocol]) -> type[Protocol]:
    """Class decorator: add a :class:`Protocol` subclass to :data:`PROTOCOLS` under its ``name``. Raises
    ValueError for an empty or already registered name."""
    if not (isinstance(cls, type) and issubclass(cls, Protocol)):
        raise TypeError(f"register takes a Protocol subclass, got {cls!r}")
    if not cls.name or cls.name in PROTOCOLS:
        raise ValueError(f"a protocol needs a name not registered yet, got {cls.name!r} (registered: {names()})")
    PROTOCOLS[cls.name] = cls
    return cls


def names(kind: str | None = None) -> list[str]:
    """The registered protocols' names, in registration order; ``kind``: only the "pps" or the "shift" ones."""
    return [n for n, c in PROTOCOLS.items() if kind is None or c.kind == kind]


def make_protocol(protocol, **params) -> Protocol:
    """A :class:`Protocol` from a registered name (``make_protocol("app", n_prevalences=11)``) or the instance
    itself (then ``params`` must be empty). Raises ValueError naming the registered protocols for an unknown name
    or parameter, TypeError for anything else."""
    if isinstance(protocol, Protocol):
        if params:
            raise ValueError(f"params {sorted(params)} given with a Protocol instance: set them on the instance")
        return protocol
    if not isinstance(protocol, str):
        raise TypeError(f"protocol must be a protocol name ({names()}) or a capshift.protocols.Protocol, got "
                        f"{type(protocol).__name__}")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {names()}")
    return PROTOCOLS[protocol](**params)


@register
class UPP(Protocol):
    """Uniform prevalence protocol: each sample's prevalence drawn uniformly from the simplex (:func:`upp_indices`;
    the LEAP paper's protocol, Sect. 5.2)."""

    name = "upp"
    description = "uniform prevalence protocol: prevalences uniform on the simplex (the LEAP paper's)"

    def indices(self, y, sample_size, n_samples, seed, n_classes=None):
        return upp_indices(y, sample_size, n_samples, seed, n_classes=n_classes)


@register
class APP(Protocol):
    """Artificial prevalence protocol: the grid of :func:`app_prevalences` (``n_prevalences`` points per class),
    repeated ``ceil(n_samples / n_prevalences)`` times and cut at ``n_samples`` samples, in QuaPy's order (for
    binary data with the default 21 points: 21 samples per repetition, the QuAcc paper's binary protocol)."""

    name = "app"
    description = "artificial prevalence protocol: QuaPy's grid of prevalences, 21 points per class"
    defaults = {"n_prevalences": 21}

    def __init__(self, **params):
        super().__init__(**params)
        if check_int(self.n_prevalences, "n_prevalences") < 2:
            raise ValueError(f"n_prevalences must be >= 2 (the grid's points per class), got {self.n_prevalences}")

    def indices(self, y, sample_size, n_samples, seed, n_classes=None):
        n_samples = _pos_int(n_samples, "n_samples")
        reps = max(1, int(np.ceil(n_samples / self.n_prevalences)))
        return app_indices(y, sample_size, n_prevalences=self.n_prevalences, repeats=reps, seed=seed,
                           n_classes=n_classes)[:n_samples]


@register
class NPP(Protocol):
    """Natural prevalence protocol: samples drawn uniformly from the pool (:func:`npp_indices`), at the pool's own
    prevalence: the no-prior-shift reference."""

    name = "npp"
    description = "natural prevalence protocol: uniform samples of the pool (no prior shift beyond U's)"

    def indices(self, y, sample_size, n_samples, seed, n_classes=None):
        return npp_indices(y, sample_size, n_samples, seed, n_classes=n_classes)


# ------------------------------------------------------------------------------------------- dataset-shift families
class ShiftFamily(Protocol):
    """A dataset-shift family of :mod:`capshift.shift` as a protocol (``kind = "shift"``): where a PPS protocol
    draws test samples from the U of a fixed L / V / U split, a shift family draws the *training* samples too, one
    per training condition and repetition (a trial), and the test samples of each trial at every test condition
    (González, Moreo & Sebastiani, DMKD 2024, Algorithms 1-4). The data are a dataset of
    :data:`capshift.datasets.SHIFT_DATASETS` (an ordinal label, binarised at ``cut_point``, and a group attribute
    ``group``; None: the dataset's own).

    A CAP evaluation (:func:`capshift.evaluation.contexts`) divides each trial's training sample, stratified, into
    L (trains h) and V (``val_prop`` of it; fits the CAP methods). ``n_samples`` is the number of test samples per
    test condition and training condition, ``sample_size`` the test samples' size. Parameters common to every
    family: ``train_size`` (items per training sample; the paper's 5,000), ``repeats`` (the paper's 10),
    ``train_prop`` (the training pool's share, 0.6 as the authors'), ``val_prop``, ``group``, ``cut_point``; each
    family adds its grids of conditions (defaults: the paper's)."""

    kind = "shift"
    #: the parameters every family has (a subclass's ``defaults`` adds its own grids)
    common = {"train_size": 5000, "repeats": 10, "train_prop": 0.6, "val_prop": 0.5, "group": None,
              "cut_point": None}

    def indices(self, y, sample_size, n_samples, seed, n_classes=None):
        raise TypeError(f"protocol {self.name!r} is a dataset-shift family: it draws training samples as well as "
                        "test samples, from a dataset of capshift.datasets.SHIFT_DATASETS; use "
                        "capshift.evaluation.contexts (or capshift run --protocol) rather than indices()")

    def data(self, dataset: str):
        """The family's data: ``(shift_data, X, y, groups)``, the :class:`capshift.datasets.ShiftData` of
        ``dataset`` with ``group`` and its binarisation at ``cut_point``. Raises ValueError for a name that is
        not a shift dataset (naming them)."""
        if dataset not in datasets.SHIFT_DATASETS:
            raise ValueError(f"protocol {self.name!r} runs on a dataset of capshift.datasets.SHIFT_DATASETS "
                             f"({list(datasets.SHIFT_DATASETS)}), got {dataset!r}; the PPS protocols "
                             f"({[n for n, c in PROTOCOLS.items() if c.kind == 'pps']}) run on the others")
        data = datasets.load_shift(dataset, group=self.group)
        return (data, *data.binary(self.cut_point))

    def family(self, dataset: str, sample_size: int, n_samples: int, seed: int):
        """The :mod:`capshift.shift` family (its trials) on ``dataset``, with ``sample_size`` items per test sample,
        ``n_samples`` per condition and ``seed``."""
        data, X, y, g = self.data(dataset)
        common = dict(train_size=self.train_size, test_size=sample_size, n_samples=n_samples, repeats=self.repeats,
                      train_prop=self.train_prop, random_state=seed)
        return self._make(data, X, y, g, common)

    def _make(self, data, X, y, g, common):
        raise NotImplementedError


def _grid_param(value):
    return None if value is None else list(value)


@register
class PriorShiftFamily(ShiftFamily):
    """Prior probability shift, Algorithm 1 (:class:`capshift.shift.PriorShift`): training and test prevalences on
    grids (``train_prevalences``, ``test_prevalences``; None: the paper's)."""

    name = "prior"
    description = "prior probability shift family (dataset-shift paper, Alg. 1): training and test prevalence grids"
    defaults = {**ShiftFamily.common, "train_prevalences": None, "test_prevalences": None}

    def _make(self, data, X, y, g, common):
        return shift.PriorShift(X, y, train_prevalences=_grid_param(self.train_prevalences),
                                test_prevalences=_grid_param(self.test_prevalences), **common)


class _GlobalCovariate(ShiftFamily):
    kind_of_shift = ""
    defaults = {**ShiftFamily.common, "train_prevalences": (0.25, 0.5, 0.75), "test_prevalences": (0.25, 0.5, 0.75),
                "train_alphas": None, "test_alphas": None}

    def _make(self, data, X, y, g, common):
        alphas = {k: list(getattr(self, k)) for k in ("train_alphas", "test_alphas") if getattr(self, k) is not None}
        return shift.GlobalCovariateShift(X, y, g, train_prevalences=list(self.train_prevalences),
                                          test_prevalences=list(self.test_prevalences), kind=self.kind_of_shift,
                                          **alphas, **common)


@register
class GlobalPureCovariateShift(_GlobalCovariate):
    """Global pure covariate shift, Algorithm 2 with ``kind="pure"`` (:class:`capshift.shift.GlobalCovariateShift`):
    the share of group A changes, P(Y) does not."""

    name = "global-pure-covariate"
    description = "global pure covariate shift (Alg. 2): the groups' shares change, P(Y) does not"
    kind_of_shift = "pure"


@register
class GlobalMixedCovariateShift(_GlobalCovariate):
    """Global mixed covariate shift, Algorithm 2 with ``kind="mixed"``: the share of group A and P(Y) change."""

    name = "global-mixed-covariate"
    description = "global mixed covariate shift (Alg. 2): the groups' shares and P(Y) change"
    kind_of_shift = "mixed"


@register
class LocalCovariateShiftFamily(ShiftFamily):
    """Local covariate shift, Algorithm 3 (:class:`capshift.shift.LocalCovariateShift`): only the positives of
    group A change in number (``test_prevalences``: the p_U grid; None: the paper's .25, .30, ..., .75)."""

    name = "local-covariate"
    description = "local covariate shift (Alg. 3): only the positives of one group change in number"
    defaults = {**ShiftFamily.common, "test_prevalences": None}

    def _make(self, data, X, y, g, common):
        grid = {} if self.test_prevalences is None else {"test_prevalences": list(self.test_prevalences)}
        return shift.LocalCovariateShift(X, y, g, **grid, **common)


@register
class ConceptShiftFamily(ShiftFamily):
    """Concept shift, Algorithm 4 (:class:`capshift.shift.ConceptShift`): the ordinal label's cut point moves
    between training (``train_cuts``) and test (``test_cuts``; None: every half-integer cut), on levels balanced
    first (``balance``)."""

    name = "concept"
    description = "concept shift (Alg. 4): the cut point of the ordinal label moves between training and test"
    defaults = {**ShiftFamily.common, "train_cuts": None, "test_cuts": None, "balance": True}

    def _make(self, data, X, y, g, common):
        return shift.ConceptShift(data.X, data.levels, train_cuts=_grid_param(self.train_cuts),
                                  test_cuts=_grid_param(self.test_cuts), balance=self.balance, **common)

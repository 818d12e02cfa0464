"""Sampling protocols that generate prior-probability-shifted test samples, through QuaPy.

Holds :func:`upp_indices` / :func:`upp_prevalences` (uniform prevalence protocol: prevalence vectors drawn
uniformly from the simplex with the Kraemer algorithm, as ``quapy.protocol.UPP``; LEAP, Machine Learning
2025, Sect. 5.2 uses 1000 samples of size 100), :func:`app_indices` / :func:`app_prevalences` (artificial
prevalence protocol, the grid of ``quapy.protocol.APP``), :func:`npp_indices` (natural prevalence protocol,
``quapy.protocol.NPP``) and :func:`sample_prevalence`.

The protocols as objects: :class:`Protocol` (one interface: ``indices(y, sample_size, n_samples, seed)``, a
``name``, the parameters that enter a grid cell's key) and its registry, :func:`names` / :func:`make_protocol` /
:func:`register`, which the experiment runner, the grid's cell key and the CLI read. Adding a protocol is one
subclass and one ``@register``.

Sampling is QuaPy's ``LabelledCollection.sampling_index``: for a requested prevalence p it takes
``round(size * p_i)`` items of class i (the rounding remainder is assigned to random classes with
probability p), drawn **with replacement** within each class, then shuffles. The authors' code samples
in the same way (it uses QuaPy's protocols), so a sample may repeat an item of the test pool U.
All functions are deterministic given ``seed``; the global NumPy random state is restored afterwards
(``quapy.util.temp_seed``).
"""
from __future__ import annotations

import numpy as np
import quapy.functional as F
from quapy.data import LabelledCollection
from quapy.protocol import APP as _QuaPyAPP
from quapy.protocol import NPP as _QuaPyNPP
from quapy.util import temp_seed

from .validation import check_distribution, check_int, check_seed

__all__ = ["upp_indices", "upp_prevalences", "app_indices", "app_prevalences", "npp_indices", "sample_at",
           "sample_prevalence", "Protocol", "UPP", "APP", "NPP", "PROTOCOLS", "register", "names", "make_protocol"]


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
    with temp_seed(_seed(seed)):
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
    with temp_seed(seed):  # the random stream of QuaPy's UPP: prevalences first, then the samples
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
    with temp_seed(_seed(seed)):
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

    def __init__(self, **params):
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise ValueError(f"protocol {self.name!r} has no parameter(s) {unknown}; its parameters are "
                             f"{sorted(self.defaults) or 'none'}")
        for k, v in {**self.defaults, **params}.items():
            setattr(self, k, v)

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
        codes 0..n-1) of the test samples, deterministic given ``seed``."""
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


def names() -> list[str]:
    """The registered protocols' names, in registration order."""
    return list(PROTOCOLS)


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

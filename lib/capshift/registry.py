"""The one registry of CAP methods: every method under one name, read by the runner and the chapters.

A name maps to a :class:`MethodSpec`: an estimator class (a :class:`capshift.base.CAPEstimator`) and the
constructor parameters that make it that method (``"LEAP_KDEy"`` is ``LEAP(quantifier="kdey")``,
``"RCA*"`` is ``RCAStar()``). :func:`make_method` builds an unfitted estimator from a name and a
classifier. Adding a method is one class plus one :func:`register` line below.

Families (:func:`names`):

- ``"leap"``: ``<variant>_<quantifier>`` with variant ``S-LEAP``, ``LEAP``, ``O-LEAP`` and quantifier
  ``ACC``, ``KDEy``, ``KDEy-h`` (KDEy on h's own posteriors instead of the paper's surrogate MLP), ``CC``,
  ``SLD``, ``oracle`` (LEAP 2025, Sects. 4.2-4.5).
- ``"baseline"``: ``Naive`` and the baselines of the LEAP paper's tables (:mod:`capshift.baselines`).
- ``"quacc"``: ``QuAcc<variant>_<quantifier>`` (variant ``1xn2``, ``nxn``, ``1xn+1``; quantifier ``CC``,
  ``SLD``, ``KDEy``) and ``QuAcc(<quantifier>)``, the model-selected QuAcc of the QuAcc paper's tables.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from .baselines import ATC, CBPE, COT, DS, NN, RCA, DoC, Naive, RCAStar
from .base import CAPEstimator
from .leap import LEAP, OLEAP, SLEAP
from .quacc import VARIANTS, QuAccSelected

__all__ = ["MethodSpec", "METHODS", "register", "names", "get", "make_method"]


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: ``cls(classifier, random_state=..., **params)`` builds it."""

    name: str
    cls: type
    family: str
    params: dict = field(default_factory=dict)

    def make(self, classifier, random_state=0, **overrides) -> CAPEstimator:
        """An unfitted estimator; ``overrides`` replace registered or default constructor parameters
        (ValueError for a parameter the class does not have)."""
        est = self.cls(classifier, random_state=random_state, **self.params)
        if overrides:
            valid = est.get_params(deep=False)
            bad = sorted(set(overrides) - set(valid))
            if bad:
                raise ValueError(f"method {self.name!r} ({self.cls.__name__}) has no parameter(s) {bad}; "
                                 f"its parameters are {sorted(valid)}")
            est.set_params(**overrides)
        return est


#: Every CAP method by name, in the order the chapters list them.
METHODS: dict[str, MethodSpec] = {}


def register(name: str, cls: type, family: str, **params) -> MethodSpec:
    """Register ``cls`` with constructor ``params`` under ``name`` (ValueError if the name is taken)."""
    if name in METHODS:
        raise ValueError(f"method name {name!r} is already registered")
    if not (isinstance(cls, type) and issubclass(cls, CAPEstimator)):
        raise TypeError(f"cls must be a CAPEstimator subclass, got {cls!r}")
    METHODS[name] = spec = MethodSpec(name, cls, family, dict(params))
    return spec


def names(family: str | None = None) -> list[str]:
    """Registered names, all or of one family ("leap", "baseline", "quacc"); ValueError for another family."""
    families = {s.family for s in METHODS.values()}
    if family is not None and family not in families:
        raise ValueError(f"family must be None or one of {sorted(families)}, got {family!r}")
    return [n for n, s in METHODS.items() if family is None or s.family == family]


def get(name: str) -> MethodSpec:
    """The spec of a registered name (exact, else case-insensitive); ValueError listing the names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"method name must be a str, got {type(name).__name__}")
    if name in METHODS:
        return METHODS[name]
    folded = [n for n in METHODS if n.lower() == name.lower()]
    if len(folded) == 1:
        return METHODS[folded[0]]
    raise ValueError(f"unknown method {name!r}; registered methods: {', '.join(METHODS)}")


def make_method(name: str, classifier, random_state=0, quantifier=None, solver=None, **params) -> CAPEstimator:
    """An unfitted CAP estimator for a registered name, built around ``classifier``: the one factory of methods.

    ``quantifier`` (e.g. a fitted, shared :class:`capshift.quantifiers.Quantifier`) overrides the one in the name;
    ``solver`` (one of :data:`capshift.leap.SOLVERS`) is passed to the methods that have one (the LEAP family) and
    ignored by the others, so that one solver can be given to a run of many methods; ``params`` override other
    constructor parameters (e.g. ``n_val_samples=20``). Raises ValueError for an unknown name or parameter.
    """
    spec = get(name)
    if quantifier is not None:
        params["quantifier"] = quantifier
    if solver is not None and "solver" in inspect.signature(spec.cls).parameters:
        params.setdefault("solver", solver)
    return spec.make(classifier, random_state=random_state, **params)


# ------------------------------------------------------------------------------------------- the methods
register("Naive", Naive, "baseline")
for _variant, _cls in (("S-LEAP", SLEAP), ("LEAP", LEAP), ("O-LEAP", OLEAP)):
    for _q in ("ACC", "KDEy", "KDEy-h", "CC", "SLD", "oracle"):
        register(f"{_variant}_{_q}", _cls, "leap", quantifier=_q.lower())

register("ATC", ATC, "baseline", score="maxconf")
register("ATC-NE", ATC, "baseline", score="neg_entropy")
register("DoC", DoC, "baseline")
register("DS", DS, "baseline")
register("NN", NN, "baseline")
register("CBPE", CBPE, "baseline", calibration=None)
register("SLD-CBPE", CBPE, "baseline", calibration="sld-bcts")
register("BCTS-CBPE", CBPE, "baseline", calibration="bcts")  # the ablation's variants (issue 24): BCTS only,
register("SLD-CBPE-raw", CBPE, "baseline", calibration="sld")  # and SLD's EM on h's raw posteriors
register("L-CBPE", CBPE, "baseline", calibration="lascal")
# The paper's baselines as the authors' code computes them (issue 30): table-free baselines report their
# accuracy regression under every measure; L-CBPE's table normalised per column. For fidelity tables only.
register("DS-authors", DS, "baseline", regress="accuracy")
register("NN-authors", NN, "baseline", regress="accuracy")
register("L-CBPE-authors", CBPE, "baseline", calibration="lascal", table="column-normalised")
register("COT", COT, "baseline", quantifier=None)
register("Q-COT", COT, "baseline", quantifier="kdey")
register("RCA", RCA, "baseline")
register("RCA*", RCAStar, "baseline")

_QNAMES = {"cc": "CC", "sld": "SLD", "kdey": "KDEy"}
for _v, _cls in VARIANTS.items():
    for _q, _Q in _QNAMES.items():
        register(f"QuAcc{_v}_{_Q}", _cls, "quacc", quantifier=_q)


for _q, _Q in _QNAMES.items():
    register(f"QuAcc({_Q})", QuAccSelected, "quacc", quantifier=_q)

"""The registry of CAP methods (capshift.registry): every registered name's class, family and constructor
parameters, in the order the chapters list them; :func:`~capshift.registry.make_method` passing ``random_state``,
``quantifier``, ``solver`` and overrides to the estimator it builds (and leaving the registered spec alone); and
the exact errors for an unknown name, family or parameter and for a bad :func:`~capshift.registry.register`.

Nothing here fits a model: the estimators are built unfitted around a LogisticRegression (fast)."""
from __future__ import annotations

import inspect
import re

import pytest
from sklearn.linear_model import LogisticRegression

from capshift import registry
from capshift.base import CAPEstimator
from capshift.baselines import ATC, CBPE, COT, DS, NN, RCA, DoC, Naive, RCAStar
from capshift.leap import LEAP, OLEAP, SLEAP
from capshift.quacc import QuAcc1xN2, QuAcc1xNp1, QuAccNxN, QuAccSelected
from capshift.registry import MethodSpec

H = LogisticRegression()

# ------------------------------------------------------------------------------------------- what is registered
#: name -> (class, family, registered parameters), in registration order (the order of names()).
EXPECTED = {"Naive": (Naive, "baseline", {})}
for _variant, _cls in (("S-LEAP", SLEAP), ("LEAP", LEAP), ("O-LEAP", OLEAP)):
    for _q, _param in (("ACC", "acc"), ("KDEy", "kdey"), ("KDEy-h", "kdey-h"), ("CC", "cc"), ("SLD", "sld"),
                       ("oracle", "oracle")):
        EXPECTED[f"{_variant}_{_q}"] = (_cls, "leap", {"quantifier": _param})
EXPECTED.update({
    "ATC": (ATC, "baseline", {"score": "maxconf"}),
    "ATC-NE": (ATC, "baseline", {"score": "neg_entropy"}),
    "DoC": (DoC, "baseline", {}),
    "DS": (DS, "baseline", {}),
    "NN": (NN, "baseline", {}),
    "CBPE": (CBPE, "baseline", {"calibration": None}),
    "SLD-CBPE": (CBPE, "baseline", {"calibration": "sld-bcts"}),
    "BCTS-CBPE": (CBPE, "baseline", {"calibration": "bcts"}),
    "SLD-CBPE-raw": (CBPE, "baseline", {"calibration": "sld"}),
    "L-CBPE": (CBPE, "baseline", {"calibration": "lascal"}),
    "DS-authors": (DS, "baseline", {"regress": "accuracy"}),
    "NN-authors": (NN, "baseline", {"regress": "accuracy"}),
    "L-CBPE-authors": (CBPE, "baseline", {"calibration": "lascal", "table": "column-normalised"}),
    "COT": (COT, "baseline", {"quantifier": None}),
    "Q-COT": (COT, "baseline", {"quantifier": "kdey"}),
    "RCA": (RCA, "baseline", {}),
    "RCA*": (RCAStar, "baseline", {}),
})
for _v, _cls in (("1xn2", QuAcc1xN2), ("nxn", QuAccNxN), ("1xn+1", QuAcc1xNp1)):
    for _Q, _param in (("CC", "cc"), ("SLD", "sld"), ("KDEy", "kdey")):
        EXPECTED[f"QuAcc{_v}_{_Q}"] = (_cls, "quacc", {"quantifier": _param})
for _Q, _param in (("CC", "cc"), ("SLD", "sld"), ("KDEy", "kdey")):
    EXPECTED[f"QuAcc({_Q})"] = (QuAccSelected, "quacc", {"quantifier": _param})

FAMILIES = ["baseline", "leap", "quacc"]


@pytest.fixture
def scratch():
    """A copy of the registry's table, so that a test may register names (restored afterwards)."""
    saved = dict(registry.METHODS)
    yield registry.METHODS
    registry.METHODS.clear()
    registry.METHODS.update(saved)


def test_every_name_its_class_family_and_parameters():
    assert registry.names() == list(EXPECTED)
    assert list(registry.METHODS) == list(EXPECTED)
    for name, (cls, family, params) in EXPECTED.items():
        spec = registry.get(name)
        assert spec == MethodSpec(name, cls, family, params), name
        assert spec.cls is cls and spec.name == name


def test_names_of_each_family_in_registration_order():
    for family in FAMILIES:
        assert registry.names(family) == [n for n, (_, f, _) in EXPECTED.items() if f == family]
    assert registry.names(None) == list(EXPECTED)
    assert registry.names("leap")[:3] == ["S-LEAP_ACC", "S-LEAP_KDEy", "S-LEAP_KDEy-h"]
    assert registry.names("quacc")[-3:] == ["QuAcc(CC)", "QuAcc(SLD)", "QuAcc(KDEy)"]


def test_names_refuses_an_unknown_family():
    msg = "family must be None or one of ['baseline', 'leap', 'quacc'], got 'LEAP'"
    with pytest.raises(ValueError, match=re.escape(msg) + "$"):
        registry.names("LEAP")
    with pytest.raises(ValueError, match=re.escape("one of ['baseline', 'leap', 'quacc'], got ''")):
        registry.names("")


def test_names_lists_the_families_registered(scratch):
    registry.register("Extra", Naive, "extra")
    assert registry.names("extra") == ["Extra"]
    assert registry.names()[-1] == "Extra"
    with pytest.raises(ValueError, match=re.escape("one of ['baseline', 'extra', 'leap', 'quacc'], got 'x'")):
        registry.names("x")


# ------------------------------------------------------------------------------------------- get: name lookup
def test_get_exact_then_case_insensitive():
    assert registry.get("LEAP_KDEy") is registry.METHODS["LEAP_KDEy"]
    assert registry.get("leap_kdey") is registry.METHODS["LEAP_KDEy"]
    assert registry.get("o-leap_KDEY-H") is registry.METHODS["O-LEAP_KDEy-h"]
    assert registry.get("rca*") is registry.METHODS["RCA*"]
    assert registry.get("quacc(sld)") is registry.METHODS["QuAcc(SLD)"]


def test_get_refuses_an_unknown_name_listing_the_registered_ones():
    msg = f"unknown method 'LEAP_XYZ'; registered methods: {', '.join(EXPECTED)}"
    with pytest.raises(ValueError, match=re.escape(msg) + "$"):
        registry.get("LEAP_XYZ")
    with pytest.raises(ValueError, match=re.escape("unknown method ''; registered methods: Naive, S-LEAP_ACC, ")):
        registry.get("")


def test_get_refuses_a_name_that_is_not_a_str():
    with pytest.raises(TypeError, match=re.escape("method name must be a str, got int") + "$"):
        registry.get(3)
    with pytest.raises(TypeError, match=re.escape("method name must be a str, got NoneType") + "$"):
        registry.get(None)


def test_get_ambiguous_case_folding_is_an_unknown_name(scratch):
    a = registry.register("Foo", Naive, "baseline")
    b = registry.register("FOO", Naive, "baseline")
    assert registry.get("Foo") is a and registry.get("FOO") is b  # an exact match wins
    with pytest.raises(ValueError, match=re.escape("unknown method 'foo'; registered methods: ")
                       + r".*RCA\*, .*, Foo, FOO$"):
        registry.get("foo")


# ------------------------------------------------------------------------------------------- register
def test_register_stores_and_returns_the_spec(scratch):
    params = {"score": "neg_entropy"}
    spec = registry.register("My-ATC", ATC, "baseline", **params)
    assert spec == MethodSpec("My-ATC", ATC, "baseline", {"score": "neg_entropy"})
    assert registry.METHODS["My-ATC"] is spec
    assert type(spec.params) is dict
    est = registry.make_method("my-atc", H)
    assert type(est) is ATC and est.score == "neg_entropy"
    empty = registry.register("My-Naive", Naive, "baseline")
    assert empty.params == {} and type(empty.params) is dict


def test_register_refuses_a_taken_name(scratch):
    with pytest.raises(ValueError, match=re.escape("method name 'Naive' is already registered") + "$"):
        registry.register("Naive", Naive, "baseline")
    assert registry.METHODS["Naive"].family == "baseline"
    assert len(registry.METHODS) == len(EXPECTED)


@pytest.mark.parametrize("cls", [LogisticRegression, Naive(H), "Naive", None])
def test_register_refuses_what_is_not_a_cap_estimator_class(scratch, cls):
    with pytest.raises(TypeError, match=re.escape(f"cls must be a CAPEstimator subclass, got {cls!r}") + "$"):
        registry.register("New", cls, "baseline")
    assert "New" not in registry.METHODS
    assert issubclass(Naive, CAPEstimator)


def test_method_spec_default_parameters():
    a, b = MethodSpec("A", Naive, "baseline"), MethodSpec("B", Naive, "baseline")
    assert a.params == {} and a.params is not b.params
    with pytest.raises(AttributeError):
        a.name = "C"  # frozen


# ------------------------------------------------------------------------------------------- make_method
def test_make_method_builds_the_registered_estimator():
    for name, (cls, _, params) in EXPECTED.items():
        est = registry.make_method(name, H)
        assert type(est) is cls, name
        assert est.classifier is H
        got = est.get_params(deep=False)
        for k, v in params.items():
            assert got[k] == v, (name, k)
        # every other parameter keeps its constructor default, except random_state (0 by default)
        defaults = {k: p.default for k, p in inspect.signature(cls).parameters.items()
                    if k not in params and k not in ("classifier", "random_state")}
        assert {k: got[k] for k in defaults} == defaults, name
        assert got["random_state"] == 0, name


def test_make_method_passes_random_state():
    assert registry.make_method("Naive", H, random_state=7).random_state == 7
    assert registry.make_method("LEAP_ACC", H, 11).random_state == 11
    assert registry.make_method("QuAcc(SLD)", H, random_state=None).random_state is None
    assert registry.get("DoC").make(H, random_state=5).random_state == 5
    assert registry.get("DoC").make(H).random_state == 0


def test_make_method_quantifier_overrides_the_name():
    assert registry.make_method("LEAP_ACC", H, quantifier="cc").quantifier == "cc"
    shared = object()  # e.g. a fitted, shared Quantifier: passed as is
    assert registry.make_method("S-LEAP_KDEy", H, quantifier=shared).quantifier is shared
    assert registry.make_method("QuAccnxn_CC", H, quantifier="kdey").quantifier == "kdey"
    assert registry.make_method("Q-COT", H, quantifier="sld").quantifier == "sld"
    # None keeps the registered one
    assert registry.make_method("LEAP_SLD", H, quantifier=None).quantifier == "sld"
    assert registry.make_method("COT", H).quantifier is None
    # a method without a quantifier refuses one (the override check names it)
    with pytest.raises(ValueError, match=re.escape("method 'Naive' (Naive) has no parameter(s) ['quantifier']; "
                                                   "its parameters are ['classifier', 'measure', 'random_state']")):
        registry.make_method("Naive", H, quantifier="acc")


def test_make_method_passes_solver_to_the_leap_family_only():
    for name in ("S-LEAP_ACC", "LEAP_KDEy", "O-LEAP_oracle"):
        assert registry.make_method(name, H, solver="osqp").solver == "osqp", name
        assert registry.make_method(name, H).solver == "active_set", name
    for name in ("Naive", "ATC", "CBPE", "COT", "QuAcc1xn2_CC", "QuAcc(KDEy)"):
        est = registry.make_method(name, H, solver="osqp")  # ignored, not refused
        assert "solver" not in est.get_params(deep=False), name
        assert not hasattr(est, "solver"), name


def test_make_method_overrides_constructor_parameters():
    est = registry.make_method("DoC", H, n_val_samples=20, clip=False)
    assert (est.n_val_samples, est.clip) == (20, False)
    assert registry.make_method("ATC", H, score="neg_entropy").score == "neg_entropy"  # a registered one
    assert registry.make_method("CBPE", H, measure="f1").measure == "f1"  # a default one
    est = registry.make_method("LEAP_CC", H, random_state=3, quantifier="acc", solver="slsqp", measure="f1")
    assert (est.random_state, est.quantifier, est.solver, est.measure) == (3, "acc", "slsqp", "f1")


def test_make_method_refuses_an_unknown_parameter_naming_it():
    msg = ("method 'DoC' (DoC) has no parameter(s) ['bogus', 'n_val']; its parameters are "
           "['classifier', 'clip', 'measure', 'n_val_samples', 'random_state', 'regress', 'regressor', "
           "'val_sample_size']")
    with pytest.raises(ValueError, match=re.escape(msg) + "$"):
        registry.make_method("DoC", H, n_val=5, bogus=1, clip=False)
    # a nested parameter of the classifier is not a parameter of the method
    with pytest.raises(ValueError, match=re.escape("method 'RCA*' (RCAStar) has no parameter(s) ['classifier__C']")):
        registry.make_method("rca*", H, classifier__C=2.0)
    with pytest.raises(ValueError, match=re.escape("unknown method 'nope'")):
        registry.make_method("nope", H)


def test_make_method_leaves_the_registered_spec_alone():
    spec = registry.get("LEAP_ACC")
    registry.make_method("LEAP_ACC", H, random_state=4, quantifier="cc", solver="osqp", measure="f1")
    assert spec.params == {"quantifier": "acc"}
    est = registry.make_method("LEAP_ACC", H)
    assert (est.quantifier, est.solver, est.measure, est.random_state) == ("acc", "active_set", "accuracy", 0)
    spec.make(H, quantifier="sld", measure="f1")
    assert spec.params == {"quantifier": "acc"}
    assert registry.get("LEAP_ACC") is spec and spec == MethodSpec("LEAP_ACC", LEAP, "leap", {"quantifier": "acc"})

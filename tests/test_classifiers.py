"""The classifiers h of the LEAP paper by name (capshift.classifiers): each name builds the documented
scikit-learn estimator with its documented hyper-parameters (Sect. 5.4: scikit-learn defaults, k = 10 for kNN,
an RBF SVM with Platt posteriors, an MLP with hidden layers (100, 15)) seeded with ``random_state``, and the exact
error for an unknown name (the argument named, the choices listed).

Nothing here fits a model: the estimators are compared unfitted, by their parameters."""
from __future__ import annotations

import re

import pytest
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC

from capshift.classifiers import CLASSIFIERS, check_classifier_name, make_classifier

CHOICES = "['knn', 'lr', 'mlp', 'rf', 'svm']"


# ------------------------------------------------------------------------------------------- the estimators
def _params(est):
    """The estimator's parameters, nested ones included (the SVM inside the calibrator)."""
    return {k: repr(v) for k, v in est.get_params(deep=True).items()}


def test_the_names_of_the_paper():
    assert list(CLASSIFIERS) == ["lr", "knn", "svm", "mlp", "rf"]


@pytest.mark.parametrize("name, expected", [
    ("lr", lambda s: LogisticRegression(random_state=s)),
    ("knn", lambda s: KNeighborsClassifier(n_neighbors=10)),
    ("svm", lambda s: CalibratedClassifierCV(SVC(kernel="rbf", random_state=s), ensemble=False)),
    ("mlp", lambda s: MLPClassifier(hidden_layer_sizes=(100, 15), random_state=s)),
    ("rf", lambda s: RandomForestClassifier(random_state=s)),
])
@pytest.mark.parametrize("seed", [0, 7])
def test_each_name_builds_the_documented_estimator(name, expected, seed):
    est = make_classifier(name, seed)
    want = expected(seed)
    assert type(est) is type(want)
    assert _params(est) == _params(want)
    assert _params(clone(est)) == _params(want)  # a plain scikit-learn estimator: clones to itself


def test_documented_hyper_parameters():
    assert make_classifier("knn").n_neighbors == 10
    svm = make_classifier("svm")
    assert svm.ensemble is False and svm.method == "sigmoid" and svm.cv is None  # Platt, 5-fold (cv=None)
    assert type(svm.estimator) is SVC and svm.estimator.kernel == "rbf"
    assert make_classifier("mlp").hidden_layer_sizes == (100, 15)
    lr = make_classifier("lr")
    assert (lr.C, lr.max_iter) == (1.0, 100)
    assert make_classifier("rf").n_estimators == 100


def test_random_state_reaches_the_estimator():
    assert make_classifier("lr").random_state == 0  # the default seed
    assert make_classifier("lr", 3).random_state == 3
    assert make_classifier("lr", random_state=None).random_state is None
    assert make_classifier("svm", 5).estimator.random_state == 5
    assert make_classifier("svm").estimator.random_state == 0
    assert make_classifier("mlp", 9).random_state == 9
    assert make_classifier("mlp").random_state == 0
    assert make_classifier("rf", 2).random_state == 2
    assert make_classifier("rf").random_state == 0
    assert "random_state" not in make_classifier("knn", 4).get_params()  # kNN has no seed: ignored


def test_a_new_estimator_each_call():
    a, b = make_classifier("lr", 1), make_classifier("lr", 1)
    assert a is not b and _params(a) == _params(b)


# ------------------------------------------------------------------------------------------- the name's check
@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_check_classifier_name_returns_a_valid_name(name):
    assert check_classifier_name(name) == name
    assert check_classifier_name(name, "classifiers") == name


@pytest.mark.parametrize("name", ["LR", "nope", "", " lr"])
def test_check_classifier_name_refuses_an_unknown_name(name):
    msg = f"unknown classifier {name!r}; choose one of {CHOICES}"
    with pytest.raises(ValueError, match=re.escape(msg) + "$"):
        check_classifier_name(name)
    with pytest.raises(ValueError, match=re.escape(msg) + "$"):
        make_classifier(name, 0)


@pytest.mark.parametrize("name", [None, 3, ["lr"], ("lr",), {"lr": 1}])
def test_check_classifier_name_refuses_what_is_not_a_str(name):
    msg = f"unknown classifier {name!r}; choose one of {CHOICES}"
    with pytest.raises(ValueError, match=re.escape(msg) + "$"):
        check_classifier_name(name)


def test_check_classifier_name_names_another_argument():
    msg = f"unknown classifier 'nope' in classifiers; choose one of {CHOICES}"
    with pytest.raises(ValueError, match=re.escape(msg) + "$"):
        check_classifier_name("nope", "classifiers")
    with pytest.raises(ValueError, match=re.escape(f"unknown classifier ['lr'] in grid.classifier; choose one of {CHOICES}")):
        check_classifier_name(["lr"], arg="grid.classifier")
    # the default argument, spelt out, is not repeated in the message
    with pytest.raises(ValueError, match=re.escape(f"unknown classifier 'x'; choose one of {CHOICES}") + "$"):
        check_classifier_name("x", arg="classifier")

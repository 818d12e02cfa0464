"""The classifiers h of the LEAP paper (Sect. 5.4), by name: the models whose accuracy the CAP methods predict.

:data:`CLASSIFIERS` maps the paper's names to unfitted scikit-learn estimators seeded with ``random_state``;
:func:`make_classifier` builds one. Every experiment of the book (the LEAP tables, the QuAcc protocol, the
dataset-shift CAP runs, the intervals' study) trains h through it, so "lr" means the same model everywhere.
"""
from __future__ import annotations

from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC

__all__ = ["check_classifier_name", "CLASSIFIERS", "make_classifier"]

#: Classifier names of the LEAP paper (Sect. 5.4): scikit-learn defaults, k = 10 for kNN, RBF SVM
#: with Platt posteriors, MLP with hidden layers (100, 15) as the paper states. The SVM's Platt scaling is
#: scikit-learn's replacement for the deprecated ``SVC(probability=True)`` (deprecated in 1.9, removed in 1.11):
#: ``CalibratedClassifierCV(SVC(), ensemble=False)``, a sigmoid fitted on 5-fold cross-validated decision values,
#: as libsvm's own Platt scaling; h's predictions are the argmax of those posteriors.
CLASSIFIERS = {
    "lr": lambda seed: LogisticRegression(random_state=seed),
    "knn": lambda seed: KNeighborsClassifier(n_neighbors=10),
    "svm": lambda seed: CalibratedClassifierCV(SVC(kernel="rbf", random_state=seed), ensemble=False),
    "mlp": lambda seed: MLPClassifier(hidden_layer_sizes=(100, 15), random_state=seed),
    "rf": lambda seed: RandomForestClassifier(random_state=seed),
}


def check_classifier_name(name, arg: str = "classifier") -> str:
    """``name`` if it is a name of :data:`CLASSIFIERS`; ValueError naming ``arg`` and the choices otherwise (the
    one check of a classifier's name: the runner, the grid and the CLI call it)."""
    if not isinstance(name, str) or name not in CLASSIFIERS:
        where = "" if arg == "classifier" else f" in {arg}"
        raise ValueError(f"unknown classifier {name!r}{where}; choose one of {sorted(CLASSIFIERS)}")
    return name


def make_classifier(name: str, random_state=0):
    """An unfitted classifier by the paper's name (:data:`CLASSIFIERS`); ValueError for unknown names."""
    return CLASSIFIERS[check_classifier_name(name)](random_state)

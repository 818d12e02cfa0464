"""The dataset-shift experiments: quantifiers and CAP methods under the protocols of :mod:`capshift.shift`.

González, Moreo & Sebastiani (DMKD 2024), Sect. 5: each trial of a binary shift protocol (prior probability,
global/local covariate, concept shift; Algorithms 1-4) gives a training sample and test samples.
:func:`run_shift_quantifiers` trains the paper's six quantifiers (:data:`SHIFT_QUANTIFIERS`, QuaPy on logistic
regression, optionally with the paper's quantification-oriented model selection) on the training sample and
measures their AE on the test samples (its Tables 4-7 and Figures 6-12); :func:`run_shift_cap` goes beyond the
paper and runs registered CAP methods (:data:`SHIFT_CAP_METHODS`) under the same protocols: h is trained on part
of the training sample, the methods are fitted on the rest (V), and they predict h's accuracy on every test
sample. Book chapter ``dataset_shift``; the significance marks are :func:`capshift.significance.wilcoxon_marks`.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
import quapy as qp
from joblib import Parallel, delayed
from quapy.method.aggregative import ACC, CC, EMQ, PACC, PCC, DyS
from quapy.protocol import APP
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from tqdm import tqdm

from . import evaluation, registry
from .validation import check_fraction
from .classifiers import make_classifier
from .tables import get_measure

__all__ = ["SHIFT_QUANTIFIERS", "SHIFT_CAP_METHODS", "SHIFT_GRID", "make_shift_quantifier", "run_shift_quantifiers",
           "run_shift_cap"]

#: The dataset-shift paper's six quantifiers (its Sect. 3.3), all on logistic regression (Sect. 5.2).
SHIFT_QUANTIFIERS = ("CC", "ACC", "PCC", "PACC", "DyS", "SLD")
#: CAP methods run under every shift by :func:`run_shift_cap` by default (beyond the paper).
SHIFT_CAP_METHODS = ("Naive", "ATC", "DoC", "LEAP_ACC", "LEAP_KDEy", "S-LEAP_KDEy", "O-LEAP_KDEy", "QuAccnxn_SLD")
#: The paper's model-selection grid (Sect. 5.2; its text prints C in {0.1, 1, 10, 100, 100}, the authors' code
#: explores 0.01 ... 1000): inverse regularisation C and class weighting.
SHIFT_GRID = {"C": [0.01, 0.1, 1, 10, 100, 1000], "class_weight": ["balanced", None]}


def make_shift_quantifier(name: str, random_state: int = 0):
    """An unfitted QuaPy quantifier of the dataset-shift paper, on ``LogisticRegression(max_iter=1000)``.

    CC, PCC; ACC and PACC with tpr/fpr estimated by 5-fold cross-validation; DyS with 10 bins and the
    Topsøe divergence (Maletzke et al. 2019's best setting, the paper's choice); SLD (QuaPy's ``EMQ``) on
    the classifier calibrated by Platt scaling (``CalibratedClassifierCV(method="sigmoid")``, Sect. 5.2:
    calibration only for SLD). Raises ValueError for other names.
    """
    lr = LogisticRegression(max_iter=1000, random_state=random_state)
    makers = {"CC": lambda: CC(lr), "ACC": lambda: ACC(lr, val_split=5), "PCC": lambda: PCC(lr),
              "PACC": lambda: PACC(lr, val_split=5), "DyS": lambda: DyS(lr, val_split=5, n_bins=10, divergence="topsoe"),
              "SLD": lambda: EMQ(CalibratedClassifierCV(lr, method="sigmoid", cv=5))}
    if name not in makers:
        raise ValueError(f"unknown quantifier {name!r}; choose one of {list(makers)}")
    return makers[name]()


def _fit_shift_quantifier(name, train, seed, model_selection, sample_size):
    """Fit on the training sample; with ``model_selection``, QuaPy's GridSearchQ over :data:`SHIFT_GRID` on a
    stratified 40% held-out part, by MAE over APP samples (the paper's Sect. 5.2), then refit on all of it."""
    q = make_shift_quantifier(name, seed)
    if not model_selection:
        return q.fit(*train.Xy)
    prefix = "classifier__estimator__" if name == "SLD" else "classifier__"
    grid = {prefix + k: v for k, v in SHIFT_GRID.items()}
    tr, va = train.split_stratified(train_prop=0.6, random_state=seed)
    protocol = APP(va, sample_size=min(sample_size, len(va)), n_prevalences=11, repeats=5, random_state=seed)
    return qp.model_selection.GridSearchQ(q, grid, protocol, error="mae", refit=True).fit(*tr.Xy).best_model()


def _shift_rows(trial, blocks) -> pd.DataFrame:
    """Stack ``{name: (dict of per-sample arrays)}`` blocks under the trial's parameter rows."""
    frames = []
    for name, cols in blocks.items():
        df = trial.test.parameters.copy()
        df.insert(0, "method", name)
        for k, v in cols.items():
            df[k] = v
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _quantify_trial(protocol, t, quantifiers, model_selection):
    trial = protocol.trial(t)
    pool = trial.test.data.instances
    true = np.array([trial.test.labels(k).mean() for k in range(trial.test.total())])
    blocks = {}
    for name in quantifiers:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = _fit_shift_quantifier(name, trial.train, protocol.random_state, model_selection, protocol.test_size)
            fit_s = time.perf_counter() - t0
            pre = q.classify(pool)  # the whole test pool once; each sample aggregates its slice
            est = np.array([q.aggregate(pre[idx])[1] for idx in trial.test.indices])
        blocks[name] = {"true": true, "estimate": est, "ae": np.abs(est - true), "fit_seconds": fit_s}
    return _shift_rows(trial, blocks)


def run_shift_quantifiers(protocol, quantifiers=SHIFT_QUANTIFIERS, model_selection: bool = False, n_jobs: int = 1,
                          progress: bool = False) -> pd.DataFrame:
    """The dataset-shift paper's experiment: quantifiers trained on each trial's training sample, evaluated on
    its test samples (Algorithms 1-4; MAE by degree of shift is Tables 4-7 and Figures 6-12).

    ``protocol``: a binary family of :mod:`capshift.shift`. ``quantifiers``: names of
    :data:`SHIFT_QUANTIFIERS`. ``model_selection``: the paper's quantification-oriented grid search (slow;
    off by default). ``n_jobs``: trials in parallel (joblib). Returns a tidy DataFrame, one row per
    (quantifier, test sample): ``method``, the sample's ``parameters`` (trial, repeat, training and test
    conditions, ``degree``, ``size``, ...), ``true`` (the sample's positive prevalence), ``estimate``,
    ``ae`` and ``fit_seconds``. Raises ValueError for a multiclass protocol or an unknown quantifier.
    """
    if getattr(protocol, "n_classes_", 2) != 2:
        raise ValueError("run_shift_quantifiers runs the paper's binary quantifiers: pass a binary protocol")
    if isinstance(quantifiers, str):
        quantifiers = (quantifiers,)
    for name in quantifiers:
        make_shift_quantifier(name)  # unknown names fail before any work
    trials = tqdm(range(protocol.n_trials), desc=type(protocol).__name__, disable=not progress)
    frames = Parallel(n_jobs=n_jobs)(delayed(_quantify_trial)(protocol, t, tuple(quantifiers), model_selection)
                                     for t in trials)
    return pd.concat(frames, ignore_index=True)


def _cap_trial(protocol, t, methods, classifier, measure, val_prop):
    """One trial of a shift family as a :class:`capshift.evaluation.RunContext` (h trained on part of the trial's
    training sample, V the rest, U the test pool, the samples' labels under the test condition), each method
    evaluated on it by the one evaluation path."""
    seed = protocol.random_state
    trial = protocol.trial(t)
    split, idx, labels = evaluation.trial_split(trial, val_prop, seed, type(protocol).__name__)
    h = evaluation.train_classifier(classifier, seed, split.X_L, split.y_L)
    ctx = evaluation.context(split, h, idx, classifier, seed, labels=labels)
    blocks = {}
    for name in methods:
        if not registry.make_method(name, h).supports(measure):  # declared by the class: skip before any fitting
            continue
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = evaluation.method_frame(ctx, name, registry.get(name), [measure])
        blocks[name] = {"true": frame["true"].to_numpy(), "predicted": frame["predicted"].to_numpy(),
                        "ae": frame["ae"].to_numpy(), "seconds": (time.perf_counter() - t0) / ctx.k}
    return _shift_rows(trial, blocks)


def run_shift_cap(protocol, methods=SHIFT_CAP_METHODS, classifier: str = "lr", measure: str = "accuracy",
                  val_prop: float = 0.5, n_jobs: int = 1, progress: bool = False) -> pd.DataFrame:
    """CAP methods under a dataset-shift protocol (beyond the dataset-shift paper, which studies quantifiers).

    For each trial the training sample is split, stratified, into a part that trains the classifier h
    (``classifier``, by the LEAP paper's names) and a validation set V (``val_prop`` of it) on which every
    CAP method is fitted; each method then predicts ``measure`` of h on every test sample, whose true value
    uses the test labels (under the test concept for :class:`capshift.shift.ConceptShift`). Seeds come from
    ``protocol.random_state``. Returns a tidy DataFrame, one row per (method, test sample): ``method``, the
    sample's ``parameters``, ``true``, ``predicted``, ``ae`` and ``seconds`` (fit and prediction per sample).
    Methods that do not estimate ``measure`` are left out.
    """
    if getattr(protocol, "n_classes_", 2) != 2:
        raise ValueError("run_shift_cap expects a binary protocol")
    check_fraction(val_prop, "val_prop")
    if isinstance(methods, str):
        methods = (methods,)
    make_classifier(classifier)
    get_measure(measure)
    for name in methods:
        registry.get(name)  # unknown names fail before any work
    trials = tqdm(range(protocol.n_trials), desc=type(protocol).__name__, disable=not progress)
    frames = Parallel(n_jobs=n_jobs)(delayed(_cap_trial)(protocol, t, tuple(methods), classifier, measure, val_prop)
                                     for t in trials)
    return pd.concat(frames, ignore_index=True)

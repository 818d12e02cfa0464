"""One evaluation path: a prepared setting (h trained on L, the validation set V, the test samples and their true
tables), and any registered CAP method evaluated on it into the one tidy frame.

Every study evaluates CAP methods the same way (LEAP 2025, Sect. 5.2): train the classifier h on L, fit each
method on V, let it predict a measure of h on test samples drawn from a pool U, and compare with the true
measure (absolute error, AE). This module is that sequence, once:

- :func:`train_classifier`: h, a name of :data:`capshift.classifiers.CLASSIFIERS` trained with a seed;
- :func:`context`: a :class:`RunContext` from a split, a fitted h and the samples' indices into U (the true
  tables, prevalences and amount of shift are computed here, h is applied to U once);
- :func:`trial_split`: a trial of a dataset-shift family (:mod:`capshift.shift`) as a split, its samples and their
  labels, for :func:`context`;
- :func:`prepare`: the same from a dataset name, a classifier name and a registered PPS protocol
  (:mod:`capshift.protocols`), and the quantifiers the methods share, fitted once;
- :func:`shared_quantifier`: the one rule for sharing a quantifier (a method on the shared ``(gamma, q-hat)``
  path, or one reading shared prevalence estimates, whose quantifier is named by a string of
  :data:`capshift.quantifiers.QUANTIFIERS`);
- :func:`contexts`: the contexts of any registered protocol, PPS (one) or a dataset-shift family (one per trial);
- :func:`fit_method`, :func:`method_frame` (one method -> the tidy rows of :data:`RESULT_COLUMNS`),
  :func:`evaluate` (the same over several contexts) and :func:`estimated_tables` (its whole contingency tables).

The studies call it: :mod:`capshift.experiment` (the PPS runner and :mod:`capshift.grid`, the QuAcc protocol,
the configuration study), :mod:`capshift.uncertainty`, :mod:`capshift.efficiency`, :mod:`capshift.selection` and
:mod:`capshift.shift_experiments` (whose trials of a dataset-shift family become contexts through
:func:`context`). Methods are made by :func:`capshift.registry.make_method`.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from tqdm import tqdm

from . import datasets, protocols, registry
from .classifiers import make_classifier
from .quantifiers import COVARIATE_QUANTIFIERS, QUANTIFIERS, Quantifier, digest
from .tables import contingency_table, get_measure

__all__ = ["RESULT_COLUMNS", "RunContext", "train_classifier", "context", "trial_split", "prepare", "shared_quantifier",
           "share_quantifiers", "contexts", "evaluate", "fit_method", "method_frame", "require_tables", "estimated_tables"]

#: Columns of the tidy frame (:func:`method_frame`, :func:`capshift.experiment.run_experiment`), in order.
RESULT_COLUMNS = ["dataset", "classifier", "method", "sample", "true_prev", "shift", "measure", "true",
                  "predicted", "ae", "path", "seconds", "q_ae"]


def train_classifier(classifier: str, seed: int, X, y):
    """h: the classifier named ``classifier`` (:data:`capshift.classifiers.CLASSIFIERS`) with ``random_state=seed``,
    trained on ``(X, y)`` (scikit-learn's ConvergenceWarning silenced: the paper's settings, e.g. the MLP's
    iterations, are kept as they are). Raises ValueError for an unknown name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return make_classifier(classifier, seed).fit(X, y)


class RunContext:
    """What every method evaluated on one setting shares (made by :func:`context` or :func:`prepare`).

    Attributes: ``split`` (:class:`capshift.datasets.Split`: L, V and the pool U), ``classifier`` (name), ``seed``,
    ``h`` (fitted on L), ``idx`` (k index arrays into U), ``k``, ``labels`` (the k samples' true labels: U's, or
    others, e.g. under concept shift), ``true_tables`` (float (k, n, n), rows true class, each sums to 1),
    ``true_prev`` and ``gamma`` (float (k, n): true and predicted class fractions), ``shift`` (float (k,), L1
    distance to the reference prevalence, V's by default), ``quantifiers`` / ``q_hat`` / ``q_secs`` (per shared
    quantifier name: the fitted quantifier, its (k, n) estimates and per-sample seconds), ``post_U`` (h's
    posteriors on U or None), ``parameters`` (a DataFrame describing the samples row by row, or None)."""

    def samples(self) -> list:
        """The k test samples, ``split.X_U[idx[s]]``."""
        return [self.split.X_U[i] for i in self.idx]

    def posteriors(self) -> list | None:
        """h's posteriors on each test sample (sliced from one ``predict_proba`` of U), or None."""
        return None if self.post_U is None else [self.post_U[i] for i in self.idx]


def context(split, h, idx, classifier: str = "", seed: int = 0, labels=None, reference=None,
            parameters=None) -> RunContext:
    """A :class:`RunContext` for a fitted h and test samples given by their indices into ``split``'s U.

    ``labels``: the samples' true labels (default ``split.y_U[idx[s]]``); ``reference``: the prevalence the
    amount of shift is measured from (default V's); ``parameters``: an optional DataFrame of k rows describing
    the samples (a shift protocol's conditions). h is applied to U once (``predict``, and ``predict_proba``
    when it has one).

    ``split``: a :class:`capshift.datasets.Split` with n classes; ``h``: fitted on its L; ``idx``: k int arrays of
    row positions into U (one per sample, any lengths). The context's arrays: ``true_tables`` float (k, n, n)
    (C[i, j]: fraction of the sample of true class i predicted as j), ``true_prev`` and ``gamma`` float (k, n)
    (true and predicted prevalences), ``shift`` float (k,) (L1 distance from ``reference``), ``post_U`` float
    (|U|, n) or None. Raises ValueError if ``labels`` or ``parameters`` do not have one entry per sample."""
    n = split.n_classes
    k = len(idx)
    labels = [split.y_U[i] for i in idx] if labels is None else list(labels)
    if len(labels) != k or (parameters is not None and len(parameters) != k):
        raise ValueError(f"labels and parameters must describe the {k} samples one by one")
    pred_U = np.asarray(h.predict(split.X_U))
    true_tables = np.stack([contingency_table(y, pred_U[i], n) for y, i in zip(labels, idx)])
    true_prev = true_tables.sum(axis=2)
    ref = np.bincount(split.y_V, minlength=n) / len(split.y_V) if reference is None else np.asarray(reference)
    ctx = RunContext()
    ctx.__dict__.update(split=split, classifier=classifier, seed=seed, h=h, idx=idx, k=k, labels=labels,
                        true_tables=true_tables, true_prev=true_prev, gamma=true_tables.sum(axis=1),
                        shift=np.abs(true_prev - ref).sum(axis=1), quantifiers={}, q_hat={}, q_secs={},
                        post_U=h.predict_proba(split.X_U) if hasattr(h, "predict_proba") else None,
                        parameters=parameters)
    return ctx


def trial_split(trial, val_prop: float, seed: int, name: str = "trial"):
    """A dataset-shift trial (:class:`capshift.shift.Trial`) as an L / V / U split: its training sample divided,
    stratified by label and seeded, into L and V (``val_prop`` of it), U its test pool. Returns ``(split, idx,
    labels)``: a :class:`capshift.datasets.Split` (binary, named ``name``), the samples' indices into U (a list of
    int arrays) and their true labels under the test condition (a list of int arrays of the same lengths; they
    differ from the pool's under concept shift). ``val_prop`` in (0, 1); ``seed`` an int. Raises ValueError (from
    scikit-learn's ``train_test_split``) when the training sample has a class with fewer than 2 items."""
    X, y = trial.train.Xy
    tr, va = train_test_split(np.arange(len(y)), test_size=val_prop, stratify=y, random_state=seed)
    pool = trial.test.data
    split = datasets.Split(name, X[tr], y[tr], X[va], y[va], np.asarray(pool.instances), np.asarray(pool.labels),
                           np.arange(2), 2)
    labels = [np.asarray(trial.test.labels(k)) for k in range(trial.test.total())]
    return split, list(trial.test.indices), labels


def shared_quantifier(spec) -> str | None:
    """The quantifier a method shares with the others of its run, or None: the method reads only a quantifier's
    estimate of each sample's prevalence, on the shared ``(gamma, q-hat)`` path (its class declares
    ``shared_prevalence_path``: the LEAP family) or with h's posteriors (``shared_prevalence_estimates``: Q-COT),
    and names its quantifier by a string of :data:`capshift.quantifiers.QUANTIFIERS`. Such a method would fit that
    quantifier on V with h and the run's seed, as :func:`share_quantifiers` does: the fitted quantifier and its
    estimates are the method's own. The one rule every study follows."""
    q = spec.params.get("quantifier")
    reads = spec.cls.shared_prevalence_path or spec.cls.shared_prevalence_estimates
    return q if reads and isinstance(q, str) and q in QUANTIFIERS else None


def share_quantifiers(ctx: RunContext, specs, progress: bool = False, store=None) -> None:
    """Fit, once per quantifier name, the quantifiers that ``specs`` (:class:`capshift.registry.MethodSpec`) share
    (:func:`shared_quantifier`) on V with h and ``ctx.seed``, and their estimate on every sample (with its time);
    kept in ``ctx.quantifiers``, ``ctx.q_hat``, ``ctx.q_secs``. Names already fitted are not refitted.

    ``store``: a mutable mapping (a dict, or :mod:`capshift.grid`'s store on disk) or None. A quantifier that reads
    nothing of h (:data:`capshift.quantifiers.COVARIATE_QUANTIFIERS`: KDEy's surrogate is trained on the covariates)
    is the same for every classifier of a dataset: with a store it is computed once per (quantifier, seed, V, U,
    samples), kept there as ``(quantifier, estimates, seconds)`` under a digest of those, and read back by the
    contexts of the other classifiers (the numbers of a fresh fit, ==; the seconds those of the fit that was
    timed)."""
    split, idx, n = ctx.split, ctx.idx, ctx.split.n_classes
    for qname in sorted({q for q in map(shared_quantifier, specs) if q is not None} - set(ctx.quantifiers)):
        by_x = qname in COVARIATE_QUANTIFIERS
        args = (qname, None if by_x else ctx.h, ctx.seed, split.X_V, split.y_V, n, split.X_U, idx,
                ctx.true_prev if qname == "oracle" else None)
        if store is None or not by_x:
            out = _quantify_samples(*args, progress=progress, label=split.name)
        else:
            key = digest(qname, ctx.seed, split.X_V, split.y_V, n, split.X_U, *idx, args[-1])
            if key not in store:
                store[key] = _quantify_samples(*args, progress=progress, label=split.name)
            out = store[key]
        ctx.quantifiers[qname], ctx.q_hat[qname], ctx.q_secs[qname] = out


def _quantify_samples(qname, h, seed, X_V, y_V, n, X_U, idx, true_prev, progress, label):
    """``(quantifier, estimates (k, n), seconds (k,))``: the quantifier ``qname`` fitted on V with classifier ``h``
    and ``seed``, and its estimate on each sample ``X_U[idx[s]]`` (``true_prev[s]`` for the oracle); ``label`` (the
    dataset's name) heads the progress bar."""
    quant = Quantifier(qname, classifier=h, random_state=seed).fit(X_V, y_V, n)
    P_U = quant.classify(X_U)
    est, secs = np.empty((len(idx), n)), np.empty(len(idx))
    for s in tqdm(range(len(idx)), desc=f"{label}: quantify ({qname})", disable=not progress, leave=False):
        t0 = time.perf_counter()
        est[s] = quant.aggregate(None if P_U is None else P_U[idx[s]],
                                 prevalence=None if true_prev is None else true_prev[s])
        secs[s] = time.perf_counter() - t0
    return quant, est, secs


def prepare(dataset, classifier, specs, protocol, n_samples, sample_size, seed, progress=False,
            store=None) -> RunContext:
    """Everything :func:`method_frame` needs that does not depend on the method, for a PPS protocol: the split
    (``dataset``: a name of :func:`capshift.datasets.names`, loaded with ``seed``, or a Split), h trained on L,
    the protocol's samples of U (``protocol``: a name of :func:`capshift.protocols.names` or a Protocol) and the
    quantifiers ``specs`` share. Arguments as :func:`capshift.experiment.run_experiment` (validate them with
    :func:`capshift.experiment.check_run_args` first); ``store``: as :func:`share_quantifiers`. Raises ValueError if
    ``sample_size`` is smaller than the number of classes."""
    split = datasets.load(dataset, seed=seed) if isinstance(dataset, str) else dataset
    n = split.n_classes
    if sample_size < n:
        raise ValueError(f"sample_size={sample_size} is smaller than the {n} classes of {split.name!r}")
    h = train_classifier(classifier, seed, split.X_L, split.y_L)
    idx = protocols.make_protocol(protocol).indices(split.y_U, sample_size, n_samples, seed, n_classes=n)
    ctx = context(split, h, idx, classifier, seed)
    share_quantifiers(ctx, specs, progress, store)
    return ctx


def contexts(dataset, classifier, specs, protocol, n_samples, sample_size, seed, progress=False,
             store=None) -> list:
    """The contexts of one (dataset, classifier, protocol): one for a PPS protocol (:func:`prepare`), one per trial
    for a dataset-shift family (:class:`capshift.protocols.ShiftFamily`: its training sample divided into L and V by
    :func:`trial_split`, h trained on L, the trial's test samples with their labels and parameters). The quantifiers
    ``specs`` share are fitted once per context. Returns a list of :class:`RunContext`. Raises ValueError as
    :func:`prepare`, or for a shift family on a dataset that is not a shift dataset."""
    proto = protocols.make_protocol(protocol)
    if proto.kind != "shift":
        return [prepare(dataset, classifier, specs, proto, n_samples, sample_size, seed, progress, store)]
    family = proto.family(dataset, sample_size, n_samples, seed)
    out = []
    for t in tqdm(range(family.n_trials), desc=f"{dataset}: {proto.name} trials", disable=not progress, leave=False):
        trial = family.trial(t)
        split, idx, labels = trial_split(trial, proto.val_prop, seed, dataset)
        h = train_classifier(classifier, seed, split.X_L, split.y_L)
        params = trial.test.parameters.reset_index(drop=True).rename(columns={"sample": "condition_sample"})
        ctx = context(split, h, idx, classifier, seed, labels=labels, parameters=params)
        share_quantifiers(ctx, specs, store=store)
        out.append(ctx)
    return out


def evaluate(ctxs, name, spec, measures, solver=None) -> pd.DataFrame:
    """One method on every context of :func:`contexts`: :func:`method_frame` on each, concatenated. With a shift
    family's trials, ``sample`` numbers the samples across the trials (so that paired tests pair the same sample)
    and each row carries its sample's protocol parameters after :data:`RESULT_COLUMNS` (``trial``, ``repeat``, the
    training and test conditions, ``degree``, ``size``, ...; the family's ``sample`` column is
    ``condition_sample``). A single context without parameters gives :func:`method_frame`'s frame unchanged."""
    frames, offset = [], 0
    for ctx in ctxs:
        frame = method_frame(ctx, name, spec, measures, solver)
        if ctx.parameters is not None:
            extra = ctx.parameters.iloc[frame["sample"].to_numpy()].reset_index(drop=True)
            frame = pd.concat([frame, extra], axis=1)
            frame["sample"] += offset
        offset += ctx.k
        frames.append(frame)
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def fit_method(ctx: RunContext, name: str, spec=None, solver=None):
    """Method ``name`` (registered; ``spec`` its :class:`capshift.registry.MethodSpec`, looked up if None) made
    around ``ctx.h`` with ``ctx.seed``, sharing the context's quantifier (:func:`share_quantifiers` is called for
    it), and fitted on V. ``solver``: the LEAP family's (None: the method's default). Returns ``(estimator,
    quantifier name or None)``; the estimator's errors propagate."""
    spec = registry.get(name) if spec is None else spec
    qname = shared_quantifier(spec)
    if qname is not None and qname not in ctx.quantifiers:
        share_quantifiers(ctx, [spec])
    est = registry.make_method(name, ctx.h, quantifier=ctx.quantifiers.get(qname), solver=solver,
                               random_state=ctx.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(ctx.split.X_V, ctx.split.y_V)
    return est, qname


def method_frame(ctx: RunContext, name, spec, measures, solver=None) -> pd.DataFrame:
    """The tidy rows of one method on a context: fit on V (:func:`fit_method`), predict every sample.

    Methods on the shared path get ``(gamma, q-hat)`` through ``tables_from_prevalences``; methods reading shared
    prevalence estimates (``shared_prevalence_estimates``, with a shared quantifier: :func:`shared_quantifier`) get
    h's posteriors on each sample and q-hat through ``measures_from_prevalences``; the others are evaluated through
    ``predict_measures`` with h's posteriors on each sample (sliced from one ``predict_proba`` of U). A measure the
    method does not support gets no rows. Returns a DataFrame with :data:`RESULT_COLUMNS`: ``seconds`` is the
    per-sample prediction time (including the shared quantifier's share), ``q_ae`` the quantification error of the
    method's shared quantifier (mean over classes of |q-hat_i - q_i|; NaN without one, 0 for the oracle)."""
    split, idx, k = ctx.split, ctx.idx, ctx.k
    spec = registry.get(name) if spec is None else spec
    est, qname = fit_method(ctx, name, spec, solver)
    if spec.cls.shared_prevalence_path:  # the shared (gamma, q-hat) path
        t0 = time.perf_counter()
        q_hat = ctx.q_hat.get(qname, ctx.true_prev)
        tables = est.tables_from_prevalences(ctx.gamma, q_hat)
        secs = (time.perf_counter() - t0) / k + ctx.q_secs.get(qname, 0.0)
        q_ae = np.abs(q_hat - ctx.true_prev).mean(axis=1) if qname is not None else np.full(k, np.nan)
        predictions = {m: get_measure(m)(tables) for m in measures}
    elif qname is not None:  # shared prevalence estimates (shared_prevalence_estimates) with h's posteriors
        t0 = time.perf_counter()
        q_hat = ctx.q_hat[qname]
        predictions = est.measures_from_prevalences(ctx.posteriors(), q_hat, measures)
        secs = (time.perf_counter() - t0) / k + ctx.q_secs[qname]
        q_ae = np.abs(q_hat - ctx.true_prev).mean(axis=1)
    else:
        t0 = time.perf_counter()
        predictions = est.predict_measures(ctx.samples(), measures, prevalences=ctx.true_prev,
                                           posteriors=ctx.posteriors())
        secs = (time.perf_counter() - t0) / k
        q_ae = np.full(k, np.nan)
    secs = np.broadcast_to(secs, (k,))
    paths = getattr(est, "paths_", np.full(k, "", dtype=object))
    rows = []
    for m, pred_v in predictions.items():
        true_v = get_measure(m)(ctx.true_tables)
        for s in range(k):
            rows.append((split.name, ctx.classifier, name, s, tuple(np.round(ctx.true_prev[s], 6)),
                         float(ctx.shift[s]), m, float(true_v[s]), float(pred_v[s]),
                         float(abs(true_v[s] - pred_v[s])), str(paths[s]), float(secs[s]), float(q_ae[s])))
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def require_tables(name: str, spec=None):
    """The :class:`capshift.registry.MethodSpec` of method ``name`` if it estimates contingency tables; TypeError
    naming it if it estimates measures directly (``estimates_tables = False``, e.g. ATC, DoC)."""
    spec = registry.get(name) if spec is None else spec
    if not spec.cls.estimates_tables:
        raise TypeError(f"methods: {name!r} estimates measures directly, not contingency tables; run_tables "
                        "needs table methods (e.g. Naive, the LEAP family, CBPE, QuAcc); use run_experiment "
                        f"for {name!r}")
    return spec


def estimated_tables(ctx: RunContext, name, spec=None, solver=None) -> np.ndarray:
    """Method ``name``'s estimated contingency tables of the context's samples, float (k, n, n) (rows true class),
    the tables whose measures :func:`method_frame` reports. Raises TypeError for a method that estimates measures
    directly (``estimates_tables = False``)."""
    spec = require_tables(name, spec)
    est, qname = fit_method(ctx, name, spec, solver)
    if spec.cls.shared_prevalence_path:
        return est.tables_from_prevalences(ctx.gamma, ctx.q_hat.get(qname, ctx.true_prev))
    return est.predict_table_batch(ctx.samples(), prevalences=ctx.true_prev)

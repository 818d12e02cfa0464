"""The one evaluation path (capshift.evaluation): contexts for every kind of protocol, one rule for sharing a
quantifier, the shared (gamma, q-hat) path equal to each method's own prediction, samples numbered across a shift
family's trials."""
import itertools
import re
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).parent))
from _synthetic import gaussians  # noqa: E402
from _synthetic import split as _synthetic_split  # noqa: E402

from capshift import datasets, evaluation, protocols, registry  # noqa: E402
from capshift.baselines import COT, cot_accuracy  # noqa: E402
from capshift.classifiers import make_classifier  # noqa: E402
from capshift.quantifiers import Quantifier  # noqa: E402
from capshift.tables import contingency_table, get_measure  # noqa: E402


def test_one_rule_shares_the_quantifier_of_the_leap_family_and_q_cot_only():
    shared = {n: evaluation.shared_quantifier(registry.get(n)) for n in registry.names()}
    assert {n for n, q in shared.items() if q is not None} == set(registry.names("leap")) | {"Q-COT"}
    assert shared["Q-COT"] == "kdey" and shared["COT"] is None  # COT transports to V's prevalence: no quantifier
    assert shared["O-LEAP_KDEy"] == "kdey" and shared["LEAP_ACC"] == "acc" and shared["S-LEAP_oracle"] == "oracle"
    # a QuAcc variant names a quantifier too, but its table is not a function of (gamma, q-hat): not shared
    assert registry.get("QuAccnxn_SLD").params.get("quantifier") is not None and shared["QuAccnxn_SLD"] is None


def test_a_pps_protocol_has_one_context_the_runners_own():
    ctx = evaluation.prepare("haberman", "lr", [], "upp", 5, 40, 0)
    [same] = evaluation.contexts("haberman", "lr", [], "upp", 5, 40, 0)
    assert all(np.array_equal(a, b) for a, b in zip(ctx.idx, same.idx))
    assert np.array_equal(ctx.true_tables, same.true_tables) and same.parameters is None
    # the true tables are h's on each sample, rows the true class
    pred = ctx.h.predict(ctx.split.X_U)
    for s, i in enumerate(ctx.idx):
        assert np.array_equal(ctx.true_tables[s], contingency_table(ctx.split.y_U[i], pred[i], 2))
    assert np.allclose(ctx.shift, np.abs(ctx.true_prev - np.bincount(ctx.split.y_V) / len(ctx.split.y_V)).sum(1))


@pytest.fixture(scope="module")
def concept():
    proto = protocols.make_protocol("concept", repeats=1, train_size=400, train_cuts=[1.5, 8.5], test_cuts=[1.5, 8.5])
    ctxs = evaluation.contexts("marketing", "lr", [registry.get("LEAP_KDEy")], proto, 3, 50, 0)
    return proto, ctxs


def test_a_shift_family_has_one_context_per_trial_with_the_test_conditions_labels(concept):
    proto, ctxs = concept
    family = proto.family("marketing", 50, 3, 0)
    assert len(ctxs) == family.n_trials == 2
    for t, ctx in enumerate(ctxs):
        trial = family.trial(t)
        assert ctx.k == trial.test.total() == 2 * 3
        # the true tables use the labels under the test cut, not the pool's (which are under no cut at all)
        for s in range(ctx.k):
            assert ctx.true_prev[s, 1] == pytest.approx(trial.test.labels(s).mean())
        assert list(ctx.parameters["c_U"]) == list(trial.test.parameters["c_U"])
        # L and V: the training sample divided, stratified, V = val_prop of it
        assert len(ctx.split.y_V) == pytest.approx(proto.val_prop * 400, abs=1)
        assert abs(ctx.split.y_V.mean() - ctx.split.y_L.mean()) < 0.01
    # moving the cut changes the labels: the same pool item is positive at 1.5 and negative at 8.5
    p = ctxs[0].parameters
    assert ctxs[0].true_prev[p["c_U"] == 1.5, 1].mean() > 0.8 > 0.2 > ctxs[0].true_prev[p["c_U"] == 8.5, 1].mean()


def test_evaluate_numbers_the_samples_across_trials_and_keeps_their_conditions(concept):
    _, ctxs = concept
    df = evaluation.evaluate(ctxs, "Naive", registry.get("Naive"), ["accuracy"])
    assert list(df["sample"]) == list(range(12))
    assert list(df.columns[:len(evaluation.RESULT_COLUMNS)]) == evaluation.RESULT_COLUMNS
    assert list(df["trial"]) == [0] * 6 + [1] * 6 and {"c_L", "c_U", "degree", "condition_sample"} <= set(df.columns)
    # Naive predicts V's accuracy of h on every sample of a trial
    for t, ctx in enumerate(ctxs):
        val_acc = np.mean(ctx.h.predict(ctx.split.X_V) == ctx.split.y_V)
        assert np.allclose(df.loc[df["trial"] == t, "predicted"], val_acc)
        assert np.allclose(df.loc[df["trial"] == t, "true"], np.trace(ctx.true_tables, axis1=1, axis2=2))


def test_the_shared_path_equals_each_methods_own_prediction(concept):
    # the runner gives a LEAP method (gamma, q-hat) computed once; the method asked sample by sample must agree
    _, ctxs = concept
    ctx = ctxs[1]
    for name in ("LEAP_KDEy", "O-LEAP_KDEy", "S-LEAP_KDEy"):
        frame = evaluation.method_frame(ctx, name, registry.get(name), ["accuracy", "f1"])
        est, _ = evaluation.fit_method(ctx, name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            own = est.predict_measures(ctx.samples(), ["accuracy", "f1"], posteriors=ctx.posteriors())
        for m in ("accuracy", "f1"):
            assert np.allclose(frame.loc[frame.measure == m, "predicted"], own[m], atol=1e-12, rtol=0)


def test_q_cot_reads_the_shared_quantifiers_estimates_with_the_values_of_its_own(concept):
    # Q-COT in a study: the context's KDEy (fitted once on V with h and the seed) and its estimate of each sample,
    # instead of its own fit and one quantify per sample. The values are those of Q-COT fitted alone, predicting
    # sample by sample (the estimates come from one classification of U instead of one per sample: equal up to
    # round-off, which KDEy's solver can amplify to ~1e-9 on a few samples)
    _, ctxs = concept
    frame = evaluation.evaluate(ctxs, "Q-COT", registry.get("Q-COT"), ["accuracy", "f1"])
    assert set(frame["measure"]) == {"accuracy"}  # COT estimates accuracy only
    own = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ctx in ctxs:
            est = COT(ctx.h, quantifier="kdey", random_state=ctx.seed).fit(ctx.split.X_V, ctx.split.y_V)
            own += [est.predict(X) for X in ctx.samples()]
    np.testing.assert_allclose(frame["predicted"], own, atol=1e-9, rtol=0)
    for t, ctx in enumerate(ctxs):  # the shared quantifier's error and its share of the time are reported
        rows = frame[frame["trial"] == t]
        q_ae = np.abs(ctx.q_hat["kdey"] - ctx.true_prev).mean(axis=1)
        np.testing.assert_allclose(rows["q_ae"], q_ae, atol=1e-15)
        assert (rows["seconds"].to_numpy() >= ctx.q_secs["kdey"]).all()


@pytest.fixture
def count_fits(monkeypatch):
    """A function that starts counting Quantifier fits (by name) into the list it returns."""
    def start():
        fits, fit = [], Quantifier.fit

        def counted(self, *args, **kwargs):
            fits.append(self.name)
            return fit(self, *args, **kwargs)

        monkeypatch.setattr(Quantifier, "fit", counted)
        return fits
    return start


def test_leap_kdey_and_q_cot_fit_the_kdey_quantifier_once_per_context(count_fits):
    fits = count_fits()
    specs = [registry.get("LEAP_KDEy"), registry.get("Q-COT")]
    ctxs = evaluation.contexts("haberman", "lr", specs, "upp", 5, 40, 0)
    for spec in specs:
        frame = evaluation.evaluate(ctxs, spec.name, spec, ["accuracy"])
        assert len(frame) == 5 and frame["q_ae"].notna().all()
    assert fits == ["kdey"]
    est, qname = evaluation.fit_method(ctxs[0], "Q-COT")
    assert qname == "kdey" and est.quantifier_ is ctxs[0].quantifiers["kdey"] and fits == ["kdey"]


def test_the_trial_split_follows_the_seed():
    family = protocols.make_protocol("local-covariate", repeats=1, train_size=400).family("marketing", 40, 1, 0)
    trial = family.trial(0)
    a, _, _ = evaluation.trial_split(trial, 0.5, 0, "m")
    b, _, _ = evaluation.trial_split(trial, 0.5, 0, "m")
    c, _, _ = evaluation.trial_split(trial, 0.5, 1, "m")
    assert np.array_equal(a.X_V, b.X_V) and not np.array_equal(a.X_V, c.X_V)
    assert len(a.y_L) + len(a.y_V) == 400 and np.array_equal(np.sort(np.r_[a.y_L, a.y_V]), np.sort(trial.train.y))


def test_a_shift_family_refuses_a_leap_dataset_and_indices():
    proto = protocols.make_protocol("prior")
    with pytest.raises(ValueError, match="marketing"):
        evaluation.contexts("haberman", "lr", [], proto, 1, 50, 0)
    with pytest.raises(TypeError, match="dataset-shift family"):
        proto.indices(np.array([0, 1, 0, 1]), 2, 1, 0)
    assert protocols.names("shift") == ["prior", "global-pure-covariate", "global-mixed-covariate",
                                        "local-covariate", "concept"]
    assert protocols.make_protocol("prior", train_prevalences=[0.2, 0.8]).key() == \
        protocols.make_protocol("prior", train_prevalences=(0.2, 0.8)).key() == "prior(train_prevalences=(0.2, 0.8))"


def test_a_store_fits_a_covariate_quantifier_once_for_every_classifier_with_the_same_numbers(count_fits):
    fresh = {c: evaluation.prepare("haberman", c, [registry.get("LEAP_KDEy"), registry.get("LEAP_ACC")], "upp", 6, 40,
                                   0) for c in ("lr", "knn")}
    fits = count_fits()
    specs = [registry.get("LEAP_KDEy"), registry.get("LEAP_ACC")]
    store = {}
    stored = {c: evaluation.prepare("haberman", c, specs, "upp", 6, 40, 0, store=store) for c in ("lr", "knn")}
    # KDEy reads nothing of h: one fit serves both classifiers; ACC counts h's decisions: one fit per classifier
    assert sorted(fits) == ["acc", "acc", "kdey"]
    for c in ("lr", "knn"):
        for q in ("kdey", "acc"):
            assert np.array_equal(stored[c].q_hat[q], fresh[c].q_hat[q])
    assert np.array_equal(stored["lr"].q_secs["kdey"], stored["knn"].q_secs["kdey"])  # the seconds of the one fit
    # another seed, or other samples, is another quantifier
    evaluation.prepare("haberman", "lr", specs[:1], "upp", 6, 40, 1, store=store)
    evaluation.prepare("haberman", "lr", specs[:1], "upp", 7, 40, 0, store=store)
    assert fits.count("kdey") == 3 and len(store) == 3


def test_the_grid_fits_a_datasets_kdey_once_for_its_classifiers_with_a_results_directory(count_fits, tmp_path):
    from capshift import grid
    kw = dict(n_samples=4, sample_size=40, progress=False)
    plain = grid.run_grid(["haberman"], ["lr", "knn"], ["LEAP_KDEy"], None, **kw)
    fits = count_fits()
    stored = grid.run_grid(["haberman"], ["lr", "knn"], ["LEAP_KDEy"], tmp_path, **kw)
    assert fits == ["kdey"] and (tmp_path / grid.SHARED_DIR / grid.code_fingerprint()).is_dir()
    assert np.array_equal(stored["predicted"].to_numpy(), plain["predicted"].to_numpy())
    assert list(stored["classifier"].unique()) == ["lr", "knn"]  # grid order, whatever order the pairs ran in
    # a damaged file in the store is computed afresh, with the same numbers
    (kept,) = (tmp_path / grid.SHARED_DIR).rglob("*.joblib")
    kept.write_bytes(kept.read_bytes()[:100])
    again = grid.run_grid(["haberman"], ["svm"], ["LEAP_KDEy"], tmp_path, **kw)
    assert fits == ["kdey", "kdey"]
    assert np.array_equal(again["predicted"].to_numpy(),
                          grid.run_grid(["haberman"], ["svm"], ["LEAP_KDEy"], None, **kw)["predicted"].to_numpy())


def test_the_store_key_reads_a_sparse_matrix_by_its_entries():
    # the text datasets' V and U are sparse: their digest must depend on the entries, not on a summary repr that
    # two matrices of one shape and number of entries share
    import scipy.sparse as sp

    from capshift.quantifiers import digest
    a = sp.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0]]))
    b = sp.csr_matrix(np.array([[0.0, 1.5], [2.0, 0.0]]))  # same shape, same number of entries
    c = sp.csr_matrix(np.array([[0.0, 0.0], [2.0, 1.0]]))  # same values, other places
    assert repr(a) == repr(b) and len({digest(a), digest(b), digest(c)}) == 3
    assert digest(sp.coo_matrix(a.toarray())) == digest(a) == digest(sp.csc_matrix(a))  # one matrix, any format


def test_the_covariate_quantifiers_are_those_that_read_nothing_of_h():
    # the store shares exactly the quantifiers whose LEAP reads nothing of h: one fact, stated once
    from capshift.leap import LEAP
    from capshift.quantifiers import COVARIATE_QUANTIFIERS, QUANTIFIERS
    assert {q for q in QUANTIFIERS if LEAP(None, quantifier=q).reads_from_h() == ()} == set(COVARIATE_QUANTIFIERS)


def test_the_grids_store_reads_a_key_kept_on_disk_by_item_access_as_well(tmp_path):
    from capshift import grid
    store = grid._QuantifierStore(tmp_path)
    store["k"] = ("q", np.arange(3.0), np.ones(3))
    assert not list(tmp_path.iterdir())  # nothing on disk before flush
    store.flush()
    later = grid._QuantifierStore(tmp_path)
    q, est, secs = later["k"]  # no `in` first
    assert q == "q" and np.array_equal(est, np.arange(3.0)) and later.new == []
    with pytest.raises(KeyError):
        later["absent"]


def test_the_quantifiers_progress_bar_names_the_dataset(capsys):
    evaluation.prepare("haberman", "lr", [registry.get("LEAP_ACC")], "upp", 3, 40, 0, progress=True)
    err = capsys.readouterr().err
    assert "haberman: quantify (acc):" in err and "\n" not in err  # cleared when done
    evaluation.contexts("haberman", "lr", [registry.get("LEAP_CC")], "upp", 3, 40, 0, progress=True)
    assert "haberman: quantify (cc)" in capsys.readouterr().err
    evaluation.contexts("haberman", "lr", [registry.get("LEAP_CC")], "upp", 3, 40, 0)
    evaluation.prepare("haberman", "lr", [registry.get("LEAP_CC")], "upp", 3, 40, 0)
    assert capsys.readouterr().err == ""
    # an estimate kept in a store is computed under the same bar
    evaluation.prepare("haberman", "lr", [registry.get("S-LEAP_oracle")], "upp", 3, 40, 0, progress=True, store={})
    assert "haberman: quantify (oracle):" in capsys.readouterr().err


# ------------------------------------------------------------------ a context's arrays, by hand
class _FirstColumn:
    """A fitted 'classifier' without posteriors: it predicts the label written in an item's first column."""

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(int)


def _hand_split():
    """3 classes; V holds classes 0 and 1 only (prevalence (0.75, 0.25, 0)); U's 8 items carry h's prediction."""
    X_U = np.array([[0], [1], [2], [0], [1], [1], [2], [0]], dtype=float)
    y_U = np.array([0, 1, 1, 0, 2, 1, 2, 2])
    X_V, y_V = np.zeros((4, 1)), np.array([0, 0, 0, 1])
    return datasets.Split("hand", X_V, y_V, X_V, y_V, X_U, y_U, np.arange(3), 3)


def test_a_context_holds_hs_true_tables_prevalences_and_shift_by_hand():
    split, h = _hand_split(), _FirstColumn()
    idx = [np.array([0, 1, 2, 3]), np.array([4, 5, 6, 7, 0])]
    ctx = evaluation.context(split, h, idx, "first-column", 7)
    # sample 0: true (0, 1, 1, 0), predicted (0, 1, 2, 0); sample 1: true (2, 1, 2, 2, 0), predicted (1, 1, 2, 0, 0)
    np.testing.assert_allclose(ctx.true_tables, [[[0.5, 0, 0], [0, 0.25, 0.25], [0, 0, 0]],
                                                 [[0.2, 0, 0], [0, 0.2, 0], [0.2, 0.2, 0.2]]], atol=1e-15)
    np.testing.assert_allclose(ctx.true_prev, [[0.5, 0.5, 0], [0.2, 0.2, 0.6]], atol=1e-15)
    np.testing.assert_allclose(ctx.gamma, [[0.5, 0.25, 0.25], [0.4, 0.4, 0.2]], atol=1e-15)
    np.testing.assert_allclose(ctx.shift, [0.5, 1.2], atol=1e-15)  # L1 distance to V's (0.75, 0.25, 0)
    assert ctx.classifier == "first-column" and ctx.seed == 7 and ctx.k == 2 and ctx.h is h and ctx.split is split
    assert ctx.idx is idx and ctx.parameters is None and ctx.quantifiers == ctx.q_hat == ctx.q_secs == {}
    assert [list(y) for y in ctx.labels] == [[0, 1, 1, 0], [2, 1, 2, 2, 0]]
    assert ctx.post_U is None and ctx.posteriors() is None  # h has no predict_proba
    assert [X[:, 0].tolist() for X in ctx.samples()] == [[0, 1, 2, 0], [1, 1, 2, 0, 0]]
    # another reference prevalence, and the labels under another condition (h's predictions stay)
    other = evaluation.context(split, h, idx, reference=[1 / 3, 1 / 3, 1 / 3],
                               labels=[np.array([1, 1, 1, 1]), np.array([0, 0, 0, 0, 0])])
    np.testing.assert_allclose(other.true_tables[0], [[0, 0, 0], [0.5, 0.25, 0.25], [0, 0, 0]], atol=1e-15)
    np.testing.assert_allclose(other.true_tables[1], [[0.4, 0.4, 0.2], [0, 0, 0], [0, 0, 0]], atol=1e-15)
    np.testing.assert_allclose(other.shift, [4 / 3, 4 / 3], atol=1e-12)
    assert other.classifier == "" and other.seed == 0


def test_a_context_slices_hs_posteriors_on_u():
    split = _synthetic_split()
    h = evaluation.train_classifier("lr", 0, split.X_L, split.y_L)
    idx = [np.array([3, 1, 4]), np.array([1, 5])]
    ctx = evaluation.context(split, h, idx)
    post = h.predict_proba(split.X_U)
    assert np.array_equal(ctx.post_U, post)
    assert all(np.array_equal(P, post[i]) for P, i in zip(ctx.posteriors(), idx))
    assert all(np.array_equal(X, split.X_U[i]) for X, i in zip(ctx.samples(), idx))


def test_a_context_refuses_labels_or_parameters_not_one_per_sample():
    split, h, idx = _hand_split(), _FirstColumn(), [np.array([0, 1]), np.array([2, 3])]
    message = "labels and parameters must describe the 2 samples one by one"
    with pytest.raises(ValueError, match=f"^{message}$"):
        evaluation.context(split, h, idx, labels=[np.array([0, 1])])
    with pytest.raises(ValueError, match=f"^{message}$"):
        evaluation.context(split, h, idx, parameters=pd.DataFrame({"p": [0.1, 0.2, 0.3]}))
    params = pd.DataFrame({"p": [0.1, 0.2]})
    assert evaluation.context(split, h, idx, parameters=params).parameters is params


# ------------------------------------------------------------------ a trial as L / V / U
def test_the_trial_split_is_scikit_learns_stratified_split_of_the_training_sample_with_the_seed():
    family = protocols.make_protocol("local-covariate", repeats=1, train_size=400).family("marketing", 40, 1, 0)
    trial = family.trial(0)
    X, y = trial.train.Xy
    for seed in (0, 5):
        split, idx, labels = evaluation.trial_split(trial, 0.25, seed, "m")
        tr, va = train_test_split(np.arange(len(y)), test_size=0.25, stratify=y, random_state=seed)
        assert np.array_equal(split.X_L, X[tr]) and np.array_equal(split.y_L, y[tr])
        assert np.array_equal(split.X_V, X[va]) and np.array_equal(split.y_V, y[va])
        # V is a quarter of the training sample, each class keeping its share (to one item)
        assert len(split.y_V) == 100 and all(abs((split.y_V == c).sum() - (y == c).sum() / 4) <= 1 for c in (0, 1))
        assert split.name == "m" and split.n_classes == 2 and list(split.classes) == [0, 1]
        assert np.array_equal(split.X_U, np.asarray(trial.test.data.instances))
        assert np.array_equal(split.y_U, np.asarray(trial.test.data.labels))
        assert isinstance(idx, list) and all(np.array_equal(a, b) for a, b in zip(idx, trial.test.indices))
        assert len(idx) == len(labels) == trial.test.total()
        assert all(np.array_equal(lab, trial.test.labels(k)) for k, lab in enumerate(labels))
    assert evaluation.trial_split(trial, 0.5, 0)[0].name == "trial"


# ------------------------------------------------------------------ the one rule for sharing a quantifier
def _spec(path=False, estimates=False, **params):
    """A stand-in MethodSpec: its params and its class's two reading flags."""
    return types.SimpleNamespace(params=params, cls=types.SimpleNamespace(shared_prevalence_path=path,
                                                                         shared_prevalence_estimates=estimates))


def test_a_quantifier_is_shared_only_when_named_by_a_known_string_and_read_as_prevalences():
    assert evaluation.shared_quantifier(_spec(path=True, quantifier="acc")) == "acc"
    assert evaluation.shared_quantifier(_spec(estimates=True, quantifier="sld")) == "sld"
    assert evaluation.shared_quantifier(_spec(quantifier="acc")) is None  # reads no prevalence estimates
    assert evaluation.shared_quantifier(_spec(path=True, quantifier="no-such")) is None
    assert evaluation.shared_quantifier(_spec(path=True, quantifier=Quantifier("acc"))) is None  # the method's own
    assert evaluation.shared_quantifier(_spec(path=True)) is None  # Naive: no quantifier at all


# ------------------------------------------------------------------ fitted once, timed per sample
@pytest.fixture
def clock(monkeypatch):
    """evaluation's time.perf_counter replaced by a clock that moves one second per reading (from 100 s)."""
    ticks = itertools.count(100)
    monkeypatch.setattr(evaluation, "time", types.SimpleNamespace(perf_counter=lambda: float(next(ticks))))


@pytest.fixture
def small():
    """A context of the synthetic problem: h (lr, seed 3) and three samples of U of 7, 9 and 11 items."""
    split = _synthetic_split()
    h = evaluation.train_classifier("lr", 3, split.X_L, split.y_L)
    rng = np.random.default_rng(5)
    idx = [rng.choice(len(split.y_U), m, replace=False) for m in (7, 9, 11)]
    return evaluation.context(split, h, idx, "lr", 3)


def test_shared_quantifiers_are_fitted_once_in_name_order_with_h_and_the_seed(small, count_fits, clock):
    ctx, fits = small, count_fits()
    specs = [registry.get(n) for n in ("S-LEAP_oracle", "LEAP_ACC", "Naive", "ATC", "S-LEAP_ACC", "O-LEAP_oracle")]
    evaluation.share_quantifiers(ctx, specs)
    assert fits == ["acc", "oracle"] and sorted(ctx.quantifiers) == sorted(ctx.q_hat) == sorted(ctx.q_secs)
    acc = ctx.quantifiers["acc"]
    assert acc.name == "acc" and acc.classifier is ctx.h and acc.random_state == 3 and acc.n_classes_ == 2
    assert ctx.quantifiers["oracle"].classifier is None  # the oracle reads nothing of h
    for s, X in enumerate(ctx.samples()):
        np.testing.assert_allclose(ctx.q_hat["acc"][s], acc.quantify(X), atol=1e-12)
    assert np.array_equal(ctx.q_hat["oracle"], ctx.true_prev)  # the oracle reads each sample's true prevalence
    assert np.array_equal(ctx.q_secs["acc"], np.ones(3)) and np.array_equal(ctx.q_secs["oracle"], np.ones(3))
    evaluation.share_quantifiers(ctx, specs)  # names already fitted are not refitted
    evaluation.fit_method(ctx, "LEAP_ACC")
    assert fits == ["acc", "oracle"] and ctx.quantifiers["acc"] is acc


# ------------------------------------------------------------------ a method's rows against a hand-run
def _own(ctx, name, **kwargs):
    """Method ``name`` made and fitted on V alone, as a user would (no shared quantifier)."""
    est = registry.make_method(name, ctx.h, random_state=ctx.seed, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(ctx.split.X_V, ctx.split.y_V)


def _check_rows(frame, ctx, name, measure, predicted):
    """The rows of ``measure``: every column but seconds, q_ae and path against the context and ``predicted``."""
    rows = frame[frame["measure"] == measure]
    true = get_measure(measure)(ctx.true_tables)
    assert list(rows["sample"]) == list(range(ctx.k)) and set(rows["method"]) == {name}
    assert set(rows["dataset"]) == {"synthetic"} and set(rows["classifier"]) == {"lr"}
    assert list(rows["true_prev"]) == [tuple(np.round(p, 6)) for p in ctx.true_prev]
    assert rows["true_prev"].iloc[0] == (0.571429, 0.428571)  # 4 and 3 of the 7 items: six decimals
    np.testing.assert_allclose(rows["shift"], ctx.shift, atol=1e-15)
    np.testing.assert_allclose(rows["true"], true, atol=1e-15)
    np.testing.assert_allclose(rows["predicted"], predicted, atol=1e-9)
    np.testing.assert_allclose(rows["ae"], np.abs(true - np.asarray(predicted)), atol=1e-9)
    return rows


def test_method_frame_gives_a_methods_own_predictions_of_each_sample_and_its_seconds(small, clock):
    ctx = small
    frame = evaluation.method_frame(ctx, "ATC", registry.get("ATC"), ["accuracy", "f1"])
    assert list(frame.columns) == evaluation.RESULT_COLUMNS and len(frame) == 3  # ATC estimates accuracy only
    own = _own(ctx, "ATC")
    rows = _check_rows(frame, ctx, "ATC", "accuracy", [own.predict(X) for X in ctx.samples()])
    assert set(rows["path"]) == {""} and rows["q_ae"].isna().all()
    np.testing.assert_allclose(rows["seconds"], 1 / 3)  # one clock second for the 3 samples
    assert frame["true"].iloc[0] == pytest.approx(1.0) and frame["ae"].iloc[0] > 0.1  # not the same numbers
    # the posteriors are the context's (one predict_proba of U), not h's asked again on each sample
    ctx.post_U = np.full_like(ctx.post_U, 0.5)
    frame = evaluation.method_frame(ctx, "ATC", registry.get("ATC"), ["accuracy"])
    np.testing.assert_allclose(frame["predicted"], own.predict_measures(ctx.samples(), ["accuracy"],
                                                                        posteriors=ctx.posteriors())["accuracy"])
    assert not np.allclose(frame["predicted"], rows["predicted"], atol=0.1)


def test_method_frame_on_the_shared_path_reports_the_quantifiers_error_and_share_of_time(small, clock):
    ctx = small
    frame = evaluation.method_frame(ctx, "LEAP_ACC", None, ["accuracy", "f1"])
    own = _own(ctx, "LEAP_ACC")
    predicted = {m: [own.predict(X, m) for X in ctx.samples()] for m in ("accuracy", "f1")}
    own.tables_from_prevalences(ctx.gamma, ctx.q_hat["acc"])  # the paths its solver takes on these samples
    for m in ("accuracy", "f1"):
        rows = _check_rows(frame, ctx, "LEAP_ACC", m, predicted[m])
        np.testing.assert_allclose(rows["q_ae"], np.abs(ctx.q_hat["acc"] - ctx.true_prev).mean(axis=1), atol=1e-15)
        assert list(rows["path"]) == list(own.paths_)
        np.testing.assert_allclose(rows["seconds"], 1 / 3 + 1)  # its share, and the quantifier's second per sample
    assert set(frame["path"]) <= {"exact", "constrained"} and frame["q_ae"].min() > 0.05
    naive = evaluation.method_frame(ctx, "Naive", None, ["accuracy"])  # shared path, no quantifier
    val_acc = np.mean(ctx.h.predict(ctx.split.X_V) == ctx.split.y_V)
    rows = _check_rows(naive, ctx, "Naive", "accuracy", np.full(3, val_acc))
    assert rows["q_ae"].isna().all() and set(rows["path"]) == {""}
    np.testing.assert_allclose(rows["seconds"], 1 / 3)
    oracle = evaluation.method_frame(ctx, "S-LEAP_oracle", None, ["accuracy"])
    own = _own(ctx, "S-LEAP_oracle")
    _check_rows(oracle, ctx, "S-LEAP_oracle", "accuracy", [own.predict(X, prevalence=p)
                                                           for X, p in zip(ctx.samples(), ctx.true_prev)])
    assert (oracle["q_ae"] == 0).all() and set(oracle["path"]) == {"scaling"}


def test_method_frame_gives_a_reader_of_shared_estimates_hs_posteriors_and_the_contexts_q_hat(small, clock):
    ctx = small
    # a fitted quantifier stands in for Q-COT's KDEy: the rows must follow the context's q-hat, not the quantifier
    ctx.quantifiers["kdey"] = Quantifier("acc", classifier=ctx.h).fit(ctx.split.X_V, ctx.split.y_V, 2)
    ctx.q_hat["kdey"] = np.array([[0.1, 0.9], [0.5, 0.5], [0.8, 0.2]])
    ctx.q_secs["kdey"] = np.array([0.5, 0.25, 0.125])
    frame = evaluation.method_frame(ctx, "Q-COT", registry.get("Q-COT"), ["accuracy", "f1"])
    assert set(frame["measure"]) == {"accuracy"}
    predicted = [cot_accuracy(P, q) for P, q in zip(ctx.posteriors(), ctx.q_hat["kdey"])]
    rows = _check_rows(frame, ctx, "Q-COT", "accuracy", predicted)
    np.testing.assert_allclose(rows["q_ae"], np.abs(ctx.q_hat["kdey"] - ctx.true_prev).mean(axis=1), atol=1e-15)
    np.testing.assert_allclose(rows["seconds"], 1 / 3 + ctx.q_secs["kdey"])
    assert set(rows["path"]) == {""}


# ------------------------------------------------------------------ several contexts, and their parameters
def test_evaluate_appends_each_samples_parameters_and_numbers_samples_across_contexts(small, clock):
    split, h = small.split, small.h
    a = evaluation.context(split, h, small.idx[:2], parameters=pd.DataFrame({"c": [10, 11]}, index=[5, 6]))
    b = evaluation.context(split, h, [np.arange(5), np.arange(5, 12), np.arange(12, 20)],
                           parameters=pd.DataFrame({"c": [20, 21, 22]}, index=[0, 2, 4]))
    c = evaluation.context(split, h, [np.arange(20, 27)], parameters=pd.DataFrame({"c": [30]}))
    spec = registry.get("Naive")
    df = evaluation.evaluate([a, b, c], "Naive", spec, ["accuracy", "f1"])
    assert list(df.columns) == evaluation.RESULT_COLUMNS + ["c"] and list(df.index) == list(range(12))
    assert list(df["sample"]) == [0, 1, 0, 1, 2, 3, 4, 2, 3, 4, 5, 5]
    assert list(df["c"]) == [10, 11, 10, 11, 20, 21, 22, 20, 21, 22, 30, 30]
    acc = np.concatenate([np.trace(x.true_tables, axis1=1, axis2=2) for x in (a, b, c)])
    np.testing.assert_allclose(df.loc[df["measure"] == "accuracy", "true"], acc, atol=1e-15)
    one = evaluation.evaluate([b], "Naive", spec, ["accuracy"])
    assert list(one["sample"]) == [0, 1, 2] and list(one["c"]) == [20, 21, 22]
    alone = evaluation.evaluate([small], "Naive", spec, ["accuracy"])
    assert alone.equals(evaluation.method_frame(small, "Naive", spec, ["accuracy"]))  # the clock: 1/3 s each


# ------------------------------------------------------------------ tables, seeds and messages
def test_estimated_tables_are_the_methods_own_predicted_tables(small):
    ctx = small
    cbpe = evaluation.estimated_tables(ctx, "CBPE")
    own = _own(ctx, "CBPE")
    np.testing.assert_allclose(cbpe, [own.predict_table(X) for X in ctx.samples()], atol=1e-12)
    leap = evaluation.estimated_tables(ctx, "LEAP_ACC", registry.get("LEAP_ACC"), solver="slsqp")
    own = _own(ctx, "LEAP_ACC", solver="slsqp")
    np.testing.assert_allclose(leap, [own.predict_table(X) for X in ctx.samples()], atol=1e-9)
    oracle = evaluation.estimated_tables(ctx, "S-LEAP_oracle")
    own = _own(ctx, "S-LEAP_oracle")
    np.testing.assert_allclose(oracle, [own.predict_table(X, p) for X, p in zip(ctx.samples(), ctx.true_prev)],
                               atol=1e-12)
    np.testing.assert_allclose(oracle.sum(axis=2), ctx.true_prev, atol=1e-12)  # S-LEAP keeps q-hat = p
    assert not np.allclose(cbpe, leap, atol=1e-3) and not np.allclose(leap, oracle, atol=1e-3)


def test_a_method_is_made_with_the_contexts_seed_and_the_given_solver(small):
    ctx = small
    est, qname = evaluation.fit_method(ctx, "LEAP_ACC", solver="slsqp")
    assert qname == "acc" and est.solver == "slsqp" and est.random_state == 3 and est.classifier is ctx.h
    assert est.quantifier_ is ctx.quantifiers["acc"]
    est, qname = evaluation.fit_method(ctx, "DS")
    assert qname is None and est.random_state == 3 and est.n_classes_ == 2


def test_train_classifier_seeds_h_and_silences_its_convergence_warning():
    X, y = gaussians(60, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = evaluation.train_classifier("mlp", 2, X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = make_classifier("mlp", 2).fit(X, y)
        other = make_classifier("mlp", 1).fit(X, y)
    assert h.random_state == 2 and np.array_equal(h.predict_proba(X), ref.predict_proba(X))
    assert not np.allclose(h.predict_proba(X), other.predict_proba(X), atol=1e-3)


def test_prepare_seeds_the_split_h_and_the_protocol_and_accepts_one_item_per_class():
    ctx = evaluation.prepare("haberman", "lr", [], "upp", 3, 40, 1)
    split = datasets.load("haberman", seed=1)
    assert np.array_equal(ctx.split.X_L, split.X_L) and np.array_equal(ctx.split.y_U, split.y_U)
    assert not np.array_equal(datasets.load("haberman", seed=0).y_U, split.y_U)
    expected = protocols.make_protocol("upp").indices(split.y_U, 40, 3, 1, n_classes=2)
    assert all(np.array_equal(a, b) for a, b in zip(ctx.idx, expected)) and ctx.seed == 1 and ctx.classifier == "lr"
    assert ctx.h.random_state == 1
    h = evaluation.train_classifier("lr", 1, split.X_L, split.y_L)
    assert np.array_equal(ctx.h.predict_proba(split.X_U), h.predict_proba(split.X_U))
    tiny = evaluation.prepare(ctx.split, "lr", [], "upp", 2, 2, 0)
    assert tiny.split is ctx.split and [len(i) for i in tiny.idx] == [2, 2]
    with pytest.raises(ValueError, match=r"^sample_size=1 is smaller than the 2 classes of 'haberman'$"):
        evaluation.prepare("haberman", "lr", [], "upp", 2, 1, 0)


def test_a_table_run_refuses_a_method_that_estimates_measures_directly():
    assert evaluation.require_tables("CBPE") is registry.get("CBPE")
    spec = registry.get("LEAP_ACC")
    assert evaluation.require_tables("ATC", spec) is spec  # the spec given is the one read
    message = ("methods: 'ATC' estimates measures directly, not contingency tables; run_tables needs table methods "
               "(e.g. Naive, the LEAP family, CBPE, QuAcc); use run_experiment for 'ATC'")
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        evaluation.require_tables("ATC")
    with pytest.raises(TypeError, match=re.escape(message.replace("ATC", "DoC"))):
        evaluation.estimated_tables(None, "DoC")


# ------------------------------------------------------------------ a shift family's contexts
def test_a_shift_familys_contexts_carry_the_seed_the_names_and_each_trials_split(capsys):
    proto = protocols.make_protocol("local-covariate", repeats=1, train_size=400)
    store = {}
    ctxs = evaluation.contexts("marketing", "lr", [registry.get("S-LEAP_oracle")], proto, 2, 40, 3, progress=True,
                               store=store)
    err = capsys.readouterr().err
    # one bar over the trials, named, and cleared when done (the quantifiers' bars stay off)
    assert "marketing: local-covariate trials:" in err and err.endswith("\r") and "\n" not in err
    assert "quantify" not in err
    family = proto.family("marketing", 40, 2, 3)
    assert len(ctxs) == family.n_trials == 1
    [ctx] = ctxs
    trial = family.trial(0)
    split, idx, labels = evaluation.trial_split(trial, proto.val_prop, 3, "marketing")
    assert ctx.split.name == "marketing" and np.array_equal(ctx.split.X_V, split.X_V)
    assert all(np.array_equal(a, b) for a, b in zip(ctx.labels, labels)) and len(ctx.idx) == len(idx) == ctx.k
    assert ctx.classifier == "lr" and ctx.seed == 3 and ctx.h.random_state == 3
    expected = trial.test.parameters.rename(columns={"sample": "condition_sample"})
    assert "condition_sample" in expected.columns and "sample" not in expected.columns
    assert list(ctx.parameters.columns) == list(expected.columns) and list(ctx.parameters.index) == list(range(ctx.k))
    assert ctx.parameters.equals(expected.reset_index(drop=True))
    # the oracle reads nothing of h: its estimates are kept in the store, for the other classifiers
    [(quantifier, est, secs)] = store.values()
    assert quantifier is ctx.quantifiers["oracle"] and est is ctx.q_hat["oracle"]
    assert np.array_equal(est, ctx.true_prev)
    evaluation.contexts("marketing", "lr", [], proto, 2, 40, 3)
    assert capsys.readouterr().err == ""


def test_evaluate_hands_each_context_the_spec_and_the_solver(monkeypatch, small):
    with pytest.raises(ValueError, match=r"^solver must be one of .*, got 'no-such'$"):
        evaluation.evaluate([small], "LEAP_ACC", registry.get("LEAP_ACC"), ["accuracy"], solver="no-such")
    calls = []

    def frame(ctx, name, spec, measures, solver=None):
        calls.append((ctx, name, spec, measures, solver))
        return pd.DataFrame({"sample": [0, 1, 2]})
    monkeypatch.setattr(evaluation, "method_frame", frame)
    spec = registry.get("LEAP_ACC")
    evaluation.evaluate([small, small], "LEAP_ACC", spec, ["f1"], solver="slsqp")
    assert calls == [(small, "LEAP_ACC", spec, ["f1"], "slsqp")] * 2


# ------------------------------------------------------------------ what a stored quantifier is keyed by
def test_the_store_key_holds_the_quantifier_seed_v_u_samples_and_the_oracles_true_prevalences(small, monkeypatch):
    # a stand-in for the fit records what is computed afresh; a hit in the store computes nothing
    calls = []

    def quantify(qname, h, seed, X_V, y_V, n, X_U, idx, true_prev, progress, label):
        calls.append((qname, h, true_prev))
        return qname, np.full((len(idx), n), 1 / n), np.zeros(len(idx))
    monkeypatch.setattr(evaluation, "_quantify_samples", quantify)
    split, idx, store = small.split, small.idx, {}
    kdey, oracle = [registry.get("LEAP_KDEy")], [registry.get("S-LEAP_oracle")]

    def share(specs, split=split, idx=idx, seed=3, labels=None, h=small.h):
        before = len(calls)
        evaluation.share_quantifiers(evaluation.context(split, h, idx, seed=seed, labels=labels), specs, store=store)
        return len(calls) - before
    assert share(kdey) == 1 and calls[0] == ("kdey", None, None)  # KDEy reads nothing of h
    knn = evaluation.train_classifier("knn", 0, split.X_L, split.y_L)
    assert share(kdey, h=knn) == 0  # another classifier: read back
    flipped = [1 - split.y_U[i] for i in idx]
    assert share(kdey, labels=flipped) == 0  # KDEy does not read the labels
    other_V = datasets.Split("synthetic", split.X_L, split.y_L, split.X_V + 1e-9, split.y_V, split.X_U, split.y_U,
                             split.classes, 2)
    other_yV = datasets.Split("synthetic", split.X_L, split.y_L, split.X_V, split.y_V[::-1], split.X_U, split.y_U,
                              split.classes, 2)
    other_U = datasets.Split("synthetic", split.X_L, split.y_L, split.X_V, split.y_V, split.X_U + 1e-9, split.y_U,
                             split.classes, 2)
    assert share(kdey, split=other_V) == share(kdey, split=other_yV) == share(kdey, split=other_U) == 1
    assert share(kdey, seed=4) == share(kdey, idx=idx[:2]) == 1
    assert share(oracle) == 1 and calls[-1][0] == "oracle" and calls[-1][1] is None  # not KDEy's entry
    assert share(oracle, labels=flipped) == 1  # other true prevalences, other estimates
    np.testing.assert_allclose(calls[-1][2], small.true_prev[:, ::-1], atol=1e-12)
    assert share([registry.get("LEAP_ACC")]) == 1 and len(store) == 8  # ACC reads h: never stored


# ------------------------------------------------------------------ the spec, the solver and the warnings
def test_the_spec_given_decides_the_shared_quantifier(small, clock):
    from capshift.leap import LEAP
    ctx, spec = small, registry.MethodSpec("LEAP_ACC", LEAP, "leap", {"quantifier": "cc"})
    est, qname = evaluation.fit_method(ctx, "LEAP_ACC", spec)
    assert qname == "cc" and est.quantifier_ is ctx.quantifiers["cc"] and "acc" not in ctx.quantifiers
    frame = evaluation.method_frame(ctx, "LEAP_ACC", spec, ["accuracy"])
    np.testing.assert_allclose(frame["q_ae"], np.abs(ctx.q_hat["cc"] - ctx.true_prev).mean(axis=1), atol=1e-15)
    assert np.array_equal(evaluation.evaluate([ctx], "LEAP_ACC", spec, ["accuracy"])["q_ae"], frame["q_ae"])
    np.testing.assert_allclose(evaluation.estimated_tables(ctx, "LEAP_ACC", spec),
                               est.tables_from_prevalences(ctx.gamma, ctx.q_hat["cc"]), atol=1e-12)
    assert "acc" not in ctx.quantifiers
    with pytest.raises(ValueError, match=r"^solver must be one of .*, got 'no-such'$"):
        evaluation.estimated_tables(ctx, "LEAP_ACC", solver="no-such")


def test_a_methods_own_warnings_pass_through_its_fit(small):
    from sklearn.dummy import DummyClassifier

    from capshift.validation import DegenerateClassifierWarning
    ctx = small
    ctx.h = DummyClassifier(strategy="prior").fit(ctx.split.X_L, ctx.split.y_L)  # one posterior for every item
    with pytest.warns(DegenerateClassifierWarning):
        evaluation.fit_method(ctx, "ATC")


def test_train_classifier_lets_other_warnings_through():
    from sklearn.exceptions import DataConversionWarning
    X, y = gaussians(60, seed=4)
    with pytest.warns(DataConversionWarning):
        evaluation.train_classifier("lr", 0, X, y[:, None])


def test_a_method_gets_no_rows_for_measures_it_does_not_estimate(small):
    ctx = small
    ctx.quantifiers["kdey"] = Quantifier("acc", classifier=ctx.h).fit(ctx.split.X_V, ctx.split.y_V, 2)
    ctx.q_hat["kdey"], ctx.q_secs["kdey"] = np.full((3, 2), 0.5), np.zeros(3)
    for name in ("Q-COT", "ATC"):
        frame = evaluation.method_frame(ctx, name, None, ["f1"])
        assert frame.empty and list(frame.columns) == evaluation.RESULT_COLUMNS


def test_prepare_tells_the_protocol_the_splits_classes():
    X, y = gaussians(90, n_classes=3, seed=6)
    split = datasets.Split("three", X, y, X, y, X[y < 2], y[y < 2], np.arange(3), 3)  # U without class 2
    with pytest.raises(ValueError, match=r"^class\(es\) \[2\] have no item in y"):
        evaluation.prepare(split, "lr", [], "upp", 2, 10, 0)

"""The one evaluation path (capshift.evaluation): contexts for every kind of protocol, one rule for sharing a
quantifier, the shared (gamma, q-hat) path equal to each method's own prediction, samples numbered across a shift
family's trials."""
import warnings

import numpy as np
import pytest

from capshift import evaluation, protocols, registry
from capshift.baselines import COT
from capshift.quantifiers import Quantifier
from capshift.tables import contingency_table


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
    assert "haberman: quantify (acc)" in capsys.readouterr().err

"""QuAcc: exact tables on noise-free relabelled data, n×n bookkeeping, 1×(n+1) refusals, covariates, selection."""
import numpy as np
import pytest
import scipy.sparse as sp
from quapy.method.aggregative import CC
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from capshift import experiment
from capshift.quacc import (QuAcc1xN2, QuAcc1xNp1, QuAccGridSearch, QuAccNxN, augment_features,
                            cell_labels, max_confidence, max_inverse_softmax, negative_entropy, paper_grid)
from capshift.tables import accuracy, contingency_table, f1, macro_f1, predicted_prevalence


class ColumnClassifier(ClassifierMixin, BaseEstimator):
    """A 'trained' classifier whose prediction is column 1 of X (so the cells are known by construction)."""

    def __init__(self, n_classes=2):
        self.n_classes = n_classes

    def fit(self, X, y):
        self.classes_ = np.arange(self.n_classes)
        return self

    def predict_proba(self, X):
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        P = np.full((X.shape[0], self.n_classes), 0.2 / (self.n_classes - 1))
        P[np.arange(X.shape[0]), X[:, 1].astype(int)] = 0.8
        return P

    def predict(self, X):
        return self.predict_proba(X).argmax(axis=1)


def _cells(counts, seed):
    """Noise-free items: true class i in column 0, predicted class j in column 1, cell counts (n, n), shuffled."""
    n = counts.shape[0]
    X, y = [], []
    for i in range(n):
        for j in range(n):
            m = int(counts[i, j])
            X.append(np.column_stack([np.full(m, 10.0 * i), np.full(m, j)]))
            y.append(np.full(m, i))
    perm = np.random.default_rng(seed).permutation(int(counts.sum()))
    return np.vstack(X)[perm], np.concatenate(y)[perm]


def _noise_free(n, seed=0):
    rng = np.random.default_rng(seed)
    V_counts = (rng.integers(10, 40, (n, n)) + 60 * np.eye(n)).astype(int)
    U_counts = (rng.integers(5, 80, (n, n)) + 20 * np.eye(n)).astype(int)  # different cell and class priors
    X_V, y_V = _cells(V_counts, seed + 1)
    X_U, y_U = _cells(U_counts, seed + 2)
    h = ColumnClassifier(n).fit(X_V, y_V)
    return h, X_V, y_V, X_U, y_U, contingency_table(y_U, h.predict(X_U), n)


ORACLE = CC(DecisionTreeClassifier(random_state=0))  # separates the cells perfectly: an oracle for their counts


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("cls", [QuAcc1xN2, QuAccNxN])
def test_noise_free_full_table(n, cls):
    h, X_V, y_V, X_U, y_U, true = _noise_free(n, n)
    est = cls(h, quantifier=ORACLE).fit(X_V, y_V)
    T = est.predict_table(X_U)
    np.testing.assert_allclose(T, true, atol=1e-12)
    assert est.predict(X_U) == pytest.approx(accuracy(true))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_noise_free_1xnp1_diagonal_and_total_error(n):
    h, X_V, y_V, X_U, y_U, true = _noise_free(n, 10 + n)
    T = QuAcc1xNp1(h, quantifier=ORACLE).fit(X_V, y_V).predict_table(X_U)
    np.testing.assert_allclose(np.diag(T), np.diag(true), atol=1e-12)
    assert T.sum() - np.trace(T) == pytest.approx(true.sum() - np.trace(true), abs=1e-12)
    assert T.min() >= 0 and T.sum() == pytest.approx(1.0)
    if n == 2:  # binary: the error mass placed by the observed predicted fractions gives the true FP and FN
        np.testing.assert_allclose(T, true, atol=1e-12)


def test_noise_free_with_quapy_sld_is_close():
    # (1x(n+1) is left out: its merged error cell is not linearly separable here, so SLD's logistic
    # regression cannot model it -- and the cell is not PPS-stable anyway, the paper's Fig. 2)
    h, X_V, y_V, X_U, y_U, true = _noise_free(3, 7)
    for cls in (QuAcc1xN2, QuAccNxN):
        T = cls(h, quantifier="sld", random_state=0).fit(X_V, y_V).predict_table(X_U)
        assert abs(accuracy(T) - accuracy(true)) < 0.02, cls.__name__


def _real(n=3, seed=0, m=1500):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n, m)
    X = rng.normal(size=(m, 4)) + 1.2 * np.eye(n, 4)[y]
    h = LogisticRegression().fit(X[: m // 3], y[: m // 3])
    return h, X[m // 3: 2 * m // 3], y[m // 3: 2 * m // 3], X[2 * m // 3:], y[2 * m // 3:]


@pytest.mark.parametrize("quantifier", ["sld", "kdey", "cc"])
def test_nxn_column_sums_are_observed_predicted_fractions(quantifier):
    h, X_V, y_V, X_U, y_U = _real()
    est = QuAccNxN(h, quantifier=quantifier, random_state=0).fit(X_V, y_V)
    for sl in (slice(0, 300), slice(100, 140), slice(0, 3)):
        T = est.predict_table(X_U[sl])
        gamma = np.bincount(h.predict(X_U[sl]), minlength=3) / len(X_U[sl])
        np.testing.assert_allclose(predicted_prevalence(T), gamma, atol=1e-12)
        assert T.min() >= 0 and T.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("cls", [QuAcc1xN2, QuAccNxN, QuAcc1xNp1])
def test_tables_valid_and_batch_equals_single(cls):
    h, X_V, y_V, X_U, y_U = _real(seed=1)
    est = cls(h, quantifier="sld", covariates=True, random_state=0).fit(X_V, y_V)
    samples = [X_U[:200], X_U[200:260], X_U[260:500]]
    B = est.predict_table_batch(samples)
    assert B.shape == (3, 3, 3) and np.all(B >= 0)
    np.testing.assert_allclose(B.sum(axis=(1, 2)), 1.0)
    for k, X in enumerate(samples):
        np.testing.assert_allclose(est.predict_table(X), B[k], atol=1e-10)
    acc = est.predict_batch(samples, "accuracy", posteriors=[h.predict_proba(X) for X in samples])
    np.testing.assert_allclose(acc, accuracy(B), atol=1e-10)


def test_1xnp1_refuses_measures_it_cannot_compute():
    h, X_V, y_V, X_U, y_U = _real()
    est = QuAcc1xNp1(h, quantifier="sld").fit(X_V, y_V)
    assert est.supports("accuracy") and not est.supports("macro_f1") and not est.supports("f1")
    for m in ("macro_f1", "f1", "balanced_accuracy"):
        with pytest.raises(ValueError, match="merges all errors"):
            est.predict(X_U, measure=m)
        with pytest.raises(ValueError, match="merges all errors"):
            est.predict_batch([X_U], m)
    with pytest.raises(ValueError, match="merges all errors"):
        QuAcc1xNp1(h, measure="macro_f1").fit(X_V, y_V)
    # binary: F1 only needs FP + FN, so it is supported; balanced accuracy needs the split, so it is not
    h2, X_V2, y_V2, X_U2, y_U2 = _real(n=2)
    est2 = QuAcc1xNp1(h2, quantifier="sld").fit(X_V2, y_V2)
    assert est2.supports("f1") and est2.supports("macro_f1") and not est2.supports("balanced_accuracy")
    T = est2.predict_table(X_U2)
    assert est2.predict(X_U2, measure="f1") == pytest.approx(float(f1(T)))
    with pytest.raises(ValueError, match="balanced_accuracy"):
        est2.predict(X_U2, measure="balanced_accuracy")
    # the runner skips what it does not support
    df = experiment.run_experiment(_split(), methods=["QuAcc1xn+1_SLD", "QuAcc1xn2_SLD"], n_samples=5,
                                   sample_size=50, measures=("accuracy", "macro_f1"), progress=False)
    assert set(df[df.method == "QuAcc1xn+1_SLD"].measure) == {"accuracy"}
    assert set(df[df.method == "QuAcc1xn2_SLD"].measure) == {"accuracy", "macro_f1"}


def _split(n=3, seed=0):
    from capshift.datasets import Split

    rng = np.random.default_rng(seed)
    y = rng.integers(0, n, 1800)
    X = rng.normal(size=(1800, 4)) + 1.2 * np.eye(n, 4)[y]
    return Split("toy", X[:600], y[:600], X[600:1200], y[600:1200], X[1200:], y[1200:], np.arange(n), n)


def test_covariates_match_hand_computed_values():
    P = np.array([[0.7, 0.2, 0.1], [1 / 3, 1 / 3, 1 / 3], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(max_confidence(P), [0.7, 1 / 3, 1.0])
    ne = [0.7 * np.log(0.7) + 0.2 * np.log(0.2) + 0.1 * np.log(0.1), -np.log(3), 0.0]
    np.testing.assert_allclose(negative_entropy(P), ne)
    logs = np.log([0.7, 0.2, 0.1])
    mis = max_inverse_softmax(P)
    assert mis[0] == pytest.approx(np.log(0.7) - logs.mean())
    assert mis[1] == pytest.approx(0.0, abs=1e-12)
    assert np.isfinite(mis[2]) and mis[2] == pytest.approx(2 / 3 * (0 - np.log(1e-12)))
    Xh = augment_features(np.ones((3, 2)), P, True)
    np.testing.assert_allclose(Xh, np.column_stack([np.ones((3, 2)), P, max_confidence(P), ne, mis]))
    assert augment_features(np.ones((3, 2)), P, ("mis",)).shape == (3, 6)
    assert augment_features(np.ones((3, 2)), P).shape == (3, 5)


def test_sparse_input_stays_sparse():
    rng = np.random.default_rng(0)
    X = sp.random(300, 50, density=0.05, format="csr", random_state=0)
    P = rng.dirichlet(np.ones(2), 300)
    Xh = augment_features(X, P, True)
    assert sp.issparse(Xh) and Xh.format == "csr" and Xh.shape == (300, 55)
    np.testing.assert_allclose(Xh[:, :50].toarray(), X.toarray())
    np.testing.assert_allclose(Xh[:, 50:52].toarray(), P)
    # end to end on tf-idf-like data: the quantifier is trained on a sparse x̂
    y = (np.asarray(X[:, :5].sum(axis=1)).ravel() + 0.1 * rng.normal(size=300) > 0.05).astype(int)
    h = LogisticRegression().fit(X[:100], y[:100])
    est = QuAcc1xN2(h, quantifier="sld", covariates=True).fit(X[100:200], y[100:200])
    seen = {}
    q = est.quantifiers_[0]
    orig = q.classify
    q.classify = lambda Z: (seen.setdefault("sparse", sp.issparse(Z)), orig(Z))[1]
    T = est.predict_table(X[200:])
    assert seen["sparse"] and T.shape == (2, 2) and T.sum() == pytest.approx(1.0)


def test_cell_labels():
    y, p = np.array([0, 1, 2, 2]), np.array([0, 2, 1, 2])
    np.testing.assert_array_equal(cell_labels(y, p, 3), [0, 5, 7, 8])
    np.testing.assert_array_equal(cell_labels(y, p, 3, "1xn+1"), [0, 3, 3, 2])
    with pytest.raises(ValueError, match="variant"):
        cell_labels(y, p, 3, "2x2")
    with pytest.raises(ValueError, match="outside"):
        cell_labels(y, p, 2)


def test_bad_input_is_reported():
    h, X_V, y_V, X_U, y_U = _real()
    with pytest.raises(ValueError, match="unknown quantifier"):
        QuAcc1xN2(h, quantifier="emq!").fit(X_V, y_V)
    with pytest.raises(ValueError, match="unknown covariate"):
        QuAcc1xN2(h, covariates=("mc", "foo")).fit(X_V, y_V)
    with pytest.raises(TypeError, match="predict_proba"):
        QuAcc1xN2(LinearSVC().fit(X_V, y_V)).fit(X_V, y_V)
    with pytest.raises(ValueError, match="posteriors has"):
        augment_features(X_V, h.predict_proba(X_V[:5]))
    with pytest.raises(ValueError, match="sum to 1"):
        augment_features(X_V[:2], np.array([[0.5, 0.6, 0.0], [1, 0, 0]]))
    with pytest.raises(ValueError, match="bandwidth"):
        QuAcc1xN2(h, quantifier="kdey", bandwidth=0).fit(X_V, y_V)
    with pytest.raises(Exception, match="not fitted"):
        QuAccNxN(h).predict(X_U)


def test_grid_search_selects_and_refits():
    h, X_V, y_V, X_U, y_U = _real(seed=3)
    ests = [QuAcc1xN2(h, quantifier="sld"), QuAccNxN(h, quantifier="sld"), QuAcc1xNp1(h, quantifier="sld")]
    gs = QuAccGridSearch(h, ests, {"covariates": [False, True]}, n_samples=20, random_state=0).fit(X_V, y_V)
    assert len(gs.cv_results_) == 6
    assert gs.best_score_ == min(r["mae"] for r in gs.cv_results_)
    assert gs.best_params_["variant"] in {"QuAcc1xN2", "QuAccNxN", "QuAcc1xNp1"}
    assert gs.best_estimator_.classifier is h and gs.best_estimator_.val_table_.sum() == pytest.approx(1)
    np.testing.assert_allclose(gs.predict_table(X_U), gs.best_estimator_.predict_table(X_U))
    # macro-F1 in the multiclass case: 1x(n+1) is skipped (the paper's step (f))
    gs2 = QuAccGridSearch(h, ests, {"covariates": [False]}, measure="macro_f1", n_samples=10).fit(X_V, y_V)
    assert {r["variant"] for r in gs2.cv_results_} == {"QuAcc1xN2", "QuAccNxN"}
    with pytest.raises(ValueError, match="holdout"):
        QuAccGridSearch(h, ests, holdout=1.5).fit(X_V, y_V)
    # several measures at once come from the selected estimator's tables (gs2 selected a full-table variant)
    samples = [X_U[:150], X_U[150:300]]
    out = gs2.predict_measures(samples, ["accuracy", "macro_f1"])
    for m in ("accuracy", "macro_f1"):
        np.testing.assert_allclose(out[m], gs2.best_estimator_.predict_batch(samples, m), atol=1e-12)


def test_paper_grid():
    from sklearn.model_selection import ParameterGrid

    # C in 10^-3..10^3 (7) x class_weight (2) x covariates (2), times recalib (2) for SLD, bandwidth (20) for KDEy
    assert len(ParameterGrid(paper_grid("cc"))) == 28
    assert len(ParameterGrid(paper_grid("sld"))) == 56
    g = paper_grid("kdey")
    assert len(ParameterGrid(g)) == 560 and g["bandwidth"][0] == 0.01 and g["bandwidth"][-1] == 0.2
    assert "bandwidth" not in paper_grid("sld") and "recalib" not in paper_grid("kdey")
    with pytest.raises(ValueError, match="quantifier"):
        paper_grid("acc")


def test_methods_registered_and_protocol():
    from capshift import registry

    assert {"QuAcc1xn2_SLD", "QuAccnxn_KDEy", "QuAcc1xn+1_CC", "QuAcc(SLD)"} <= set(registry.names("quacc"))
    P = experiment.quacc_train_prevalences(2, 9)
    np.testing.assert_allclose(P[:, 1], np.arange(1, 10) / 10)
    Pm = experiment.quacc_train_prevalences(4, 5, seed=1)
    assert Pm.shape == (5, 4) and Pm.min() >= 0.1 / 4 - 1e-12
    np.testing.assert_allclose(Pm.sum(1), 1)
    df = experiment.run_quacc_protocol(_split(n=2), methods=["Naive", "QuAccnxn_SLD"], n_train=3, test_repeats=1,
                                       sample_size=50, measures=("accuracy",))
    assert len(df) == 3 * 21 * 2 and sorted(df.train_index.unique()) == [0, 1, 2]
    assert df.groupby("train_index").train_prev.first().tolist() == [(0.9, 0.1), (0.5, 0.5), (0.1, 0.9)]
    # training prevalences 0.9/0.1 and 0.1/0.9 put V far from most APP test samples: Naive (IID assumption) is
    # badly off there, QuAcc (PPS-robust cell quantification) much less so
    mae = df.groupby(["train_index", "method"]).ae.mean()
    for t in (0, 2):
        assert mae[(t, "QuAccnxn_SLD")] < 0.5 * mae[(t, "Naive")]


# ------------------------------------------------------------------------------------------ configuration study
def test_gaussian_split_shapes_prevalence_and_means():
    from capshift.quacc import gaussian_split

    s = gaussian_split(n_classes=3, n_train=300, n_val=3000, n_test=400, dim=2, separation=1.5, seed=4)
    assert (s.X_L.shape, s.X_V.shape, s.X_U.shape) == ((300, 2), (3000, 2), (400, 2)) and s.n_classes == 3
    # uniform prevalence; class means separation * e_i (the third class, beyond dim, at the origin)
    np.testing.assert_allclose(np.bincount(s.y_V) / 3000, 1 / 3, atol=0.03)
    means = np.stack([s.X_V[s.y_V == i].mean(0) for i in range(3)])
    np.testing.assert_allclose(means, 1.5 * np.eye(3, 2), atol=0.1)
    again = gaussian_split(n_classes=3, n_train=300, n_val=3000, n_test=400, dim=2, separation=1.5, seed=4)
    np.testing.assert_array_equal(again.X_U, s.X_U)


def test_configuration_study_agrees_with_a_direct_computation():
    from capshift.protocols import upp_indices
    from capshift.experiment import configuration_study
    from capshift.quacc import gaussian_split

    split = gaussian_split(n_train=400, n_val=400, n_test=600, seed=1)
    confs = {"Naive": "Naive", "nxn CC": lambda h: QuAccNxN(h, "cc"),
             "1xn+1 CC": lambda h: QuAcc1xNp1(h, "cc")}
    res = configuration_study(split, confs, n_samples=5, sample_size=100, measure="macro_f1", seed=2)
    assert len(res) == 15 and set(res["configuration"]) == set(confs)
    # the true values and the Naive prediction, recomputed from the same h and samples
    h = experiment.make_classifier("lr", 2).fit(split.X_L, split.y_L)
    idx = upp_indices(split.y_U, 100, 5, 2, n_classes=3)
    true = [macro_f1(contingency_table(split.y_U[i], h.predict(split.X_U[i]), 3)) for i in idx]
    naive = res[res.configuration == "Naive"]
    np.testing.assert_allclose(naive["true"], true)
    np.testing.assert_allclose(naive["predicted"], macro_f1(contingency_table(split.y_V, h.predict(split.X_V), 3)))
    # a factory configuration: the same as fitting it by hand
    est = QuAccNxN(h, "cc").fit(split.X_V, split.y_V)
    mine = res[res.configuration == "nxn CC"]
    np.testing.assert_allclose(mine["predicted"], [float(macro_f1(est.predict_table(split.X_U[i]))) for i in idx])
    np.testing.assert_allclose(mine["ae"], np.abs(mine["predicted"] - mine["true"]))
    # 1x(n+1) cannot estimate macro-F1 for 3 classes: NaN, not an error
    assert res[res.configuration == "1xn+1 CC"]["predicted"].isna().all()


@pytest.mark.parametrize("quantifier", ["sld", "cc"])
def test_1xnp1_is_1xn2_when_every_error_cell_is_rated(quantifier):
    """The identity of the book's configuration study (quacc, "variant 1×(n+1)" gives the default's predictions to
    the last digit). When every error cell is left to V's rates, 1×n² trains its quantifier on V's correctly
    classified items with the labels i*n+i and 1×(n+1) on the same items with the labels i: the same classes in the
    same order, so the same fitted quantifier; both then fill cell (i, j) with Ĉ_ii C^V_ij / C^V_ii. The tables are
    equal exactly. Once the error cells are quantified (min_separation=0, the paper's setting) the two differ."""
    from capshift.protocols import upp_indices
    from capshift.quacc import gaussian_split

    split = gaussian_split(n_classes=3, n_train=600, n_val=900, n_test=1500, seed=3)
    h = experiment.make_classifier("lr", 3).fit(split.X_L, split.y_L)
    samples = [split.X_U[i] for i in upp_indices(split.y_U, 300, 6, 3, n_classes=3)]
    off = ~np.eye(3, dtype=bool)
    # min_separation = 1: no cell but each column's absorber (the diagonal) counts as separated
    a = QuAcc1xN2(h, quantifier, min_separation=1.0, random_state=0).fit(split.X_V, split.y_V)
    b = QuAcc1xNp1(h, quantifier, min_separation=1.0, random_state=0).fit(split.X_V, split.y_V)
    assert a.rate_cells_[off].all() and b.rate_cells_[off].all() and not a.rate_cells_.diagonal().any()
    np.testing.assert_array_equal(a.predict_table_batch(samples), b.predict_table_batch(samples))
    # the defaults (min_separation = 0.5) on this problem leave every error cell to the rates too: the same estimator
    a5 = QuAcc1xN2(h, quantifier, random_state=0).fit(split.X_V, split.y_V)
    b5 = QuAcc1xNp1(h, quantifier, random_state=0).fit(split.X_V, split.y_V)
    if a5.rate_cells_[off].all() and b5.rate_cells_[off].all():
        np.testing.assert_array_equal(a5.predict_batch(samples), b5.predict_batch(samples))
    a0 = QuAcc1xN2(h, quantifier, min_separation=0.0, random_state=0).fit(split.X_V, split.y_V)
    b0 = QuAcc1xNp1(h, quantifier, min_separation=0.0, random_state=0).fit(split.X_V, split.y_V)
    assert not a0.rate_cells_.any() and not b0.rate_cells_.any()
    assert np.abs(a0.predict_batch(samples) - b0.predict_batch(samples)).max() > 1e-6

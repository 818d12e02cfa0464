"""Tests for capshift.protocols: UPP/APP sample indices through QuaPy."""
import numpy as np
import pytest
import quapy as qp
from quapy.data import LabelledCollection
from scipy import stats

from capshift import protocols as P

Y3 = np.repeat([0, 1, 2], [60, 30, 10])
Y2 = np.repeat([0, 1], [40, 160])


def test_upp_deterministic_and_sized():
    a, b, c = (P.upp_indices(Y3, 50, 20, seed=s) for s in (7, 7, 8))
    assert len(a) == 20 and all(i.shape == (50,) and i.dtype.kind == "i" for i in a)
    assert all(np.array_equal(x, z) for x, z in zip(a, b))
    assert not all(np.array_equal(x, z) for x, z in zip(a, c))
    assert all(i.min() >= 0 and i.max() < len(Y3) for i in a)


def test_upp_is_quapys_upp_and_keeps_global_rng():
    state = np.random.get_state()[1].copy()
    ours = P.upp_indices(Y3, 100, 10, seed=3)
    assert np.array_equal(np.random.get_state()[1], state)
    lc = LabelledCollection(Y3.reshape(-1, 1), Y3)
    theirs = list(qp.protocol.UPP(lc, sample_size=100, repeats=10, random_state=3, return_type="index")())
    assert all(np.array_equal(x, z) for x, z in zip(ours, theirs))
    assert len(P.upp_indices(Y3, 100, 1, seed=3)) == 1  # QuaPy's UPP fails for repeats=1


@pytest.mark.parametrize("y,n", [(Y2, 2), (Y3, 3)])
def test_sample_prevalence_matches_request(y, n):
    size, reps = 100, 200
    idx = P.upp_indices(y, size, reps, seed=0)
    prevs = P.upp_prevalences(n, reps, seed=0)
    assert prevs.shape == (reps, n) and np.allclose(prevs.sum(axis=1), 1)
    got = np.array([P.sample_prevalence(y, i, n) for i in idx])
    # per-class counts are round(size * p) plus at most the rounding remainder (< n/2 items)
    assert np.abs(got - prevs).max() <= (0.5 + n / 2) / size
    if n == 2:
        assert np.abs(got - prevs).max() <= 0.5 / size + 1e-12


def test_upp_covers_the_simplex_uniformly():
    reps = 4000
    p = P.upp_prevalences(2, reps, seed=1)[:, 1]
    assert abs(p.mean() - 0.5) < 4 * np.sqrt(1 / 12 / reps)
    assert stats.kstest(p, "uniform").pvalue > 1e-3
    p3 = P.upp_prevalences(3, reps, seed=1)  # uniform on the 2-simplex: each marginal is Beta(1, 2)
    assert stats.kstest(p3[:, 0], stats.beta(1, 2).cdf).pvalue > 1e-3


def test_sampling_with_replacement():
    y = np.array([0, 0, 1, 1, 1])
    idx = P.upp_indices(y, 50, 3, seed=0)
    assert all(len(i) == 50 and len(np.unique(i)) <= 5 for i in idx)


def test_app_grid_and_samples():
    grid = P.app_prevalences(3, n_prevalences=5, repeats=2)
    assert grid.shape == (15 * 2, 3) and np.allclose(grid.sum(axis=1), 1)
    assert np.allclose(grid * 4, np.round(grid * 4)) and len(np.unique(grid, axis=0)) == 15
    assert np.allclose(P.app_prevalences(2, 3), [[0, 1], [0.5, 0.5], [1, 0]])
    idx = P.app_indices(Y3, 40, n_prevalences=5, repeats=2, seed=0)
    assert len(idx) == 30 and all(len(i) == 40 for i in idx)
    got = np.array([P.sample_prevalence(Y3, i, 3) for i in idx])
    assert np.abs(got - grid).max() <= 2 / 40
    assert all(np.array_equal(x, z) for x, z in zip(idx, P.app_indices(Y3, 40, 5, 2, seed=0)))


def test_validation_errors():
    with pytest.raises(ValueError, match="sample_size"):
        P.upp_indices(Y3, 0, 5, seed=0)
    with pytest.raises(ValueError, match="repeats"):
        P.upp_indices(Y3, 10, 0, seed=0)
    with pytest.raises(ValueError, match=r"class\(es\) \[2\]"):
        P.upp_indices(Y2, 10, 5, seed=0, n_classes=3)
    with pytest.raises(ValueError, match=r"class\(es\) \[1\]"):
        P.app_indices(np.array([0, 0, 2]), 10)
    with pytest.raises(ValueError, match="integer"):
        P.upp_indices(Y3.astype(float), 10, 5, seed=0)
    with pytest.raises(TypeError, match="seed"):
        P.upp_indices(Y3, 10, 5, seed=None)
    with pytest.raises(TypeError, match="sample_size"):
        P.upp_indices(Y3, 10.0, 5, seed=0)


def test_sample_prevalence_rejects_codes_outside_the_codeframe():
    # a code >= n_classes would silently be left out of the fractions (which would no longer describe the sample)
    assert np.allclose(P.sample_prevalence(Y3, [0, 60, 95, 99], 3), [0.25, 0.25, 0.5])
    with pytest.raises(ValueError, match=r"codes 0\.\.2, outside 0\.\.1"):
        P.sample_prevalence(Y3, [0, 99], 2)
    with pytest.raises(ValueError, match="empty"):
        P.sample_prevalence(Y3, [], 3)


def test_sample_at_hits_the_requested_prevalence_and_is_seeded():
    from capshift.protocols import sample_at, sample_prevalence

    y = np.repeat([0, 1, 2], [50, 30, 20])
    idx = sample_at(y, [0.2, 0.3, 0.5], 200, seed=4)
    np.testing.assert_allclose(sample_prevalence(y, idx, 3), [0.2, 0.3, 0.5])
    np.testing.assert_array_equal(idx, sample_at(y, [0.2, 0.3, 0.5], 200, seed=4))
    with pytest.raises(ValueError, match="distribution"):
        sample_at(y, [0.5, 0.6, 0.1], 10, seed=0)


# ---- protocols as objects and their registry
def test_registry_lists_the_pps_protocols_and_makes_them():
    assert P.names()[:3] == ["upp", "app", "npp"]
    assert isinstance(P.make_protocol("upp"), P.UPP) and P.make_protocol("app").n_prevalences == 21
    proto = P.make_protocol("app", n_prevalences=11)
    assert P.make_protocol(proto) is proto
    with pytest.raises(ValueError, match=r"unknown protocol 'uniform'.*'upp', 'app', 'npp'"):
        P.make_protocol("uniform")
    with pytest.raises(ValueError, match=r"no parameter\(s\) \['repeats'\].*n_prevalences"):
        P.make_protocol("app", repeats=2)
    with pytest.raises(TypeError, match="protocol must be a protocol name"):
        P.make_protocol(3)
    with pytest.raises(ValueError, match="Protocol instance"):
        P.make_protocol(proto, n_prevalences=5)


def test_protocol_objects_draw_what_the_functions_draw():
    upp = P.make_protocol("upp").indices(Y3, 50, 20, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(upp, P.upp_indices(Y3, 50, 20, 4)))
    # APP: the 21-point grid repeated ceil(n_samples / 21) times, cut at n_samples (the runner's rule)
    app = P.make_protocol("app").indices(Y2, 30, 50, seed=4)
    ref = P.app_indices(Y2, 30, repeats=3, seed=4)[:50]
    assert len(app) == 50 and all(np.array_equal(a, b) for a, b in zip(app, ref))
    coarse = P.make_protocol("app", n_prevalences=5).indices(Y2, 40, 5, seed=0)
    got = [P.sample_prevalence(Y2, i, 2)[1] for i in coarse]
    assert np.allclose(sorted(got), [0, .25, .5, .75, 1])  # the 5-point grid, one sample each


def test_npp_is_quapys_npp_at_the_pools_prevalence():
    ours = P.npp_indices(Y2, 50, 30, seed=5)
    lc = LabelledCollection(Y2.reshape(-1, 1), Y2)
    theirs = list(qp.protocol.NPP(lc, sample_size=50, repeats=30, random_state=5, return_type="index")())
    assert all(np.array_equal(a, b) for a, b in zip(ours, theirs))
    assert not all(np.array_equal(a, b) for a, b in zip(ours, P.npp_indices(Y2, 50, 30, seed=6)))
    mean = np.mean([P.sample_prevalence(Y2, i, 2)[1] for i in ours])
    assert abs(mean - 0.8) < 0.03  # the pool's prevalence: 160 of 200 (standard error of the mean .01)


def test_protocol_key_names_only_changed_parameters():
    assert P.make_protocol("upp").key() == "upp" and P.make_protocol("app").key() == "app"
    assert P.make_protocol("app", n_prevalences=11).key() == "app(n_prevalences=11)"
    assert repr(P.make_protocol("app")) == "APP(n_prevalences=21)"


def test_register_adds_a_protocol_in_one_place(monkeypatch):
    monkeypatch.setattr(P, "PROTOCOLS", dict(P.PROTOCOLS))

    @P.register
    class Fixed(P.Protocol):
        name, description = "first-items", "the first items of the pool"

        def indices(self, y, sample_size, n_samples, seed, n_classes=None):
            return [np.arange(sample_size)] * n_samples

    assert "first-items" in P.names() and isinstance(P.make_protocol("first-items"), Fixed)
    with pytest.raises(ValueError, match="not registered yet"):
        P.register(Fixed)
    with pytest.raises(TypeError):
        P.register(object)


def test_app_refuses_a_grid_of_fewer_than_two_points_when_made():
    from capshift import protocols

    with pytest.raises(ValueError, match="n_prevalences"):
        protocols.make_protocol("app", n_prevalences=1)
    with pytest.raises(TypeError, match="n_prevalences"):
        protocols.make_protocol("app", n_prevalences=2.5)

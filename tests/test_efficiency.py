"""capshift.efficiency: the timing helper behind the efficiency chapter (warm, median of repeats) and one small
benchmark row."""
import numpy as np

from capshift import efficiency


def test_time_per_sample_warms_up_and_takes_the_median():
    calls = []

    def fn():
        calls.append(len(calls))
        return len(calls)

    seconds, out = efficiency.time_per_sample(fn, reps=3)
    assert len(calls) == 4  # one untimed warm-up call, then three timed ones
    assert out == 4 and seconds >= 0.0


def test_time_per_sample_stops_at_the_budget_and_times_at_least_once():
    calls = []
    seconds, _ = efficiency.time_per_sample(lambda: calls.append(1), reps=5, warmup=False, budget=0.0)
    assert len(calls) == 1 and np.isfinite(seconds)


def test_run_reports_warm_times_and_exact_gaps():
    bench = efficiency.run([2, 3], 5, osqp_samples=2, reps=2, verbose=False)
    assert list(bench.n) == [2, 3]
    assert (bench.capshift_ms > 0).all() and (bench.osqp_ms > 0).all()
    assert (bench.abs_gap >= bench.gap).all() and (bench.abs_gap < 1e-6).all()
    assert (bench.min_cell >= 0).all() and (bench.max_sum_err < 1e-12).all()

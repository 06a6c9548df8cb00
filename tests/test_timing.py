import time

import torch

from kbharness.timing import Timer, cache_bytes


def test_cpu_timer_measures_the_call_and_returns_its_output():
    timer = Timer(torch.device("cpu"))
    timed = timer.time(lambda: (time.sleep(0.02), 7)[1], on_return=lambda out: out * 2)
    assert timed.output == 7 and timed.at_return == 14
    assert 19.0 <= timed.time.call_ms < 200.0
    assert timed.time.wall_ms >= timed.time.queued_ms >= timed.time.call_ms


def test_flush_buffer_is_twice_the_cache():
    timer = Timer(torch.device("cpu"))
    assert timer._flush_buf.numel() * 4 >= 2 * cache_bytes(torch.device("cpu")) - 3


def test_median_interval_covers_the_true_median_about_95_percent_of_the_time():
    import random

    from kbharness.results import Timing

    rng = random.Random(1)
    covered = 0
    for _ in range(400):
        t = Timing(tuple(rng.lognormvariate(0, 0.1) for _ in range(60)))  # true median 1.0
        lo, hi = t.median_ci()
        covered += lo <= 1.0 <= hi
    assert 0.92 <= covered / 400 <= 0.995
    tight = Timing(tuple(1.0 + 0.001 * (i % 7) for i in range(200)))
    assert tight.ci_rel < 0.005 and tight.sem_ms < 0.001
    assert set(tight.summary()) >= {"median_ci_low_ms", "median_ci_high_ms", "sem_ms", "iqr_ms"}


def test_a_moved_clock_or_temperature_is_worth_a_warning():
    from kbharness.env import state_drift

    start = {"sm_mhz": 1980.0, "temp_c": 40.0}
    assert state_drift(start, {"sm_mhz": 1950.0, "temp_c": 45.0}) == ""
    assert state_drift(start, {"sm_mhz": 1500.0, "temp_c": 41.0}) == "GPU state moved during timing: SM clock 1980 → 1500 MHz"
    assert "temperature 40 → 62 °C" in state_drift(start, {"sm_mhz": 1980.0, "temp_c": 62.0})
    assert state_drift(None, None) == ""


def test_a_staged_call_finds_its_inputs_poisoned_then_loaded_before_it_runs():
    log = []

    class Stage:
        def poison(self):
            log.append("poison")

        def load(self):
            log.append("load")

    Timer(torch.device("cpu")).time(lambda: log.append("call"), stage=Stage())
    assert log == ["poison", "load", "call"]


def test_poison_is_wrong_for_every_dtype_and_load_restores_the_values():
    from kbharness.evaluate import _Staged

    values = [torch.randn(8), torch.arange(8), torch.tensor([True, False]), 3]
    buffers = [v.clone() if isinstance(v, torch.Tensor) else v for v in values]
    stage = _Staged(buffers, values)
    stage.poison()
    assert torch.isnan(buffers[0]).all()
    assert not (buffers[1] == values[1]).any() and not (buffers[2] == values[2]).any()
    stage.load()
    assert all(torch.equal(b, v) for b, v in zip(buffers[:3], values[:3])) and buffers[3] == 3

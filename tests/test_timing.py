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

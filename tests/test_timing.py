import time

import torch

from kbharness.common.timing import CpuTimer, cache_bytes


def test_cpu_timer_measures_the_call_and_returns_its_output():
    timer = CpuTimer(torch.device("cpu"))
    timed = timer.time(lambda: (time.sleep(0.02), 7)[1], on_return=lambda out: out * 2)
    assert timed.output == 7 and timed.at_return == 14
    assert 19.0 <= timed.time.call_ms < 200.0
    assert timed.time.wall_ms >= timed.time.queued_ms >= timed.time.call_ms


def test_flush_buffer_is_twice_the_cache():
    timer = CpuTimer(torch.device("cpu"))
    assert timer._flush_buf.numel() * 4 >= 2 * cache_bytes(torch.device("cpu")) - 3


def test_median_interval_covers_the_true_median_about_95_percent_of_the_time():
    import random

    from kbharness.common.results import Timing

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
    from kbharness.common.env import state_drift

    start = {"sm_mhz": 1980.0, "temp_c": 40.0}
    assert state_drift(start, {"sm_mhz": 1950.0, "temp_c": 45.0}) == ""
    assert state_drift(start, {"sm_mhz": 1500.0, "temp_c": 41.0}) == "GPU state moved during timing: SM clock 1980 → 1500 MHz"
    assert "temperature 40 → 62 °C" in state_drift(start, {"sm_mhz": 1980.0, "temp_c": 62.0})
    assert state_drift(None, None) == ""


class LoggingStage:
    """A stage that writes what was done to it into ``log``."""

    def __init__(self, log: list):
        self.log = log

    def poison(self):
        self.log.append("poison")

    def load(self):
        self.log.append("load")


def test_a_staged_call_finds_its_inputs_poisoned_then_loaded_before_it_runs():
    log = []
    CpuTimer(torch.device("cpu")).time(lambda: log.append("call"), stage=LoggingStage(log))
    assert log == ["poison", "load", "call"]


def test_poison_is_wrong_for_every_dtype_and_load_restores_the_values():
    from kbharness.common.calls import Staged as _Staged

    values = [torch.randn(8), torch.arange(8), torch.tensor([True, False]), 3]
    buffers = [v.clone() if isinstance(v, torch.Tensor) else v for v in values]
    stage = _Staged(buffers, values)
    stage.poison()
    assert torch.isnan(buffers[0]).all()
    assert not (buffers[1] == values[1]).any() and not (buffers[2] == values[2]).any()
    stage.load()
    assert all(torch.equal(b, v) for b, v in zip(buffers[:3], values[:3])) and buffers[3] == 3


def _once(host_ms, log):
    """A fake CUDA attempt: the device reaches the start event 0.01 ms after the lead ends."""
    from kbharness.common.timing import CallTime, Timed

    def once(lead_ms):
        log.append(lead_ms)
        return Timed(CallTime(0.1, 1.0, 1.0), "out", None), host_ms(lead_ms), lead_ms + 0.01

    return once


def test_a_lead_grows_until_the_call_is_queued_and_keeps_that_length():
    from kbharness.common.timing import FIRST_LEAD_MS, Lead

    lead, log = Lead(), []
    once = _once(lambda lead_ms: 1.0, log)
    assert not lead.run(once).time.host_bound
    assert len(log) == 2 and log[1] > 1.0
    assert not lead.run(once).time.host_bound
    assert len(log) == 3 and lead.ms == log[1] > FIRST_LEAD_MS


def test_a_model_that_waits_for_the_device_gets_one_attempt_once_it_proved_host_bound():
    from kbharness.common.timing import ATTEMPTS, FIRST_LEAD_MS, Lead

    lead, log = Lead(), []
    once = _once(lambda lead_ms: lead_ms + 0.5, log)
    assert all(lead.run(once).time.host_bound for _ in range(4))
    assert len(log) == ATTEMPTS + 3
    assert lead.ms == FIRST_LEAD_MS


def test_one_host_bound_hiccup_keeps_the_lead_and_costs_one_call():
    from kbharness.common.timing import Lead

    lead, log = Lead(), []
    lead.run(_once(lambda lead_ms: 1.0, log))
    grown = lead.ms
    assert lead.run(_once(lambda lead_ms: lead_ms + 5.0, log)).time.host_bound
    assert lead.ms == grown
    before = len(log)
    assert not lead.run(_once(lambda lead_ms: 1.0, log)).time.host_bound
    assert len(log) == before + 1 and lead.ms == grown


def test_an_evaluation_and_a_baseline_take_their_times_from_the_timer_protocol(tmp_path, monkeypatch):
    """The fake timer's known times come out as the record's speedup and the baseline's times:
    both go through ``timing.Timer`` and nothing else measures."""
    import pytest

    from conftest import CANDIDATES, FAST, TINY_PROBLEM, evaluate_here
    from kbharness.orchestration import baseline
    from kbharness.common import timing
    from kbharness.common.results import Verdict
    from kbharness.common.spec import EvalSpec, Settings

    fake = timing.FakeTimer({"candidate": [1.0, 1.2], "reference": [2.5, 3.0]})
    monkeypatch.setitem(timing.TIMERS, "cpu", lambda device: fake)
    settings = Settings(device="cpu", **FAST)
    r = evaluate_here(EvalSpec(TINY_PROBLEM, CANDIDATES / "correct.py", settings, tmp_path / "cache"), tmp_path)
    assert r.verdict is Verdict.CORRECT, r.message
    assert set(r.new_timing.times_ms) == {1.0, 1.2} and set(r.ref_timing.times_ms) == {2.5, 3.0}
    assert r.speedup == pytest.approx(r.ref_timing.median_ms / r.new_timing.median_ms)
    assert 2.0 <= r.speedup <= 3.0

    monkeypatch.setitem(timing.TIMERS, "cpu", lambda device: timing.FakeTimer({None: [4.0]}))
    assert set(baseline.measure(TINY_PROBLEM, settings)) == {4.0}


def test_the_fake_timer_stages_inputs_and_applies_on_return_like_the_real_ones():
    from kbharness.common.timing import FakeTimer

    log = []
    timed = FakeTimer({"m": [0.5]}, host_bound=True).time(lambda: log.append("call") or 3, lambda out: out + 1,
                                                          stage=LoggingStage(log), key="m")
    assert log == ["poison", "load", "call"] and timed.output == 3 and timed.at_return == 4
    assert timed.time.call_ms == 0.5 and timed.time.host_bound


def test_memory_a_timed_cpu_call_frees_is_there_for_the_next_without_page_faults():
    """1/95's 512 MiB temporary faulted in afresh every call (70% of the call, and on a loaded
    two-core host the runner's calls came out 0.4x the judge's for the same code). A process
    that times on the CPU keeps freed memory: after a few calls, a call's fresh buffer and
    temporary fault in nothing."""
    import subprocess
    import sys

    probe = """
import resource, sys, torch
from kbharness.common.timing import CpuTimer
if sys.argv[1] == "timer":
    CpuTimer(torch.device("cpu"))
x = torch.rand(2**24)
faults = []
for _ in range(6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    buf = torch.empty_like(x)
    buf.copy_(x)
    torch.softmax(buf, 0).sum()
    del buf
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(min(faults[3:]))
"""
    pages = 2 * 2**24 * 4 // 4096  # the buffer's and the temporary's
    run = lambda how: int(subprocess.run([sys.executable, "-c", probe, how], capture_output=True, text=True,  # noqa: E731
                                         check=True).stdout)
    assert run("plain") > pages // 2  # glibc's default: each large block a mapping of its own
    assert run("timer") < pages // 20

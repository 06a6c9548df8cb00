"""Timing one call of a model: device time, with the cache flushed first.

On CUDA the call is bracketed by events on the current stream, the L2 cache is overwritten
just before (so no call is served by data its predecessor left behind), and a host clock
between the timer's stream finishing and the whole device finishing lets the caller notice
device work that outlived the end event (work hidden on another stream). On the CPU the same protocol uses ``perf_counter_ns``
and a buffer larger than the last-level cache.

The device must not wait for the host inside the timed region: after a synchronize it is
idle, and a call whose Python takes longer to launch its first kernel than the flush takes
to run would be charged for its host overhead (on the H100, +17% to +53% against Nsight
Compute for 0.2 ms candidates, and the figure moved by 9-13% between processes with the
host's jitter). So a spin kernel leads the flush, long enough that the whole call is queued
before the start event is reached; a call whose host time still exceeds the lead is timed
again with a longer one, and one that stays host-bound (a synchronize inside the call)
is reported as such. Each model keeps its own lead (``key``), so one that synchronizes does
not reset the lead another needs. The call's inputs are written by ``stage`` inside the lead, after
the spin, and poisoned before it, so work a candidate hides on another stream cannot use the
lead: it would read poison.

Clock and event functions are bound at import, before any candidate code runs. A timer is
anything with ``Timer``'s two methods: ``CpuTimer`` and ``CudaTimer`` (a CUDA graph's replay
is one more call to it), chosen by device type from ``TIMERS``, and ``FakeTimer``, which
measures nothing, for tests of what the harness does with times.
"""
from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Protocol

import torch

_perf_counter_ns = time.perf_counter_ns
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed = torch.cuda.Event.elapsed_time
_event_sync = torch.cuda.Event.synchronize
_cuda_sync = torch.cuda.synchronize
_zero_ = torch.Tensor.zero_
_sum = torch.Tensor.sum
_empty = torch.empty
_spin = torch.cuda._sleep

DEFAULT_CPU_LLC_BYTES = 32 * 2**20
DEFAULT_GPU_L2_BYTES = 50 * 2**20
FIRST_LEAD_MS = 0.05
MAX_LEAD_MS = 20.0
LEAD_MARGIN_MS = 0.02
ATTEMPTS = 3


@dataclass(frozen=True)
class CallTime:
    """One timed call: device time of the call alone, and host wall time of flush + call + sync."""

    call_ms: float
    wall_ms: float
    queued_ms: float
    host_bound: bool = False
    # Host time from the timer's stream being done to the whole device being done: work left
    # on another stream. Two back-to-back host calls, so launch latency and a busy host's
    # scheduling barely reach it (the whole call's wall clock moved by milliseconds under load).
    pending_ms: float = 0.0


@dataclass(frozen=True)
class Timed:
    """A timed call's output, and what ``on_return`` saw of it before the device was synchronized."""

    time: CallTime
    output: Any
    at_return: Any


def cache_bytes(device: torch.device) -> int:
    """Size of the cache a flush must overwrite: the GPU's L2, or the CPU's last level."""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return int(getattr(props, "L2_cache_size", 0) or DEFAULT_GPU_L2_BYTES)
    for name in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            size = os.sysconf(name)
        except (ValueError, OSError):
            continue
        if size and size > 0:
            return size
    return DEFAULT_CPU_LLC_BYTES


class Stage(Protocol):
    """A call's inputs: ``poison`` overwrites the buffers the call reads, ``load`` writes its values."""

    def poison(self) -> None: ...

    def load(self) -> None: ...


class Lead:
    """How long the spin kernel runs before one model's calls, and whether that model has
    proved host-bound.

    A call that is not fully queued when the device reaches its start event is timed again
    with a lead grown by twice the shortfall. One still short after ``ATTEMPTS`` waits for the
    device itself: the lead goes back to what it was before that call (a longer one cannot
    help, and would cost every later call its spin), and the model's next call gets a single
    attempt; a call that is then fully queued clears the mark, so one hiccup costs one call.
    """

    def __init__(self) -> None:
        self.ms = FIRST_LEAD_MS
        self.host_bound = False

    def run(self, once: Callable[[float], tuple[Timed, float, float]]) -> Timed:
        """``once(lead_ms)`` times one call and returns it with the host's time to queue it and
        the device's time to reach the start event."""
        start = self.ms
        attempts = 1 if self.host_bound else ATTEMPTS
        for attempt in range(attempts):
            timed, host_ms, ahead_ms = once(self.ms)
            if host_ms + LEAD_MARGIN_MS <= ahead_ms:
                self.host_bound = False
                return timed
            if self.ms >= MAX_LEAD_MS or attempt == attempts - 1:
                break
            self.ms = min(MAX_LEAD_MS, self.ms + 2 * (host_ms - ahead_ms) + LEAD_MARGIN_MS)
        self.ms = start
        self.host_bound = True
        t = timed.time
        return Timed(CallTime(t.call_ms, t.wall_ms, t.queued_ms, True, t.pending_ms), timed.output, timed.at_return)


class Timer(Protocol):
    """What evaluations and ``kb baseline`` time with."""

    def time(self, fn: Callable[[], Any], on_return: Callable[[Any], Any] = lambda out: None,
             stage: Stage | None = None, key: Hashable = None) -> Timed:
        """Flush, run ``fn`` once, apply ``on_return`` to its output at once, then wait for the device.

        ``on_return`` runs after the call's end and before synchronizing, so it costs no timed
        time and sees the output as the candidate left it when it returned. ``stage`` writes
        the call's inputs just before it; ``key`` names the model whose lead the call uses."""
        ...

    def sync(self) -> None:
        """Wait for the device."""
        ...


def timer_for(device: torch.device) -> Timer:
    return TIMERS[device.type](device)


class _Flushing:
    """Owns the flush buffer: twice the cache, so nothing survives it."""

    def __init__(self, device: torch.device):
        self.device = device
        self._flush_buf = _zero_(_empty(2 * cache_bytes(device) // 4, dtype=torch.float32, device=device))


def _stage_now(stage: Stage | None) -> None:
    """On the host nothing runs ahead of the call: its inputs are poisoned and loaded at once."""
    if stage is not None:
        stage.poison()
        stage.load()


_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters


def _keep_freed_host_memory() -> None:
    """Make glibc keep what a call frees for the next call, as CUDA's caching allocator does.

    By default every block of 32 MiB or more is its own ``mmap``, unmapped when freed, so each
    timed call faults in its temporaries afresh: 1/95's 512 MiB ``log_softmax`` took 131073
    minor faults and ~350 ms of system time a call, 70% of its 330 ms, and on a shared 2-core
    VM that kernel work swung from 0.3 s to 1.7 s with whatever else ran, so the runner's
    calls came out 0.4x the judge's for identical code. Served from a heap that is never
    trimmed, the same call takes ~100 ms with no faults. Both processes time with this class,
    so both get it; outside glibc it does nothing."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_MAX, 0)  # large blocks from the heap, not from mmaps of their own
    mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)  # and the heap's freed top kept (up to 2 GiB)


class CpuTimer(_Flushing):
    """The host's monotonic clock around the call, after a write flush of the last-level cache,
    with freed memory kept for the next call (``_keep_freed_host_memory``)."""

    def __init__(self, device: torch.device):
        _keep_freed_host_memory()
        super().__init__(device)

    def flush(self) -> None:
        _zero_(self._flush_buf)

    def sync(self) -> None:
        pass

    def time(self, fn, on_return=lambda out: None, stage=None, key=None) -> Timed:
        _stage_now(stage)
        t0 = _perf_counter_ns()
        self.flush()
        t1 = _perf_counter_ns()
        out = fn()
        t2 = _perf_counter_ns()
        early = on_return(out)
        t3 = _perf_counter_ns()
        return Timed(CallTime((t2 - t1) / 1e6, (t3 - t0) / 1e6, (t3 - t0) / 1e6), out, early)


class CudaTimer(_Flushing):
    """CUDA events around the call on the current stream, a ``Lead`` per model."""

    def __init__(self, device: torch.device):
        super().__init__(device)
        self._events = [_Event(enable_timing=True) for _ in range(4)]
        self._leads: dict[Hashable, Lead] = {}
        self._cycles_per_ms = self._calibrate()

    def _calibrate(self) -> float:
        e0, e1 = self._events[:2]
        cycles = 1_000_000
        _spin(cycles)
        _event_record(e0)
        _spin(cycles)
        _event_record(e1)
        _cuda_sync(self.device)
        return cycles / max(_event_elapsed(e0, e1), 1e-3)

    def flush(self) -> None:
        """A read, not a write: a zeroed buffer leaves L2 full of dirty lines that the timed
        call then pays to write back (about 12 µs on the H100, 7% of a 0.18 ms call against
        Nsight Compute, whose cache control leaves L2 clean)."""
        _sum(self._flush_buf)

    def sync(self) -> None:
        _cuda_sync(self.device)

    def time(self, fn, on_return=lambda out: None, stage=None, key=None) -> Timed:
        lead = self._leads.setdefault(key, Lead())
        return lead.run(lambda lead_ms: self._time_cuda(fn, on_return, stage, lead_ms))

    def _time_cuda(self, fn, on_return, stage: Stage | None, lead_ms: float) -> tuple[Timed, float, float]:
        """One timed call, the host's time to queue it, and how long the device took to reach
        the start event (spin, stage and flush): the call was fully queued if the latter is longer."""
        e0, e1, e2, e3 = self._events
        t0 = _perf_counter_ns()
        _event_record(e0)
        if stage is not None:
            stage.poison()
        _spin(int(lead_ms * self._cycles_per_ms))
        if stage is not None:
            stage.load()
        self.flush()
        _event_record(e1)
        out = fn()
        _event_record(e2)
        queued = _perf_counter_ns()
        early = on_return(out)
        _event_record(e3)
        _event_sync(e3)
        stream_done = _perf_counter_ns()
        _cuda_sync(self.device)
        t1 = _perf_counter_ns()
        timed = Timed(CallTime(_event_elapsed(e1, e2), (t1 - t0) / 1e6, _event_elapsed(e0, e3),
                               pending_ms=(t1 - stream_done) / 1e6), out, early)
        return timed, (queued - t0) / 1e6, _event_elapsed(e0, e1)


class FakeTimer:
    """Measures nothing: each call of model ``key`` takes the next of ``times_ms[key]`` (cycled),
    so a test can give an evaluation or a baseline times it knows."""

    def __init__(self, times_ms: dict[Hashable, list[float]], host_bound: bool = False):
        self._times = {k: list(v) for k, v in times_ms.items()}
        self._calls: dict[Hashable, int] = {}
        self.host_bound = host_bound

    def sync(self) -> None:
        pass

    def time(self, fn, on_return=lambda out: None, stage=None, key=None) -> Timed:
        _stage_now(stage)
        out = fn()
        early = on_return(out)
        n = self._calls[key] = self._calls.get(key, -1) + 1
        ms = self._times[key][n % len(self._times[key])]
        return Timed(CallTime(ms, ms, ms, self.host_bound), out, early)


TIMERS: dict[str, Callable[[torch.device], Timer]] = {"cpu": CpuTimer, "cuda": CudaTimer}

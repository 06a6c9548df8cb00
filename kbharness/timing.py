"""Timing one call of a model: device time, with the cache flushed first.

On CUDA the call is bracketed by events on the current stream, the L2 cache is overwritten
just before (so no call is served by data its predecessor left behind), and a host clock
around the whole thing lets the caller notice device work that outlived the end event
(work hidden on another stream). On the CPU the same protocol uses ``perf_counter_ns``
and a buffer larger than the last-level cache.

Clock and event functions are bound at import, before any candidate code runs.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

_perf_counter_ns = time.perf_counter_ns
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed = torch.cuda.Event.elapsed_time
_cuda_sync = torch.cuda.synchronize
_zero_ = torch.Tensor.zero_
_empty = torch.empty

DEFAULT_CPU_LLC_BYTES = 32 * 2**20
DEFAULT_GPU_L2_BYTES = 50 * 2**20


@dataclass(frozen=True)
class CallTime:
    """One timed call: device time of the call alone, and host wall time of flush + call + sync."""

    call_ms: float
    wall_ms: float
    queued_ms: float

    @property
    def unaccounted_ms(self) -> float:
        """Wall time that the timer's own stream does not explain (``queued_ms`` covers the flush,
        the call and ``on_return``): launch latency, or work hidden on another stream."""
        return self.wall_ms - self.queued_ms


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


class Timer:
    """Times calls on one device; owns the flush buffer (twice the cache, so nothing survives)."""

    def __init__(self, device: torch.device):
        self.device = device
        self._flush_buf = _empty(2 * cache_bytes(device) // 4, dtype=torch.float32, device=device)
        self._cuda = device.type == "cuda"
        if self._cuda:
            self._events = [_Event(enable_timing=True) for _ in range(4)]

    def flush(self) -> None:
        _zero_(self._flush_buf)

    def sync(self) -> None:
        if self._cuda:
            _cuda_sync(self.device)

    def time(self, fn: Callable[[], Any], on_return: Callable[[Any], Any] = lambda out: None) -> Timed:
        """Flush, run ``fn`` once, apply ``on_return`` to its output at once, then wait for the device.

        ``on_return`` runs after the end event and before synchronizing, so it costs no timed
        time and sees the output as the candidate left it when it returned.
        """
        if not self._cuda:
            t0 = _perf_counter_ns()
            self.flush()
            t1 = _perf_counter_ns()
            out = fn()
            t2 = _perf_counter_ns()
            early = on_return(out)
            t3 = _perf_counter_ns()
            return Timed(CallTime((t2 - t1) / 1e6, (t3 - t0) / 1e6, (t3 - t0) / 1e6), out, early)
        e0, e1, e2, e3 = self._events
        t0 = _perf_counter_ns()
        _event_record(e0)
        self.flush()
        _event_record(e1)
        out = fn()
        _event_record(e2)
        early = on_return(out)
        _event_record(e3)
        _cuda_sync(self.device)
        t1 = _perf_counter_ns()
        return Timed(CallTime(_event_elapsed(e1, e2), (t1 - t0) / 1e6, _event_elapsed(e0, e3)), out, early)

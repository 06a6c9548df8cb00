"""The runner: the only process that imports, builds, calls and times the candidate.

It serves its judge's requests (``wire``) one at a time: load the candidate, construct it,
call it on the judge's input buffers and copy what it returns into the judge's output
buffers (``sharedmem``), time a call, run a batch for the judge's clock. It never sees the
problem's reference, its outputs or any other memory of the judge, and decides nothing:
what it reports of outputs (shapes, aliasing) and times is checked or cross-checked there.
A candidate's exception becomes a reply naming its class; anything worse ends the process,
which the judge notices as a closed socket.
"""
from __future__ import annotations

import gc
import itertools
import os
import time
from pathlib import Path
from typing import Any

import torch

from kbharness.runner import guard
from kbharness.common import kernels, memory, timing
from kbharness.boundary import sharedmem, wire
from kbharness.common.buildcache import WAIT_PHASE, prepare_build_env
from kbharness.common.calls import Graphed, Staged, build_model, classify_exception, clone, detach, gradients, seed_rng, sync
from kbharness.common.views import flat, shares
from kbharness.common.loading import LoadError, load_model_new, read_solution
from kbharness.common.results import Verdict
from kbharness.common.spec import EvalSpec

_LOG_CHARS = 60_000
# Elements summed at once by a fingerprint (its float64 temporary: 128 MiB).
_SUM_CHUNK = 2**24


class _Failed(Exception):
    def __init__(self, verdict: Verdict, message: str, log: str = ""):
        super().__init__(message)
        self.verdict, self.message, self.log = verdict, message, log


def serve(sock, notes: tuple[str, ...] = (), entry: str | None = None) -> None:
    """Answer requests until the judge says ``bye`` or goes away."""
    # What this process holds before its candidate (torch, the harness: about 285,000 objects)
    # out of the collector's reach, for the one evaluation it lives: a full collection in
    # ``release``, three an evaluation on a GPU, then scans only what the evaluation made
    # (130 ms -> 0.04 ms on a two-core host).
    gc.freeze()
    session = _Session(sock, notes, entry)
    while True:
        try:
            message, fds = wire.receive_request(sock)
        except wire.Closed:
            return
        op = message.pop("op")
        if op == "bye":
            return
        try:
            session.attach(message.pop("attach", ()), fds)
            reply = getattr(session, op)(**message)
        except _Failed as f:
            reply = {"error": {"verdict": f.verdict.value, "message": f.message, "log": f.log[-_LOG_CHARS:]}}
        except LoadError as e:
            verdict = Verdict.COMPILE_ERROR if e.compile else Verdict.LOAD_ERROR
            reply = {"error": {"verdict": verdict.value, "message": str(e), "log": e.log[-_LOG_CHARS:]}}
        except Exception as e:  # noqa: BLE001  (candidate code, or what it broke)
            verdict, text, log = classify_exception(e)
            reply = {"error": {"verdict": verdict.value, "message": text, "log": log[-_LOG_CHARS:]}}
        wire.send_reply(sock, reply)


def _load_libraries(device: torch.device, libraries: list[str]) -> None:
    """cuBLAS and cuDNN load their kernels at their first call (0.08 s and 0.4 s in a fresh
    process on an H200): called here, before the candidate is imported, while the judge runs
    the reference, they are not in the candidate's first call. cuDNN only where the judge asks."""
    x = torch.ones(1, 8, 8, 8, device=device)
    x.flatten(1) @ torch.ones(512, 8, device=device)
    if "cudnn" in libraries:
        torch.nn.functional.conv2d(x, torch.ones(8, 8, 3, 3, device=device))
        torch.nn.functional.conv_transpose2d(x, torch.ones(8, 8, 3, 3, device=device))
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)


def _candidate(fn):
    try:
        return fn()
    except _Failed:
        raise
    except Exception as e:  # noqa: BLE001
        raise _Failed(*classify_exception(e)) from None


class _Session:
    def __init__(self, sock, notes: tuple[str, ...], entry: str | None = None):
        self.sock, self.notes, self.entry = sock, list(notes), entry
        self.buffers: dict[int, sharedmem.Buffer] = {}
        self.model = self.cls = self.previous = self.graph = self.timer = None
        self.device = torch.device("cpu")

    def attach(self, descriptors, fds: list[int]) -> None:
        for desc, fd in zip(descriptors, fds):
            self.buffers[desc.id] = sharedmem.attach(desc, fd, self.device)

    def _args(self, refs: list) -> list:
        return [self.buffers[value].tensor if kind == "buf" else value for kind, value in refs]

    def start(self, spec: str, scratch: str, libraries: list) -> dict:
        self.spec = EvalSpec.from_json(spec)
        self.settings = self.spec.settings
        self.device = torch.device(self.settings.device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            return {"notes": self.notes, "no_gpu": True}
        self.scratch = Path(scratch)
        limit = memory.configure_allocator(self.device, self.settings.memory_limit_gib)
        if self.device.type == "cuda":
            _load_libraries(self.device, [str(x) for x in libraries])
        self.meter = memory.PeakMeter(self.device, limit)
        if self.device.type == "cpu":  # its heap mode (timing.CpuTimer) set before the warm-up, as the judge's is
            self.timer = timing.timer_for(self.device)
        self.snapshot = guard.Snapshot()
        return {"notes": self.notes}

    def load(self) -> dict:
        source = read_solution(self.spec.solution_path)
        prepare_build_env(self.spec.cache_dir, source.code, self.settings.device,
                          Path(self.entry) if self.entry else None)
        t0 = time.perf_counter()
        self.cls = load_model_new(source, self.scratch, phase=self._phase)
        return {"build_s": time.perf_counter() - t0}

    def _phase(self, phase: str) -> None:
        if phase == WAIT_PHASE:
            wire.send_reply(self.sock, {"phase": phase})

    def construct(self, init_inputs: list, on_device: bool) -> dict:
        """Built where the reference was, from the same seed; a candidate whose construction
        fails on the device (where the reference's did not) is built on the host, with a note,
        since KernelBench's own evaluation builds both there."""
        try:
            self.model = _candidate(lambda: build_model(self.cls, init_inputs, self.settings, self.device, on_device=on_device))
            return {}
        except _Failed as f:
            if not on_device or f.verdict is not Verdict.RUNTIME_ERROR:
                raise
        self.model = _candidate(lambda: build_model(self.cls, init_inputs, self.settings, self.device, on_device=False))
        return {"note": f"the candidate cannot be constructed on {self.device}: it was constructed on the host, "
                        "where its initial weights come from another generator than the reference's"}

    def call(self, inputs: list, seed: int, out: list, keep: bool = False, grad: bool = False) -> dict:
        args = self._args(inputs)
        seed_rng(seed, self.device)
        with torch.set_grad_enabled(grad):
            result = _candidate(lambda: self.meter.call("candidate", self.model, args, lambda: self.model(*args)))
            _candidate(lambda: sync(self.device))
        reply = {"out": self._deliver(result, out, args)}
        if keep:
            if self.previous is not None:
                reply["same_memory"] = any(shares(a, b) for a in flat(self.previous) for b in flat(result))
            self.previous = result
        return reply

    def gradients(self, inputs: list, seed: int, out: list) -> dict:
        args = self._args(inputs)
        grads = _candidate(lambda: gradients(self.model, args, seed))
        return {"out": self._deliver(grads, out, args)}

    def warm(self, inputs: list, n: int) -> dict:
        args = self._args(inputs)
        with torch.no_grad():
            for _ in range(n):
                _candidate(lambda: self.model(*clone(args)))
            _candidate(lambda: sync(self.device))
        return {}

    def capture(self, inputs: list) -> dict:
        try:
            self.graph = Graphed(self.model, self._args(inputs))
        except Exception as e:  # noqa: BLE001  (capture forbids syncs, host reads, other streams)
            torch.cuda.synchronize()
            return {"error_text": f"{type(e).__name__}: {str(e)[:160]}"}
        return {}

    def drop_graph(self) -> dict:
        self.graph = None
        return {}

    def time(self, inputs: list, seed: int, out: list, grad: bool = False) -> dict:
        """One timed call on buffers of its own, staged with the judge's input values."""
        values = self._args(inputs)
        if self.timer is None:
            self.timer = timing.timer_for(self.device)
        if self.graph is not None:
            buffers, fn = self.graph.static_in, self.graph
        else:
            buffers = [torch.empty_like(x) if isinstance(x, torch.Tensor) else x for x in values]
            fn = lambda: self.model(*buffers)  # noqa: E731
        sync(self.device)
        seed_rng(seed, self.device)
        with torch.set_grad_enabled(grad):
            timed = _candidate(lambda: self.timer.time(fn, _fingerprint, Staged(buffers, values), key="candidate"))
        t = timed.time
        changed = _values(timed.at_return) != _values(_fingerprint(timed.output))
        return {"call_ms": t.call_ms, "wall_ms": t.wall_ms, "queued_ms": t.queued_ms, "host_bound": t.host_bound,
                "pending_ms": t.pending_ms, "changed_after_return": changed,
                "out": self._deliver(detach(timed.output), out, buffers)}

    def batch(self, sets: list, seed: int, outs: list) -> dict:
        """Back-to-back calls, one per input set, each output copied out, then one synchronize:
        the judge times this from its side."""
        with torch.no_grad():
            for i, (inputs, out) in enumerate(zip(sets, outs)):
                args = self._args(inputs)
                seed_rng(seed + i, self.device)
                result = _candidate(lambda: self.model(*args))
                self._copy(result, out)
            _candidate(lambda: sync(self.device))
        return {}

    def ping(self) -> dict:
        return {}

    def release(self) -> dict:
        """Give the device memory this process caches but does not use back to the driver, for
        the judge's next shared buffer."""
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        return {}

    def kernels(self, inputs: list) -> dict:
        args = self._args(inputs)
        with torch.no_grad():
            launched = _candidate(lambda: kernels.launched_kernels(lambda: self.model(*clone(args))))
        return {"kernels": [[name, us] for name, us in launched]}

    def integrity(self) -> dict:
        return {"changes": self.snapshot.changes()}

    def memory(self) -> dict:
        return {"memory": self.meter.summary()}

    def _copy(self, result: Any, out: list) -> None:
        for item, bid in zip(flat(result), out):
            if bid is not None and isinstance(item, torch.Tensor):
                target = self.buffers[bid].tensor
                if item.shape == target.shape and item.dtype == target.dtype:
                    target.copy_(item.detach())

    def _deliver(self, result: Any, out: list, args: list) -> dict:
        """What the judge needs of an output: its structure, each item's type, shape and dtype,
        its values copied into the judge's buffers where they fit (finished before it returns, so
        before the reply: every op that writes those buffers synchronises), and what it shares
        memory with."""
        items = []
        params = list(self.model.parameters()) + list(self.model.buffers()) if self.model is not None else []
        for item, bid in itertools.zip_longest(flat(result), out):
            if isinstance(item, torch.Tensor):
                meta = {"tensor": type(item) is torch.Tensor, "type": type(item).__name__,
                        "shape": list(item.shape), "dtype": str(item.dtype).removeprefix("torch."),
                        "aliases_input": any(shares(item, x) for x in args),
                        "aliases_param": any(shares(item, p) for p in params)}
                if bid is not None:
                    target = self.buffers[bid].tensor
                    if item.shape == target.shape and item.dtype == target.dtype:
                        target.copy_(item.detach())
                        meta["copied"] = True
            elif isinstance(item, (bool, int, float)) or item is None:
                meta = {"value": item}
            else:
                meta = {"type": type(item).__name__}
            items.append(meta)
        sync(self.device)
        kind = "tuple" if isinstance(result, tuple) else "list" if isinstance(result, list) else "single"
        return {"kind": kind, "items": items}


def _fingerprint(out: Any) -> Any:
    """A cheap summary of an output, queued on the device; compare two with ``_values``."""
    if isinstance(out, torch.Tensor):
        return _tensor_sum(out.detach())
    if isinstance(out, (tuple, list)):
        return [_fingerprint(o) for o in out]
    return out


def _tensor_sum(t: torch.Tensor) -> torch.Tensor:
    """The sum of ``t`` (in float64 for floating point), over slices of at most ``_SUM_CHUNK``
    elements: a float64 sum casts its whole operand first, and that copy of a 6 GiB float32
    output (12 GiB) ran KernelBench's large level-1 references out of memory on an H100."""
    if t.numel() <= _SUM_CHUNK:
        return torch.sum(t, dtype=torch.float64) if t.is_floating_point() else torch.sum(t)
    if t.is_contiguous():
        parts = t.reshape(-1).split(_SUM_CHUNK)
    elif t.size(0) == 1:
        return _tensor_sum(t[0])
    else:
        parts = t.split(max(1, _SUM_CHUNK // t[0].numel()))
    return torch.stack([_tensor_sum(p) for p in parts]).sum()


def _values(fp: Any) -> Any:
    if isinstance(fp, torch.Tensor):
        v = fp.item()
        return "nan" if v != v else v
    if isinstance(fp, list):
        return [_values(f) for f in fp]
    return fp


def main(sock, notes: tuple[str, ...] = (), entry: str | None = None) -> None:
    """The runner process's body, after the fork: close every descriptor it inherited but its
    socket and the log, then serve."""
    os.closerange(3, sock.fileno())
    os.closerange(sock.fileno() + 1, os.sysconf("SC_OPEN_MAX"))
    serve(sock, notes, entry)

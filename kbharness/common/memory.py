"""Device memory of an evaluation: a cap, each model's peak, and where kept outputs wait.

An evaluation's device memory is one trial's working set (that trial's inputs and both
models' outputs, their parameters, the flush buffer) plus the reference's answers kept for
the trials to come, which wait on the host once they would take more than half of the cap.
The cap is per process: the runner, and the buffers the two share, come on top.
Keeping every trial's inputs, outputs and float64 copies on the device at once ran 139 GiB
GPUs out of memory on problems that KernelBench evaluates on 80 GB ones (a level-1 problem
can have 6 GiB of input and 6 GiB of output). ``--memory-limit`` caps torch's allocator, so
a run the size of an 80 GB H100 is reproduced on a larger GPU.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

GIB = 2**30


def nbytes(obj: Any) -> int:
    """Bytes of the tensors in a (nested) output or input list."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, (tuple, list)):
        return sum(nbytes(o) for o in obj)
    return 0


class Keeper:
    """Where the reference's kept answers wait for the candidate: on the device while they fit
    in half of what the judge may allocate and leave the device room for the rest of the
    evaluation (``leave``), else on the host. Host copies cost a slow round trip per trial
    (a 6 GiB output took over a minute an evaluation), device copies the memory a 40 GB GPU
    would not have; the cap and the device decide."""

    def __init__(self, device: torch.device, limit: int | None = None):
        self.cuda = device.type == "cuda"
        self.budget = 0
        if self.cuda:
            index = device.index if device.index is not None else torch.cuda.current_device()
            self._total = torch.cuda.get_device_properties(index).total_memory
            self._start = torch.cuda.memory_allocated(index)
            cap = limit if limit is not None else self._total
            self._half = cap // 2
            self.budget = self._half - self._start
        self.used = 0

    def leave(self, nbytes: int) -> None:
        """Keep ``nbytes`` of the device free for everything but the kept answers: half of the
        cap left the runner too little on an 80 GB H100 under ``--memory-limit 80``, where the
        two processes share the one device (1/19's candidate ran out of memory)."""
        if self.cuda:
            self.budget = min(self._half, self._total - nbytes) - self._start

    def fits(self, obj: Any, reserve: int = 0) -> bool:
        """Whether ``obj`` fits on the device with ``reserve`` bytes left for what must come after it."""
        return not self.cuda or self.used + nbytes(obj) + reserve <= self.budget

    def keep(self, obj: Any) -> Any:
        if not self.cuda:
            return obj
        if self.fits(obj):
            self.used += nbytes(obj)
            return compact(obj)
        return _to_host(obj)


def compact(obj: Any) -> Any:
    """``obj`` with each tensor in storage of its own size: the scalar that ``smooth_l1_loss``
    returns on CUDA is a view of its 4 GiB elementwise loss, and six kept answers of KernelBench's
    1/96 held 40 GiB of an H100 while its candidate ran out of memory."""
    if isinstance(obj, torch.Tensor):
        return obj.clone() if obj.untyped_storage().nbytes() > nbytes(obj) else obj
    if isinstance(obj, (tuple, list)):
        return type(obj)(compact(o) for o in obj)
    return obj


def _to_host(obj: Any) -> Any:
    """A host copy in page-locked memory: a pageable copy of a 7 GiB output took 5.8 s on an
    H200 (page faults on fresh host memory), and every comparison then streamed it back
    slowly. The copies are queued, then waited for once."""
    copied = _queue_to_host(obj)
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return copied


def _queue_to_host(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        if obj.device.type == "cpu":
            return obj
        try:
            host = torch.empty_like(obj, device="cpu", pin_memory=True)
        except RuntimeError:  # page-locked memory refused: a pageable copy is slower, not wrong
            return obj.cpu()
        return host.copy_(obj, non_blocking=True)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_queue_to_host(o) for o in obj)
    return obj


def to_device(obj: Any, device: torch.device) -> Any:
    """``obj`` on ``device``; from page-locked memory the copy is queued on the current stream,
    which orders it before any kernel that reads it."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=obj.is_pinned())
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_device(o, device) for o in obj)
    return obj


# Cached blocks larger than this are never split for a smaller tensor (torch's
# ``max_split_size_mb``).
MAX_SPLIT_MB = 256


def configure_allocator(device: torch.device, limit_gib: float) -> int | None:
    """Cap torch's allocator on ``device`` at ``limit_gib`` (the cap in bytes, or None) and keep
    its large cached blocks whole: a 0.3 GiB float64 answer carved out of a freed 16 GiB block
    pinned it, and 31 GiB of KernelBench's 1/45 stayed reserved in the judge after its cache was
    given back, out of its candidate's reach on an H100."""
    if device.type != "cuda":
        return None
    torch._C._accelerator_setAllocatorSettings(f"max_split_size_mb:{MAX_SPLIT_MB}")
    if not limit_gib:
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    total = torch.cuda.get_device_properties(index).total_memory
    limit = int(limit_gib * GIB)
    if limit < total:
        torch.cuda.set_per_process_memory_fraction(limit / total, index)
    return min(limit, total)


def is_oom(e: BaseException) -> bool:
    text = str(e).lower()
    return isinstance(e, (torch.cuda.OutOfMemoryError, MemoryError)) or "out of memory" in text \
        or "can't allocate memory" in text


class PeakMeter:
    """Each model's peak device memory: its parameters and buffers, the call's inputs, and the
    most the call allocated beyond what was live when it began. ``evaluation`` is the whole
    process's peak."""

    def __init__(self, device: torch.device, limit: int | None = None):
        self.cuda = device.type == "cuda"
        self.device = device
        self.limit = limit
        self.peaks: dict[str, int] = {}
        self.evaluation = 0

    def call(self, who: str, model: torch.nn.Module, inputs: list, fn: Callable[[], Any]) -> Any:
        if not self.cuda:
            return fn()
        torch.cuda.synchronize(self.device)
        self._fold()
        base = torch.cuda.memory_allocated(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        out = fn()
        torch.cuda.synchronize(self.device)
        extra = torch.cuda.max_memory_allocated(self.device) - base
        static = sum(nbytes(t) for t in list(model.parameters()) + list(model.buffers())) + nbytes(inputs)
        self.peaks[who] = max(self.peaks.get(who, 0), static + max(0, extra))
        return out

    def _fold(self) -> None:
        self.evaluation = max(self.evaluation, torch.cuda.max_memory_allocated(self.device))

    def summary(self) -> dict[str, Any]:
        if not self.cuda:
            return {}
        self._fold()
        out: dict[str, Any] = dict(self.peaks)
        out["evaluation"] = self.evaluation
        if self.limit is not None:
            out["limit"] = self.limit
        return out

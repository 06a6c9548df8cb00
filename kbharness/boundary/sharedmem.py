"""Buffers the judge shares with the runner, and nothing else of its memory.

Each buffer is an allocation of its own, made for one tensor of a call's inputs or outputs,
and handed over as a file descriptor: a ``memfd`` on the host, and on a GPU a CUDA virtual
memory allocation exported as a POSIX descriptor (``cuMemCreate`` +
``cuMemExportToShareableHandle``). Legacy CUDA IPC handles (what ``torch.multiprocessing``
uses) name a whole block of the caching allocator, which may hold other tensors, and they
cannot cross the runner's PID namespace; a descriptor passed over a Unix socket does both.
The runner maps the descriptor and sees a tensor; the judge keeps its own view.
"""
from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass

import torch

_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128, torch.bool,
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float8_e4m3fn, torch.float8_e5m2)}


OUT_OF_MEMORY = 2  # CUDA_ERROR_OUT_OF_MEMORY, as SharedMemoryError's errno


class SharedMemoryError(OSError):
    """A buffer could not be made or mapped (the message says which call refused)."""


@dataclass(frozen=True)
class Descriptor:
    """What the runner needs to map a buffer, besides its descriptor: plain data, pickled to it."""

    id: int
    kind: str  # "host" or "cuda"
    nbytes: int
    shape: tuple[int, ...]
    dtype: str


def dtype_name(dtype: torch.dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in _DTYPES:
        raise SharedMemoryError(0, f"no shared buffer for dtype {name}")
    return name


def _view(raw: torch.Tensor, desc: Descriptor) -> torch.Tensor:
    dtype = _DTYPES[desc.dtype]
    count = 1
    for n in desc.shape:
        count *= n
    size = count * torch.empty((), dtype=dtype).element_size()
    return raw[:size].view(dtype).view(desc.shape)


class Buffer:
    """One shared allocation: ``tensor`` is this process's view of it, ``fd`` its descriptor."""

    def __init__(self, desc: Descriptor, tensor: torch.Tensor, fd: int, keep: object):
        self.desc, self.tensor, self.fd, self._keep = desc, tensor, fd, keep


def allocate(buffer_id: int, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> Buffer:
    """A new buffer for a tensor of ``shape`` and ``dtype`` on ``device``."""
    elems = 1
    for n in shape:
        elems *= n
    nbytes = max(1, elems * torch.empty((), dtype=dtype).element_size())
    if device.type == "cuda":
        return _cuda().allocate(buffer_id, tuple(shape), dtype_name(dtype), nbytes, device)
    desc = Descriptor(buffer_id, "host", nbytes, tuple(shape), dtype_name(dtype))
    fd = os.memfd_create(f"kb-buffer-{buffer_id}", os.MFD_CLOEXEC)
    os.ftruncate(fd, nbytes)
    return _map_host(desc, fd)


def attach(desc: Descriptor, fd: int, device: torch.device) -> Buffer:
    """The runner's view of a buffer the judge made."""
    if desc.kind == "cuda":
        if device.type != "cuda":
            raise SharedMemoryError(0, "a GPU buffer handed to a runner without a GPU")
        return _cuda().attach(desc, fd, device)
    return _map_host(desc, fd)


def _map_host(desc: Descriptor, fd: int) -> Buffer:
    region = mmap.mmap(fd, desc.nbytes)
    raw = torch.frombuffer(region, dtype=torch.uint8)
    return Buffer(desc, _view(raw, desc), fd, region)


# CUDA driver API constants (cuda.h)
_ALLOCATION_PINNED = 1
_LOCATION_DEVICE = 1
_HANDLE_POSIX_FD = 1
_GRANULARITY_RECOMMENDED = 1
_ACCESS_READWRITE = 3


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class _DeviceArray:
    """A raw device range as torch can wrap it (``__cuda_array_interface__``)."""

    def __init__(self, ptr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3}


class _Driver:
    """The few driver calls a shared GPU buffer needs, through ``libcuda`` (always present with
    the driver; torch initialises the primary context they run in)."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise SharedMemoryError(0, f"libcuda.so.1: {e}") from None

    def _call(self, name: str, *args) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise SharedMemoryError(status, f"{name} returned CUDA error {status}")

    def _prop(self, device: torch.device) -> _AllocationProp:
        prop = _AllocationProp()
        prop.type = _ALLOCATION_PINNED
        prop.requestedHandleTypes = _HANDLE_POSIX_FD
        prop.location = _Location(_LOCATION_DEVICE, _index(device))
        return prop

    def _map(self, handle: ctypes.c_ulonglong, size: int, device: torch.device) -> int:
        ptr = ctypes.c_ulonglong()
        self._call("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                   ctypes.c_ulonglong(0), ctypes.c_ulonglong(0))
        self._call("cuMemMap", ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, ctypes.c_ulonglong(0))
        access = _AccessDesc(_Location(_LOCATION_DEVICE, _index(device)), _ACCESS_READWRITE)
        self._call("cuMemSetAccess", ptr, ctypes.c_size_t(size), ctypes.byref(access), ctypes.c_size_t(1))
        return ptr.value

    def allocate(self, buffer_id: int, shape, dtype: str, nbytes: int, device: torch.device) -> Buffer:
        torch.cuda.init()
        torch.cuda.synchronize(device)
        prop = self._prop(device)
        granularity = ctypes.c_size_t()
        self._call("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop),
                   ctypes.c_int(_GRANULARITY_RECOMMENDED))
        size = -(-nbytes // granularity.value) * granularity.value
        handle = ctypes.c_ulonglong()
        self._call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_ulonglong(0))
        fd = ctypes.c_int(-1)
        self._call("cuMemExportToShareableHandle", ctypes.byref(fd), handle, ctypes.c_int(_HANDLE_POSIX_FD),
                   ctypes.c_ulonglong(0))
        desc = Descriptor(buffer_id, "cuda", size, shape, dtype)
        return self._wrap(desc, handle, fd.value, device)

    def attach(self, desc: Descriptor, fd: int, device: torch.device) -> Buffer:
        torch.cuda.init()
        torch.cuda.synchronize(device)
        handle = ctypes.c_ulonglong()
        self._call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd),
                   ctypes.c_int(_HANDLE_POSIX_FD))
        return self._wrap(desc, handle, fd, device)

    def _wrap(self, desc: Descriptor, handle: ctypes.c_ulonglong, fd: int, device: torch.device) -> Buffer:
        ptr = self._map(handle, desc.nbytes, device)
        array = _DeviceArray(ptr, desc.nbytes)
        raw = torch.as_tensor(array, device=device)
        return Buffer(desc, _view(raw, desc), fd, (array, handle))


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


_DRIVER: list[_Driver] = []


def _cuda() -> _Driver:
    if not _DRIVER:
        _DRIVER.append(_Driver())
    return _DRIVER[0]

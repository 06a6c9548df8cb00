"""One worker's own corner of the fork server's sandbox.

The server's sandbox is made once for all its workers, so it leaves the whole scratch root
and the whole build cache writable. A worker forked from it confines itself before any
candidate code runs: in a user and mount namespace of its own, its run folder and its
candidate's cache entry are bound onto themselves (mounts of their own), then the scratch
root and the cache are remounted read-only, then it drops every capability, so that neither
it nor the candidate can remount them (mounts copied into a namespace a candidate could make
are locked read-only by the kernel). Descriptors opened
before (the log) keep writing. Linux only; where nested user namespaces are refused it says
why and the worker runs as before, with a note in its record.
"""
from __future__ import annotations

import ctypes
import os

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_REMOUNT, _MS_BIND = 1, 32, 4096
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 3, 4
# statvfs flags that a remount must keep (the kernel refuses to drop locked ones); ST_* and
# MS_* agree for these.
_KEPT = os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC | os.ST_NOATIME | os.ST_NODIRATIME
ENV = "KB_CONFINE"


class ConfineError(OSError):
    pass


def confine(writable: list[str], locked: list[str]) -> None:
    """Leave of ``locked`` (folders this process can write) only ``writable`` (folders under them) writable."""
    libc = ctypes.CDLL(None, use_errno=True)
    _own_user_namespace(libc, _CLONE_NEWUSER | _CLONE_NEWNS)
    for path in writable:
        _mount(libc, path, path, _MS_BIND, f"binding {path}")
    for path in locked:
        flags = os.statvfs(path).f_flag & _KEPT
        _mount(libc, None, path, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | flags, f"making {path} read-only")
    _drop_capabilities(libc)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities(libc) -> None:
    """The namespace's capabilities, all of them, gone: nothing can remount what was locked.
    (A user namespace the candidate makes next owns no mount it can see: the kernel locks
    the read-only ones copied into it.)"""
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()  # _LINUX_CAPABILITY_VERSION_3
    if libc.capset(ctypes.byref(header), data) != 0:
        raise ConfineError(ctypes.get_errno(), f"dropping its capabilities: {os.strerror(ctypes.get_errno())}")


def _own_user_namespace(libc, flags: int) -> None:
    """Unshare, and map this process's ids to themselves where the kernel allows it (mapping
    root needs a capability the sandbox dropped; unmapped, the ids read as the overflow id
    inside, while files are still created and checked as the real user's)."""
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(flags) != 0:
        raise ConfineError(ctypes.get_errno(), f"a user namespace of its own: {os.strerror(ctypes.get_errno())}")
    dumpable = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # a non-dumpable process cannot open its own maps
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            try:
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
            except PermissionError:
                pass
    finally:
        libc.prctl(_PR_SET_DUMPABLE, dumpable, 0, 0, 0)


def _mount(libc, source: str | None, target: str, flags: int, what: str) -> None:
    src = source.encode() if source is not None else None
    if libc.mount(src, target.encode(), None, flags, None) != 0:
        raise ConfineError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")

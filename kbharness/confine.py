"""The runner's own corner of the sandbox it shares with its judge (and, forked from the
fork server, with every other evaluation).

The sandbox leaves the whole scratch root, the whole build cache, ``/tmp`` and ``/dev/shm``
writable. Before any candidate code exists the runner enters a user, mount and PID namespace
of its own: its scratch folder and its candidate's cache entry are bound onto themselves
(mounts of their own), everything else that was writable is remounted read-only, and once
inside the PID namespace it drops every capability, so that neither it nor the candidate can
remount them (mounts copied into a namespace a candidate could make are locked read-only by
the kernel). In the PID namespace the judge, the fork server and other evaluations have no
pid the candidate could signal or trace. Linux only; where nested user namespaces are
refused the caller says why in the record.
"""
from __future__ import annotations

import ctypes
import os

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNS = 0x00020000
_CLONE_NEWPID = 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8
_MS_RDONLY, _MS_REMOUNT, _MS_BIND = 1, 32, 4096
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 3, 4
# statvfs flags that a remount must keep (the kernel refuses to drop locked ones); ST_* and
# MS_* agree for these.
_KEPT = os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC | os.ST_NOATIME | os.ST_NODIRATIME
ENV = "KB_CONFINE"


class ConfineError(OSError):
    pass


def confine(writable: list[str], locked: list[str]) -> None:
    """Leave of ``locked`` (mounts this process can write) only ``writable`` (folders under
    them) writable, in namespaces of its own; the children it forks next are in a PID
    namespace of their own. The first child must call ``drop_capabilities``."""
    libc = ctypes.CDLL(None, use_errno=True)
    _own_user_namespace(libc, _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID)
    for path in writable:
        _mount(libc, path, path, _MS_BIND, f"binding {path}")
    for path in locked:
        flags = os.statvfs(path).f_flag & _KEPT
        _mount(libc, None, path, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | flags, f"making {path} read-only")


def enter_pid_namespace() -> None:
    """In the new PID namespace's first process: its own ``/proc`` where the kernel allows it
    (the judge's entries are unreadable anyway: it is not dumpable), then no capability left."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)
    drop_capabilities(libc)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities(libc=None) -> None:
    """The namespace's capabilities, all of them, gone: nothing can remount what was locked.
    (A user namespace the candidate makes next owns no mount it can see: the kernel locks
    the read-only ones copied into it.)"""
    libc = libc or ctypes.CDLL(None, use_errno=True)
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

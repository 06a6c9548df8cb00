"""The runner's own corner of the sandbox it shares with its judge (and, forked from the
fork server, with every other evaluation).

The sandbox leaves the whole scratch root, the whole build cache, ``/tmp`` and ``/dev/shm``
writable. Before any candidate code exists the runner enters a user, mount and PID namespace
of its own: its scratch folder and its candidate's cache entry are bound onto themselves
(mounts of their own), everything else that was writable is remounted read-only, and once
inside the PID namespace it drops every capability, so that neither it nor the candidate can
remount them (mounts copied into a namespace a candidate could make are locked read-only by
the kernel). In the PID namespace the judge, the fork server and other evaluations have no
pid the candidate could signal or trace.

CUDA refuses to start in a nested PID namespace (``cuInit`` fails with
CUDA_ERROR_OPERATING_SYSTEM: the sandbox's ``/proc`` cannot be remounted for it, since
bubblewrap covers parts of it), so a runner on the GPU stays in the judge's: there
Landlock's signal scope (``scope_signals``) refuses every signal to a process outside the
runner's own, and a seccomp filter (``forbid_signals``) every signal to a pid older than the
runner's (the judge, the fork server) and every other way to name one (``pidfd_send_signal``,
a descriptor's owner for ``SIGIO``); the judge, not dumpable, cannot be traced or read
through ``/proc`` by a process without capabilities in its user namespace. Linux only;
where nested user namespaces are refused the caller says why in the record.
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


def confine(writable: list[str], locked: list[str], pid_namespace: bool = True) -> None:
    """Leave of ``locked`` (mounts this process can write) only ``writable`` (folders under
    them) writable, in namespaces of its own; with ``pid_namespace`` the children it forks
    next are in a PID namespace of their own, and the first must call
    ``enter_pid_namespace``; without, this process calls ``drop_capabilities``."""
    libc = ctypes.CDLL(None, use_errno=True)
    _own_user_namespace(libc, _CLONE_NEWUSER | _CLONE_NEWNS | (_CLONE_NEWPID if pid_namespace else 0))
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


# x86-64 system call numbers, and what the filter compares their arguments with.
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_TKILL = 200
_PID_FIRST = {"kill": 62, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
              "pidfd_open": 434}
_PIDFD_SEND_SIGNAL = 424
_OWNER_SETTERS = {72: (8, 15), 16: (0x8901, 0x8902)}  # fcntl F_SETOWN(_EX), ioctl FIOSETOWN/SIOCSPGRP
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
# Landlock's calls have one number on every architecture.
_LANDLOCK_CREATE_RULESET, _LANDLOCK_RESTRICT_SELF, _LANDLOCK_VERSION = 444, 446, 1
_LANDLOCK_SCOPE_SIGNAL, _LANDLOCK_SCOPE_ABI = 2, 6
_RET_ALLOW, _RET_EPERM = 0x7FFF0000, 0x00050000 | 1
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
MAX_OLDER = 1800  # classic BPF takes 4096 instructions
_PF_KTHREAD = 0x00200000


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def older_above(own: int) -> list[int]:
    """Ids of the tasks alive now, processes and threads, above ``own`` but not its own: older
    than a process that has forked nothing yet, and so not its, whatever their ids say once the
    pid counter has wrapped (a judge, a fork server). Kernel threads, which take no signal from
    it, are left out. The runner's ancestors come first, as the ones that matter most when a
    filter has no room for all. A ``/proc`` of another PID namespace (one the runner's own
    namespace could not remount) numbers other tasks: nothing."""
    try:
        if os.readlink("/proc/self") != str(os.getpid()):
            return []
    except OSError:
        return []
    ancestors, pid = [], os.getppid()
    while pid > 1:
        ancestors.append(pid)
        pid = _parent(pid)
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            tasks = os.listdir(f"/proc/{name}/task")
        except OSError:
            continue
        for task in tasks:
            if int(task) > own and not _kernel_thread(int(task)):
                found.append(int(task))
    return [p for p in ancestors if p > own] + sorted(set(found) - set(ancestors))


def _stat(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _parent(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[1]) if fields else 0


def _kernel_thread(tid: int) -> bool:
    fields = _stat(tid)
    return bool(fields) and int(fields[6]) & _PF_KTHREAD != 0


def signal_filter(own: int, older: list[int] | tuple[int, ...] = ()) -> list[tuple[int, int, int, int]]:
    """The classic-BPF program ``forbid_signals`` loads, as (code, jt, jf, k): a signal (or a
    pidfd) may name process group 0 (its own session's, see ``forbid_signals``), ``-own``,
    or a pid from ``own`` up (this process and the ones it forks); any other pid, a pidfd's
    signal and a descriptor's new owner are refused with EPERM, as is each id of ``older``
    (``older_above``: up to ``MAX_OLDER`` of them), above ``own`` only because the pid counter
    wrapped. ``tkill`` names a thread with no process to check it against (a judge's thread
    started later has an id above ``own``): only ``own`` itself; ``tgkill`` names the process
    first. Other architectures' calls (x32, i386) are refused outright."""
    nr, arg0, arg1 = 0, 16, 24  # offsets in struct seccomp_data (little-endian low words)
    deny, allow = ("ret", _RET_EPERM), ("ret", _RET_ALLOW)
    body: list = [("ld", 4), ("jne", _AUDIT_ARCH_X86_64, "deny"), ("ld", nr), ("jge", _X32_BIT, "deny")]
    for number in _PID_FIRST.values():
        body.append(("jeq", number, "pid"))
    body.append(("jeq", _TKILL, "tkill"))
    body.append(("jeq", _PIDFD_SEND_SIGNAL, "deny"))
    for number in _OWNER_SETTERS:
        body.append(("jeq", number, f"owner{number}"))
    body.append(allow)
    body += [("label", "pid"), ("ld", arg0), ("jeq", 0, "allow"), ("jeq", (1 << 32) - own, "allow"),
             ("jge", 1 << 31, "deny")]
    for pid in older[:MAX_OLDER]:  # two instructions each: no jump grows with the list
        body += [("raw", _JEQ_K, 0, 1, pid), deny]
    body += [("jge", own, "allow"), deny]
    body += [("label", "tkill"), ("ld", arg0), ("jeq", own, "allow"), deny]
    for number, commands in _OWNER_SETTERS.items():
        body += [("label", f"owner{number}"), ("ld", arg1), *[("jeq", c, "deny") for c in commands], allow]
    body += [("label", "deny"), deny, ("label", "allow"), allow]
    return _assemble(body)


def _assemble(body: list) -> list[tuple[int, int, int, int]]:
    """Resolve the labels: a jump is taken to its label, and falls through otherwise (``jne``
    is a ``jeq`` with its branches swapped)."""
    labels, position = {}, 0
    for op in body:
        if op[0] == "label":
            labels[op[1]] = position
        else:
            position += 1
    program, position = [], 0
    for op in body:
        kind = op[0]
        if kind == "label":
            continue
        if kind == "raw":
            program.append(op[1:])
        elif kind == "ld":
            program.append((_LD_W_ABS, 0, 0, op[1]))
        elif kind == "ret":
            program.append((_RET_K, 0, 0, op[1]))
        else:
            offset = labels[op[2]] - position - 1
            code = _JGE_K if kind == "jge" else _JEQ_K
            program.append((code, 0, offset, op[1]) if kind == "jne" else (code, offset, 0, op[1]))
        position += 1
    return program


def forbid_signals(libc=None) -> None:
    """Load ``signal_filter`` for this process and all it forks, after leaving the judge's
    session so that process group 0 is its own. Without the filter (another architecture,
    or a kernel that refuses it) ``ConfineError``."""
    libc = libc or ctypes.CDLL(None, use_errno=True)
    if os.uname().machine != "x86_64":
        raise ConfineError(0, f"no signal filter for {os.uname().machine}")
    os.setsid()
    program = signal_filter(os.getpid(), older_above(os.getpid()))
    filters = (_Filter * len(program))(*[_Filter(*op) for op in program])
    prog = _Program(len(program), filters)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise ConfineError(ctypes.get_errno(), f"a seccomp filter: {os.strerror(ctypes.get_errno())}")


def landlock_abi(libc=None) -> int:
    """The kernel's Landlock ABI version, or -1 (errno set) where it has none."""
    libc = libc or ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_VERSION))


def scope_signals(libc=None) -> None:
    """Confine this process's signals, and those of all it forks, to itself and them: a
    Landlock domain scoped for signals (Linux 6.12, Landlock ABI 6) refuses any signal, by any
    call, to a process outside it, whatever its pid. The seccomp filter judges pids, and a pid
    says nothing of age: a thread the judge starts after its runner has a larger id, and
    ``kill`` on a thread's id signals its whole process (a SIGUSR1 reached a judge so); once
    the pid counter wraps, an older process has one too. Like the filter, it binds the calling thread
    only: the runner calls it single-threaded, before any candidate code. Without it
    ``ConfineError``."""
    libc = libc or ctypes.CDLL(None, use_errno=True)
    abi = landlock_abi(libc)
    if abi < _LANDLOCK_SCOPE_ABI:
        why = os.strerror(ctypes.get_errno()) if abi < 0 else f"Landlock ABI {abi}"
        raise ConfineError(ctypes.get_errno(), f"Landlock's signal scope needs ABI {_LANDLOCK_SCOPE_ABI} (Linux 6.12): {why}")
    attr = (ctypes.c_uint64 * 3)(0, 0, _LANDLOCK_SCOPE_SIGNAL)  # handled_access_fs, handled_access_net, scoped
    fd = libc.syscall(_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if fd < 0:
        raise ConfineError(ctypes.get_errno(), f"a Landlock ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.syscall(_LANDLOCK_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise ConfineError(ctypes.get_errno(), f"a Landlock domain: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)

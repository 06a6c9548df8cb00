"""The runner's signal walls, loaded in a forked child as the runner loads them (the seccomp
filter, and Landlock's signal scope where the kernel has it): it may signal itself and what
it forks, never its judge or any of the judge's threads, and has no other way to name one.
The filter's program is also run here on an interpreter, for the pids no machine offers on
demand."""
import ctypes
import fcntl
import os
import signal
import socket
import sys
import threading

import pytest

from kbharness.boundary import confine

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
                                reason="the filter is for Linux on x86-64")


LANDLOCK = confine.landlock_abi() >= confine._LANDLOCK_SCOPE_ABI
# What a runner's notes say when one of its walls is missing (Landlock's only where the kernel has it).
MISSING_WALLS = ("not filtered", "not confined") + (("not scoped",) if LANDLOCK else ())
needs_landlock = pytest.mark.skipif(not LANDLOCK, reason="the kernel has no Landlock signal scope (Linux 6.12)")


def _in_filtered_child(probe, scoped: bool = LANDLOCK) -> str:
    """What ``probe`` returned in a child confined as the runner is (or the exception it raised);
    ``scoped=False``: the filter alone."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            confine.forbid_signals()
            if scoped:
                confine.scope_signals()
            answer = str(probe())
        except BaseException as e:  # noqa: BLE001
            answer = f"{type(e).__name__}"
        os.write(write, answer.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        answer = f.read()
    os.waitpid(pid, 0)
    return answer


# Each wall alone, then both: where the kernel has Landlock's scope, it alone would refuse most
# of these, and the filter's own rules would go untested.
WALLS = pytest.mark.parametrize("scoped", [False, True] if LANDLOCK else [False],
                                ids=["filter-alone", "filter-and-landlock"][:1 + LANDLOCK])


@WALLS
def test_signalling_an_older_process_is_refused(scoped):
    judge = os.getpid()
    assert _in_filtered_child(lambda: os.kill(judge, 0), scoped) == "PermissionError"
    assert _in_filtered_child(lambda: os.kill(-os.getpgid(judge), 0), scoped) == "PermissionError"
    assert _in_filtered_child(lambda: os.kill(-1, 0), scoped) == "PermissionError"


def test_signalling_itself_its_group_and_its_own_children_still_works():
    def own_child():
        child = os.fork()
        if child == 0:
            signal.pause()
        os.kill(child, signal.SIGKILL)
        return os.waitpid(child, 0)[1] == signal.SIGKILL
    assert _in_filtered_child(own_child) == "True"
    assert _in_filtered_child(lambda: os.kill(os.getpid(), 0)) == "None"
    assert _in_filtered_child(lambda: os.kill(0, 0)) == "None"  # its own session's group, not the judge's
    assert _in_filtered_child(lambda: signal.pthread_kill(__import__("threading").get_ident(), 0)) == "None"


@WALLS
def test_other_ways_to_name_the_judge_are_refused(scoped):
    judge = os.getpid()

    def pidfd_signal():
        fd = os.open(f"/proc/{judge}", os.O_RDONLY | os.O_DIRECTORY)
        signal.pidfd_send_signal(fd, 0)

    def owner():
        a, _ = socket.socketpair()
        fcntl.fcntl(a, fcntl.F_SETOWN, judge)

    assert _in_filtered_child(pidfd_signal, scoped) == "PermissionError"
    assert _in_filtered_child(lambda: os.pidfd_open(judge), scoped) == "PermissionError"
    assert _in_filtered_child(owner, scoped) == "PermissionError"


def test_the_filter_program_refuses_other_architectures_first():
    program = confine.signal_filter(1000)
    assert program[0] == (0x20, 0, 0, 4)  # load the architecture
    deny = len(program) - 2
    assert program[1][0] == 0x15 and 1 + 1 + program[1][2] == deny and program[deny][3] == confine._RET_EPERM


@needs_landlock
def test_a_thread_the_judge_starts_after_its_runner_cannot_be_signalled():
    """Its id is above the runner's pid, and ``kill`` on a thread's id signals its whole
    process: through the filter alone a candidate's SIGUSR1 reached the judge. Landlock's
    scope refuses it whatever the id, as it refuses the judge once pids wrap."""
    got = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: got.append(1))
    started, done = threading.Event(), threading.Event()
    thread = threading.Thread(target=lambda: (started.set(), done.wait()))
    try:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(write)
            confine.forbid_signals()
            confine.scope_signals()
            tid = int(os.read(read, 32))
            try:
                os.kill(tid, signal.SIGUSR1)
                os._exit(0)
            except PermissionError:
                os._exit(1)
        os.close(read)
        thread.start()
        started.wait()
        os.write(write, str(thread.native_id).encode())
        os.close(write)
        refused = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 1
        assert thread.native_id > pid and refused and not got
    finally:
        done.set()
        thread.join()
        signal.signal(signal.SIGUSR1, previous)


def _run_filter(program, nr: int, arg0: int, arch: int = confine._AUDIT_ARCH_X86_64) -> str:
    """Classic BPF as the kernel runs a seccomp filter, for the few instructions it uses."""
    data = {0: nr, 4: arch, 16: arg0 & 0xFFFFFFFF, 24: 0}
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == confine._LD_W_ABS:
            acc = data[k]
        elif code == confine._RET_K:
            return {confine._RET_ALLOW: "allow", confine._RET_EPERM: "deny"}[k]
        else:
            taken = acc == k if code == confine._JEQ_K else acc >= k
            pc += jt if taken else jf
        pc += 1


def test_the_filters_decisions_by_pid():
    own = 5000
    program = confine.signal_filter(own)
    kill, tgkill = confine._PID_FIRST["kill"], confine._PID_FIRST["tgkill"]
    assert _run_filter(program, kill, own - 1) == "deny"  # an older process: its judge
    assert _run_filter(program, kill, -1) == "deny"
    assert [_run_filter(program, kill, p) for p in (0, -own, own, own + 7)] == ["allow"] * 4
    assert _run_filter(program, tgkill, own + 7) == "allow"  # a child's thread, named with its process
    assert _run_filter(program, confine._TKILL, own) == "allow"
    assert _run_filter(program, confine._TKILL, own + 7) == "deny"  # maybe a judge's later thread
    assert _run_filter(program, kill, own - 1, arch=0x40000003) == "deny"  # i386
    wrapped = confine.signal_filter(own, older=[own + 3, own + 900])  # alive above own: the counter wrapped
    assert [_run_filter(wrapped, kill, p) for p in (own + 3, own + 900)] == ["deny", "deny"]
    assert [_run_filter(wrapped, kill, p) for p in (own, own + 4, own + 901)] == ["allow"] * 3
    assert _run_filter(wrapped, tgkill, own + 900) == "deny"


def test_the_tasks_above_a_pid_are_found_ancestors_first_and_the_filter_takes_them_all():
    """What ``forbid_signals`` hands the filter: every live id above the runner's (here, this
    process's threads above a lower pid), its ancestors first; a list that long still loads."""
    done = threading.Event()
    thread = threading.Thread(target=done.wait)
    thread.start()
    try:
        older = confine.older_above(1)
        assert older[0] == os.getppid() and os.getpid() in older and thread.native_id in older
    finally:
        done.set()
        thread.join()
    program = confine.signal_filter(10, list(range(11, 11 + 2 * confine.MAX_OLDER)))
    assert len(program) <= 4096
    assert _run_filter(program, confine._PID_FIRST["kill"], 11 + confine.MAX_OLDER - 1) == "deny"
    assert _in_filtered_child(lambda: os.kill(os.getpid(), 0), scoped=False) == "None"


def test_a_proc_of_another_pid_namespace_gives_no_ids():
    """In a PID namespace whose ``/proc`` could not be remounted, the ids there are another
    namespace's: refusing them would refuse the runner's own children that happen to share them."""
    def probe():
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(confine._CLONE_NEWUSER | confine._CLONE_NEWPID) != 0:
            return "refused"
        child = os.fork()
        if child == 0:
            os._exit(0 if os.getpid() == 1 and confine.older_above(0) == [] else 1)
        return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])

    answer = _in_filtered_child(probe, scoped=False)
    if answer == "refused":
        pytest.skip("this kernel refuses an unprivileged user and PID namespace")
    assert answer == "0"

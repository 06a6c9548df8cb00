"""The runner's signal filter, loaded in a forked child: it may signal itself and what it
forks, never an older process (its judge), and has no other way to name one."""
import ctypes
import fcntl
import os
import signal
import socket
import sys

import pytest

from kbharness.boundary import confine

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
                                reason="the filter is for Linux on x86-64")


def _in_filtered_child(probe) -> str:
    """What ``probe`` returned in a child that loaded the filter (or the exception it raised)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            confine.forbid_signals()
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


def test_signalling_an_older_process_is_refused():
    judge = os.getpid()
    assert _in_filtered_child(lambda: os.kill(judge, 0)) == "PermissionError"
    assert _in_filtered_child(lambda: os.kill(-os.getpgid(judge), 0)) == "PermissionError"
    assert _in_filtered_child(lambda: os.kill(-1, 0)) == "PermissionError"


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


def test_other_ways_to_name_the_judge_are_refused():
    judge = os.getpid()

    def pidfd_signal():
        fd = os.open(f"/proc/{judge}", os.O_RDONLY | os.O_DIRECTORY)
        signal.pidfd_send_signal(fd, 0)

    def owner():
        a, _ = socket.socketpair()
        fcntl.fcntl(a, fcntl.F_SETOWN, judge)

    assert _in_filtered_child(pidfd_signal) == "PermissionError"
    assert _in_filtered_child(lambda: os.pidfd_open(judge)) == "PermissionError"
    assert _in_filtered_child(owner) == "PermissionError"


def test_the_filter_program_refuses_other_architectures_first():
    program = confine.signal_filter(1000)
    assert program[0] == (0x20, 0, 0, 4)  # load the architecture
    deny = len(program) - 2
    assert program[1][0] == 0x15 and 1 + 1 + program[1][2] == deny and program[deny][3] == confine._RET_EPERM

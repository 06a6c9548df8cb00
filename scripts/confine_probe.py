"""Which step of the runner's confinement hides the GPU: run inside the sandbox (see
scripts/gpu_boundary.sh); each step in a fresh child, then cuInit and cuDeviceGetCount.
    python scripts/confine_probe.py SCRATCH LOCKED..."""
import ctypes
import os
import sys

from kbharness.boundary import confine


def cuda() -> str:
    lib = ctypes.CDLL("libcuda.so.1")
    n = ctypes.c_int(-1)
    init = lib.cuInit(0)
    count = lib.cuDeviceGetCount(ctypes.byref(n))
    devs = sorted(os.listdir("/dev"))
    opened = []
    for node in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"):
        try:
            os.close(os.open(node, os.O_RDWR))
            opened.append(f"{node} ok")
        except OSError as e:
            opened.append(f"{node} {e.strerror}")
    return f"cuInit {init}, count {count}/{n.value}, uid {os.getuid()}, {'; '.join(opened)}, /dev: {len(devs)} nodes"


def child(label: str, step) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            step()
            print(f"{label}: {cuda()}", flush=True)
        except BaseException as e:  # noqa: BLE001
            print(f"{label}: failed {e!r}", flush=True)
        os._exit(0)
    os.waitpid(pid, 0)


def in_pid_ns(then):
    def step():
        confine.confine(writable=[SCRATCH], locked=LOCKED)
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)
            os._exit(0)
        then()
    return step


SCRATCH, LOCKED = sys.argv[1], sys.argv[2:]
libc = ctypes.CDLL(None, use_errno=True)
child("plain", lambda: None)
child("user ns", lambda: confine._own_user_namespace(libc, confine._CLONE_NEWUSER))
child("user+mount ns", lambda: confine._own_user_namespace(libc, confine._CLONE_NEWUSER | confine._CLONE_NEWNS))
child("user+mount+pid ns (unshared), no mounts",
      lambda: confine._own_user_namespace(libc, confine._CLONE_NEWUSER | confine._CLONE_NEWNS | confine._CLONE_NEWPID))
for path in LOCKED:
    def read_only(path=path):
        confine._own_user_namespace(libc, confine._CLONE_NEWUSER | confine._CLONE_NEWNS)
        confine._mount(libc, SCRATCH, SCRATCH, confine._MS_BIND, "scratch")
        flags = os.statvfs(path).f_flag & confine._KEPT
        confine._mount(libc, None, path, confine._MS_BIND | confine._MS_REMOUNT | confine._MS_RDONLY | flags, path)
    child(f"user+mount ns, {path} read-only", read_only)


def own_shm():
    confine._own_user_namespace(libc, confine._CLONE_NEWUSER | confine._CLONE_NEWNS)
    for path in LOCKED:
        flags = os.statvfs(path).f_flag & confine._KEPT
        confine._mount(libc, None, path, confine._MS_BIND | confine._MS_REMOUNT | confine._MS_RDONLY | flags, path)
    if libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", confine._MS_NOSUID | confine._MS_NODEV, b"mode=1777") != 0:
        raise OSError(ctypes.get_errno(), "tmpfs on /dev/shm")


child("all read-only, then a tmpfs of its own on /dev/shm", own_shm)
child("confined, not yet in pid ns", lambda: confine.confine(writable=[SCRATCH], locked=LOCKED))
child("in pid ns, no /proc", in_pid_ns(lambda: None))
child("in pid ns, /proc mounted", in_pid_ns(lambda: libc.mount(b"proc", b"/proc", b"proc", 14, None)))
child("in pid ns, capabilities dropped", in_pid_ns(lambda: confine.drop_capabilities(libc)))
child("in pid ns, enter_pid_namespace", in_pid_ns(confine.enter_pid_namespace))

import ctypes, os, sys
sys.path.insert(0, ".")
from kbharness import confine
SCRATCH, LOCKED = sys.argv[1], sys.argv[2:]
libc = ctypes.CDLL(None, use_errno=True)
confine.confine(writable=[SCRATCH], locked=LOCKED)
pid = os.fork()
if pid:
    os.waitpid(pid, 0); os._exit(0)
r = libc.mount(b"proc", b"/proc", b"proc", 14, None)
print("proc mount", r, os.strerror(ctypes.get_errno()), "getpid", os.getpid(), "/proc/self ->", os.readlink("/proc/self"), flush=True)
d = "/work/main/.bwrap/strace"
os.execve(f"{d}/strace", [f"{d}/strace", "-f", "-o", "/dev/stdout", "-e", "trace=!futex,mmap,munmap,mprotect,brk,rt_sigaction,rt_sigprocmask,fstat,newfstatat,close,read,lseek,pread64,getdents64,madvise", sys.executable, "-c",
  "import ctypes; print('cuInit', ctypes.CDLL('libcuda.so.1').cuInit(0), flush=True)"],
  {**os.environ, "LD_LIBRARY_PATH": d})

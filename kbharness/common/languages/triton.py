"""Triton: ``@triton.jit`` kernels compile, and autotune, at their first call, so the harness
makes that call in the build phase; their cache goes into the candidate's cache entry
(``TRITON_CACHE_DIR``). A compile error reads ``at LINE:COL:`` then the kernel's source,
the reason last; the verdict's message keeps the position and the reason. Under
``compile_only`` a launch compiles its kernel (every autotuning config of it) and returns
without running it, which is how a build worker fills the cache beside a GPU that is timing."""
import re
from contextlib import contextmanager
from typing import Iterator

from kbharness.common.languages.base import Language, decorated, first_line, imports


def describe(e: BaseException) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    if not lines:
        return f"Triton {type(e).__name__}"
    where = lines[0].rstrip(":") if re.match(r"at \d+:\d+:?$", lines[0]) else ""
    reason = lines[-1].strip() if where else first_line(e)
    return f"Triton {type(e).__name__}" + (f" {where}" if where else "") + f": {reason}"[:300]


@contextmanager
def compile_only() -> Iterator[None]:
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    run, tune = JITFunction.run, Autotuner.run

    def compile_kernel(self, *args, **kwargs):
        kwargs["warmup"] = True
        return run(self, *args, **kwargs)

    def compile_every_config(self, *args, **kwargs):
        kwargs.pop("warmup", None)
        return self.warmup(*args, **kwargs)

    JITFunction.run, Autotuner.run = compile_kernel, compile_every_config
    try:
        yield
    finally:
        JITFunction.run, Autotuner.run = run, tune


TRITON = Language(
    name="triton",
    label="Triton",
    markers=imports("triton"),
    needs_cuda=True,
    kernel_defs=decorated(r"triton\.jit"),
    packages=(("triton", "triton"),),
    extra="triton",
    lazy=True,
    error_modules=("triton",),
    describe=describe,
    compile_only=compile_only,
)

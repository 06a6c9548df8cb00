"""Triton: ``@triton.jit`` kernels compile, and autotune, at their first call, so the harness
makes that call in the build phase; their cache goes into the candidate's cache entry
(``TRITON_CACHE_DIR``). A compile error reads ``at LINE:COL:`` then the kernel's source,
the reason last; the verdict's message keeps the position and the reason."""
import re

from kbharness.languages.base import Language, decorated, first_line, imports


def describe(e: BaseException) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    if not lines:
        return f"Triton {type(e).__name__}"
    where = lines[0].rstrip(":") if re.match(r"at \d+:\d+:?$", lines[0]) else ""
    reason = lines[-1].strip() if where else first_line(e)
    return f"Triton {type(e).__name__}" + (f" {where}" if where else "") + f": {reason}"[:300]


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
)

"""CuTe DSL (``nvidia-cutlass-dsl``, imported as ``cutlass``): ``@cute.jit`` host functions and
``@cute.kernel`` kernels compile when first called or by ``cute.compile``, so the first call
is made in the build phase; errors raised by the DSL's own modules are its compile errors."""
import re

from kbharness.languages.base import Language

CUTE = Language(
    name="cute",
    label="CuTe DSL",
    markers=re.compile(r"^\s*(import cutlass|from cutlass\b)", re.MULTILINE),
    needs_cuda=True,
    kernel_defs=re.compile(r"@cute\.kernel\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)"),
    packages=(("cutlass", "nvidia-cutlass-dsl"),),
    extra="cute",
    lazy=True,
    error_modules=("cutlass",),
)

"""CuTe DSL (``nvidia-cutlass-dsl``, imported as ``cutlass``): ``@cute.jit`` host functions and
``@cute.kernel`` kernels compile when first called or by ``cute.compile``, so the first call
is made in the build phase; errors raised by the DSL's own modules are its compile errors."""
from kbharness.common.languages.base import Language, decorated, imports

CUTE = Language(
    name="cute",
    label="CuTe DSL",
    markers=imports("cutlass"),
    needs_cuda=True,
    kernel_defs=decorated(r"cute\.kernel"),
    packages=(("cutlass", "nvidia-cutlass-dsl"),),
    extra="cute",
    lazy=True,
    error_modules=("cutlass",),
    launched_as=r"(kernel_cutlass_)?{name}(_\w+)?",
)

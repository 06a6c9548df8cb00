"""TileLang: ``@tilelang.jit`` programs are lowered through TVM and compiled when first called,
so the first call is made in the build phase; errors raised by tilelang's or TVM's modules are
its compile errors."""
from kbharness.common.languages.base import Language, decorated, imports

TILELANG = Language(
    name="tilelang",
    label="TileLang",
    markers=imports("tilelang"),
    needs_cuda=True,
    kernel_defs=decorated(r"tilelang\.jit", r"T\.prim_func"),
    packages=(("tilelang", "tilelang"),),
    extra="tilelang",
    lazy=True,
    error_modules=("tilelang", "tvm"),
    launched_as=r"{name}(_kernel)?",
)

"""TileLang: ``@tilelang.jit`` programs are lowered through TVM and compiled when first called,
so the first call is made in the build phase; errors raised by tilelang's or TVM's modules are
its compile errors."""
import re

from kbharness.languages.base import Language

TILELANG = Language(
    name="tilelang",
    label="TileLang",
    markers=re.compile(r"^\s*(import tilelang|from tilelang\b)", re.MULTILINE),
    needs_cuda=True,
    kernel_defs=re.compile(r"@(?:tilelang\.jit|T\.prim_func)\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)"),
    packages=(("tilelang", "tilelang"),),
    extra="tilelang",
    lazy=True,
    error_modules=("tilelang", "tvm"),
)

"""C++ and CUDA through ``torch.utils.cpp_extension.load_inline``: built at import, into the
candidate's cache entry; a failed build is a compile error with the compiler's first error
(``loading``). The C++ flavour runs on the CPU."""
import re

from kbharness.common.languages.base import Language

_GLOBAL = re.compile(r"__global__[^;{]*?\b(\w+)\s*\(")

CUDA = Language(
    name="cuda",
    label="CUDA",
    markers=re.compile(r"cuda_sources\s*=|__global__|with_cuda\s*=\s*True|<<<"),
    needs_cuda=True,
    kernel_defs=_GLOBAL,
)

CPP = Language(
    name="cpp",
    label="C++ (CPU)",
    markers=re.compile(r"\bload_inline\b|cpp_extension"),
    needs_cuda=False,
)

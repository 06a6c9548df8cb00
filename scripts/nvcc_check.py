"""Compile-check CUDA candidates on a machine without a GPU or a CUDA torch.

The CPU torch wheel ships the CUDA headers, so nvcc can compile (not link) a
candidate's device code here; this catches syntax and type errors before a
scarce GPU session is spent on them. Usage: python scripts/nvcc_check.py FILE..."""
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import torch.utils.cpp_extension as ext

from kbharness.common.loading import read_solution

HEADER = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
# The toolkit here lacks the math libraries' headers; torch's context headers only need their handle and status types.
STUBS = {
    "cusparse.h": "typedef struct cusparseContext* cusparseHandle_t; typedef int cusparseStatus_t;",
    "cublas_v2.h": "typedef struct cublasContext* cublasHandle_t; typedef int cublasStatus_t;",
    "cusolver_common.h": "typedef int cusolverStatus_t;",
    "cublasLt.h": "typedef struct cublasLtContext* cublasLtHandle_t;",
    "cusolverDn.h": "typedef struct cusolverDnContext* cusolverDnHandle_t;",
}


class Captured(Exception):
    def __init__(self, kwargs):
        self.kwargs = kwargs


def capture(*args, **kwargs):
    names = ["name", "cpp_sources", "cuda_sources"]
    raise Captured({**dict(zip(names, args)), **kwargs})


def sources(path: Path) -> list[str]:
    ext.load_inline = capture
    try:
        exec(compile(read_solution(path).code, str(path), "exec"), {"__name__": "candidate"})
    except Captured as c:
        cuda = c.kwargs.get("cuda_sources") or []
        return [cuda] if isinstance(cuda, str) else list(cuda)
    return []


def check(path: Path) -> bool:
    ok = True
    for i, src in enumerate(sources(path)):
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in STUBS.items():
                (Path(tmp) / name).write_text(f"#pragma once\n{text}\n")
            includes = [*ext.include_paths(), sysconfig.get_paths()["include"], tmp]
            cu = Path(tmp) / f"k{i}.cu"
            cu.write_text(HEADER + src)
            cmd = ["nvcc", "-c", "-std=c++17", "-arch=sm_90", "-O3", "--expt-relaxed-constexpr",
                   "-DTORCH_EXTENSION_NAME=check", "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE", *[f"-I{p}" for p in includes], str(cu), "-o", str(Path(tmp) / "k.o")]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                ok = False
                print(f"FAIL {path}\n{r.stderr[-3000:]}")
    print(f"{'ok  ' if ok else 'FAIL'} {path}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if all([check(Path(p)) for p in sys.argv[1:]]) else 1)

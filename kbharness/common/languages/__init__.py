"""The kernel languages a candidate may be written in, one module each, behind one record
(``base.Language``): how a source is recognised, what it needs installed, whether its kernels
compile at their first call, how its compile errors read, what its kernels are named.

``detect`` takes the first language whose markers a source has: the DSLs before load_inline
(a Triton candidate may build a C++ helper too), plain PyTorch last.
"""
from __future__ import annotations

from kbharness.common.languages.base import Language
from kbharness.common.languages.cute import CUTE
from kbharness.common.languages.load_inline import CPP, CUDA
from kbharness.common.languages.pytorch import PYTORCH
from kbharness.common.languages.tilelang import TILELANG
from kbharness.common.languages.triton import TRITON

REGISTRY: tuple[Language, ...] = (TILELANG, CUTE, TRITON, CUDA, CPP, PYTORCH)
NAMES = tuple(lang.name for lang in REGISTRY)


class UnknownLanguage(ValueError):
    """A ``--language`` that names none of the registered languages."""


def by_name(name: str) -> Language:
    for lang in REGISTRY:
        if lang.name == name:
            return lang
    raise UnknownLanguage(f"language {name!r}: choose one of {', '.join(NAMES)}")


def detect(code: str) -> Language:
    return next(lang for lang in REGISTRY if lang.matches(code))


def of(code: str, name: str = "") -> Language:
    """The language ``name`` names, else the one ``code`` is written in."""
    return by_name(name) if name else detect(code)


def compile_error(e: BaseException) -> str | None:
    """The message of a kernel language's compile error anywhere in ``e``'s chain, or None."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        for lang in REGISTRY:
            if lang.owns_error(e):
                return lang.describe(e)
        e = e.__cause__ or e.__context__
    return None


def own_kernels(code: str) -> set[str]:
    """Names of the kernels ``code`` defines, in any language."""
    return set().union(*(lang.kernels(code) for lang in REGISTRY))


def own_launches(code: str) -> list:
    """What the kernels ``code`` defines, in any language, are called when launched."""
    return [p for lang in REGISTRY for p in lang.launches(code)]


def is_own_kernel(identifier: str, code: str) -> bool:
    """Whether a launched kernel (its ``kernels.kernel_identifier``) is one ``code`` defines."""
    return any(p.fullmatch(identifier) for p in own_launches(code))

"""Turning files into Python objects: a problem module, or a candidate's ``ModelNew``.

Executing a candidate is also when it compiles (``load_inline`` runs at import), so the
errors raised here are sorted into a load error or a compile error for the verdict.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kbharness.common import languages
from kbharness.common.buildcache import exclusive_build
from kbharness.common.extract import extract_code

COMPLETION_SUFFIXES = {".txt", ".md"}
_BUILD_FAILED = re.compile(r"Error building extension|error: command .* failed|ninja: build stopped")
_COMPILER_ERROR = re.compile(r"^(?:\S*/)?(\S.*\berror:.*)$", re.MULTILINE)


class LoadError(Exception):
    """Candidate or problem code that cannot be imported; ``compile`` tells a failed build apart."""

    def __init__(self, message: str, log: str = "", compile: bool = False):
        super().__init__(message)
        self.log = log
        self.compile = compile


@dataclass(frozen=True)
class SolutionSource:
    """A candidate file as the harness sees it: the code to run (or why none) and its hash."""

    path: Path
    sha256: str
    code: str | None
    reason: str = ""

    @property
    def language(self) -> languages.Language | None:
        return languages.detect(self.code) if self.code is not None else None

    @property
    def needs_cuda(self) -> bool:
        lang = self.language
        return lang is not None and lang.needs_cuda


def read_solution(path: Path) -> SolutionSource:
    """Read a ``.py`` solution, or extract the final code block of a raw completion."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise LoadError(f"{path}: cannot read ({e.strerror})") from None
    sha = hashlib.sha256(raw).hexdigest()
    text = raw.decode("utf-8", errors="replace")
    if path.suffix in COMPLETION_SUFFIXES:
        ex = extract_code(text)
        return SolutionSource(path, sha, ex.code, ex.reason)
    return SolutionSource(path, sha, text)


def exec_module(code: str, filename: str, name: str) -> types.ModuleType:
    """Execute source as a fresh module registered in ``sys.modules`` (pickling and dataclasses
    need that), compiled as Python would compile the file: without this module's ``from
    __future__ import annotations``, which would turn the source's annotations into strings
    that a DSL reading them (TileLang's ``T.Tensor((M, N), dtype)``) cannot resolve."""
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    try:
        exec(compile(code, filename, "exec", dont_inherit=True), module.__dict__)
    except SyntaxError as e:
        sys.modules.pop(name, None)
        raise LoadError(f"SyntaxError: {e.msg} ({Path(filename).name}, line {e.lineno})") from None
    except Exception as e:
        sys.modules.pop(name, None)
        text = f"{type(e).__name__}: {e}"
        if _BUILD_FAILED.search(text) or (isinstance(e, ImportError) and "undefined symbol" in str(e)):
            raise LoadError(_first_error(text), log=text, compile=True) from None
        raise LoadError(_first_line(text), log=traceback.format_exc()) from None
    return module


def load_problem(path: Path, overrides: dict[str, Any] | None = None) -> types.ModuleType:
    """Import a problem file; ``overrides`` replace its module-level size constants.

    That is the documented hook for shrinking problems in tests: ``get_inputs`` and
    ``get_init_inputs`` read the constants when called, so the file itself stays untouched.
    """
    path = Path(path)
    try:
        code = path.read_text()
    except OSError as e:
        raise LoadError(f"{path}: cannot read problem ({e.strerror})") from None
    module = exec_module(code, str(path), "kb_problem_" + hashlib.sha1(str(path).encode()).hexdigest()[:12])
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise LoadError(f"{path}: problem defines no {attr}")
    for key, value in (overrides or {}).items():
        if not hasattr(module, key):
            raise LoadError(f"{path}: size override {key!r} names no module constant")
        setattr(module, key, value)
    return module


def load_model_new(source: SolutionSource, run_dir: Path, phase: Callable[[str], None] | None = None) -> type:
    """Execute a candidate and return its ``ModelNew`` class. The import (its build) holds the
    build lock of its cache entry; a wait for another process's build of it is reported to
    ``phase``, by default written to ``run_dir/phase``, where a worker's parent reads it."""
    assert source.code is not None, "caller checks for missing code first"
    filename = str(source.path)
    if source.path.suffix in COMPLETION_SUFFIXES:
        extracted = Path(run_dir) / (source.path.stem + ".extracted.py")
        extracted.write_text(source.code)
        filename = str(extracted)
    with exclusive_build(phase or (lambda p: _write_phase(Path(run_dir), p))):
        module = exec_module(source.code, filename, "kb_solution_" + source.sha256[:12])
    model_new = getattr(module, "ModelNew", None)
    if not isinstance(model_new, type):
        raise LoadError(f"{source.path.name}: defines no class ModelNew")
    return model_new


def _write_phase(run_dir: Path, phase: str) -> None:
    """As the worker writes it: renamed into place, never read half-written."""
    tmp = run_dir / "phase.tmp"
    tmp.write_text(phase)
    os.replace(tmp, run_dir / "phase")


def _first_error(log: str) -> str:
    """The compiler's first error (``main.cpp:18:15: error: ...``, its build directory left
    out), not the command line that ninja prints first; the whole log stays in the record."""
    found = _COMPILER_ERROR.search(log)
    return found.group(1)[:300] if found else _first_line(log)


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return line[:limit]

"""The judge's side of the runner: asking it for calls.

``Runner`` turns the judge's questions into requests. Inputs go out through shared buffers
(``Exchange``), outputs come back into buffers the judge made to the reference output's
shapes; the runner keeps its mapping of them, so the judge's clock copies a batch's
outputs out before it stops and judges the copy. Whatever the runner claims is data: a
failure it reports can only be one of the failing verdicts, and a closed socket is ``Gone``.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
from typing import Any, Callable

import torch

from kbharness.boundary import sharedmem, wire
from kbharness.common.views import flat
from kbharness.common.results import Verdict

# What a runner may say its candidate did wrong; anything else it claims is a runtime error.
_FAILURES = {v.value: v for v in (Verdict.RUNTIME_ERROR, Verdict.OOM, Verdict.CUDA_ERROR, Verdict.COMPILE_ERROR,
                                  Verdict.LOAD_ERROR)}


class Gone(Exception):
    """The runner died or closed its socket; ``status`` is its wait status."""

    def __init__(self, status: int):
        super().__init__(f"runner ended with status {status}")
        self.status = status


class Failed(Exception):
    """The candidate failed in the runner: ``verdict`` (a failing one), message, log."""

    def __init__(self, verdict: Verdict, message: str, log: str):
        super().__init__(message)
        self.verdict, self.message, self.log = verdict, message, log


class Runner:
    def __init__(self, sock: socket.socket, pid: int):
        self.sock, self.pid = sock, pid
        self.on_phase: Callable[[str], None] = lambda p: None
        self._status: int | None = None

    def request(self, op: str, attach: list = (), fds: list[int] = (), **fields) -> dict:
        self.send(op, attach, fds, **fields)
        return self.receive()

    def send(self, op: str, attach: list = (), fds: list[int] = (), **fields) -> None:
        """A request whose reply ``receive`` waits for later (the judge works meanwhile)."""
        try:
            wire.send_request(self.sock, {"op": op, "attach": list(attach), **fields}, list(fds))
        except (wire.Closed, OSError):
            raise Gone(self.wait()) from None

    def receive(self) -> dict:
        try:
            while True:
                reply = wire.receive_reply(self.sock)
                if "phase" in reply:
                    self.on_phase(str(reply["phase"]))
                    continue
                break
        except (wire.Closed, OSError):
            raise Gone(self.wait()) from None
        except wire.BadMessage as e:
            raise Failed(Verdict.RUNTIME_ERROR, f"the runner broke its protocol: {e}", "") from None
        error = reply.get("error")
        if isinstance(error, dict):
            verdict = _FAILURES.get(error.get("verdict"), Verdict.RUNTIME_ERROR)
            raise Failed(verdict, str(error.get("message", ""))[:2000], str(error.get("log", "")))
        return reply

    def wait(self) -> int:
        if self._status is None:
            self.sock.close()
            _, status = os.waitpid(self.pid, 0)
            self._status = status
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) > 128:  # an init's way of saying "signal"
                self._status = os.WEXITSTATUS(status) - 128
                self._status = -self._status
        return self._status

    def stop(self) -> None:
        if self._status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.wait()


def end_as(status: int) -> None:
    """End this process as the runner ended (``Runner.wait``'s status: a wait status, or minus
    the signal an init passed on), so the worker's parent classifies the death as before."""
    sys.stdout.flush()
    sys.stderr.flush()
    if status < 0:
        sig = -status
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
    else:
        os._exit(os.WEXITSTATUS(status))
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)


class Exchange:
    """The judge's shared buffers, one per tensor position of each lane: every single call
    (``slot`` "check", "time", ...) is consumed before the next and shares lane 0, and call
    ``k`` of a batch ("batch{k}") has lane ``k``, so that a problem's inputs and outputs are
    held once per batched call, never once per kind of call. Made at first use, remade when a
    shape or dtype changes, announced to the runner with the next request. The judge's writes
    are finished before a request goes (the runner's process cannot order itself after this
    one's stream). A device buffer that does not fit is tried once more after ``release`` has
    given both processes' cached memory back to the driver."""

    def __init__(self, device: torch.device, release: Callable[[], None] = lambda: None):
        self.device, self._release = device, release
        self._slots: dict[tuple, sharedmem.Buffer] = {}
        self._next = 0
        self._new: list[sharedmem.Buffer] = []

    def _buffer(self, key: tuple, like: torch.Tensor) -> sharedmem.Buffer:
        key = (_lane(key[0]), *key[1:])
        buf = self._slots.get(key)
        if buf is None or tuple(buf.tensor.shape) != tuple(like.shape) or buf.tensor.dtype != like.dtype:
            self._next += 1
            try:
                buf = sharedmem.allocate(self._next, tuple(like.shape), like.dtype, self.device)
            except sharedmem.SharedMemoryError as e:
                if e.errno != sharedmem.OUT_OF_MEMORY:
                    raise
                self._release()
                buf = sharedmem.allocate(self._next, tuple(like.shape), like.dtype, self.device)
            self._slots[key] = buf
            self._new.append(buf)
        return buf

    def nbytes(self) -> int:
        """Bytes of every buffer made so far (the judge's, on its device or host)."""
        return sum(b.tensor.numel() * b.tensor.element_size() for b in self._slots.values())

    def put(self, slot: str, values: list) -> tuple[list, list]:
        """``values`` written into the slot's buffers: the references to send and the buffers (the
        runner's view of them after a call is what the candidate left in its inputs)."""
        refs, views = [], []
        for i, v in enumerate(values):
            if isinstance(v, torch.Tensor):
                buf = self._buffer((slot, "in", i), v)
                buf.tensor.copy_(v)
                refs.append(("buf", buf.desc.id))
                views.append(buf.tensor)
            else:
                refs.append(("val", v))
                views.append(v)
        self._finish()
        return refs, views

    def _finish(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def outputs(self, slot: str, like: Any) -> list:
        """Buffer ids for the tensors of an output shaped like ``like`` (None for other items)."""
        return [self._buffer((slot, "out", i), item).desc.id if isinstance(item, torch.Tensor) else None
                for i, item in enumerate(flat(like))]

    def poison_outputs(self, slot: str) -> None:
        """Overwrite the slot's output buffers, so that a call that skips its copy is wrong."""
        for (lane, kind, _), buf in self._slots.items():
            if lane == _lane(slot) and kind == "out":
                t = buf.tensor
                t.fill_(float("nan")) if t.is_floating_point() or t.is_complex() else t.bitwise_not_()
        self._finish()

    def announce(self) -> tuple[list, list[int]]:
        """Buffers made since the last request, as the request's ``attach`` and descriptors."""
        new, self._new = self._new, []
        return [b.desc for b in new], [b.fd for b in new]

    def read(self, slot: str, reply: dict, like: Any) -> Any:
        """The candidate's output as the runner delivered it: views of the buffers its items were
        copied into (valid until the slot's next call; the runner can still write them, so the
        judge's clock judges a copy of its own), a stand-in with the reported shape and dtype for one that did not
        fit (the comparison rejects it before reading values), or of the reported type."""
        kind, items = reply.get("kind"), reply.get("items") or []
        likes = flat(like)
        values = [self._item(slot, i, item, likes[i] if i < len(likes) else None) for i, item in enumerate(items)]
        if kind == "tuple":
            return tuple(values)
        if kind == "list":
            return values
        return values[0] if values else None

    def _item(self, slot: str, i: int, item: dict, like: Any) -> Any:
        if "value" in item:
            return item["value"]
        if not item.get("tensor"):
            return _stand_in(str(item.get("type", "object")))
        buf = self._slots.get((_lane(slot), "out", i))
        if item.get("copied") and buf is not None:
            return buf.tensor
        dtype = sharedmem._DTYPES.get(str(item.get("dtype")), torch.uint8)
        shape = [int(n) for n in item.get("shape", [])]
        return torch.empty(shape, dtype=dtype, device="meta")


def _lane(slot: str) -> int:
    return int(slot[5:]) if slot.startswith("batch") else 0


def _stand_in(name: str) -> Any:
    """An object of a class named as the runner reported, for the comparison's message."""
    safe = "".join(c for c in name if c.isalnum() or c == "_")[:60] or "object"
    return type(safe, (), {})()

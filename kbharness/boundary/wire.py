"""Messages between the judge and the runner over one Unix stream socket.

The directions are not alike. The judge's messages are pickled (the runner trusts the
judge, and a problem's init inputs are Python values); the runner's are JSON, never
unpickled, and capped in size, because the candidate may write whatever it likes to the
socket: unpickling its bytes would run its code in the judge. File descriptors (shared
buffers) travel with a message as ``SCM_RIGHTS``.
"""
from __future__ import annotations

import array
import json
import os
import pickle
import socket
import struct
from typing import Any

_HEADER = struct.Struct("!Q")
MAX_REPLY = 16 * 2**20
_MAX_FDS = 64


class Closed(EOFError):
    """The other side is gone (for the judge: the runner died or exited)."""


class BadMessage(ValueError):
    """A reply that is not a JSON object within ``MAX_REPLY`` bytes."""


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def send_request(sock: socket.socket, message: dict[str, Any], fds: list[int] = ()) -> None:
    _send(sock, pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL), list(fds))


def receive_request(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    body, fds = _receive(sock, limit=None)
    return pickle.loads(body), fds


def send_reply(sock: socket.socket, message: dict[str, Any]) -> None:
    _send(sock, json.dumps(message, allow_nan=True).encode(), [])


def receive_reply(sock: socket.socket) -> dict[str, Any]:
    body, fds = _receive(sock, limit=MAX_REPLY)
    for fd in fds:  # the runner has no business sending descriptors
        _close(fd)
    try:
        message = json.loads(body)
    except ValueError as e:
        raise BadMessage(f"the runner's reply is not JSON: {e}") from None
    if not isinstance(message, dict):
        raise BadMessage("the runner's reply is not a JSON object")
    return message


def _send(sock: socket.socket, body: bytes, fds: list[int]) -> None:
    header = _HEADER.pack(len(body))
    if fds:
        sock.sendmsg([header], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.sendall(header)
    sock.sendall(body)


def _receive(sock: socket.socket, limit: int | None) -> tuple[bytes, list[int]]:
    header, fds = _read_header(sock)
    (size,) = _HEADER.unpack(header)
    if limit is not None and size > limit:
        raise BadMessage(f"a reply of {size} bytes (at most {limit})")
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(size - got, 1 << 20))
        if not chunk:
            raise Closed("closed mid-message")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks), fds


def _read_header(sock: socket.socket) -> tuple[bytes, list[int]]:
    data, fds = b"", []
    space = socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize)
    while len(data) < _HEADER.size:
        chunk, ancillary, _, _ = sock.recvmsg(_HEADER.size - len(data), space)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                received = array.array("i")
                received.frombytes(payload[:len(payload) - len(payload) % received.itemsize])
                fds.extend(received)
        if not chunk:
            raise Closed("closed")
        data += chunk
    return data, fds


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass

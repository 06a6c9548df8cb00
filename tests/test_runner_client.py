"""The judge's side of the boundary: what it believes of the runner's messages."""
import json
import os
import pickle
import socket
import threading

import pytest
import torch

from kbharness.boundary import runner_client, sharedmem, wire
from kbharness.common.results import Verdict


def _runner_saying(*replies) -> runner_client.Runner:
    """A Runner whose 'runner' is a thread answering every request with the next raw reply."""
    ours, theirs = wire.pair()

    def answer():
        for raw in replies:
            wire.receive_request(theirs)
            theirs.sendall(len(raw).to_bytes(8, "big") + raw)
        theirs.close()

    threading.Thread(target=answer, daemon=True).start()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    return runner_client.Runner(ours, pid)


def test_a_runner_that_claims_its_candidate_is_correct_in_an_error_is_a_runtime_error():
    runner = _runner_saying(json.dumps({"error": {"verdict": "correct", "message": "trust me"}}).encode())
    with pytest.raises(runner_client.Failed) as failed:
        runner.request("call")
    assert failed.value.verdict is Verdict.RUNTIME_ERROR


def test_a_reply_that_is_not_json_is_never_unpickled():
    class Boom:
        def __reduce__(self):
            return (os._exit, (3,))

    runner = _runner_saying(pickle.dumps(Boom()))
    with pytest.raises(runner_client.Failed, match="broke its protocol"):
        runner.request("call")


def test_a_runner_that_goes_away_is_gone_with_its_status():
    runner = _runner_saying()
    with pytest.raises(runner_client.Gone) as gone:
        runner.request("call")
    assert gone.value.status == 0


def test_a_reply_larger_than_the_cap_is_refused(monkeypatch):
    monkeypatch.setattr(wire, "MAX_REPLY", 16)
    runner = _runner_saying(json.dumps({"x": "y" * 100}).encode())
    with pytest.raises(runner_client.Failed, match="broke its protocol"):
        runner.request("call")


def test_a_host_buffer_is_one_allocation_seen_by_both_sides():
    buf = sharedmem.allocate(1, (2, 3), torch.float32, torch.device("cpu"))
    other = sharedmem.attach(buf.desc, os.dup(buf.fd), torch.device("cpu"))
    other.tensor.fill_(7.0)
    assert torch.equal(buf.tensor, torch.full((2, 3), 7.0))
    assert buf.tensor.data_ptr() != other.tensor.data_ptr()


def test_descriptors_travel_with_a_request():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    buf = sharedmem.allocate(1, (4,), torch.int64, torch.device("cpu"))
    wire.send_request(a, {"op": "attach", "attach": [buf.desc]}, [buf.fd])
    message, fds = wire.receive_request(b)
    seen = sharedmem.attach(message["attach"][0], fds[0], torch.device("cpu"))
    buf.tensor.copy_(torch.arange(4))
    assert seen.tensor.tolist() == [0, 1, 2, 3]


def test_single_calls_share_one_lane_of_buffers_and_each_batched_call_has_its_own():
    """A problem's inputs are held once per batched call, not once per kind of call."""
    exchange = runner_client.Exchange(torch.device("cpu"))
    x = torch.ones(4)
    for slot in ("check", "repeat", "time", "warm", "batch0", "batch1"):
        exchange.put(slot, [x])
    descriptors, fds = exchange.announce()
    assert len(descriptors) == len(fds) == 2


def test_a_buffer_that_does_not_fit_is_tried_again_after_both_caches_are_released(monkeypatch):
    released, real = [], sharedmem.allocate

    def full_once(*args):
        if not released:
            raise sharedmem.SharedMemoryError(sharedmem.OUT_OF_MEMORY, "cuMemCreate returned CUDA error 2")
        return real(*args)

    monkeypatch.setattr(sharedmem, "allocate", full_once)
    exchange = runner_client.Exchange(torch.device("cpu"), release=lambda: released.append(True))
    refs, views = exchange.put("check", [torch.arange(3.0)])
    assert released == [True] and views[0].tolist() == [0.0, 1.0, 2.0]

"""The runner's side: what it reports of an output, and how it answers a failing candidate."""
import gc
import os

import torch
import torch.nn as nn

from kbharness.boundary import sharedmem, wire
from kbharness.runner import candidate_runner
from kbharness.runner.candidate_runner import _Session


class _Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return x * 2


def _session(model=None) -> _Session:
    session = _Session(None, ())
    session.model = model or _Scale()
    return session


def test_an_output_is_copied_into_the_judges_buffer_where_its_shape_and_dtype_fit():
    session = _session()
    session.buffers[1] = sharedmem.allocate(1, (4,), torch.float32, torch.device("cpu"))
    meta = session._deliver(torch.arange(4.0), [1], [])
    assert meta["kind"] == "single" and meta["items"][0]["copied"]
    assert torch.equal(session.buffers[1].tensor, torch.arange(4.0))
    misfit = session._deliver(torch.arange(6.0), [1], [])["items"][0]
    assert "copied" not in misfit and misfit["shape"] == [6] and misfit["dtype"] == "float32"


def test_what_an_output_shares_memory_with_is_reported():
    session = _session()
    x = torch.ones(4)
    view, param, fresh = (session._deliver(o, [None], [x])["items"][0] for o in (x[1:], session.model.w, x * 2))
    assert view["aliases_input"] and not view["aliases_param"]
    assert param["aliases_param"] and not param["aliases_input"]
    assert not fresh["aliases_input"] and not fresh["aliases_param"]


def test_a_tensor_subclass_and_a_python_value_are_reported_as_such():
    session = _session()

    class Sub(torch.Tensor):
        pass

    items = session._deliver((torch.ones(2).as_subclass(Sub), 3.5), [None, None], [])["items"]
    assert items[0]["tensor"] is False and items[0]["type"] == "Sub"
    assert items[1] == {"value": 3.5}


def test_a_fingerprint_sums_large_outputs_in_slices_of_any_layout(monkeypatch):
    from kbharness.runner import candidate_runner

    monkeypatch.setattr(candidate_runner, "_SUM_CHUNK", 7)  # every tensor below is "large"
    cases = [torch.randn(50), torch.randn(9, 6).t(), torch.randn(3, 5, 7).permute(2, 0, 1), torch.randn(40)[::2],
             torch.randn(1, 40).expand(3, 40), torch.randn(1, 1, 30)[:, :, ::2], torch.randint(0, 5, (33,)),
             torch.zeros(0, 3), torch.randn(())]
    for t in cases:
        whole = torch.sum(t, dtype=torch.float64) if t.is_floating_point() else torch.sum(t)
        got = candidate_runner._fingerprint(t)
        assert got.dtype == whole.dtype and abs(got.item() - whole.item()) < 1e-9, tuple(t.shape)
    changed = torch.randn(50)
    before = candidate_runner._values(candidate_runner._fingerprint(changed))
    changed[49] += 1.0
    assert candidate_runner._values(candidate_runner._fingerprint(changed)) != before


def test_the_runner_leaves_what_it_held_before_serving_to_no_collection():
    """Its full collection before it gives device memory back (``release``, three times an
    evaluation on a GPU) then scans only what the evaluation made, not torch's and the
    harness's objects (130 ms a collection on a two-core host)."""
    ours, theirs = wire.pair()
    pid = os.fork()
    if pid == 0:
        ours.close()
        gc.unfreeze()
        candidate_runner.serve(theirs)
        os._exit(0 if gc.get_freeze_count() > 10_000 else 1)
    theirs.close()
    wire.send_request(ours, {"op": "release"})
    assert "error" not in wire.receive_reply(ours)
    wire.send_request(ours, {"op": "bye"})
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0

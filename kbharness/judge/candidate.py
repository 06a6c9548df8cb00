"""The candidate as the judge sees it: a model it can only ask the runner to call.

Each method is one request (``runner_client.Runner``); inputs travel through the judge's
shared buffers and outputs come back in buffers shaped like the reference's answer
(``runner_client.Exchange``). What the runner reports besides values (aliasing, repeated
memory, a timed call's times) is the runner's word, and the judge treats it as such.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from kbharness.boundary.runner_client import Exchange, Runner
from kbharness.common.timing import CallTime


@dataclass(frozen=True)
class Called:
    """A checked call: the output, the inputs as the candidate left them, what it shares memory with."""

    out: Any
    inputs_after: list
    aliases_input: bool
    aliases_param: bool
    same_memory: bool


@dataclass(frozen=True)
class TimedCall:
    time: CallTime
    out: Any
    changed_after_return: bool


class RemoteCandidate:
    def __init__(self, runner: Runner, device: torch.device):
        self.runner, self.device = runner, device
        self.exchange = Exchange(device, self.release)

    def release(self) -> None:
        """Both processes' cached device memory back to the driver: what the judge's next
        shared buffer needs may sit in either caching allocator."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        self.runner.request("release")

    def _ask(self, op: str, **fields) -> dict:
        attach, fds = self.exchange.announce()
        return self.runner.request(op, attach=attach, fds=fds, **fields)

    def begin(self, spec_json: str, scratch: str, libraries: tuple[str, ...]) -> None:
        """Start the runner's session; it makes its device context, and loads ``libraries``,
        while the judge runs the reference (two contexts one after the other cost the sweep a
        sixth of its time)."""
        self.runner.send("start", spec=spec_json, scratch=scratch, libraries=list(libraries))

    def started(self) -> tuple[list[str], bool]:
        """The runner's notes, and whether it sees the GPU (asked before it holds any candidate
        code, so its answer is the machine's, not the candidate's)."""
        reply = self.runner.receive()
        return [str(n) for n in reply.get("notes", [])], not reply.get("no_gpu")

    def load(self) -> None:
        self._ask("load")

    def construct(self, init_inputs: list, on_device: bool) -> str:
        return str(self._ask("construct", init_inputs=init_inputs, on_device=on_device).get("note", ""))

    def call(self, slot: str, inputs: list, seed: int, like: Any, keep: bool = False) -> Called:
        refs, views = self.exchange.put(slot, inputs)
        reply = self._ask("call", inputs=refs, seed=seed, out=self.exchange.outputs(slot, like), keep=keep)
        items = (reply.get("out") or {}).get("items") or []
        return Called(self.exchange.read(slot, reply.get("out") or {}, like), views,
                      any(bool(i.get("aliases_input")) for i in items),
                      any(bool(i.get("aliases_param")) for i in items), bool(reply.get("same_memory")))

    def gradients(self, inputs: list, seed: int, like: list) -> Any:
        refs, _ = self.exchange.put("grad", inputs)
        reply = self._ask("gradients", inputs=refs, seed=seed, out=self.exchange.outputs("grad", like))
        return self.exchange.read("grad", reply.get("out") or {}, like)

    def warm(self, inputs: list, n: int) -> None:
        refs, _ = self.exchange.put("warm", inputs)
        self._ask("warm", inputs=refs, n=n)

    def capture(self, inputs: list) -> str:
        """'' when captured into a CUDA graph, else why not."""
        refs, _ = self.exchange.put("warm", inputs)
        return str(self._ask("capture", inputs=refs).get("error_text", ""))

    def drop_graph(self) -> None:
        self._ask("drop_graph")

    def time(self, inputs: list, seed: int, like: Any, grad: bool = False) -> TimedCall:
        refs, _ = self.exchange.put("time", inputs)
        r = self._ask("time", inputs=refs, seed=seed, out=self.exchange.outputs("time", like), grad=grad)
        t = CallTime(_ms(r.get("call_ms")), _ms(r.get("wall_ms")), _ms(r.get("queued_ms")),
                     bool(r.get("host_bound")), _ms(r.get("pending_ms")))
        return TimedCall(t, self.exchange.read("time", r.get("out") or {}, like), bool(r.get("changed_after_return")))

    def stage_batch(self, sets: list[list], likes: list) -> tuple[list, list]:
        """A batch's inputs written into buffers of their own, its output buffers poisoned, new
        buffers announced (a ping): the batch request's fields."""
        refs = [self.exchange.put(f"batch{k}", s)[0] for k, s in enumerate(sets)]
        outs = [self.exchange.outputs(f"batch{k}", like) for k, like in enumerate(likes)]
        for k in range(len(sets)):
            self.exchange.poison_outputs(f"batch{k}")
        self.ping()
        return refs, outs

    def batch(self, refs: list, outs: list, seed: int) -> None:
        """The calls themselves; the caller times this and must have announced the buffers."""
        self.runner.request("batch", sets=refs, outs=outs, seed=seed)

    def batch_outputs(self, likes: list) -> list:
        items = lambda like: [{"tensor": isinstance(x, torch.Tensor), "copied": True}  # noqa: E731
                              for x in (like if isinstance(like, (tuple, list)) else [like])]
        kind = lambda like: "tuple" if isinstance(like, tuple) else "list" if isinstance(like, list) else "single"  # noqa: E731
        return [self.exchange.read(f"batch{k}", {"kind": kind(like), "items": items(like)}, like)
                for k, like in enumerate(likes)]

    def ping(self) -> None:
        self._ask("ping")

    def kernels(self, inputs: list) -> list[tuple[str, float]]:
        refs, _ = self.exchange.put("warm", inputs)
        return [(str(n), float(us)) for n, us in self._ask("kernels", inputs=refs).get("kernels", [])]

    def integrity(self) -> list[str]:
        return [str(c)[:300] for c in self._ask("integrity").get("changes", [])][:20]

    def memory(self) -> dict:
        found = self._ask("memory").get("memory", {})
        return found if isinstance(found, dict) else {}


def _ms(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")

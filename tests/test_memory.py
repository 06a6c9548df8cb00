"""The memory bookkeeping on the CPU: sizes, the keeper's budget, what counts as out of memory.
The device paths (the cap, peaks, host parking) run in tests/test_gpu.py."""
import torch

from kbharness.common import memory


def test_nbytes_counts_nested_tensors_and_nothing_else():
    assert memory.nbytes([torch.zeros(4), (torch.zeros(2, dtype=torch.float64), 3), "x"]) == 4 * 4 + 2 * 8


def test_keeper_keeps_on_the_device_within_its_budget_and_leaves_room_for_what_must_follow():
    keeper = memory.Keeper(torch.device("cpu"))
    keeper.cuda, keeper.budget = True, 100  # the budget logic, without a GPU
    first = torch.zeros(10)  # 40 bytes
    assert keeper.fits(first) and keeper.keep(first) is first and keeper.used == 40
    assert not keeper.fits(torch.zeros(10), reserve=40)  # 40 + 40 + 40 > 100: the later trials come first
    assert keeper.fits(torch.zeros(10), reserve=20)
    keeper.keep(torch.zeros(10))
    assert keeper.used == 80
    keeper.keep(torch.zeros(10))  # over the budget: sent to the host, not counted
    assert keeper.used == 80


def test_cpu_evaluations_keep_everything_where_it_is_and_record_no_peaks():
    keeper = memory.Keeper(torch.device("cpu"))
    big = torch.zeros(1000)
    assert keeper.keep(big) is big and keeper.fits(big, reserve=10**12)
    meter = memory.PeakMeter(torch.device("cpu"))
    assert meter.call("reference", torch.nn.Identity(), [big], lambda: 7) == 7
    assert meter.summary() == {}
    assert memory.configure_allocator(torch.device("cpu"), 80) is None


def test_out_of_memory_is_recognised_by_class_and_by_message():
    assert memory.is_oom(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.00 GiB"))
    assert memory.is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 35 TB"))
    assert memory.is_oom(MemoryError())
    assert not memory.is_oom(RuntimeError("shape mismatch"))


def test_a_kept_answer_that_views_a_larger_storage_is_copied_into_its_own():
    keeper = memory.Keeper(torch.device("cpu"))
    keeper.cuda, keeper.budget = True, 10**6  # the device path's bookkeeping, without a GPU
    elementwise = torch.arange(1000.0)
    scalar = elementwise[7]  # a view holding all 4000 bytes, as smooth_l1_loss's scalar does on CUDA
    own = torch.ones(3)
    kept = keeper.keep((scalar, own, 5))
    assert kept[0].untyped_storage().nbytes() == 4 and kept[0].item() == 7.0
    assert kept[1] is own and kept[2] == 5 and keeper.used == 4 + 12

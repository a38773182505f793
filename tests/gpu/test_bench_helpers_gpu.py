"""tessera.testing.do_bench on a GPU: CUDA-event times match a copy's bandwidth, the L2 flush shows (the default
read eviction and Triton's write alike)."""

from __future__ import annotations

import pytest

from tessera import testing as TT

torch = pytest.importorskip("torch")


def test_a_device_copy_times_at_hbm_bandwidth():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = TT.do_bench(lambda: y.copy_(x), rep=50)
    tbs = 2 * x.numel() / (ms * 1e-3) / 1e12
    assert 0.5 < tbs < 6.0, tbs  # H200: ~4.2 TB/s for a copy; anything outside this is a broken timer


@pytest.mark.parametrize("flush", [True, "write"], ids=["read-eviction", "triton-write"])
def test_the_l2_flush_makes_a_small_read_go_to_hbm(flush):
    # a read of 8 MB (a sum: nothing written), well inside one half of the 50 MB L2. Timed hot it was slower than
    # cold on the H100 (2026-12-07 with a 16 MB copy, 2026-12-08 with this sum: 18 us against 12): the hot
    # repetitions had no head start, so their events timed the host's launches. do_bench now queues a GPU sleep
    # before each repetition (tests/unit/test_bench_helpers.py checks the order)
    x = torch.rand(2 << 20, device="cuda")
    # the least of three interleaved medians each: another process's kernels on the GPU (pytest -n) only slow a
    # measurement down
    cold, hot = [], []
    for _ in range(3):
        cold.append(TT.do_bench(lambda: x.sum(), rep=50, flush_l2=flush))
        hot.append(TT.do_bench(lambda: x.sum(), rep=50, flush_l2=False))
    assert min(cold) >= min(hot) * 0.95, (cold, hot)
    lo, mid, hi = TT.do_bench(lambda: x.sum(), rep=20, quantiles=(0.2, 0.5, 0.8))
    assert lo <= mid <= hi

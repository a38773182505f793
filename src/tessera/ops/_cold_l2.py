"""Timing a call with a cold, clean L2, as the tuners and benchmarks do.

A call in a model finds its weights out of L2, and L2 full of lines it can drop for free: what came before read
them (weights, KV cache) or wrote a few small activations. So before each timed call a buffer larger than any
Hopper L2 is *read*. Writing it instead (the usual `cache.zero_()`) leaves ~50 MB of dirty lines whose
write-backs then land inside the timed call: at 16 x 4096 x 4096 on an H100 that added 2.5 us to our decode
kernel and 4.4 us to cuBLAS's (benchmarks/decode_stamps.py), so a write flush flattered us by 1.1x.
"""

from __future__ import annotations

import statistics

L2_FLUSH_BYTES = 256 << 20  # read before each timed run: more than the L2 of any Hopper part (50-60 MB)


class ColdL2:
    """A device buffer larger than L2 and an 8-byte sink: `evict()` reads the buffer (a sum into the sink) on the
    current stream, leaving L2 holding its clean lines only. Needs torch with CUDA."""

    def __init__(self, torch, nbytes: int = L2_FLUSH_BYTES):
        self._torch = torch
        self._buf = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
        self._sink = torch.zeros((), dtype=torch.int64, device="cuda")

    def evict(self) -> None:
        self._torch.sum(self._buf, 0, dtype=self._torch.int64, out=self._sink)


def cold_median_seconds(launch, runs: int, cold: ColdL2, stream) -> float:
    """The median seconds of `runs` calls of `launch()` on `stream`, CUDA events around each, `cold.evict()`
    before each. A cold L2 each run, as a call in a model sees it: a decode weight (32 MB at 16 x 4096 x 4096)
    fits the H200's 50 MB L2, and timing it hot chose configs 1.4x slower than the default once it was cold. The
    tuners of gemm and attention measure with it."""
    import torch

    times = []
    for _ in range(runs):
        cold.evict()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        launch()
        end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)

"""Launch geometry of persistent kernels: the caller's logical grid onto one wave of CTAs.

A persistent kernel (`EmittedKernel.persistent`) is written for a logical grid
(g0, g1, g2) but launched with only as many CTAs as the device has SMs, each
looping over logical CTAs; the kernel learns the logical grid from its `grid`
parameters. Launching fewer CTAs than SMs when the work is small keeps every
CTA busy, and launching no more than one per SM keeps the loop's order (the
L2 reuse the kernel was scheduled for) instead of the hardware's.
"""

from __future__ import annotations

from tessera.ir.diagnostics import RUNTIME_LAUNCH_FAILED
from tessera.runtime.errors import RuntimeLaunchError

INT_LIMIT = 2**31 - 1  # the kernel numbers logical CTAs with 32-bit ints


def logical_grid(grid, kernel: str | None = None) -> tuple[int, int, int]:
    """`grid` (an int or 1 to 3 positive ints) as (g0, g1, g2); RUNTIME_LAUNCH_FAILED when it is not one."""
    dims = (grid,) if isinstance(grid, int) else tuple(grid) if isinstance(grid, (tuple, list)) else None
    if dims is None or not 1 <= len(dims) <= 3 or not all(type(d) is int and d >= 1 for d in dims):
        raise RuntimeLaunchError(RUNTIME_LAUNCH_FAILED, f"grid must be a positive int or 1 to 3 positive ints, "
                                 f"got {grid!r}", kernel=kernel)
    dims = dims + (1,) * (3 - len(dims))
    total = dims[0] * dims[1] * dims[2]
    if total > INT_LIMIT:
        raise RuntimeLaunchError(RUNTIME_LAUNCH_FAILED, f"the logical grid {dims} has {total} CTAs; a persistent "
                                 f"kernel numbers them with 32-bit ints (at most {INT_LIMIT})", kernel=kernel,
                                 hint="use larger tiles, or split the launch")
    return dims


def physical_grid(grid, sm_count: int, kernel: str | None = None, cluster: int = 1, splitk: int = 1,
                  cluster_axis: int = 0, streamk: bool = False) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(physical grid, logical grid) of a persistent launch over `grid` on a device of `sm_count` SMs:
    (min(g0*g1*g2, sm_count), 1, 1) CTAs, and (g0, g1, g2) for the kernel's grid parameters.

    With clusters of `cluster` CTAs (which take `cluster` consecutive tile rows together) the CTA count is
    `cluster` times min(ceil(g0 / cluster) * g1 * g2, sm_count // cluster): whole clusters, one CTA per SM
    (ceil(g1 / cluster) * g0 * g2 when the cluster takes neighbouring columns, `cluster_axis` 1; g0 * g1 * g2
    when its CTAs share each tile and split its K steps, `cluster_axis` -1).
    A split-K kernel has `splitk` units of work per logical CTA (tile), so as many times the CTAs to fill; a
    stream-K kernel shares the K steps of the last waves among all CTAs, so it takes one CTA per SM always.
    """
    dims = logical_grid(grid, kernel)
    if type(sm_count) is not int or sm_count < cluster:
        raise RuntimeLaunchError(RUNTIME_LAUNCH_FAILED, f"the device reported {sm_count!r} SMs; a persistent launch "
                                 f"of {cluster}-CTA clusters needs the count", kernel=kernel)
    if streamk:
        return (cluster * (sm_count // cluster), 1, 1), dims
    pairs = [-(-d // cluster) if axis == cluster_axis else d for axis, d in enumerate(dims)]
    return (cluster * min(pairs[0] * pairs[1] * pairs[2] * splitk, sm_count // cluster), 1, 1), dims

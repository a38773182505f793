"""TMA tensor maps and persistent launches on a real sm_90a device.

A test-only kernel takes a tensor map the runtime encoded (`tessera.runtime.tma`)
as a `__grid_constant__` parameter, copies one 64 x 64 bf16 box into shared
memory with `cp.async.bulk.tensor` and the 128-byte swizzle, waits on an
mbarrier, and writes shared memory out byte for byte. That checks, on the
device: (a) the encoder (dims innermost first, the row pitch in bytes, the
box, zero fill past every edge), by the values each shared-memory row holds;
(b) our swizzle model (`tessera.layouts.smem_swizzle`), by where each element
landed. A second kernel checks a persistent launch: the physical grid is
min(CTAs, SMs) and every logical CTA is visited exactly once.
"""

import ml_dtypes
import numpy as np
import pytest

from tessera.target.nvidia.toolchain import compile_cuda
from tessera.target.nvidia.emit.cuda import KernelParam
from tessera.layouts.smem_swizzle import smem_layout
from tessera.runtime import RuntimeLaunchError, device_info, load, ptr, scalar, tma, tmap
from tessera.runtime.derived import DerivedParams

ROWS, COLS = 64, 64  # the box: 64 rows x 64 bf16 = 128 bytes a row, one 128B swizzle atom wide
BOX_BYTES = ROWS * COLS * 2
M, N = 200, 104  # the array: 208-byte rows (a multiple of 16), not a multiple of the box either way

# The parameters follow emit_cuda's ABI for one 2-D memref and its tensor map.
TMA_BOX = r'''
struct alignas(64) tsr_tensormap { unsigned long long opaque[16]; };

extern "C" __global__ void tma_box(const unsigned short* __restrict__ a, long long a_size0, long long a_size1,
                                   long long a_stride0, long long a_stride1,
                                   const __grid_constant__ tsr_tensormap a_tmap, int row0, int col0,
                                   unsigned char* __restrict__ out, int* __restrict__ info) {
  constexpr unsigned BYTES = %(bytes)d;
  extern __shared__ __align__(1024) unsigned char tsr_smem[];
  __shared__ __align__(8) unsigned long long bar;
  // the 128B swizzle pattern repeats every 1024 bytes: start the box on such a boundary
  const unsigned base = (unsigned)__cvta_generic_to_shared(tsr_smem);
  const unsigned pad = (1024u - (base & 1023u)) & 1023u;
  const unsigned s_box = base + pad;
  const unsigned s_bar = (unsigned)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%%0], 1;" :: "r"(s_bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%0], %%1;" :: "r"(s_bar), "r"(BYTES) : "memory");
    // coordinates innermost first: {column, row}
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                 "[%%0], [%%1, {%%2, %%3}], [%%4];"
                 :: "r"(s_box), "l"(reinterpret_cast<unsigned long long>(&a_tmap)), "r"(col0), "r"(row0),
                    "r"(s_bar) : "memory");
  }
  asm volatile("{\n"
               "  .reg .pred done;\n"
               "tsr_wait:\n"
               "  mbarrier.try_wait.parity.shared::cta.b64 done, [%%0], 0;\n"
               "  @!done bra tsr_wait;\n"
               "}\n" :: "r"(s_bar) : "memory");
  for (unsigned i = threadIdx.x; i < BYTES; i += blockDim.x) out[i] = tsr_smem[pad + i];
  if (threadIdx.x == 0) { info[0] = (int)(s_box & 1023u); info[1] = (int)(base & 1023u); }
}
''' % {"bytes": BOX_BYTES}

# Each CTA of a persistent grid walks the logical CTAs t = blockIdx.x, blockIdx.x + gridDim.x, ...
PERSISTENT = r'''
extern "C" __global__ void visit(int* __restrict__ hits, int* __restrict__ info, int g0, int g1, int g2) {
  const int total = g0 * g1 * g2;
  for (int t = blockIdx.x; t < total; t += gridDim.x)
    if (threadIdx.x == 0) atomicAdd(&hits[t], 1);
  if (blockIdx.x == 0 && threadIdx.x == 0) { info[0] = gridDim.x; info[1] = gridDim.y * gridDim.z; }
}
'''

TENSOR = ("a", "a_size0", "a_size1", "a_stride0", "a_stride1")
SIG = (ptr("a", "bf16", ("a_size0", "a_size1"), "in"), *(scalar(n, "i64") for n in TENSOR[1:]),
       tmap("a_tmap", "bf16", TENSOR, (ROWS, COLS), 128), scalar("row0", "i32"), scalar("col0", "i32"),
       ptr("out", "u8", BOX_BYTES, "out"), ptr("info", "i32", 2, "out"))


@pytest.fixture(scope="module")
def info():
    found = device_info(0)
    if found.arch_specific != "sm_90a":
        pytest.skip(f"TMA tests need an sm_90 device; this one is {found.arch}")
    return found


@pytest.fixture(scope="module")
def kernel(info):
    return load(compile_cuda(TMA_BOX, "sm_90a"), "tma_box", SIG)


def source_array() -> np.ndarray:
    """M x N bf16 with distinct, non-zero bit patterns (copied as raw bits: NaN patterns are fine)."""
    bits = np.arange(1, M * N + 1, dtype=np.uint16).reshape(M, N)
    return bits.view(ml_dtypes.bfloat16)


def expected_box(a: np.ndarray, row0: int, col0: int) -> np.ndarray:
    """The box's bits: a[row0 + r, col0 + c] inside the array, 0 outside (tile.load's pad 0.0)."""
    bits = a.view(np.uint16)
    box = np.zeros((ROWS, COLS), np.uint16)
    r0, c0 = max(row0, 0), max(col0, 0)
    r1, c1 = min(row0 + ROWS, M), min(col0 + COLS, N)
    if r1 > r0 and c1 > c0:
        box[r0 - row0:r1 - row0, c0 - col0:c1 - col0] = bits[r0:r1, c0:c1]
    return box


def run_box(kernel, a, row0, col0, tensor_map=None):
    """Launch on `a` (a numpy array, or a raw device pointer: then the sizes and strides say its layout);
    `tensor_map` None lets the runtime encode it."""
    out = np.zeros(BOX_BYTES, np.uint8)
    where = np.full(2, -1, np.int32)
    kernel.launch(1, 128, BOX_BYTES + 1024, (a, M, N, N, 1, tensor_map, row0, col0, out, where), sync=True)
    assert where[0] == 0, f"the box landed at {where[0]} mod 1024 in shared memory; the test assumes 0"
    print(f"dynamic shared memory base mod 1024: {where[1]}")  # what __align__(1024) gave, next to a static mbarrier
    return out


def check_box(out: np.ndarray, want: np.ndarray) -> None:
    # (a) values, whatever the swizzle: the 128B swizzle only permutes the 16-byte chunks of each row
    got_rows = out.reshape(ROWS, 8, 16)
    want_rows = want.view(np.uint8).reshape(ROWS, 8, 16)
    for r in range(ROWS):
        got_chunks = sorted(bytes(c) for c in got_rows[r])
        want_chunks = sorted(bytes(c) for c in want_rows[r])
        assert got_chunks == want_chunks, f"row {r} of the box holds other values than the array"
    # (b) positions: element (r, c) sits where smem_layout(64, 64, bf16, 128B) says
    table = smem_layout(ROWS, COLS, "bf16", "128B").table()
    got = out.view(np.uint16)[table // 2]
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(out.view(np.uint16).reshape(ROWS, COLS), want) or not want.any()  # it did swizzle


@pytest.mark.parametrize("row0, col0", [(40, 24), (M - 30, N - 32), (-5, -8)], ids=["interior", "edge", "before"])
def test_tma_box_numpy_array_matches_numpy_and_the_swizzle_model(kernel, row0, col0):
    a = source_array()
    want = expected_box(a, row0, col0)
    if (row0, col0) != (40, 24):
        assert (want == 0).any() and want.any()  # the edge cases do read zero fill and real values
    check_box(run_box(kernel, a, row0, col0), want)


def test_tma_box_device_pointer_encodes_once_and_is_cached(kernel):
    from cuda.bindings import driver
    a = source_array()
    err, dptr = driver.cuMemAlloc(a.nbytes)
    assert err == driver.CUresult.CUDA_SUCCESS
    try:
        (err,) = driver.cuMemcpyHtoD(dptr, a.ctypes.data, a.nbytes)
        assert err == driver.CUresult.CUDA_SUCCESS
        address = int(dptr)
        check_box(run_box(kernel, address, M - 30, N - 32), expected_box(a, M - 30, N - 32))
        before = tma.cache_info()
        check_box(run_box(kernel, address, 40, 24), expected_box(a, 40, 24))
        after = tma.cache_info()
        assert after["misses"] == before["misses"] and after["hits"] > before["hits"]  # no second encode
        # a map encoded by hand is passed as is
        encoded = tma.encode(address, "bf16", (M, N), (N, 1), (ROWS, COLS), 128)
        check_box(run_box(kernel, address, 0, 0, encoded), expected_box(a, 0, 0))
        # a misaligned base address is refused before anything runs, naming the argument
        out = np.zeros(BOX_BYTES, np.uint8)
        with pytest.raises(RuntimeLaunchError) as err:
            kernel.launch(1, 128, BOX_BYTES + 1024, (address + 2, M, N, N, 1, None, 0, 0, out, np.zeros(2, np.int32)))
        assert err.value.code.name == "RUNTIME_TMA_INVALID" and "'a'" in err.value.message
        assert not out.any()
    finally:
        driver.cuMemFree(dptr)


@pytest.mark.parametrize("grid", [(3, 5, 2), (40, 17, 1), 7])
def test_persistent_launch_visits_every_logical_cta_once(info, grid):
    params = (KernelParam("hits", "int*", 0, "ptr"), KernelParam("info", "int*", 1, "ptr"),
              *(KernelParam(f"g{d}", "int", -1, "grid", d) for d in range(3)))
    sig = (ptr("hits", "i32", (), "out"), ptr("info", "i32", 2, "out"), *(scalar(f"g{d}", "i32") for d in range(3)))
    kernel = load(compile_cuda(PERSISTENT, info.arch), "visit", sig)
    derived = DerivedParams(params, sig, True, "visit", lambda device: device_info(device).sm_count)
    dims = (grid, 1, 1) if isinstance(grid, int) else grid
    total = dims[0] * dims[1] * dims[2]
    hits, where = np.zeros(total, np.int32), np.zeros(2, np.int32)
    physical, values = derived.complete(grid, [hits, where])
    assert values[2:] == list(dims) and physical == (min(total, info.sm_count), 1, 1)
    kernel.launch(physical, 32, 0, values)
    np.testing.assert_array_equal(hits, np.ones(total, np.int32))
    assert tuple(where) == (min(total, info.sm_count), 1)

"""TMA tensor maps for sm_90a kernels: check the rules, encode with the driver, cache the 128 bytes.

An sm_90a kernel reads a memref of rank 2 to 5 through the copy engine
(`cp.async.bulk.tensor`) and takes, as a `const __grid_constant__` parameter, a
CUtensorMap: 128 opaque bytes describing the array (base address, dtype, sizes,
pitches), the box it copies (rows x cols of the last two dims, one index of
each outer dim) and the shared-memory swizzle. `encode` builds one with the driver's
`cuTensorMapEncodeTiled`, but first checks every rule the hardware imposes, so a
bad array gets RUNTIME_TMA_INVALID naming the argument and the rule rather
than the driver's bare CUDA_ERROR_INVALID_VALUE (or, worse, a map that faults).

The map is a pure function of (address, dtype, sizes, strides, box, swizzle):
encodings are kept in a bounded LRU, so a warm launch on the same arrays reads
a dict instead of calling the driver. Out-of-bounds elements read as zero
(FLOAT_OOB_FILL_NONE), which is tile.load's `pad 0.0`.

`TensorMap` is the encoded value: `bytes` of length 128, a distinct type so the
launcher's warm path can trust it without re-checking its length. `TmapSlot`
fills a tensor-map parameter from the pointer, size and stride parameters of
the same argument in a C parameter list; the binder and `CompiledKernel` share it.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from operator import itemgetter

from tessera.ir.diagnostics import RUNTIME_TMA_INVALID
from tessera.runtime.errors import RuntimeLaunchError, driver_error_name

TMAP_BYTES = 128
TMAP_ALIGN = 64
TMAP_CTYPE = ctypes.c_uint64 * (TMAP_BYTES // 8)  # the parameter's size as the driver reports it
ITEMSIZE = {"bf16": 2, "f16": 2, "f32": 4}
SWIZZLES = (0, 32, 64, 128)
BOX_LIMIT = 256
SIZE_LIMIT = 2**32
STRIDE_LIMIT = 2**40
MAX_RANK = 5  # cuTensorMapEncodeTiled's limit
CACHE_ENTRIES = 1024  # distinct (array, box, swizzle) maps kept; a training loop sees a few dozen


class TensorMap(bytes):
    """An encoded CUtensorMap: exactly 128 bytes, so the launcher packs one without re-checking it."""

    __slots__ = ()

    def __new__(cls, raw=b""):
        value = super().__new__(cls, raw)
        if len(value) != TMAP_BYTES:
            raise ValueError(f"a tensor map is {TMAP_BYTES} bytes, got {len(value)}")
        return value


def as_tensor_map(value) -> TensorMap | None:
    """`value` (bytes-like of 128 bytes, or a cuda.bindings CUtensorMap) as a TensorMap, or None if it is neither."""
    if isinstance(value, TensorMap):
        return value
    if hasattr(value, "getPtr") and hasattr(value, "opaque"):  # cuda.bindings' CUtensorMap
        return TensorMap(ctypes.string_at(value.getPtr(), TMAP_BYTES))
    try:
        raw = memoryview(value).cast("B")
    except TypeError:
        return None
    return TensorMap(raw) if raw.nbytes == TMAP_BYTES else None


def _fail(name: str, rule: str, hint: str, kernel: str | None) -> RuntimeLaunchError:
    return RuntimeLaunchError(RUNTIME_TMA_INVALID, f"argument {name!r} cannot be read through a TMA tensor map: "
                                                   f"{rule}", kernel=kernel, hint=hint)


def check_box(name: str, elem: str, box, swizzle: int, kernel: str | None = None) -> None:
    """The rules that depend only on the kernel: dtype, box and swizzle (checked once per signature)."""
    if elem not in ITEMSIZE:
        raise _fail(name, f"its element type {elem} has no TMA data type",
                    "TMA tensor maps here take bf16, f16 or f32 arrays", kernel)
    item = ITEMSIZE[elem]
    if swizzle not in SWIZZLES:
        raise _fail(name, f"swizzle {swizzle} is not one of {SWIZZLES} bytes", "use 0, 32, 64 or 128", kernel)
    if len(box) != 2 or not all(type(b) is int and 1 <= b <= BOX_LIMIT for b in box):
        raise _fail(name, f"box {tuple(box)} is not two dims in [1, {BOX_LIMIT}]",
                    f"TMA copies 2-D boxes of at most {BOX_LIMIT} x {BOX_LIMIT} elements", kernel)
    cols = box[1]
    if cols * item % 16:
        raise _fail(name, f"a box row of {cols} {elem} is {cols * item} bytes, not a multiple of 16",
                    "make the box's column count a multiple of 16 bytes of elements", kernel)
    if swizzle and cols * item > swizzle:
        raise _fail(name, f"a box row of {cols} {elem} is {cols * item} bytes, wider than the {swizzle}-byte swizzle",
                    f"use a box of at most {swizzle // item} columns, or a wider swizzle", kernel)


def check(name: str, elem: str, sizes, strides, box, swizzle: int, address: int | None = None,
          kernel: str | None = None) -> None:
    """Raise RUNTIME_TMA_INVALID unless the array and box obey the TMA rules (address None: not yet known).

    sizes and strides are in elements, one per dim, the last innermost (rank 2 to 5); box is (rows, cols) of the
    last two dims.
    """
    check_box(name, elem, box, swizzle, kernel)
    item = ITEMSIZE[elem]
    rank = len(sizes)
    if not 2 <= rank <= MAX_RANK or len(strides) != rank:
        raise _fail(name, f"it has rank {rank} ({len(strides)} strides); the maps here have 2 to {MAX_RANK} dims",
                    f"pass an array of 2 to {MAX_RANK} dims (merge or split dims to fit)", kernel)
    if any(s == 0 for s in sizes):
        raise _fail(name, f"it is empty (shape {tuple(sizes)})", "launch only with non-empty arrays", kernel)
    if not all(1 <= s < SIZE_LIMIT for s in sizes):
        raise _fail(name, f"shape {tuple(sizes)} has a dim outside [1, 2**32)",
                    "split the array into pieces of fewer than 2**32 rows and columns", kernel)
    if strides[-1] != 1:
        raise _fail(name, f"its rows are not contiguous (column stride {strides[-1]} elements)",
                    "pass an array whose last dim is contiguous (stride 1), e.g. a C-contiguous copy", kernel)
    for d in range(rank - 1):
        pitch = strides[d] * item
        if pitch % 16 or not 0 < pitch < STRIDE_LIMIT:
            what = "row pitch" if d == rank - 2 else f"dim-{d} stride"
            hint = (f"pad each row to a multiple of {16 // item} {elem} elements (16 bytes)" if d == rank - 2 else
                    f"give dim {d} a stride of a multiple of 16 bytes (pad the dims inside it), e.g. a C-contiguous "
                    f"copy of a padded array")
            raise _fail(name, f"its {what} is {pitch} bytes ({strides[d]} {elem}); TMA needs a positive multiple of "
                              f"16 below 2**40", hint, kernel)
    if address is not None and address % 16:
        raise _fail(name, f"its address {address:#x} is not 16-byte aligned",
                    "allocate the array 16-byte aligned (torch and cupy allocations are; a view that starts "
                    "mid-row may not be)", kernel)


def _driver():
    from cuda.bindings import driver
    return driver


def _encode_raw(address: int, elem: str, sizes, strides, box, swizzle: int, name: str, kernel: str | None):
    """The driver call itself: a checked tiled map of rank len(sizes), zero fill, 256-byte L2 promotion."""
    driver = _driver()
    dtypes = {"bf16": driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
              "f16": driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
              "f32": driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32}
    swizzles = {0: driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
                32: driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_32B,
                64: driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B,
                128: driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B}
    rows, cols = box
    rank = len(sizes)
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t  # the bindings take these wrappers, not ints
    failure = None
    try:
        err, tmap = driver.cuTensorMapEncodeTiled(
            dtypes[elem], rank, address,
            [u64(s) for s in reversed(sizes)],                            # globalDim, innermost first
            [u64(t * ITEMSIZE[elem]) for t in reversed(strides[:-1])],    # globalStrides in bytes, past the innermost
            [u32(cols), u32(rows)] + [u32(1)] * (rank - 2),               # boxDim: one index of each outer dim
            [u32(1)] * rank,                                              # elementStrides
            driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzles[swizzle],
            driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    except RuntimeError as exc:  # no driver library to call
        failure = f"the driver could not be called ({exc})"
    if failure is None and err != driver.CUresult.CUDA_SUCCESS:
        failure = f"cuTensorMapEncodeTiled refused it with {driver_error_name(err)}"
    if failure is not None:
        raise _fail(name, f"{failure} (address {address:#x}, shape {tuple(sizes)}, strides {tuple(strides)}, "
                          f"box {tuple(box)}, swizzle {swizzle})",
                    "the checks before the driver call passed: report this with the message", kernel)
    return as_tensor_map(tmap)


class _Cache:
    """A bounded LRU of encoded maps keyed by everything an encoding depends on."""

    def __init__(self, entries: int):
        self.entries = entries
        self._maps: OrderedDict[tuple, TensorMap] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key):
        """The map under `key` or None; a hit takes no lock (the warm path), only the GIL's atomic dict ops."""
        hit = self._maps.get(key)
        if hit is not None:
            try:
                self._maps.move_to_end(key)
            except KeyError:  # evicted by another thread just now: still a valid map for this key
                pass
            self.hits += 1
        return hit

    def put(self, key, value: TensorMap) -> None:
        with self._lock:
            self.misses += 1
            self._maps[key] = value
            self._maps.move_to_end(key)
            while len(self._maps) > self.entries:
                self._maps.popitem(last=False)

    def __len__(self) -> int:
        return len(self._maps)

    def keys(self) -> list[tuple]:
        with self._lock:
            return list(self._maps)

    def clear(self) -> None:
        with self._lock:
            self._maps.clear()
            self.hits = self.misses = 0


_cache = _Cache(CACHE_ENTRIES)


def encode(address: int, elem: str, sizes, strides, box, swizzle: int, *, name: str = "tensor",
           kernel: str | None = None) -> TensorMap:
    """The tensor map of an `elem` array of rank 2 to 5 at `address` with `sizes`/`strides` (elements, one per dim,
    the last innermost), copied in boxes of `box` = (rows, cols) of the last two dims and one index of each outer
    dim, with a `swizzle`-byte swizzle; cached (see `cache_info`).

    RUNTIME_TMA_INVALID, naming `name`, when a rule is broken or the driver refuses.
    """
    key = (address, *sizes, *strides, elem, box[0], box[1], swizzle)  # TmapSlot.fill_if_plain builds the same
    hit = _cache.get(key)
    if hit is not None:
        return hit
    check(name, elem, tuple(sizes), tuple(strides), tuple(box), swizzle, address, kernel)
    if _host_encoder is not None:  # tessera.compiler.testing.emulate_on_host: the g++ emulator's format
        value = TensorMap(_host_encoder(address, elem, tuple(sizes), tuple(strides), tuple(box), swizzle))
    else:
        value = _encode_raw(address, elem, tuple(sizes), tuple(strides), tuple(box), swizzle, name, kernel)
    _cache.put(key, value)
    return value


_host_encoder = None


def use_host_encoder(encoder) -> None:
    """Encode maps with `encoder` (the host emulator's) instead of the driver, or the driver again with None.

    The cache is emptied both ways: a host map must never reach the driver, nor a driver map the emulator.
    """
    global _host_encoder
    _host_encoder = encoder
    _cache.clear()


def cache_info() -> dict:
    """{'hits', 'misses' (= driver encodes), 'entries', 'limit'} of the process-wide map cache."""
    return {"hits": _cache.hits, "misses": _cache.misses, "entries": len(_cache), "limit": _cache.entries}


def clear_cache() -> None:
    """Forget every encoded map (tests; or after freeing arrays whose addresses may come back)."""
    _cache.clear()


@dataclass(frozen=True)
class TmapSlot:
    """Where, in a C parameter list, a tensor map goes and where the values it describes are.

    index: the map's position; ptr, sizes, strides: positions of the array's pointer and its
    sizes and strides (one per dim, outermost first); name: the argument, for messages.
    """

    index: int
    name: str
    ptr: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    elem: str
    box: tuple[int, int]
    swizzle: int
    _suffix: tuple = field(init=False, repr=False, compare=False)  # the constant tail of its cache keys
    _key: itemgetter = field(init=False, repr=False, compare=False)  # values -> (ptr, sizes..., strides...)

    def __post_init__(self):
        object.__setattr__(self, "_suffix", (self.elem, self.box[0], self.box[1], self.swizzle))
        object.__setattr__(self, "_key", itemgetter(self.ptr, *self.sizes, *self.strides))

    def fill_if_plain(self, values: list, kernel: str | None = None) -> bool:
        """`fill` when the pointer, sizes and strides are plain ints (else the binder converts them first)."""
        found = self._key(values)
        for v in found:
            if v.__class__ is not int:
                return False
        hit = _cache.get(found + self._suffix)
        if hit is None:
            self.fill(values, kernel)
        else:  # the warm path: one dict lookup
            values[self.index] = hit
        return True

    def fill(self, values: list, kernel: str | None = None) -> None:
        """values[index] = the map of the array the list's pointer, sizes and strides describe."""
        values[self.index] = encode(values[self.ptr], self.elem, tuple(values[i] for i in self.sizes),
                                    tuple(values[i] for i in self.strides), self.box, self.swizzle, name=self.name,
                                    kernel=kernel)

    def check_layout(self, values: list, kernel: str | None = None) -> None:
        """Every rule but the address's (not known yet for an array the runtime copies in)."""
        check(self.name, self.elem, tuple(values[i] for i in self.sizes), tuple(values[i] for i in self.strides),
              self.box, self.swizzle, None, kernel)


def slots_of(params) -> tuple[TmapSlot, ...]:
    """The TmapSlot of each 'tmap' parameter of a signature (a sequence of runtime Params, already checked)."""
    index = {p.name: i for i, p in enumerate(params)}
    out = []
    for i, p in enumerate(params):
        if p.kind == "tmap":
            at = [index[n] for n in p.tensor]  # ptr, size0.., stride0..
            rank = (len(at) - 1) // 2
            out.append(TmapSlot(i, p.tensor[0], at[0], tuple(at[1:1 + rank]), tuple(at[1 + rank:]), p.elem,
                                tuple(p.box), p.swizzle))
    return tuple(out)

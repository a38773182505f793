"""Kernel signatures and argument binding: check every argument before anything runs.

A signature is a tuple of `Param`s, one per kernel parameter, in order. The
binder is built once per loaded kernel, with one small converter per
parameter, so a warm launch does no per-call type dispatch beyond what the
argument itself needs. Binding touches no CUDA API: it turns arguments into
raw values (device pointers and scalars) plus the numpy arrays that must be
copied in and out, or raises RUNTIME_ARG_INVALID naming the argument - so a
bad call never writes an output buffer. The rules themselves (count, element
type, contiguity, writeable outputs, extents, scalar kinds and ranges) are
`tessera.ir.argcheck`'s, which the compiled and reference lanes apply too.

Pointer parameters accept: an int (a raw device pointer, trusted as is); a
torch CUDA tensor or any object with `__cuda_array_interface__` or `__dlpack__`
(cupy, ...), used in place; a cuda.core Buffer; or a numpy array, copied to the
device and back.

A 'tmap' parameter (sm_90a) is a TMA tensor map of an array of rank 2 to 5 whose
pointer, sizes and strides are other parameters of the same signature. Its argument
is None, and the binder encodes the map from those values (for a numpy array,
once the launcher has copied it in and knows its device address), or an
already encoded 128-byte map, passed as is.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tessera.ir import argcheck
from tessera.ir.diagnostics import RUNTIME_ARG_INVALID
from tessera.runtime import tma
from tessera.runtime.errors import RuntimeLaunchError

SCALAR_CTYPES = {"i32": ctypes.c_int32, "u32": ctypes.c_uint32, "i64": ctypes.c_int64, "u64": ctypes.c_uint64,
                 "f32": ctypes.c_float, "f64": ctypes.c_double}
INT_RANGES = {k: argcheck.INT_RANGES[k] for k in ("i32", "u32", "i64", "u64")}
# element type -> numpy dtype name (ml_dtypes supplies 'bfloat16'); pointers to i1 are not passed
ELEM_DTYPES = {e: n for e, n in argcheck.NUMPY_NAMES.items() if e != "i1"}
ITEMSIZE = {e: int(e.lstrip("bfiu")) // 8 for e in ELEM_DTYPES}
INTENTS = ("in", "out", "inout")


@dataclass(frozen=True)
class Param:
    """One kernel parameter. kind is 'ptr', 'tmap' or a scalar type (i32 u32 i64 u64 f32 f64).

    For 'ptr': `elem` is the element type, `extent` the minimum element count as a
    product of ints and names of integer scalar parameters (() = not checked),
    and `intent` says whether a copied-in numpy array is copied back ('in' is not)
    and whether a read-only array is acceptable (only for 'in').
    For 'tmap': `tensor` names the array's pointer, then its size0..size{r-1} and
    stride0..stride{r-1} parameters (rank r of 2 to 5), `box` is (rows, cols) of
    the last two dims and `swizzle` the swizzle in bytes.
    """

    name: str
    kind: str
    elem: str | None = None
    extent: tuple[int | str, ...] = ()
    intent: str = "inout"
    tensor: tuple[str, ...] = ()
    box: tuple[int, ...] = ()
    swizzle: int = 0

    @property
    def ctype(self):
        if self.kind == "tmap":
            return tma.TMAP_CTYPE
        return ctypes.c_uint64 if self.kind == "ptr" else SCALAR_CTYPES[self.kind]


def ptr(name: str, elem: str, extent: int | str | tuple = (), intent: str = "inout") -> Param:
    """A pointer parameter: `ptr('c', 'f32', extent='n', intent='out')`."""
    if not isinstance(extent, tuple):
        extent = (extent,)
    return Param(name, "ptr", elem, extent, intent)


def scalar(name: str, kind: str) -> Param:
    """A by-value parameter: `scalar('n', 'i32')`."""
    return Param(name, kind)


def tmap(name: str, elem: str, tensor: tuple[str, ...], box: tuple[int, int], swizzle: int = 0) -> Param:
    """A TMA tensor map parameter: `tmap('a_tmap', 'bf16', ('a', 'a_size0', 'a_size1', 'a_stride0', 'a_stride1'),
    box=(64, 64), swizzle=128)` describes the 2-D array passed as parameters a, a_size0, ... of the same signature;
    an array of rank r (up to 5) names its r sizes, then its r strides."""
    return Param(name, "tmap", elem, tensor=tuple(tensor), box=tuple(box), swizzle=swizzle)


@dataclass
class Bound:
    values: list             # one int or float per parameter (pointers filled in for host arrays at launch)
    host: list               # (param index, contiguous numpy array, copy back?) to stage through the device
    tmaps: tuple = ()        # TmapSlots to encode once the staged arrays' device pointers are in `values`


class ArgBinder:
    """Checks a signature once, then binds argument tuples to raw values."""

    def __init__(self, params, kernel: str, device_index: int = 0):
        self.params = tuple(params)
        self.kernel = kernel
        self.device_index = device_index
        self._check_signature()
        self._convert = tuple(self._converter(i, p) for i, p in enumerate(self.params))
        self._extents = tuple((i, p) for i, p in enumerate(self.params) if p.kind == "ptr" and p.extent)
        self._index = {p.name: i for i, p in enumerate(self.params)}
        self._names = tuple(p.name for p in self.params)
        self.tmap_slots = tma.slots_of(self.params)

    def fail(self, param: Param | None, message: str, hint: str | None = None) -> RuntimeLaunchError:
        where = f"argument {param.name!r} ({self._describe(param)}) " if param is not None else ""
        return RuntimeLaunchError(RUNTIME_ARG_INVALID, f"{where}{message}", kernel=self.kernel, hint=hint)

    @staticmethod
    def _describe(p: Param) -> str:
        if p.kind == "tmap":
            return f"tensor map of {p.tensor[0] if p.tensor else '?'}"
        return f"{p.elem}* {p.intent}" if p.kind == "ptr" else p.kind

    def _check_signature(self) -> None:
        names = set()
        for p in self.params:
            if not isinstance(p, Param) or p.name in names:
                raise self.fail(None, f"signature entries must be Params with unique names, got {p!r}")
            names.add(p.name)
            if p.kind == "ptr":
                if p.elem not in ELEM_DTYPES or p.intent not in INTENTS:
                    raise self.fail(p, f"elem must be one of {sorted(ELEM_DTYPES)} and intent one of {INTENTS}")
            elif p.kind == "tmap":
                self._check_tmap(p)
            elif p.kind not in SCALAR_CTYPES:
                raise self.fail(p, f"kind must be 'ptr', 'tmap' or one of {sorted(SCALAR_CTYPES)}")
        ints = {p.name for p in self.params if p.kind in INT_RANGES}
        for p in self.params:
            for e in p.extent:
                if not (isinstance(e, int) and e >= 0) and e not in ints:
                    raise self.fail(p, f"extent term {e!r} is neither a count nor an integer scalar parameter")

    def _check_tmap(self, p: Param) -> None:
        """A tensor map names an earlier-or-later ptr of its elem and 2r integer scalars (rank r of 2 to 5); its box
        is legal."""
        kinds = {q.name: q for q in self.params}
        named = [kinds.get(n) for n in p.tensor]
        if (len(p.tensor) not in range(5, 2 * tma.MAX_RANK + 2, 2) or None in named or named[0].kind != "ptr"
                or named[0].elem != p.elem or not all(q.kind in INT_RANGES for q in named[1:])):
            raise self.fail(p, f"tensor must name a {p.elem}* parameter and its size0..size{{r-1}} then "
                               f"stride0..stride{{r-1}} integer parameters (rank r of 2 to {tma.MAX_RANK}), "
                               f"got {p.tensor!r}")
        tma.check_box(p.tensor[0], p.elem, p.box, p.swizzle, self.kernel)

    def _converter(self, index: int, p: Param):
        if p.kind == "tmap":
            def conv_tmap(v):
                if v is None:
                    return None, None  # encoded by bind from the array's parameters
                encoded = tma.as_tensor_map(v)
                if encoded is None:
                    raise self.fail(p, f"must be None (encoded from {p.tensor[0]!r}) or an encoded "
                                       f"{tma.TMAP_BYTES}-byte tensor map, got {type(v).__name__}")
                return encoded, None
            return conv_tmap
        if p.kind in SCALAR_CTYPES:
            kind = p.kind

            def conv_scalar(v):
                try:
                    return argcheck.scalar_value(kind, v), None
                except argcheck.ArgProblem as err:
                    raise self.fail(p, err.message) from None
            return conv_scalar

        def conv_pointer(v):
            try:
                return self._pointer(p, v)
            except argcheck.ArgProblem as err:
                raise self.fail(p, err.message, err.hint) from None
        return conv_pointer

    def _pointer(self, p: Param, v):
        """(device pointer or None for a host array, element count or None) after dtype/layout checks."""
        if type(v) is int:
            if not 0 <= v < 2**64:
                raise self.fail(p, f"pointer value {v} is not a 64-bit address")
            return v, None
        if isinstance(v, np.ndarray):
            return self._host_array(p, v)
        view = _device_view(v)
        if view is None:
            raise self.fail(p, f"{type(v).__name__} is not a device array, numpy array, Buffer or int pointer")
        address, nbytes, dtype, contiguous, readonly, device = view
        if dtype is not None:
            argcheck.check_dtype(p.elem, argcheck.ELEM_OF_NUMPY.get(dtype, dtype))
        argcheck.check_layout(contiguous)
        argcheck.check_writeable(readonly and p.intent != "in")
        if device is not None and device != self.device_index:
            raise self.fail(p, f"lives on device {device}, the kernel on device {self.device_index}")
        if address % ITEMSIZE[p.elem]:
            raise self.fail(p, f"address {address:#x} is not aligned to its element size")
        return address, nbytes // ITEMSIZE[p.elem]

    def _host_array(self, p: Param, a: np.ndarray):
        argcheck.check_dtype(p.elem, argcheck.ELEM_OF_NUMPY.get(a.dtype.name, a.dtype.name), host=True)
        if p.intent != "in":  # copied back in place; an input may be any layout (it is copied to the device)
            argcheck.check_writeable(not a.flags.writeable)
            argcheck.check_layout(a.flags.c_contiguous, a.shape)
        return None, a.size

    def bind(self, args) -> Bound:
        """Raw values for `args` (a tuple, one per parameter) or RUNTIME_ARG_INVALID."""
        try:
            argcheck.check_count(self._names, args)
        except argcheck.ArgProblem as err:
            raise self.fail(None, err.message) from None
        values, counts = [], []
        for conv, a in zip(self._convert, args):
            value, count = conv(a)
            values.append(value)
            counts.append(count)
        for i, p in self._extents:
            if counts[i] is None:
                continue  # raw pointer: nothing to check against
            need = 1
            for term in p.extent:
                need *= term if isinstance(term, int) else values[self._index[term]]
            try:
                argcheck.check_extent(counts[i], need, p.extent)
            except argcheck.ArgProblem as err:
                raise self.fail(p, err.message) from None
        host = [(i, a if a.flags.c_contiguous else np.ascontiguousarray(a), self.params[i].intent != "in")
                for i, a in enumerate(args) if isinstance(a, np.ndarray)]
        later = []
        for slot in self.tmap_slots:
            if values[slot.index] is not None:
                continue
            if values[slot.ptr] is None:  # a numpy array: its device address comes with staging
                slot.check_layout(values, self.kernel)
                later.append(slot)
            else:
                slot.fill(values, self.kernel)
        return Bound(values, host, tuple(later))


def cai_dtype(typestr: str, descr=None) -> np.dtype:
    """The dtype a `__cuda_array_interface__` typestr (and optional descr) describes.

    The interface has no type code for bfloat16, so its producers (ml_dtypes arrays behind numba or JAX) publish
    a 2-byte void, `<V2`: that is bfloat16, the one 2-byte element type without a code of its own (f16 is `<f2`),
    unless `descr` names another type.
    """
    dtype = np.dtype(typestr)
    if dtype.kind == "V" and dtype.itemsize == 2:
        names = {str(d[0]).lower() for d in descr or () if isinstance(d, (tuple, list)) and d} - {""}
        if not names or names <= {"bfloat16", "bf16"}:
            return np.dtype(ml_dtypes.bfloat16)
    return dtype


def _c_strides(shape, itemsize) -> tuple[int, ...]:
    strides, step = [], itemsize
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def _device_view(v):
    """(address, bytes, dtype name, contiguous, readonly, device) of a device array, or None."""
    if hasattr(v, "data_ptr") and hasattr(v, "is_cuda"):  # torch.Tensor: its own accessors beat building a CAI dict
        if not v.is_cuda:
            return None
        return (v.data_ptr(), v.numel() * v.element_size(), str(v.dtype).removeprefix("torch."),
                v.is_contiguous(), False, v.device.index)
    cai = None
    if hasattr(v, "__cuda_array_interface__"):
        try:
            cai = v.__cuda_array_interface__
        except (TypeError, AttributeError, RuntimeError):  # torch bf16 has no CAI typestr: use DLPack below
            cai = None
    if cai is not None:
        dtype = np.dtype(cai["typestr"])
        shape = tuple(cai["shape"])
        strides = cai.get("strides")
        count = math.prod(shape)
        contiguous = strides is None or count <= 1 or tuple(strides) == _c_strides(shape, dtype.itemsize)
        address, readonly = cai["data"]
        return (int(address), count * dtype.itemsize, cai_dtype(cai["typestr"], cai.get("descr")).name, contiguous,
                bool(readonly), None)
    if hasattr(v, "__dlpack__"):
        from cuda.core.utils import StridedMemoryView
        try:
            view = StridedMemoryView(v, stream_ptr=-1)
            dtype = np.dtype(view.dtype)
        except Exception:  # not a device array, or a dtype DLPack cannot name: the caller reports the type
            return None
        if not view.is_device_accessible:
            return None
        shape = tuple(view.shape)
        count = math.prod(shape)
        strides = view.strides  # in elements; None when C-contiguous
        contiguous = strides is None or count <= 1 or tuple(strides) == _c_strides(shape, 1)
        return (int(view.ptr), count * dtype.itemsize, dtype.name, contiguous, bool(view.readonly),
                view.device_id)
    handle, size = getattr(v, "handle", None), getattr(v, "size", None)
    if handle is not None and isinstance(size, int) and type(v).__name__ == "Buffer":
        return int(handle), size, None, True, False, None
    return None

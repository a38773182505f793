"""What an array argument is, read in place: numpy (host), torch, or `__cuda_array_interface__` (cupy, numba).

The launch path needs, per array, a device address (or a host array the
runtime copies in and out), its shape, its strides in elements, its element
type and the device it lives on. `view(x)` reads them once, through the
cheapest accessor each framework offers, into an `ArrayView`; nothing is
copied and no framework is imported (torch and cupy are recognised by their
methods, so a machine without them works). The reader is chosen once per
Python type, which keeps a warm launch to a dictionary lookup per array.

Element types use Tessera's names (bf16, f16, f32, f64, i32, ...). A dtype
with no such name (complex, bool, a 4-byte void) reads as None: callers
report it, never guess. A `__cuda_array_interface__` `<V2` is bf16 (the
interface has no code for it: `tessera.runtime.args.cai_dtype`).
"""

from __future__ import annotations

import sys
from functools import partial
from typing import NamedTuple

import ml_dtypes
import numpy as np

from tessera.runtime.args import cai_dtype

_NUMPY_NAMES = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
                np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(np.int64): "i64", np.dtype(np.int32): "i32",
                np.dtype(np.int16): "i16", np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8"}
NUMPY_DTYPES = {name: dt for dt, name in _NUMPY_NAMES.items()}
_TORCH_SPELLING = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64", "int64": "i64",
                   "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8"}
_TORCH_DTYPE_ATTR = {v: k for k, v in _TORCH_SPELLING.items()}
ITEMSIZE = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "bf16": 2, "f16": 2, "i16": 2, "i8": 1, "u8": 1}


class ArrayView(NamedTuple):
    """One array argument as the launcher sees it.

    source: 'numpy', 'torch' or 'cai'. ptr: the device address, or None for a
    host array (numpy, or a CPU torch tensor). strides are in elements (None
    when a stride is not a whole number of elements). device: the CUDA
    ordinal, or None when the array is on the host or its interface does not
    say (plain __cuda_array_interface__ objects: assumed to be on the current device).
    """

    source: str
    ptr: int | None
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    dtype: str | None
    device: int | None
    contiguous: bool
    readonly: bool

    @property
    def on_device(self) -> bool:
        return self.ptr is not None

    @property
    def nbytes(self) -> int:
        n = ITEMSIZE.get(self.dtype or "", 1)
        for d in self.shape:
            n *= d
        return n


def dtype_name(dt) -> str | None:
    """Tessera's name for a dtype given as a name ('bf16', 'bfloat16', 'float32'), numpy dtype or torch dtype."""
    if isinstance(dt, str):
        return dt if dt in ITEMSIZE else _TORCH_SPELLING.get(dt)
    if type(dt).__module__ == "torch":
        return _TORCH_SPELLING.get(str(dt).removeprefix("torch."))
    try:
        return _NUMPY_NAMES.get(np.dtype(dt))
    except TypeError:
        return None


_strides: dict[tuple, tuple] = {}


def c_strides(shape: tuple) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of `shape` (memoised: a warm launch sees few shapes)."""
    hit = _strides.get(shape)
    if hit is None:
        out, step = [], 1
        for d in reversed(shape):
            out.append(step)
            step *= d
        hit = tuple(reversed(out))
        if len(_strides) < 4096:
            _strides[tuple(shape)] = hit
    return hit


def _numpy(x: np.ndarray) -> ArrayView:
    item = x.itemsize
    strides = tuple(s // item for s in x.strides) if all(s % item == 0 for s in x.strides) else None
    return ArrayView("numpy", None, x.shape, strides, _NUMPY_NAMES.get(x.dtype), None, x.flags.c_contiguous,
                     not x.flags.writeable)


_torch_names: dict = {}


def _torch(x) -> ArrayView:
    dt = x.dtype
    name = _torch_names.get(dt)
    if name is None:
        name = _torch_names.setdefault(dt, _TORCH_SPELLING.get(str(dt).removeprefix("torch."), ""))
    if x.is_cuda:
        return ArrayView("torch", x.data_ptr(), tuple(x.shape), x.stride(), name or None, x.get_device(),
                         x.is_contiguous(), False)
    return ArrayView("torch", None, tuple(x.shape), x.stride(), name or None, None, x.is_contiguous(), False)


_cai_names: dict[str, tuple] = {}


def _cai(x) -> ArrayView | None:
    try:
        cai = x.__cuda_array_interface__
    except (AttributeError, TypeError, RuntimeError):
        return None
    typestr = cai["typestr"]
    known = _cai_names.get(typestr) if "descr" not in cai else None
    if known is None:
        dt = cai_dtype(typestr, cai.get("descr"))
        known = (_NUMPY_NAMES.get(dt), dt.itemsize)
        if "descr" not in cai:
            _cai_names[typestr] = known
    name, item = known
    shape = tuple(cai["shape"])
    raw = cai.get("strides")
    if raw is None:
        strides, contiguous = c_strides(shape), True
    else:
        strides = tuple(s // item for s in raw) if all(s % item == 0 for s in raw) else None
        size = 1
        for d in shape:
            size *= d
        contiguous = size <= 1 or strides == c_strides(shape)
    address, readonly = cai["data"]
    dev = getattr(x, "device", None)
    ordinal = getattr(dev, "id", None)  # cupy arrays name their device; the interface itself does not
    return ArrayView("cai", int(address), shape, strides, name, ordinal if type(ordinal) is int else None, contiguous,
                     bool(readonly))


_readers: dict[type, object] = {np.ndarray: _numpy}


def _reader_for(t: type):
    if issubclass(t, np.ndarray):
        return _numpy
    if hasattr(t, "data_ptr") and hasattr(t, "is_cuda") and hasattr(t, "get_device"):
        return _torch
    if hasattr(t, "__cuda_array_interface__"):
        return _cai
    return None


def view(x) -> ArrayView | None:
    """The ArrayView of `x`, or None when `x` is not an array Tessera can launch on."""
    t = type(x)
    reader = _readers.get(t)
    if reader is None:
        if t not in _readers:
            _readers[t] = _reader_for(t)
        reader = _readers[t]
        if reader is None:  # an interface set on the instance rather than its class
            return _cai(x) if hasattr(x, "__cuda_array_interface__") else None
    return reader(x)


# --- the warm path: one hashable key and the address, from the fewest reads -------------------------

def probe(x) -> tuple | None:
    """(key, address) of a device array, or None (numpy and unknown objects: take `view` and the full checks).

    `key` is hashable and equal for two arrays of one type exactly when all
    that `view` reports besides the address is equal (dtype, shape, strides,
    read-only, device), so a caller that checked one array may keep its
    verdict under `key` and, for the next array with an equal key, check only
    the address (alignment, overlap). Each framework's accessors are read
    once (a cupy `__cuda_array_interface__` builds a dict per read). A key
    may be unhashable (a list shape): the caller's lookup then raises
    TypeError and it takes the full path.
    """
    t = type(x)
    p = PROBES.get(t)
    if p is None:
        p = PROBES.setdefault(t, _probe_for(t))
    return p(x)


def _torch_probe(x):
    return (x.dtype, x.shape, x.stride(), x.is_cuda, x.get_device()), x.data_ptr()


def _cai_probe(x):
    try:
        cai = x.__cuda_array_interface__
        address, readonly = cai["data"]
        dev = getattr(x, "device", None)  # cupy names the device; the interface itself does not
        return (cai["typestr"], cai["shape"], cai.get("strides"), readonly,
                None if dev is None else getattr(dev, "id", None)), address
    except (AttributeError, TypeError, RuntimeError, KeyError, ValueError):  # not an interface: the full path says why
        return None


def _no_probe(x):
    return None


PROBES: dict[type, object] = {}  # type -> its probe; warm loops read it directly to save a call


def _probe_for(t: type):
    reader = _reader_for(t)
    if reader is _torch:
        return _torch_probe
    if reader is _numpy:
        return _no_probe  # a host array is copied in and out: no warm path to win
    return _cai_probe  # the interface may be set on instances (reader None) rather than the class


def empty_like(template, view_: ArrayView, shape: tuple[int, ...], dtype: str):
    """A new uninitialised array of `shape` and `dtype` from the template's framework and device, or None.

    numpy -> numpy; torch -> torch on the template's device; cupy -> cupy (no
    bf16 there). Other __cuda_array_interface__ producers cannot be asked for
    memory: None tells the caller to ask for `out=`.
    """
    if view_.source == "numpy":
        return np.empty(shape, NUMPY_DTYPES[dtype])
    torch = sys.modules.get("torch")
    if view_.source == "torch" and torch is not None:
        return torch.empty(shape, dtype=getattr(torch, _TORCH_DTYPE_ATTR[dtype]), device=template.device)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(template, cupy.ndarray) and dtype != "bf16":
        with template.device:
            return cupy.empty(shape, NUMPY_DTYPES[dtype])
    return None


def current_stream(template, view_: ArrayView):
    """The current stream of the template's framework on its device (a handle int; 0 is the legacy default
    stream), or None when the framework has no notion of one (a bare __cuda_array_interface__)."""
    reader = stream_reader(template, view_)
    return None if reader is None else reader()


def stream_reader(template, view_: ArrayView):
    """A function of no arguments returning `current_stream(template, view_)`, or None when that is None; the
    warm path of an op keeps it, so a repeated call asks the framework only for the stream itself."""
    if view_.source == "torch":
        torch = sys.modules.get("torch")
        raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)  # what Triton reads too
        if raw is not None:
            return partial(raw, view_.device or 0)
        cuda = getattr(torch, "cuda", None)
        built = getattr(getattr(getattr(torch, "backends", None), "cuda", None), "is_built", None)
        if cuda is None or (built is not None and not built()):  # a CPU build of torch has no CUDA stream
            return None
        return lambda: cuda.current_stream(view_.device).cuda_stream
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(template, cupy.ndarray):
        return lambda: cupy.cuda.get_current_stream().ptr
    return None


def copy_into(dst, src) -> None:
    """dst[...] = src for two arrays of one framework (gemm's `c` into a separate `out`)."""
    if isinstance(dst, np.ndarray):
        np.copyto(dst, src)
    elif hasattr(dst, "copy_"):
        dst.copy_(src)
    else:
        dst[...] = src


def overlaps(a: ArrayView, b: ArrayView) -> bool:
    """Whether two device arrays' byte ranges intersect (host arrays are compared with np.shares_memory)."""
    if a.ptr is None or b.ptr is None:
        return False
    return a.ptr < b.ptr + b.nbytes and b.ptr < a.ptr + a.nbytes and a.nbytes > 0 and b.nbytes > 0

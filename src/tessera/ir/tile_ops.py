"""Logical Tile IR ops: whole-tile values, no threads, no lanes.

Each op states its shape and dtype rule in `verify_`, raising a coded
`TesseraError` that names the operand and both types. Every op also has an
implementation in `tessera.reference` (its reference semantics).

The ops live by responsibility in `tile_memory_ops` (grid ids, load, store),
`tile_compute_ops` (mma, elementwise, cmp, select), `tile_shape_ops` (reduce,
broadcast, convert, transpose, reshape) and `tile_fill_ops` (constant, splat, iota),
with the rules they share with the fragment ops in `tile_checks`. This module
lists them once, as `LOGICAL_OPS`, and is the one name importers use.
"""

from __future__ import annotations

from tessera.ir.tile_checks import (
    MMA_INPUTS,
    check_memref_access,
    check_mma_dtypes,
    check_mma_shapes,
    check_offsets,
    expect_tile,
    fail,
)
from tessera.ir.tile_compute_ops import (
    BINARY_OPS,
    CMP_PREDICATES,
    UNARY_OPS,
    AbsOp,
    AddOp,
    BinaryOp,
    CmpOp,
    DivOp,
    ElementwiseOp,
    ErfOp,
    Exp2Op,
    ExpOp,
    FloatUnaryOp,
    LogOp,
    MaxOp,
    MinOp,
    MmaOp,
    MulOp,
    NegOp,
    RsqrtOp,
    SelectOp,
    SqrtOp,
    SubOp,
    TanhOp,
    UnaryOp,
)
from tessera.ir.tile_fill_ops import ConstantOp, IotaOp, SplatOp
from tessera.ir.tile_memory_ops import (ATOMIC_TYPES, AtomicAddOp, LoadOp, MaskedStoreOp, NumProgramsOp, ProgramIdOp,
                                       StoreOp, index)
from tessera.ir.tile_shape_ops import (REDUCE_KINDS, SCAN_KINDS, BroadcastOp, ConvertOp, ReduceOp, ReshapeOp, ScanOp,
                                      TransposeOp)

LOGICAL_OPS = (ProgramIdOp, NumProgramsOp, LoadOp, StoreOp, MaskedStoreOp, AtomicAddOp, MmaOp, *BINARY_OPS, *UNARY_OPS, CmpOp, SelectOp,
               ReduceOp, ScanOp, BroadcastOp, ConvertOp, TransposeOp, ReshapeOp, ConstantOp, SplatOp, IotaOp)

__all__ = [
    "LOGICAL_OPS", "MMA_INPUTS", "BINARY_OPS", "UNARY_OPS", "CMP_PREDICATES", "REDUCE_KINDS", "index",
    "fail", "expect_tile", "check_memref_access", "check_offsets", "check_mma_shapes", "check_mma_dtypes",
    "ProgramIdOp", "NumProgramsOp", "LoadOp", "StoreOp", "MaskedStoreOp", "AtomicAddOp", "ATOMIC_TYPES",
    "MmaOp", "ElementwiseOp", "BinaryOp", "UnaryOp", "FloatUnaryOp",
    "AddOp", "SubOp", "MulOp", "DivOp", "MaxOp", "MinOp",
    "NegOp", "AbsOp", "ExpOp", "Exp2Op", "LogOp", "SqrtOp", "RsqrtOp", "TanhOp", "ErfOp",
    "CmpOp", "SelectOp",
    "ReduceOp", "ScanOp", "SCAN_KINDS", "BroadcastOp", "ConvertOp", "TransposeOp", "ReshapeOp",
    "ConstantOp", "SplatOp", "IotaOp",
]

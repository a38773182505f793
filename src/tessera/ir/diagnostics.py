"""Coded diagnostics: every error Tessera reports has a stable code, a message and a hint.

Codes are part of the public contract (tests and users match on them), so they
live in one registry and are never renamed. `TesseraError` carries the code,
the offending op (when there is one) and the hint; `format_diagnostic` prints
it MLIR-style as `file:line:col: error: CODE: message`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.utils.exceptions import VerifyException


@dataclass(frozen=True)
class Code:
    name: str
    summary: str
    hint: str


_REGISTRY: dict[str, Code] = {}


def _code(name: str, summary: str, hint: str) -> Code:
    code = Code(name, summary, hint)
    _REGISTRY[name] = code
    return code


# --- parsing and generic IR structure ---------------------------------------
IR_PARSE = _code("IR_PARSE", "the input is not valid IR text",
                 "check the text near the reported position against the op's assembly format")
IR_VERIFY = _code("IR_VERIFY", "an op failed a structural check",
                  "read the message: it names the op and the violated rule")
IR_DOMINANCE = _code("IR_DOMINANCE", "a value is used where its definition does not dominate",
                     "define the value before the use, in the same or an enclosing block")
IR_INPUT = _code("IR_INPUT", "the input could not be read",
                 "pass a readable UTF-8 .mlir file or '-' for stdin")
# --- tile types ---------------------------------------------------------------
TILE_TYPE_INVALID = _code("TILE_TYPE_INVALID", "a !tile.tile type is malformed",
                          "write !tile.tile<DIMSxELEM> or !tile.tile<DIMSxELEM, SPACE> with positive static dims "
                          "and SPACE one of reg, smem, global")
TILE_FRAGMENT_BARE = _code("TILE_FRAGMENT_BARE", "a fragment type has no parameters",
                           "write the whole contract: !tile.fragment<m=16, n=8, k=16, elem=bf16, acc=f32, "
                           "role=\"acc\", layout=\"row\", family=\"mma_sync\">")
TILE_FRAGMENT_PARAM_INVALID = _code("TILE_FRAGMENT_PARAM_INVALID", "a fragment type parameter has an illegal value",
                                    "m, n, k are positive; role is a|b|acc; layout is row|col; "
                                    "family is auto|mma_sync|wgmma; elem is bf16|f16|f32; acc is f32|f16")
# --- fragment contract (type equality) --------------------------------------
TILE_FRAGMENT_ROLE_MISMATCH = _code("TILE_FRAGMENT_ROLE_MISMATCH", "a fragment has the wrong role",
                                    "mma takes role a, role b and role acc fragments, in that order; "
                                    "a loop-carried accumulator keeps role acc")
TILE_FRAGMENT_FAMILY_MISMATCH = _code("TILE_FRAGMENT_FAMILY_MISMATCH", "fragments of different families meet",
                                      "the family fixes the register layout: convert explicitly or keep one family "
                                      "('auto' equals only 'auto')")
TILE_FRAGMENT_ACC_MISMATCH = _code("TILE_FRAGMENT_ACC_MISMATCH", "fragments disagree on the accumulator type",
                                   "use one accumulator type (e.g. f32) for every operand and the loop-carried value")
TILE_FRAGMENT_ELEM_MISMATCH = _code("TILE_FRAGMENT_ELEM_MISMATCH", "fragments disagree on the input element type",
                                    "convert the operands to one element type before packing")
TILE_FRAGMENT_SHAPE_MISMATCH = _code("TILE_FRAGMENT_SHAPE_MISMATCH", "fragments disagree on m, n or k",
                                     "all fragments of one mma share (m, n, k)")
TILE_FRAGMENT_LAYOUT_MISMATCH = _code("TILE_FRAGMENT_LAYOUT_MISMATCH", "fragments disagree on layout",
                                      "keep the layout of a loop-carried fragment unchanged")
TILE_FRAGMENT_FOOTPRINT = _code("TILE_FRAGMENT_FOOTPRINT", "a fragment does not fit the tile it is taken from or written to",
                                "warps * fragment shape must fit inside the tile")
# --- tile ops -----------------------------------------------------------------
TILE_MMA_SHAPE_MISMATCH = _code("TILE_MMA_SHAPE_MISMATCH", "mma operand shapes do not agree",
                                "a is MxK, b is KxN and the accumulator is MxN")
TILE_MMA_DTYPE_MISMATCH = _code("TILE_MMA_DTYPE_MISMATCH", "mma operand element types are not a supported combination",
                                "a and b share bf16, f16 or f32; the accumulator is f32 (or f16 for f16 inputs)")
TILE_TYPE_MISMATCH = _code("TILE_TYPE_MISMATCH", "operands of an elementwise op differ in type",
                           "broadcast or convert explicitly so that all operands share shape and element type")
TILE_SHAPE_MISMATCH = _code("TILE_SHAPE_MISMATCH", "tile shapes are incompatible for this op",
                            "read the op's shape rule in the message")
TILE_ELEMENT_TYPE_INVALID = _code("TILE_ELEMENT_TYPE_INVALID", "the op does not accept this element type",
                                  "float ops take bf16/f16/f32/f64 tiles; select takes an i1 condition")
TILE_SPACE_INVALID = _code("TILE_SPACE_INVALID", "a tile is in the wrong memory space for this op",
                           "values live in reg; tile.alloc gives smem buffers; tile.view gives global views")
TILE_MEMREF_MISMATCH = _code("TILE_MEMREF_MISMATCH", "a tile and a memref disagree",
                             "give one index per memref dimension, a tile rank <= memref rank and the same element type")
TILE_ATTR_INVALID = _code("TILE_ATTR_INVALID", "an op attribute has an illegal value",
                          "read the message for the accepted values")
TILE_LOOP_TYPE_MISMATCH = _code("TILE_LOOP_TYPE_MISMATCH", "scf.for iter_arg, block argument, yield and result types differ",
                                "a loop-carried value keeps one type: init, block argument, yield and result")
# --- passes and pipelines ------------------------------------------------------
OPT_PIPELINE_SYNTAX = _code("OPT_PIPELINE_SYNTAX", "the pass pipeline string is malformed",
                            "write builtin.module(pass-a{opt=v},pass-b) or pass-a{opt=v},pass-b")
OPT_PASS_UNKNOWN = _code("OPT_PASS_UNKNOWN", "the pipeline names a pass that does not exist",
                         "run tessera-opt --help for the list of passes")
OPT_OPTION_UNKNOWN = _code("OPT_OPTION_UNKNOWN", "a pass was given an option it does not have",
                           "run tessera-opt --help for each pass's options")
OPT_OPTION_INVALID = _code("OPT_OPTION_INVALID", "a pass option has a value of the wrong type or range",
                           "run tessera-opt --help for each option's type")
OPT_OPTION_MISSING = _code("OPT_OPTION_MISSING", "a required pass option is missing",
                           "required options (arch among them) have no default: give them in the pipeline")


def all_codes() -> dict[str, Code]:
    return dict(_REGISTRY)


class TesseraError(VerifyException):
    """A diagnostic with a code; `op` locates it when it comes from the IR."""

    def __init__(self, code: Code, message: str, op=None, hint: str | None = None):
        self.code = code
        self.message = message
        self.op = op
        self.hint = hint if hint is not None else code.hint
        self.location: str | None = None
        super().__init__(f"{code.name}: {message}")

    def with_location(self, location: str) -> "TesseraError":
        self.location = location
        return self

    def __str__(self) -> str:
        return format_diagnostic(self)


def op_location(op) -> str:
    """`file:line:col` of an op, or of its closest located ancestor."""
    while op is not None:
        loc = getattr(op, "location", None)
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        op = op.parent_op()
    return "<unknown>:0:0"


def format_diagnostic(err: TesseraError) -> str:
    where = err.location or (op_location(err.op) if err.op is not None else "<unknown>:0:0")
    text = f"{where}: error: {err.code.name}: {err.message}"
    if err.hint:
        text += f"\n  hint: {err.hint}"
    return text

"""Module verification: xDSL's op verifiers plus the checks Tessera relies on that xDSL lacks.

xDSL checks neither SSA dominance nor that an `scf.for`'s init values,
block arguments, yielded values and results share types (DESIGN section 8).
Both are checked here. Every failure becomes a coded TesseraError located
at the offending op.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult

from tessera.ir import diagnostics as D
from tessera.ir.types import FragmentType, fragment_mismatch


def _find_tessera_error(err: BaseException) -> D.TesseraError | None:
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, D.TesseraError):
            return err
        err = err.__cause__ or err.__context__
    return None


def wrap_unexpected(err: BaseException, code: D.Code, location: str | None = None, op=None) -> D.TesseraError:
    """Any exception as a coded diagnostic: first line of its message, no traceback."""
    found = _find_tessera_error(err)
    if found is not None:
        if found.op is None and op is not None:
            found.op = op
        return found
    text = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    msg = " ".join(text[:3]) if text else type(err).__name__  # xDSL puts the reason on the second line
    diag = D.TesseraError(code, msg, op=op)
    if location:
        diag.with_location(location)
    return diag


def verify_module(module: ModuleOp) -> None:
    """Verify every op in program order; raise the first failure as a TesseraError."""
    positions: dict[Block, dict[Operation, int]] = {}
    for op in module.walk():
        if isinstance(op, scf.ForOp) and len(op.body.blocks) == 1:
            _check_for_types(op)  # before xDSL's verifier, which reports the same mismatches uncoded
        try:
            op.verify(verify_nested_ops=False)
        except Exception as err:  # noqa: BLE001 - every failure is reported as a diagnostic
            raise wrap_unexpected(err, D.IR_VERIFY, op=op) from None
        _check_dominance(op, positions)


def _position(op: Operation, positions: dict[Block, dict[Operation, int]]) -> int:
    block = op.parent
    table = positions.get(block)
    if table is None:
        table = {o: i for i, o in enumerate(block.ops)}
        positions[block] = table
    return table[op]


def _check_dominance(user: Operation, positions) -> None:
    for i, value in enumerate(user.operands):
        if isinstance(value, OpResult):
            def_block, def_op = value.op.parent, value.op
        elif isinstance(value, BlockArgument):
            def_block, def_op = value.block, None
        else:
            continue
        anc = user
        while anc is not None and anc.parent is not def_block:
            anc = anc.parent_op()
        ok = anc is not None and (def_op is None or (
            def_op is not anc and _position(def_op, positions) < _position(anc, positions)))
        if not ok:
            raise D.TesseraError(D.IR_DOMINANCE, f"{user.name}: operand #{i} is used where its definition does not "
                                                 "dominate (outside its loop or region, or before it is defined)",
                                 op=user)


def _loop_mismatch(op: Operation, what: str, want, got) -> D.TesseraError:
    if isinstance(want, FragmentType) and isinstance(got, FragmentType):
        code, phrase = fragment_mismatch(want, got)
        return D.TesseraError(code, f"scf.for: {what} has {phrase}: {got} vs {want}", op=op)
    return D.TesseraError(D.TILE_LOOP_TYPE_MISMATCH, f"scf.for: {what} has type {got} but {want} is required", op=op)


def _check_for_types(op: scf.ForOp) -> None:
    block = op.body.block
    carried = block.args[1:]
    yield_op = block.last_op
    yielded = list(yield_op.operands) if isinstance(yield_op, scf.YieldOp) else []
    if len(yielded) != len(carried):
        raise D.TesseraError(D.TILE_LOOP_TYPE_MISMATCH,
                             f"scf.for: the body yields {len(yielded)} values for {len(carried)} loop-carried values",
                             op=yield_op or op)
    for i, (init, arg, res, y) in enumerate(zip(op.iter_args, carried, op.results, yielded)):
        want = arg.type
        if init.type != want:
            raise _loop_mismatch(op, f"init value #{i}", want, init.type)
        if y.type != want:
            raise _loop_mismatch(yield_op, f"yielded value #{i}", want, y.type)
        if res.type != want:
            raise _loop_mismatch(op, f"result #{i}", want, res.type)

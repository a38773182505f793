"""Command-line entry points: `tessera-opt` (run any pipeline on any IR file, like mlir-opt) and `tessera`.

`tessera-opt` reads a file (or stdin), parses and verifies it, runs the pass
pipeline (verifying after every pass) and prints the module. Whatever the
input, it prints either IR or coded `file:line:col: error: CODE: message`
diagnostics and exits 0 or 1, never a traceback: coded TesseraErrors pass
through, and `_coded` below is the one place where any other exception is
turned into a diagnostic, with the code of the stage it escaped from.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from tessera.ir import diagnostics as D
from tessera.ir.dialect import make_context
from tessera.ir.parse import parse_module
from tessera.ir.verify import verify_module, wrap_unexpected
from tessera.passes.pipeline import describe_passes, parse_pipeline
from tessera.tools.expected import check_expectations, parse_expectations
from tessera.tools.source import SPLIT_MARKER, Chunk, read_source, split_chunks

_STAGE_CODES = {"input": D.IR_INPUT, "parse": D.IR_PARSE, "verify": D.IR_VERIFY, "pass": D.OPT_PASS_FAILED,
                "passes": D.OPT_PASS_FAILED, "output": D.OPT_OUTPUT}


def _coded(err: BaseException, stage: str, where: str, pass_name: str = "?") -> D.TesseraError:
    """Any exception as a coded diagnostic: TesseraErrors as they are, others by the stage they escaped."""
    if isinstance(err, D.TesseraError):
        return err
    diag = wrap_unexpected(err, _STAGE_CODES[stage], where)
    if diag.code is D.OPT_PASS_FAILED:
        what = f"pass '{pass_name}' failed" if stage == "pass" else "loading the passes failed"
        diag.message = f"{what} with {type(err).__name__}: {diag.message}"
    return diag


class _UsageError(Exception):
    pass


class _ArgParser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print usage and exit(2)
        raise _UsageError(message)


def _arg_parser() -> _ArgParser:
    ap = _ArgParser(prog="tessera-opt", add_help=False, allow_abbrev=False,
                    formatter_class=argparse.RawDescriptionHelpFormatter,
                    description="Parse, verify, transform and print Tessera IR (Tile, Fragment and target levels).")
    ap.add_argument("input", nargs="?", default="-", help="input .mlir file, or '-' for stdin (default)")
    ap.add_argument("--pass-pipeline", "-p", dest="pipelines", action="append", default=[], metavar="PIPELINE",
                    help="passes to run: 'builtin.module(pass-a{opt=v},pass-b)' or 'pass-a{opt=v},pass-b'")
    ap.add_argument("-o", "--output", default="-", metavar="FILE", help="write the IR here (default: stdout)")
    ap.add_argument("--split-input-file", action="store_true",
                    help=f"treat each '{SPLIT_MARKER}'-separated chunk as a separate input")
    ap.add_argument("--verify-diagnostics", action="store_true",
                    help="check the errors against '// expected-error {{TEXT}}' annotations (also @+N, @-N)")
    ap.add_argument("--print-ir-after-all", action="store_true",
                    help="print the IR to stderr after every pass")
    ap.add_argument("-h", "--help", action="store_true", help="show this help, every pass and its options")
    return ap


@dataclass
class _Run:
    filename: str
    args: argparse.Namespace
    stderr: object
    pipeline: PassPipeline | None = None

    def process(self, chunk: Chunk) -> tuple[str | None, list[D.TesseraError]]:
        """Parse, verify, transform and print one chunk: (its IR text, []) or (None, [the diagnostic])."""
        where = f"{self.filename}:{chunk.line_offset + 1}:1"
        stage, current = "parse", [None]
        try:
            module = ModuleOp([]) if chunk.is_blank else parse_module(chunk.text, self.filename, chunk.line_offset)
            stage = "verify"
            verify_module(module)
            if self.pipeline is not None and self.pipeline.passes:
                stage = "pass"
                PassPipeline(self.pipeline.passes, self._after_pass(current)).apply(make_context(), module)
            stage = "output"
            return str(module) + "\n", []
        except Exception as err:  # noqa: BLE001 - every failure becomes a diagnostic, coded by stage
            return None, [_coded(err, stage, where, current[0].name if current[0] is not None else "?")]

    def _after_pass(self, current: list):
        def callback(done: ModulePass | None, module: ModuleOp, upcoming: ModulePass | None) -> None:
            if done is not None:
                try:
                    verify_module(module)
                except D.TesseraError as err:
                    err.message = f"after pass '{done.name}': {err.message}"
                    raise
                if self.args.print_ir_after_all:
                    _write(self.stderr, f"// -----// IR Dump After {done.name} //----- //\n{str(module)}\n\n")
            current[0] = upcoming
        return callback


def _write(stream, text: str) -> None:
    """Write UTF-8 whatever the locale (IR may hold non-ASCII string attributes)."""
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(text.encode("utf-8"))
        buffer.flush()
    else:
        stream.write(text)


def _diagnostic_text(err: D.TesseraError) -> str:
    """The formatted diagnostic, with control characters from hostile input shown as escapes."""
    text = D.format_diagnostic(err)
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text) + "\n"


def _help_text() -> str:
    return _arg_parser().format_help() + "\n" + describe_passes() + "\n"


def _run(argv: list[str], stdin, stdout, stderr, stage: list[str]) -> int:
    try:
        args = _arg_parser().parse_args(argv)
        if len(args.pipelines) > 1:
            raise _UsageError("give --pass-pipeline (or -p) once: several pipelines would silently replace each other")
    except _UsageError as err:
        raise D.TesseraError(D.OPT_COMMAND_LINE, str(err)).with_location("<command-line>:1:1") from None
    stage[0] = "passes"
    if args.help:
        _write(stdout, _help_text())
        return 0
    pipeline = parse_pipeline(args.pipelines[0]) if args.pipelines else None
    stage[0] = "input"
    filename, text = read_source(args.input, stdin)
    run = _Run(filename, args, stderr, pipeline)
    outputs, failed = [], False
    for chunk in split_chunks(text, args.split_input_file):
        out, errors = run.process(chunk)
        if args.verify_diagnostics:
            errors = _check_chunk(chunk, filename, errors)
        failed |= bool(errors)
        stage[0] = "output"
        for err in errors:  # chunk by chunk, so diagnostics follow the IR of the chunks before them
            _write(stderr, _diagnostic_text(err))
        if out is not None:
            if args.output == "-":
                _write(stdout, (f"{SPLIT_MARKER}\n" if outputs else "") + out)
            outputs.append(out)
        stage[0] = "input"
    if args.output != "-" and not failed:
        stage[0] = "output"
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(f"{SPLIT_MARKER}\n".join(outputs))
        except OSError as err:
            raise D.TesseraError(D.OPT_OUTPUT, f"cannot write '{args.output}': {err.strerror or err}").with_location(
                f"{args.output}:1:1") from None
    return 1 if failed else 0


def _check_chunk(chunk: Chunk, filename: str, produced: list[D.TesseraError]) -> list[D.TesseraError]:
    """--verify-diagnostics: the chunk's errors replaced by the mismatches with its annotations."""
    try:
        expected = parse_expectations(chunk.text, filename, chunk.line_offset)
    except D.TesseraError as err:  # a malformed annotation: this chunk cannot be checked
        return [err]
    return check_expectations(expected, produced, filename)


def opt_main(argv: list[str] | None = None, *, stdin=None, stdout=None, stderr=None) -> int:
    """`tessera-opt`: returns the exit status (0 success, 1 any error); streams default to the process's."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    stage = ["input"]
    try:
        return _run(sys.argv[1:] if argv is None else list(argv), stdin, stdout, stderr, stage)
    except Exception as err:  # noqa: BLE001 - every failure becomes a diagnostic, coded by stage
        if isinstance(err, BrokenPipeError) and stdout is sys.stdout:
            sys.stdout = open(os.devnull, "w")  # the reader left (`| head`): keep exit-time flushes quiet
        try:
            _write(stderr, _diagnostic_text(_coded(err, stage[0], "<command-line>:1:1")))
        except Exception:  # noqa: BLE001 - stderr itself is gone: the exit status is all that is left
            pass
        return 1


def main(argv: list[str] | None = None) -> int:
    """`tessera demo [--report]`: compile and run every shipped kernel and check it (see tessera.demo)."""
    args = sys.argv[1:] if argv is None else list(argv)
    text = ("usage: tessera demo [--report]\n\n"
            "  demo   compile the shipped kernels for sm_80 and sm_90, run them (GPU if present,\n"
            "         else the CPU reference interpreter) and check them against float64 references\n"
            "         --report: print each kernel's compile report (registers, shared memory, occupancy,\n"
            "         HGMMA/HMMA/FFMA counts, performance warnings)\n\n"
            "Run `tessera-opt --help` to parse, verify and transform Tessera IR.\n")
    if args[:1] == ["demo"]:
        from tessera.demo import main as demo_main

        return demo_main(args[1:])
    if args and args[0] not in ("-h", "--help"):
        err = D.TesseraError(D.OPT_COMMAND_LINE, f"unknown command '{args[0]}'").with_location("<command-line>:1:1")
        print(D.format_diagnostic(err), file=sys.stderr)
        return 1
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(opt_main())


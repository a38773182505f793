"""`--verify-diagnostics`: match MLIR-style `expected-error` annotations against the diagnostics produced.

A negative fixture states, on the line of the offending op, the error it must
produce:

    %z = tile.fragment_zero : !tile.fragment  // expected-error {{TILE_FRAGMENT_BARE}}
    // expected-error@+1 {{family "wgmma"}}
    %f = tile.fragment_zero : !tile.fragment<...family="wgmma">

TEXT must be a substring of the diagnostic's `CODE: message`, and the
diagnostic must be located on the annotated line (`@+N`/`@-N` count from the
annotation's own line). Every expectation must be met and every diagnostic
expected; each miss is itself a coded diagnostic. xDSL's
`--verify-diagnostics` prints errors without matching annotations
(DESIGN section 8), hence this checker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tessera.ir import diagnostics as D

_ANNOTATION = re.compile(r"//\s*expected-(?P<kind>[\w-]+)(?P<rest>.*)$")
_BODY = re.compile(r"(?:@(?P<sign>[+-])(?P<n>\d+))?\s*\{\{(?P<text>.*?)\}\}\s*$")


@dataclass(frozen=True)
class Expectation:
    line: int  # absolute line the diagnostic must be located on
    text: str  # substring of "CODE: message"
    where: str  # file:line:col of the annotation itself


def parse_expectations(text: str, filename: str, line_offset: int = 0) -> list[Expectation]:
    """The expected-error annotations of one input chunk (line numbers absolute in the file).

    Raises OPT_DIAGNOSTIC_ANNOTATION for an annotation that is malformed,
    of a kind other than error, or that points outside the chunk.
    """
    lines = text.split("\n")
    first, last = line_offset + 1, line_offset + len(lines)
    found = []
    for i, line in enumerate(lines):
        m = _ANNOTATION.search(line)
        if m is None:
            continue
        here = line_offset + i + 1
        where = f"{filename}:{here}:{m.start() + 1}"
        if m["kind"] != "error":
            raise _bad(where, f"expected-{m['kind']} is not supported: tessera-opt reports errors only "
                              "(use expected-error)")
        body = _BODY.match(m["rest"].strip())
        if body is None:
            raise _bad(where, f"cannot read the annotation 'expected-error{m['rest']}'")
        if not body["text"].strip():
            raise _bad(where, "expected-error has an empty {{}}: name at least the diagnostic code")
        target = here + (int(body["n"]) if body["sign"] == "+" else -int(body["n"]) if body["sign"] else 0)
        if not first <= target <= last:
            raise _bad(where, f"expected-error points at line {target}, outside this input (lines {first}-{last})")
        found.append(Expectation(target, body["text"], where))
    return found


def _bad(where: str, message: str) -> D.TesseraError:
    return D.TesseraError(D.OPT_DIAGNOSTIC_ANNOTATION, message).with_location(where)


def diagnostic_location(err: D.TesseraError) -> tuple[str, int, int] | None:
    """(file, line, col) of a diagnostic, or None if it has no usable location."""
    where = err.location or (D.op_location(err.op) if err.op is not None else "")
    parts = where.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return parts[0], int(parts[1]), int(parts[2])


def _matches(exp: Expectation, err: D.TesseraError, filename: str) -> bool:
    loc = diagnostic_location(err)
    return (loc is not None and loc[0] == filename and loc[1] == exp.line
            and exp.text in f"{err.code.name}: {err.message}")


def check_expectations(expected: list[Expectation], produced: list[D.TesseraError],
                       filename: str) -> list[D.TesseraError]:
    """The failures: an OPT_DIAGNOSTIC_UNEXPECTED per unmatched diagnostic, an OPT_DIAGNOSTIC_MISSING
    per unmet expectation. An empty list means the chunk behaved as annotated."""
    unmet = list(expected)
    failures = []
    for err in produced:
        hit = next((e for e in unmet if _matches(e, err, filename)), None)
        if hit is not None:
            unmet.remove(hit)
            continue
        where = err.location or (D.op_location(err.op) if err.op is not None else f"{filename}:0:0")
        failures.append(D.TesseraError(D.OPT_DIAGNOSTIC_UNEXPECTED, f"unexpected error {err.code.name}: {err.message}")
                        .with_location(where))
    for exp in unmet:
        got = "; no error was produced" if not produced else \
            "; produced instead: " + "; ".join(D.format_diagnostic(e).splitlines()[0] for e in produced)
        failures.append(D.TesseraError(D.OPT_DIAGNOSTIC_MISSING,
                                       f"expected error {{{{{exp.text}}}}} on line {exp.line} was not produced{got}")
                        .with_location(exp.where))
    return failures

"""Reading tool input: bytes -> text with a located error for bad UTF-8, and `// -----` splitting.

Split chunks keep their true line numbers (each carries the number of lines
before it), so a diagnostic in the third test case of a file points at the
line an editor shows, as with mlir-opt's `--split-input-file`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tessera.ir import diagnostics as D

SPLIT_MARKER = "// -----"


@dataclass(frozen=True)
class Chunk:
    text: str
    line_offset: int  # lines of the file before this chunk

    @property
    def is_blank(self) -> bool:
        """No tokens at all (only whitespace and comments): an empty module, as mlir-opt treats it."""
        return all(not line.strip() or line.lstrip().startswith("//") for line in self.text.split("\n"))


def read_source(path: str, stdin) -> tuple[str, str]:
    """(filename for diagnostics, text). Raises IR_INPUT if the file is unreadable or not UTF-8."""
    filename = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = stdin.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as err:
        raise D.TesseraError(D.IR_INPUT, f"cannot read '{path}': {err.strerror or err}").with_location(
            f"{filename}:1:1") from None
    if isinstance(data, str):
        return filename, data
    try:
        return filename, data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise D.TesseraError(D.IR_INPUT, f"the input is not valid UTF-8: byte 0x{data[err.start]:02x} at byte "
                                         f"offset {err.start}").with_location(f"{filename}:{line}:{col}") from None


def split_chunks(text: str, split: bool) -> list[Chunk]:
    """The whole text as one chunk, or the pieces between `// -----` lines."""
    if not split:
        return [Chunk(text, 0)]
    chunks, current, start = [], [], 0
    for i, line in enumerate(text.split("\n")):
        if line.strip() == SPLIT_MARKER:
            chunks.append(Chunk("\n".join(current), start))
            current, start = [], i + 1
        else:
            current.append(line)
    chunks.append(Chunk("\n".join(current), start))
    return chunks

"""Structural checks on a cubin before the driver sees it.

On the H200 (driver 580) `cuModuleLoadData` on a truncated cubin killed the
process with SIGSEGV instead of returning an error, so a damaged image whose
hash was recomputed must be refused here: ELF magic, 64-bit class, the CUDA
machine type, and every header table and section inside the file.
"""

from __future__ import annotations

import struct

EM_CUDA = 190
SHT_NOBITS = 8


def cubin_problem(cubin: bytes) -> str | None:
    """Why `cubin` is not a well-formed 64-bit CUDA ELF image, or None."""
    n = len(cubin)
    if n < 64:
        return f"the image is {n} bytes, shorter than an ELF header"
    if cubin[:4] != b"\x7fELF":
        return "the image does not start with the ELF magic"
    if cubin[4] != 2 or cubin[5] != 1:
        return "the image is not a little-endian 64-bit ELF file"
    (e_machine,) = struct.unpack_from("<H", cubin, 18)
    if e_machine != EM_CUDA:
        return f"the ELF machine type is {e_machine}, not EM_CUDA ({EM_CUDA})"
    e_phoff, e_shoff = struct.unpack_from("<QQ", cubin, 32)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", cubin, 54)
    if e_phnum and e_phoff + e_phnum * e_phentsize > n:
        return "the program header table runs past the end of the image (truncated?)"
    if e_shnum == 0 or e_shentsize < 64 or e_shoff + e_shnum * e_shentsize > n:
        return "the section header table is missing or runs past the end of the image (truncated?)"
    for i in range(e_shnum):
        base = e_shoff + i * e_shentsize
        (sh_type,) = struct.unpack_from("<I", cubin, base + 4)
        sh_offset, sh_size = struct.unpack_from("<QQ", cubin, base + 24)
        if sh_type != SHT_NOBITS and sh_offset + sh_size > n:
            return f"section {i} ({sh_size} bytes at {sh_offset}) runs past the end of the image (truncated?)"
    return None

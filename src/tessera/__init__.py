"""Tessera: a tile-centric GPU kernel compiler.

Kernels are Python tile programs traced into Tile IR (xDSL), lowered through
typed register fragments to NVIDIA target code, and checked on the CPU by a
reference interpreter that runs the same IR.
"""

__version__ = "0.1.0"

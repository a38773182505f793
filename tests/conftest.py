"""Shared test set-up.

The reference interpreter multiplies many small tiles; a multi-threaded BLAS
spends more time waking threads than computing (on a loaded 2-core CI box a
512^3 interpreted GEMM went from 0.04 s to 6 s). Pin BLAS to one thread
before numpy is imported.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

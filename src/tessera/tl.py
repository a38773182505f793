"""`tessera.tl`: the tile-op namespace kernels are written with (an alias of tessera.dsl.tl).

`import tessera.tl as tl` and `from tessera import tl` give the same module object.
"""

import sys

from tessera.dsl import tl as _tl

sys.modules[__name__] = _tl

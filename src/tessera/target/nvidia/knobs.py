"""The values each warp-specialize knob takes: one list, read by the passes that act on the knobs and by
`tessera.compiler.launch_shape`, which validates a launch shape without loading the passes (or xDSL)."""

MAX_STAGES = 8  # ring depth
SCHEDULES = ("cooperative", "pingpong")  # consumer warpgroups issue freely, or take turns
CLUSTERS = (1, 2)  # CTAs per thread-block cluster
STORES = ("tma", "registers")  # how a GEMM-shaped epilogue writes its output
MULTICASTS = ("b", "a")  # the operand a 2-CTA cluster shares: b (pairs of tile rows) or a (pairs of tile columns)
TILES = ("static", "dynamic")  # how a persistent CTA takes its tiles
MAX_SPLITK = 16  # K splits per tile (nv.splitk_fixup's limit)

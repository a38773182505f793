"""The values each warp-specialize knob takes: one list, read by the passes that act on the knobs and by
`tessera.compiler.launch_shape`, which validates a launch shape without loading the passes (or xDSL)."""

MAX_STAGES = 12  # ring depth: a swapped decode tile's 20 KB stages fit 11 deep in sm_90a's 227 KB (the same bound
# as pipeline-smem's, which the same `stages` knob feeds elsewhere)
SCHEDULES = ("cooperative", "pingpong")  # consumer warpgroups issue freely, or take turns
CLUSTERS = (1, 2)  # CTAs per thread-block cluster
STORES = ("tma", "registers")  # how a GEMM-shaped epilogue writes its output
# what a 2-CTA cluster shares: operand b (pairs of tile rows), operand a (pairs of tile columns), or k: one tile,
# whose K steps the pair splits and sums through distributed shared memory (no operand is multicast); each with
# the logical-grid axis whose neighbouring tiles the cluster takes (-1: none)
PAIR_AXIS = {"b": 0, "a": 1, "k": -1}
MULTICASTS = tuple(PAIR_AXIS)
TILES = ("static", "dynamic")  # how a persistent CTA takes its tiles
MAX_SPLITK = 16  # K splits per tile (nv.splitk_fixup's limit)
# how a split-K tile's S partial accumulators meet: "gather" (the last split to arrive sums all S and runs the
# epilogue; no split waits) or "scatter" (every split waits for all S, then sums and stores its own S-th of the
# tile's columns: S SMs share the sum; needs all CTAs resident, so the runtime launches it cooperatively)
FIXUPS = ("gather", "scatter")

"""Fragment lane maps as data (DESIGN.md section 2).

``lane_map(family, role, m, n, k, dtype)`` gives one instruction operand's
(lane, reg) -> (row, col) tables; ``warp_tile_map`` composes atoms into a
warp tile; ``smem_layout`` gives wgmma shared-memory operand layouts and
their descriptors; ``emulate`` is the reference semantics over the maps.
"""

from .lane_map import LaneMap, LaneMapKey, from_b32, to_b32
from .registry import FAMILIES, lane_map, warp_tile_map
from .smem_swizzle import MODES, MatrixDescriptor, SmemLayout, SwizzleMode, smem_layout

__all__ = [
    "FAMILIES", "MODES", "LaneMap", "LaneMapKey", "MatrixDescriptor", "SmemLayout",
    "SwizzleMode", "from_b32", "lane_map", "smem_layout", "to_b32", "warp_tile_map",
]

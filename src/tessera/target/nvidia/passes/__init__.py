"""NVIDIA passes: tile-to-fragments, warp-specialize (sm_90a), lower-tile-to-nv; each module registers its pass."""

// tile.reshape is a register-tile op: a shared tile's layout is its pitch and swizzle, which a reshape would not
// carry, so a reshape of one is refused when it is verified (TILE_SPACE_INVALID naming the operand), before any
// lowering could give it a wrong view.
// RUN: not tessera-opt %s -p 'lower-tile-to-nv{arch=sm_80}' 2>&1 | FileCheck %s
// CHECK: error: TILE_SPACE_INVALID: tile.reshape: source !tile.tile<64xf32, smem> must be in space 'reg', not 'smem'
// CHECK: hint:
func.func @shared_reshape(%s: !tile.tile<64xf32, smem>) {
  %r = tile.reshape %s : !tile.tile<64xf32, smem> -> !tile.tile<1x64xf32, smem>
  func.return
}

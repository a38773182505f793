func.func @f(%t: index, %c: index) {
  %x = nv.tile_fetch %t, %c : i32
  func.return
}

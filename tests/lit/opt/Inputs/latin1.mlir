func.func @f() {
  // café
  func.return
}

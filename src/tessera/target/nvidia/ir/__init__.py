"""The nv dialect: thread/warp-level target ops and their types, each op declaring the arch it needs."""

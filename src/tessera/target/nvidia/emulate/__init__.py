"""Emulators of the NVIDIA target on the CPU: the nv-IR interpreter (lock-step threads, race check)."""

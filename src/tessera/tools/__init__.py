"""Helpers behind the command-line tools: reading and splitting input, checking expected diagnostics."""

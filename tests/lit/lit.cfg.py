"""lit configuration for Tessera's .mlir fixtures: `lit tests/lit` from the repo root, venv active.

RUN lines call `tessera-opt` and `FileCheck` (or `filecheck`); both resolve to
the console scripts installed next to the running Python (the venv), so a
stale tool elsewhere on PATH cannot answer for this checkout. The internal
shell provides `not`, pipes and `2>&1`, so no external shell is needed.
"""

import os
import re
import shlex
import shutil
import sys

import lit.formats

config.name = "tessera"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

bindir = os.path.dirname(sys.executable)
search = os.pathsep.join([bindir, os.environ.get("PATH", "")])


def tool(name):
    path = shutil.which(name, path=search)
    if path is None:
        lit_config.fatal(f"'{name}' not found next to {sys.executable} or on PATH: "
                         "activate the venv and `pip install -e .[test]`")
    return shlex.quote(path)


def substitute(word, replacement):
    # whole words only, so a tool's own path is never substituted again
    config.substitutions.append((rf"(?<![\w./-]){re.escape(word)}(?![\w./-])", replacement))


substitute("tessera-opt", tool("tessera-opt"))
substitute("FileCheck", tool("filecheck"))
substitute("filecheck", tool("filecheck"))
config.environment["PATH"] = search
config.environment["PYTHONIOENCODING"] = "utf-8"

"""Tessera's passes and the registry that names them.

Each module of this package holds one pass (or one group of passes) and
registers it with `register_pass`; `available_passes()` imports every module
here first, so a new pass needs no edit anywhere else. `parse_pipeline` turns
`builtin.module(pass-a{opt=v},pass-b)` into an xDSL PassPipeline;
`register_pipeline` names a pipeline so it can be used like a pass.
"""

from tessera.passes.pipeline import (
    NAMED_PIPELINES,
    PassInfo,
    available_passes,
    describe_passes,
    named_pipelines,
    parse_pipeline,
    pipeline_text,
    register_pass,
    register_pipeline,
)

__all__ = [
    "NAMED_PIPELINES",
    "PassInfo",
    "available_passes",
    "describe_passes",
    "named_pipelines",
    "parse_pipeline",
    "pipeline_text",
    "register_pass",
    "register_pipeline",
]

"""Runtime: find the device, cache compiled artifacts, load them and launch with strict dispatch.

Importing this package touches no driver; `has_gpu()` says whether there is a device.
"""

from tessera.runtime import tma
from tessera.runtime.args import Param, ptr, scalar, tmap
from tessera.runtime.cache import CacheStats, CompileCache, cache_key, default_cache, default_cache_dir
from tessera.runtime.device import (DeviceInfo, can_run, device_count, device_info, has_gpu, mem_info,
                                    why_no_gpu)
from tessera.runtime.errors import RuntimeLaunchError
from tessera.runtime.launch import LaunchResult, LoadedKernel, load

__all__ = [
    "Param", "ptr", "scalar", "tmap", "tma",
    "CacheStats", "CompileCache", "cache_key", "default_cache", "default_cache_dir",
    "DeviceInfo", "can_run", "device_count", "device_info", "has_gpu", "mem_info", "why_no_gpu",
    "RuntimeLaunchError", "LaunchResult", "LoadedKernel", "load",
]

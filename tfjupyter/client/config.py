"""Session configuration: TensorFlow's ConfigProto family as plain Python objects."""
from __future__ import annotations

from typing import Dict, List, Optional

__all__ = ["ConfigProto", "GPUOptions", "GraphOptions", "RunOptions", "RunMetadata"]


class _Options:
    """Keyword-constructed options with TF's defaults; unknown fields are an error."""

    _defaults: Dict[str, object] = {}

    def __init__(self, **kwargs):
        for key, value in self._defaults.items():
            setattr(self, key, value() if callable(value) else value)
        for key, value in kwargs.items():
            if key not in self._defaults:
                raise ValueError(f"{type(self).__name__} has no field named {key!r}; fields: "
                                 f"{', '.join(self._defaults)}")
            setattr(self, key, value)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._defaults
                           if getattr(self, k) != (self._defaults[k]() if callable(self._defaults[k])
                                                   else self._defaults[k]))
        return f"{type(self).__name__}({fields})"


class GPUOptions(_Options):
    class Experimental(_Options):
        class VirtualDevices(_Options):
            _defaults = {"memory_limit_mb": list}

        _defaults = {"virtual_devices": list}

    _defaults = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False,
                 "visible_device_list": "", "experimental": None}


class GraphOptions(_Options):
    _defaults = {"build_cost_model": 0, "infer_shapes": False, "place_pruned_graph": False}


class ConfigProto(_Options):
    _defaults = {"log_device_placement": False, "allow_soft_placement": False,
                 "device_count": dict, "intra_op_parallelism_threads": 0,
                 "inter_op_parallelism_threads": 0, "gpu_options": GPUOptions,
                 "graph_options": GraphOptions, "operation_timeout_in_ms": 0,
                 "device_filters": list, "use_per_session_threads": False,
                 "cluster_token": None}


class RunOptions(_Options):
    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3
    _defaults = {"trace_level": 0, "timeout_in_ms": 0, "output_partition_graphs": False}


class RunMetadata:
    """Filled by Session.run: ``step_stats`` (per-op timings when traced) and the placement."""

    def __init__(self):
        self.step_stats = None
        self.partition_graphs: List = []
        self.placement: Optional[List] = None

"""tfjupyter: the TensorFlow 1.x graph programming model, interactive in Jupyter.

``import tfjupyter as tf`` gives the TF 1.x API and the 0.x names the classic tutorials use.
"""
from __future__ import annotations

from .framework import dtypes as _dtypes_module, errors
from .framework.dtypes import (DType, as_dtype, bool, double, float16, float32, float64, half,
                               int8, int16, int32, int64, string, uint8)
from .framework.device import DeviceSpec
from .framework.ops import (Graph, GraphKeys, Operation, Tensor, add_to_collection,
                            add_to_collections, colocate_with, control_dependencies,
                            convert_to_tensor, device, get_collection, get_collection_ref,
                            get_default_graph, name_scope, register_tensor_conversion_function,
                            reset_default_graph)
from .framework.registry import NotDifferentiable, RegisterGradient, register_gradient
from .framework.tensor_shape import Dimension, TensorShape
from .client.config import ConfigProto, GPUOptions, GraphOptions, RunMetadata, RunOptions
from .client.session import InteractiveSession, Session, get_default_session
from .ops.array_ops import constant, identity, placeholder, placeholder_with_default, stop_gradient
from .ops.control_flow_ops import group, no_op, tuple, with_dependencies
from .ops.math_ops import add, matmul, multiply

__version__ = "0.1.0"

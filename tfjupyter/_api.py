"""The TF 1.x API that ``import tfjupyter as tf`` gives: gathered here, and copied into
``tfjupyter``'s namespace on first use (tfjupyter/__init__.py), so that a process that
only needs a light part of the package (the Jupyter server extension) never imports it.
Each module below declares its public names in ``__all__``; this file only gathers them.
"""
from __future__ import annotations

from .framework import errors  # noqa: F401  (tf.errors)
from .framework.dtypes import (DType, as_dtype, bool, complex64, complex128, double,  # noqa: F401
                               float16, float32, float64, half, int8, int16, int32, int64, string,
                               uint8, uint16, uint32, uint64)
from .framework.device import DeviceSpec  # noqa: F401
from .framework.ops import (Graph, GraphKeys, Operation, Tensor, add_to_collection,  # noqa: F401
                            add_to_collections, colocate_with, control_dependencies,
                            convert_to_tensor, device, get_collection, get_collection_ref,
                            get_default_graph, name_scope, register_tensor_conversion_function,
                            reset_default_graph)
from .framework.registry import NotDifferentiable, RegisterGradient, register_gradient  # noqa: F401
from .framework.tensor_shape import Dimension, TensorShape  # noqa: F401
from .client.config import ConfigProto, GPUOptions, GraphOptions, RunMetadata, RunOptions  # noqa: F401
from .client.session import InteractiveSession, Session, get_default_session  # noqa: F401
from .gradients_impl import gradients  # noqa: F401
from .ops.array_ops import *  # noqa: F401,F403
from .ops.control_flow_ops import (case, cond, group, no_op, tuple, while_loop,  # noqa: F401
                                   with_dependencies)
from .ops.functional_ops import foldl, foldr, map_fn, scan  # noqa: F401
from .ops.math_ops import *  # noqa: F401,F403
from .ops.random_ops import *  # noqa: F401,F403
from .ops.linalg_ops import *  # noqa: F401,F403
from .ops.data_flow_ops import *  # noqa: F401,F403
from .ops.parsing_ops import *  # noqa: F401,F403
from .ops.sparse_ops import *  # noqa: F401,F403
from .framework.sparse_tensor import SparseTensor, SparseTensorValue  # noqa: F401
from .framework.indexed_slices import IndexedSlices, IndexedSlicesValue  # noqa: F401
from .ops.state_ops import *  # noqa: F401,F403  (scatter_add, scatter_sub)
from .ops.io_ops import *  # noqa: F401,F403
from .framework.graph_io import *  # noqa: F401,F403
from .variables import *  # noqa: F401,F403
from .variable_scopes import *  # noqa: F401,F403
from .ops.partitioned_variables import *  # noqa: F401,F403  (tf.fixed_size_partitioner, ...)
from .init_ops import *  # noqa: F401,F403
from .summary.legacy import *  # noqa: F401,F403  (0.x: tf.scalar_summary, ...)
from . import app, contrib, datasets, nn, summary, test, train  # noqa: F401,E402
from . import python_io  # noqa: F401,E402
from . import compat, gfile, io  # noqa: F401,E402
from . import layers, losses  # noqa: F401,E402  (tf.layers, tf.losses)
from . import image  # noqa: F401,E402  (tf.image)
from . import keras  # noqa: F401,E402  (tf.keras)
from . import data  # noqa: F401,E402  (tf.data)
from . import estimator  # noqa: F401,E402  (tf.estimator)
from . import saved_model  # noqa: F401,E402  (tf.saved_model)
from .ops.image_ops import random_crop  # noqa: F401,E402
from . import logging  # noqa: F401,E402  (tf.logging)
from .ops.logging_ops import Assert, Print  # noqa: F401,E402
from .ops.script_ops import numpy_function, py_func  # noqa: F401,E402
from .ops.check_ops import *  # noqa: F401,F403,E402  (tf.assert_*)
# tf.GraphDef, tf.NodeDef, tf.MetaGraphDef: the protobuf classes of TF's graph files, as in
# TensorFlow 1.x (`gd = tf.GraphDef(); gd.ParseFromString(f.read())`).
from tensorboard.compat.proto.graph_pb2 import GraphDef  # noqa: F401,E402
from tensorboard.compat.proto.node_def_pb2 import NodeDef  # noqa: F401,E402
from .framework.meta_graph import MetaGraphDef  # noqa: F401,E402
from .app import flags  # noqa: F401,E402
from .summary import Event, SessionLog, Summary  # noqa: F401,E402
# TF 1.4-1.15's additions: tf.metrics, lookup tables, decode_csv, the 1.13+ namespaces.
from . import dtypes, linalg, math, metrics, random, strings  # noqa: F401,E402,A004
from . import feature_column, sparse  # noqa: F401,E402  (tf.feature_column, tf.sparse)
from .ops.confusion_matrix import confusion_matrix  # noqa: F401,E402
from .ops.csv_ops import decode_csv  # noqa: F401,E402
from .ops.lookup_ops import initialize_all_tables, tables_initializer  # noqa: F401,E402
from .ops.math_compat_ops import div_no_nan, saturate_cast  # noqa: F401,E402
from .ops.string_hash_ops import string_to_hash_bucket_fast  # noqa: F401,E402
from .ops.string_transform_ops import (as_string, reduce_join, regex_replace,  # noqa: F401,E402
                                       string_split, string_strip, string_to_number, substr)
from .ops.string_ops import string_join  # noqa: F401,E402
from .execution_mode import *  # noqa: F401,F403,E402  (executing_eagerly, ...)

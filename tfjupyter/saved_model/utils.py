"""TensorInfo protos of tensors and back (``tf.saved_model.utils``), and where a SavedModel
keeps its variables and assets (TensorFlow's ``saved_model/utils_impl.py``)."""
from __future__ import annotations

import os
from typing import Optional

from tensorboard.compat.proto import meta_graph_pb2, types_pb2

from ..framework.ops import Operation, get_default_graph, prepend_name_scope
from ..framework.sparse_tensor import SparseTensor
from ..summary.graph_def import shape_proto
from . import constants

__all__ = ["build_tensor_info", "build_tensor_info_from_op", "get_tensor_from_tensor_info",
           "get_element_from_tensor_info"]


def build_tensor_info(tensor) -> meta_graph_pb2.TensorInfo:
    """The TensorInfo of a Tensor (its name) or a SparseTensor (its three tensors' names),
    with its dtype and static shape."""
    info = meta_graph_pb2.TensorInfo(dtype=tensor.dtype.as_datatype_enum,
                                     tensor_shape=shape_proto(tensor.get_shape()))
    if isinstance(tensor, SparseTensor):
        info.coo_sparse.values_tensor_name = tensor.values.name
        info.coo_sparse.indices_tensor_name = tensor.indices.name
        info.coo_sparse.dense_shape_tensor_name = tensor.dense_shape.name
    else:
        info.name = tensor.name
    return info


def build_tensor_info_from_op(op: Operation) -> meta_graph_pb2.TensorInfo:
    """A TensorInfo naming an Operation (no dtype, unknown shape): how a SignatureDef holds an
    init or train op."""
    info = meta_graph_pb2.TensorInfo(dtype=types_pb2.DT_INVALID, name=op.name)
    info.tensor_shape.unknown_rank = True
    return info


def get_tensor_from_tensor_info(tensor_info: meta_graph_pb2.TensorInfo, graph=None,
                                import_scope: Optional[str] = None):
    """The Tensor (or SparseTensor) a TensorInfo names in ``graph`` (the default graph), its
    names under ``import_scope/``; KeyError if the graph has no such tensor."""
    graph = graph if graph is not None else get_default_graph()

    def tensor(name):
        return graph.get_tensor_by_name(prepend_name_scope(name, import_scope))

    encoding = tensor_info.WhichOneof("encoding")
    if encoding == "name":
        return tensor(tensor_info.name)
    if encoding == "coo_sparse":
        sparse = tensor_info.coo_sparse
        return SparseTensor(tensor(sparse.indices_tensor_name),
                            tensor(sparse.values_tensor_name),
                            tensor(sparse.dense_shape_tensor_name))
    raise ValueError(f"Invalid TensorInfo.encoding: {encoding}")


def get_element_from_tensor_info(tensor_info: meta_graph_pb2.TensorInfo, graph=None,
                                 import_scope: Optional[str] = None):
    """The graph element (Tensor or Operation) a TensorInfo's name names."""
    graph = graph if graph is not None else get_default_graph()
    return graph.as_graph_element(prepend_name_scope(tensor_info.name, import_scope))


# -- paths in a SavedModel -----------------------------------------------------------------------
def get_variables_dir(export_dir) -> str:
    return os.path.join(os.fsdecode(export_dir), constants.VARIABLES_DIRECTORY)


def get_variables_path(export_dir) -> str:
    """The checkpoint prefix of a SavedModel's variables: ``variables/variables``."""
    return os.path.join(get_variables_dir(export_dir), constants.VARIABLES_FILENAME)


def get_assets_dir(export_dir) -> str:
    return os.path.join(os.fsdecode(export_dir), constants.ASSETS_DIRECTORY)

"""``tf.train.Example`` and its parts: protocol buffers wire-compatible with TensorFlow's
``tensorflow/core/example/{example,feature}.proto``.

``example.proto`` and ``feature.proto`` here are the sources; ``*_pb2.py`` were generated from
them (from the repository root) with grpcio-tools 1.85 (libprotoc 35.1), in a separate
virtual environment so that the main one keeps its protobuf runtime::

    python -m grpc_tools.protoc -I. --python_out=. \\
        tfjupyter/example/feature.proto tfjupyter/example/example.proto
"""
from .example_pb2 import Example, SequenceExample
from .feature_pb2 import (BytesList, Feature, FeatureList, FeatureLists, Features, FloatList,
                          Int64List)

__all__ = ["Example", "SequenceExample", "BytesList", "Feature", "FeatureList", "FeatureLists",
           "Features", "FloatList", "Int64List"]

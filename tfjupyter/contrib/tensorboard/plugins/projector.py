"""``tf.contrib.tensorboard.plugins.projector``: ProjectorConfig (TensorBoard's own protobuf, so
TensorBoard reads what is written) and visualize_embeddings, which writes it as
``projector_config.pbtxt`` in the summary writer's log directory, as TensorFlow 1.x does."""
from __future__ import annotations

import os

from google.protobuf import text_format
from tensorboard.plugins.projector.projector_config_pb2 import (  # noqa: F401
    EmbeddingInfo, ProjectorConfig, SpriteMetadata)

from ....gfile import GFile, MakeDirs

__all__ = ["EmbeddingInfo", "ProjectorConfig", "SpriteMetadata", "visualize_embeddings",
           "PROJECTOR_FILENAME"]

PROJECTOR_FILENAME = "projector_config.pbtxt"


def visualize_embeddings(summary_writer, config: ProjectorConfig) -> None:
    """Writes ``config`` for TensorBoard's projector into ``summary_writer``'s log directory
    (a FileWriter, or the directory itself)."""
    if not isinstance(config, ProjectorConfig):
        raise TypeError(f"visualize_embeddings: config must be a ProjectorConfig, got "
                        f"{type(config).__name__}")
    get_logdir = getattr(summary_writer, "get_logdir", None)
    logdir = get_logdir() if get_logdir is not None else summary_writer
    if not logdir:
        raise ValueError("Summary writer must have a logdir")
    logdir = os.fspath(logdir)
    MakeDirs(logdir)
    with GFile(os.path.join(logdir, PROJECTOR_FILENAME), "w") as f:
        f.write(text_format.MessageToString(config))

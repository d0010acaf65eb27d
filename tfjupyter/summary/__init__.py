"""``tf.summary``: summary ops and the FileWriter that writes them for TensorBoard."""
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryDescription

from .summary_ops import histogram, image, merge, merge_all, scalar
from .writer import FileWriter, FileWriterCache, summary_iterator  # noqa: F401 (tf.train's)

SummaryWriter = FileWriter  # TensorFlow 0.x: tf.train.SummaryWriter

__all__ = ["scalar", "histogram", "image", "merge", "merge_all", "FileWriter", "FileWriterCache",
           "Summary", "SummaryDescription", "Event", "SessionLog", "TaggedRunMetadata"]

"""``tf.train``: optimizers, learning-rate schedules, moving averages, checkpoints, coordination."""
from .coordinator import *  # noqa: F401,F403
from .device_setter import *  # noqa: F401,F403
from .input import *  # noqa: F401,F403
from .learning_rate_decay import *  # noqa: F401,F403
from .moving_averages import *  # noqa: F401,F403
from .optimizers import *  # noqa: F401,F403
from .ftrl import *  # noqa: F401,F403
from .queue_runner import *  # noqa: F401,F403
from .saver import *  # noqa: F401,F403
from .checkpoint_utils import *  # noqa: F401,F403  (init_from_checkpoint)
from .basic_session_run_hooks import *  # noqa: F401,F403
from .session_manager import *  # noqa: F401,F403
from .monitored_session import *  # noqa: F401,F403
from .supervisor import *  # noqa: F401,F403
from .sync_replicas_optimizer import *  # noqa: F401,F403
from .training_util import *  # noqa: F401,F403
from ..summary import SummaryWriter, summary_iterator  # noqa: F401,E402  (0.x: tf.train.SummaryWriter)
from ..distributed.cluster import ClusterSpec  # noqa: F401,E402
from ..framework.graph_io import write_graph  # noqa: F401,E402
from ..example import (BytesList, Example, Feature, FeatureList, FeatureLists, Features,  # noqa: F401,E402
                       FloatList, Int64List, SequenceExample)


def __getattr__(name):  # tf.train.Server imports grpc on first use only
    if name == "Server":
        from ..distributed.server import Server
        return Server
    raise AttributeError(f"module 'tfjupyter.train' has no attribute {name!r}")

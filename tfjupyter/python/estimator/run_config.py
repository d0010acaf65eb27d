"""``tensorflow.python.estimator.run_config``: RunConfig (tfjupyter/estimator/run_config.py)."""
from ...estimator.run_config import *  # noqa: F401,F403

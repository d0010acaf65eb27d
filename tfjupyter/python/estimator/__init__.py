"""``tensorflow.python.estimator``: ``tf.estimator``'s modules (tfjupyter/estimator/)."""

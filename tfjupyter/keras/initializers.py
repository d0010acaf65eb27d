"""``tf.keras.initializers``: TF's initializers (``tfjupyter.init_ops``) under Keras's names,
and ``get`` for the names layers accept ('glorot_uniform', 'zeros', 'he_normal', ...)."""
from __future__ import annotations

from .. import init_ops
from ..init_ops import (Constant, GlorotNormal, GlorotUniform, Identity, Ones,  # noqa: F401
                        Orthogonal, RandomNormal, RandomUniform, TruncatedNormal,
                        VarianceScaling, Zeros, he_normal, he_uniform, lecun_normal,
                        lecun_uniform)

__all__ = ["get", "Constant", "GlorotNormal", "GlorotUniform", "Identity", "Ones", "Orthogonal",
           "RandomNormal", "RandomUniform", "TruncatedNormal", "VarianceScaling", "Zeros",
           "he_normal", "he_uniform", "lecun_normal", "lecun_uniform", "glorot_uniform",
           "glorot_normal", "zeros", "ones", "constant", "orthogonal", "identity"]

glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
zeros, ones, constant, orthogonal, identity = Zeros, Ones, Constant, Orthogonal, Identity

_BY_NAME = {
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal, "zeros": Zeros,
    "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant, "orthogonal": Orthogonal,
    "identity": Identity, "random_normal": RandomNormal, "random_uniform": RandomUniform,
    "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
    "he_normal": he_normal, "he_uniform": he_uniform, "lecun_normal": lecun_normal,
    "lecun_uniform": lecun_uniform,
    # Keras's 'uniform' (Embedding's default) is U(-0.05, 0.05), not tf's U(0, 1).
    "uniform": lambda: RandomUniform(-0.05, 0.05),
}


def get(identifier):
    """An initializer from a Keras name, a class (instantiated) or an initializer (kept)."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]()
        except KeyError:
            raise ValueError(f"Unknown initializer: {identifier!r}. Known: "
                             f"{sorted(_BY_NAME)}") from None
    if isinstance(identifier, type) and issubclass(identifier, init_ops.Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")

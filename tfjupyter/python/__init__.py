"""``tensorflow.python.*``: the internal import paths that TF 1.x programs use for public APIs
(``from tensorflow.python.ops import lookup_ops``). Each module here re-exports, by ``import
*``, the public names of the tfjupyter module that implements that API: the same objects as
``tf.<name>``. Only the paths that programs reach for are here."""

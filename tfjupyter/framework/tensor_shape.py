"""Static shapes with unknown dimensions, as in TensorFlow (dims are int or None)."""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Union

__all__ = ["TensorShape", "Dimension", "as_shape", "unknown_shape"]


class Dimension:
    """A dimension of a TensorShape; ``value`` is an int or None (unknown)."""
    __slots__ = ("value",)

    def __init__(self, value: Optional[int]):
        self.value = None if value is None else int(value)

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __eq__(self, other) -> bool:
        other = other.value if isinstance(other, Dimension) else other
        if self.value is None or other is None:
            return None
        return self.value == other

    def __hash__(self):
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Dimension({self.value})"

    def __str__(self) -> str:
        return "?" if self.value is None else str(self.value)


def _dim_value(d) -> Optional[int]:
    """A dimension as an int or None: as TensorFlow's Dimension, a whole number (2 or 2.0);
    TypeError for a non-number, ValueError for a fractional one."""
    if isinstance(d, Dimension):
        return d.value
    if d is None:
        return None
    if isinstance(d, (str, bytes)):
        raise TypeError(f"Dimension value must be integer or None, got the string {d!r}")
    try:
        value = int(d)
    except (TypeError, ValueError):
        raise TypeError(f"Dimension value must be integer or None, got {d!r} of type "
                        f"{type(d).__name__}") from None
    if value != d:
        raise ValueError(f"Ambiguous dimension: {d!r}")
    return value


class TensorShape:
    """A possibly-partial shape. ``dims`` is None when even the rank is unknown."""
    __slots__ = ("_dims",)

    def __init__(self, dims: Union[None, int, Dimension, Iterable, "TensorShape"]):
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        else:
            if isinstance(dims, (str, bytes)):
                raise TypeError(f"A string has ambiguous TensorShape, please wrap in a list or "
                                f"convert to an int: {dims!r}")
            try:
                items = iter(dims)
            except TypeError:
                # As TensorFlow: a single dimension (an int, a Dimension) is the 1-D shape [n];
                # so ``placeholder(tf.int32, shape=(batch_size))`` (no comma) means [batch_size].
                items = iter([dims])
            self._dims = tuple(_dim_value(d) for d in items)

    @property
    def dims(self) -> Optional[List[Dimension]]:
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    @property
    def ndims(self) -> Optional[int]:
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_list(self) -> List[Optional[int]]:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self):
        return self._dims

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> Optional[int]:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other) -> "TensorShape":
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def with_rank(self, rank: int) -> "TensorShape":
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def concatenate(self, other) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self):
        return hash(self._dims)

    def __bool__(self) -> bool:
        return self._dims is not None

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self._dims)})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"


def as_shape(shape) -> TensorShape:
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(ndims: Optional[int] = None) -> TensorShape:
    return TensorShape(None if ndims is None else [None] * ndims)


def scalar() -> TensorShape:
    return TensorShape(())


def broadcast_shapes(a: TensorShape, b: TensorShape, op_name: str = "") -> TensorShape:
    """Numpy broadcasting over partial shapes; raises ValueError naming the op if impossible."""
    if a._dims is None or b._dims is None:
        return TensorShape(None)
    x, y = list(a._dims), list(b._dims)
    n = max(len(x), len(y))
    x = [1] * (n - len(x)) + x
    y = [1] * (n - len(y)) + y
    out: List[Optional[int]] = []
    for p, q in zip(x, y):
        if p == 1:
            out.append(q)
        elif q == 1:
            out.append(p)
        elif p is None or q is None:
            out.append(p if q is None else q)
        elif p == q:
            out.append(p)
        else:
            where = f" for '{op_name}'" if op_name else ""
            raise ValueError(f"Dimensions must be equal, but are {p} and {q}{where} with input "
                             f"shapes: {list_str(a)}, {list_str(b)}.")
    return TensorShape(out)


def list_str(shape: TensorShape) -> str:
    if shape._dims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape._dims) + "]"

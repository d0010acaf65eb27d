"""The structure of tf.data elements: nested tuples and dicts of components (a list is one
component, a tensor, as in ``tf.data``), each with a dtype and a static shape."""
from __future__ import annotations

from typing import List

from ..framework import dtypes, nest
from ..framework.ops import Tensor, convert_to_tensor
from ..framework.tensor_shape import TensorShape

__all__ = ["Structure", "HasStructure", "normalize", "flatten_up_to", "as_shape",
           "structure_from"]


def normalize(value):
    """``value`` as nested tuples and dicts of tensors (lists and arrays become tensors)."""
    if isinstance(value, tuple):
        items = [normalize(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return type(value)((k, normalize(v)) for k, v in value.items())
    return convert_to_tensor(value)


def flatten_up_to(structure, value, what: str) -> list:
    """The leaves of ``value`` where ``structure`` has leaves (``value`` may nest deeper: a
    padded shape given as a list is one leaf)."""
    if isinstance(structure, dict):
        if not isinstance(value, dict) or sorted(value) != sorted(structure):
            raise ValueError(f"{what} must have the structure of the dataset's elements "
                             f"{structure!r}, got {value!r}")
        return [x for k in sorted(structure) for x in flatten_up_to(structure[k], value[k], what)]
    if isinstance(structure, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(structure):
            raise ValueError(f"{what} must have the structure of the dataset's elements "
                             f"{structure!r}, got {value!r}")
        return [x for s, v in zip(structure, value) for x in flatten_up_to(s, v, what)]
    return [value]


def as_shape(shape) -> TensorShape:
    if shape is None:
        return TensorShape(None)
    if isinstance(shape, TensorShape):
        return shape
    return TensorShape([None if d is None or int(d) < 0 else int(d) for d in shape])


class Structure:
    """The nesting of an element, and its components' dtypes and static shapes (flat)."""

    def __init__(self, template, types: List[dtypes.DType], shapes: List[TensorShape]):
        self.template, self.types, self.shapes = template, list(types), list(shapes)

    @classmethod
    def of(cls, value) -> "Structure":
        flat = nest.flatten(value)
        return cls(value, [t.dtype for t in flat], [t.shape for t in flat])

    def pack(self, flat):
        return nest.pack_sequence_as(self.template, list(flat))

    @property
    def output_types(self):
        return self.pack(self.types)

    @property
    def output_shapes(self):
        return self.pack(self.shapes)

    @property
    def output_classes(self):
        return self.pack([Tensor] * len(self.types))

    def attrs(self) -> dict:
        return {"output_types": list(self.types), "output_shapes": list(self.shapes)}

    def arg_specs(self):
        return [(t, s, f"arg{i}") for i, (t, s) in enumerate(zip(self.types, self.shapes))]


class HasStructure:
    """The element structure of a dataset or an iterator, by TF 1.x's names."""

    _structure: Structure

    @property
    def output_types(self):
        return self._structure.output_types

    @property
    def output_shapes(self):
        return self._structure.output_shapes

    @property
    def output_classes(self):
        return self._structure.output_classes



def structure_from(output_types, output_shapes=None) -> Structure:
    """The structure that ``output_types`` (nested DTypes) and ``output_shapes`` (nested
    shapes, default unknown) describe."""
    types_template = nest.map_structure(dtypes.as_dtype, output_types)
    types = nest.flatten(types_template)
    if output_shapes is None:
        shapes = [TensorShape(None)] * len(types)
    else:
        shapes = [as_shape(s) for s in flatten_up_to(types_template, output_shapes,
                                                     "output_shapes")]
    return Structure(types_template, types, shapes)

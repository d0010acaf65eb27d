"""Nested structures of tensors, as TensorFlow's ``nest``: tuples, lists, namedtuples and dicts
(whose values are visited in sorted key order). The control-flow functions take and return them;
the RNN cells' states are nested the same way.
"""
from __future__ import annotations

from typing import Any, Callable, List


def is_sequence(value) -> bool:
    return isinstance(value, (tuple, list, dict))


def _items(structure) -> List[Any]:
    if isinstance(structure, dict):
        return [structure[k] for k in sorted(structure)]
    return list(structure)


def flatten(structure) -> List[Any]:
    if not is_sequence(structure):
        return [structure]
    return [leaf for item in _items(structure) for leaf in flatten(item)]


def pack_sequence_as(structure, flat_sequence):
    """``flat_sequence`` in the nesting of ``structure`` (namedtuples and dict types kept)."""
    flat_sequence = list(flat_sequence)
    position = [0]

    def pack(template):
        if not is_sequence(template):
            value = flat_sequence[position[0]]
            position[0] += 1
            return value
        if isinstance(template, dict):
            packed = {k: pack(template[k]) for k in sorted(template)}
            return type(template)((k, packed[k]) for k in template)
        items = [pack(item) for item in template]
        if hasattr(template, "_fields"):
            return type(template)(*items)
        return type(template)(items)

    if len(flatten(structure)) != len(flat_sequence):
        raise ValueError(f"Structure had {len(flatten(structure))} elements, but flat_sequence "
                         f"had {len(flat_sequence)} elements.")
    return pack(structure)


def assert_same_structure(a, b, what: str = "") -> None:
    """ValueError (naming both) unless ``a`` and ``b`` nest the same way."""
    def shape_of(s):
        if not is_sequence(s):
            return "."
        keys = sorted(s) if isinstance(s, dict) else None
        return (type(s).__name__ if hasattr(s, "_fields") or keys is not None else "seq",
                keys, [shape_of(x) for x in _items(s)])
    if shape_of(a) != shape_of(b):
        raise ValueError(f"{what}The two structures don't have the same nested structure.\n\n"
                         f"First structure: {a!r}\n\nSecond structure: {b!r}")


def map_structure(fn: Callable, *structures):
    flats = [flatten(s) for s in structures]
    if any(len(f) != len(flats[0]) for f in flats):
        raise ValueError("The structures don't have the same number of elements: "
                         f"{[len(f) for f in flats]}")
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flats)])

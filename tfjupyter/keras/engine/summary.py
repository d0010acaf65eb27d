"""``model.summary()``: TF 1.15 Keras's table of layers, output shapes and parameter counts.

A Sequential model (or a functional one that is a chain) prints three columns in 65
characters; other functional models a fourth, 'Connected to' (the inbound layers as
'dense[0][0]'), in 98.
"""
from __future__ import annotations

from .base_layer import flatten, node_of


def _output_shape_text(layer) -> str:
    try:
        return str(layer.output_shape)
    except AttributeError:
        return "multiple"


def _param_count(layer) -> int:
    return layer.count_params() if layer.built else 0


def _is_chain(model) -> bool:
    if type(model).__name__ == "Sequential":
        return True
    for node in model.nodes:
        if len(flatten(node.inputs)) > 1:
            return False
    return len(model.inputs) == 1 and len(model.outputs) == 1


def print_summary(model, line_length=None, positions=None, print_fn=None) -> None:
    print_fn = print_fn or print
    chain = _is_chain(model)
    if chain:
        line_length = line_length or 65
        positions = positions or [.45, .85, 1.]
        header = ["Layer (type)", "Output Shape", "Param #"]
    else:
        line_length = line_length or 98
        positions = positions or [.33, .55, .67, 1.]
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def print_row(fields):
        line = ""
        for i, field in enumerate(fields):
            if i > 0:
                line = line[:-1] + " "
            line += str(field)
            line = line[:positions[i]]
            line += " " * (positions[i] - len(line))
        print_fn(line)

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_row(header)
    print_fn("=" * line_length)
    layers = model.layers
    for i, layer in enumerate(layers):
        row = [f"{layer.name} ({type(layer).__name__})", _output_shape_text(layer),
               _param_count(layer)]
        if chain:
            print_row(row)
        else:
            inbound = []
            for node in model.nodes:
                if node.layer is layer:
                    for tensor in flatten(node.inputs):
                        source = node_of(tensor)
                        index = source.layer.inbound_nodes.index(source) if source else 0
                        inbound.append(f"{source.layer.name}[{index}][0]")
            print_row(row + [inbound[0] if inbound else ""])
            for extra in inbound[1:]:
                print_row(["", "", "", extra])
        print_fn("=" * line_length if i == len(layers) - 1 else "_" * line_length)
    trainable = sum(w.get_shape().num_elements() for w in model.trainable_weights)
    total = model.count_params()
    print_fn(f"Total params: {total:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {total - trainable:,}")
    print_fn("_" * line_length)

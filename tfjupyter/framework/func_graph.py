"""Function graphs: the bodies of functional control flow (``If``, ``While``), as TensorFlow's
control-flow v2 ``FuncGraph``.

A branch, loop condition or loop body is traced into a ``FuncGraph``: its arguments become
placeholders, and every tensor of an enclosing graph that it uses is *captured*: it becomes an
input of the control-flow op and a placeholder inside. A variable used by reference (the
variable an ``Assign`` or an optimizer's apply writes) is captured as a ``VariableV2`` op of the
same name and ``shared_name`` (a queue, reader or accumulator handle likewise, as its op), so
the function's kernels find the variable itself in the device's ResourceManager, not a copy; the
control-flow op takes the outer variable as a reference input, which colocates it with the
variable.

While a function is traced, ops built on outer tensors (``x.graph.create_op``, ``name_scope``
with ``values``) are built in the function graph (``ops._building_graph``), name and device
scopes continue those around the control-flow call, control dependencies on outer ops become
control inputs of the control-flow op, and variables are created in the outermost graph, as
TF 1.x's ``get_variable`` inside a ``cond`` does.
"""
from __future__ import annotations

import contextlib
from typing import Dict, List, Optional, Sequence

from .ops import Graph, Operation, Tensor

__all__ = ["FuncGraph", "Function", "outermost_graph"]


class FuncGraph(Graph):
    def __init__(self, name: str, outer_graph: Graph):
        self._root_graph = None
        super().__init__()
        self._root_graph = outermost_graph(outer_graph)
        self.func_name = name
        self.outer_graph = outer_graph
        self.inputs: List[Tensor] = []          # arguments, then captures
        self.captures: Dict[Tensor, Tensor] = {}          # outer graph's tensor -> placeholder
        self.variable_captures: Dict[Tensor, Tensor] = {}  # outer VariableV2 output -> clone
        self.outer_control_inputs: List[Operation] = []
        # One name space with the enclosing graphs: inner ops keep readable, unique names.
        self._names_in_use = outer_graph._names_in_use
        self._device_stack = list(outer_graph._device_stack)
        self._colocation_stack = list(outer_graph._colocation_stack)
        self.seed = outer_graph.seed
        self._gradient_override_map = outer_graph._gradient_override_map
        from ..variable_scopes import _scope_store, _variable_store
        root = outermost_graph(outer_graph)
        self._variable_store = _variable_store(root)
        self._variable_scope = _scope_store(root)

    # Op ids continue the outermost graph's: random ops seeded from the graph seed and the
    # op's id (TF 1.x's rule) get different seeds in different functions, as in TF's cond.
    @property
    def _last_id(self) -> int:
        return self._root_graph._last_id if self._root_graph is not None else 0

    @_last_id.setter
    def _last_id(self, value: int) -> None:
        if self._root_graph is not None:
            self._root_graph._last_id = value

    # One name scope with the enclosing graphs: `get_variable`'s reset of the outer graph's
    # scope holds inside, and ops inside continue the scope of the control-flow call.
    @property
    def _name_stack(self) -> str:
        return self._root_graph._name_stack

    @_name_stack.setter
    def _name_stack(self, value: str) -> None:
        if self._root_graph is not None:
            self._root_graph._name_stack = value

    def encloses(self, graph: Graph) -> bool:
        """Whether ``graph`` is one this function is nested in."""
        outer = self.outer_graph
        while outer is not None:
            if outer is graph:
                return True
            outer = getattr(outer, "outer_graph", None)
        return False

    # -- capturing -----------------------------------------------------------------------------
    def capture(self, t: Tensor) -> Tensor:
        """``t`` (of an enclosing graph) as seen inside this function."""
        if t.graph is self:
            return t
        known = self._known_capture(t)
        if known is not None:
            return known
        if not self.encloses(t.graph):
            raise ValueError(f"Tensor {t.name} is from a graph that the function "
                             f"'{self.func_name}' is not nested in; it cannot be captured.")
        outer = t if t.graph is self.outer_graph else self.outer_graph.capture(t)
        known = self._known_capture(outer)
        if known is None:
            known = self._capture_from_parent(outer)
        return known

    def _known_capture(self, t: Tensor) -> Optional[Tensor]:
        known = self.captures.get(t)
        return known if known is not None else self.variable_captures.get(t)

    def _capture_from_parent(self, outer: Tensor) -> Tensor:
        with self._plain_scope():
            if outer.op.op_def.stateful and not outer.op.inputs:
                # A variable, queue, reader or accumulator: the same resource, not a value.
                attrs = dict(outer.op._attrs)
                if outer.op.type == "VariableV2":
                    attrs["shared_name"] = attrs.get("shared_name") or outer.op.name
                attrs.pop("_class", None)
                clone = self._create_op_here(outer.op.type, [], attrs, outer.op.name + "/", ())
                self.variable_captures[outer] = clone.outputs[0]
                return clone.outputs[0]
            inner = self._placeholder(outer.dtype, outer.shape, outer.op.name.split("/")[-1])
        self.captures[outer] = inner
        self.inputs.append(inner)
        return inner

    def _placeholder(self, dtype, shape, name: str) -> Tensor:
        with self._plain_scope():
            return self._create_op_here("Placeholder", [], {"dtype": dtype, "shape": shape},
                                        name, ()).outputs[0]

    def add_argument(self, dtype, shape, name: str) -> Tensor:
        t = self._placeholder(dtype, shape, name)
        self.inputs.append(t)
        return t

    @contextlib.contextmanager
    def _plain_scope(self):
        saved = (self._control_stack, self._device_stack, self._colocation_stack)
        self._control_stack, self._device_stack, self._colocation_stack = [], [], []
        try:
            yield
        finally:
            self._control_stack, self._device_stack, self._colocation_stack = saved

    # -- building --------------------------------------------------------------------------------
    def create_op(self, op_type: str, inputs: Sequence[Tensor], attrs: Optional[Dict] = None,
                  name: Optional[str] = None, control_inputs: Sequence[Operation] = ()
                  ) -> Operation:
        from .ops import _building_graph
        building = _building_graph(self)
        if building is not self:
            return building.create_op(op_type, inputs, attrs, name, control_inputs)
        inputs = [self.capture(t) if isinstance(t, Tensor) and t.graph is not self else t
                  for t in inputs]
        own = [c for c in control_inputs if c.graph is self]
        self._add_outer_controls([c for c in control_inputs if c.graph is not self])
        return self._create_op_here(op_type, inputs, attrs, name, own)

    def _add_outer_controls(self, ops: Sequence[Operation]) -> None:
        for c in ops:
            if not self.encloses(c.graph):
                raise ValueError(f"Operation {c.name} is from a graph that the function "
                                 f"'{self.func_name}' is not nested in.")
            if c not in self.outer_control_inputs:
                self.outer_control_inputs.append(c)

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            with super().control_dependencies(None):
                yield
            return
        own, outer = [], []
        for c in control_inputs:
            c = c._as_graph_element() if hasattr(c, "_as_graph_element") else c
            c = c.op if isinstance(c, Tensor) else c
            (outer if isinstance(c, Operation) and c.graph is not self else own).append(c)
        # An outer op is a dependency of the whole control-flow op: it runs first either way.
        self._add_outer_controls(outer)
        with super().control_dependencies(own):
            yield

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        conv = getattr(obj, "_as_graph_element", None)
        element = conv() if conv is not None else obj
        if isinstance(element, (Tensor, Operation)) and element.graph is not self \
                and self.encloses(element.graph):
            return element
        return super().as_graph_element(obj, allow_tensor, allow_operation)


class Function:
    """A callable view of a function graph: which placeholders it is fed, which tensors it
    returns, which ops it runs for their effects. Several views may share one graph (a branch
    and its gradient)."""

    def __init__(self, name: str, graph: FuncGraph, inputs: Sequence[Tensor],
                 outputs: Sequence[Tensor], targets: Sequence[Operation] = ()):
        self.name = name
        self.graph = graph
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.targets = list(targets)

    def signature(self) -> tuple:
        """What makes two functions the same (one rebuilt from a GraphDef equals its original):
        the name, the tensors fed and returned, the ops run, the graph's ops and their inputs."""
        ops = tuple((op.name, op.type, tuple(t.name for t in op.inputs))
                    for op in self.graph.get_operations())
        return (self.name, tuple(t.name for t in self.inputs), tuple(t.name for t in self.outputs),
                tuple(op.name for op in self.targets), ops)

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, Function)
                                 and self.signature() == other.signature())

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"<Function {self.name}: {len(self.inputs)} inputs, {len(self.outputs)} outputs>"


def outermost_graph(graph: Graph) -> Graph:
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    return graph


@contextlib.contextmanager
def init_scope():
    """TensorFlow's ``init_scope``: inside a function being traced, the outermost graph becomes
    the default (with the function's name scope, no control dependencies), so what is built
    here — variables and their initializers — exists once, outside the control flow."""
    from .ops import get_default_graph
    graph = get_default_graph()
    if getattr(graph, "outer_graph", None) is None:
        yield graph
        return
    from .ops import _default_graph_stack
    root = outermost_graph(graph)
    _default_graph_stack.push(root)   # not root.as_default(), which keeps the function
    try:
        with root.control_dependencies(None):
            yield root
    finally:
        _default_graph_stack.pop(root)

"""TensorFlow's control flow v1 (TF 1.x's default: ``Switch``/``Merge`` conds,
``Enter``/``Merge``/``Switch``/``LoopCond``/``NextIteration``/``Exit`` loops) as our functional
``If``/``While``, when a GraphDef is read (``graph_io._parse``, ``meta_graph``), as
TensorFlow's own ``FunctionalizeControlFlow`` (tf2xla) does.

Loops first, outermost first: a frame (its Enters' ``frame_name``) has loop variables
``Enter(is_constant=false) -> Merge -> Switch(pred=LoopCond)``, whose output 1 goes to the body
and back through ``NextIteration`` to the Merge, output 0 to ``Exit``; ``is_constant`` Enters
are captured values. The ops the LoopCond's input needs become the condition's FunctionDef
(arguments: the Merges and captured values), those the NextIterations need the body's
(arguments: the Switches' outputs 1 and captured values, which it returns unchanged); each Exit
becomes an ``Identity`` of the ``While``'s output under the Exit's name. Inner loops and conds
go into the functions as they are, converted when the functions are read.

A v1 cond is a frame in the graph itself: ``Switch(x, pred)`` sends each tensor a branch reads
to output 1 (true) or 0 (false); the branch's ops run on what arrives, and ``Merge`` joins the
two branches' results. Ops with no data input from a Switch (constants) belong to a branch by
a control input from its pivot (``switch_t``/``switch_f``, ``Identity(Switch(pred, pred):b)``).
Which branch an op is in follows from its inputs, as tf2xla's "cond state": a stack of
(predicate, branch) pairs. A Switch's output ``b`` pushes ``(pred, b)`` on its input's stack,
a Merge of both branches pops it, any other op takes its inputs' deepest stack (the others must
be prefixes of it). The predicate is named through the ``Identity`` ops between it and the
Switch (``cond/pred_id``), so the pivot's Switch and the others agree. The innermost frames
are rewritten first, so an outer branch holds its inner conds as ``If`` ops already:

- the frame's Switches' data inputs, and the outside tensors a branch reads directly, are the
  ``If``'s inputs (arguments of both branches);
- each branch's ops become a FunctionDef (their names kept, so errors name TensorFlow's ops),
  returning its side of each Merge;
- each Merge becomes an ``Identity`` of the ``If``'s output, under the Merge's name, so the
  tensors a signature or collection names (``cond/Merge:0``) are still there;
- ops on the same predicate that need the cond's own results (TF 1.x's gradient of the cond)
  are a second ``If``; the first also returns the forward values the second reads (the
  untaken branch returns a zero in their place, which the second never reads).

A frame of another shape (a loop gradient's stacks, a Merge's ``value_index`` read, an op
reading both branches) is refused with a ValueError naming the op.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from . import dtypes
from .function_io import _arg_name, _unique

_V1_OPS = {"Switch", "Merge", "Enter"}          # where there are none, nothing to do
_DT_RESOURCE = 20                       # TensorFlow's DataType enum; tfjupyter has no such dtype
_LOOP_ENTRIES = {"Enter", "RefEnter"}
_LOOP_EXITS = {"Exit", "RefExit"}
_HINT = ("write the graph with control flow v2 (tf.compat.v1.enable_control_flow_v2() before "
         "building it), whose If/While ops tfjupyter reads")

State = Tuple[Tuple[str, int], ...]       # (predicate tensor, branch) pairs, outermost first


class _Unconvertible(ValueError):
    pass


def _refuse(node, why: str) -> _Unconvertible:
    return _Unconvertible(f"Node '{node.name}' ({node.op}): TensorFlow's control flow v1 cond "
                          f"cannot be converted to an If: {why}; {_HINT}")


def _refuse_loop(node, why: str) -> _Unconvertible:
    return _Unconvertible(f"Node '{node.name}' ({node.op}): TensorFlow's control flow v1 "
                          f"while loop cannot be converted to a While: {why}; {_HINT}")


def _source(text: str) -> Tuple[str, int]:
    """(node, output index) of a data input ``node:k`` / ``node``."""
    src, colon, index = text.rpartition(":")
    return (src, int(index)) if colon and index.isdigit() else (text, 0)


def _tensor(src: str, index: int) -> str:
    return src if index == 0 else f"{src}:{index}"


def convert_control_flow(graph_def):
    """``graph_def`` with its v1 loops and conds as ``While`` and ``If`` ops (a new GraphDef whose library holds the
    branches), or ``graph_def`` itself when it has none."""
    if not any(n.op in _V1_OPS for n in graph_def.node):
        return graph_def
    out = type(graph_def)()
    out.CopyFrom(graph_def)
    rewriter = _Rewriter(out)
    rewriter.convert_outermost_loops()
    while rewriter.convert_innermost():
        pass
    rewriter.write_back()
    return out


def _shapes(node) -> Sequence:
    """A NodeDef's ``_output_shapes`` (TensorFlow's static shapes), or ()."""
    return node.attr["_output_shapes"].list.shape if "_output_shapes" in node.attr else ()


# Ops whose output TensorFlow's OpDef fixes as bool (tf_op_args.py says only "fixed").
_BOOL_OUTPUTS = {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
                 "LogicalAnd", "LogicalOr", "LogicalNot", "IsFinite", "IsNan", "IsInf",
                 "ApproximateEqual", "All", "Any"}


def _output_dtype(node, index: int) -> Optional[int]:
    """The dtype enum of a NodeDef's output ``index`` from its attrs (TensorFlow's OpDef, as
    tf_op_args.py gives it), or None where they do not say."""
    from .graph_io import _arg_length
    from .tf_op_args import OP_ARGS
    if node.op in _BOOL_OUTPUTS:
        return dtypes.bool.as_datatype_enum
    specs = OP_ARGS.get(node.op, ((), ()))[1]
    offset = 0
    for spec in specs:
        length = _arg_length(node, spec)
        if length is None:
            return None
        if index < offset + length:
            if spec.startswith("["):
                return node.attr[spec[1:-1]].list.type[index - offset]
            attr = spec.rpartition("*")[2]
            return node.attr[attr].type if attr and attr in node.attr else None
        offset += length
    return None


def _arg_names(n: int, taken: Set[str]) -> List[str]:
    """Names of ``n`` function arguments, none of them an op's name in ``taken``."""
    taken = set(taken)
    return [_unique(f"arg{i}", taken) for i in range(n)]


def _write_function(graph_def, function_names: Set[str], name: str, args: List[Tuple],
                    ops: Sequence, ref: Callable, results: List[Tuple[int, str]]) -> str:
    """Adds a FunctionDef of ``ops`` (NodeDefs, names kept) to ``graph_def``'s library; returns
    its name. ``args``: (name, (dtype enum, shape proto or None)); ``ref(input, reader)``: an
    op input as the function names it (None: left out); ``results``: (dtype enum, name)."""
    fname = _unique(_arg_name(name), function_names)
    fdef = graph_def.library.function.add()
    fdef.signature.name = fname
    for i, (arg_name, (dtype, shape)) in enumerate(args):
        arg = fdef.signature.input_arg.add()
        arg.name, arg.type = arg_name, dtype
        if shape is not None:
            fdef.arg_attr[i].attr["_output_shapes"].list.shape.add().CopyFrom(shape)
    for op in ops:
        node = fdef.node_def.add()
        node.CopyFrom(op)
        del node.input[:]
        node.input.extend(r for r in (ref(t, op.name) for t in op.input) if r is not None)
        if "_class" in node.attr:            # colocation with ops outside the function
            del node.attr["_class"]
    for k, (dtype, tensor) in enumerate(results):
        result = fdef.signature.output_arg.add()
        result.name, result.type = f"output{k}", dtype
        fdef.ret[result.name] = tensor
    return fname


class _Rewriter:
    def __init__(self, graph_def):
        self.graph_def = graph_def
        self.nodes = {n.name: n for n in graph_def.node}    # name -> NodeDef, in order
        self.in_loops = self._loop_nodes()
        self.function_names = {f.signature.name for f in graph_def.library.function}
        self._anchors: Dict[str, List[str]] = defaultdict(list)   # see _place_before

    # -- the graph's structure ---------------------------------------------------------------
    def _consumers(self) -> Dict[str, List[str]]:
        consumers: Dict[str, List[str]] = defaultdict(list)
        for node in self.nodes.values():
            for text in node.input:
                consumers[_source(text.lstrip("^"))[0]].append(node.name)
        return consumers

    def _loop_nodes(self) -> Set[str]:
        """The ops of while loops' frames: from their Enters up to their Exits."""
        consumers = self._consumers()
        seen: Set[str] = set()
        todo = [n.name for n in self.nodes.values() if n.op in _LOOP_ENTRIES]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if self.nodes[name].op not in _LOOP_EXITS:
                todo.extend(consumers.get(name, ()))
        return seen

    def _predicate(self, text: str) -> str:
        """A Switch's predicate, named through the Identity ops in front of it."""
        src, index = _source(text)
        while src in self.nodes and self.nodes[src].op == "Identity" and index == 0:
            src, index = _source(self.nodes[src].input[0])
        return _tensor(src, index)

    def _order(self) -> List[str]:
        """The cond ops' names, producers first (loop frames left out: their back edges)."""
        names = [n for n in self.nodes if n not in self.in_loops]
        pending = {}
        consumers: Dict[str, List[str]] = defaultdict(list)
        for name in names:
            srcs = {_source(t.lstrip("^"))[0] for t in self.nodes[name].input}
            srcs = {s for s in srcs if s in self.nodes and s not in self.in_loops}
            pending[name] = len(srcs)
            for s in srcs:
                consumers[s].append(name)
        ready = [n for n in names if pending[n] == 0]
        order = []
        while ready:
            name = ready.pop()
            order.append(name)
            for c in consumers[name]:
                pending[c] -= 1
                if pending[c] == 0:
                    ready.append(c)
        return order                     # a cycle's ops are left out: graph_io names it

    def _states(self) -> Dict[str, State]:
        states: Dict[str, State] = {}

        def of(text: str) -> State:
            src, index = _source(text.lstrip("^"))
            state = states.get(src, ())
            node = self.nodes.get(src)
            if node is not None and node.op == "Switch" and not text.startswith("^") \
                    and src in states:
                state = state + ((self._predicate(node.input[1]), index),)
            return state

        for name in self._order():
            node = self.nodes[name]
            if node.op == "Switch":
                states[name] = of(node.input[0])
                continue
            inputs = [of(t) for t in node.input]
            if node.op == "Merge":
                states[name] = self._merged(node, inputs)
                continue
            deepest = max(inputs, key=len, default=())
            for state in inputs:
                if deepest[:len(state)] != state:
                    raise _refuse(node, "its inputs come from different branches")
            states[name] = deepest
        return states

    def _merged(self, node, inputs: List[State]) -> State:
        data = [s for s, t in zip(inputs, node.input) if not t.startswith("^")]
        if len(data) == 2 and data[0][:-1] == data[1][:-1] and data[0] and data[1] and \
                data[0][-1][0] == data[1][-1][0] and {data[0][-1][1], data[1][-1][1]} == {0, 1}:
            return data[0][:-1]
        if len(set(data)) == 1:          # both inputs in one branch: a Merge inside it
            return data[0]
        raise _refuse(node, "its inputs are not the two branches of one cond")


    # -- while loops -------------------------------------------------------------------------
    def convert_outermost_loops(self) -> None:
        """Rewrites the loops no other loop holds; inner loops (and conds) go into the bodies,
        converted when those are read."""
        frames: Dict[str, List[str]] = defaultdict(list)
        for node in self.nodes.values():
            if node.op in _LOOP_ENTRIES:
                frames[node.attr["frame_name"].s.decode()].append(node.name)
        consumers = self._consumers()
        spans = {frame: self._loop_span(enters, consumers) for frame, enters in frames.items()}
        for frame, enters in frames.items():
            inner = any(enters[0] in span for other, span in spans.items() if other != frame)
            if not inner:
                self._rewrite_loop(frame, enters, spans[frame], consumers)
        self.in_loops = self._loop_nodes()

    def _loop_span(self, enters: List[str], consumers) -> Set[str]:
        """A loop's ops (inner loops' included): from its Enters to its own Exits."""
        own_exits = set()
        for enter in enters:
            for merge in consumers.get(enter, ()):
                for switch in consumers.get(merge, ()):
                    own_exits.update(c for c in consumers.get(switch, ())
                                     if self.nodes[c].op in _LOOP_EXITS)
        seen: Set[str] = set()
        todo = list(enters)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                if name not in own_exits:
                    todo.extend(consumers.get(name, ()))
        return seen

    def _rewrite_loop(self, frame: str, enters: List[str], span: Set[str], consumers) -> None:
        first = self.nodes[enters[0]]

        def only(names, op_type: str, reader) -> str:
            found = [n for n in names if self.nodes[n].op == op_type]
            if len(found) != 1:
                raise _refuse_loop(reader, f"it is read by {len(found)} {op_type} ops, not one")
            return found[0]

        variables, captured = [], []          # (Enter, Merge, Switch, Exit, NextIteration)
        for name in enters:
            enter = self.nodes[name]
            if enter.attr["T"].type == _DT_RESOURCE:
                raise _refuse_loop(enter, "it passes a resource into the loop (a stack of "
                                          "TensorFlow's loop gradients, a TensorArray)")
            if enter.attr["is_constant"].b:
                captured.append(name)
                continue
            merge = only(consumers.get(name, ()), "Merge", enter)
            switch = only(consumers.get(merge, ()), "Switch", self.nodes[merge])
            exits = [c for c in consumers.get(switch, ()) if self.nodes[c].op in _LOOP_EXITS]
            next_iteration = [_source(t)[0] for t in self.nodes[merge].input
                              if _source(t)[0] != name]
            if len(next_iteration) != 1 or len(exits) > 1 or \
                    self.nodes[next_iteration[0]].op != "NextIteration":
                raise _refuse_loop(self.nodes[merge], "it is not Merge(Enter, NextIteration)")
            variables.append((name, merge, switch, exits[0] if exits else None,
                              next_iteration[0]))
        if not variables:
            raise _refuse_loop(first, f"the loop '{frame}' has no loop variable")
        loop_cond = _source(self.nodes[variables[0][2]].input[1])[0]
        if self.nodes[loop_cond].op != "LoopCond" or any(
                _source(self.nodes[v[2]].input[1])[0] != loop_cond for v in variables):
            raise _refuse_loop(self.nodes[variables[0][2]], "its predicate is not the loop's "
                                                           "LoopCond")
        frame_ops = {loop_cond} | set(captured) | {n for v in variables for n in v if n}
        merges = {v[1]: i for i, v in enumerate(variables)}
        switches = {v[2]: i for i, v in enumerate(variables)}
        captures = {c: len(variables) + j for j, c in enumerate(captured)}
        n_args = len(variables) + len(captured)

        def ops_for(tensors: List[str], reader) -> List[str]:
            """The loop's ops ``tensors`` need, in the GraphDef's order."""
            needed: Set[str] = set()
            todo = [_source(t.lstrip("^"))[0] for t in tensors]
            while todo:
                name = todo.pop()
                if name in needed or name in frame_ops:
                    continue
                if name not in span:
                    raise _refuse_loop(reader, f"it needs '{name}' from outside the loop "
                                               "without an Enter")
                needed.add(name)
                todo.extend(_source(t.lstrip("^"))[0] for t in self.nodes[name].input)
            return [n for n in self.nodes if n in needed]

        def reference(arg_names, in_function: Set[str], is_body: bool):
            def ref(text: str, reader: str) -> Optional[str]:
                control = text.startswith("^")
                src, index = _source(text.lstrip("^"))
                if src in in_function:
                    return "^" + src if control else f"{src}:{index}"
                if control:                   # a pivot: in a function, nothing to wait for
                    return None
                if src in captures:
                    return arg_names[captures[src]]
                if not is_body and src in merges:
                    return arg_names[merges[src]]
                if is_body and src in switches and index == 1:
                    return arg_names[switches[src]]
                raise _refuse_loop(self.nodes[reader], f"it reads '{text}', which the loop's "
                                                       f"{'body' if is_body else 'condition'} "
                                                       "does not have")
            return ref

        while_name = self._new_name(frame.rpartition("/")[0] + "/While" if "/" in frame
                                    else "While")
        arg_specs = []
        for name in [v[0] for v in variables] + captured:
            shapes = _shapes(self.nodes[name])
            arg_specs.append((self.nodes[name].attr["T"].type, shapes[0] if shapes else None))
        for i, v in enumerate(variables):           # a variable's shape: its Merge's
            shapes = _shapes(self.nodes[v[1]])
            if shapes:
                arg_specs[i] = (arg_specs[i][0], shapes[0])
        functions = {}
        pred_input = self.nodes[loop_cond].input[0]
        body_results = [self.nodes[v[4]].input[0] for v in variables]
        for part, outputs, is_body in (("cond", [pred_input], False),
                                       ("body", body_results, True)):
            ops = ops_for(outputs, self.nodes[loop_cond if not is_body else variables[0][4]])
            arg_names = _arg_names(n_args, set(ops))
            ref = reference(arg_names, set(ops), is_body)
            if is_body:
                results = [(arg_specs[i][0], ref(t, variables[i][4]))
                           for i, t in enumerate(outputs)]
                results += [(arg_specs[k][0], arg_names[k]) for k in captures.values()]
            else:
                results = [(dtypes.bool.as_datatype_enum, ref(pred_input, loop_cond))]
            functions[part] = _write_function(self.graph_def, self.function_names,
                                              f"{while_name}_{part}",
                                              list(zip(arg_names, arg_specs)),
                                              [self.nodes[n] for n in ops], ref, results)
        node = self.graph_def.node.add()
        node.name, node.op = while_name, "While"
        node.input.extend(self.nodes[n].input[0] for n in [v[0] for v in variables] + captured)
        node.attr["T"].list.type.extend(t for t, _ in arg_specs)
        node.attr["cond"].func.name = functions["cond"]
        node.attr["body"].func.name = functions["body"]
        node.attr["parallel_iterations"].i = first.attr["parallel_iterations"].i or 10
        for i, (dtype, shape) in enumerate(arg_specs):
            exit_shapes = _shapes(self.nodes[variables[i][3]]) \
                if i < len(variables) and variables[i][3] else ()
            target = node.attr["output_shapes"].list.shape.add()
            if exit_shapes:
                target.CopyFrom(exit_shapes[0])
            elif shape is not None:
                target.CopyFrom(shape)
            else:
                target.unknown_rank = True
        for i, v in enumerate(variables):
            if v[3] is not None:
                self._replace_with_identity(v[3], _tensor(while_name, i))
        outside = [c for n in span for c in consumers.get(n, ()) if c not in span]
        if any(n not in {v[3] for v in variables} for n in span
               for c in consumers.get(n, ()) if c not in span):
            raise _refuse_loop(self.nodes[outside[0]], "it reads a tensor of the loop other "
                                                       "than an Exit")
        for name in span - {v[3] for v in variables}:
            del self.nodes[name]
        self.nodes[while_name] = node
        exits = [v[3] for v in variables if v[3]]
        if exits:
            self._place_before(while_name, exits[0])

    # -- rewriting conds ---------------------------------------------------------------------
    def convert_innermost(self) -> bool:
        """Rewrites the innermost frames' conds; False when none is left."""
        self._drop_unused_switches()
        states = self._states()
        depth = max((len(s) for s in states.values()), default=0)
        if depth == 0:
            left = [n for n in self.nodes.values() if n.op in ("Switch", "Merge")
                    and n.name not in self.in_loops]
            if left:
                raise _refuse(left[0], "it is not part of a cond frame tfjupyter recognises")
            return False
        frames: Dict[Tuple, Set[str]] = defaultdict(set)
        for name, state in states.items():
            if len(state) == depth and self.nodes[name].op != "Switch":
                frames[state[:-1], state[-1][0]].add(name)
        conds = [(outer, pred, component, merges)
                 for (outer, pred), members in frames.items()
                 for component, merges in self._components(outer, pred, members, states)]
        self._consumers_now = self._consumers()          # as the round starts
        self._position = {name: k for k, name in enumerate(self.nodes)}
        after = self._after_merges([merges for _, _, _, merges in conds])
        for k, (outer, pred, component, merges) in enumerate(conds):
            if merges:
                # Ops that need the cond's own results (TensorFlow's gradient of the cond, on
                # the same predicate) are a later cond, rewritten next round.
                later = {n for n in component if after.get(n, 0) >> k & 1}
                first = self._upstream(merges - later, component) if later else component
                self._rewrite(outer, pred, first, states, component - first)
            else:                        # no Merge reads them (a pivot no constant uses)
                for name in component - set(self._switches_of(component)):
                    del self.nodes[name]
        return True

    def _after_merges(self, merge_sets: List[Set[str]]) -> Dict[str, int]:
        """For each op, a bit mask: bit k set where it reads (directly or not) an output of
        ``merge_sets[k]``."""
        bits: Dict[str, int] = defaultdict(int)
        for k, merges in enumerate(merge_sets):
            for merge in merges:
                bits[merge] |= 1 << k
        after: Dict[str, int] = {}
        for name in self._order():
            mask = 0
            for text in self.nodes[name].input:
                src = _source(text.lstrip("^"))[0]
                mask |= after.get(src, 0) | bits.get(src, 0)
            after[name] = mask
        return after

    def _drop_unused_switches(self) -> None:
        """Switches whose outputs no op reads (the pivot of a cond with no constants): nothing
        to convert. An op waiting on one (a control input) waits on its inputs instead."""
        read = {_source(t)[0] for n in self.nodes.values() for t in n.input
                if not t.startswith("^")}
        unused = {n for n, node in self.nodes.items() if node.op == "Switch"
                  and n not in read and n not in self.in_loops}
        for node in self.nodes.values():
            if any(t[1:] in unused for t in node.input if t.startswith("^")):
                controls = []
                for text in node.input:
                    if text.startswith("^") and text[1:] in unused:
                        text = [f"^{_source(t)[0]}" for t in self.nodes[text[1:]].input]
                    for t in text if isinstance(text, list) else [text]:
                        if t not in controls:
                            controls.append(t)
                del node.input[:]
                node.input.extend(controls)
        for name in unused:
            del self.nodes[name]

    def _components(self, outer: State, pred: str, members: Set[str], states):
        """The frame's ops split into separate conds (conds on one predicate): ops joined by
        edges among the branches' ops, their Switches and their Merges."""
        # Frames of one depth are disjoint; those rewritten already are gone from self.nodes.
        merges = {n for n, s in states.items() if s == outer and n in self.nodes
                  and self.nodes[n].op == "Merge"
                  and any(_source(t)[0] in members for t in self.nodes[n].input)}
        group = set(members) | merges
        parent = {n: n for n in group}

        def find(n):
            while parent[n] != n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n

        for name in group:
            for text in self.nodes[name].input:
                src = _source(text.lstrip("^"))[0]
                node = self.nodes.get(src)
                if node is not None and node.op == "Switch" and states.get(src) == outer and \
                        self._predicate(node.input[1]) == pred:
                    parent.setdefault(src, src)
                    parent[find(src)] = find(name)
                elif src in group and src not in merges:
                    parent[find(src)] = find(name)
        components: Dict[str, Set[str]] = defaultdict(set)
        for n in parent:
            components[find(n)].add(n)
        return [(c, c & merges) for c in components.values()]

    def _in_order(self, names: Set[str]) -> List[str]:
        """``names`` (ops still in the graph) in the GraphDef's order as the round started."""
        return sorted((n for n in names if n in self.nodes), key=self._position.__getitem__)

    def _switches_of(self, component: Set[str]) -> List[str]:
        return [n for n in self._in_order(component) if self.nodes[n].op == "Switch"]

    def _upstream(self, names: Set[str], within: Set[str]) -> Set[str]:
        """``names`` and the ops of ``within`` they read, directly or not."""
        seen: Set[str] = set()
        todo = list(names)
        while todo:
            name = todo.pop()
            if name not in seen and name in within:
                seen.add(name)
                todo.extend(_source(t.lstrip("^"))[0] for t in self.nodes[name].input)
        return seen

    def _rewrite(self, outer: State, pred: str, component: Set[str], states,
                 later: Set[str]) -> None:
        merges = [n for n in self._in_order(component) if self.nodes[n].op == "Merge"
                  and states[n] == outer]
        switches = self._switches_of(component)
        in_order = self._in_order(component)
        branch_ops = {b: [n for n in in_order if states.get(n) == outer + ((pred, b),)
                          and n not in switches]
                      for b in (0, 1)}
        for merge in merges:
            for reader in self._consumers_now.get(merge, ()):
                if reader in self.nodes and f"{merge}:1" in self.nodes[reader].input:
                    raise _refuse(self.nodes[reader], f"it reads '{merge}:1', the Merge's "
                                                      "value_index")
        # What the later cond reads of this one's branches (the forward values its gradient
        # needs): more outputs of this If, the taken branch's value (the other's is unused).
        exported: Dict[str, Tuple[int, int]] = {}        # tensor -> (branch, dtype enum)
        for reader in later:
            for text in self.nodes[reader].input:
                src, index = _source(text)
                branch = next((b for b in (0, 1) if src in branch_ops[b]), None)
                if branch is None or text.startswith("^"):
                    continue
                dtype = _output_dtype(self.nodes[src], index)
                if dtype is None:
                    raise _refuse(self.nodes[reader], f"it reads '{text}' of the cond before "
                                                      "it, whose type its op does not say")
                exported.setdefault(_tensor(src, index), (branch, dtype))
        args = self._cond_args(switches, branch_ops)
        controls: List[str] = []
        if_name = self._new_name(merges[0].rpartition("/")[0] + "/If" if "/" in merges[0]
                                 else "If")
        functions = {}
        for b, label in ((1, "then"), (0, "else")):
            functions[b] = self._function(f"{if_name}_{label}", branch_ops[b], b, switches,
                                          args, merges, controls, exported)
        node = self.graph_def.node.add()       # placed by write_back
        node.name, node.op = if_name, "If"
        node.input.extend([pred] + list(args) + ["^" + c for c in controls])
        node.attr["Tcond"].type = dtypes.bool.as_datatype_enum
        node.attr["Tin"].list.type.extend(dtype for dtype, _ in args.values())
        node.attr["Tout"].list.type.extend(self.nodes[m].attr["T"].type for m in merges)
        node.attr["Tout"].list.type.extend(dtype for _, dtype in exported.values())
        node.attr["then_branch"].func.name = functions[1]
        node.attr["else_branch"].func.name = functions[0]
        shapes = node.attr["output_shapes"].list.shape
        for m in merges:
            known = self.nodes[m].attr["_output_shapes"].list.shape \
                if "_output_shapes" in self.nodes[m].attr else ()
            shape = shapes.add()
            if known:
                shape.CopyFrom(known[0])
            else:
                shape.unknown_rank = True
        for _ in exported:
            shapes.add().unknown_rank = True
        for k, merge in enumerate(merges):
            self._replace_with_identity(merge, _tensor(if_name, k))
        outputs = {t: _tensor(if_name, len(merges) + k) for k, t in enumerate(exported)}
        for reader in later:
            node_inputs = self.nodes[reader].input
            for i, text in enumerate(node_inputs):
                if _tensor(*_source(text)) in outputs:
                    node_inputs[i] = outputs[_tensor(*_source(text))]
        for name in branch_ops[0] + branch_ops[1]:
            del self.nodes[name]
        # Switches the later cond reads stay; those only waited on go next round.
        for name in switches:
            if not any(c in self.nodes for c in self._consumers_now.get(name, ())):
                del self.nodes[name]
        self.nodes[if_name] = node
        self._place_before(if_name, merges[0])

    def _new_name(self, name: str) -> str:
        base, k = name, 1
        while name in self.nodes:
            name, k = f"{base}_{k}", k + 1
        return name

    def _cond_args(self, switches: List[str], branch_ops: Dict[int, List[str]]) -> Dict:
        """The If's inputs: the Switches' data inputs, then the tensors from outside the cond
        a branch reads directly (TensorFlow's gradients read constants so), each once:
        tensor -> (dtype enum, {branch: shape proto})."""
        args: Dict[str, Tuple[int, Dict]] = {}
        for switch in switches:
            node = self.nodes[switch]
            shapes = _shapes(node)
            args.setdefault(_tensor(*_source(node.input[0])), (
                node.attr["T"].type, {b: shapes[b] for b in (0, 1) if len(shapes) > 1}))
        for b, ops in branch_ops.items():
            region = set(ops) | set(switches)
            for op in ops:
                for text in self.nodes[op].input:
                    src, index = _source(text)
                    if text.startswith("^") or src in region or src not in self.nodes:
                        continue
                    dtype = _output_dtype(self.nodes[src], index)
                    if dtype is None:
                        raise _refuse(self.nodes[op], f"it reads '{text}' from outside the "
                                                      "cond, whose type its op does not say")
                    shapes = _shapes(self.nodes[src])
                    _, known = args.setdefault(_tensor(src, index), (dtype, {}))
                    if len(shapes) > index:
                        known.setdefault(b, shapes[index])
        return args

    def _function(self, name: str, ops: List[str], branch: int, switches: List[str],
                  args: Dict, merges: List[str], controls: List[str],
                  exported: Dict[str, Tuple[int, int]]) -> str:
        """A FunctionDef of one branch's ops; returns its name."""
        in_branch = set(ops)
        nodes = [self.nodes[op] for op in ops]
        arg_names = dict(zip(args, _arg_names(len(args), in_branch)))
        arg_specs = [(dtype, shapes.get(branch)) for dtype, shapes in args.values()]

        def ref(text: str, reader: str) -> Optional[str]:
            """The function's name of one input, or None for an outside control input."""
            control = text.startswith("^")
            src, index = _source(text.lstrip("^"))
            if src in in_branch:
                return "^" + src if control else f"{src}:{index}"
            if src in switches:
                if control:
                    return None
                if index != branch:
                    raise _refuse(self.nodes[reader], f"it reads '{text}', the other branch")
                return arg_names[_tensor(*_source(self.nodes[src].input[0]))]
            if control:
                if src not in controls:
                    controls.append(src)
                return None
            return arg_names[_tensor(src, index)]

        results = []
        for merge in merges:
            side = [t for t in self.nodes[merge].input if not t.startswith("^")
                    and self._branch_of(t, in_branch, switches, branch) == branch]
            if len(side) != 1:
                raise _refuse(self.nodes[merge], "it does not join one result of each branch")
            results.append((self.nodes[merge].attr["T"].type, ref(side[0], merge)))
        taken = set(in_branch) | set(arg_names.values())
        for tensor, (side, dtype) in exported.items():
            if side == branch:
                results.append((dtype, ref(tensor, merges[0])))
                continue
            unused = type(nodes[0] if nodes else self.nodes[merges[0]])()
            unused.name, unused.op = _unique(f"{name}/unused", taken), "Const"
            unused.attr["dtype"].type = unused.attr["value"].tensor.dtype = dtype
            unused.attr["value"].tensor.tensor_shape.SetInParent()    # a scalar zero
            nodes.append(unused)
            in_branch.add(unused.name)
            results.append((dtype, f"{unused.name}:0"))
        return _write_function(self.graph_def, self.function_names, name,
                               list(zip(arg_names.values(), arg_specs)), nodes, ref, results)

    @staticmethod
    def _branch_of(text: str, in_branch: Set[str], switches: List[str],
                   branch: int) -> Optional[int]:
        """The branch a Merge's input comes from, seen from ``branch``'s ops."""
        src, index = _source(text)
        if src in in_branch:
            return branch
        if src in switches:
            return index
        return None

    def _replace_with_identity(self, name: str, tensor: str) -> None:
        """``name`` (a Merge, an Exit) becomes an Identity of ``tensor`` under the same name,
        so what reads it by name (signatures, collections, fetches) still finds it."""
        old = self.nodes[name]
        identity = type(old)()
        identity.name, identity.op, identity.device = name, "Identity", old.device
        identity.input.append(tensor)
        identity.input.extend(t for t in old.input if t.startswith("^"))
        identity.attr["T"].CopyFrom(old.attr["T"])
        if _shapes(old):
            identity.attr["_output_shapes"].list.shape.add().CopyFrom(_shapes(old)[0])
        self.nodes[name] = identity

    def _place_before(self, name: str, anchor: str) -> None:
        """Keeps the GraphDef's order readable: a new If/While goes before its first Merge or
        Exit (graph_io orders the nodes anyway)."""
        self._anchors[anchor].append(name)

    def write_back(self) -> None:
        order: List[str] = []
        placed: Set[str] = set()

        def place(name: str) -> None:
            for new in self._anchors.get(name, ()):
                if new in self.nodes and new not in placed:
                    place(new)
            if name not in placed:
                placed.add(name)
                order.append(name)

        for name in list(self.nodes):
            place(name)
        nodes = [type(n)() for n in self.nodes.values()]
        for new, name in zip(nodes, order):
            new.CopyFrom(self.nodes[name])
        del self.graph_def.node[:]
        self.graph_def.node.extend(nodes)

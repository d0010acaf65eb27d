"""The static picture of a graph view: its collapsed top level as an inline SVG (no JavaScript).

The top level has one item per first name component: a name scope ("layer1" for "layer1/MatMul")
drawn as a box, or a top-level op drawn as a rounded box; an op that is also a scope ("w" with
"w/read") is part of the scope. Items are filled with the color of the device most of their ops
were assigned to and outlined dashed red when some were soft-placed; edges between items are
aggregated. The layout is a small layered one: cycles broken by a depth-first search,
longest-path layers, then barycenter sweeps ordering each layer.
"""
from __future__ import annotations

import html
import math
import uuid
from collections import Counter
from typing import Dict, List, Sequence, Tuple

__all__ = ["MAX_ITEMS", "top_level", "layered_layout", "draw"]

MAX_ITEMS = 150                 # more top-level items than this are not drawn (tables only)
BOX_W, BOX_H = 150, 38
GAP_X, GAP_Y = 18, 48
MARGIN = 14
SWEEPS = 4
LABEL_CHARS = 22                # what fits in BOX_W at 11px
CONTROL_DASH, DEVICE_DASH, TASK_DASH = "4 3", "1.5 3", "6 3"
_CROSS_RANK = {"none": 0, "device": 1, "task": 2}


# -- the collapsed top level ---------------------------------------------------------------------------
def top_level(nodes: Sequence[Dict], edges: Sequence[Dict], devices: Sequence[Dict],
              unplaced_color: str) -> Tuple[List[Dict], List[Dict]]:
    """Items (in graph order) and the links between them, from a document's nodes and edges."""
    heads = {n["name"].split("/", 1)[0] for n in nodes if "/" in n["name"]}
    by_device = {d["name"]: d for d in devices}
    members: Dict[str, List[Dict]] = {}
    for n in nodes:
        members.setdefault(n["name"].split("/", 1)[0], []).append(n)
    items = []
    for name, ops in members.items():
        counts = Counter(op["device"] for op in ops)
        # The most common device; max() keeps the first of a tie (in the graph order of ops).
        device = max(counts, key=counts.get)
        group = name in heads
        spread = ", ".join(f"{by_device[d]['short'] if d else 'not placed'}: {k}"
                           for d, k in counts.items())
        items.append({
            "name": name, "group": group, "ops": len(ops),
            "type": "" if group else ops[0]["type"],
            "fill": by_device[device]["color"] if device else unplaced_color,
            "soft": sum(op["soft"] for op in ops),
            "title": f"{name}{'/' if group else ''} ({len(ops)} op{'s' * (len(ops) != 1)}; {spread})"})
    links: Dict[Tuple[str, str], Dict] = {}
    for e in edges:
        a, b = e["source"].split("/", 1)[0], e["target"].split("/", 1)[0]
        if a == b:
            continue
        link = links.setdefault((a, b), {"source": a, "target": b, "tensors": 0, "controls": 0,
                                         "cross": "none"})
        link["controls" if e["control"] else "tensors"] += 1
        if _CROSS_RANK[e["cross"]] > _CROSS_RANK[link["cross"]]:
            link["cross"] = e["cross"]
    return items, list(links.values())


# -- layout ----------------------------------------------------------------------------------------------
def layered_layout(names: Sequence[str],
                   links: Sequence[Tuple[str, str]]) -> Dict[str, Tuple[int, int]]:
    """name -> (layer, position in its layer); every link points down except those that close
    a cycle."""
    succ: Dict[str, List[str]] = {n: [] for n in names}
    for a, b in links:
        if a != b and b not in succ[a]:
            succ[a].append(b)
    forward = _without_back_edges(names, succ)
    preds: Dict[str, List[str]] = {n: [] for n in names}
    for a in names:
        for b in forward[a]:
            preds[b].append(a)
    # Longest path: each item one layer below its deepest input ...
    layer: Dict[str, int] = {}
    for n in _topological(names, forward, preds):
        layer[n] = max((layer[p] + 1 for p in preds[n]), default=0)
    # ... except sources (constants, variables), which sit just above their first consumer,
    # so their edges stay short.
    for n in names:
        if not preds[n] and forward[n]:
            layer[n] = min(layer[s] for s in forward[n]) - 1
    rows: List[List[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for n in names:            # graph order first ...
        rows[layer[n]].append(n)
    for sweep in range(SWEEPS):  # ... then each item at the mean position of its neighbours
        down = sweep % 2 == 0
        neighbours = preds if down else forward
        for i in (range(1, len(rows)) if down else range(len(rows) - 2, -1, -1)):
            # Positions relative to the middle of their row, as rows are drawn centered.
            position = {n: k - (len(row) - 1) / 2 for row in rows for k, n in enumerate(row)}

            def barycenter(n, position=position, neighbours=neighbours):
                near = neighbours[n]
                return sum(position[m] for m in near) / len(near) if near else position[n]
            rows[i].sort(key=barycenter)
    return {n: (i, k) for i, row in enumerate(rows) for k, n in enumerate(row)}


def _without_back_edges(names: Sequence[str], succ: Dict[str, List[str]]) -> Dict[str, List[str]]:
    """The links minus those a depth-first search (in graph order) finds closing a cycle."""
    on_path, done = set(), set()
    forward: Dict[str, List[str]] = {n: [] for n in names}
    for root in names:
        if root in done:
            continue
        on_path.add(root)
        stack = [(root, iter(succ[root]))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif child not in on_path:
                forward[node].append(child)
                if child not in done:
                    on_path.add(child)
                    stack.append((child, iter(succ[child])))
    return forward


def _topological(names, forward, preds) -> List[str]:
    waiting = {n: len(preds[n]) for n in names}
    ready = [n for n in names if not waiting[n]]
    order = []
    while ready:
        n = ready.pop()
        order.append(n)
        for s in forward[n]:
            waiting[s] -= 1
            if not waiting[s]:
                ready.append(s)
    return order


# -- drawing -----------------------------------------------------------------------------------------------
def draw(items: Sequence[Dict], links: Sequence[Dict], soft_color: str) -> str:
    """The SVG of ``top_level``'s items and links."""
    esc = html.escape
    places = layered_layout([i["name"] for i in items], [(l["source"], l["target"]) for l in links])
    per_layer = Counter(layer for layer, _ in places.values())
    widest = max(per_layer.values())
    step_x, step_y = BOX_W + GAP_X, BOX_H + GAP_Y

    def corner(name: str) -> Tuple[float, float]:
        layer, k = places[name]
        indent = (widest - per_layer[layer]) * step_x / 2
        return MARGIN + indent + k * step_x, MARGIN + layer * step_y

    width = 2 * MARGIN + widest * step_x - GAP_X
    height = 2 * MARGIN + len(per_layer) * step_y - GAP_Y
    marker = f"tfj-arrow-{uuid.uuid4().hex[:8]}"
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
           f"viewBox='0 0 {width:.0f} {height:.0f}' style='max-width:100%;height:auto' "
           f"font-family='sans-serif' font-size='11'>",
           "<defs>" + "".join(
               f"<marker id='{marker}-{kind}' viewBox='0 0 10 10' refX='9' refY='5' "
               f"markerUnits='userSpaceOnUse' markerWidth='8' markerHeight='8' orient='auto'>"
               f"<path d='M0,0 L10,5 L0,10 z' fill='{color}'/></marker>"
               for kind, color in (("plain", "#888"), ("task", soft_color))) + "</defs>"]
    for link in links:
        x1, y1 = corner(link["source"])
        x2, y2 = corner(link["target"])
        x1, y1, x2, y2 = x1 + BOX_W / 2, y1 + BOX_H, x2 + BOX_W / 2, y2
        bend = max(GAP_Y / 2, abs(y2 - y1) / 3)
        count = link["tensors"] + link["controls"]
        color, dash = "#888", ""
        if link["cross"] == "task":
            color, dash = soft_color, TASK_DASH
        elif link["cross"] == "device":
            color, dash = "#444", DEVICE_DASH
        elif not link["tensors"]:
            dash = CONTROL_DASH
        what = ", ".join(f"{n} {word}{'s' * (n != 1)}" for n, word in
                         ((link["tensors"], "tensor"), (link["controls"], "control edge")) if n)
        via = {"task": " across tasks (_Send/_Recv)", "device": " across devices"}.get(
            link["cross"], "")
        out.append(
            f"<path d='M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} "
            f"{x2:.1f},{y2:.1f}' fill='none' stroke='{color}' "
            f"stroke-width='{1.2 + min(2.5, 0.6 * math.log2(count)):.1f}'"
            + (f" stroke-dasharray='{dash}'" if dash else "")
            + f" marker-end='url(#{marker}-{'task' if link['cross'] == 'task' else 'plain'})'>"
            f"<title>{esc(link['source'])} → {esc(link['target'])}: {what}{via}</title></path>")
        if link["cross"] == "task":
            # Near the target, where edges from one source have spread apart; a white halo keeps
            # it readable over other edges.
            lx, ly = _bezier(0.7, (x1, y1), (x1, y1 + bend), (x2, y2 - bend), (x2, y2))
            out.append(f"<text x='{lx:.1f}' y='{ly:.1f}' text-anchor='middle' fill='{soft_color}' "
                       f"font-size='9' stroke='#fff' stroke-width='3' paint-order='stroke'>"
                       f"_Send/_Recv</text>")
    for item in items:
        x, y = corner(item["name"])
        stroke = (f"stroke='{soft_color}' stroke-width='2' stroke-dasharray='4 2'" if item["soft"]
                  else "stroke='#333' stroke-width='1'")
        ink = _ink(item["fill"])
        sub = f"{item['ops']} ops" if item["group"] else item["type"]
        weight = " font-weight='bold'" if item["group"] else ""
        out.append(
            f"<g class='tfj-static-node' data-name='{esc(item['name'])}' "
            f"data-kind='{'group' if item['group'] else 'op'}'><title>{esc(item['title'])}</title>"
            f"<rect x='{x:.1f}' y='{y:.1f}' width='{BOX_W}' height='{BOX_H}' "
            f"rx='{2 if item['group'] else 12}' fill='{item['fill']}' {stroke}/>"
            f"<text x='{x + BOX_W / 2:.1f}' y='{y + 16:.1f}' text-anchor='middle' fill='{ink}'"
            f"{weight}>"
            f"{esc(_clip(item['name'] + ('/' if item['group'] else '')))}</text>"
            f"<text x='{x + BOX_W / 2:.1f}' y='{y + 30:.1f}' text-anchor='middle' fill='{ink}' "
            f"font-size='9'>{esc(_clip(sub))}</text>")
        if item["soft"]:
            out.append(f"<text x='{x + BOX_W - 4:.1f}' y='{y + 10:.1f}' text-anchor='end' "
                       f"fill='{soft_color}' font-size='8' font-weight='bold'>soft</text>")
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def _bezier(t: float, *points: Tuple[float, float]) -> Tuple[float, float]:
    """The point at ``t`` of the cubic Bezier curve through four control points."""
    weights = ((1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3)
    return (sum(w * p[0] for w, p in zip(weights, points)),
            sum(w * p[1] for w, p in zip(weights, points)))


def _clip(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def _ink(fill: str) -> str:
    """Dark text on light fills, white on dark ones (relative luminance of the #rrggbb fill)."""
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return "#111" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "#fff"

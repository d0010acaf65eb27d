"""Tables for display: HTML for Jupyter and static pages, aligned text for terminals.

A leaf module (it imports nothing from tfjupyter), so that every layer can build its tables
here: the magics' placement and graph tables, the cluster's status table, the dashboard's
snapshot and health tables, the graph view's static fallback, the experiment records.

Cells are escaped, so a name like ``a<b`` shows as written; a cell that is already HTML (a
styled span, a colour swatch) says so by being an ``Html``. The styles are inline, with
``text-align:left`` on every cell: JupyterLab's stylesheet right-aligns table cells, and
GitHub's notebook viewer keeps inline styles but no classes or scripts.
"""
from __future__ import annotations

import html
from typing import Iterable, List, Optional, Sequence

__all__ = ["Html", "CELL_STYLE", "html_table", "text_table"]

CELL_STYLE = "text-align:left;padding:0 8px"


class Html(str):
    """Text that is already HTML: ``html_table`` puts it into its cell as it is."""


def _html(value: object) -> str:
    return value if isinstance(value, Html) else html.escape(str(value))


def html_table(caption: str, header: Sequence[str], rows: Iterable[Sequence[object]], *,
               cell_style: str = CELL_STYLE, table_style: str = "", css_class: str = "",
               row_styles: Optional[Sequence[str]] = None) -> str:
    """An HTML table; ``caption`` (bold, above it) is left out when empty.

    ``cell_style`` styles the header and body cells alike; ``row_styles``, when given, styles
    each body row (one entry per row, "" for none).
    """
    attributes = ((f" class='{css_class}'" if css_class else "")
                  + (f" style='{table_style}'" if table_style else ""))
    cell = f" style='{cell_style}'" if cell_style else ""
    head = "".join(f"<th{cell}>{_html(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        style = row_styles[i] if row_styles is not None else ""
        body.append((f"<tr style='{style}'>" if style else "<tr>")
                    + "".join(f"<td{cell}>{_html(c)}</td>" for c in row) + "</tr>")
    title = (f"<caption style='text-align:left'><b>{_html(caption)}</b></caption>"
             if caption else "")
    return (f"<table{attributes}>{title}<thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def text_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> List[str]:
    """The lines of a text table: columns padded to their widest cell, two spaces apart, no
    trailing spaces. An empty ``header`` gives no header line."""
    lines = [list(header), *map(list, rows)] if header else [list(r) for r in rows]
    if not lines:
        return []
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines]

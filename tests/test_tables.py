"""tfjupyter.tables: the one home of the HTML and text tables."""
import ast
import inspect
from html.parser import HTMLParser

import tfjupyter.tables as tables
from tfjupyter.tables import Html, html_table, text_table


class _Cells(HTMLParser):
    """The text of each table cell, as a browser reads it, row by row; and the tags seen."""

    def __init__(self, page: str):
        super().__init__()
        self.rows, self.tags, self.caption = [], [], None
        self._text = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th", "caption"):
            self._text = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.rows[-1].append(self._text)
            self._text = None
        elif tag == "caption":
            self.caption, self._text = self._text, None

    def handle_data(self, data):
        if self._text is not None:
            self._text += data


def test_a_leaf_module():
    tree = ast.parse(inspect.getsource(tables))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith("tfjupyter") or m.startswith(".")]


def test_html_cells_are_escaped_unless_marked_as_html():
    page = html_table("a <caption> & more", ["op<1>", "n"],
                      [["x<y & 'z'", 3], [Html("<i>already</i>"), None]])
    cells = _Cells(page)
    assert cells.caption == "a <caption> & more"
    assert cells.rows == [["op<1>", "n"], ["x<y & 'z'", "3"], ["already", "None"]]
    assert "<i>already</i>" in page and "x&lt;y &amp; &#x27;z&#x27;" in page
    assert [t for t, _ in cells.tags].count("i") == 1   # only the Html cell's markup is markup


def test_html_table_styles():
    page = html_table("", ["a"], [["1"], ["2"]], cell_style="padding:1px", css_class="t",
                      table_style="font-size:12px", row_styles=["", "background:red"])
    cells = _Cells(page)
    assert cells.caption is None and "<caption" not in page
    table = dict(cells.tags)["table"]
    assert table == {"class": "t", "style": "font-size:12px"}
    rows = [attrs for tag, attrs in cells.tags if tag == "tr"]
    assert rows == [{}, {}, {"style": "background:red"}]
    assert all(attrs == {"style": "padding:1px"} for tag, attrs in cells.tags
               if tag in ("td", "th"))
    default = _Cells(html_table("c", ["h"], [["v"]]))
    assert all(attrs["style"].startswith("text-align:left") for tag, attrs in default.tags
               if tag in ("td", "th"))   # JupyterLab's stylesheet right-aligns table cells


def test_text_table_aligns_columns():
    assert text_table(["name", "n"], [["a", "1"], ["longer", "22"]]) == [
        "name    n", "a       1", "longer  22"]
    assert text_table((), [["x", ""], ["yy", "z"]]) == ["x", "yy  z"]
    assert text_table(["only"], []) == ["only"]
    assert text_table((), []) == []

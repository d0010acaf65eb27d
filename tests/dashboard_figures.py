"""Screenshots of a dashboard's Bokeh figures, found by where they are on the page: Bokeh's
elements are not in the DOM in the order they are laid out."""
from __future__ import annotations


def figure_png(page, scope: str, position: int):
    """A screenshot of the figure at ``position`` in reading order (top to bottom, then left to
    right) among the ``.bk-Figure`` elements in ``scope``'s first match; None when the page is
    too busy to take one in 10 s (on a loaded machine, while figures keep redrawing): a missed
    look, not a failure."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    figures = page.locator(scope).first.locator(".bk-Figure")
    try:
        boxes = figures.evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.y, r.x]; })")
        order = sorted(range(len(boxes)), key=lambda i: (round(boxes[i][0]), boxes[i][1]))
        return figures.nth(order[position]).screenshot(timeout=10_000)
    except PlaywrightTimeout:
        return None

"""A browser context that can reach only 127.0.0.1 and local files: every other request is
aborted (and recorded), so a browser test cannot pass by loading something from the internet."""
from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK = "127.0.0.1"


class Offline:
    """``Offline(context)``: from now on the context's requests outside 127.0.0.1 fail;
    ``blocked`` lists their URLs, ``served`` the loopback ones, in order."""

    def __init__(self, context):
        self.blocked: list[str] = []
        self.served: list[str] = []
        context.route("**/*", self._route)

    def _route(self, route) -> None:
        url = route.request.url
        scheme, host = urlsplit(url).scheme, urlsplit(url).hostname
        if scheme in ("data", "blob", "about", "file") or host == LOOPBACK:
            self.served.append(url)
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort("internetdisconnected")

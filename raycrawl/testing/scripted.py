"""The ``scripted`` profile of the test web: pages whose links exist only after their script runs (issue 35).

- ``/`` and ``/p/{i}`` (i < pages_per_host): a shell -- an empty ``<div id="root">``, a ``<noscript>`` asking for
  JavaScript, ``<script src="/app.js">``. No link in the HTML.
- ``/app.js``: asks ``/data/{i}.json`` for the page's links (``fetch``) and writes them into the root: page i links
  to pages 2i+1 and 2i+2 (a tree: every page reachable from ``/``, only by running the script). It also asks for
  things a render must refuse: an image (a type a crawl does not load), the canary (another host), and a private
  address (``10.255.0.1``, refused by the address guard before anything is sent).
- ``scripted-spin``: the same, and ``/`` also links to ``/spin``, whose script keeps two chains of ``/tick``
  requests going for ever, each asking again as soon as its answer comes: a page that never settles. (Two chains
  sent one at a time, its host's delay apart: one always waits while the other is sent, so a request is in flight
  from before the page's load event on, however late a loaded machine runs the page's callbacks -- a timer would
  leave quiet gaps when it runs late. A chain ends when the render refuses its request, over its request budget.)
"""

from __future__ import annotations

import json

Answer = tuple[int, list[tuple[str, str]], bytes]
PRIVATE_TARGET = "http://10.255.0.1:9/private.json"  # never reached: refused by the guard (and the dead proxy)

SHELL = (
    '<!doctype html><html><head><title>app</title></head><body><div id="root"></div>'
    '<noscript>This app needs JavaScript enabled.</noscript><script src="/app.js"></script></body></html>'
)

APP_JS = """
(async () => {
  const path = location.pathname;
  const root = document.getElementById("root");
  if (path === "/spin") {
    let n = 0;
    const chain = () => { fetch("/tick?" + (n++)).then(chain, () => {}); };
    chain();
    chain();
    root.textContent = "spinning";
    return;
  }
  const page = path === "/" ? 0 : Number(path.split("/").pop());
  new Image().src = "/logo.png";
  fetch(%(outside)s).catch(() => {});
  fetch(%(private)s).catch(() => {});
  const data = await (await fetch("/data/" + page + ".json")).json();
  const list = document.createElement("ul");
  for (const href of data.links) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = href;
    link.textContent = "page " + href;
    item.appendChild(link);
    list.appendChild(item);
  }
  root.appendChild(document.createTextNode(data.text));
  root.appendChild(list);
})();
"""


def links_of(page: int, pages: int, spin: bool) -> list[str]:
    """The links page ``page``'s script writes (the reachable set is every page, and /spin with ``spin``)."""
    links = [f"/p/{child}" for child in (2 * page + 1, 2 * page + 2) if child < pages]
    return links + (["/spin"] if spin and page == 0 else [])


def route(path: str, pages: int, canary: str, spin: bool) -> Answer | None:
    """(status, headers, body) of a path, or None for paths this profile does not serve."""
    html = [("Content-Type", "text/html; charset=utf-8")]
    if path == "/" or (path == "/spin" and spin):
        return 200, html, SHELL.encode()
    if path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) < pages:
        return 200, html, SHELL.encode()
    if path == "/app.js":
        outside = json.dumps(f"http://{canary or '127.0.0.1:9'}/from-a-script")
        script = APP_JS % {"outside": outside, "private": json.dumps(PRIVATE_TARGET)}
        return 200, [("Content-Type", "text/javascript")], script.encode()
    if path.startswith("/data/") and path.endswith(".json"):
        number = path[len("/data/") : -len(".json")]
        if number.isdigit() and int(number) < pages:
            page = int(number)
            body = {"links": links_of(page, pages, spin), "text": f"Page {page}, built by its script."}
            return 200, [("Content-Type", "application/json")], json.dumps(body).encode()
    if path == "/tick" and spin:
        return 200, [("Content-Type", "application/json")], b"{}"
    return None

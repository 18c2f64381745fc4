"""A report as a reader sees it: opened in headless Chromium at a given window size, with a
script that measures the page (sizes, positions, computed styles) and hands its findings
back as JSON."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from test_report import chromium

_FOUND = re.compile(r'<pre id="measured">(.*?)</pre>', re.S)


def measure(page: str, script: str, width: int, scratch: Path, height: int = 1200) -> Any:
    """Open the HTML `page` in a window `width` x `height` px and run `script`, the body of a
    JavaScript function whose return value (anything JSON can hold) is handed back. It runs
    after the page's own scripts; `scratch` is an empty folder for the page and the
    browser's profile."""
    probe = (
        "<script>(function () { var found; try { found = (function () {" + script + "})(); }"
        " catch (err) { found = {error: String(err)}; }"
        ' var out = document.createElement("pre"); out.id = "measured";'
        " out.textContent = JSON.stringify(found); document.body.appendChild(out); })();"
        "</script></body>"
    )
    head, _, tail = page.rpartition("</body>")
    path = scratch / f"measured-{width}.html"
    path.write_text(head + probe + tail, encoding="utf-8")
    done = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={scratch / f'profile-{width}'}", f"--window-size={width},{height}",
         "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    found = _FOUND.search(done.stdout)
    assert found is not None, done.stderr[-2000:]
    value = json.loads(html.unescape(found.group(1)))
    assert not (isinstance(value, dict) and "error" in value), value
    return value

"""The docs' before/after pictures of the page in a MkDocs Material site (docs/img/site-before.png,
site-after.png): the realistic library of `factories.realistic_library` (600 papers), its exports built
into a Material site as docs/publishing.md lays it out, opened in headless Chromium at 1280×820 and shot
at the section `GPU / Kernels / Attention` (the sidebar lists the page's sections).

    python tests/site_screenshots.py before OLD_SOURCE docs/img/site-before.png
    python tests/site_screenshots.py after . docs/img/site-after.png

`before` syncs with the defaults, run by the zotsync whose source tree is OLD_SOURCE (a `git worktree
add` of an earlier commit); `after` with `factories.PUBLISHED_SETTINGS`. Then shrink each with
`pngquant --quality 60-85`. Not a test: the browser tests check the same site (tests/test_publish_site.py).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from factories import PUBLISHED_SETTINGS, realistic_library, write_site
from playwright.sync_api import sync_playwright

# Runs the zotsync of a given source tree, not the one installed (an editable install's finder would win).
SHIM = (
    "import sys; sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
    "sys.path.insert(0, sys.argv.pop(1)); from zotsync.cli import main; sys.exit(main(sys.argv[1:]))"
)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def shoot(which: str, source: Path, output: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix=f"zotsync-site-{which}-"))
    config = write_site(folder, realistic_library(papers=600), PUBLISHED_SETTINGS if which == "after" else "")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    zotsync = [sys.executable, "-c", SHIM, str(source.resolve())]
    subprocess.run([*zotsync, "-q", "--config", str(config), "sync"], check=True, env=env)
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "--site-dir", str(folder / "site")],
        cwd=folder,
        check=True,
        env=env,
    )
    handler = functools.partial(_Quiet, directory=str(folder / "site"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 820})
            page.goto(f"http://127.0.0.1:{server.server_port}/reading-list/catalog/")
            page.evaluate(
                """() => {
                  const h = [...document.querySelectorAll('article h2')]
                    .find(e => e.textContent.startsWith('GPU / Kernels / Attention'));
                  window.scrollTo(0, h.getBoundingClientRect().top + window.scrollY - 280);
                }"""
            )
            page.wait_for_timeout(300)
            page.screenshot(path=str(output))
            browser.close()
    finally:
        server.shutdown()


if __name__ == "__main__":
    shoot(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))

"""The built knowledge base in real headless Chromium with networking off.

Builds THE SHIPPED knowledge base (``sessions/``) once it has sessions, else the planted factory
knowledge base; serves the HTML on 127.0.0.1; Chromium runs with a dead proxy for every
non-loopback host and DNS mapped to nothing. Checks: pages render, charts are visible SVG
images, Material's search finds a backend name, no console errors, every request stayed on
127.0.0.1, planted scripts never ran. Also opens the site from file:// and searches there (the
offline hook's path). Screenshots go to tests/artifacts/ for people to look at.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

import kb_factory
from conftest import REPO
from logkit.builder import build
from logkit.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = REPO / "tests" / "artifacts"

if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    pytest.skip("needs Debian's chromium and chromedriver (scripts/setup.sh --test)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def _shipped() -> Path | None:
    root = REPO / "sessions"
    return root if Store(root).session_ids() else None


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    sessions = _shipped()
    if sessions is None:
        sessions = root / "sessions"
        kb_factory.realistic(sessions, planted=True)
    build(sessions, root / "docs", root / "out", config=REPO / "mkdocs.yml")
    return root / "out"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server(built: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(built))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tmp_path_factory.mktemp("chrome-profile")
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                "--window-size=1280,900", "--allow-file-access-from-files",
                # networking off: every non-loopback host goes to a dead proxy, and no name resolves
                "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = webdriver.ChromeService(executable_path=str(CHROMEDRIVER))
    drv = webdriver.Chrome(options=options, service=service)
    drv.set_page_load_timeout(30)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield drv
    drv.quit()


def _requests(drv: object) -> list[str]:
    urls = []
    for entry in drv.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def _severe(drv: object) -> list[str]:
    return [e["message"] for e in drv.get_log("browser") if e["level"] == "SEVERE"]


def _open(drv: object, url: str, shot: str | None = None) -> None:
    drv.get(url)
    WebDriverWait(drv, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")
    assert drv.find_element(By.CSS_SELECTOR, "article.md-content__inner h1").text.strip()
    assert drv.execute_script("return window.__pwned") is None, "a planted script ran"
    if shot:
        time.sleep(0.3)
        drv.save_screenshot(str(ARTIFACTS / shot))


def _first_link(drv: object, url: str, contains: str) -> str:
    """The first link of the page's article to another page whose URL contains ``contains``."""
    drv.get(url)
    links = [a.get_attribute("href") for a in drv.find_elements(By.CSS_SELECTOR, "article a")]
    found = next((h for h in links if h and contains in h and "#" not in h and h != url), None)
    assert found, f"{url} links to no page under {contains} (is the knowledge base empty there?)"
    return found


def _search(drv: object, term: str) -> None:
    box = drv.find_element(By.CSS_SELECTOR, "input.md-search__input")
    box.click()
    box.send_keys(term)
    WebDriverWait(drv, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))


def test_pages_charts_search_offline(driver: object, server: str) -> None:
    drv = driver
    _requests(drv), _severe(drv)  # drop whatever start-up logged
    _open(drv, server + "index.html", "home.png")
    decision = _first_link(drv, server + "decisions/index.html", "/decisions/DR-")
    _open(drv, decision, "decision.png")
    _open(drv, server + "backends/index.html", "matrix.png")
    assert drv.find_elements(By.CSS_SELECTOR, "article table td")
    session = _first_link(drv, server + "sessions/index.html", "/sessions/")
    _open(drv, session, "session.png")
    assert drv.find_elements(By.CSS_SELECTOR, "article pre code")

    metrics = _first_link(drv, server + "metrics/index.html", "/metrics/")
    _open(drv, metrics, "metrics.png")
    charts = drv.find_elements(By.CSS_SELECTOR, "figure.logkit-chart img")
    assert charts, "no chart on the metrics page"
    for img in charts:
        size = drv.execute_script("return [arguments[0].naturalWidth, arguments[0].getBoundingClientRect().height]", img)
        assert img.get_attribute("src").endswith(".svg") and size[0] > 0 and size[1] > 0

    # Material's search (a web worker over search_index.json) finds a backend name
    drv.get(server + "index.html")
    WebDriverWait(drv, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")
    _search(drv, "flashinfer_cutlass")
    drv.save_screenshot(str(ARTIFACTS / "search.png"))

    errors = _severe(drv)
    assert errors == [], errors
    hosts = {urlparse(u).hostname for u in _requests(drv) if urlparse(u).scheme in ("http", "https", "ws", "wss")}
    assert hosts <= {"127.0.0.1"}, f"requests left the machine: {hosts}"


def test_file_url_search(driver: object, built: Path) -> None:
    """Opened straight from disk: the inlined index and the shipped polyfill (logkit/builder/offline_hook.py)."""
    drv = driver
    _requests(drv), _severe(drv)
    _open(drv, (built / "index.html").as_uri())
    _search(drv, "flashinfer_cutlass")
    hosts = {urlparse(u).hostname for u in _requests(drv) if urlparse(u).scheme in ("http", "https")}
    assert hosts == set(), f"requests left the machine: {hosts}"
    assert _severe(drv) == []

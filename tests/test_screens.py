"""Golden screenshots of every page kind, and the layout checked in Chromium as a reader meets it.

Builds THE SHIPPED knowledge base (``sessions/``) plus one recorded sweep (tests/test_sweep_site.py's) and opens
one page of each kind (home, decision, configuration, matrix, negative result, session, metrics, sweep, and the
index pages) at 1400 px (desktop) and 390 px (a phone). On each:

* nothing makes the page scroll sideways: every element of the content lies inside the viewport, unless it
  is inside a box that scrolls on its own (a wide table in Material's scroll wrapper) which does;
* no word of a table cell is broken across lines inside an identifier (session ids, flags,
  backend values, model names: a word of letters, digits and ``_ - . / = : +``);
* the full-page screenshot matches its golden (``tests/golden/screens/<kind>-<width>.png``): same
  size, and at most 1 % of the pixels differ by more than 48 in a channel (font anti-aliasing).

Screenshots of this run go to ``tests/artifacts/screens/`` (and a ``-diff.png`` where a golden
differs). After a deliberate change of the site's look, look at them, then regenerate the goldens:
``LOGKIT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_screens.py``.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO
from logkit.builder import build

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
GOLDENS = REPO / "tests" / "golden" / "screens"
ARTIFACTS = REPO / "tests" / "artifacts" / "screens"
UPDATE = os.environ.get("LOGKIT_UPDATE_GOLDEN") == "1"
WIDTHS = (1400, 390)
#: page kind -> its page in the shipped knowledge base (a glob under the site root)
PAGES = {
    "home": "index.html",
    "decision": "decisions/DR-0002/index.html",
    "configuration": "configs/glm-5-nvfp4-*/index.html",
    "matrix": "backends/index.html",
    "session": "sessions/2026-11-15-glm5-nvfp4-nan-at-decode/index.html",
    "metrics": "metrics/qwen3-6-*/index.html",
    "sweep": "sweeps/SW-*/index.html",
    "negative": "backends/moe-runner-backend-flashinfer-trtllm-sm120-glm-*/index.html",
    "decisions": "decisions/index.html",
    "configurations": "configs/index.html",
    "sessions": "sessions/index.html",
    "metrics-index": "metrics/index.html",
    "sweeps": "sweeps/index.html",
    "signatures": "signatures/index.html",
    "tags": "tags.html",
}
#: page kinds the shipped knowledge base has none of -> their page in the realistic test knowledge base
#: (tests/kb_factory.py), built beside it
REALISTIC = {
    "signature": "signatures/*/index.html",
    # line charts, which the builder draws itself (builder/svgchart.py), not vl-convert
    "metrics-lines": "metrics/zai-org-glm-5-nvfp4-*/index.html",
}

if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    pytest.skip("needs Debian's chromium and chromedriver (scripts/setup.sh --test)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver")

PROBE = """
const vw = document.documentElement.clientWidth;
const out = {page_scroll: document.documentElement.scrollWidth - vw, wide: [], broken: []};
function scrollsInside(el) {
  for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
    const style = getComputedStyle(a);
    if (style.display.includes('table')) continue;  // overflow does not apply to table boxes
    if (['auto', 'scroll', 'hidden'].includes(style.overflowX)) {
      const r = a.getBoundingClientRect();
      if (r.right <= vw + 1 && r.left >= -1) return true;  // clipped by a box that fits: it scrolls there
    }
  }
  return false;
}
for (const el of document.querySelectorAll('.md-content *')) {  // Material's off-canvas drawer and search are meant to be off screen
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
  if ((r.right > vw + 1 || r.left < -1) && !scrollsInside(el)) {
    out.wide.push(`${el.tagName.toLowerCase()}.${el.className} right=${Math.round(r.right)}`);
  }
}
const word = /[A-Za-z0-9_.\\/=:+-]{2,}/g;
for (const cell of document.querySelectorAll('article td, article th')) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    let m; word.lastIndex = 0;
    while ((m = word.exec(n.data)) !== null) {
      const range = document.createRange();
      range.setStart(n, m.index); range.setEnd(n, m.index + m[0].length);
      const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) out.broken.push(m[0]);
    }
  }
}
return out;
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _serve(out: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    handler = functools.partial(_Quiet, directory=str(out))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}/", httpd


@pytest.fixture(scope="module")
def realistic_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    import kb_factory

    root = tmp_path_factory.mktemp("screens-realistic")
    kb_factory.realistic(root / "sessions")
    env_url = os.environ.pop("LOGKIT_SITE_URL", None)
    try:
        build(root / "sessions", root / "docs", root / "out", config=REPO / "mkdocs.yml")
    finally:
        if env_url is not None:
            os.environ["LOGKIT_SITE_URL"] = env_url
    base, httpd = _serve(root / "out")
    yield base, root / "out"
    httpd.shutdown()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    from test_sweep_site import make_sweep

    root = tmp_path_factory.mktemp("screens")
    shutil.copytree(REPO / "sessions", root / "sessions", ignore=shutil.ignore_patterns(".*"))
    make_sweep(root / "sessions")
    env_url = os.environ.pop("LOGKIT_SITE_URL", None)
    try:
        build(root / "sessions", root / "docs", root / "out", config=REPO / "mkdocs.yml")
    finally:
        if env_url is not None:
            os.environ["LOGKIT_SITE_URL"] = env_url
    handler = functools.partial(_Quiet, directory=str(root / "out"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", root / "out"
    httpd.shutdown()


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tmp_path_factory.mktemp("chrome-profile")
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                "--force-device-scale-factor=1", "--disable-background-networking", f"--user-data-dir={profile}",
                "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    drv = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))
    drv.set_page_load_timeout(30)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield drv
    drv.quit()


def _settled(drv: object) -> None:
    """Wait until the page, its images (the charts) and its fonts are loaded, and layout is done."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(drv, 30).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && document.fonts.status === 'loaded' && "
        "Array.from(document.images).every(i => i.complete)"))
    time.sleep(0.3)  # one more layout pass after a resize


def _page(out: Path, pattern: str) -> str:
    found = sorted(out.glob(pattern))
    assert found, f"no page {pattern} in the built site"
    return found[0].relative_to(out).as_posix()


def _compare(shot: Path, golden: Path) -> str | None:
    """None when ``shot`` matches ``golden``, else why not (and a diff image next to the shot)."""
    image = pytest.importorskip("PIL.Image")
    np = pytest.importorskip("numpy")
    a = np.asarray(image.open(shot).convert("RGB"), dtype=np.int16)
    b = np.asarray(image.open(golden).convert("RGB"), dtype=np.int16)
    if a.shape != b.shape:
        return f"size {a.shape[1]}x{a.shape[0]} differs from the golden's {b.shape[1]}x{b.shape[0]}"
    differs = (np.abs(a - b) > 48).any(axis=2)
    share = float(differs.mean())
    if share <= 0.01:
        return None
    diff = np.where(differs[..., None], np.array([255, 0, 0], dtype=np.int16), a // 3 + 170).astype(np.uint8)
    image.fromarray(diff).save(shot.with_name(shot.stem + "-diff.png"))
    return f"{share:.1%} of the pixels differ"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", [*PAGES, *REALISTIC])
def test_page_kind_fits_the_screen_and_matches_its_golden(kind: str, width: int, request: pytest.FixtureRequest,
                                                          driver) -> None:
    base, out = request.getfixturevalue("realistic_site" if kind in REALISTIC else "site")
    driver.set_window_size(width, 900)
    driver.get(base + _page(out, {**PAGES, **REALISTIC}[kind]))
    _settled(driver)
    assert driver.execute_script("return document.documentElement.clientWidth") == width
    layout = driver.execute_script(PROBE)
    height = min(int(driver.execute_script("return document.documentElement.scrollHeight")), 12000)
    driver.set_window_size(width, height)
    _settled(driver)
    shot = ARTIFACTS / f"{kind}-{width}.png"
    driver.save_screenshot(str(shot))
    assert layout["page_scroll"] <= 0, f"{kind} at {width}px scrolls sideways by {layout['page_scroll']}px"
    assert layout["wide"] == [], f"{kind} at {width}px: wider than the viewport: {layout['wide'][:8]}"
    assert layout["broken"] == [], f"{kind} at {width}px: identifiers broken across lines: {layout['broken'][:8]}"
    golden = GOLDENS / shot.name
    if UPDATE or not golden.exists():
        GOLDENS.mkdir(parents=True, exist_ok=True)
        image = pytest.importorskip("PIL.Image")
        # 256 colours: a quarter of the size in git, well inside the comparison's tolerance
        image.open(shot).convert("RGB").quantize(256).save(golden, optimize=True)
        if not UPDATE:
            pytest.fail(f"no golden {golden.relative_to(REPO)} yet: written from this run; look at it and commit it")
        return
    why = _compare(shot, golden)
    assert why is None, (f"{kind} at {width}px: {why}; look at {shot.relative_to(REPO)} (and -diff.png), then "
                         "regenerate: LOGKIT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_screens.py")

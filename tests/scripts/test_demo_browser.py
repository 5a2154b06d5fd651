"""scripts/demo.py served as a Hub Space serves it, driven in a real headless Chromium: type a sentence, press
Translate, read the translation and see the attention picture.

Opt-in (a browser and a server take seconds): HF_SEQMODELS_BROWSER_TESTS=1, a Chromium on PATH (Debian:
`apt-get install chromium`; playwright's own browser download needs the internet, so the system's is used) and
playwright (the dev extra).
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.scripts.test_use_saved_models import generate_alone, translator, translator_dir  # noqa: F401 (fixtures)

DEMO = Path(__file__).resolve().parents[2] / "scripts" / "demo.py"
CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)

pytestmark = [
    pytest.mark.skipif(os.environ.get("HF_SEQMODELS_BROWSER_TESTS") != "1",
                       reason="browser tests are opt-in: set HF_SEQMODELS_BROWSER_TESTS=1"),
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH (Debian: apt-get install chromium)"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_served(url: str, server: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"scripts/demo.py exited with {server.returncode}:\n{server.stdout.read()}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"scripts/demo.py did not serve {url} within {seconds} s")


@pytest.fixture
def demo_url(translator_dir):
    port = free_port()
    environment = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen([sys.executable, str(DEMO), str(translator_dir), "--server_port", str(port)],
                              env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_until_served(url, server)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_demo_page_translates_in_a_browser(demo_url, translator):
    sync_api = pytest.importorskip("playwright.sync_api")
    expected = generate_alone(translator, "a dog runs")[0][0]
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page()
            page.goto(demo_url)
            picture = page.locator("#attention img")
            sync_api.expect(page.get_by_role("button", name="Translate")).to_be_visible(timeout=30_000)
            sync_api.expect(picture).to_have_count(0)  # no picture before a translation
            page.get_by_label("Sentence").fill("a dog runs")
            page.get_by_role("button", name="Translate").click()
            sync_api.expect(page.get_by_label("Translation")).to_have_value(expected, timeout=30_000)
            sync_api.expect(picture).to_be_visible(timeout=30_000)
            assert picture.evaluate("image => image.naturalWidth") > 100
        finally:
            browser.close()

"""scripts/demo.py served as a Hub Space serves it, driven in a real headless Chromium: type a sentence, press
Translate, read the translation, see the attention picture, and read the page's words as a user does.

It runs where a Chromium is on PATH (Debian: `apt-get install chromium`; playwright's own browser download needs the
internet, so the system's is launched by path) and playwright (the dev extra) is installed, and is skipped
elsewhere; with HF_SEQMODELS_BROWSER_TESTS=required, as .ci/run sets after installing Chromium, a missing browser
or playwright fails it instead, so that CI cannot skip it unnoticed.
"""

import importlib.util
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
REQUIRED = os.environ.get("HF_SEQMODELS_BROWSER_TESTS") == "required"
# Headless as root in a container (no sandbox there), with no GPU and a closed network: without the networking
# switches Chromium keeps opening connections that are refused.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chromium() -> str:
    """The Chromium to launch; without one or without playwright the test is skipped (before the page is served),
    or fails when HF_SEQMODELS_BROWSER_TESTS=required."""
    missing = ("no Chromium on PATH (Debian: apt-get install chromium)" if CHROMIUM is None
               else "no playwright (pip install -e '.[dev]')" if importlib.util.find_spec("playwright") is None
               else None)
    if missing and REQUIRED:
        pytest.fail(f"HF_SEQMODELS_BROWSER_TESTS=required: {missing}")
    if missing:
        pytest.skip(missing)
    return CHROMIUM


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


def test_demo_page_translates_in_a_browser(chromium, demo_url, translator, tmp_path):
    from playwright import sync_api

    expected = generate_alone(translator, "a dog runs")[0][0]
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(tmp_path / "profile", executable_path=chromium,
                                                                args=CHROMIUM_ARGS)  # a fresh --user-data-dir
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
            assert picture.evaluate("image => image.complete && image.naturalWidth") > 100
            fields = page.locator("textarea, input").evaluate_all("fields => fields.map(field => field.value)")
            text = "\n".join([page.locator("body").inner_text(), *fields])  # what the page shows, typed text too
        finally:
            browser.close()
    assert "an attention seq2seq (GRU) model" in text
    assert "▁" not in text and "attention_seq2seq" not in text

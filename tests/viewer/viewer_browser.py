"""A real headless Chromium driving the viewer page (Debian's chromium + chromium-driver, via
Selenium). ``chromium_or_skip()`` skips a test with the reason when either is missing."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import time

import numpy as np
import pytest

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER = ("/usr/bin/chromedriver",)
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
         "--enable-unsafe-swiftshader", "--hide-scrollbars", "--mute-audio")


def _first(paths):
    return next((p for p in paths if os.path.exists(p)), None)


def chromium_or_skip():
    """(chromium, chromedriver) paths, or skip the test naming what is missing."""
    pytest.importorskip("selenium", reason="selenium is not installed (pip install 'polyphys[test]')")
    pytest.importorskip("viser", reason="viser is not installed (pip install 'polyphys[viewer]')")
    browser = _first(CHROMIUM) or shutil.which("chromium")
    driver = _first(DRIVER) or shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.skip("headless Chromium is not installed: apt-get install -y chromium chromium-driver "
                    f"(found chromium={browser}, chromedriver={driver})")
    return browser, driver


class Browser:
    """One Chromium page of ``width`` x ``height`` CSS pixels with a fresh profile."""

    def __init__(self, width: int = 960, height: int = 640):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service

        browser, driver = chromium_or_skip()
        self.profile = tempfile.mkdtemp(prefix="polyphys-chromium-")
        opts = Options()
        opts.binary_location = browser
        for f in FLAGS:
            opts.add_argument(f)
        opts.add_argument(f"--user-data-dir={self.profile}")
        self.driver = webdriver.Chrome(options=opts, service=Service(driver))
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.width, self.height = width, height

    def open(self, url: str, server, timeout: float = 60.0) -> None:
        """Load the viewer page and wait until the server sees the client connected."""
        n0 = len(server.get_clients())
        self.driver.get(url)
        t0 = time.time()
        while len(server.get_clients()) <= n0:
            if time.time() - t0 > timeout:
                raise TimeoutError(f"the page at {url} did not connect within {timeout} s")
            time.sleep(0.2)

    def screenshot(self) -> np.ndarray:
        from PIL import Image

        png = self.driver.get_screenshot_as_png()
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))

    def save(self, path: str) -> None:
        self.driver.save_screenshot(path)

    def wait_stable(self, timeout: float = 20.0, settle: float = 0.4) -> np.ndarray:
        """Screenshots until two in a row (``settle`` s apart) are the same: the page has drawn."""
        t0 = time.time()
        prev = self.screenshot()
        while True:
            time.sleep(settle)
            cur = self.screenshot()
            if np.array_equal(cur, prev) or time.time() - t0 > timeout:
                return cur
            prev = cur

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

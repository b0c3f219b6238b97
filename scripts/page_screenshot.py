"""Redraw docs/walkthrough_page.png: the explainer's HTML page in headless Chromium, step 5 selected.

    python scripts/page_screenshot.py          # needs chromium, chromedriver and selenium

The PNG carries the page's fingerprint (a hash of the page's HTML) in its metadata, so
tests/test_readme.py can tell, without a browser, when the page changed and the picture is stale.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(HERE, "docs", "walkthrough_page.png")


def fingerprint() -> str:
    """A short hash of what the page shows at the chapter's size: its data (values by their shapes), style,
    script and the graph's layout (not matplotlib's SVG text, which differs between matplotlib versions)."""
    sys.path.insert(0, HERE)
    import json

    from tinyattn.explain import page
    from tinyattn.explain.graph import layout
    from tinyattn.explain.mha import MHA_GROUPS
    from tinyattn.explain.notebook import walkthrough

    w = walkthrough()
    data = page.page_data(w.steps, w.weights)
    # the values' last digits may differ between NumPy builds: their shapes stand in for them
    for step in data["steps"]:
        for g in step["grads"]:
            g["heat"] = [len(g["heat"]), len(g["heat"][0])]
    data["heads"] = [[len(h), len(h[0])] for h in data["heads"]]
    parts = [json.dumps(data), page._STYLE, page._SCRIPT, w.title, layout(w.steps, MHA_GROUPS).fingerprint()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def main() -> None:
    """Take the screenshot and write it with its fingerprint."""
    from PIL import Image, PngImagePlugin
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    sys.path.insert(0, HERE)
    from tinyattn.explain.notebook import walkthrough

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("google-chrome")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                 "--force-device-scale-factor=1"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "page.html")
        walkthrough().html(path)
        driver.get("file://" + path)
        driver.find_element("id", "node-step-5").click()
        png = driver.get_screenshot_as_png()
    driver.quit()
    info = PngImagePlugin.PngInfo()
    info.add_text("Description", f"tinyattn page {fingerprint()}")
    Image.open(io.BytesIO(png)).save(OUT, pnginfo=info, optimize=True)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

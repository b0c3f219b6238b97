"""The walkthrough page in a real headless Chromium: it loads without console errors, has one node per
backward step, shows a step's equation when its node is clicked, walks the backward in the engine's order
with Next, and renders something (a screenshot that is not blank), for every option combination."""

import io
import itertools
import os
import re
import shutil

import numpy as np
import pytest

from tinyattn.explain import mha as explain
from tinyattn.explain.notebook import walkthrough

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")
REQUIRED = os.environ.get("TINYATTN_REQUIRE_BROWSER") == "1"  # CI: a missing browser fails, it does not skip

COMBINATIONS = [
    [*fused, *mask, *kv]
    for fused, mask, kv in itertools.product([[], ["--fused"]], [[], ["--mask", "causal"], ["--mask", "padding"]],
                                             [[], ["--kv-len", "7"]])
] + [["--batch", "2", "--seq", "4", "--d-model", "8", "--heads", "4", "--seed", "3"]]


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        if REQUIRED:
            pytest.fail(f"TINYATTN_REQUIRE_BROWSER=1 but chromium ({CHROMIUM}) or chromedriver ({DRIVER}) is missing")
        pytest.skip("headless Chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        if REQUIRED:
            pytest.fail("TINYATTN_REQUIRE_BROWSER=1 but selenium is not installed")
        pytest.skip("selenium is not installed (pip install selenium)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def open_page(browser, tmp_path, argv):
    path = tmp_path / "page.html"
    explain.main([*argv, "--html", str(path)])
    browser.get(path.as_uri())
    return path


def console_errors(browser):
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def step_count(argv):
    return len(explain.build(explain.parser().parse_args(argv))[2])


def nodes(browser):
    from selenium.webdriver.common.by import By

    return [el for el in browser.find_elements(By.CSS_SELECTOR, "#graph g[id^='node-step-']")
            if re.fullmatch(r"node-step-\d+", el.get_attribute("id"))]


@pytest.mark.parametrize("argv", COMBINATIONS, ids=" ".join)
def test_every_option_combination_loads_with_one_node_per_step(browser, tmp_path, argv, capsys):
    open_page(browser, tmp_path, argv)
    assert "Interactive page written to" in capsys.readouterr().out
    assert console_errors(browser) == []
    assert len(nodes(browser)) == step_count(argv)
    assert browser.find_element("id", "counter").text == f"{step_count(argv)} steps: click a node or press Next"


@pytest.mark.parametrize("argv", [[], ["--fused", "--mask", "causal"]], ids=" ".join)
def test_clicking_a_node_shows_that_steps_equation_and_code(browser, tmp_path, argv):
    open_page(browser, tmp_path, argv)
    steps = explain.build(explain.parser().parse_args(argv))[2]
    for step in (steps[0], steps[len(steps) // 2], steps[-1]):
        browser.find_element("id", f"node-step-{step.index}").click()
        assert browser.find_element("id", "equation").text == step.forward
        panel = browser.find_element("id", "panel").text
        for g in step.grads:
            assert g.formula in panel and str(tuple(g.shape)) in panel and g.source in panel
        assert "def backward" in panel  # the backward's own source lines
        assert browser.find_element("id", "counter").text == f"step {step.index} of {len(steps)}"
    assert console_errors(browser) == []


def test_next_walks_the_backward_in_the_engines_order(browser, tmp_path):
    open_page(browser, tmp_path, [])
    steps = explain.build(explain.parser().parse_args([]))[2]
    from selenium.webdriver.common.by import By

    for k in range(1, len(steps) + 1):
        browser.find_element("id", "next").click()
        current = browser.find_elements(By.CSS_SELECTOR, "#graph .current")
        assert [el.get_attribute("id") for el in current] == [f"node-step-{k}"], k
        assert browser.find_element("id", "equation").text == steps[k - 1].forward
        flowing = {el.get_attribute("id") for el in browser.find_elements(By.CSS_SELECTOR, "#graph .flow")}
        assert len([e for e in flowing if not e.endswith("-path")]) == len(steps[k - 1].grads)
    browser.find_element("id", "prev").click()
    assert browser.find_element("id", "counter").text == f"step {len(steps) - 1} of {len(steps)}"


def test_the_page_is_not_blank_and_shows_the_heads(browser, tmp_path):
    open_page(browser, tmp_path, [])
    browser.find_element("id", "node-step-5").click()
    import matplotlib.image

    shot = matplotlib.image.imread(io.BytesIO(browser.get_screenshot_as_png()))
    colours = np.unique((shot[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50 and shot[..., :3].std() > 0.05
    assert len(browser.find_elements("css selector", "#heads .heat")) == 2  # h = 2 attention maps


def test_the_page_is_self_contained(tmp_path):
    text = walkthrough().html()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<link" not in text and "@import" not in text and "<script src" not in text

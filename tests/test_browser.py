"""The course in a real browser: JupyterLab on localhost, driven by Debian's headless Chromium.

Notebook 4: types a guess of the bytes into the tiling explorer, reveals gpusim's answer, checks that the byte
count it shows is the one gpusim computes, that every widget image has at least as many pixels as it is shown
with (no blurry upscaling), then moves its block-size sliders one step each. Notebook 10: types the reference
solution of the first kernel puzzle into its template cell, runs it and the check, and sees it accepted.
Uses the Chromium and ChromeDriver on the PATH; skipped, saying so in pytest's summary, where they are
missing, unless GPUSIM_REQUIRE_BROWSER=1 (.ci/run, which installs them).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("selenium", reason="the course extra installs Selenium (pip install -e '.[course,test]')")
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

import gpusim  # noqa: E402
from gpusim_course.block_sliders import BLOCK_LABELS

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOK = "04_tiling.ipynb"
PUZZLES = "10_write_the_kernels.ipynb"
CHROMIUM, CHROMEDRIVER = ("chromium", "chromium-browser"), ("chromedriver",)  # Debian's and Ubuntu's names
CHROMIUM_FLAGS = (
    "--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update --disable-sync --window-size=1600,1000"
).split()
TOKEN = "gpusim-browser-test"
KERNEL_NAME = "gpusim test kernel"
HBM_SPAN = ".jp-OutputArea .gpusim-hbm-bytes"
SLIDER_HANDLE = (
    "//div[contains(@class, 'widget-slider')][.//label[normalize-space() = '{label}']]"
    "//div[contains(@class, 'noUi-handle')]"
)


def _on_path(names):
    return next((path for path in map(shutil.which, names) if path), None)


@pytest.fixture
def browser(tmp_path):
    chromium, chromedriver = _on_path(CHROMIUM), _on_path(CHROMEDRIVER)
    if not (chromium and chromedriver):
        missing = " and ".join(names[0] for names, path in ((CHROMIUM, chromium), (CHROMEDRIVER, chromedriver))
                               if not path)
        reason = (f"the real-browser test of the course did not run: no {missing} on the PATH "
                  "(Debian: sudo apt-get install chromium chromium-driver; .ci/run installs them)")
        if os.environ.get("GPUSIM_REQUIRE_BROWSER") == "1":
            pytest.fail(f"GPUSIM_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path / 'chromium'}"]:
        options.add_argument(flag)
    # A Service with a driver path keeps Selenium from running selenium-manager (which would download).
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def lab(tmp_path):
    """The URL of a JupyterLab serving a copy of notebooks/, with this Python as its kernel."""
    root, env = _jupyter_sandbox(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "jupyterlab.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
             "--port-retries=0", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}"],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_answers(f"{url}/api/status?token={TOKEN}", server, log)
        yield url
    finally:
        try:  # also shuts down the kernels, which run in sessions of their own
            shutdown = urllib.request.Request(f"{url}/api/shutdown?token={TOKEN}", method="POST")
            urllib.request.urlopen(shutdown, timeout=5)
            server.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            server.kill()
            server.wait()


def _jupyter_sandbox(tmp_path):
    """(root, env): a copy of notebooks/ and Jupyter dirs under tmp_path, so the repo and ~ are left untouched."""
    root, data, config = tmp_path / "notebooks", tmp_path / "jupyter-data", tmp_path / "jupyter-config"
    shutil.copytree(NOTEBOOKS, root)
    for name in (NOTEBOOK, PUZZLES):
        notebook = json.loads((root / name).read_text())
        # Saved outputs or widget state would show a stale HBM count before Run All replaces it.
        notebook["metadata"].pop("widgets", None)
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                cell["outputs"], cell["execution_count"] = [], None
        (root / name).write_text(json.dumps(notebook))
    kernelspec = data / "kernels" / notebook["metadata"].get("kernelspec", {}).get("name", "python3")
    kernelspec.mkdir(parents=True)
    (kernelspec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": KERNEL_NAME, "language": "python",
    }))
    # JupyterLab's settings (and workspaces) live in the config dir: no news toast over the notebook, no requests.
    settings = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    return root, os.environ | {
        "JUPYTER_PATH": str(data), "JUPYTER_DATA_DIR": str(data), "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"), "IPYTHONDIR": str(tmp_path / "ipython"),
    }


def _wait_until_answers(url, server, log, timeout=30):
    deadline = time.monotonic() + timeout
    while server.poll() is None and time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"JupyterLab did not answer at {url} within {timeout} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def screenshot(browser, tmp_path, capsys):
    """Saves what the browser shows when the test ends, passed or failed, scrolled to the HBM count."""
    yield
    path = tmp_path / "notebook4.png"
    for span in browser.find_elements(By.CSS_SELECTOR, HBM_SPAN):
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", span)
    browser.save_screenshot(str(path))
    if os.environ.get("GPUSIM_ARTIFACTS"):
        artifacts = Path(os.environ["GPUSIM_ARTIFACTS"])
        artifacts.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, artifacts / path.name)
    with capsys.disabled():
        print(f"\nscreenshot of notebook 4: {path}")


def _hbm_reading(driver):
    """(bytes shown, config) of the gpusim-hbm-bytes span, or None while it isn't rendered or is hidden."""
    spans = driver.find_elements(By.CSS_SELECTOR, HBM_SPAN)
    if not spans or not spans[0].is_displayed():
        return None
    assert len(spans) == 1, f"expected one {HBM_SPAN}, found {len(spans)}"
    text = spans[0].text
    assert re.fullmatch(r"\d{1,3}(,\d{3})*", text), f"HBM bytes shown as {text!r}"
    return int(text.replace(",", "")), json.loads(spans[0].get_attribute("data-config"))


def _simulated_hbm_bytes(config):
    r = gpusim.simulate(**config)
    return r.hbm_read_bytes + r.hbm_write_bytes


def _move_slider(driver, wait, name, before):
    """Moves the slider of `name` (labelled BLOCK_LABELS[name]) one step with the keyboard; returns the HBM
    reading that follows."""
    handle = wait.until(lambda d: d.find_element(By.XPATH, SLIDER_HANDLE.format(label=BLOCK_LABELS[name])))
    at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
    handle.send_keys(Keys.ARROW_LEFT if at_max else Keys.ARROW_RIGHT)
    shown, config = wait.until(lambda d: (now := _hbm_reading(d)) and now[1][name] != before[1][name] and now)
    assert {k: v for k, v in config.items() if k != name} == {k: v for k, v in before[1].items() if k != name}
    assert shown == _simulated_hbm_bytes(config), f"after moving {name}"
    return shown, config


def _open_and_run_all(browser, wait, lab, notebook):
    browser.get(f"{lab}/lab/tree/{notebook}?token={TOKEN}")
    # The status bar, not the toolbar's execution indicator: that one says idle before the kernel even exists.
    kernel_idle = f"//*[contains(@class, 'jp-StatusBar-TextItem')][. = '{KERNEL_NAME} | Idle']"
    wait.until(lambda d: d.find_element(By.XPATH, kernel_idle))
    browser.find_element(By.XPATH, "//li[contains(@class, 'lm-MenuBar-item')][normalize-space() = 'Run']").click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "li[data-command='runmenu:run-all']")).click()


GUESS = "//div[contains(@class, 'widget-text')][.//label[normalize-space() = 'your guess']]//input"
PREDICT = "//div[contains(@class, 'widget-checkbox')][.//*[normalize-space() = 'predict first']]//input"
IMAGE_SIZES = """return Array.from(document.querySelectorAll('.jp-OutputArea img'))
    .filter(img => img.clientWidth > 0).map(img => [img.naturalWidth, img.clientWidth, img.className]);"""


def test_notebook4_guess_reveal_and_block_sliders(browser, lab, screenshot):
    wait = WebDriverWait(browser, 30, ignored_exceptions=[StaleElementReferenceException])
    _open_and_run_all(browser, wait, lab, NOTEBOOK)
    guess = wait.until(lambda d: d.find_element(By.XPATH, GUESS))
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, HBM_SPAN))
    assert _hbm_reading(browser) is None  # the answer waits for a guess
    guess.send_keys("100 MiB", Keys.ENTER)
    first = reading = wait.until(_hbm_reading)
    assert first[0] == _simulated_hbm_bytes(first[1])
    assert browser.find_element(By.XPATH, "//*[starts-with(normalize-space(), \"Your guess 100 MiB against gpusim's\")]")

    sizes = browser.execute_script(IMAGE_SIZES)
    assert any("widget-image" in cls for _, _, cls in sizes), sizes
    for natural, shown, cls in sizes:  # rendered at the shown size or more: never stretched up, never blurry
        assert natural >= shown, (natural, shown, cls)

    browser.find_element(By.XPATH, PREDICT).click()  # untick "predict first": explore freely
    # block_kv sets FlashAttention-1's HBM traffic, block_q FlashAttention-2's: after moving both, it must differ.
    for name in ("block_kv", "block_q"):
        reading = _move_slider(browser, wait, name, reading)
    assert reading[0] != first[0]


def _type_code(driver, editor, code):
    """Type `code` into a cell's CodeMirror editor key by key, replacing what is there. After each Enter the
    editor indents the new line itself; Shift+Home selects that indentation so the line's own replaces it."""
    editor.click()
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).perform()
    for n, line in enumerate(code.splitlines()):
        if n:
            ActionChains(driver).send_keys(Keys.ENTER).key_down(Keys.SHIFT).send_keys(Keys.HOME).key_up(
                Keys.SHIFT).perform()
        ActionChains(driver).send_keys(line).perform()


def _cell_with(driver, text):
    cells = [c for c in driver.find_elements(By.CSS_SELECTOR, ".jp-CodeCell")
             if text in c.find_element(By.CSS_SELECTOR, ".cm-content").get_attribute("textContent")]
    assert len(cells) == 1, f"{len(cells)} code cells hold {text!r}"
    return cells[0]


def test_notebook10_a_kernel_typed_into_the_puzzle_is_accepted(browser, lab):
    from gpusim_course import puzzles

    wait = WebDriverWait(browser, 60, ignored_exceptions=[StaleElementReferenceException])
    _open_and_run_all(browser, wait, lab, PUZZLES)
    check = wait.until(lambda d: _cell_with(d, 'puzzles.check("online_softmax"'))
    wait.until(lambda d: "not yet" in check.find_element(By.CSS_SELECTOR, ".jp-OutputArea").text)
    template = _cell_with(browser, "def online_softmax(")
    solution = puzzles.solution_source("online_softmax")
    _type_code(browser, template.find_element(By.CSS_SELECTOR, ".cm-content"), solution)
    typed = template.find_element(By.CSS_SELECTOR, ".cm-content").get_attribute("innerText")
    assert [line.rstrip() for line in typed.splitlines()] == solution.splitlines()
    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()  # run, go on
    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()  # the check
    verdict = wait.until(lambda d: (text := _cell_with(d, 'puzzles.check("online_softmax"').find_element(
        By.CSS_SELECTOR, ".jp-OutputArea").text) and "right" in text and text)
    assert "equal gpusim's count to the byte" in verdict

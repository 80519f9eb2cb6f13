"""The course in a real browser: JupyterLab on localhost, driven by Debian's headless Chromium.

Notebook 4: types a guess of the bytes into the tiling explorer, reveals gpusim's answer, checks that the byte
count it shows is the one gpusim computes, that every widget image has at least as many pixels as it is shown
with (no blurry upscaling), then moves its block-size sliders one step each. Every other notebook with a
control (CONTROLS): moves one control and checks that the output it drives (its figure, or the verdict of a
multiple-choice guess) changed. Notebook 10: pastes the reference solution of the first kernel puzzle into its
template cell, runs it and the check, and sees it accepted. Notebook 11: after its guess, a scorecard link opens
its notebook at the section. One JupyterLab and one Chromium serve them all (module-scoped fixtures), in one page
that loads JupyterLab once, with a learner's settings (JupyterLab's default notebook windowing, which keeps every
cell in the page and leaves the offscreen ones unrendered); each test closes its notebooks, and their kernels are
shut down while the next one opens.
Formulas are left untypeset (MathJax's extension disabled): the tests read controls, outputs and headings.
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# make test's processes: one runs them all, with one JupyterLab and one Chromium (module-scoped fixtures).
pytestmark = pytest.mark.xdist_group("browser")
pytest.importorskip("selenium", reason="the course extra installs Selenium (pip install -e '.[course,test]')")
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import (NoSuchElementException, StaleElementReferenceException,  # noqa: E402
                                        TimeoutException)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

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

POLL_S = 0.1  # how often a wait looks again (Selenium's default, 0.5 s, costs 0.25 s a wait on average)


def waiting(driver, timeout_s, *ignored):
    """A WebDriverWait of timeout_s that looks every POLL_S, ignoring these exceptions while it waits."""
    return WebDriverWait(driver, timeout_s, poll_frequency=POLL_S, ignored_exceptions=ignored)


def _on_path(names):
    return next((path for path in map(shutil.which, names) if path), None)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("chromium")
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


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The URL of a JupyterLab serving a copy of notebooks/ (and results/, which some notebooks read), with this
    Python as its kernel."""
    tmp_path = tmp_path_factory.mktemp("lab")
    root, env = _jupyter_sandbox(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "jupyterlab.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
             "--port-retries=0", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
             # kernels on Unix sockets: no TCP port another test process's kernel could take first
             "--KernelManager.transport=ipc", f"--KernelManager.ip={tmp_path / 'kernel'}",
             # window.jupyterapp: the tests open each notebook in one page, without loading JupyterLab again
             "--LabApp.expose_app_in_browser=True"],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_answers(f"{url}/api/status?token={TOKEN}", server, log)
        yield url
    finally:
        failed = [f.exception() for f in SHUTTING_DOWN if f.exception()]  # the last test's shut-down, over
        SHUTTING_DOWN.clear()
        try:  # also shuts down the kernels, which run in sessions of their own
            shutdown = urllib.request.Request(f"{url}/api/shutdown?token={TOKEN}", method="POST")
            urllib.request.urlopen(shutdown, timeout=5)
            server.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            server.kill()
            server.wait()
        if failed:
            raise failed[0]


def _jupyter_sandbox(tmp_path):
    """(root, env): a copy of notebooks/ and Jupyter dirs under tmp_path, so the repo and ~ are left untouched."""
    root, data, config = tmp_path / "notebooks", tmp_path / "jupyter-data", tmp_path / "jupyter-config"
    shutil.copytree(NOTEBOOKS, root)
    shutil.copytree(NOTEBOOKS.parent / "results", tmp_path / "results")  # ../results, as in a checkout
    for name in [p.name for p in root.glob("[0-9][0-9]_*.ipynb")]:
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
    # No typesetting of formulas: no test reads one, and with every cell of 13 notebooks in the page it cost
    # Chromium half its CPU time (34 of 69 s on the 2-core machine), taken from the other test process.
    (config / "labconfig").mkdir()
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/mathjax-extension": True}}))
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


def _sessions(lab):
    """The server's sessions, once the last test's have been shut down."""
    while SHUTTING_DOWN:
        SHUTTING_DOWN.pop().result()
    return json.load(urllib.request.urlopen(f"{lab}/api/sessions?token={TOKEN}", timeout=10))


def _shut_down(lab, sessions):
    for session in sessions:
        request = urllib.request.Request(f"{lab}/api/sessions/{session['id']}?token={TOKEN}", method="DELETE")
        urllib.request.urlopen(request, timeout=30)


# A kernel takes 0.5-1.5 s to exit: the last test's are shut down while the next test opens its notebook, and
# whatever lists the sessions waits for that first (and fails if it failed).
SHUTTING_DOWN = []  # the futures of the shut-downs under way
SHUTTER = ThreadPoolExecutor(max_workers=1)


def _interrupt_kernels(lab):
    """Every kernel the server runs, interrupted: the cells still queued after the one a test needs are
    dropped (each execution stops on the interrupt's error), so moving a control waits for no other cell."""
    for session in _sessions(lab):
        request = urllib.request.Request(f"{lab}/api/kernels/{session['kernel']['id']}/interrupt?token={TOKEN}",
                                         method="POST")
        urllib.request.urlopen(request, timeout=30)


# The notebooks open in the page, closed without asking to save them (their outputs are the test's, not the
# learner's); nothing where the page is not JupyterLab's.
CLOSE_NOTEBOOKS = """const app = window.jupyterapp;
if (app) for (const w of Array.from(app.shell.widgets('main'))) { if (w.context) w.context.model.dirty = false; w.dispose(); }"""
OPEN_NOTEBOOK = """const [path, done] = arguments;
window.jupyterapp.restored.then(() => window.jupyterapp.commands.execute('docmanager:open', {path}))
    .then(() => done(true), error => done(String(error)));"""
APP_LOADED = "return Boolean(window.jupyterapp)"


@pytest.fixture
def one_kernel(lab, browser):
    """The test's notebooks closed and their kernels shut down after it (in the background: SHUTTING_DOWN), so
    that the next test's notebook has the one kernel."""
    yield
    browser.execute_script(CLOSE_NOTEBOOKS)
    SHUTTING_DOWN.append(SHUTTER.submit(_shut_down, lab, _sessions(lab)))


def _open_and_run_all(browser, wait, lab, notebook):
    if not browser.execute_script(APP_LOADED):  # JupyterLab loads once (reset: a fresh workspace), then stays
        browser.get(f"{lab}/lab?token={TOKEN}&reset")
        wait.until(lambda d: d.execute_script(APP_LOADED))
    assert browser.execute_async_script(OPEN_NOTEBOOK, notebook) is True
    # The toolbar's kernel name appears once the session has its kernel (the execution indicator alone says
    # idle before the kernel even exists); JupyterLab 4.6 has no kernel status in the status bar.
    kernel_idle = ("//*[contains(@class, 'jp-NotebookPanel')][not(contains(@class, 'lm-mod-hidden'))]"
                   f"//*[contains(@class, 'jp-KernelName')][normalize-space() = '{KERNEL_NAME}']"
                   "/ancestor::*[contains(@class, 'jp-Toolbar')]"
                   "//*[contains(@class, 'jp-Notebook-ExecutionIndicator')][@data-status = 'idle']")
    wait.until(lambda d: d.find_element(By.XPATH, kernel_idle))
    browser.find_element(By.XPATH, "//li[contains(@class, 'lm-MenuBar-item')][normalize-space() = 'Run']").click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "li[data-command='runmenu:run-all']")).click()


GUESS = "//div[contains(@class, 'widget-text')][.//label[normalize-space() = 'your guess']]//input"
PREDICT = "//div[contains(@class, 'widget-checkbox')][.//*[normalize-space() = 'predict first']]//input"
IMAGE_SIZES = """return Array.from(document.querySelectorAll('.jp-OutputArea img'))
    .filter(img => img.clientWidth > 0).map(img => [img.naturalWidth, img.clientWidth, img.className]);"""


def test_notebook4_guess_reveal_and_block_sliders(browser, lab, screenshot, one_kernel):
    wait = waiting(browser, 30, StaleElementReferenceException)
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


def _paste_code(driver, editor, code):
    """Put `code` into a cell's CodeMirror editor as a paste does, replacing what is there: one change to the
    editor's document, which the notebook's model follows (typing it key by key took 25 s of the suite)."""
    editor.click()
    driver.execute_script("const view = arguments[0].cmView.view;"
                          "view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: arguments[1]},"
                          " userEvent: 'input.paste'});", editor, code)


# One script a look, not a WebDriver call per cell: the waits look every POLL_S.
CELLS_WITH = """return [...document.querySelectorAll('.jp-CodeCell')]
    .filter(c => ((c.querySelector('.cm-content') || {}).textContent || '').includes(arguments[0]));"""


def _cell_with(driver, text, missing_ok=False):
    cells = driver.execute_script(CELLS_WITH, text)
    if missing_ok and not cells:
        return None  # not in the page yet: the caller's wait tries again
    assert len(cells) == 1, f"{len(cells)} code cells hold {text!r}"
    return cells[0]


def test_notebook10_a_kernel_pasted_into_the_puzzle_is_accepted(browser, lab, one_kernel):
    pytest.importorskip("triton", reason="the puzzles' checks run Triton's interpreter: Linux only")
    from gpusim_course import puzzles

    wait = waiting(browser, 60, StaleElementReferenceException)
    _open_and_run_all(browser, wait, lab, PUZZLES)
    check = wait.until(lambda d: _cell_with(d, 'puzzles.check("online_softmax"', missing_ok=True))
    wait.until(lambda d: "not yet" in check.find_element(By.CSS_SELECTOR, ".jp-OutputArea").text)
    template = _cell_with(browser, "def online_softmax(")
    solution = puzzles.solution_source("online_softmax")
    _paste_code(browser, template.find_element(By.CSS_SELECTOR, ".cm-content"), solution)
    pasted = template.find_element(By.CSS_SELECTOR, ".cm-content").get_attribute("innerText")
    assert [line.rstrip() for line in pasted.rstrip().splitlines()] == solution.rstrip().splitlines()
    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()  # run, go on
    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()  # the check
    verdict = wait.until(lambda d: (text := _cell_with(d, 'puzzles.check("online_softmax"').find_element(
        By.CSS_SELECTOR, ".jp-OutputArea").text) and "right" in text and text)
    assert "equal gpusim's count to the byte" in verdict


# notebook: (text of the code cell that shows the control, what to move, its label). Moving it must change the
# output it drives: the widget's figure, or for a multiple-choice guess ("choice") its revealed verdict. Notebook
# 11's (SCORECARD) is moved by the scorecard test, in the same run as its links.
SCORECARD = ("11_claims_scorecard.ipynb", "choice.wrong_question(rows)", "choice", "")
CONTROLS = {
    "01_memory_hierarchy.ipynb": ("widgets.RooflineExplorer(", "dropdown", "GPU"),
    "02_standard_attention.ipynb": ("widgets.TrafficExplorer(", "dropdown", "head_dim"),
    "03_online_softmax.ipynb": ("choice.bits_question()", "choice", ""),
    "05_flash1_vs_flash2.ipynb": ("widgets.FlashCompare(", "checkbox", "causal"),
    "06_real_kernels.ipynb": ("widgets.SdpaPickExplorer(", "dropdown", "input"),
    "07_hopper_and_beyond.ipynb": ("widgets.OverlapExplorer(", "dropdown", "head_dim"),
    "08_inference.ipynb": ("widgets.KVCalculator(", "dropdown", "model"),
    "09_training.ipynb": ("widgets.BackwardStepper(", "dropdown", "algo"),
    "10_write_the_kernels.ipynb": ("choice.causal_share_question()", "choice", ""),
    "12_appendix_provenance.ipynb": ("choice.time_miss_question(", "choice", ""),
    "13_beyond_one_gpu.ipynb": ("widgets.TimelineExplorer(", "dropdown", "strategy"),
}


# A figure's image source is a data URL of up to a few hundred KB: the page hashes it (FNV-1a) rather than send
# it to the test at every look.
OUTPUT_STATE = """const [cell, kind] = arguments;
if (kind === 'choice') {
  const feedback = cell.querySelector('.gpusim-choice-feedback');
  return feedback ? feedback.textContent.trim() : null;
}
const hash = text => { let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return `${text.length}:${h >>> 0}`; };
const images = [...cell.querySelectorAll('.jp-OutputArea img')].map(img => hash(img.src));
const texts = [...cell.querySelectorAll('.widget-html-content')].map(t => t.textContent);
return images.length ? [images, texts] : null;"""


def _output_state(driver, cell, kind):
    """What the control drives: the widget's figure (its image source, hashed: a new one per redrawn figure) and
    its readout's text (a figure can come out the same, pixel for pixel), or the multiple choice's feedback; None
    until the widget is shown."""
    return driver.execute_script(OUTPUT_STATE, cell, kind)


def _move(driver, cell, kind, label):
    if kind == "dropdown":
        select = Select(cell.find_element(By.XPATH, f".//div[contains(@class, 'widget-dropdown')]"
                                                    f"[.//label[normalize-space() = '{label}']]//select"))
        index = next(i for i, o in enumerate(select.options) if o.is_selected())
        select.select_by_index((index + 1) % len(select.options))
    elif kind == "checkbox":
        cell.find_element(By.XPATH, f".//div[contains(@class, 'widget-checkbox')]"
                                    f"[.//*[normalize-space() = '{label}']]//input").click()
    else:  # choice: pick the first option, then reveal
        cell.find_element(By.CSS_SELECTOR, ".widget-radio-box input[type=radio]").click()
        cell.find_element(By.XPATH, ".//button[normalize-space() = 'reveal']").click()


@pytest.mark.parametrize("notebook", sorted(CONTROLS))
def test_a_control_in_every_notebook_moves_its_output(browser, lab, one_kernel, notebook):
    if not (NOTEBOOKS / notebook).exists():
        pytest.skip(f"{notebook} is not in this tree")
    wait = waiting(browser, 90, StaleElementReferenceException, NoSuchElementException)
    _open_and_run_all(browser, wait, lab, notebook)
    _control_moves_its_output(browser, wait, lab, *CONTROLS[notebook])


def _control_moves_its_output(browser, wait, lab, marker, kind, label):
    """Once the control's cell shows its output, the kernel is interrupted (the cells still queued are not what
    the control drives), the control moved, and the output must change."""
    cell = wait.until(lambda d: _cell_with(d, marker, missing_ok=True))
    before = wait.until(lambda d: _output_state(d, _cell_with(d, marker), kind) or None)
    _interrupt_kernels(lab)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell)
    for attempt in (1, 2):  # a change the page drops while it is still busy is made once more
        _move(browser, _cell_with(browser, marker), kind, label)
        try:
            after = waiting(browser, 30 * attempt, StaleElementReferenceException).until(
                lambda d: (now := _output_state(d, _cell_with(d, marker), kind)) != before and now)
            break
        except TimeoutException:
            if attempt == 2:
                raise
    assert after and after != before


HEADING_TOP = """const panel = [...document.querySelectorAll('.jp-NotebookPanel')]
    .filter(p => !p.classList.contains('lm-mod-hidden') && p.querySelector('.jp-Notebook'))
    .find(p => [...p.querySelectorAll('h1, h2, h3')].some(h => h.textContent.includes(arguments[0])));
if (!panel) return null;
const heading = [...panel.querySelectorAll('h1, h2, h3')].find(h => h.textContent.includes(arguments[0]));
const box = panel.getBoundingClientRect();
return [heading.getBoundingClientRect().top - box.top, box.height];"""


def test_a_scorecard_link_opens_its_notebook_at_the_section(browser, lab, one_kernel):
    """Notebook 11's experiment links open a notebook not yet open scrolled to the section, not at its top: they
    name the heading's cell (`#cell-id=`), which JupyterLab scrolls to when it opens a notebook (with its default
    windowing; a heading's anchor it does not). Its multiple-choice guess, above the links, is moved first."""
    notebook, *control = SCORECARD
    wait = waiting(browser, 90, StaleElementReferenceException, NoSuchElementException)
    _open_and_run_all(browser, wait, lab, notebook)
    link = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".jp-OutputArea a[href*='05_flash1_vs_flash2.ipynb']"))
    section = link.text
    _control_moves_its_output(browser, wait, lab, *control)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.click()
    wait.until(lambda d: d.execute_script(HEADING_TOP, section))  # the notebook is open
    try:  # JupyterLab scrolls once the notebook's model is ready: the heading in the panel's upper half (its
        # windowing places the cell by the estimated heights of the cells above, which rendering then corrects)
        waiting(browser, 15).until(lambda d: (lambda top, height: 0 <= top < height / 2)(
            *d.execute_script(HEADING_TOP, section)))
    except TimeoutException:
        pytest.fail(f"the link to {section!r} left it at {browser.execute_script(HEADING_TOP, section)}")

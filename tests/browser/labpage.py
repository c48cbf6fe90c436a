"""Drive JupyterLab 4 in headless Chromium the way a person does: menus, toolbar buttons, keys, typing.

Only what a person does goes through the page (clicks on menus and buttons, keys, text typed into an editor);
waits read what a person sees (the kernel status indicator, the ``[*]`` prompts, the dirty mark of a tab).
Assertions read the page's text and images, and the notebook file that Lab saved.
"""
from __future__ import annotations

import itertools
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import nbformat
from selenium import webdriver
from selenium.common.exceptions import (ElementClickInterceptedException, ElementNotInteractableException,
                                        NoAlertPresentException, NoSuchElementException,
                                        StaleElementReferenceException, WebDriverException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

# The only flags Chromium is started with (plus a fresh --user-data-dir).
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")
WINDOW = (1400, 1000)
TRANSIENT = (StaleElementReferenceException, ElementClickInterceptedException, ElementNotInteractableException)


def start_chromium(chromium: Path, chromedriver: Path, profile: Path, log: Path) -> webdriver.Chrome:
    os.environ["SE_OFFLINE"] = "true"          # Selenium Manager must never try to download a driver or a browser
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.unhandled_prompt_behavior = "accept"      # "leave the page?" when a test moves on from a dirty notebook
    log.parent.mkdir(parents=True, exist_ok=True)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(chromedriver),
                                                               log_output=str(log)))
    driver.set_window_size(*WINDOW)
    return driver


class Timeout(AssertionError):
    pass


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    """Poll ``predicate`` until it returns something true; return that. Transient DOM errors count as 'not yet'."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except TRANSIENT + (NoSuchElementException,) as error:
            last_error = error
        if time.monotonic() > deadline:
            raise Timeout(f"timed out after {timeout:.0f} s waiting for {what}"
                          + (f" (last error: {last_error.__class__.__name__})" if last_error else ""))
        time.sleep(interval)


# JavaScript that reads what the person sees in the notebook in front (the visible notebook panel).
PANEL = "document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)')"
# Every read of the state also asks for a frame, as a screen does 60 times a second. Lab attaches the cells below the
# view in the browser's idle time (requestIdleCallback, 3 s timeout), and headless Chromium, which draws a frame only
# when asked, gave Lab's page idle time only after a frame: without one, Lab attached a chunk of cells every 3 s (its
# timeout), the more chunks the busier the machine. Page load to all 56 cells of kv_cache on the shared 2-core
# machine: 46 s at load 5, 63-83 s with 0.6 CPU at load 8-9 (past open_notebook's 60 s); with a frame per read 16 s
# and 27 s.
READ_STATE = f"""
requestAnimationFrame(() => {{}});
const panel = {PANEL};
if (!panel) return null;
const cells = [...panel.querySelectorAll('.jp-WindowedPanel-viewport > .jp-Cell')];
const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator')
    || document.querySelector('.jp-Notebook-ExecutionIndicator');
return {{
  status: indicator ? indicator.dataset.status : null,
  cells: cells.length,
  prompts: cells.map(c => c.classList.contains('jp-CodeCell')
      ? c.querySelector('.jp-InputArea-prompt').textContent.trim() : null),
  kernel: (panel.querySelector('.jp-Toolbar-kernelName') || {{}}).textContent || null,
  dirty: !!document.querySelector('.lm-TabBar-tab.lm-mod-current.jp-mod-dirty'),
}};
"""
READ_OUTPUTS = f"""
const panel = {PANEL};
return [...panel.querySelectorAll('.jp-WindowedPanel-viewport > .jp-Cell')].map(c => ({{
  text: [...c.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent).join('\\n'),
  mimes: [...c.querySelectorAll('.jp-OutputArea-output')].map(o => o.dataset.mimeType || ''),
  images: [...c.querySelectorAll('.jp-OutputArea-output img')]
      .filter(i => i.complete && i.naturalWidth > 100 && i.naturalHeight > 100).length,
}}));
"""
READ_EDITOR = "return [...arguments[0].querySelectorAll('.cm-line')].map(l => l.textContent).join('\\n');"


@dataclass
class Notebook:
    """A notebook open in Lab: its path under the server root and its cells as nbformat read them from disk."""
    path: str
    file: Path
    cells: list = field(default_factory=list)

    def index(self, grade_id: str) -> int:
        for i, cell in enumerate(self.cells):
            if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
                return i
        raise KeyError(grade_id)

    def grade_cells(self) -> list[int]:
        """Indices of the code grade cells (visible checks)."""
        return [i for i, c in enumerate(self.cells)
                if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]

    def code_cells(self) -> list[int]:
        return [i for i, c in enumerate(self.cells) if c.cell_type == "code"]


class Lab:
    _workspaces = itertools.count(1)

    def __init__(self, driver, server, screenshots: Path, test_name: str):
        self.driver, self.server, self.shots = driver, server, screenshots
        self.test = re.sub(r"[^A-Za-z0-9_.-]+", "-", test_name).strip("-")
        self.step = itertools.count(1)

    # ------------------------------------------------------------------------------------------ pages
    def goto(self, route: str = "") -> None:
        """Lab in a workspace of its own (nothing restored from an earlier test), at ``route`` (e.g. tree/a.ipynb)."""
        workspace = f"t{next(self._workspaces)}"
        sep = "&" if "?" in route else "?"
        self.driver.get(f"{self.server.url}/lab/workspaces/{workspace}/{route}{sep}token={self.server.token}")
        wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "#jp-main-dock-panel"), 60, "JupyterLab")
        wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-itemLabel"), 30, "the menu bar")

    def open_notebook(self, path: str) -> Notebook:
        """Open a notebook (by URL, as a bookmark would) and wait until all its cells are shown and the kernel is
        idle."""
        file = self.server.root / path
        nb = Notebook(path, file, nbformat.read(str(file), as_version=4).cells)
        self.goto("tree/" + quote(path))
        wait_for(lambda: (s := self.state()) and s["cells"] == len(nb.cells), 60,
                 f"the {len(nb.cells)} cells of {path}")
        wait_for(lambda: (s := self.state())["status"] == "idle" and s["kernel"] not in (None, "", "No Kernel"),
                 90, "the kernel to be idle")
        return nb

    def leave(self) -> None:
        try:
            self.driver.get("about:blank")
        except WebDriverException:
            try:
                self.driver.switch_to.alert.accept()
            except NoAlertPresentException:
                pass

    # ------------------------------------------------------------------------------------------ reading
    def state(self) -> dict | None:
        return self.driver.execute_script(READ_STATE)

    def outputs(self) -> list[dict]:
        """Per cell (markdown cells too, in order): the visible text of its outputs, their MIME types, images."""
        return self.driver.execute_script(READ_OUTPUTS)

    def cell(self, index: int):
        cells = self.driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) "
                                                           ".jp-WindowedPanel-viewport > .jp-Cell")
        return cells[index]

    def reveal(self, element, block: str = "start") -> None:
        """Scroll an element into view. Twice: Lab renders cells out of view with CSS content-visibility, so an
        off-screen cell only gets its real height once it is near the view, which moves what lies below it."""
        for pause in (0.2, 0.15):
            self.driver.execute_script(f"arguments[0].scrollIntoView({{block: '{block}'}})", element)
            time.sleep(pause)

    def scroll_to(self, index: int, block: str = "start"):
        element = self.cell(index)
        self.reveal(element, block)
        return element

    def show_output(self, index: int):
        """Scroll so that the end of a cell's output (where a traceback's message is) is at the bottom of the view."""
        element = self.scroll_to(index)
        target = (element.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-child") or [element])[-1]
        self.reveal(target, "end")
        return element

    def show_figure(self, index: int):
        """Scroll a cell's first image output to the middle of the view."""
        element = self.scroll_to(index)
        self.reveal(element.find_element(By.CSS_SELECTOR, ".jp-OutputArea-output img"), "center")
        return element

    def editor_text(self, index: int) -> str:
        return self.driver.execute_script(READ_EDITOR, self.cell(index).find_element(By.CSS_SELECTOR, ".cm-content"))

    def saved(self, nb: Notebook) -> nbformat.NotebookNode:
        return nbformat.read(str(nb.file), as_version=4)

    # ------------------------------------------------------------------------------------------ doing
    def click(self, by, selector, root=None, timeout: float = 30):
        def attempt():
            element = (root or self.driver).find_element(by, selector)
            element.click()
            return True
        wait_for(attempt, timeout, f"a clickable {selector}")

    def menu(self, label: str, command: str) -> None:
        """Open a menu of the menu bar and choose one of its items (by the item's command id)."""
        def attempt():
            if not self.driver.find_elements(By.CSS_SELECTOR, ".lm-Menu"):
                self.driver.find_element(
                    By.XPATH, f"//div[contains(@class,'lm-MenuBar-itemLabel') and text()='{label}']").click()
            item = self.driver.find_element(By.CSS_SELECTOR, f".lm-Menu li[data-command='{command}']")
            if item.get_attribute("aria-disabled") == "true":
                return False
            item.click()
            return True
        wait_for(attempt, 30, f"menu {label} > {command}")
        wait_for(lambda: not self.driver.find_elements(By.CSS_SELECTOR, ".lm-Menu"), 15, "the menu to close")

    def keys(self, *keys) -> None:
        ActionChains(self.driver).send_keys(*keys).perform()

    def shortcut(self, modifier, key) -> None:
        ActionChains(self.driver).key_down(modifier).send_keys(key).key_up(modifier).perform()

    def _click_until(self, index: int, selector: str, done, what: str, timeout: float = 30) -> None:
        """Click an element of cell ``index`` until ``done()`` says the click landed. A click can miss when the
        layout moves under it (cells near the view get their real height only once rendered): click again."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                element = self.cell(index)
                self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
                element.find_element(By.CSS_SELECTOR, selector).click()
            except TRANSIENT:
                pass
            for _ in range(10):
                if done():
                    return
                time.sleep(0.1)
            if time.monotonic() > deadline:
                raise Timeout(f"timed out after {timeout:.0f} s waiting for {what}")

    def _active(self, index: int, mode: str) -> bool:
        panel = self.driver.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
        return "jp-mod-active" in self.cell(index).get_attribute("class") and mode in panel.get_attribute("class")

    def select_cell(self, index: int) -> None:
        """Select a cell in command mode (a click on its prompt, as a person would)."""
        self._click_until(index, ".jp-InputPrompt", lambda: self._active(index, "jp-mod-commandMode"),
                          f"cell {index} selected")

    def type_into_cell(self, index: int, code: str) -> None:
        """Replace a code cell's text: click into its editor, select all, type (as one paste, without the editor's
        auto-indent), back to command mode. Checks that the editor then holds exactly ``code``."""
        self._click_until(index, ".cm-content", lambda: self._active(index, "jp-mod-editMode"),
                          f"cell {index} in edit mode")
        self.shortcut(Keys.CONTROL, "a")
        self.driver.execute_cdp_cmd("Input.insertText", {"text": code})
        wait_for(lambda: self.editor_text(index).rstrip() == code.rstrip(), 15, f"cell {index} to hold the new code")
        self.keys(Keys.ESCAPE)

    def write_markdown(self, index: int, text: str) -> None:
        """Replace a markdown cell's text: double-click the rendered cell, select all, type, Ctrl+Enter to render."""
        element = self.scroll_to(index, "center")
        target = element.find_element(By.CSS_SELECTOR, ".jp-MarkdownOutput, .jp-InputArea")
        ActionChains(self.driver).double_click(target).perform()
        wait_for(lambda: self.cell(index).find_elements(By.CSS_SELECTOR, ".cm-content"), 15, "the markdown editor")
        self.click(By.CSS_SELECTOR, ".cm-content", root=self.cell(index))
        self.shortcut(Keys.CONTROL, "a")
        self.driver.execute_cdp_cmd("Input.insertText", {"text": text})
        wait_for(lambda: self.editor_text(index).rstrip() == text.rstrip(), 15, f"cell {index} to hold the text")
        self.shortcut(Keys.CONTROL, Keys.ENTER)
        wait_for(lambda: "jp-mod-rendered" in self.cell(index).get_attribute("class"), 15, f"cell {index} rendered")

    def save(self) -> None:
        self.menu("File", "docmanager:save")
        wait_for(lambda: not self.state()["dirty"], 30, "the notebook to be saved")

    def wait_until_run(self, before: list, timeout: float = 180) -> dict:
        """After a run command: wait until the prompts changed, no cell is queued or running ([*]) and the kernel is
        idle, twice in a row (Lab marks queued cells before the kernel answers)."""
        def done():
            s = self.state()
            return (s["prompts"] != before and s["status"] == "idle"
                    and not any(p and "*" in p for p in s["prompts"]) and s)
        wait_for(done, timeout, "the run to finish")
        time.sleep(0.15)
        return wait_for(done, timeout, "the run to finish")

    def run_all(self) -> dict:
        """Run > Run All Cells, and wait until the kernel has finished."""
        before = self.state()["prompts"]
        self.menu("Run", "runmenu:run-all")
        return self.wait_until_run(before)

    def run_from(self, index: int) -> dict:
        """Select a cell, Run > Run Selected Cell and All Below, and wait until the kernel has finished."""
        self.select_cell(index)
        before = self.state()["prompts"]
        self.menu("Run", "notebook:run-all-below")
        return self.wait_until_run(before)

    def start_cell(self, index: int, timeout: float = 20, tries: int = 3) -> None:
        """Select a cell and press Shift+Enter without waiting for the run to end (a cell that ends its kernel):
        until its prompt shows it queued or run. On a busy machine a key press can be lost (the hub's g1 test once
        saw the cell selected, the kernel idle and the cell never run): pressed again, at most ``tries`` times."""
        for _ in range(tries):
            self.select_cell(index)
            before = self.state()["prompts"][index]
            self.shortcut(Keys.SHIFT, Keys.ENTER)
            try:
                wait_for(lambda before=before: (s := self.state()) and s["prompts"][index] != before, timeout,
                         f"cell {index} to start")
                return
            except Timeout:
                continue
        raise Timeout(f"cell {index} did not start after {tries} presses of Shift+Enter")

    def run_cell(self, index: int) -> dict:
        """Select a cell and press Shift+Enter."""
        self.select_cell(index)
        before = self.state()["prompts"]
        self.shortcut(Keys.SHIFT, Keys.ENTER)
        return self.wait_until_run(before)

    def run_through(self, nb: Notebook) -> list[int]:
        """Run All Cells; where the run stops at a cell that raised (Lab asks the kernel to stop on an error),
        go on as a student would, with Run Selected Cell and All Below from the first cell that did not run, until
        every code cell has run. Returns the indices of the cells where a run stopped.

        How far one run gets varies: ipykernel aborts only the requests already queued when a cell fails
        (``stop_on_error_timeout`` is 0), so on a busy machine a later cell can still run. Every pass re-runs all
        cells below its start, so the outputs at the end come from one in-order pass over each cell."""
        stops = []
        state = self.run_all()
        for _ in range(len(nb.cells)):
            pending = [i for i, p in enumerate(state["prompts"]) if p is not None and not re.search(r"\d", p)]
            if not pending:
                return stops
            stops.append(max(i for i in nb.code_cells() if i < pending[0]))
            state = self.run_from(pending[0])
        raise AssertionError(f"cells never ran: {pending}")

    # ------------------------------------------------------------------------------------------ nbgrader
    def validate(self) -> tuple[str, str]:
        """Click nbgrader's Validate button in the notebook toolbar (it saves, then validates on the server); wait for
        its dialog; return ("success" or "error", the dialog's text). The dialog stays open (``close_dialog``)."""
        self.start_validate()
        return self.validation_result()

    def start_validate(self) -> None:
        self.click(By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) jp-button.validate-button")

    def validation_result(self, timeout: float = 180) -> tuple[str, str]:
        """After ``start_validate``: nbgrader's dialog, ("success" or "error", its text)."""
        dialog = wait_for(lambda: self.driver.find_elements(
            By.CSS_SELECTOR, ".nbgrader-SuccessDialog, .nbgrader-ErrorDialog"), timeout,
            "nbgrader's validation dialog")[0]
        kind = "success" if "nbgrader-SuccessDialog" in dialog.get_attribute("class") else "error"
        return kind, wait_for(lambda: dialog.find_element(By.CSS_SELECTOR, "#validation-message").text, 30, "its text")

    def dialog_title(self) -> str:
        return self.driver.find_element(By.CSS_SELECTOR, ".jp-Dialog .jp-Dialog-header").text.strip()

    def close_dialog(self) -> None:
        self.click(By.CSS_SELECTOR, ".jp-Dialog button.jp-Dialog-button")
        wait_for(lambda: not self.driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog"), 30, "the dialog to close")

    # ------------------------------------------------------------------------------------------ screenshots
    def screenshot(self, name: str) -> Path:
        path = self.shots / f"{self.test}-{next(self.step):02d}-{name}.png"
        self.driver.save_screenshot(str(path))
        return path

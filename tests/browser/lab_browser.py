"""JupyterLab in a headless Chromium, driven by selenium: what an attendee does, scripted.

    with LabServer(workspace, env) as lab, Browser() as browser:
        page = browser.open_notebook(lab, "gluon/01_naive.ipynb")
        page.run_all(); page.save()

The server listens on 127.0.0.1 only, on a free port, behind a random token. Chromium runs
headless with a fresh profile and everything that would reach the network switched off
(the machines this runs on have none, and a blocked connection makes Chromium hang).
Notebook windowing is off (settings in a temporary JUPYTERLAB_SETTINGS_DIR) so every cell
is in the page, and a cell's prompt tells whether it ran.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1400,1000"]
WIDGET_ERROR = "Error displaying widget"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """`jupyter lab` of this environment, serving `root`."""

    def __init__(self, root: Path, env: dict | None = None, kernels: Path | None = None):
        self.root, self.port, self.token = Path(root), free_port(), secrets.token_hex(16)
        self.env = dict(os.environ if env is None else env)
        self.env.pop("MPLBACKEND", None)  # plots inline, as an attendee sees them
        self.settings = Path(tempfile.mkdtemp(prefix="lab-settings-"))
        tracker = self.settings / "@jupyterlab" / "notebook-extension"
        tracker.mkdir(parents=True)
        (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        news = self.settings / "@jupyterlab" / "apputils-extension"
        news.mkdir(parents=True)
        (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
        self.env["JUPYTERLAB_SETTINGS_DIR"] = str(self.settings)
        self.env["JUPYTERLAB_WORKSPACES_DIR"] = str(self.settings / "workspaces")
        if kernels is not None:  # extra kernelspecs (kernels/<name>/kernel.json below it)
            self.env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(kernels), self.env.get("JUPYTER_PATH")]))
        self.log = self.settings / "server.log"
        self.process = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "LabServer":
        command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                   f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                   f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
                   "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI containers run as root
            command.append("--allow-root")
        self.process = subprocess.Popen(command, env=self.env, stdout=self.log.open("w"),
                                        stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited:\n{self.log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2)
                return self
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"jupyter lab did not answer:\n{self.log.read_text()[-3000:]}")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.settings, ignore_errors=True)

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        for kernel in self.api("/api/kernels"):
            self.api(f"/api/kernels/{kernel['id']}", method="DELETE")


class Browser:
    """Headless Chromium through chromedriver."""

    def __enter__(self) -> "Browser":
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        for flag in CHROMIUM_FLAGS + [f"--user-data-dir={self.profile}"]:
            options.add_argument(flag)
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(120)
        return self

    def __exit__(self, *exc) -> None:
        self.driver.quit()
        shutil.rmtree(self.profile, ignore_errors=True)

    def open_notebook(self, lab: LabServer, path: str) -> "NotebookPage":
        self.driver.get(f"{lab.url}/lab/tree/{path}?token={lab.token}&reset")
        page = NotebookPage(self.driver, lab, path)
        page.wait_until_ready()
        return page


class NotebookPage:
    def __init__(self, driver, lab: LabServer, path: str):
        self.driver, self.lab, self.path = driver, lab, path

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def wait(self, condition, timeout: float, what: str, every: float = 1.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(every)
        raise TimeoutError(f"{self.path}: {what} (waited {timeout:.0f} s)")

    def wait_until_ready(self, timeout: float = 180) -> None:
        """Every cell of the file is shown and the notebook's kernel is idle."""
        cells = len(json.loads((self.lab.root / self.path).read_text())["cells"])
        self.wait(lambda: self.js("return document.querySelectorAll("
                                  "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell').length")
                  == cells, timeout, "the notebook did not open")
        self.wait(lambda: self.kernel_status() == "idle", timeout, "the kernel did not start")

    def kernel_status(self) -> str:
        """The execution state of this notebook's kernel, from the server."""
        for session in self.lab.api("/api/sessions"):
            if session.get("path") == self.path and session.get("kernel"):
                return session["kernel"].get("execution_state", "")
        return ""

    def command(self, menu: str, item: str) -> None:
        """Click a menu item, as a person would."""
        from selenium.webdriver.common.by import By
        self.driver.find_element(
            By.XPATH, f"//li[contains(@class,'lm-MenuBar-item')][.//div[text()='{menu}']]").click()
        self.wait(lambda: self.driver.find_elements(
            By.XPATH, f"//li[contains(@class,'lm-Menu-item')][.//div[text()='{item}']]"), 20,
            f"no menu item {menu} > {item}", every=0.2)[0].click()

    def prompts(self) -> list[str]:
        """Each code cell's input prompt ("[3]:", "[*]:", ""); "collapsed" for a cell whose
        input is collapsed (the setup cell) and whose prompt the page no longer updates:
        whether it ran is read from the saved file (`saved_problems`)."""
        return self.js("return [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) "
                       ".jp-CodeCell')].map(c => { const p = c.querySelector("
                       "'.jp-InputPrompt:not(.jp-Placeholder-prompt)'); const t = p ? "
                       "p.textContent.trim() : ''; return t || (c.querySelector("
                       "'.jp-InputPlaceholder') ? 'collapsed' : ''); });")

    def run_all(self, timeout: float = 1800) -> float:
        """Run > Run All Cells; wait until no cell is queued or running. Returns seconds."""
        start = time.monotonic()
        self.command("Run", "Run All Cells")
        self.wait(lambda: any("*" in p for p in self.prompts()) or self.all_ran(), 60,
                  "Run All started nothing", every=0.2)
        self.wait(lambda: not any("*" in p for p in self.prompts()) and self.kernel_status() == "idle",
                  timeout, "Run All did not finish", every=2)
        return time.monotonic() - start

    def all_ran(self) -> bool:
        prompts = self.prompts()
        return bool(prompts) and all(p == "collapsed" or p.strip("[]: ").isdigit() for p in prompts)

    def unexecuted(self) -> list[int]:
        return [i for i, p in enumerate(self.prompts())
                if p != "collapsed" and not p.strip("[]: ").isdigit()]

    def page_text(self) -> str:
        return self.js("return document.body.innerText;")

    def save(self) -> None:
        """File > Save Notebook; wait until the file on disk has the outputs."""
        target = self.lab.root / self.path
        before = target.stat().st_mtime_ns
        self.command("File", "Save Notebook")
        self.wait(lambda: target.stat().st_mtime_ns != before and not self.js(
            "return !!document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-mod-dirty, "
            ".lm-TabBar-tab.jp-mod-current.jp-mod-dirty');"), 60, "the notebook was not saved", every=0.5)

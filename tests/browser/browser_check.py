"""`make browser-test`: notebooks 06 and 09 in JupyterLab in a real browser (Debian's chromium).

Starts JupyterLab on 127.0.0.1 with a token, opens ``notebooks/06_explore.ipynb`` with
Playwright (``launch(executable_path=...)`` on the system chromium; no browser download), runs
all cells, moves a weight slider with the keyboard, and checks that the metric the widget shows
is the value ``fuse`` + ``evaluate`` give for the new configuration. Then opens
``notebooks/09_your_collection.ipynb``, runs all cells, types grades into the judging widget's
shortcut box (``1``, ``0``, then ``u`` and ``1``: an undo), and checks that the widget's count
moved and that its log file holds those grades (the correction marked as one), timing each
key press until the widget shows the next pair. Saves screenshots under ``results/browser/``.
Not part of ``make test`` (it needs the browser install).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATASET = os.environ.get("RRFBENCH_NB_DATASET", "cranfield")
OUT = ROOT / "results" / "browser"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=5)
            return
        except Exception:
            time.sleep(1)
    raise RuntimeError(f"JupyterLab did not answer at {url}")


def expected_value(weights, metric="nDCG@10") -> float:
    from rrfbench import evaluate, load_dataset
    from rrfbench.fusion.config import Config
    from rrfbench.workflows.dataset import load_runs

    ds = load_dataset(DATASET)
    runs = load_runs(ds, ["bm25", "fts5", "dense"], "test")
    cfg = Config("convex", (0.0,) * 3, tuple(weights), (None,) * 3, 1, "tmm", "min")
    return evaluate(cfg.fuse(runs), ds.qrels("test"), [metric])[metric]


def check_judging(browser, port: int, token: str) -> bool:
    """Notebook 09's judging widget: keys typed in its shortcut box reach the log."""
    import json

    page = browser.new_page(viewport={"width": 1500, "height": 1300})
    page.goto(f"http://127.0.0.1:{port}/lab/tree/notebooks/09_your_collection.ipynb?token={token}")
    page.wait_for_selector(".jp-Notebook", timeout=120_000)
    page.wait_for_timeout(3000)
    page.click("text=Run", timeout=60_000)
    page.click("text=Run All Cells", timeout=60_000)
    header = page.locator(".rrfbench-judging .widget-html-content", has_text="judged").first
    header.wait_for(timeout=600_000)
    page.wait_for_timeout(2000)
    box = page.locator(".rrfbench-judging input[type=text]").first
    times = []
    for key, count in (("1", 1), ("0", 2), ("u", 2), ("1", 2)):
        before = page.locator(".rrfbench-judging .widget-html-content").nth(2).inner_text()
        box.click()
        t0 = time.perf_counter()
        page.keyboard.press(key)
        page.wait_for_function(
            "([el, old]) => el.innerText !== old",
            arg=[page.locator(".rrfbench-judging .widget-html-content").nth(2).element_handle(),
                 before], timeout=60_000)
        times.append((time.perf_counter() - t0) * 1000)
        page.wait_for_function("([el, n]) => el.innerText.includes(n + ' of ')",
                               arg=[header.element_handle(), count], timeout=60_000)
    page.screenshot(path=str(OUT / "judging.png"), full_page=True)
    log = Path(re.search(r"log (\S+judgments\.jsonl)", header.inner_text()).group(1))
    entries = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    page.close()
    got = [(e["grade"], e["resolves"]) for e in entries]
    print(f"judging widget: grades in the log {got}; key press to the next pair shown: "
          + ", ".join(f"{t:.0f} ms" for t in times) + f"; screenshot: {OUT / 'judging.png'}")
    return got == [(1, False), (0, False), (1, True)]


def main() -> int:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    OUT.mkdir(parents=True, exist_ok=True)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, RRFBENCH_NB_DATASET=DATASET)
    # a fresh workspace: a saved one (~/.jupyter/lab/workspaces) reopens old tabs and has
    # hung this check waiting for a kernel nobody asked for
    workspaces = tempfile.mkdtemp(prefix="rrfbench-lab-workspaces-")
    lab = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip", "127.0.0.1",
         "--port", str(port), f"--IdentityProvider.token={token}", "--allow-root",
         f"--ServerApp.root_dir={ROOT}", f"--LabApp.workspaces_dir={workspaces}"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(OUT / "jupyterlab.log", "w"))
    try:
        wait_http(f"http://127.0.0.1:{port}/api?token={token}")
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=chromium, headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                      "--disable-background-networking", "--disable-component-update",
                      "--disable-sync"])
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            page.goto(f"http://127.0.0.1:{port}/lab/tree/notebooks/06_explore.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook", timeout=120_000)
            page.wait_for_timeout(3000)
            page.click("text=Run", timeout=60_000)  # the Run menu
            page.click("text=Run All Cells", timeout=60_000)
            summary = page.locator(".widget-html-content", has_text="vs RRF k=60").first
            summary.wait_for(timeout=600_000)
            # the last cell ran (it applies the tuned configuration of results/<dataset>)
            page.locator(".jp-Cell").last.locator(".jp-OutputArea-output").first.wait_for(
                timeout=600_000)
            page.wait_for_timeout(2000)
            before = summary.inner_text()
            page.screenshot(path=str(OUT / "explorer-before.png"), full_page=True)
            handle = page.locator(".widget-slider .noUi-handle").first
            handle.focus()
            for _ in range(4):  # the first weight: +0.20, one keyboard step (0.05) at a time
                page.keyboard.press("ArrowRight")
                page.wait_for_timeout(300)
            page.wait_for_function(
                "([el, old]) => el.innerText !== old",
                arg=[summary.element_handle(), before], timeout=60_000)
            after = summary.inner_text()
            page.screenshot(path=str(OUT / "explorer.png"), full_page=True)
            judged_ok = check_judging(browser, port, token)
            browser.close()
        shown = float(re.search(r"nDCG@10 ([0-9.]+)", after).group(1))
        weights = [float(x) for x in re.search(r"w=([0-9.,]+)", after).group(1).split(",")]
        start = [float(x) for x in re.search(r"w=([0-9.,]+)", before).group(1).split(",")]
        want = expected_value(weights)
        print(f"before: {before.splitlines()[0]}")
        print(f"after:  {after.splitlines()[0]}")
        print(f"widget shows nDCG@10 {shown:.4f} for weights {weights}; fuse + evaluate give "
              f"{want:.4f}; screenshot: {OUT / 'explorer.png'}")
        moved = abs(weights[0] - min(start[0] + 4 * 0.05, 1.0)) < 1e-9 and weights[1:] == start[1:]
        if not moved or f"{want:.4f}" != f"{shown:.4f}" or not judged_ok:
            print("browser test FAILED")
            return 1
        print("browser test passed")
        return 0
    finally:
        lab.terminate()
        try:
            lab.wait(10)
        except subprocess.TimeoutExpired:
            lab.kill()


if __name__ == "__main__":
    sys.exit(main())

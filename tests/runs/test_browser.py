"""JupyterLab in a real browser: notebooks 00 and 05 run in it, their widgets render and answer.

The papermill tests (test_notebooks.py) execute the notebooks without a
front end; this one opens them as a user does. `rxlab lab` starts JupyterLab
from the project's .venv on 127.0.0.1 with a token and a free port, serving a
temporary folder that holds copies of the two notebooks with scale="smoke"
injected as papermill does, with a temporary results store (RXLAB_RUNS) and
figures folder (RXLAB_FIGURES). Playwright drives Debian's chromium (the
set-up installs it: .ci/deps.sh; no browser is downloaded), runs all cells
and checks: no cell shows an error, a figure image rendered, and a widget
change redraws (05: the explorer's y picker; 00: the "try it" panel runs, then
names a bad option in one line). A screenshot of each notebook is kept in
$RXLAB_ARTIFACTS (default tests/artifacts/, ignored by git; the test prints
where). The browser, the server and its kernels stop at the end, on failure
too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from rxlab.cli.lab import free_port

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="the `browser` extra (make setup installs it)"
)
papermill = pytest.importorskip("papermill")

pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[2]
RXLAB = Path(sys.executable).parent / "rxlab"
ARTIFACTS = Path(os.environ.get("RXLAB_ARTIFACTS", REPO / "tests" / "artifacts"))
NOTEBOOKS = ("00_start_here", "05_explore")
# JupyterLab settings for the test's own settings folder: every cell in the page (no virtual scrolling, so
# every output can be checked), and no news pop-up over the screenshots.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no chromium on this machine: `make setup` installs Debian's (apt-get install chromium)")


def _kill_group(proc: subprocess.Popen, grace: float = 20) -> str:
    """SIGTERM to the process group, SIGKILL after `grace` seconds; returns what it printed."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    return out or ""


def _kill_kernels(runtime: Path) -> None:
    """Kernels the server started whose command line names its runtime folder (left only if it was killed)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(runtime) in cmd:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(d.name), signal.SIGKILL)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`rxlab lab` on a free port with a token, serving smoke copies of the notebooks; stopped at the end."""
    base = tmp_path_factory.mktemp("lab")
    root, runs, figs, runtime = base / "serve", base / "runs", base / "figures", base / "runtime"
    for d in (root, runs, figs, runtime):
        d.mkdir()
    for name in NOTEBOOKS:
        nb = papermill.iorw.load_notebook_node(str(REPO / "notebooks" / f"{name}.ipynb"))
        nbformat.write(
            papermill.parameterize.parameterize_notebook(nb, {"scale": "smoke"}), root / f"{name}.ipynb"
        )
    for rel, values in SETTINGS.items():
        f = base / "settings" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values))
    port, token = free_port(18800), os.urandom(16).hex()
    env = {
        **os.environ,
        "RXLAB_RUNS": str(runs),
        "RXLAB_FIGURES": str(figs),
        "RXLAB_EXPLORE_CACHE": str(base / "cache"),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(runtime),
    }
    env.pop("RXLAB_DATA", None)
    proc = subprocess.Popen(
        [str(RXLAB), "lab", "", "--port", str(port), "--token", token, "--root-dir", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    t0 = time.monotonic()
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"rxlab lab exited ({proc.returncode}): {proc.stdout.read()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if time.monotonic() - t0 > 90:
                    pytest.fail("JupyterLab did not answer within 90 s")
                time.sleep(0.5)
        yield {"url": f"http://127.0.0.1:{port}", "token": token, "runs": runs, "figures": figs, "root": root}
    finally:
        log = _kill_group(proc)
        _kill_kernels(runtime)
        (base / "server.log").write_text(log)


@pytest.fixture(scope="module")
def browser():
    pw = playwright_api.sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


@pytest.fixture(scope="module")
def artifacts():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    print(f"\nbrowser screenshots: {ARTIFACTS}")
    return ARTIFACTS


def open_and_run_all(page, server, name: str, timeout_s: float = 240) -> float:
    """Open a notebook in JupyterLab, wait for its kernel, Run > Run All Cells, wait until every code cell
    has run; returns the seconds the run took."""
    # a workspace of its own, reset: the page holds this notebook alone
    page.goto(f"{server['url']}/lab/workspaces/{name}/tree/{name}.ipynb?reset&token={server['token']}")
    page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=90_000, state="attached")
    kernel_idle(server, name)
    t0 = time.monotonic()

    def run_all():
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

    run_all()
    try:  # a Run All that reached the page before the kernel's connection runs nothing: once more then
        page.wait_for_function(
            """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
            .some(e => /\\[(\\*|\\d+)\\]/.test(e.textContent))""",
            timeout=20_000,
        )
    except playwright_api.TimeoutError:
        run_all()
    try:
        page.wait_for_function(
            """() => {
            const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
            return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent));
        }""",
            timeout=timeout_s * 1000,
        )
    except playwright_api.TimeoutError:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.wait_for_timeout(800)  # let the page paint what it scrolled to
        page.screenshot(path=str(ARTIFACTS / f"{name}-timeout.png"))
        prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").all_inner_texts()
        pytest.fail(
            f"{name}: not every cell ran within {timeout_s:.0f} s; prompts {prompts} "
            f"(screenshot {ARTIFACTS / f'{name}-timeout.png'})"
        )
    kernel_idle(server, name)
    return time.monotonic() - t0


def kernel_idle(server, name: str, timeout_s: float = 90) -> None:
    """Wait until the notebook's session has a kernel that answers (the server says it is idle)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{server['url']}/api/sessions?token={server['token']}", timeout=5) as r:
            sessions = json.loads(r.read())
        if any(
            x.get("path", "").endswith(f"{name}.ipynb")
            and (x.get("kernel") or {}).get("execution_state") == "idle"
            for x in sessions
        ):
            return
        time.sleep(0.5)
    pytest.fail(f"{name}: its kernel was not idle within {timeout_s:.0f} s")


def no_errors(page, server, name: str) -> None:
    """No error in any cell: none in the page (tracebacks, widgets that failed to render), none in the
    notebook saved from the page."""
    texts = page.locator(".jp-Notebook .jp-OutputArea-output").all_inner_texts()
    bad = [
        t[:300]
        for t in texts
        if "Traceback (most recent call last)" in t
        or "Error displaying widget" in t
        or "Failed to load model class" in t
    ]
    assert not bad, bad
    assert page.locator(".jp-Notebook .jp-OutputArea-output:has-text('Loading widget...')").count() == 0
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while True:  # the saved file has every code cell's output once JupyterLab wrote it
        nb = nbformat.read(server["root"] / f"{name}.ipynb", as_version=4)
        if (
            all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
            or time.monotonic() > deadline
        ):
            break
        time.sleep(0.5)
    errors = [
        f"cell {i}: {o.get('ename')}: {o.get('evalue')}"
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors, errors
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")


def rendered(img) -> bool:
    """The image loaded and shows a drawing: more than 3 % of its pixels are not white (a figure whose axes
    were not drawn, only its title, has under 1 %)."""
    return img.evaluate("""e => {
        if (!(e.complete && e.naturalWidth > 100 && e.naturalHeight > 50)) return false;
        const c = document.createElement('canvas');
        c.width = e.naturalWidth; c.height = e.naturalHeight;
        const x = c.getContext('2d');
        x.drawImage(e, 0, 0);
        const d = x.getImageData(0, 0, c.width, c.height).data;
        let ink = 0;
        for (let i = 0; i < d.length; i += 4)
            if (d[i + 3] > 10 && (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235)) ink++;
        return ink > 0.03 * d.length / 4;
    }""")


def test_00_start_here_runs_in_jupyterlab_and_its_panel_runs(server, browser, artifacts):
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    try:
        seconds = open_and_run_all(page, server, "00_start_here")
        no_errors(page, server, "00_start_here")
        fig = page.locator(".jp-Notebook .jp-RenderedImage img")
        assert fig.count() == 1 and rendered(fig.first)  # the run's latency histogram
        assert (
            page.locator(".jp-Notebook .widget-hprogress").count() >= 2
        )  # tqdm's notebook bars (study, steps)
        page.wait_for_timeout(800)  # let the page paint what it scrolled to
        page.screenshot(path=str(artifacts / "00_start_here.png"))
        page.locator(".jp-Notebook .jp-RenderedImage img").first.evaluate(
            "e => e.scrollIntoView({block: 'center'})"
        )
        page.wait_for_timeout(800)  # let the page paint what it scrolled to
        page.screenshot(path=str(artifacts / "00_start_here_run.png"))
        # the "try it" panel: change the workload and an option, run, see the table and histogram appear
        page.locator(".widget-dropdown:has(label:text-is('workload')) select").select_option(
            "multireadrandom"
        )
        page.locator(".widget-text:has(label:text-is('delay_us')) input").fill("50")
        page.get_by_text("posix?delay_us=50").wait_for(timeout=10_000)
        run = page.locator(".jp-Notebook button.widget-button:text-is('run')")
        run.click()
        page.wait_for_selector(".jp-Notebook .widget-html:has-text('ops/s')", timeout=120_000)
        panel_img = page.locator(".jp-Notebook img.widget-image")
        panel_img.first.wait_for(timeout=30_000)
        page.wait_for_function(
            "e => e.naturalWidth > 100", arg=panel_img.first.element_handle(), timeout=30_000
        )
        assert rendered(panel_img.first)  # the run's latency histogram
        assert page.locator(".jp-Notebook .widget-output:has-text('multireadrandom')").count() >= 1
        page.locator(".jp-Notebook .widget-html:has-text('Try it')").first.evaluate(
            "e => e.scrollIntoView({block: 'start'})"
        )
        page.wait_for_timeout(800)  # let the page paint what it scrolled to
        page.screenshot(path=str(artifacts / "00_start_here_try_it.png"))
        # a bad choice: one line in the panel, no traceback
        page.locator(".widget-text:has(label:text-is('buffer_align')) input").fill("100")
        run.click()
        err = page.locator(".jp-Notebook .widget-html:has-text('error:')")
        err.wait_for(timeout=30_000)
        assert "buffer_align=100 must be" in err.inner_text() and len(err.inner_text().splitlines()) == 1
        assert page.locator(".jp-Notebook :text('Traceback (most recent call last)')").count() == 0
        page.locator(".jp-Notebook .widget-html:has-text('Try it')").first.evaluate(
            "e => e.scrollIntoView({block: 'start'})"
        )
        page.wait_for_timeout(800)  # let the page paint what it scrolled to
        page.screenshot(path=str(artifacts / "00_start_here_bad_choice.png"))
        print(f"00_start_here: all cells ran in {seconds:.1f} s in the browser")
    finally:
        page.close()


def test_05_explore_runs_in_jupyterlab_and_its_widgets_redraw(server, browser, artifacts):
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    try:
        seconds = open_and_run_all(page, server, "05_explore")
        no_errors(page, server, "05_explore")
        # the store holds notebook 00's runs (its study and the panel's two runs; run alone, 05 runs the
        # start-here study first)
        runs = len([d for d in server["runs"].iterdir() if not d.name.startswith(".")])
        assert (
            runs >= 1
            and page.locator(".jp-Notebook .jp-OutputArea-output:has-text('quickstart')").count() >= 1
        )
        img = page.locator(".jp-Notebook img.widget-image")
        img.first.wait_for(timeout=30_000)
        assert img.count() == 1 and rendered(img.first)
        status = page.locator(".jp-Notebook .widget-html:has-text('runs shown, of')")
        assert status.count() == 1 and f"of {runs} runs in the store" in status.inner_text()
        # the first view: readrandom's qps by backend, with the median's interval in the table
        caption = page.locator(".jp-Notebook .widget-html:has-text('qps by backend: per group, the median')")
        assert caption.count() == 1 and "95% lo" in caption.inner_text()
        # a selected filter value is in view in its list box (not cut by its bottom edge), and named under it
        selected = page.evaluate("""() => [...document.querySelectorAll('.jp-Notebook select[multiple]')]
            .flatMap(s => [...s.selectedOptions].map(o => {
                const box = s.getBoundingClientRect(), st = getComputedStyle(s);
                const top = box.top + parseFloat(st.borderTopWidth);
                const bottom = box.bottom - parseFloat(st.borderBottomWidth);
                let r = o.getBoundingClientRect();
                if (!r.height) {  // no box of its own: one row's share of the list's height
                    const row = s.scrollHeight / s.options.length;
                    const y = top + o.index * row - s.scrollTop;
                    r = {top: y, bottom: y + row};
                }
                return {text: o.textContent, visible: r.top >= top - 0.5 && r.bottom <= bottom + 0.5,
                        top: r.top, bottom: r.bottom, box: [top, bottom]};
            }))""")
        assert [o["text"] for o in selected] == ["readrandom"], selected
        assert all(o["visible"] for o in selected), selected
        assert page.locator(".jp-Notebook .widget-html small:text-is('readrandom')").count() == 1
        before = img.first.get_attribute("src")
        y = page.locator(".widget-dropdown:has(label:text-is('y')) select")
        y.select_option("cpuPer")
        page.wait_for_function(
            "([el, src]) => el.getAttribute('src') !== src && el.naturalWidth > 100",
            arg=[img.first.element_handle(), before],
            timeout=30_000,
        )
        page.wait_for_selector(".jp-Notebook .widget-html:has-text('median cpuPer')", timeout=30_000)
        page.wait_for_timeout(800)  # let the page paint what it scrolled to
        page.screenshot(path=str(artifacts / "05_explore.png"))
        page.locator(".jp-Notebook .widget-html:has-text('Runs in')").first.evaluate(
            "e => e.scrollIntoView({block: 'start'})"
        )
        page.wait_for_timeout(800)  # let the page paint what it scrolled to
        page.screenshot(path=str(artifacts / "05_explore_explorer.png"))
        # save through the figure pipeline, from the button
        page.locator(".jp-Notebook .widget-text:has(label:text-is('name')) input").fill(
            "explore_from_browser"
        )
        page.get_by_role("button", name="save figure").click()
        page.wait_for_selector(
            ".jp-Notebook .widget-html:has-text('explore_from_browser.json')", timeout=30_000
        )
        assert {p.suffix for p in server["figures"].glob("explore_from_browser.*")} == {
            ".pdf",
            ".svg",
            ".png",
            ".csv",
            ".json",
        }
        print(f"05_explore: all cells ran in {seconds:.1f} s in the browser")
    finally:
        page.close()

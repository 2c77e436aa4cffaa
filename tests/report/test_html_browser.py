"""The HTML report of a real experiment, opened in headless Chromium with networking disabled.

Checks: the file is self-contained, no request leaves the page, no console error, every chart is
drawn, and the expected tables and rows are there. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from maximus import api

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--host-resolver-rules=MAP * ~NOTFOUND"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
RUN_TABLE_ROWS = ["tpmC", "CPU user %", "CPU sys %", "CPU wait (iowait) %", "CPU idle %", "Physical reads/s",
                  "Physical writes/s", "I/O rate MB/s", "Log-sync wait ms", "Data-file read wait ms",
                  *(f"{name} {stat} ms" for name in ("New-Order", "Payment", "Order-Status", "Delivery",
                                                     "Deferred-Delivery", "Stock-Level")
                    for stat in ("p90", "avg", "max"))]
EXPERIMENT_CHARTS = {"chart-gain", "chart-throughput-clients", "chart-p90-throughput",
                     *(f"chart-{kind}-s{step}" for kind in ("histograms", "timeline", "cpu", "io") for step in (0, 1))}


def _chromium() -> None:
    """Skip (or, on CI, which installs it through .ci/run, fail) when Chromium or Playwright is missing."""
    reason = ""
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: apt-get install -y chromium (Debian's package)"
    elif importlib.util.find_spec("playwright") is None:
        reason = "the playwright package is missing: pip install -e '.[test]'"
    if reason and os.environ.get("CI"):
        pytest.fail(reason)
    if reason:
        pytest.skip(reason)


def _report(results: Path, output: Path, *target: str) -> str:
    done = subprocess.run([sys.executable, "-m", "maximus", "report", *target, "-o", str(output), "--results",
                           str(results)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"Report written to {output}" in done.stdout
    return output.read_text(encoding="utf-8")


def _assert_self_contained(text: str) -> None:
    """Scripts and styles inline, and no external resource in the page's own markup (plotly.js, inlined in the
    head, names URLs in strings it never fetches here: the browser test checks what is really requested)."""
    head, body = text.split("</head>", 1)
    assert len(head) > 3_000_000  # plotly.js itself is inlined
    assert re.findall(r"<(?:script|style|link)\b[^>]*>", head.split("<script>", 1)[0]) == ["<style>"]
    assert not re.search(r"<script[^>]*\bsrc\s*=", body), "a script is loaded from elsewhere"
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", body), "a resource is fetched from the network"


class Page:
    """One report opened offline, with every request and console message recorded."""

    def __init__(self, browser, path: Path) -> None:
        self.context = browser.new_context(offline=True, viewport={"width": 1280, "height": 1000})
        self.requests: list[str] = []
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.context.route(re.compile(r"^(https?|wss?|ftp)://"), self._block)
        self.page = self.context.new_page()
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(path.as_uri())
        self.page.wait_for_function("document.body.dataset.charts !== undefined", timeout=60_000)

    def _block(self, route) -> None:
        self.blocked.append(route.request.url)
        route.abort()

    def texts(self, selector: str) -> list[str]:
        return self.page.eval_on_selector_all(selector, "nodes => nodes.map(n => n.textContent.trim())")

    def assert_clean(self) -> None:
        assert self.page.evaluate("document.body.dataset.charts") == "rendered"
        assert self.errors == [], self.errors
        assert self.blocked == [], f"the report tried to reach the network: {self.blocked}"
        assert all(url.startswith(("file:", "data:", "blob:", "about:")) for url in self.requests), self.requests

    def charts(self) -> dict[str, int]:
        """Chart id -> number of traces drawn, for charts that plotly drew as SVG."""
        return self.page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.chart')]
            .filter(div => div.querySelector('svg.main-svg') && div.data)
            .map(div => [div.id, div.data.length]))""")


@pytest.fixture(scope="module")
def browser():
    _chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def test_the_experiment_report_renders_offline_with_every_chart_and_table(browser, finished_experiment,
                                                                         tmp_path: Path) -> None:
    results, experiment_id = finished_experiment
    path = tmp_path / "report.html"
    _assert_self_contained(_report(results, path, str(experiment_id)))
    view = Page(browser, path)
    ARTIFACTS.mkdir(exist_ok=True)
    view.page.screenshot(path=str(ARTIFACTS / "report-experiment.png"), full_page=True)
    view.assert_clean()
    charts = view.charts()
    assert set(charts) == EXPERIMENT_CHARTS and all(traces > 0 for traces in charts.values()), charts
    assert charts["chart-throughput-clients"] >= 2 and charts["chart-histograms-s1"] >= 5
    _assert_experiment_tables(view, results, experiment_id)
    view.context.close()


def _assert_experiment_tables(view: Page, results: Path, experiment_id: int) -> None:
    store = api.open_results(results)
    try:
        headline = api.analyse_experiment(store, experiment_id).summary.headline()
    finally:
        store.close()
    assert view.texts(".headline") == [headline]
    assert len(view.texts(".step-table tbody tr")) == 4  # two steps, two client counts each
    assert view.texts("#step-1 code.changed") == ["journal_mode=wal"] and view.texts("#step-0 code.changed") == []
    for step in (0, 1):
        labels = view.texts(f"#step-{step} .run-table tbody td:first-child")
        assert labels == RUN_TABLE_ROWS
        headers = view.texts(f"#step-{step} .run-table thead th")[1:]
        assert [h.split(" (")[0] for h in headers] == ["1 client", "2 clients"]
    for table in ("validity", "mix", "limits", "consistency"):
        assert len(view.texts(f"#conformance table.{table} tbody tr")) == 8, table
    assert set(view.texts("[data-benchmark]")) == {"TPC-C-like (keying and think times off)"}
    assert view.texts(".summary-figures tbody tr td:first-child") == ["tpmC at 2 clients", "Load time s"]


def test_the_report_of_a_single_run_renders_offline(browser, finished_experiment, tmp_path: Path) -> None:
    results, experiment_id = finished_experiment
    store = api.open_results(results)
    run_id = store.runs(experiment_id)[-1].id
    store.close()
    path = tmp_path / "run.html"
    _assert_self_contained(_report(results, path, "--run", str(run_id)))
    view = Page(browser, path)
    view.page.screenshot(path=str(ARTIFACTS / "report-run.png"), full_page=True)
    view.assert_clean()
    assert set(view.charts()) == {"chart-histograms-run", "chart-timeline-run", "chart-cpu-run", "chart-io-run"}
    assert view.texts(".run-table tbody td:first-child") == RUN_TABLE_ROWS
    assert view.texts(".run-figures tbody td:first-child")[:3] == ["tpmC", "NOPM", "TPM"]
    view.context.close()


def test_the_end_of_an_experiment_writes_its_report_in_the_current_directory(finished_experiment,
                                                                              tmp_path: Path) -> None:
    results, experiment_id = finished_experiment  # resuming a finished experiment runs nothing, then reports
    done = subprocess.run([sys.executable, "-m", "maximus", "experiment", "resume", str(experiment_id), "--workdir",
                           str(tmp_path / "work"), "--results", str(results)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = tmp_path / f"maximus-report-{experiment_id}.html"
    assert f"Report: maximus-report-{experiment_id}.html" in done.stdout
    assert 'data-chart="gain"' in report.read_text(encoding="utf-8")


def test_the_offline_page_catches_a_request_for_the_network_and_a_console_error(browser, tmp_path: Path) -> None:
    """The checks above can fail: a page that fetches an image and logs an error is caught twice."""
    path = tmp_path / "leaky.html"
    path.write_text('<html><body><img src="http://192.0.2.1/x.png"><script>console.error("broken");'
                    'document.body.dataset.charts = "rendered";</script></body></html>')
    view = Page(browser, path)
    view.page.wait_for_timeout(200)
    with pytest.raises(AssertionError):
        view.assert_clean()
    assert "broken" in view.errors  # Chromium may log the blocked image's load failure first
    assert view.blocked == ["http://192.0.2.1/x.png"]
    view.context.close()

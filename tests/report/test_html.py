"""Rendering without a browser: a run with nothing measured degrades to notes, and text is escaped."""

from __future__ import annotations

import re
from dataclasses import replace

from maximus.records import RunStatus
from maximus.report import html

from .test_tables import _run


def test_an_unmonitored_run_says_not_measured_instead_of_drawing_empty_charts() -> None:
    page = html.run_page(_run(7, 60))
    assert 'id="chart-histograms-run"' in page and 'id="chart-timeline-run"' in page
    assert 'id="chart-cpu-run"' not in page and 'id="chart-io-run"' not in page
    assert "CPU: not measured in this run" in page and "I/O: not measured in this run" in page
    assert "No monitoring samples were stored for these runs" in page
    assert "checkpoints: not reported" in page
    assert page.count('<span class="not-measured">not measured</span>') >= 9  # every monitored row of the table


def test_a_failed_run_renders_with_its_reason_and_no_charts() -> None:
    page = html.run_page(_run(8, 0, status=RunStatus.FAILED))
    assert "run 8 failed: boom" in page
    assert 'class="chart"' not in page and "no transaction completed in the measured window" in page


def test_user_text_is_escaped_and_the_page_is_self_contained() -> None:
    page = html.run_page(_run(9, 10, knobs={"journal_mode": "<script>alert(1)</script>"}))
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<script src") == 0 and "Plotly.newPlot" in page


def test_a_run_page_shows_what_the_engine_reported_it_ran_with() -> None:
    run = _run(10, 10)
    record = replace(run.report.record, engine_settings={"shared_buffers": "2GB", "application_name": "<b>"})
    page = html.run_page(replace(run, report=replace(run.report, record=record)))
    shown = "<code>shared_buffers=2GB</code> <code>application_name=&lt;b&gt;</code>"
    assert f"The engine reported:</strong> {shown}" in page
    assert "The engine reported" not in html.run_page(run)  # nothing reported, nothing shown


def test_a_one_warehouse_run_shows_its_remote_shares_as_the_terminal_does() -> None:
    """Nothing is remote with one warehouse: the page said "0.00 n/a" where the terminal says "-"."""
    page = html.run_page(_run(11, 10))
    cells = re.findall(r'<td>([^<]*) <span class="status-n-a" title="one warehouse: nothing is remote">', page)
    assert cells == ["-", "-"]

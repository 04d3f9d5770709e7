"""The HTML report: one self-contained page, everything escaped, drawn without errors by a
real headless Chromium with the network off, and fast on an hour-long recording."""
from __future__ import annotations

import json
import re
from html import escape
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import recordings
from conftest import INNOSTALL, REPO, innostall
from innostall.analysis import flamegraph, recording, summary, views
from innostall.errors import UserError

REAL = REPO / "tests" / "data" / "purge-stall"  # make demo on MariaDB 11.4.5: a purge stall
# make demo again, with every probe: deep walks, latch-wait stacks, contended pages (no journal)
REAL_ALL = REPO / "tests" / "data" / "seed-load"
SCREENSHOTS = REPO / "build" / "screenshots"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                  "--window-size=1280,1000"]


@pytest.fixture(scope="module")
def walks_rec(tmp_path_factory):
    return recording.load(str(recordings.synthetic(tmp_path_factory.mktemp("walks") / "rec")))


@pytest.fixture(scope="module")
def walks_page(walks_rec, tmp_path_factory):
    path = tmp_path_factory.mktemp("page") / "report.html"
    views.write_html_report(walks_rec, str(path))
    return path


def test_page_needs_nothing_from_outside(walks_page):
    page = walks_page.read_text()
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=", page)
    assert "@import" not in page and "url(http" not in page
    assert page.count("<script") >= 2  # plotly.js inline, then each chart's own call


def test_every_string_from_the_recording_is_escaped(walks_page):
    page = walks_page.read_text()
    assert "test&lt;host&gt;, kernel 6.1 &amp; more" in page
    assert "/opt/&lt;mariadb&gt;/bin/mariadbd" in page
    assert "no symbol &lt;sux_lock&lt;ssux_lock_impl&lt;true&gt; &gt;::x_lock&gt; in .symtab" in page
    assert "std::vector&lt;buf_page_t*, ut_allocator&lt;buf_page_t*, true&gt; &gt;" in page
    assert "sux_lock&lt;ssux_lock_impl&lt;true&gt; &gt;::x_lock(bool)" in page
    for raw in ["<host>", "<mariadb>", "<sux_lock", "<buf_page_t*", "List<Item>", "<ssux_lock"]:
        assert raw not in page, raw


def test_page_has_every_section(walks_rec, walks_page):
    page = walks_page.read_text()
    for chart in ["purge-timeline", "purge-throughput", "hist-purge_batch_latency", "hist-purge_batch_pages",
                  "hist-version_walk_depth", "hist-version_walk_latency", "latch-waits",
                  "latch-waits-time", "other-counters"]:
        assert f'id="{chart}"' in page, chart
    for table in ["deepest-walks", "contended-pages", "wait-stacks"]:
        assert f'id="{table}"' in page, table
    if flamegraph.find_tool():
        for graph in flamegraph.FLAME_GRAPHS:
            assert f'id="{graph.element_id}"' in page, graph.name
    totals = summary.summary(walks_rec)
    found = totals["findings"]
    for text in found:
        assert escape(text) in page
    assert [f.split()[0] for f in found][:3] == ["In", "8", "Threads"]  # stall, walks, latches
    assert f"{totals['purge']['batches']} purge batches" in page


@pytest.fixture(scope="module")
def story_page(tmp_path_factory):
    """A pinned → catching up → idle recording with the history, a pinning read view and
    the batch time split."""
    directory = tmp_path_factory.mktemp("story")
    rec = recording.load(str(recordings.write(directory / "rec", recordings.pinned_then_catch_up())))
    views.write_html_report(rec, str(directory / "story.html"))
    return directory / "story.html"


def test_the_page_leads_with_the_verdict_and_the_timeline(story_page):
    page = story_page.read_text()
    order = [page.index(marker) for marker in ('id="phases"', 'id="purge-timeline"', 'id="findings"',
                                               'id="purge"', 'id="facts"', 'id="probes"')]
    assert order == sorted(order)  # the story first, the server, probe and build facts below it
    phases = page[page.index('id="phases"'):page.index("</ol>", page.index('id="phases"'))]
    assert [phases.count(f">{v}</span>") for v in ("pinned", "catching up", "idle")] == [1, 1, 1]
    assert "pinned by connection 17 (user app, now running " in phases  # who a DBA looks for first
    assert "SUM(k) FROM sbtest1&#34;, read view open 11.5 s; thread 4321" in phases
    assert 'id="pinning-views"' in page and 'id="purge-time"' in page
    assert "History list length 1,800 → 0 (max 10,600" in page


def test_recording_without_walks_says_so(tmp_path):
    rec = recording.load(str(REAL))
    path = tmp_path / "r.html"
    views.write_html_report(rec, str(path))
    page = path.read_text()
    assert "No deep walks recorded." in page and "No latch-wait stacks recorded." in page
    assert "flame-deep-walks" not in page and "flame-latch-waits" not in page
    assert 'id="hist-purge_batch_latency"' in page


def test_unknown_histograms_and_counters_get_generic_sections(tmp_path):
    records = recordings.synthetic_journal(4, walks=False, latches=False)
    for r in records[1:]:
        r["counters"]["latch_waits"] = 7 * int(r["mono_ns"] / 1e9)
        r["hists"]["latch_wait_latency"] = recordings.hist(s3=int(r["mono_ns"] / 1e9))
    rec = recording.load(str(recordings.write(tmp_path / "rec", records)))
    page = views.html_report(rec)
    assert 'id="hist-latch_wait_latency"' in page and "Latch wait latency" in page
    assert ">latch_waits<" in page and 'id="other-counters"' in page


@pytest.mark.heavy  # runs the installed script as its own process on purpose: a Python importing pandas, then the report: ~2.1 s of CPU
def test_cli_writes_the_page_in_one_step(tmp_path):
    out = tmp_path / "report.html"
    done = subprocess.run(INNOSTALL + ["report", str(REAL), "--html", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr.startswith(f"wrote {out} (")
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_unwritable_page_is_one_line(tmp_path):
    out = tmp_path / "missing-dir" / "report.html"
    done = innostall("report", REAL, "--html", out)  # main() in this process: the script's is the test above
    assert done.returncode == 1
    assert done.stderr == f"innostall: {out}: cannot write the HTML report (No such file or directory)\n"


def test_without_the_flame_graph_tool_the_page_says_why(walks_rec, monkeypatch):
    monkeypatch.setattr(flamegraph, "find_tool", lambda: None)
    with pytest.raises(UserError, match="inferno-flamegraph not found"):
        flamegraph.render_svg(flamegraph.folded(walks_rec.walks), "t", "walks")
    page = views.html_report(walks_rec)
    assert page.count("is not installed here, so the flame graphs are not drawn") == 2
    assert 'id="deepest-walks"' in page and 'id="flame-' not in page


def test_failing_tool_is_one_line(walks_rec):
    with pytest.raises(UserError, match=r"inferno-flamegraph failed \(exit 1\)"):
        flamegraph.render_svg(flamegraph.folded(walks_rec.walks), "t", "walks", tool="/bin/false")


# --- in a real browser --------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("Chromium is not installed: run scripts/setup.sh")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="innostall-chromium-")
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_network_conditions(offline=True, latency=0, throughput=0)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def open_offline(driver, page: Path) -> list[dict]:
    """Load the page with the network off; returns the console entries it caused."""
    driver.get_log("browser")  # drop anything from before
    driver.get(page.as_uri())
    deadline = time.time() + 30
    while time.time() < deadline:
        drawn = driver.execute_script(
            "return [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.main-svg'))")
        if drawn:
            break
        time.sleep(0.2)
    return driver.get_log("browser")


def requested_urls(driver) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def screenshot(driver, name: str) -> Path:
    """The whole page as a PNG under build/screenshots, for a person to look at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(height, 20000))
    path = SCREENSHOTS / name
    driver.save_screenshot(str(path))
    driver.set_window_size(1280, 1000)
    return path


def test_browser_draws_every_chart_without_errors(browser, walks_page):
    from selenium.webdriver.common.by import By

    console = open_offline(browser, walks_page)
    charts = browser.find_elements(By.CSS_SELECTOR, ".plotly-graph-div")
    assert len(charts) == walks_page.read_text().count('class="plotly-graph-div"') >= 9
    for chart in charts:
        assert chart.find_elements(By.CSS_SELECTOR, ".main-svg"), chart.get_attribute("id")
        assert chart.size["height"] > 100 and chart.size["width"] > 600
    bars = browser.find_elements(By.CSS_SELECTOR, "#hist-version_walk_depth .bars path")
    assert len(bars) >= 4
    table = browser.find_element(By.ID, "deepest-walks").text
    assert "std::vector<buf_page_t*, ut_allocator<buf_page_t*, true> >" in table
    assert "No deep walks recorded" not in browser.find_element(By.TAG_NAME, "body").text
    assert console == [], console
    outside = [u for u in requested_urls(browser) if not u.startswith(("file:", "data:", "about:", "chrome:"))]
    assert outside == []
    print("screenshot:", screenshot(browser, "report-walks.png"))


FLAME_CHECKS = {  # a frame each graph must hold, and one deeper in to zoom into
    "deep-walks": ("row_search_mvcc(", "handle_select(", "row_vers_build"),
    "latch-waits": ("btr_cur_t::search_leaf(", "mysql_update(", "x_lock"),
    "latch-waiters": ("btr_cur_t::search_leaf(", "mysql_update(", "x_lock"),
    "latch-holders": ("mtr_t::commit(", "mysql_update(", "x_unlock"),
}


def test_flame_graphs_zoom_and_search_without_errors(browser, walks_page):
    from selenium.webdriver.common.by import By

    if not flamegraph.find_tool():
        pytest.fail(f"{flamegraph.TOOL} is not installed: run scripts/setup.sh")
    open_offline(browser, walks_page)
    for graph in flamegraph.FLAME_GRAPHS:
        must_hold, zoom_into, search_for = FLAME_CHECKS[graph.name.split(".")[0]]
        frame = browser.find_element(By.ID, graph.element_id)
        browser.execute_script("arguments[0].scrollIntoView()", frame)
        browser.switch_to.frame(frame)
        try:
            boxes = browser.find_elements(By.CSS_SELECTOR, "#frames > g")
            names = [b.find_element(By.TAG_NAME, "title").get_attribute("textContent") for b in boxes]
            assert any(n.startswith(must_hold) for n in names), names
            assert any("List<Item>&" in n for n in names)  # escaped in the SVG, read back whole
            unzoom = browser.find_element(By.ID, "unzoom")
            assert "hide" in unzoom.get_attribute("class")
            boxes[names.index(next(n for n in names if n.startswith(zoom_into)))].click()
            # zoomed: the frames below became parents, "Reset Zoom" shows
            assert "hide" not in unzoom.get_attribute("class")
            assert browser.find_elements(By.CSS_SELECTOR, "#frames > g.parent")
            browser.execute_script(f"search({search_for!r})")
            assert "Matched" in browser.find_element(By.ID, "matched").get_attribute("textContent")
        finally:
            browser.switch_to.default_content()
    assert browser.get_log("browser") == []


def layout_of(driver, chart_id: str) -> dict:
    """The layout plotly.js drew a chart with (its axes' ranges as computed)."""
    return driver.execute_script(
        f"const d = document.getElementById({chart_id!r}); return JSON.parse(JSON.stringify(d._fullLayout, "
        "(k, v) => k.startsWith('_') ? undefined : v));")


def test_browser_draws_the_aligned_timeline(browser, story_page):
    from selenium.webdriver.common.by import By

    console = open_offline(browser, story_page)
    timeline = browser.find_element(By.ID, "purge-timeline")
    assert timeline.size["height"] > 700 and timeline.size["width"] > 600
    layout = layout_of(browser, "purge-timeline")
    axes = sorted(k for k in layout if k.startswith("xaxis"))
    assert len(axes) == 6  # history, pages, DML delay, deep walks, latch waits, read views
    assert {tuple(layout[a]["range"]) for a in axes} == {(0, 18)}  # one time axis for all rows
    for n in ["", "2", "3", "4", "5"]:  # counts and rates start at zero
        assert layout[f"yaxis{n}"]["range"][0] == 0, n
    assert layout["yaxis"]["range"][1] >= 10600  # pinned and purgeable stacked up to the history
    bands = browser.find_elements(By.CSS_SELECTOR, "#purge-timeline .layer-below .shapelayer path")
    assert len(bands) == 3  # a band per phase, over every row
    assert all(b.size["height"] > 0.8 * timeline.size["height"] - 150 for b in bands)
    texts = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#purge-timeline .annotation-text")]
    assert {"pinned", "catching up", "idle"} <= set(texts)
    assert "tid 4321 / conn 17" in [t.text for t in browser.find_elements(
        By.CSS_SELECTOR, "#purge-timeline .yaxislayer-above text")]
    legend = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#purge-timeline .legendtext")]
    assert {"pinned", "purgeable", "history"} <= set(legend)
    assert console == [], console
    print("screenshot:", screenshot(browser, "report-story.png"))


def test_browser_draws_a_real_snapshots_timeline(browser, tmp_path):
    """make-demo-like load on MariaDB 11.4.5: a snapshot pins purge 12 s, then commits."""
    from selenium.webdriver.common.by import By

    real = REPO / "tests" / "data" / "snapshot-commit"
    truth = json.loads((real / "truth.json").read_text())
    page = tmp_path / "snapshot.html"
    views.write_html_report(recording.load(str(real)), str(page))
    console = open_offline(browser, page)
    texts = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#purge-timeline .annotation-text")]
    assert {"pinned", "catching up"} <= set(texts)
    labels = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#purge-timeline .yaxislayer-above text")]
    assert f"tid {truth['tid']}" in labels  # the snapshot's thread, from PROCESSLIST.TID
    assert console == [], console
    print("screenshot:", screenshot(browser, "report-snapshot-commit.png"))


def test_browser_draws_a_real_recording_without_walks(browser, tmp_path):
    page = tmp_path / "real.html"
    views.write_html_report(recording.load(str(REAL)), str(page))
    console = open_offline(browser, page)
    from selenium.webdriver.common.by import By

    assert len(browser.find_elements(By.CSS_SELECTOR, ".plotly-graph-div .main-svg")) >= 5
    assert browser.find_element(By.ID, "no-walks").text == "No deep walks recorded."
    # a steady 1 batch/s is drawn from zero, not autoscaled to 0.998–1.001
    assert all(layout_of(browser, "purge-throughput")[f"yaxis{n}"]["range"][0] == 0 for n in ("", "2", "3"))
    assert "history length not recorded" in browser.find_element(By.ID, "purge-timeline").text
    assert console == [], console
    print("screenshot:", screenshot(browser, "report-purge-stall.png"))


# --- speed ----------------------------------------------------------------------------------

@pytest.mark.heavy  # renders an hour: ten seconds
def test_hour_long_recording_renders(tmp_path):
    """3600 one-second intervals: the real demo intervals repeated, through journal → tables.
    The time each takes is printed, not asserted: speed is judged by runs on a quiet machine
    (docs/recording-format.md gives them), never by a timed test on two shared cores."""
    long = recordings.stretched(REAL, tmp_path / "hour", 3600)
    assert recording.load(str(long)).counters["t_s"].nunique() == 3600
    page = tmp_path / "hour.html"
    for args in (["report", str(long)], ["report", str(long), "--html", str(page)]):
        started = time.monotonic()
        done = subprocess.run(INNOSTALL + args, capture_output=True, text=True)
        print(f"innostall {' '.join(args[:1] + args[2:3])}: {time.monotonic() - started:.2f} s")
        assert done.returncode == 0, done.stderr
        if len(args) == 2:
            assert "Purge batch latency" in done.stdout
    assert "plotly-graph-div" in page.read_text()


def test_browser_draws_a_real_recording_with_every_table(browser, tmp_path):
    from selenium.webdriver.common.by import By

    page = tmp_path / "seed-load.html"
    rec = recording.load(str(REAL_ALL))
    views.write_html_report(rec, str(page))
    console = open_offline(browser, page)
    assert len(browser.find_elements(By.CSS_SELECTOR, ".plotly-graph-div .main-svg")) >= 12
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "row_sel_build_prev_vers_for_mysql ← row_search_mvcc" in body
    assert "buf_page_get_gen ← btr_cur_t::search_leaf" in body
    if flamegraph.find_tool():  # the graphs its tables can draw (it predates latch_stacks, holders)
        for graph, _ in flamegraph.available(rec):
            browser.switch_to.frame(browser.find_element(By.ID, graph.element_id))
            try:
                assert len(browser.find_elements(By.CSS_SELECTOR, "#frames > g")) > 10
            finally:
                browser.switch_to.default_content()
    assert console == [], console
    print("screenshot:", screenshot(browser, "report-seed-load.png"))

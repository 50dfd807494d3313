"""The HTML report in a real headless browser (Debian's chromium): it loads without console messages,
every figure renders (non-empty SVG with axes and labels), and a screenshot is taken.

Console messages are read from chromium's own log (`--enable-logging=stderr --v=0` prints each one as
`INFO:CONSOLE...`); a deliberately broken page proves that an error would be seen. Figures are checked
inside the page: a probe script, appended to a copy of the report, measures every inline SVG with the
browser's layout and writes the result into the DOM, which `--dump-dom` returns.
The install script must provide chromium (apt-get install -y chromium).
"""

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from strata.cli.main import main
from tests.coverage import covers

pytestmark = pytest.mark.integration
DATA = Path(__file__).resolve().parents[1] / "data" / "results"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]
CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]? (.*)")
PROBE = """<script>
(function () {
  var out = [];
  document.querySelectorAll("figure").forEach(function (fig) {
    var svg = fig.querySelector("svg");
    var r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    var texts = svg ? Array.prototype.map.call(svg.querySelectorAll("text"),
                                               function (t) { return t.textContent; }) : [];
    out.push({id: fig.id, svg: !!svg, width: r.width, height: r.height,
              axes: svg ? svg.querySelectorAll("g[id*='axes_']").length : 0,
              paths: svg ? svg.querySelectorAll("path").length : 0, texts: texts});
  });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is not installed: apt-get install -y chromium (the install script must add it)"
    return exe


def run_browser(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    cp = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cp.returncode == 0, cp.stderr[-3000:]
    return cp


def console_messages(stderr: str) -> list[str]:
    return [m.group(1) for line in stderr.splitlines() if (m := CONSOLE.search(line))]


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report")
    assert main(["report", str(DATA / "small"), "-o", str(out), "--jobs", "1"]) == 0
    return out


@covers()
def test_a_broken_page_is_detected(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><html><body><p>broken</p><script>notAFunction();</script></body></html>")
    msgs = console_messages(run_browser(page, tmp_path, "--dump-dom").stderr)
    assert any("notAFunction" in m for m in msgs), msgs


@covers()
def test_report_loads_without_console_messages(report_dir, tmp_path):
    cp = run_browser(report_dir / "report.html", tmp_path, "--dump-dom")
    assert console_messages(cp.stderr) == []
    assert 'data-figures="' in cp.stdout


@covers()
def test_every_figure_renders_with_axes_and_labels(report_dir, tmp_path):
    probed = tmp_path / "probed.html"
    probed.write_text((report_dir / "report.html").read_text().replace("</body>", PROBE + "</body>"))
    cp = run_browser(probed, tmp_path, "--dump-dom", "--window-size=1280,2000")
    assert console_messages(cp.stderr) == []
    figs = json.loads(html.unescape(re.search(r'<pre id="probe">(.*?)</pre>', cp.stdout, re.S).group(1)))
    expected = len(list((report_dir / "figures").glob("*.svg")))
    assert len(figs) == expected > 0
    for f in figs:
        assert f["svg"] and f["width"] > 300 and f["height"] > 150, f["id"]
        assert f["axes"] >= 1 and f["paths"] > 5, f["id"]
        assert len(f["texts"]) >= 6 and any(t.strip() for t in f["texts"]), f["id"]
    labels = " ".join(t for f in figs for t in f["texts"])
    for label in ("throughput relative to raw device", "latency", "seconds since start", "stack"):
        assert label in labels


@covers()
def test_screenshot(report_dir, tmp_path):
    shot = tmp_path / "report.png"
    cp = run_browser(report_dir / "report.html", tmp_path, f"--screenshot={shot}", "--window-size=1280,2000")
    assert console_messages(cp.stderr) == []
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 50_000
    keep = Path("/tmp/strata-report-screenshot.png")
    keep.write_bytes(data)  # for a person to look at

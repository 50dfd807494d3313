"""The self-contained HTML report (pure: Report + SVG figures -> bytes).

Figures are inline SVG (ids prefixed per figure so that several SVGs in one
page never share an id), tables inline, no external resource of any kind:
the file opens offline. A few lines of script sort a table on a click on its
header; nothing else runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from strata import __version__
from strata.analysis.findings.verdict import STATUSES, Outcome
from strata.analysis.studies import studies
from strata.analysis.studies.published import said
from strata.analysis.studies.side_by_side import paper_ratio
from strata.report.csv import cell_text
from strata.report.parts import SMOKE_BANNER

if TYPE_CHECKING:
    from strata.analysis.analyse import Analysis
    from strata.analysis.findings.findings import Finding
    from strata.report.parts import Figure, Report

MAX_TABLE_ROWS = 200  # inline; the CSV holds all
MAX_LIST = 40  # advice items, findings numbers

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1180px;padding:0 18px 40px;
color:#222;line-height:1.4}
h1{font-size:1.6em;margin:18px 0 4px}h2{border-bottom:2px solid #ddd;padding-bottom:3px;margin-top:32px}
.meta{color:#555;font-size:.9em}nav a{margin-right:12px}
table{border-collapse:collapse;font-size:.85em;margin:6px 0}th,td{border:1px solid #ddd;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f3f3f3;cursor:pointer}td.num{text-align:right}
.warn{background:#fff4e5;border-left:4px solid #f0a020;padding:6px 10px;margin:6px 0}
.warn b{color:#8a5300}.fix{display:block;margin-top:2px}
.st{font-weight:bold;padding:1px 6px;border-radius:3px;white-space:nowrap}
.held{background:#e3f4e1;color:#1e6b1e}.not-held{background:#fde2e1;color:#9b1c1c}.inconclusive{background:#fff4d6;color:#7a5a00}.not-measured{background:#eee;color:#666}
figure{margin:22px 0;border:1px solid #e5e5e5;padding:10px}figure svg{max-width:100%;height:auto}
figcaption{font-size:.9em;color:#444;margin-top:4px}.files{font-size:.8em}
details summary{cursor:pointer;color:#1f4f8f;font-size:.9em}.cache{color:#8a5300}
"""
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th, i) {
  th.addEventListener("click", function () {
    var tbody = th.closest("table").tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    var num = rows.every(function (r) { var t = r.cells[i].textContent; return t === "" || !isNaN(parseFloat(t)); });
    var dir = th.dataset.dir === "asc" ? -1 : 1;
    th.dataset.dir = dir === 1 ? "asc" : "desc";
    rows.sort(function (a, b) {
      var x = a.cells[i].textContent, y = b.cells[i].textContent;
      return dir * (num ? (parseFloat(x) || 0) - (parseFloat(y) || 0) : x.localeCompare(y));
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
  });
});
document.documentElement.dataset.figures = String(document.querySelectorAll("figure svg").length);
"""


def inline_svg(svg: bytes | str, prefix: str) -> str:
    """An SVG file as an inline element: no XML prolog, ids unique to this figure."""
    text = svg.decode() if isinstance(svg, bytes) else svg
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    text = re.sub(r'\s+xmlns:(dc|cc|rdf)="[^"]*"', "", text)
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", text)
    return re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m.group(1)}"', text)


def table_html(columns: Sequence[object], rows: Sequence[Sequence[object]], cls: str = "sortable") -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = []
    for r in rows[:MAX_TABLE_ROWS]:
        tds = "".join(
            f'<td class="num">{escape(cell_text(v))}</td>'
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            else f"<td>{escape(cell_text(v))}</td>"
            for v in r
        )
        body.append(f"<tr>{tds}</tr>")
    more = (
        f"<p class=meta>First {MAX_TABLE_ROWS} of {len(rows)} rows: the CSV holds all.</p>"
        if len(rows) > MAX_TABLE_ROWS
        else ""
    )
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>{more}'


def _header(report: Report) -> str:
    a = report.analysis
    n = a.counts
    hosts = "; ".join(
        f"{escape(h.hostname)}: {escape(h.os)}, kernel {escape(h.kernel)}, {'?' if h.cpus is None else h.cpus} CPUs, "
        f"{escape(', '.join(v for v in h.tools.values() if v))}"
        for h in a.hosts
    )
    smoke = f'<div class="warn smoke"><b>{escape(SMOKE_BANNER.format(n=a.smoke))}</b></div>' if a.smoke else ""
    return (
        f"<h1>{escape(report.title)}</h1>{smoke}<p class=meta>experiments: {escape(', '.join(a.experiments))}<br>"
        f"{len(a.results)} stored trials: {n.get('ok', 0)} ok, {n.get('failed', 0)} failed, "
        f"{n.get('unsupported', 0)} unsupported; {len(a.cells)} configurations<br>hosts: {hosts}</p>"
        '<nav><a href="#warnings">warnings</a><a href="#advice">advice</a><a href="#findings">findings</a>'
        '<a href="#paper">the studies beside</a>'
        '<a href="#figures">figures</a><a href="#tables">tables</a></nav>'
    )


def _warnings(a: Analysis) -> str:
    if not a.warnings:
        return '<h2 id="warnings">Warnings</h2><p>No warning: every check passed.</p>'
    items = []
    for w in a.warnings:
        shown = escape(", ".join(w.items[:12])) + (f" and {len(w.items) - 12} more" if len(w.items) > 12 else "")
        items.append(
            f'<div class="warn"><b>{escape(w.kind)}</b>: {escape(w.message)}'
            + (f"<br><small>{shown}</small>" if w.items else "")
            + (f'<span class="fix">What to do: {escape(w.fix)}</span>' if w.fix else "")
            + "</div>"
        )
    return f'<h2 id="warnings">Warnings ({len(a.warnings)})</h2>' + "".join(items)


def _advice(a: Analysis) -> str:
    texts = [t for b in a.best for t in b.lines()]
    texts += [c.text() for c in a.containers] + [m.text() for m in a.placement_advice]
    items = [f"<li>{escape(t)}</li>" for t in texts[:MAX_LIST]]
    if len(texts) > MAX_LIST:
        items.append(f"<li>... {len(texts) - MAX_LIST} more in csv/advice.csv and csv/containers.csv</li>")
    body = f"<ul>{''.join(items)}</ul>" if items else "<p>Nothing to advise: no two stacks ran the same workload.</p>"
    return (
        '<h2 id="advice">Advice</h2><p class=meta>Best stack per workload and load (device performance only; '
        "the raw device is the baseline, not a candidate). Each stack is compared with the leader on the 95% "
        "interval of the ratio of their means: worse, equivalent within the margin (the spec's `margin`, 5% by "
        "default), or undecided, with the smallest margin the data support. The intervals of `repetitions: auto` "
        "stay valid although the run looked after every round (alpha spent over the looks).</p>" + body
    )


def _numbers(o: Outcome) -> str:
    if len(o.numbers) <= MAX_LIST:
        return o.detail
    return "; ".join(o.numbers[:MAX_LIST]) + f"; ... {len(o.numbers) - MAX_LIST} more in csv/findings.csv"


def _finding_rows(pairs: list[tuple[Finding, Outcome]]) -> str:
    rows = []
    for f, o in pairs:
        cls = o.status.replace(" ", "-")
        rows.append(
            f'<tr><td><span class="st {cls}">{escape(o.status)}</span></td><td><b>{escape(f.id)}</b><br>'
            f"{escape(f.claim)}<br><small>source: {escape(f.source)}"
            f"{'<br>the study: ' + escape(said(f)) if said(f) else ''}</small></td><td>{escape(f.criterion)}"
            f"</td><td>{escape(_numbers(o))}</td></tr>"
        )
    return (
        "<table><thead><tr><th>status</th><th>claim</th><th>criterion here</th><th>numbers</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _findings(a: Analysis) -> str:
    counts = {s: sum(1 for _, o in a.findings if o.status == s) for s in STATUSES}
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    measured = [(f, o) for f, o in a.findings if o.status != "not measured"]
    rest = [(f, o) for f, o in a.findings if o.status == "not measured"]
    out = (
        f'<h2 id="findings">Findings of the seed studies ({summary})</h2><p class=meta>Each claim of the studies '
        "in docs/studies.md, checked on these results with the criterion shown: held or not held only when the "
        "95% interval of the compared quantity lies wholly on one side of it, inconclusive otherwise, with what "
        "would decide it.</p>"
    )
    out += _finding_rows(measured) if measured else "<p>None of the claims is measured by these results.</p>"
    if rest:
        out += (
            f"<details><summary>{len(rest)} claim(s) not measured by these results</summary>"
            f"{_finding_rows(rest)}</details>"
        )
    return out


def _paper(a: Analysis) -> str:
    """The studies' published numbers beside the same quantities here, each side against its own baseline."""
    out = (
        '<h2 id="paper">The studies beside these results</h2><p class=meta>The numbers the studies print '
        "(docs/studies.md; src/strata/analysis/studies/paper.yaml) beside the same quantity here. Their hardware is "
        "not yours: compare the shape, each side read against its own best configuration (1.00) or against "
        "the configuration the value is relative to, each in its own unit, never a paper's number as if it "
        "were measured here.</p>"
    )
    if not a.beside:
        return out + "<p>None of the studies' published numbers is measured by these results.</p>"
    out += _differs(list(dict.fromkeys(b.study for b in a.beside)))
    for b in a.beside:
        if b.kind == "stated":
            cols = ["configuration", "the study says", "x its baseline", "here: x the same baseline"]
            rows = [
                [p.label, p.value.what, _x(paper_ratio(p.value)), _x(p.yours) if not p.value.not_reproduced else "-"]
                for p in b.pairs
            ]
        else:
            cols = ["configuration", "the study", "of its best", "here", "of its best", "as run here"]
            rows = [
                [
                    b.label(p),
                    f"{p.value.value:g} {'%' if p.value.unit == 'percent' else p.value.unit}",
                    _x(b.relative(p, False)),
                    _num(p.yours, p.unit_here) if not p.value.not_reproduced else "not reproduced (paper.csv says why)",
                    _x(b.relative(p, True)),
                    p.here,
                ]
                for p in b.pairs
            ]
        out += f"<h3>{escape(b.shape())}</h3>{table_html(cols, rows)}"
    return out


def _differs(ids: list[str]) -> str:
    """What differs here from each study's method, and why (analysis/studies/studies.yaml, as docs/studies.md)."""
    out = ""
    for s in filter(None, (studies.by_study(i) for i in ids)):
        items = "".join(f"<li><b>{escape(what)}</b>: {escape(text)}</li>" for what, text in s.differs)
        out += f"<details><summary>study {s.study}: what differs here and why</summary><ul>{items}</ul></details>"
    return out


def _x(v: float | None) -> str:
    return "not measured here" if v is None else f"{v:.2f}"


def _num(v: float | None, unit: str = "") -> str:
    return "not measured here" if v is None else f"{v:,.3g} {unit}".strip()


def _figure(i: int, f: Figure, svg: bytes | str | None, png: bool = False) -> str:
    csv = f'<a href="csv/{f.id}.csv">CSV</a>'
    if svg is None:
        return f'<li id="{escape(f.id)}">{escape(f.title)} ({len(f.table.rows)} rows): {csv}</li>'
    raster = f'<a href="figures/{f.id}.png">PNG</a> ' if png else ""
    files = f'<span class=files>files: <a href="figures/{f.id}.svg">SVG</a> {raster}{csv}</span>'
    return (
        f'<figure id="{escape(f.id)}" data-kind="{f.kind}">{inline_svg(svg, f"f{i}")}<figcaption>'
        f"<b>{escape(f.title)}</b>. {escape(f.caption)} {files}</figcaption><details><summary>table "
        f"({len(f.table.rows)} rows)</summary>{table_html(f.table.columns, f.table.rows)}</details></figure>"
    )


def render(report: Report, svgs: dict[str, bytes], png: bool = False) -> bytes:
    """The page; `png`: the figures' PNG files are written too, and linked beside the SVG and CSV."""
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(report.title)}</title><style>{STYLE}</style></head><body>",
        _header(report),
        _warnings(report.analysis),
        _advice(report.analysis),
        _findings(report.analysis),
        _paper(report.analysis),
        '<h2 id="figures">Figures</h2>',
    ]
    if not report.figures:
        parts.append("<p>No figure: the results hold no successful measurement.</p>")
    parts += [_figure(i, f, svgs[f.id], png) for i, f in enumerate(report.figures) if f.id in svgs]
    rest = [_figure(i, f, None) for i, f in enumerate(report.figures) if f.id not in svgs]
    if rest:
        parts.append(
            f"<p>{len(rest)} more figure(s) not drawn (the report draws a bounded number of each kind); "
            f"their tables:</p><ul>{''.join(rest)}</ul>"
        )
    parts.append('<h2 id="tables">Tables: file system x path x containers</h2>')
    if not any(t.id.startswith("table-") for t in report.tables):
        parts.append(
            "<p class=meta>Not measured: these tables need two or more file systems or paths "
            "(volume, bind, layer) or container counts for the same workload (seed study 004, Tables 2-5).</p>"
        )
    for t in report.tables:
        parts.append(f'<h3 id="{escape(t.id)}">{escape(t.title)}</h3>{table_html(t.columns, t.rows)}')
    parts.append(
        f"<footer class=meta><p>strata {escape(__version__)}: generated from stored results only.</p>"
        f"</footer><script>{SCRIPT}</script></body></html>\n"
    )
    return "".join(parts).encode()

"""Figures as SVG bytes, and PNG on request (matplotlib, Agg; no pyplot global state).

Output is deterministic for snapshot tests: a fixed `svg.hashsalt`, text kept
as text (`svg.fonttype: none`, also what lets a browser test find the axis
labels), no date or creator in the metadata. Each figure follows the seed
study it reproduces: bars relative to raw as study 003's Figure 3, latency
breakdown as its Figure 4, lines with confidence bands for sweeps, scaling
with the peak marked as its Figure 6a.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure as MplFigure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import NullLocator  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.typing import RcKeyType

    from strata.report.parts import Figure

RC: dict[RcKeyType, str | float | bool] = {  # matplotlib rcParams, each as matplotlib reads it
    "svg.hashsalt": "strata",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.axisbelow": True,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.fontsize": 8,
    "legend.frameon": False,
}
SVG_META = {"Date": None, "Creator": None}
PNG_META = {"Software": None}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
LAT_COLORS = ("#9ecae1", "#3182bd", "#08519c")  # a latency breakdown's parts, light to dark; the whole darkest
CACHE_STYLE = {"color": "#d9d9d9", "edgecolor": "#636363", "hatch": "///"}
# Bars and points drawn apart from the device numbers, by why: a cache the bytes show, or above the raw
# device while the device moved the bytes (unconfirmed).
APART_STYLE = {
    "cache": CACHE_STYLE,
    "unconfirmed": {"color": "#fff2b3", "edgecolor": "#8a6d00", "hatch": "..."},
    "emulated": {"color": "#e5d8f0", "edgecolor": "#5e3c99", "hatch": "xx"},
}
APART_LABEL = {
    "cache": "cache answered (not device)",
    "unconfirmed": "unconfirmed (above raw, bytes moved)",
    "emulated": "emulated VM (TCG): not storage",
}
# A group another flag draws apart (its declaration's `apart`, strata/results/flags/declared.py), after those above.
OTHER_APART_STYLE = {"color": "#f0f0f0", "edgecolor": "#636363", "hatch": "\\\\"}


def render(fig: Figure, png: bool = False) -> tuple[bytes, bytes | None]:
    """(svg, png) bytes of a report Figure, built once; the PNG (None unless asked for) is a second
    rasterized drawing of the same figure, which costs twice the SVG's time: only slides need it."""
    with matplotlib.rc_context(RC):
        mpl = DRAW[fig.kind](fig)
        _title(mpl, fig.title)
        svg = io.BytesIO()
        mpl.savefig(svg, format="svg", metadata=SVG_META)
        if not png:
            return svg.getvalue(), None
        raster = io.BytesIO()
        mpl.savefig(raster, format="png", metadata=PNG_META)
    return svg.getvalue(), raster.getvalue()


CHAR_IN = 0.068  # width of one 8-9 pt character, inches


def _layout(
    mpl: MplFigure,
    rot_len: int = 0,
    legend_len: int = 0,
    ytick_len: int = 6,
    panel_titles: bool = False,
    wspace: float | None = None,
    first_tick_len: int = 0,
) -> None:
    """Fixed margins from the longest labels: tight_layout costs a third of the drawing time.
    `first_tick_len`: the first x label, rotated 25 degrees and right-aligned, reaches left of the axes."""
    w, h = mpl.get_size_inches()
    left = max(CHAR_IN * ytick_len + 0.55, 0.9 * CHAR_IN * first_tick_len - 0.25) / w
    right = 1 - ((CHAR_IN * legend_len + 0.8) / w if legend_len else 0.25 / w)
    bottom = (0.5 + (0.45 * CHAR_IN * rot_len + 0.1 if rot_len else 0.2)) / h
    top = 1 - (0.62 if panel_titles else 0.42) / h
    mpl.subplots_adjust(
        left=min(left, 0.45),
        right=max(right, left + 0.3),
        bottom=min(bottom, 0.6),
        top=max(top, bottom + 0.2),
        hspace=0.25,
        wspace=wspace if wspace is not None else 0.15 + (CHAR_IN * ytick_len + 0.5) / w,
    )


WRAP = 22  # characters per line of a rotated stack label


def _wrap(label: str) -> str:
    """A long stack label on several lines, broken after its "/": rotated, it then stays in the figure."""
    lines, cur = [], ""
    for part in label.split("/"):
        piece = part if not cur else "/" + part
        if cur and len(cur) + len(piece) > WRAP:
            lines.append(cur + "/")
            cur = part
        else:
            cur += piece
    return "\n".join(lines + [cur])


def _rot_len(labels: Iterable[object]) -> int:
    """How far rotated labels reach down, in characters: their longest line plus a line per extra line."""
    return max((_maxlen([x]) + 3 * str(x).count("\n") for x in labels), default=0)


def _maxlen(labels: Iterable[object]) -> int:
    """The longest line of any label (wrapped labels count by their longest line)."""
    return max((len(line) for x in labels for line in str(x).split("\n")), default=0)


def _title(mpl: MplFigure, title: str) -> None:
    """The figure's title, on two lines when it does not fit one (margins made room for one)."""
    w, h = mpl.get_size_inches()
    lines = textwrap.wrap(title, int(w * 13))
    if len(lines) > 1:
        lines = [lines[0], " ".join(lines[1:])]
        mpl.subplots_adjust(top=mpl.subplotpars.top - 0.17 / h)
    mpl.suptitle("\n".join(lines), fontsize=10, x=0.01, ha="left")


def _ci(values: list[float], lows: list[float | None], highs: list[float | None]) -> list[list[float]]:
    lo = [v - low if low is not None else 0 for v, low in zip(values, lows)]
    hi = [h - v if h is not None else 0 for v, h in zip(values, highs)]
    return [lo, hi]


def _bars(fig: Figure) -> MplFigure:
    bars = fig.data["bars"]
    stacks = list(dict.fromkeys(b["label"] for b in bars))
    loads = list(dict.fromkeys(b["load"] for b in bars))
    # each load keeps one slot in every group, apart or not, so low and high never swap places
    order = {None: 0, "cache": 1, "unconfirmed": 2, "emulated": 3}
    aparts = [a for a in order if a] + sorted({b["apart"] for b in bars if b["apart"] and b["apart"] not in order})
    series = sorted(
        dict.fromkeys((b["load"], b["apart"]) for b in bars),
        key=lambda s: (loads.index(s[0]), order.get(s[1], len(order)), s[1] or ""),
    )
    width = 0.8 / max(1, len(loads))
    mpl = MplFigure(figsize=(min(14, max(6.5, 0.45 * len(bars) + 2.5)), 4.2))
    ax = mpl.add_subplot()
    for load, apart in series:
        sel = [b for b in bars if b["load"] == load and b["apart"] == apart]
        slot = loads.index(load) - (len(loads) - 1) / 2
        xs = [stacks.index(b["label"]) + slot * width for b in sel]
        vals = [b["value"] for b in sel]
        color = PALETTE[loads.index(load) % len(PALETTE)]
        style: dict[str, Any] = (  # matplotlib's keyword arguments of a bar
            dict(APART_STYLE.get(apart, OTHER_APART_STYLE), edgecolor=color) if apart else {"color": color}
        )
        ax.bar(xs, vals, width * 0.95, **style)
        with_ci = [(x, b) for x, b in zip(xs, sel) if b["low"] is not None and b["high"] is not None]
        if with_ci:  # whiskers only where an interval exists
            cx, cb = zip(*with_ci)
            cv = [b["value"] for b in cb]
            ax.errorbar(
                cx,
                cv,
                yerr=_ci(cv, [b["low"] for b in cb], [b["high"] for b in cb]),
                fmt="none",
                ecolor="black",
                elinewidth=0.8,
                capsize=2,
            )
        for x, b in zip(xs, sel):
            if apart:
                ax.annotate(apart, (x, b["value"]), ha="center", va="bottom", fontsize=7, color="#636363")
    if len(stacks) < 3:
        ax.set_xlim(-1.2, len(stacks) + 0.2)
    handles: list[Artist] = [Patch(color=PALETTE[i % len(PALETTE)], label=f"load {ld}") for i, ld in enumerate(loads)]
    for apart in aparts:
        if any(b["apart"] == apart for b in bars):
            st = APART_STYLE.get(apart, OTHER_APART_STYLE)
            label = APART_LABEL.get(apart, f"{apart} (not device)")
            handles.append(Patch(facecolor=st["color"], edgecolor=st["edgecolor"], hatch=st["hatch"], label=label))
    if fig.data.get("has_raw"):
        handles.append(ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8, label="raw device = 1.0"))
        ax.set_ylabel("throughput relative to raw device")
    else:
        ax.set_ylabel(fig.data.get("unit", ""))
    ticks = [_wrap(s) for s in stacks]
    ax.set_xticks(range(len(stacks)), ticks, rotation=25, ha="right")
    ax.set_xlabel("stack")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _layout(mpl, _rot_len(ticks), _maxlen(h.get_label() for h in handles), first_tick_len=_rot_len(ticks[:1]))
    return mpl


def _latency(fig: Figure) -> MplFigure:
    panels = fig.data["panels"]
    n = max(len(p["stacks"]) for p in panels)
    mpl = MplFigure(figsize=(min(14, max(6.5, 1.1 * n * len(panels) + 2)), 4.2))
    axes = mpl.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    kinds = fig.data["kinds"]  # the workload's breakdown: its parts, then the whole
    step, width = (0.27, 0.26) if len(kinds) <= len(LAT_COLORS) else (0.81 / len(kinds), 0.78 / len(kinds))
    colors = LAT_COLORS[-len(kinds) :] if len(kinds) <= len(LAT_COLORS) else PALETTE
    for ax, p in zip(axes, panels):
        labels = [s["label"] for s in p["stacks"]]
        for ki, kind in enumerate(kinds):
            xs = [i + (ki - (len(kinds) - 1) / 2) * step for i in range(len(labels))]
            means = [s.get(f"{kind}_mean_us") or 0 for s in p["stacks"]]
            p99 = [s.get(f"{kind}_p99_us") for s in p["stacks"]]
            ax.bar(xs, means, width, color=colors[ki % len(colors)], label=f"{kind} mean")
            pts = [(x, v) for x, v in zip(xs, p99) if v]
            if pts:
                ax.scatter(
                    *zip(*pts), marker="_", s=120, color="black", zorder=3, label="p99" if kind == kinds[-1] else None
                )
        ax.set_yscale("log")
        ax.yaxis.set_minor_locator(NullLocator())  # minor log ticks cost a third of the drawing time
        in_flight = f" ({p['outstanding']} I/Os in flight)" if p.get("outstanding") is not None else ""
        ax.set_title(f"load {p['load']}{in_flight}", fontsize=9)
        ax.set_xticks(range(len(labels)), [_wrap(x) for x in labels], rotation=25, ha="right")
        ax.set_xlabel("stack")
    axes[0].set_ylabel("latency (\u00b5s, log scale)")
    _whole_decades(axes[0], [v for p in panels for s in p["stacks"] for k, v in s.items() if k.endswith("_us") and v])
    axes[-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ticks = [_wrap(s["label"]) for p in panels for s in p["stacks"]]
    first = max((_rot_len([_wrap(p["stacks"][0]["label"])]) for p in panels if p["stacks"]), default=0)
    # rotated labels reach left of their tick: the first panel's first label needs that room in the margin,
    # and each later panel's first label needs it between the panels
    _layout(
        mpl,
        _rot_len(ticks),
        9,
        panel_titles=True,
        wspace=0.08 + 0.9 * CHAR_IN * first / (mpl.get_size_inches()[0] / len(panels)),
        first_tick_len=first,
    )
    return mpl


def _whole_decades(ax: Axes, values: list[float]) -> None:
    """A log axis whose values lie within one decade shows one tick or none (minor ticks are off), and
    bars from its bottom are slivers: then it spans the decades around them."""
    if values and math.ceil(math.log10(min(values))) >= math.floor(math.log10(max(values))):
        ax.set_ylim(10 ** math.floor(math.log10(min(values))), 10 ** (math.floor(math.log10(max(values))) + 1))


# A line's point as the figure's data holds it (report/model.py `_point`): x, mean, the interval's low and
# high (None without one), and the group it is drawn apart in (None: on the line).
Point = tuple[float, float, float | None, float | None, str | None]


def _line(ax: Axes, i: int, label: str, pts: list[Point], per: bool = False) -> tuple[list[float], list[float]]:
    """A mean line with its 95% band where one exists; points drawn apart (cache, unconfirmed) as grey
    crosses, never on the line."""
    dev = [p for p in pts if not p[4]]
    div: Callable[[Point], float] = (lambda p: p[0]) if per else (lambda p: 1)
    xs = [p[0] for p in dev]
    ys = [p[1] / div(p) for p in dev]
    color = PALETTE[i % len(PALETTE)]
    ax.plot(xs, ys, marker="o", markersize=3.5, color=color, label=label)
    banded = [(lo / div(p), hi / div(p)) for p in dev if (lo := p[2]) is not None and (hi := p[3]) is not None]
    if len(banded) == len(dev):  # the band only where every point has an interval
        ax.fill_between(xs, [lo for lo, _ in banded], [hi for _, hi in banded], color=color, alpha=0.18, linewidth=0)
    for p in pts:
        if p[4]:
            ax.scatter([p[0]], [p[1] / div(p)], marker="x", color="#636363", zorder=3)
            ax.annotate(
                p[4], (p[0], p[1] / div(p)), textcoords="offset points", xytext=(4, 3), fontsize=7, color="#636363"
            )
    return xs, ys


def _sweep(fig: Figure) -> MplFigure:
    mpl = MplFigure(figsize=(7.5, 4.2))
    ax = mpl.add_subplot()
    allx: set[float] = set()
    for i, ln in enumerate(fig.data["lines"]):
        _line(ax, i, ln["label"], ln["points"])
        allx.update(p[0] for p in ln["points"])
    if allx and min(allx) > 0 and max(allx) / min(allx) >= 8:
        ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(allx), [f"{x:g}" for x in sorted(allx)])
    ax.minorticks_off()
    ax.set_xlabel(fig.data["xlabel"])
    ax.set_ylabel(fig.data["unit"])
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _layout(mpl, 0, _maxlen(ln["label"] for ln in fig.data["lines"]))
    return mpl


def _scaling(fig: Figure) -> MplFigure:
    mpl = MplFigure(figsize=(10, 4.2))
    agg, per = mpl.subplots(1, 2)
    for i, ln in enumerate(fig.data["lines"]):
        xs, ys = _line(agg, i, ln["label"], ln["points"])
        _line(per, i, ln["label"], ln["points"], per=True)
        py = ys[xs.index(ln["peak"])]
        agg.scatter([ln["peak"]], [py], marker="*", s=160, color=PALETTE[i % len(PALETTE)], edgecolor="black", zorder=4)
        agg.annotate(
            f"peak {ln['peak']}", (ln["peak"], py), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=7
        )
    unit = fig.data["unit"]
    for ax, what in ((agg, f"aggregate {unit}"), (per, f"{unit} per container")):
        ax.set_xlabel("concurrent containers")
        ax.set_ylabel(what)
        ax.set_ylim(bottom=0)
        ax.xaxis.get_major_locator().set_params(integer=True)
    per.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _layout(mpl, 0, _maxlen(ln["label"] for ln in fig.data["lines"]))
    return mpl


def _detail(fig: Figure) -> MplFigure:
    """Four panels against the swept quantity: p99 and mean latency, host CPU, device bandwidth."""
    mpl = MplFigure(figsize=(10, 6.4))
    axes = mpl.subplots(2, 2).flatten()
    for ax, (key, label) in zip(axes, fig.data["panels"]):
        drawn = 0
        for i, ln in enumerate(fig.data["lines"]):
            pts = [(x, d[key]) for x, d in ln["points"] if d.get(key) is not None and finite(d[key])]
            if pts:
                ax.plot(*zip(*pts), marker="o", markersize=3.5, color=PALETTE[i % len(PALETTE)], label=ln["label"])
                drawn += 1
        if not drawn:  # an empty 0..1 frame would read as zeros
            ax.text(0.5, 0.5, "not sampled in these trials", ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
        else:
            ax.set_ylim(bottom=0)
            ax.xaxis.get_major_locator().set_params(integer=True)  # counts and rates are whole numbers
        ax.set_xlabel(fig.data["xlabel"])
        ax.set_ylabel(label)
    handles, labels = max((ax.get_legend_handles_labels() for ax in axes), key=lambda hl: len(hl[0]))
    if handles:
        axes[1].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _layout(mpl, 0, _maxlen(ln["label"] for ln in fig.data["lines"]))
    mpl.subplots_adjust(hspace=0.45)
    return mpl


def _series(fig: Figure) -> MplFigure:
    series = fig.data["series"]
    mpl = MplFigure(figsize=(7.5, 1.5 * len(series) + 0.8))
    axes = mpl.subplots(len(series), 1, sharex=True, squeeze=False)[:, 0]
    for i, (ax, (name, pts)) in enumerate(zip(axes, series.items())):
        lines = pts if isinstance(pts, dict) else {None: pts}  # one line per container, or one line
        for j, (label, p) in enumerate(lines.items()):
            ax.plot(
                [x for x, _ in p], [v for _, v in p], marker=".", label=label, color=PALETTE[(i + j) % len(PALETTE)]
            )
        if isinstance(pts, dict):
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.set_ylabel(name, fontsize=8)
        ax.set_ylim(bottom=0)
    axes[-1].set_xlabel("seconds since start")
    _layout(mpl, 0, 12 if any(isinstance(p, dict) for p in series.values()) else 0, 12)
    return mpl


def _amplification(fig: Figure) -> MplFigure:
    """Bytes written per workload byte: a bar per layer (the device under test darkest) for each stack, with
    its 95% interval, and the workload's own bytes (1.0) as a line."""
    bars = fig.data["bars"]
    stacks = list(dict.fromkeys(b["label"] for b in bars))
    layers = list(dict.fromkeys(b["layer"] for b in bars))
    colors = LAT_COLORS[::-1] if len(layers) <= len(LAT_COLORS) else PALETTE
    shown = [v for b in bars for v in (b["value"], b["high"]) if v is not None and v > 0]
    # a shared disk below may carry tens of times the workload's bytes (other tenants): then a log scale, so
    # that the device under test's bars near 1.0 stay readable
    floor = 10 ** math.floor(math.log10(min(shown))) if shown and max(shown) > 10 * min(shown) else None
    width = 0.8 / max(1, len(layers))
    mpl = MplFigure(figsize=(min(14, max(6.5, 0.45 * len(bars) + 2.5)), 4.2))
    ax = mpl.add_subplot()
    for i, layer in enumerate(layers):
        sel = [b for b in bars if b["layer"] == layer]
        xs = [stacks.index(b["label"]) + (i - (len(layers) - 1) / 2) * width for b in sel]
        vals = [b["value"] for b in sel]
        ax.bar(xs, vals, width * 0.95, color=colors[i % len(colors)], label=layer)
        with_ci = [(x, b) for x, b in zip(xs, sel) if b["low"] is not None and b["high"] is not None]
        if with_ci:
            cx, cb = zip(*with_ci)
            cv = [b["value"] for b in cb]
            lows = [max(b["low"], floor) if floor else b["low"] for b in cb]
            yerr = _ci(cv, lows, [b["high"] for b in cb])
            ax.errorbar(cx, cv, yerr=yerr, fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    if len(stacks) < 3:
        ax.set_xlim(-1.2, len(stacks) + 0.2)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8, label="the workload's bytes = 1.0")
    if floor:
        ax.set_yscale("log")
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_ylim(bottom=floor)
        ax.set_ylabel("bytes written per workload byte (log scale)")
    else:
        ax.set_ylabel("bytes written per workload byte")
        ax.set_ylim(bottom=0)
    ticks = [_wrap(x) for x in stacks]
    ax.set_xticks(range(len(stacks)), ticks, rotation=25, ha="right")
    ax.set_xlabel("stack")
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _layout(mpl, _rot_len(ticks), _maxlen(labels), first_tick_len=_rot_len(ticks[:1]))
    return mpl


COMPARE_COLORS = {"higher": "#2ca02c", "lower": "#d62728", "same": "#6baed6", "undecided": "#bdbdbd"}


def _compare(fig: Figure) -> MplFigure:
    rows = fig.data["rows"]
    colors = dict(COMPARE_COLORS)
    if fig.data.get("lower_is_better"):  # latency: higher is the bad direction
        colors["higher"], colors["lower"] = COMPARE_COLORS["lower"], COMPARE_COLORS["higher"]
    mpl = MplFigure(figsize=(9, max(2.5, 0.32 * len(rows) + 1.4)))
    ax = mpl.add_subplot()
    ys = list(range(len(rows)))[::-1]
    # one call per kind of artist, not one per row: a runtimes figure of 10,000 trials has 136 rows
    ax.barh(ys, [100 * r["rel"] for r in rows], color=[colors[r["status"]] for r in rows], height=0.7)
    whiskers = [(y, r) for y, r in zip(ys, rows) if r["low"] is not None]
    if whiskers:
        wy, wr = zip(*whiskers)
        ax.hlines(wy, [100 * r["low"] for r in wr], [100 * r["high"] for r in wr], color="black", linewidth=1)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(ys, [r["label"] for r in rows], fontsize=7)
    ax.set_xlabel(fig.data.get("xlabel", "change of B relative to A (%), 95% interval"))
    ax.legend(
        handles=[
            Patch(color=c, label=t)
            for t, c in (
                ("higher (interval above 0)", colors["higher"]),
                ("lower (interval below 0)", colors["lower"]),
                ("same (interval within the margin)", COMPARE_COLORS["same"]),
                ("undecided", COMPARE_COLORS["undecided"]),
            )
        ],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
    )
    _layout(mpl, 0, 26, min(60, _maxlen(r["label"] for r in rows)))
    return mpl


DRAW: dict[str, Callable[[Figure], MplFigure]] = {
    "ratio": _bars,
    "throughput": _bars,
    "latency": _latency,
    "sweep": _sweep,
    "scaling": _scaling,
    "detail": _detail,
    "series": _series,
    "compare": _compare,
    "amplification": _amplification,
}


def finite(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))

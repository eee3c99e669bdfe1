"""The reports' one template system: Jinja2 templates in report/templates, one page layout
(templates/page.html) for the run report, the comparison of runs and `mpilab compare`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup

from mpilab.report import bigfigs, figs


@dataclass
class Card:
    """A headline value of the summary: data-metric/data-value hooks carry the SI value."""
    label: str
    text: str
    value: float | None = None
    metric: str | None = None
    detail: str = ""
    flags: list[str] = field(default_factory=list)


@dataclass
class Section:
    id: str
    title: str
    items: list[tuple[str, Any]] = field(default_factory=list)

    def h3(self, text: str, anchor: str = "") -> None:
        self.items.append(("h3", (text, anchor)))

    def note(self, text: str) -> None:
        self.items.append(("note", text))

    def note_html(self, html: str) -> None:
        self.items.append(("note", Markup(html)))

    def warn(self, text: str) -> None:
        self.items.append(("warn", text))

    def add(self, kind: str, obj: Any) -> None:
        self.items.append((kind, obj))


class FigureSink:
    """Turns Figures into page HTML: interactive (figs.figure_html) or, with static=True,
    embedded SVG for papers. Figure ids are made unique on the page."""

    def __init__(self, static: bool = False, shared_runtime: bool = False) -> None:
        self.static = static
        self.shared_runtime = shared_runtime  # plotly.js as a file beside the page
        self.count = 0
        self.ids: set[str] = set()

    def uid(self, base: str) -> str:
        stem = "".join(ch if ch.isalnum() else "-" for ch in base).strip("-") or "fig"
        name, k = f"fig-{stem}", 2
        while name in self.ids:
            name, k = f"fig-{stem}-{k}", k + 1
        self.ids.add(name)
        return name

    def html(self, fig: figs.Figure | bigfigs.Heatmap | bigfigs.Boxes) -> Markup:
        self.count += 1
        if isinstance(fig, bigfigs.Heatmap | bigfigs.Boxes):
            return Markup(bigfigs.static_html(fig) if self.static else bigfigs.figure_html(fig))
        return Markup(figs.static_html(fig) if self.static else figs.figure_html(fig))

    def runtime(self) -> Markup:
        return Markup("" if self.static or not self.count
                      else figs.runtime_script(self.shared_runtime))

    @property
    def uses_runtime_file(self) -> bool:
        return self.shared_runtime and not self.static and self.count > 0


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("mpilab.report", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=False, lstrip_blocks=False)


# control characters other than tab, newline and carriage return (C0, DEL, C1)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """The page with every control character (a NUL or an escape sequence copied from a
    results file) shown as \\xNN text: never raw in the HTML. The page's own markup and
    the figures' JSON have none, so the whole page is treated at once."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def page(title: str, subtitle: str, sections: list[Section], sink: FigureSink,
         banners: list[str] | None = None) -> str:
    sections = [s for s in sections if s.items]
    for s in sections:
        for kind, obj in s.items:
            if kind == "table":
                obj.unify_units()
    return visible(_env().get_template("page.html").render(
        title=title, subtitle=subtitle, sections=sections, banners=banners or [],
        runtime=sink.runtime()))

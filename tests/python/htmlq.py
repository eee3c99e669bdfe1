"""A small reader of the reports' HTML for tests (stdlib html.parser): sections, tables
with their cells and attributes, figures and the summary's data-metric hooks."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class TableQ:
    attrs: dict[str, str]
    section: str
    head: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    cell_attrs: list[list[dict[str, str]]] = field(default_factory=list)
    row_attrs: list[dict[str, str]] = field(default_factory=list)
    in_details: bool = False

    def col(self, name: str) -> list[str]:
        k = self.head.index(name)
        return [r[k] for r in self.rows]

    def row(self, first: str) -> list[str]:
        return next(r for r in self.rows if r and r[0] == first)


@dataclass
class Page:
    sections: list[str] = field(default_factory=list)
    tables: list[TableQ] = field(default_factory=list)
    figures: list[dict[str, str]] = field(default_factory=list)
    metrics: dict[str, str] = field(default_factory=dict)
    metric_text: dict[str, str] = field(default_factory=dict)
    banners: list[str] = field(default_factory=list)
    scripts: int = 0

    def table(self, tid: str) -> TableQ:
        return next(t for t in self.tables if t.attrs.get("id") == tid)

    def in_section(self, sid: str) -> list[TableQ]:
        return [t for t in self.tables if t.section == sid]


_VOID = {"meta", "input", "br", "img", "hr", "link", "wbr", "col", "source"}


class _P(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.section = ""
        self.details = 0
        self.t: TableQ | None = None
        self.cell: list[str] | None = None
        self.in_head = False
        self.metric_stack: list[tuple[str, int]] = []
        self.depth = 0
        self.banner: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag in _VOID:
            return
        self.depth += 1
        if tag == "section":
            self.section = a.get("id", "")
            self.page.sections.append(self.section)
        elif tag == "details":
            self.details += 1
        elif tag == "script":
            self.page.scripts += 1
        elif tag == "table":
            self.t = TableQ(a, self.section, in_details=self.details > 0)
            self.page.tables.append(self.t)
        elif tag == "thead":
            self.in_head = True
        elif tag == "tr" and self.t is not None and not self.in_head:
            self.t.rows.append([])
            self.t.cell_attrs.append([])
            self.t.row_attrs.append(a)
        elif tag in ("td", "th") and self.t is not None:
            self.cell = []
            if tag == "td":
                self.t.cell_attrs[-1].append(a)
        elif tag == "div" and "mpilab-fig" in a.get("class", "").split():
            self.page.figures.append(a)
        elif tag == "div" and a.get("id") == "partial-banner":
            self.banner = []
        if "data-metric" in a:
            self.page.metrics[a["data-metric"]] = a.get("data-value", "")
            self.metric_stack.append((a["data-metric"], self.depth))
            self.page.metric_text[a["data-metric"]] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        if self.metric_stack and self.metric_stack[-1][1] == self.depth:
            self.metric_stack.pop()
        self.depth -= 1
        if tag == "details":
            self.details -= 1
        elif tag == "thead":
            self.in_head = False
        elif tag == "table":
            self.t = None
        elif tag in ("td", "th") and self.t is not None and self.cell is not None:
            text = "".join(self.cell).strip()
            (self.t.head if self.in_head else self.t.rows[-1]).append(text)
            self.cell = None
        elif tag == "div" and self.banner is not None:
            self.page.banners.append("".join(self.banner).strip())
            self.banner = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)
        if self.banner is not None:
            self.banner.append(data)
        for name, _ in self.metric_stack:
            self.page.metric_text[name] += data


def parse(text: str) -> Page:
    p = _P()
    p.feed(text)
    return p.page

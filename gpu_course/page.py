"""A module's fixed paragraphs as a Markdown page beside it (`text/<module>.md`): `## name`
starts a section, read as one paragraph (`Page.text`) or as `- key, where: paragraph`
items (`Page.means`); `= name` repeats section `name`; `# ` and `<!--` lines are skipped."""
from __future__ import annotations

import re
import sys
from enum import Enum
from pathlib import Path

WHERE = ("gpu", "cpu")   # `show.findings.Where`'s values
_ITEM = re.compile(r"- ([^:]+): (.*)")


class Page:
    """The sections of one page, each read as a paragraph or as paragraphs by key."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.sections: dict[str, list[str]] = {}
        self.read: set[str] = set()
        name = None
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("## "):
                name = line[3:].strip()
                if name in self.sections:
                    raise ValueError(f"{self.path}:{number}: section {name!r} twice")
                self.sections[name] = []
            elif line.startswith(("# ", "<!--")) or not line.strip():
                continue
            elif name is None:
                raise ValueError(f"{self.path}:{number}: text before the first '## ' section")
            else:
                self.sections[name].append(line)

    @classmethod
    def of(cls, module: str) -> "Page":
        """The page of a module (its `__name__`): text/<its last name>.md in its folder."""
        folder = Path(sys.modules[module].__file__).resolve().parent
        return cls(folder / "text" / f"{module.rsplit('.', 1)[-1]}.md")

    def _lines(self, name: str) -> list[str]:
        if name not in self.sections:
            raise KeyError(f"{self.path.name} has no section {name!r}; it has: "
                           f"{', '.join(self.sections)}")
        self.read.add(name)
        return self.sections[name]

    def text(self, name: str) -> str:
        """Section `name` as one paragraph."""
        lines = self._lines(name)
        if any(_ITEM.fullmatch(line) for line in lines):
            raise ValueError(f"{self.path.name}: section {name!r} is a list; read it with means()")
        return " ".join(line.strip() for line in lines)

    def means(self, name: str, keys: type[Enum] | type[str] | None = None) -> dict:
        """Section `name` as {key: paragraph, or {where: paragraph}}: an item's first part read
        as `keys` (an enum by value, or str; default `Outcome`, imported late for the CLI's sake),
        the rest as where it applies."""
        if keys is None:
            from .show.findings.declarations import Outcome as keys
        at = f"{self.path.name}: section {name!r}"   # where a malformed line is
        items: list[list[str]] = []
        for line in self._lines(name):
            if match := _ITEM.fullmatch(line):
                items.append([match[1], match[2].strip()])
            elif items and line.startswith("  "):
                items[-1][1] += " " + line.strip()
            else:
                raise ValueError(f"{at}: {line!r} is neither an item nor indented")
        out: dict = {}
        for key, paragraph in items:
            if paragraph.startswith("= "):
                paragraph = self.text(paragraph[2:].strip())
            first, *where = [part.strip() for part in key.split(",")]
            try:
                head = keys(first)
            except ValueError:
                try:   # an enum's member by its name, in lower case: a value with ':' or ','
                    head = keys[first.upper().replace(" ", "_")]   # type: ignore[index]
                except KeyError:
                    allowed = ", ".join(repr(k.value) for k in keys)   # type: ignore[union-attr]
                    raise ValueError(f"{at}: {first!r} is not one of {allowed}") from None
            if not where:
                if head in out:
                    raise ValueError(f"{at}: {first!r} twice")
                out[head] = paragraph
                continue
            from .show.findings.declarations import Where
            place = tuple(Where(p) if p in WHERE else p for p in where)
            inner = out.setdefault(head, {})
            if isinstance(inner, str):
                raise ValueError(f"{at}: {first!r} both everywhere and for one place")
            inner[place[0] if len(place) == 1 else place] = paragraph
        return out

    def unread(self) -> list[str]:
        """The sections nothing has read: text the course keeps but never says."""
        return [name for name in self.sections if name not in self.read]

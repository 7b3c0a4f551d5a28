"""A Griffe extension for the API reference (mkdocs.yml, mkdocstrings ``extensions:``).

The library's docstrings are written for a reader of the source: reStructuredText roles
(``:func:`perfmodel.plan.plan```), NumPy-like sections whose entries are ``name : what it is``
(no type: the signature has it), and ``>>>`` examples. The reference renders docstrings as Markdown
(``docstring_style: null``), so before rendering each docstring is turned into the same text in
Markdown: a role becomes inline code, a section heading bold, its entries a list, an example a
Python code block, and a literal block's ``::`` a colon.
"""

from __future__ import annotations

import re

import griffe

#: ``:func:`x```, ``:class:`~a.b.C``` ...
_ROLE = re.compile(r":(?:func|class|meth|data|mod|attr|exc|obj|const|ref):`(~?)([^`]+)`")
#: An entry of a section: ``name : description`` (``a, b : ...``, ``**de : ...``).
_ENTRY = re.compile(r"^([*\w][\w*, ./]*?)\s+:\s+(.*)$")


def _role(match: re.Match) -> str:
    short, target = match.group(1), match.group(2)
    return f"``{target.rsplit('.', 1)[-1] if short else target}``"


def _examples(lines: list[str]) -> list[str]:
    """``>>>`` runs (with their ``...`` continuations and output lines) as fenced Python blocks."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith(">>>"):
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].lstrip())
                i += 1
            out += [f"{indent}```python", *[indent + b for b in block], f"{indent}```"]
            continue
        out.append(lines[i])
        i += 1
    return out


def _sections(text: str) -> str:
    """NumPy sections: the heading in bold, each ``name : text`` entry a list item."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    in_section = False
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        stripped = line.strip()
        if stripped and re.fullmatch(r"[A-Z][A-Za-z ]+", stripped) and re.fullmatch(r"\s*-{3,}", nxt):
            out += [f"**{stripped}**", ""]
            in_section = True
            i += 2
            continue
        if in_section:
            if not stripped:
                in_section = False
                out.append(line)
            elif (m := _ENTRY.match(line)) and not line.startswith((" ", "\t")):
                out.append(f"- `{m.group(1)}`: {m.group(2)}")
            else:
                out.append("    " + stripped)  # a continuation of the entry above
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def to_markdown(text: str) -> str:
    """A docstring as Markdown (see the module doc)."""
    text = _ROLE.sub(_role, text)
    text = _sections(text)
    text = "\n".join(_examples(text.split("\n")))
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)


class RestToMarkdown(griffe.Extension):
    """Rewrites every loaded object's docstring with :func:`to_markdown`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)

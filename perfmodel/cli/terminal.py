"""Text from data reaches the terminal as text: control characters escaped.

A column name, a group value or a cell of the user's file may hold terminal escape sequences (set the
window title, clear the screen, move the cursor), a carriage return that overwrites what was printed,
or Unicode's bidirectional overrides that reorder it. Every command's output goes through
:class:`EscapedStream` (:func:`escaped_output` around the command), which writes such characters as
``\\x1b``, ``\\r``, ``\\u202e``; line breaks and tabs pass. An error is one line: :func:`one_line`
escapes its line breaks too. Progress bars draw on the raw stream (:func:`raw`), their text is the
program's own.

The top layer's helper: imports nothing from perfmodel.
"""

from __future__ import annotations

import contextlib
import re
import sys

#: C0 controls but tab and line feed, DEL, C1 controls (0x9b is a CSI on some terminals), and the
#: bidirectional embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_OR_BREAK = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _code(match: re.Match) -> str:
    c = match.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (
        f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
    )


def escaped(text: str) -> str:
    """``text`` with its control characters written as escapes (line breaks and tabs kept)."""
    return _UNSAFE.sub(_code, text)


def one_line(text: object) -> str:
    """``text`` (str() of it) as one line: every control character escaped, line breaks and tabs too."""
    return _UNSAFE_OR_BREAK.sub(_code, str(text))


class EscapedStream:
    """A text stream that writes to ``stream`` with :func:`escaped` applied (``raw``: the stream itself).

    ``hold``: the text waits until :meth:`flush` (``print(..., flush=True)``, for a line the user needs
    while the command runs) or the end of the command; :meth:`discard` drops what waits, so a command
    that fails prints its one error line and not the notes that led to it."""

    def __init__(self, stream, hold: bool = False):
        self.raw = stream
        self.held: list[str] | None = [] if hold else None

    def write(self, text: str) -> int:
        if self.held is not None:
            self.held.append(escaped(text))
        else:
            self.raw.write(escaped(text))
        return len(text)

    def flush(self) -> None:
        if self.held:
            self.raw.write("".join(self.held))
            self.held.clear()
        self.raw.flush()

    def discard(self) -> None:
        if self.held:
            self.held.clear()

    def __getattr__(self, name):  # isatty, encoding, fileno, ... of the stream itself
        return getattr(self.raw, name)


def discard_pending(stream) -> None:
    """Drop what ``stream`` (an :class:`EscapedStream` that holds its text) has not written yet."""
    if isinstance(stream, EscapedStream):
        stream.discard()


def raw(stream):
    """The stream under an :class:`EscapedStream` (for a progress bar's carriage returns), else ``stream``."""
    return getattr(stream, "raw", stream) if isinstance(stream, EscapedStream) else stream


@contextlib.contextmanager
def escaped_output():
    """``sys.stdout`` and ``sys.stderr`` through :class:`EscapedStream` for the duration; stderr holds
    its notes and warnings until the command ends (:func:`discard_pending` drops them before an error)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout = out if isinstance(out, EscapedStream) else EscapedStream(out)
    sys.stderr = err if isinstance(err, EscapedStream) else EscapedStream(err, hold=True)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err

"""The one exception type users can cause, and its helpers.

Imports nothing from perfmodel: every module may use it.
"""

from __future__ import annotations


class PerfModelError(ValueError):
    """An error the user caused (bad file, bad term, impossible fit).

    The message always names the offending row, column or token, so the app can show it
    with ``st.error`` and the CLI can print it as one line and exit 2.
    """


def did_you_mean(name: str, known: list[str]) -> str:
    """A short hint naming the closest known names, or an empty string."""
    import difflib

    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""

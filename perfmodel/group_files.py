"""The files of a group fit: one safe, unique file name per group, and the model files an earlier run left.

:func:`file_names` turns group keys (any values: accents, slashes, ``1`` beside ``"1"``) into ASCII
``.json`` names that never collide; :func:`group_label` is the key as people read it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

MISSING_LABEL = "(missing)"


def _slug(text: str, limit: int = 80) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_text).strip("._-")
    return slug[:limit] or "group"


def file_names(keys: Sequence[tuple]) -> list[str]:
    """A safe, unique ``.json`` file name per group key (ASCII letters, digits, ``._-``).

    Values are joined with ``__``; a name that had to be changed (accents, spaces, slashes) or
    that collides gets a short hash of the exact values (the tuple, not the joined text: groups
    ``("a__b", "c")`` and ``("a", "b__c")`` differ), so two groups never share a file.
    """
    parts = [[_label_part(v) for v in key] for key in keys]
    slugs = [_slug("__".join(_slug(v, 40) for v in key)) for key in parts]
    counts: dict[str, int] = {}
    for s in slugs:
        counts[s.lower()] = counts.get(s.lower(), 0) + 1
    out, taken = [], set()
    for key, s in zip(parts, slugs, strict=True):
        if s != "__".join(key) or counts[s.lower()] > 1:
            s = f"{s}-{hashlib.sha1(json.dumps(key).encode('utf-8')).hexdigest()[:8]}"
        while s.lower() in taken:  # keys with equal labels (1 and "1"): still one file each
            s += "_"
        taken.add(s.lower())
        out.append(f"{s}.json")
    return out


def _label_part(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING_LABEL
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def group_label(key: tuple) -> str:
    """``("ResNet-50", "dgx1-p100")`` -> ``"ResNet-50 / dgx1-p100"``."""
    return " / ".join(_label_part(v) for v in key)


def _previous_model_files(folder: Path) -> list[Path]:
    """The model files an earlier run's ``folder/summary.csv`` lists that are still there, each a file
    name in the folder that starts as a model file does (nothing the summary does not list)."""
    summary = folder / "summary.csv"
    if not summary.is_file():
        return []
    try:
        listed = pd.read_csv(summary, usecols=["model_file"], dtype=str, keep_default_na=False)["model_file"]
    except (ValueError, OSError, pd.errors.ParserError, UnicodeDecodeError):
        return []
    out = []
    for name in dict.fromkeys(listed):
        path = folder / name
        if name and Path(name).name == name and name.endswith(".json") and path.is_file():
            with open(path, "rb") as fh:
                head = fh.read(64)
            if head.replace(b" ", b"").replace(b"\n", b"").startswith(b'{"format":"perfmodel.fit/1"'):
                out.append(path)
    return out

"""Readers: one per input format (CSV, Extra-P text), each returning a DataFrame of the rows as read.

Rows are counted from 1, header excluded ("row 3" is the third data row of a CSV file); a malformed
file is refused with the line and the reason. :data:`READERS` maps each format name to its reader
(the CLI's ``--format`` choices and the uploader use it).

Imports from :mod:`perfmodel.errors` only.
"""

from __future__ import annotations

import csv
import io
import keyword as _keyword
import re
from pathlib import Path
from typing import IO

import pandas as pd

from ..errors import PerfModelError

Source = str | Path | bytes | IO


#: Column names an Extra-P file produces besides its parameters (a parameter may not take one).
EXTRAP_COLUMNS = ("region", "metric", "repetition", "time")


def _text_of(source: Source, name: str | None = None) -> tuple[str, str]:
    """Return (text, name) for a path, raw bytes or an open file.

    ``name`` is what messages call the file; by default the path as given, else "upload"."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise PerfModelError(f"file not found: {path}")
        if path.is_dir():
            raise PerfModelError(f"{path}: is a folder, not a file")
        data = path.read_bytes()
        name = name or str(source)
    elif isinstance(source, bytes):
        data, name = source, name or "upload"
    else:
        data = source.read()
        name = name or str(getattr(source, "name", "upload"))
    if isinstance(data, str):
        return data, name
    for enc in ("utf-8-sig", "latin-1"):
        try:
            return data.decode(enc), name
        except UnicodeDecodeError:  # pragma: no cover - latin-1 always decodes
            continue
    raise PerfModelError(f"{name}: not a text file")  # pragma: no cover


def read_csv(source: Source, name: str | None = None, min_columns: int = 2) -> pd.DataFrame:
    """Read a delimited text file (delimiter sniffed among , ; tab |) into a DataFrame.

    Column names are stripped of surrounding spaces and must be distinct; values are kept as
    read (validation happens in :class:`Measurements`). ``name`` is what messages call the
    file; ``min_columns`` is 2 for measurements (a factor and a time), 1 for new
    configurations to predict.
    """
    text, name = _text_of(source, name)
    if not text.strip():
        raise PerfModelError(f"{name}: the file is empty")
    if "\x00" in text[:4096]:
        raise PerfModelError(f"{name}: looks like a binary file, expected CSV text")
    sample = "\n".join(text.splitlines()[:50])
    try:
        delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        delimiter = ","
    try:
        frame = pd.read_csv(io.StringIO(text), sep=delimiter, skipinitialspace=True, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise PerfModelError(f"{name}: no columns to read (only delimiters and line breaks)") from None
    except pd.errors.ParserError as exc:
        msg = str(exc).replace("\n", " ")
        raise PerfModelError(f"{name}: not a valid CSV table: {msg}") from None
    # pandas renames a repeated header ("p", "p" -> "p", "p.1"), so the names are checked as written.
    try:  # lines end at \n, \r\n or \r, as for pandas
        header = next(csv.reader(io.StringIO(text, newline=None), delimiter=delimiter, skipinitialspace=True), [])
    except csv.Error as exc:
        raise PerfModelError(f"{name}: not a valid CSV table: {exc}") from None
    header = [h.strip() for h in header]
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise PerfModelError(f"{name}: duplicate column name(s): {', '.join(map(repr, dupes))}")
    frame.columns = [str(c).strip() for c in frame.columns]
    dupes = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
    if dupes:
        raise PerfModelError(f"{name}: duplicate column name(s): {', '.join(map(repr, dupes))}")
    if frame.shape[1] < min_columns:
        need = "at least a factor and a time" if min_columns >= 2 else "at least one factor column"
        raise PerfModelError(f"{name}: found {frame.shape[1]} column, need {need} (delimiter detected: {delimiter!r})")
    frame = frame.apply(lambda col: col.str.strip())
    # Columns that are entirely numeric become numbers; the rest stay text for validation. In a file
    # delimited by ";" (a spreadsheet's export where "," is the decimal mark), "12,5" is 12.5.
    for col in frame.columns:
        values = frame[col]
        comma = values.str.fullmatch(_DECIMAL_COMMA) if delimiter == ";" else None
        if comma is not None and comma.any() and not values.str.contains(r"\d\.\d", regex=True).any():
            values = values.where(~comma, values.str.replace(",", ".", regex=False))  # no decimal point beside them
            frame[col] = values  # a value that is not a number stays as written, for the report
        converted = pd.to_numeric(values, errors="coerce")
        if converted.notna().sum() == (frame[col] != "").sum():
            frame[col] = converted
    return frame


#: A number written with a decimal comma and no thousands mark: "12,5", "-0,003", "1,5e-3".
_DECIMAL_COMMA = r"[-+]?\d+,\d+(?:[eE][-+]?\d+)?"


_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def read_extrap(source: Source, name: str | None = None) -> pd.DataFrame:
    """Read Extra-P's text format into a long table.

    Columns: one per ``PARAMETER`` (in file order), then ``region``, ``metric``,
    ``repetition`` (from 1) and ``time`` (the measured value). One row per repetition.
    Parameter names are distinct identifiers other than those four.
    """
    text, name = _text_of(source, name)
    params: list[str] = []
    points: list[tuple[float, ...]] = []
    region, metric = None, ""
    data_index: dict[tuple[str, str], int] = {}
    rows: list[dict] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        keyword = keyword.split("\t")[0]
        rest = line[len(keyword) :].strip()
        where = f"{name} line {lineno}"
        if keyword == "PARAMETER":
            if points:
                raise PerfModelError(f"{where}: PARAMETER after POINTS")
            for pname in rest.split():
                if not pname.isidentifier() or _keyword.iskeyword(pname):
                    raise PerfModelError(f"{where}: parameter name {pname!r} is not an identifier")
                if pname in EXTRAP_COLUMNS:
                    raise PerfModelError(
                        f"{where}: parameter name {pname!r} is reserved for the "
                        f"column of that name ({', '.join(EXTRAP_COLUMNS)}); rename it"
                    )
                if pname in params:
                    raise PerfModelError(f"{where}: parameter {pname!r} is declared twice")
                params.append(pname)
        elif keyword == "POINTS":
            if not params:
                raise PerfModelError(f"{where}: POINTS before any PARAMETER")
            groups = re.findall(r"\(([^)]*)\)", rest)
            if not groups:  # single-parameter shorthand: POINTS 1 2 4
                groups = rest.split() if len(params) == 1 else []
            if not groups:
                raise PerfModelError(f"{where}: cannot read coordinates in {rest!r}")
            for g in groups:
                try:
                    coords = tuple(float(v) for v in g.split())
                except ValueError:
                    raise PerfModelError(f"{where}: non-numeric coordinate in ({g.strip()})") from None
                if len(coords) != len(params):
                    raise PerfModelError(
                        f"{where}: point ({g.strip()}) has {len(coords)} coordinate(s), "
                        f"expected {len(params)} ({' '.join(params)})"
                    )
                points.append(coords)
        elif keyword == "REGION":
            region = rest or "region"
            metric = ""
        elif keyword == "METRIC":
            metric = rest
        elif keyword == "DATA":
            if region is None:
                region = "region"
            key = (region, metric)
            i = data_index.get(key, 0)
            if i >= len(points):
                raise PerfModelError(
                    f"{where}: more DATA lines than POINTS ({len(points)}) for region {region!r} metric {metric!r}"
                )
            values = rest.split()
            if not values:
                raise PerfModelError(f"{where}: DATA line without values")
            for rep, tok in enumerate(values, start=1):
                if not re.fullmatch(_NUM, tok):
                    raise PerfModelError(f"{where}: value {tok!r} is not a number")
                row: dict[str, object] = dict(zip(params, points[i], strict=True))
                row.update(region=region, metric=metric, repetition=rep, time=float(tok))
                rows.append(row)
            data_index[key] = i + 1
        else:
            raise PerfModelError(
                f"{where}: unknown keyword {keyword!r} (expected PARAMETER, POINTS, REGION, METRIC or DATA)"
            )
    if not params:
        raise PerfModelError(f"{name}: no PARAMETER line; is this an Extra-P text file?")
    if not rows:
        raise PerfModelError(f"{name}: no DATA lines")
    for (reg, met), count in data_index.items():
        if count != len(points):
            raise PerfModelError(
                f"{name}: region {reg!r} metric {met!r} has {count} DATA lines for {len(points)} POINTS"
            )
    return pd.DataFrame(rows, columns=[*params, *EXTRAP_COLUMNS])


def looks_like_extrap(text_start: str) -> bool:
    """True when the text starts (after comments/blank lines) with an Extra-P keyword."""
    for line in text_start.splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            return s.split()[0] in ("PARAMETER", "POINTS", "REGION", "METRIC")
    return False


#: Reader registry: one reader per format, feeding the CLI's --format choices and the uploader.
READERS = {"csv": read_csv, "extrap": read_extrap}


def read_table(source: Source, fmt: str | None = None, name: str | None = None) -> pd.DataFrame:
    """Read ``source`` with the reader for ``fmt`` ("csv", "extrap"), guessing it when None.

    ``name`` is what messages call the file (default: the path as given, or "upload")."""
    if fmt is not None and fmt not in READERS:
        raise PerfModelError(f"unknown format {fmt!r}; known: {', '.join(READERS)}")
    text, name = _text_of(source, name)
    if fmt is None:
        fmt = "extrap" if looks_like_extrap(text[:2000]) else "csv"
    return READERS[fmt](text.encode("utf-8"), name=name)

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
from collections import Counter
from pathlib import Path
from typing import IO

import numpy as np
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
    sample = "\n".join(text[:_SAMPLE_CHARS].splitlines()[:50])
    try:
        delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        delimiter = ","
    # The header as written, read before the table (time linear in its length): a table of more columns
    # than MAX_COLUMNS is refused before pandas builds them, and a repeated name is found (pandas
    # renames "p", "p" to "p", "p.1").
    try:  # lines end at \n, \r\n or \r, as for pandas
        header = next(csv.reader(io.StringIO(text, newline=None), delimiter=delimiter, skipinitialspace=True), [])
    except csv.Error as exc:
        raise PerfModelError(f"{name}: not a valid CSV table: {exc}") from None
    if len(header) > MAX_COLUMNS:
        raise PerfModelError(
            f"{name}: the header has {len(header):,} columns; at most {MAX_COLUMNS:,} (a table of measurements "
            "has a column per factor and one for the time; delimiter detected: "
            f"{delimiter!r})"
        )
    _refuse_duplicates(name, [h.strip() for h in header])
    try:
        frame = pd.read_csv(io.StringIO(text), sep=delimiter, skipinitialspace=True, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise PerfModelError(f"{name}: no columns to read (only delimiters and line breaks)") from None
    except pd.errors.ParserError as exc:
        msg = str(exc).replace("\n", " ")
        raise PerfModelError(f"{name}: not a valid CSV table: {msg}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    _refuse_duplicates(name, list(frame.columns))
    if frame.shape[1] < min_columns:
        need = "at least a factor and a time" if min_columns >= 2 else "at least one factor column"
        raise PerfModelError(f"{name}: found {frame.shape[1]} column, need {need} (delimiter detected: {delimiter!r})")
    frame = frame.apply(lambda col: col.str.strip())
    # Columns that are entirely numeric become numbers; the rest stay text for validation. In a file
    # delimited by ";" that writes a decimal comma anywhere (a spreadsheet's export), "12,5" is 12.5 and
    # "1.000" is a thousand (the point groups thousands there), in every column.
    comma_file = delimiter == ";" and any(frame[c].str.fullmatch(_DECIMAL_COMMA).any() for c in frame.columns)
    for col in frame.columns:
        values = _decimal_comma(name, col, frame[col]) if comma_file else frame[col]
        converted = pd.to_numeric(values, errors="coerce")
        if converted.notna().sum() == (frame[col] != "").sum():
            frame[col] = converted
        elif values is not frame[col]:
            frame[col] = values  # a value that is not a number stays as written, for the report
    return frame


#: Columns a table may have: the header is counted before the table is built (a measurements table has
#: a column per factor and one for the time; 100,000 columns once kept a dashboard session busy minutes).
MAX_COLUMNS = 1_000
#: Characters of the file's start the delimiter is sniffed from.
_SAMPLE_CHARS = 65_536

#: A number written with a decimal comma, its thousands grouped by points or not: "12,5", "-0,003",
#: "1,5e-3", "1.234,5".
_DECIMAL_COMMA = r"[-+]?(?:\d{1,3}(?:\.\d{3})+|\d+),\d+(?:[eE][-+]?\d+)?"
#: A whole number whose thousands are grouped by points: "1.000", "12.345.678".
_GROUPED = r"[-+]?\d{1,3}(?:\.\d{3})+"
#: A number with a decimal point that is no grouping of thousands: "0.5", "1.25", "1.5e3".
_DECIMAL_POINT = r"[-+]?(?:\d*\.\d+|\d+\.)(?:[eE][-+]?\d+)?"


def _refuse_duplicates(name: str, columns: list) -> None:
    """A PerfModelError naming the repeated column names (counted once each: linear in the columns)."""
    dupes = sorted(k for k, n in Counter(columns).items() if n > 1)
    if dupes:
        raise PerfModelError(f"{name}: duplicate column name(s): {', '.join(map(repr, dupes[:20]))}")


def _decimal_comma(name: str, column: str, values: pd.Series) -> pd.Series:
    """A column of a file that writes decimal commas, as numbers' text pandas reads: "12,5" -> "12.5",
    "1.234,5" -> "1234.5", "1.000" -> "1000". A column that also writes a decimal point ("0.5") mixes
    the two: a grouped value there ("1.000": one or a thousand?) is refused naming its row, and a comma
    value stays as written (listed as not a number when the measurements are validated)."""
    comma = values.str.fullmatch(_DECIMAL_COMMA)
    grouped = values.str.fullmatch(_GROUPED)
    point = values.str.fullmatch(_DECIMAL_POINT) & ~grouped
    if point.any():
        if grouped.any():
            i = int(np.flatnonzero(grouped.to_numpy())[0])
            raise PerfModelError(
                f"{name}: row {i + 1}, column {column!r}: {values.iloc[i]!r} could be a number with a decimal point "
                f"or a thousand grouped by one (the file writes decimal commas, and this column also writes "
                f"{values[point].iloc[0]!r}); write it without the point"
            )
        return values
    if not (comma.any() or grouped.any()):
        return values
    plain = values.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
    return values.where(~(comma | grouped), plain)


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

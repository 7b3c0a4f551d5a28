"""Readers (CSV, Extra-P text) and the validated ``Measurements`` table.

Rows are counted from 1, header excluded ("row 3" is the third data row of a CSV file).
Nothing is dropped silently: every row left out of a fit is listed in
``Measurements.dropped`` with the column and the reason.
"""

from __future__ import annotations

import csv
import io
import keyword as _keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, Union

import numpy as np
import pandas as pd

from .errors import PerfModelError, did_you_mean

Source = Union[str, Path, bytes, IO]

#: Symbols with a conventional meaning; any other identifier may be mapped too.
ROLE_SYMBOLS = {
    "p": "processors / workers",
    "N": "data size (samples)",
    "b": "per-worker batch size",
    "B": "global batch size (all workers; b = B/p)",
    "E": "epochs",
}

#: Further symbols with a meaning to the presets (mapped as "other factors"; the guess below finds them):
#: ``nodes`` switches on Pollux's inter-node network terms, ``servers`` Optimus's parameter-server terms.
PRESET_SYMBOLS = {
    "nodes": "machines (nodes) the workers are spread over; 1 = all on one machine",
    "servers": "parameter servers (synchronous parameter-server training)",
}

#: Column-name fragments used to guess a first mapping (lower-case, checked in order).
_GUESSES = {
    "time": ("time_s", "seconds", "time", "runtime", "wall", "duration", "elapsed", "minutes"),
    "p": ("processors", "workers", "gpus", "accelerators", "ranks", "nodes", "cores", "procs", "devices", "np",
          "gpu", "worker", "processes", "tpus", "chips"),
    "N": ("samples", "data_size", "dataset_size", "data size", "dataset size", "n_samples", "input_fraction",
          "fraction"),
    "B": ("global_batch", "global batch", "total_batch", "total batch", "effective_batch", "global"),
    "b": ("batch_per_gpu", "per_worker_batch", "per-worker batch", "batch_size", "batch size", "batch", "local_batch"),
    "E": ("epochs", "epoch"),
    # checked after p: a lone "nodes" column is the worker count, beside a GPU column it is the machines
    "nodes": ("nodes", "machines", "hosts", "num_nodes", "node"),
    "servers": ("servers", "parameter_servers", "num_ps", "ps"),
}


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
        frame = pd.read_csv(io.StringIO(text), sep=delimiter, skipinitialspace=True, dtype=str,
                            keep_default_na=False)
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
        raise PerfModelError(f"{name}: found {frame.shape[1]} column, need {need} "
                             f"(delimiter detected: {delimiter!r})")
    frame = frame.apply(lambda col: col.str.strip())
    # Columns that are entirely numeric become numbers; the rest stay text for validation.
    for col in frame.columns:
        converted = pd.to_numeric(frame[col], errors="coerce")
        if converted.notna().sum() == (frame[col] != "").sum():
            frame[col] = converted
    return frame


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
        rest = line[len(keyword):].strip()
        where = f"{name} line {lineno}"
        if keyword == "PARAMETER":
            if points:
                raise PerfModelError(f"{where}: PARAMETER after POINTS")
            for pname in rest.split():
                if not pname.isidentifier() or _keyword.iskeyword(pname):
                    raise PerfModelError(f"{where}: parameter name {pname!r} is not an identifier")
                if pname in EXTRAP_COLUMNS:
                    raise PerfModelError(f"{where}: parameter name {pname!r} is reserved for the "
                                         f"column of that name ({', '.join(EXTRAP_COLUMNS)}); rename it")
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
                    raise PerfModelError(f"{where}: point ({g.strip()}) has {len(coords)} coordinate(s), "
                                         f"expected {len(params)} ({' '.join(params)})")
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
                raise PerfModelError(f"{where}: more DATA lines than POINTS ({len(points)}) "
                                     f"for region {region!r} metric {metric!r}")
            values = rest.split()
            if not values:
                raise PerfModelError(f"{where}: DATA line without values")
            for rep, tok in enumerate(values, start=1):
                if not re.fullmatch(_NUM, tok):
                    raise PerfModelError(f"{where}: value {tok!r} is not a number")
                row = dict(zip(params, points[i]))
                row.update(region=region, metric=metric, repetition=rep, time=float(tok))
                rows.append(row)
            data_index[key] = i + 1
        else:
            raise PerfModelError(f"{where}: unknown keyword {keyword!r} "
                                 "(expected PARAMETER, POINTS, REGION, METRIC or DATA)")
    if not params:
        raise PerfModelError(f"{name}: no PARAMETER line; is this an Extra-P text file?")
    if not rows:
        raise PerfModelError(f"{name}: no DATA lines")
    for (reg, met), count in data_index.items():
        if count != len(points):
            raise PerfModelError(f"{name}: region {reg!r} metric {met!r} has {count} DATA lines "
                                 f"for {len(points)} POINTS")
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


def guess_roles(columns: Iterable[str]) -> dict[str, str]:
    """First guess of {role: column} from column names (role 'time' or a symbol p, N, b, B, E, nodes,
    servers)."""
    cols = [str(c) for c in columns]
    lower = {c: c.lower() for c in cols}
    timeish = {c for c in cols if any(f in lower[c] for f in _GUESSES["time"])}
    out: dict[str, str] = {}
    used: set[str] = set()
    for role, fragments in _GUESSES.items():
        pool = cols if role == "time" else [c for c in cols if c not in timeish]
        if role in ("p", "N"):  # "batch_per_gpu" is a batch, "batch_size" not the data size
            pool = [c for c in pool if "batch" not in lower[c]]
        for frag in fragments:
            hit = next((c for c in pool if c not in used and (lower[c] == frag or
                        (len(frag) > 2 and frag in lower[c]))), None)
            if hit:
                out[role] = hit
                used.add(hit)
                break
    return out


@dataclass(frozen=True)
class DroppedRow:
    """A row left out of the fit, with the column and the reason."""

    row: int  # 1-based data row
    column: str
    reason: str

    def __str__(self) -> str:
        return f"row {self.row}, column {self.column!r}: {self.reason}"


@dataclass
class Measurements:
    """Validated measured runs: one row per run, numeric factors and a time in seconds.

    ``frame`` holds the kept rows (all original columns; index = 1-based data row number),
    ``time`` the time column, ``factors`` maps symbols (``p``, ``N``, ...) to columns.
    """

    frame: pd.DataFrame
    time: str
    factors: dict[str, str]
    dropped: list[DroppedRow] = field(default_factory=list)
    name: str = ""

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, time: str, factors: dict[str, str] | None = None,
                   name: str = "", status_column: str | None = "status") -> "Measurements":
        """Validate ``frame`` and keep the usable rows.

        Rows with a missing, non-numeric or infinite time/factor value, a time <= 0, or a
        ``status`` other than ``ok`` (sweep output) are dropped and listed in ``dropped``.
        Raises :class:`PerfModelError` for unknown columns or when no row is usable.
        """
        factors = dict(factors or {})
        if not isinstance(frame, pd.DataFrame) or frame.shape[0] == 0:
            raise PerfModelError("the data has no rows")
        columns = [str(c) for c in frame.columns]
        frame = frame.copy()
        frame.columns = columns
        if time not in columns:
            raise PerfModelError(f"time column {time!r} not found{did_you_mean(time, columns)}; "
                                 f"columns are: {', '.join(columns)}")
        for sym, col in factors.items():
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", str(sym)):
                raise PerfModelError(f"symbol {sym!r} is not a valid name (a letter, then letters, digits, _)")
            if _keyword.iskeyword(str(sym)):
                raise PerfModelError(f"symbol {sym!r} is a Python keyword, which a term cannot use; "
                                     "choose another symbol")
            if col not in columns:
                raise PerfModelError(f"column {col!r} for symbol {sym!r} not found"
                                     f"{did_you_mean(col, columns)}; columns are: {', '.join(columns)}")
            if col == time:
                raise PerfModelError(f"column {col!r} is the time column; it cannot also be factor {sym!r}")
        from .expression import FUNCTIONS  # local import: expression imports nothing from here

        for sym in factors:
            if sym in FUNCTIONS:
                raise PerfModelError(f"symbol {sym!r} is a function name; choose another symbol")
        frame.index = pd.RangeIndex(1, len(frame) + 1)
        bad: dict[int, DroppedRow] = {}

        def check(col: str, positive: bool) -> pd.Series:
            raw = frame[col]
            num = pd.to_numeric(raw, errors="coerce").astype(float)
            text = raw.astype(str).str.strip()
            missing = raw.isna().to_numpy() | (text == "").to_numpy()
            problems = {
                "missing": missing,
                "non-numeric": ~missing & num.isna().to_numpy(),
                "infinite": np.isinf(num.to_numpy()),
                "non-positive": (num <= 0).to_numpy() if positive else np.zeros(len(num), bool),
            }
            for kind, mask in problems.items():
                for row in raw.index[mask]:
                    if row in bad:
                        continue
                    if kind == "missing":
                        reason = "missing value"
                    elif kind == "non-numeric":
                        reason = f"non-numeric value {raw[row]!r}"
                    elif kind == "infinite":
                        reason = f"infinite value {raw[row]!r}"
                    else:
                        reason = f"time must be > 0, got {num[row]:g}"
                    bad[row] = DroppedRow(row, col, reason)
            return num

        if status_column and status_column in columns and status_column not in factors.values():
            for row, status in frame[status_column].items():
                if str(status).strip().lower() != "ok":
                    bad[row] = DroppedRow(row, status_column, f"run status is {status!r}, not 'ok'")
        numeric = {time: check(time, positive=True)}
        for col in factors.values():
            numeric[col] = check(col, positive=False)
        dropped = sorted(bad.values(), key=lambda d: d.row)
        keep = frame.index.difference(list(bad))
        if len(keep) == 0:
            first = "; ".join(str(d) for d in dropped[:3])
            raise PerfModelError(f"no usable rows: all {len(frame)} rows were dropped ({first}"
                                 f"{'; ...' if len(dropped) > 3 else ''})")
        kept = frame.loc[keep].copy()
        for col, values in numeric.items():
            kept[col] = values.loc[keep].to_numpy(dtype=float)
        return cls(kept, time, factors, dropped, name)

    # -- access -------------------------------------------------------------
    @property
    def y(self) -> np.ndarray:
        """Measured times, shape (n_rows,), seconds."""
        return self.frame[self.time].to_numpy(dtype=float)

    @property
    def n_rows(self) -> int:
        return len(self.frame)

    @property
    def rows(self) -> np.ndarray:
        """1-based data row numbers of the kept rows, shape (n_rows,)."""
        return self.frame.index.to_numpy()

    def values(self, symbol: str) -> np.ndarray:
        return self.frame[self.factors[symbol]].to_numpy(dtype=float)

    def varying(self) -> list[str]:
        """The symbols with more than one distinct value in these rows (mapping order)."""
        return [s for s in self.factors if len(np.unique(self.values(s))) > 1]

    def env(self) -> dict[str, np.ndarray]:
        """Symbol -> values, shape (n_rows,) each."""
        return {sym: self.values(sym) for sym in self.factors}

    def configurations(self) -> np.ndarray:
        """Integer id of each row's configuration (equal factor values), shape (n_rows,)."""
        if not self.factors:
            return np.zeros(self.n_rows, dtype=int)
        values = np.column_stack([self.values(s) for s in self.factors])
        return np.unique(values, axis=0, return_inverse=True)[1].ravel()

    @property
    def n_configurations(self) -> int:
        return int(self.configurations().max()) + 1 if self.n_rows else 0

    def subset(self, mask: np.ndarray) -> "Measurements":
        """The rows where ``mask`` is true (row numbers kept)."""
        return Measurements(self.frame.loc[np.asarray(mask, bool)], self.time, dict(self.factors),
                            [], self.name)

    def summary(self) -> dict:
        """Rows, configurations, repeats, factor ranges and noise (CV across repeats, %)."""
        cfg = self.configurations()
        y = self.y
        counts = np.bincount(cfg)
        cvs = []
        for g in np.flatnonzero(counts > 1):
            vals = y[cfg == g]
            vals = vals / vals.max()  # times near 1e308: the spread relative to the mean, without overflow
            cvs.append(vals.std(ddof=1) / vals.mean() * 100)
        ranges = {sym: (float(self.values(sym).min()), float(self.values(sym).max()),
                        int(len(np.unique(self.values(sym))))) for sym in self.factors}
        return {
            "rows": self.n_rows,
            "configurations": int(len(counts)),
            "repeats_min": int(counts.min()),
            "repeats_max": int(counts.max()),
            "dropped": len(self.dropped),
            "factor_ranges": ranges,
            "time_range": (float(y.min()), float(y.max())),
            "noise_cv_median_pct": float(np.median(cvs)) if cvs else None,
            "noise_cv_max_pct": float(np.max(cvs)) if cvs else None,
        }


def measurements_from_extrap(frame: pd.DataFrame, region: str | None = None,
                             metric: str | None = None, name: str = "") -> Measurements:
    """Measurements for one (region, metric) of an Extra-P table; the PARAMETERs are the symbols."""
    pairs = frame[["region", "metric"]].drop_duplicates().itertuples(index=False)
    pairs = [(r, m) for r, m in pairs]
    if region is not None:
        pairs = [pm for pm in pairs if pm[0] == region]
        if not pairs:
            raise PerfModelError(f"region {region!r} not in the file; regions: "
                                 f"{', '.join(sorted(set(frame['region'])))}")
    if metric is not None:
        pairs = [pm for pm in pairs if pm[1] == metric]
        if not pairs:
            raise PerfModelError(f"metric {metric!r} not in the file for that region")
    reg, met = pairs[0]
    sub = frame[(frame["region"] == reg) & (frame["metric"] == met)].reset_index(drop=True)
    params = [c for c in frame.columns if c not in ("region", "metric", "repetition", "time")]
    return Measurements.from_frame(sub, time="time", factors={p: p for p in params},
                                   name=name or f"{reg}/{met}".rstrip("/"))

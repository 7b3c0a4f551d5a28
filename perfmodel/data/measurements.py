"""The validated ``Measurements`` table: rows as runs, factors mapped to symbols, the time column.

Rows are counted from 1, header excluded ("row 3" is the third data row of a CSV file).
Nothing is dropped silently: every row left out of a fit is listed in
``Measurements.dropped`` with the column and the reason.

Imports from the model language (its function names) and :mod:`perfmodel.data.readers` only.
"""

from __future__ import annotations

import keyword as _keyword
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import PerfModelError, did_you_mean

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

#: Symbols that say where the workers run, not how much work there is: never a term's factor (only
#: structures with an inter-node cost read them, as Pollux's network terms do).
TOPOLOGY_SYMBOLS = ("nodes",)


def nodes_of(p, gpus_per_node: float) -> np.ndarray:
    """The nodes ``p`` workers span at ``gpus_per_node`` per node: ceil(p / gpus_per_node)."""
    with np.errstate(all="ignore"):
        return np.ceil(np.asarray(p, float) / float(gpus_per_node) - 1e-9)


#: Column-name fragments used to guess a first mapping (lower-case, checked in order).
_GUESSES = {
    "time": ("time_s", "seconds", "time", "runtime", "wall", "duration", "elapsed", "minutes", "latency"),
    # world_size: PyTorch's processes; replicas: AdaptDL's and Kubernetes'; ntasks: SLURM's
    "p": (
        "processors",
        "workers",
        "gpus",
        "accelerators",
        "ranks",
        "nodes",
        "cores",
        "procs",
        "devices",
        "np",
        "gpu",
        "worker",
        "processes",
        "tpus",
        "chips",
        "world_size",
        "world size",
        "replicas",
        "ntasks",
    ),
    "N": (
        "samples",
        "data_size",
        "dataset_size",
        "data size",
        "dataset size",
        "n_samples",
        "input_fraction",
        "fraction",
    ),
    "B": ("global_batch", "global batch", "total_batch", "total batch", "effective_batch", "global"),
    "b": ("batch_per_gpu", "per_worker_batch", "per-worker batch", "batch_size", "batch size", "batch", "local_batch"),
    "E": ("epochs", "epoch"),
    # checked after p: a lone "nodes" column is the worker count, beside a GPU column it is the machines
    "nodes": ("nodes", "machines", "hosts", "num_nodes", "node"),
    "servers": ("servers", "parameter_servers", "num_ps", "ps"),
}


def sparse_columns(frame) -> list[str]:
    """The columns of a table (a DataFrame) with a value on fewer than half of its rows, empty ones
    included (e.g. a ``global_batch`` or ``nodes`` column that only other series of a collection fill
    in): guessed as a factor, most rows would be dropped, so a guess leaves them to the user."""
    if not len(frame):
        return []
    return [
        str(c)
        for c in frame.columns
        if 2 * int((frame[c].notna() & (frame[c].astype(str).str.strip() != "")).sum()) < len(frame)
    ]


def guess_roles(columns: Iterable[str], skip: Iterable[str] = ()) -> dict[str, str]:
    """First guess of {role: column} from column names (role 'time' or a symbol p, N, b, B, E, nodes,
    servers); the columns of ``skip`` (e.g. :func:`sparse_columns`) are not guessed."""
    skip = {str(c) for c in skip}
    cols = [str(c) for c in columns if str(c) not in skip]
    lower = {c: c.lower() for c in cols}
    timeish = {c for c in cols if any(f in lower[c] for f in _GUESSES["time"])}
    out: dict[str, str] = {}
    used: set[str] = set()
    for role, fragments in _GUESSES.items():
        pool = cols if role == "time" else [c for c in cols if c not in timeish]
        if role in ("p", "N"):  # "batch_per_gpu" is a batch, "batch_size" not the data size
            pool = [c for c in pool if "batch" not in lower[c]]
        exact = next((c for c in pool if c == role and c not in used), None)  # a column named p, N, b, ...
        if exact:
            out[role] = exact
            used.add(exact)
            continue
        for frag in fragments:
            hit = next(
                (c for c in pool if c not in used and (lower[c] == frag or (len(frag) > 2 and frag in lower[c]))), None
            )
            if hit:
                out[role] = hit
                used.add(hit)
                break
    return out


def complete_roles(
    columns: Iterable[str], time: str | None, factors: dict[str, str] | None, empty: Iterable[str] = ()
) -> tuple[str, dict[str, str], list[str]]:
    """``(time, factors, guessed)``: the time column and the factors as given, each one not given
    taken from :func:`guess_roles` (the factors only when none is given), and what was guessed
    (``["time = 'time_s'", "p = 'gpus'"]``) for the caller to show. ``empty``: the columns with no
    value on most rows (:func:`sparse_columns`), which are not guessed, and the guess says so when one
    would have been. Raises :class:`PerfModelError`, naming the columns, when no
    time column or no factor is given or can be guessed."""
    cols = [str(c) for c in columns]
    empty = {str(c) for c in empty}
    roles = guess_roles(cols, skip=empty)
    guessed: list[str] = []
    named = guess_roles(cols)  # what the names alone would have given
    passed = [
        f"{col!r} (no value on most rows, not guessed as {sym})"
        for sym, col in named.items()
        if col in empty and roles.get(sym) != col and not (sym == "time" and time) and not (sym != "time" and factors)
    ]
    if not time:
        if "time" not in roles:
            raise PerfModelError(f"no column looks like a time: name it with --time COL (columns: {', '.join(cols)})")
        time = roles["time"]
        guessed.append(f"time = {time!r}")
    factors = dict(factors or {})
    if not factors:
        factors = {sym: col for sym, col in roles.items() if sym != "time" and col != time}
        if not factors:
            raise PerfModelError(
                "no column looks like a factor (workers, data size, batch, epochs): map one "
                f"with --factor SYM=COL, e.g. --factor p=COL (columns: {', '.join(cols)})"
            )
        guessed += [f"{sym} = {col!r}" for sym, col in factors.items()]
    return time, factors, guessed + passed


@dataclass(frozen=True)
class DroppedRow:
    """A row left out of the fit, with the column and the reason."""

    row: int  # 1-based data row
    column: str
    reason: str

    def __str__(self) -> str:
        return f"row {self.row}, column {self.column!r}: {self.reason}"


def configuration_ids(columns: list) -> np.ndarray:
    """Integer id of each row's configuration (equal values in every one of ``columns``, arrays of one
    length), shape (n,): ids in the lexicographic order of the values, as ``np.unique(values, axis=0,
    return_inverse=True)`` gives them. Each column's values are ranked (a hash, linear in the rows) and
    the ranks combined into one integer key, the first column most significant; sorting whole rows took
    a quarter of a second per 100,000 rows, and a fit asks dozens of times."""
    n = len(columns[0]) if columns else 0
    key = np.zeros(n, dtype=np.int64)
    span = 1
    for col in columns:
        codes, uniques = pd.factorize(np.asarray(col, float), sort=True)
        span *= max(len(uniques), 1)
        if span >= 2**62:  # too many distinct combinations for one integer: sort the rows
            values = np.column_stack([np.asarray(c, float) for c in columns])
            return np.unique(values, axis=0, return_inverse=True)[1].ravel()
        key = key * max(len(uniques), 1) + codes
    return np.unique(key, return_inverse=True)[1].ravel()


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
    #: GPUs (workers) per node when given (e.g. ``--gpus-per-node 8``) and no ``nodes`` column is mapped;
    #: see :meth:`node_topology`
    gpus_per_node: float | None = None
    #: True when :attr:`gpus_per_node` is a guess (GPUs named in p's column, nothing given)
    gpus_per_node_guessed: bool = False

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        time: str,
        factors: dict[str, str] | None = None,
        name: str = "",
        status_column: str | None = "status",
    ) -> Measurements:
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
            raise PerfModelError(
                f"time column {time!r} not found{did_you_mean(time, columns)}; columns are: {', '.join(columns)}"
            )
        for sym, col in factors.items():
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", str(sym)):
                raise PerfModelError(f"symbol {sym!r} is not a valid name (a letter, then letters, digits, _)")
            if _keyword.iskeyword(str(sym)):
                raise PerfModelError(
                    f"symbol {sym!r} is a Python keyword, which a term cannot use; choose another symbol"
                )
            if col not in columns:
                raise PerfModelError(
                    f"column {col!r} for symbol {sym!r} not found"
                    f"{did_you_mean(col, columns)}; columns are: {', '.join(columns)}"
                )
            if col == time:
                raise PerfModelError(f"column {col!r} is the time column; it cannot also be factor {sym!r}")
        from ..language.expression import FUNCTIONS

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
            for row, status in enumerate(frame[status_column], start=1):  # the index set above
                if str(status).strip().lower() != "ok":
                    bad[row] = DroppedRow(row, status_column, f"run status is {status!r}, not 'ok'")
        numeric = {time: check(time, positive=True)}
        for col in factors.values():
            numeric[col] = check(col, positive=False)
        dropped = sorted(bad.values(), key=lambda d: d.row)
        keep = frame.index.difference(list(bad))
        if len(keep) == 0:
            first = "; ".join(str(d) for d in dropped[:3])
            raise PerfModelError(
                f"no usable rows: all {len(frame)} rows were dropped ({first}{'; ...' if len(dropped) > 3 else ''})"
            )
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

    def scaling_factors(self) -> list[str]:
        """The varying symbols a term may scale with: :meth:`varying` without the topology
        (:data:`TOPOLOGY_SYMBOLS`: the nodes a run spans are where its network crosses machines, not a
        factor with an exponent of its own)."""
        return [s for s in self.varying() if s not in TOPOLOGY_SYMBOLS]

    def env(self) -> dict[str, np.ndarray]:
        """Symbol -> values, shape (n_rows,) each."""
        return {sym: self.values(sym) for sym in self.factors}

    def configurations(self) -> np.ndarray:
        """Integer id of each row's configuration (equal factor values), shape (n_rows,); the ids in the
        lexicographic order of the factors' values (in mapping order)."""
        if not self.factors:
            return np.zeros(self.n_rows, dtype=int)
        return configuration_ids([self.values(s) for s in self.factors])

    @property
    def n_configurations(self) -> int:
        return int(self.configurations().max()) + 1 if self.n_rows else 0

    def subset(self, mask: np.ndarray) -> Measurements:
        """The rows where ``mask`` is true (row numbers kept)."""
        return Measurements(
            self.frame.loc[np.asarray(mask, bool)],
            self.time,
            dict(self.factors),
            [],
            self.name,
            self.gpus_per_node,
            self.gpus_per_node_guessed,
        )

    # -- topology -----------------------------------------------------------
    def node_topology(self) -> tuple[float | None, str]:
        """(GPUs per node, how it is known): from the ``nodes`` column when p / nodes is the same on every
        run ("the nodes column"), else as given (:attr:`gpus_per_node`), else (None, why not). The nodes a
        run spans are where its network crosses machines: topology, never a factor with an exponent."""
        if self.gpus_per_node:  # given (the nodes column, if any, was made from it: with_nodes)
            return float(self.gpus_per_node), "a guess" if self.gpus_per_node_guessed else "given"
        if "nodes" in self.factors and "p" in self.factors:
            p, nodes = self.values("p"), self.values("nodes")
            with np.errstate(all="ignore"):
                g = float(np.max(p / nodes)) if len(p) else float("nan")
            if math.isfinite(g) and g >= 1 and np.array_equal(nodes_of(p, g), nodes):
                return g, "the nodes column"  # every run on ceil(p / g) nodes: g per full node
            return None, "the nodes column (the GPUs per node differ between runs)"
        return None, "not given"

    def with_nodes(self, gpus_per_node: float, guessed: bool = False) -> Measurements:
        """These runs with the topology symbol ``nodes`` mapped to a column ``nodes`` = ceil(p / GPUs per
        node) (when no nodes column is mapped already), the GPUs per node kept (``guessed``: a guess)."""
        g = float(gpus_per_node)
        if "nodes" in self.factors or "p" not in self.factors:
            return Measurements(self.frame, self.time, dict(self.factors), list(self.dropped), self.name, g, guessed)
        frame = self.frame.copy()
        col = "nodes" if "nodes" not in frame.columns else "nodes (from p)"
        frame[col] = nodes_of(self.values("p"), g)
        factors = {**self.factors, "nodes": col}
        return Measurements(frame, self.time, factors, list(self.dropped), self.name, g, guessed)

    def summary(self, by=()) -> dict:
        """Rows, configurations, repeats, factor ranges and noise (CV across repeats, %). ``by``: columns
        that split the rows into groups (a model, a framework): rows of one configuration that differ in
        them are not repeats of each other (``repeats_*`` and the noise count repeats within a group)."""
        cfg = self.configurations()
        if by:  # repeats within a group only: the configuration and the group's values
            keys = pd.DataFrame({"cfg": cfg, **{str(c): self.frame[c].astype(str).to_numpy() for c in by}})
            cfg = keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy()
        y = self.y
        counts = np.bincount(cfg)
        cvs = []
        for g in np.flatnonzero(counts > 1):
            vals = y[cfg == g]
            vals = vals / vals.max()  # times near 1e308: the spread relative to the mean, without overflow
            cvs.append(vals.std(ddof=1) / vals.mean() * 100)
        ranges = {
            sym: (float(self.values(sym).min()), float(self.values(sym).max()), int(len(np.unique(self.values(sym)))))
            for sym in self.factors
        }
        return {
            "rows": self.n_rows,
            "configurations": int(self.n_configurations),
            "repeats_min": int(counts.min()),
            "repeats_max": int(counts.max()),
            "dropped": len(self.dropped),
            "factor_ranges": ranges,
            "time_range": (float(y.min()), float(y.max())),
            "noise_cv_median_pct": float(np.median(cvs)) if cvs else None,
            "noise_cv_max_pct": float(np.max(cvs)) if cvs else None,
        }


def measurements_from_extrap(
    frame: pd.DataFrame, region: str | None = None, metric: str | None = None, name: str = ""
) -> Measurements:
    """Measurements for one (region, metric) of an Extra-P table; the PARAMETERs are the symbols."""
    pairs = [(r, m) for r, m in frame[["region", "metric"]].drop_duplicates().itertuples(index=False)]
    if region is not None:
        pairs = [pm for pm in pairs if pm[0] == region]
        if not pairs:
            raise PerfModelError(
                f"region {region!r} not in the file; regions: {', '.join(sorted(set(frame['region'])))}"
            )
    if metric is not None:
        pairs = [pm for pm in pairs if pm[1] == metric]
        if not pairs:
            raise PerfModelError(f"metric {metric!r} not in the file for that region")
    reg, met = pairs[0]
    sub = frame[(frame["region"] == reg) & (frame["metric"] == met)].reset_index(drop=True)
    params = [c for c in frame.columns if c not in ("region", "metric", "repetition", "time")]
    return Measurements.from_frame(
        sub, time="time", factors={p: p for p in params}, name=name or f"{reg}/{met}".rstrip("/")
    )

"""Data: readers (CSV, Extra-P text), the validated :class:`Measurements`, the bundled catalogue
(:mod:`perfmodel.data.datasets`) and the model-file schema (:mod:`perfmodel.data.schema`).

Imports from :mod:`perfmodel.errors` and the model language only.
"""

from .measurements import PRESET_SYMBOLS, ROLE_SYMBOLS, DroppedRow, Measurements, guess_roles, measurements_from_extrap
from .readers import EXTRAP_COLUMNS, READERS, Source, looks_like_extrap, read_csv, read_extrap, read_table
from .throughput import throughput_from_time, time_from_throughput

__all__ = [
    "Measurements",
    "DroppedRow",
    "guess_roles",
    "measurements_from_extrap",
    "ROLE_SYMBOLS",
    "PRESET_SYMBOLS",
    "READERS",
    "EXTRAP_COLUMNS",
    "Source",
    "looks_like_extrap",
    "read_csv",
    "read_extrap",
    "read_table",
    "time_from_throughput",
    "throughput_from_time",
]

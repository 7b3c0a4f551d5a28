"""The declared shape of a model file (``perfmodel.fit/1``) as JSON Schema, and its validation.

:func:`validate_model_dict` checks a parsed model file against :data:`MODEL_SCHEMA` and turns
the first violation into one :class:`PerfModelError` naming the field. What a schema cannot say
(the terms, signs, coefficients and parameters agree with the expression) is checked by
:meth:`perfmodel.fitting.result.FitResult.from_dict` after parsing the expression.

``uncertainty`` and ``ensemble`` are optional objects whose insides are checked by the code that
reads them; unknown top-level fields are ignored (a newer writer may add some).

Imports from the model language (function names), the time units and perfmodel.errors only.
"""

from __future__ import annotations

import json
import keyword
import math
from typing import cast

import jsonschema

from ..errors import PerfModelError
from ..language.expression import FUNCTIONS
from .time_units import TIME_UNITS

FORMAT = "perfmodel.fit/1"
#: Parse integer literals of more digits than this as floats (then infinite): Python refuses
#: to convert very long digit strings to int, and no field needs such integers.
_MAX_INT_DIGITS = 300

_IDENT = "^[A-Za-z][A-Za-z0-9_]*$"
_RESERVED = sorted(set(keyword.kwlist) | set(FUNCTIONS))

_finite = {"type": "number", "finite": True}
_number = {"type": "number"}  # NaN and ±inf allowed (metrics of a degenerate fit)
_symbol = {"type": "string", "pattern": _IDENT, "not": {"enum": _RESERVED}}
_interval = {"type": "array", "items": _finite, "minItems": 2, "maxItems": 2}
_metrics = {"type": "object", "required": ["mape"], "additionalProperties": _number}

MODEL_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "perfmodel model file",
    "type": "object",
    "required": [
        "format",
        "expression",
        "terms",
        "signs",
        "coefficients",
        "params",
        "param_bounds",
        "time",
        "factors",
        "settings",
        "cost",
        "loss",
        "penalty",
        "convergence",
        "metrics",
        "shares",
        "factor_ranges",
        "n_rows",
        "n_configurations",
    ],
    "properties": {
        "format": {"const": FORMAT},
        "expression": {"type": "string", "minLength": 1, "maxLength": 2000},
        "terms": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        "signs": {"type": "array", "items": {"enum": [1, -1]}, "minItems": 1},
        "coefficients": {
            "type": "object",
            "propertyNames": {"pattern": "^c(0|[1-9][0-9]*)$"},
            "additionalProperties": _finite,
        },
        "params": {"type": "object", "propertyNames": _symbol, "additionalProperties": _finite},
        "param_bounds": {"type": "object", "propertyNames": _symbol, "additionalProperties": _interval},
        "time": {"type": "string"},
        "factors": {"type": "object", "propertyNames": _symbol, "additionalProperties": {"type": "string"}},
        "settings": {
            "type": "object",
            "required": ["lam", "penalty", "loss", "seed"],
            "properties": {
                "lam": {"type": "number", "minimum": 0, "finite": True},
                "penalty": {"type": "string"},
                "loss": {"type": "string"},
                "seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
                "terms": {"type": ["string", "null"]},
            },
        },
        "cost": _number,
        "loss": _number,
        "penalty": _number,
        "convergence": {
            "type": "object",
            "properties": {
                "nit": {"type": "integer"},
                "nfev": {"type": "integer"},
                "seconds": _number,
                "cpu_seconds": _number,
                "message": {"type": "string"},
            },
        },
        "metrics": {**_metrics, "required": ["mape", "r2"]},
        "shares": {"type": "object", "additionalProperties": _number},
        "factor_ranges": {"type": "object", "propertyNames": _symbol, "additionalProperties": _interval},
        "n_rows": {"type": "integer", "minimum": 1},
        "n_configurations": {"type": "integer", "minimum": 1},
        "dataset": {"type": "string"},
        "dropped": {"type": "array", "items": {"type": "string"}},
        "warnings": {"type": "array", "items": {"type": "string"}},
        "validation": {"type": "object", "additionalProperties": _metrics},
        "version": {"type": "string"},
        "uncertainty": {"type": "object"},
        "rate": {
            "type": "object",
            "additionalProperties": False,  # {} when the time was measured as a time
            "dependentRequired": {"column": ["work"], "work": ["column"]},
            "properties": {
                "column": {"type": "string", "minLength": 1},
                "work": {"type": ["string", "number"], "minLength": 1, "exclusiveMinimum": 0, "finite": True},
                "unit": {"enum": list(TIME_UNITS)},  # the time unit the rate is per; absent: per second
            },
        },
        "gpus_per_node": {"type": ["number", "null"], "minimum": 1, "maximum": 1e9},
        "factor_span": {
            "type": "object",
            "additionalProperties": False,
            "dependentRequired": {"symbols": ["center", "directions"]},
            "properties": {
                "symbols": {"type": "array", "items": _symbol},
                "center": {"type": "array", "items": _finite},
                "directions": {"type": "array", "items": {"type": "array", "items": _finite}},
            },
        },
        "ensemble": {"type": "object"},
    },
}


def _finite_keyword(validator, wanted, instance, schema):
    """The schema keyword ``finite``: a number that is neither NaN nor infinite (JSON Schema's
    ``minimum``/``maximum`` let NaN through, as every comparison with it is false)."""
    if wanted and validator.is_type(instance, "number") and not math.isfinite(instance):
        yield jsonschema.ValidationError(f"{instance!r} is not a finite number")


_VALIDATOR = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"finite": _finite_keyword})(MODEL_SCHEMA)


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(error: jsonschema.ValidationError) -> str:
    where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    where = f"field {where!r}" if where else "the file"
    v = error.validator
    if v == "required":
        instance = error.instance if isinstance(error.instance, dict) else {}  # `required` checks objects only
        missing = [k for k in cast(list, error.validator_value) if k not in instance]
        return f"{where} lacks field(s): {', '.join(missing)}"
    if v == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return f"{where} must be {want}, got {_short(error.instance)}"
    if v == "finite":
        return f"{where} is {_short(error.instance)}, not a finite number"
    if v in ("minimum", "maximum", "exclusiveMinimum"):
        side = {"minimum": "below the lowest", "maximum": "above the highest"}.get(v, "not above the")
        return f"{where} is {_short(error.instance)}, {side} allowed value {error.validator_value:g}"
    if v in ("pattern", "not") and isinstance(error.instance, str):
        return (
            f"{where} has the name {_short(error.instance)}, which is not allowed here (a symbol is an "
            "identifier, not a Python keyword or function; coefficients are c0, c1, ...)"
        )
    if v == "const":
        return f"{where} must be {error.validator_value!r}, got {_short(error.instance)}"
    if v == "enum":
        return f"{where} must be one of {', '.join(map(repr, cast(list, error.validator_value)))}, got {_short(error.instance)}"
    return f"{where}: {_short(error.instance)} is not valid ({v} {_short(error.validator_value, 40)})"


def validate_model_dict(d) -> None:
    """Raise :class:`PerfModelError` (one line, naming the field) unless ``d`` fits the schema."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise PerfModelError(f"not a perfmodel model file (expected format {FORMAT!r})")
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(d))
    if error is not None:
        raise PerfModelError(f"model file: {_describe(error)}")


def _parse_int(text: str):
    return int(text) if len(text.lstrip("-")) <= _MAX_INT_DIGITS else float(text)


def loads(text: str | bytes) -> dict:
    """Parse model-file text or bytes (UTF-8) to a dict; raises :class:`PerfModelError`."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise PerfModelError(f"the model file is not UTF-8 text (byte {exc.start + 1})") from None
    try:
        return json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise PerfModelError(f"the model file is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise PerfModelError("the model file is nested too deeply to be a model") from None

"""The model language: the expression parser (an ``ast`` allow-list, never ``eval``), the term
library and presets (:mod:`~perfmodel.language.terms`), ``overlap(A, B; g)``
(:mod:`~perfmodel.language.overlap`), constant-factor reduction (:mod:`~perfmodel.language.reduce`)
and LaTeX (:mod:`~perfmodel.language.latex`).

The lowest layer: imports from :mod:`perfmodel.errors` only.
"""

from .expression import Expression, parse_bounds, parse_expression
from .terms import PRESETS, library, preset_bounds, preset_spec

__all__ = ["Expression", "parse_expression", "parse_bounds", "PRESETS", "library", "preset_spec", "preset_bounds"]

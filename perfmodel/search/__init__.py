"""Automatic term selection, and λ chosen by validation.

``auto_select(meas)`` finds small expressions ``T = Σ c_k·term_k`` that predict unseen
configurations well, above all larger scales; ``lambda_path(model, meas)`` fits one model
over a range of λ and picks λ by cross-validation.

What is searched
----------------
The *term pool* is built for the factors present (:func:`search_terms`):

1. **The term library** (:func:`perfmodel.language.terms.library`): constant (start-up), iterations
   ``I``, per-iteration compute ``I·b^e`` (with ``e`` on the grid 0.1, 0.2, ..., 1.9),
   data-parallel compute ``N/p``, tree all-reduce ``I·log2(p)``, ring all-reduce
   ``I·(p-1)/p``, parameter server ``I·p`` and per-worker start-up ``p``, each in the form
   that suits the mapped factors.
2. **PMNF blocks of one factor** ``x^i·log2(x)^j`` with ``i`` in {0, 1/2, 1, 3/2, 2, 5/2, 3}
   and ``j`` in {0, 1, 2} (Extra-P's normal form on a coarser grid), plus the strong-scaling
   blocks ``x^-2, x^-1, x^-1/2, log2(x)/x`` that Extra-P's default search lacks (time that
   falls as processors grow).
3. **Interactions**: products of two factors' blocks from {x^-1, x^1/2, x, x^3/2, x^2,
   log2(x), x·log2(x)}, and of three factors' blocks from {x^-1, x, x^2, log2(x)}.

Logarithms are used only for factors whose values are all >= 1 (Extra-P's rule); negative
and fractional exponents only for positive factors; a factor with two distinct values
gets only the block ``x``. Terms that are constant, non-finite, or proportional to an
earlier term on the data are dropped (library terms come first, so they win ties).

*Many factors.* The interactions grow combinatorially (8 factors: ~9,000 terms). With more
than :data:`FULL_POOL_FACTORS` varying factors the factors are screened first: a search over
the library and every factor's own PMNF blocks finds the best set S; a factor *matters* when
removing S's terms that depend on it (``I`` depends on E, N, p, b) worsens the score, or adding
its best block to S improves it, by more than the noise of S's score. Only factors that matter
get PMNF blocks; interactions are built among the :data:`MAX_PAIR_FACTORS` (pairs) and
:data:`MAX_TRIPLE_FACTORS` (triples) that matter most. A nuisance factor thus never enters.

How it is searched
------------------
*Screening* (exact, fast): every term set is fitted by non-negative weighted least squares
(the same loss as the fit; the log loss is screened with the relative loss; λ = 0) on each
validation split, in batches with numpy. Every single term and every set of library terms
(with at most one exponent per gridded family) are screened; then a beam search (width
``beam``, the constant always among the starts) adds one term at a time up to ``max_terms`` terms
(at most one exponent of the gridded ``I·b^e`` per set); then every term set on the
final beams and the best set of each size is pruned backwards (each term removed in turn).
On pools built after screening the factors (large ones) the search is more thorough: a pool of
more than :data:`GROW_ALL` terms grows each set by the :data:`GROW_TOP` terms that lower its
squared error most (exact least squares of the set plus each term, from the Gram matrix), the
best sets of library terms alone are grown beside the beam, and an *exchange* step swaps one or
two terms of the best sets for others (guided by the same criterion) while the score improves:
a greedy step that locked in two products approximating one true term is undone.
A set in which a term would get a negative coefficient on all the data is rejected (that
term is redundant). *Refinement*: the best screened sets of each size (those within noise of
the best screened score, at most ``max_candidates``), and for a few (``n_free``) a variant
whose exponents are free parameters fitted by differential evolution (``I·b^e_b`` with
``e_b`` in [0, 2]; each ``x^i`` of a PMNF block or interaction as ``x^e`` with ``e`` in
[i-1, i+1]; at most ``max_free`` free exponents, of the terms that carry the most time), are
fitted with :class:`perfmodel.Model`,
together with the presets of :data:`PRESET_CANDIDATES` (the paper's ``data-parallel`` model; a
name not in :data:`perfmodel.language.terms.PRESETS` is skipped, and so is a preset with more parameters
than ``max_terms + max_free``, e.g. one exponent per extra factor),
(modest DE settings, ``search_de``) under the same cross-validation and hold-out splits as
:func:`perfmodel.fitting.evaluate.cross_validate` and :func:`perfmodel.fitting.evaluate.holdout`, in a
process pool. The chosen ones are refitted on all data with full DE settings (``final_de``).

Score
-----
``score = ½·(k-fold CV MAPE) + ½·(hold-out MAPE)``, where the hold-out split trains on the
smaller scales and tests on the largest (:func:`perfmodel.fitting.evaluate.largest_scale_query`:
the top ~30 % of ``p`` values, else of ``N``), so extrapolation counts as much as
interpolation; without such a split the score is the CV MAPE. Its standard error ``se`` is
the standard deviation of the k fold MAPEs and the hold-out MAPE over sqrt(k + 1).
*Within noise of the best* means ``score <= best + max(se_best, 1 % of best, 0.001)``
(the one-standard-error rule); among those the candidates are listed simplest first, and
``Selection.best`` is the first. Simplest means the fewest fitted parameters plus the
*readability cost* (:func:`readability_cost`: 0 for each library term — constant, ``I``,
``I·b^e``, ``N/p``, ``I·log2(p)``, ``I·(p-1)/p``, ``I·p``, ``p`` —, 1 for a PMNF block of one
factor, k for a product of k factors), then the readability cost, then the score: of two
models the data cannot tell apart, the one a stakeholder can read (start-up, compute,
all-reduce) is shown, not ``p^2*B^-2``. A candidate of library terms alone (readability cost 0)
counts as within noise up to :data:`READABLE_BAND` × the noise (1: the same band; two standard
errors took a real series from 5.6 % to 48 %). The best set of library terms alone of each size
is refined whenever its screened score is within reach of the best, so it can be chosen. A
preset (the paper's model, Pollux's, Optimus's) is a documented structure: its readability cost
is 0, and so is an overlap of library terms (below).

*Overlap variants.* For the best screened set of each size, and the best set of library terms
alone of each size, that has both compute and communication terms of the library, a variant
``overlap(compute, communication; g) + start-up`` (Pollux's structure: compute and
synchronisation overlapping, γ in [1, 10]) is refined too.

Too few configurations to choose by validation
-----------------------------------------------
When the hold-out split trains on fewer than :data:`MIN_VALIDATION_CONFIGURATIONS` (3)
configurations, a model with a constant and one scaling term already fits its training part
exactly, so the validation cannot tell structures apart: with 3 measured GPU counts it prefers
``I`` alone (perfect linear speed-up), which is optimistic by construction. The search then shows
the paper's generic ``data-parallel`` model (regularised by λ) first, the validated candidates
after it (they widen its intervals), and says so (``Selection.prior``). On 61 real short series
with 3 GPU counts this took the median error of the next count from 5.0 % to 3.5 %
(``benchmarks/accuracy.py --series``).

All of it runs with one BLAS thread in this process (the matrices are small; BLAS threads
only spin there, see :func:`blas_single_thread`).

Where it lives
--------------
:mod:`~perfmodel.search.pool` (the term pool and readability), :mod:`~perfmodel.search.screening`
(splits and exact screening), :mod:`~perfmodel.search.beam` (the beam search),
:mod:`~perfmodel.search.refine` (the candidates refined by DE), :mod:`~perfmodel.search.candidates`
(candidates, the selection, the small-data rule, :func:`plausible`), :mod:`~perfmodel.search.select`
(:func:`auto_select`, the outline), :mod:`~perfmodel.search.lambda_path` and
:mod:`~perfmodel.search.pmnf` (Extra-P's search, a peer on the Compare page). The search layer imports
from the layers below it (model language, data, fitting, uncertainty) and :mod:`perfmodel.parallel`,
never from the uses of models or presentation.
"""

from .candidates import MIN_VALIDATION_CONFIGURATIONS, READABLE_BAND, Candidate, Selection, plausible, simplest_first
from .lambda_path import DEFAULT_LAMS, LAMBDA_RULES, LambdaPath, lambda_path
from .pool import (
    PEER_TERMS,
    PRESET_CANDIDATES,
    SearchTerm,
    overlap_variant,
    preset_specs,
    readability_cost,
    search_terms,
)
from .select import FULL_POOL_FACTORS, MAX_PAIR_FACTORS, MAX_TRIPLE_FACTORS, SEARCH_LIMITS, auto_select

__all__ = [
    "auto_select",
    "plausible",
    "lambda_path",
    "Selection",
    "Candidate",
    "LambdaPath",
    "SearchTerm",
    "search_terms",
    "readability_cost",
    "overlap_variant",
    "preset_specs",
    "simplest_first",
    "DEFAULT_LAMS",
    "LAMBDA_RULES",
    "SEARCH_LIMITS",
    "PEER_TERMS",
    "PRESET_CANDIDATES",
    "MIN_VALIDATION_CONFIGURATIONS",
    "READABLE_BAND",
    "FULL_POOL_FACTORS",
    "MAX_PAIR_FACTORS",
    "MAX_TRIPLE_FACTORS",
]

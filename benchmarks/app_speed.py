"""Speed of the dashboard as a person sees it (headless Chromium, a real `streamlit run app.py`).

Measures, on this machine:
  * opening the app -> first chart drawn, default dataset: the first visitor of a fresh server
    (cold) and a new session on a running one;
  * live λ: key press on the λ slider -> the new fitted formula shown beside it, on the default
    dataset and on a 300-row upload with a 6-parameter model (4 constants, 2 free exponents);
    new λ values and values tried before (cache hits) alternate;
  * Compare's first visit on a 30-row upload (a new file each time) -> its first parity chart
    drawn (the quick peers; the automatic search's row follows);
  * Results on the DeepBench all-reduce dataset (P100), opened by link by the second visitor of a
    fresh server (the dataset not fitted before) -> the parity chart drawn; in a new browser
    context, and in one that opened the app before (Streamlit's scripts and plotly.js cached);
  * Compare and Groups opened by link, each the first visit of its page on a fresh server (the
    server warmed up by one visit of the app's first page): Compare on the default dataset -> its
    parity chart, Groups on its default table (the bundled CNN benchmarks, 18 groups) -> its
    first chart;
  * Compare's last row: the same 30-row uploads -> the page's run finished (the automatic search's
    row in the table);
  * page switches in a session that has drawn its first page: a click in the sidebar -> the page's
    run finished (Model, Results, Scaling, Plan, Export, Data, in turn).
The baseline, measured in the same run, is the library fit of the default dataset's model in this
process (no browser, no server), so each ratio is what the dashboard adds. ``--load N`` starts N
busy-loop processes before the first measurement (the baseline included) and stops them at the
end: the machine as busy as a shared one is (issue 21: Compare and Groups within 4 s with two of
them on 2 cores). The header gives the cores and the load average at the start and the end.
Prints a table; no assertions.

    python benchmarks/app_speed.py [--repeat 3] [--load 2] [--only fresh,warm,live,compare,big,pages,switch]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from perfmodel import Model  # noqa: E402
from perfmodel.data.datasets import DEFAULT_DATASET, get_dataset, load_dataset  # noqa: E402
from tests.browser.harness import (  # noqa: E402 (after the sys.path set-up above)
    CHROMIUM,
    CHROMIUM_ARGS,
    IDLE,
    new_page,
    open_app,
    running_app,
    wait_for_run,
)

CUSTOM = "p^e2"
#: Notes in the page, by the page's own clock (ms since the epoch), when each chart is first drawn:
#: under its title, and under "" for the first chart of any title. Timed in the page, not by a
#: Playwright wait, whose polling on a busy page added up to 0.7 s to a step.
DRAWN = """
window.__drawn = {};
new MutationObserver(() => {
  const now = performance.timeOrigin + performance.now();
  for (const d of document.querySelectorAll('.js-plotly-plot')) {
    if (!d.querySelector('.main-svg')) continue;
    if (!('' in window.__drawn)) window.__drawn[''] = now;
    const t = d.querySelector('.gtitle');
    if (t && !(t.textContent in window.__drawn)) window.__drawn[t.textContent] = now;
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""
DEEPBENCH = "deepbench-allreduce-p100"
#: The default dataset's λ at which the live steps start: from 0.01 each step of the slider changes
#: the formula at 3 significant digits (at the default λ 1e-5 its neighbours give the same digits).
LIVE_START = 0.01
LIVE_FORMULA = (
    "() => { const k = document.querySelector('.st-key-live_formula .katex-html'); return k ? k.textContent : null; }"
)
GROUPS_CHART = "Run time of each group as it scales"  # the Groups page's curves (default mode)
PARITY = "Predicted against measured"  # the Results page's parity chart
COMPARE_PARITY = "Predicted against measured, all models"  # the Compare page's (a title not on Results)


def drawn_at(page, title: str = "") -> float:
    """When (epoch seconds) the first chart whose title contains ``title`` was drawn ("": any chart);
    waits for it."""
    find = (
        "(t) => { const k = Object.keys(window.__drawn).find(k => t ? k.includes(t) : k === '');"
        " return k === undefined ? null : window.__drawn[k]; }"
    )
    page.wait_for_function(find, arg=title, timeout=180_000)
    return page.evaluate(find, title) / 1e3


def make_upload(path: Path) -> pd.DataFrame:
    """300 rows: 100 configurations x 3 repeats of a data-parallel job from a known formula."""
    rng = np.random.default_rng(0)
    rows = []
    for p in (1, 2, 4, 8, 16):
        for b in (16, 32, 64, 128, 256):
            for N in (25_000, 50_000, 100_000, 200_000):
                it = np.ceil(N / (p * b))
                t = 4 + 1e-3 * it * b**0.8 + 0.02 * it * np.log2(p) + 0.1 * p**1.2
                rows += [(p, b, N, t * (1 + 0.03 * rng.uniform(-1, 1))) for _ in range(3)]
    frame = pd.DataFrame(rows, columns=["workers", "batch_size", "samples", "time_s"])
    frame.to_csv(path, index=False)
    return frame


def make_small_upload(path: Path, seed: int = 1) -> pd.DataFrame:
    """30 rows: GPU count x global batch, 2 repeats, as a person's own CSV might look (the noise
    differs by ``seed``, so each file is new to the server's caches)."""
    rng = np.random.default_rng(seed)
    rows = []
    for gpus in (1, 2, 4, 8, 16):
        for gb in (256, 512, 1024):
            for _ in range(2):
                t = 5 + 2e-3 * (50_000 / gb) * (gb / gpus) ** 0.9 + 1e-2 * (50_000 / gb) * np.log2(gpus)
                rows.append((gpus, gb, t * (1 + 0.02 * rng.uniform(-1, 1))))
    frame = pd.DataFrame(rows, columns=["GPU count", "global batch", "epoch time (s)"])
    frame.to_csv(path, index=False)
    return frame


def upload(page, csv: Path) -> None:
    open_app(page)
    wait_for_run(page, lambda: page.get_by_text("Upload a file").click())
    wait_for_run(page, lambda: page.locator('input[type="file"]').set_input_files(str(csv)))
    wait_for_run(page, lambda: page.get_by_role("button", name="Use this data").click())


def go(page, title: str) -> None:
    wait_for_run(
        page,
        lambda: page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click(),
        timeout=180_000,
    )


def first_chart(browser, url: str, path: str = "", title: str = "", context=None) -> float:
    """A new session: open ``url/path`` and time until a chart (titled ``title``, "": any) is drawn.
    In a new browser context (nothing cached), or in ``context`` (a browser that visited before)."""
    page = context.new_page() if context is not None else new_page(browser, url)
    page.add_init_script(DRAWN)
    t0 = time.time()
    page.goto(f"{url}/{path}")
    dt = drawn_at(page, title) - t0
    page.close() if context is not None else page.context.close()
    return dt


def live_lambda(page, presses: list[str]) -> list[float]:
    """Key presses on the λ slider; each timed until the formula beside it changes."""
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="λ").locator('input[type="range"]')
    out = []
    for key in presses:
        before = page.evaluate(LIVE_FORMULA)
        slider.focus()
        t0 = time.perf_counter()
        page.keyboard.press(key)
        page.wait_for_function(
            f"(old) => {{ const v = ({LIVE_FORMULA})(); return v && v !== old; }}", arg=before, timeout=60_000
        )
        out.append(time.perf_counter() - t0)
        page.wait_for_function(IDLE, timeout=60_000)  # the sidebar's full run, before the next press
    return out


def six_parameter_model(page) -> None:
    """The upload's default model 1 + I*b^e_b + I*log2(p) + p with p swapped for p^e2."""
    go(page, "Model")
    box = page.get_by_role("textbox", name="Custom terms, separated by +")
    box.fill(CUSTOM)
    wait_for_run(page, lambda: box.press("Enter"))
    startup = page.locator('[data-testid="stCheckbox"]').filter(has_text="Worker start-up")
    wait_for_run(page, lambda: startup.locator("label").click())
    page.get_by_text("6 fitted parameters").wait_for()
    wait_for_run(page, lambda: page.get_by_role("button", name="Fit model").click(), timeout=180_000)


NOT_RUNNING = "document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning'"


def first_visit(browser, url: str, path: str, title: str) -> float:
    """:func:`first_chart` of ``url/path`` in a new session, which is then left to finish its run
    (so that its remaining work does not overlap the next measurement)."""
    page = new_page(browser, url)
    page.add_init_script(DRAWN)
    t0 = time.time()
    page.goto(f"{url}/{path}")
    dt = drawn_at(page, title) - t0
    page.wait_for_function(NOT_RUNNING, timeout=180_000)
    page.context.close()
    return dt


def _busy() -> None:
    while True:
        pass


def start_load(n: int) -> list:
    """``n`` busy-loop processes (each wants a whole core); stop them with :func:`stop_load`."""
    procs = [mp.get_context("fork").Process(target=_busy, daemon=True, name=f"load-{i}") for i in range(n)]
    for p in procs:
        p.start()
    return procs


def stop_load(procs: list) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(5)


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


#: The parts of the benchmark: fresh servers (first visitor, then DeepBench by link from a new and from a
#: returning browser), new sessions on a running server, live λ on the default dataset, Compare's first
#: visit, live λ on the 300-row upload, Compare and Groups opened by link on fresh servers.
PARTS = ("fresh", "warm", "live", "compare", "big", "pages", "switch")
#: The pages a person switches between, in the order of the walk (issue 33).
SWITCHES = ("Model", "Results", "Scaling", "Plan", "Export", "Data")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--only", default=",".join(PARTS), help=f"comma-separated parts to measure, of {','.join(PARTS)} (default: all)"
    )
    ap.add_argument(
        "--load", type=int, default=0, help="busy-loop processes running during the whole measurement (default: none)"
    )
    args = ap.parse_args()
    parts = set(args.only.split(","))
    load = start_load(args.load)
    try:
        run(args, parts)
    finally:
        stop_load(load)


def run(args, parts: set) -> None:
    print(
        f"{len(os.sched_getaffinity(0))} cores; {args.load} busy-loop process(es) started; at the start: {load_line()}",
        flush=True,
    )
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp())
    big = tmp / "timings_300.csv"
    make_upload(big)
    small = []
    for i in range(args.repeat):
        (tmp / str(i)).mkdir()
        small.append(tmp / str(i) / "my_timings.csv")
        make_small_upload(small[-1], seed=i + 1)
    meas = load_dataset(DEFAULT_DATASET)
    spec = get_dataset(DEFAULT_DATASET).terms
    lib = []
    for lam in [0.01, 0.1] * args.repeat:
        t0 = time.perf_counter()
        Model(spec, lam=lam).fit(meas)
        lib.append(time.perf_counter() - t0)

    cold, warm, live, live_big, compare, deepbench, deepbench_back = [], [], [], [], [], [], []
    compare_link, groups, compare_last, switches = [], [], [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for _ in range(args.repeat if "fresh" in parts else 0):  # a fresh server: first visitor, then DeepBench
            with running_app() as url:
                cold.append(first_chart(browser, url))
                deepbench.append(first_chart(browser, url, f"results?dataset={DEEPBENCH}", PARITY))
            with running_app() as url:  # a returning browser (plotly.js in its cache), DeepBench new to the server
                page = new_page(browser, url)
                open_app(page)
                page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
                deepbench_back.append(
                    first_chart(browser, url, f"results?dataset={DEEPBENCH}", PARITY, context=page.context)
                )
                page.context.close()
        with running_app() as url:
            first_chart(browser, url)  # warm the server up
            for _ in range(args.repeat if "warm" in parts else 0):
                warm.append(first_chart(browser, url))
            if "live" in parts:
                page = new_page(browser, url)
                open_app(page, f"model?lam={LIVE_START}")
                page.locator(".st-key-live_formula .katex").wait_for()
                live += live_lambda(page, ["ArrowRight", "ArrowRight", "ArrowLeft", "ArrowLeft"] * args.repeat)
                page.context.close()
            for csv in small if "compare" in parts else []:  # each upload new to the caches
                page = new_page(browser, url)
                page.add_init_script(DRAWN)
                upload(page, csv)
                t0 = time.time()
                page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Compare").first.click()
                compare.append(drawn_at(page, COMPARE_PARITY) - t0)
                page.wait_for_function(IDLE, timeout=180_000)  # every row in: the run is over
                compare_last.append(time.time() - t0)
                page.context.close()
            if "switch" in parts:
                page = new_page(browser, url)
                open_app(page)
                page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
                for _ in range(args.repeat):
                    for title in SWITCHES:
                        t0 = time.perf_counter()
                        go(page, title)
                        switches.append(time.perf_counter() - t0)
                page.context.close()
            if "big" in parts:
                page = new_page(browser, url)
                upload(page, big)
                six_parameter_model(page)
                live_big += live_lambda(page, ["ArrowRight", "ArrowLeft"] * args.repeat)
                page.context.close()
        for _ in range(args.repeat if "pages" in parts else 0):  # each page's first visit on a fresh server
            with running_app() as url:
                first_chart(browser, url)  # the server warmed up, the default dataset fitted
                compare_link.append(first_visit(browser, url, "compare", COMPARE_PARITY))
                groups.append(first_visit(browser, url, "groups", GROUPS_CHART))
        browser.close()

    base = statistics.median(lib)
    rows = [
        ("library fit, default dataset (baseline)", lib),
        ("open -> first chart, first visitor of a fresh server", cold),
        ("open -> first chart, new session", warm),
        ("live λ: key press -> new formula, default dataset", live),
        ("live λ: key press -> new formula, 300 rows, 6 parameters", live_big),
        ("Compare, first visit, 30-row upload -> chart", compare),
        ("Compare, first visit, 30-row upload -> last row", compare_last),
        (f"page switch ({len(SWITCHES)} pages in turn) -> page drawn", switches),
        (f"Results by link, {DEEPBENCH}, first visit -> chart", deepbench),
        ("the same, from a browser that opened the app before", deepbench_back),
        ("Compare by link, default dataset, first visit -> chart", compare_link),
        ("Groups by link, 18 groups, first visit -> first chart", groups),
    ]
    print(f"at the end: {load_line()}")
    print(f"{'step':<58} {'median s':>9} {'max s':>7} {'runs':>5} {'x baseline':>11}")
    for name, vals in rows:
        if not vals:
            continue
        med = statistics.median(vals)
        print(f"{name:<58} {med:>9.3f} {max(vals):>7.2f} {len(vals):>5} {med / base:>10.1f}x")


if __name__ == "__main__":
    main()

"""Speed of the dashboard as a person sees it (headless Chromium, a real `streamlit run app.py`).

Measures, on this machine:
  * page load -> first chart drawn, on the default dataset (Results page, a fresh session);
  * λ change -> refit -> new constants shown, and -> the Results parity chart redrawn, for a
    300-row upload (100 configurations x 3 repeats of a data-parallel job generated from a
    known formula) with a 6-parameter model (4 constants, 2 free exponents);
  * the same λ change back (a cache hit).
The baseline, measured in the same run, is the library fit of the same model and data in this
process (no browser, no server), so the ratio is what the UI adds. Prints a table; no assertions.

    python benchmarks/app_speed.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from perfmodel import Measurements, Model  # noqa: E402
from tests.browser.harness import CHROMIUM, CHROMIUM_ARGS, new_page, open_app, running_app, wait_for_run  # noqa: E402

TERMS = "1 + I*b^e_b + I*log2(p) + p^e2"
CUSTOM = "p^e2"
PLOT_POINTS = ".js-plotly-plot .scatterlayer .point"


def make_upload(path: Path) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for p in (1, 2, 4, 8, 16):
        for b in (16, 32, 64, 128, 256):
            for N in (25_000, 50_000, 100_000, 200_000):
                I = np.ceil(N / (p * b))
                t = 4 + 1e-3 * I * b ** 0.8 + 0.02 * I * np.log2(p) + 0.1 * p ** 1.2
                rows += [(p, b, N, t * (1 + 0.03 * rng.uniform(-1, 1))) for _ in range(3)]
    frame = pd.DataFrame(rows, columns=["workers", "batch_size", "samples", "time_s"])
    frame.to_csv(path, index=False)
    return frame


def sidebar_formula(page) -> str:
    code = page.locator('[data-testid="stSidebar"] code').filter(has_text="T =")
    code.first.wait_for()
    return code.first.inner_text()


def measure_refits(page, csv: Path, repeat: int) -> tuple[list, list, list]:
    """Upload the 300-row file, set the 6-parameter model, then time λ changes and a redraw."""
    refit, cached, redraw = [], [], []
    nav = page.locator('[data-testid="stSidebarNav"] a')
    open_app(page)
    wait_for_run(page, lambda: page.get_by_text("Upload a file").click())
    wait_for_run(page, lambda: page.locator('input[type="file"]').set_input_files(str(csv)))
    wait_for_run(page, lambda: page.get_by_role("button", name="Use this data").click())
    wait_for_run(page, lambda: nav.filter(has_text="Model").click())
    # The upload's default model is the data-parallel preset 1 + I*b^e_b + I*log2(p) + p; swap the
    # per-worker start-up p for a free-exponent p^e2: 4 constants + 2 exponents.
    box = page.get_by_role("textbox", name="Custom terms, separated by +")
    box.fill(CUSTOM)
    wait_for_run(page, lambda: box.press("Enter"))
    startup = page.locator('[data-testid="stCheckbox"]').filter(has_text="Worker start-up")
    wait_for_run(page, lambda: startup.locator("label").click())
    page.get_by_text("6 fitted parameters").wait_for()
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="λ").locator('input[type="range"]')
    fit = page.get_by_role("button", name="Fit model")
    wait_for_run(page, lambda: fit.click())

    def move(key: str) -> float:
        before = sidebar_formula(page)
        slider.focus()
        page.keyboard.press(key)
        t0 = time.perf_counter()
        wait_for_run(page, lambda: fit.click())
        page.wait_for_function(
            "(old) => { const c = [...document.querySelectorAll('[data-testid=stSidebar] code')]"
            ".find(e => e.innerText.includes('T =')); return c && c.innerText !== old; }", arg=before)
        return time.perf_counter() - t0

    for _ in range(repeat):
        refit.append(move("ArrowRight"))  # a λ never tried: a real fit
        cached.append(move("ArrowLeft"))  # back to the previous λ: cached
        cached.append(move("ArrowRight"))  # and forward again: cached
        t0 = time.perf_counter()
        wait_for_run(page, lambda: nav.filter(has_text="Results").click())
        page.wait_for_selector(PLOT_POINTS)
        redraw.append(time.perf_counter() - t0)
        wait_for_run(page, lambda: nav.filter(has_text="Model").click())
    return refit, cached, redraw


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    csv = Path(tempfile.mkdtemp()) / "timings_300.csv"
    frame = make_upload(csv)
    meas = Measurements.from_frame(frame, "time_s", {"p": "workers", "b": "batch_size", "N": "samples"})
    lib = []
    for lam in [0.01, 0.1] * args.repeat:
        t0 = time.perf_counter()
        res = Model(TERMS, lam=lam).fit(meas)
        lib.append(time.perf_counter() - t0)

    load = []
    with running_app() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for _ in range(args.repeat):
            page = new_page(browser, url)
            t0 = time.perf_counter()
            page.goto(f"{url}/results")
            page.wait_for_selector(PLOT_POINTS, timeout=120_000)
            load.append(time.perf_counter() - t0)
            page.context.close()
        page = new_page(browser, url)
        try:
            refit, cached, redraw = measure_refits(page, csv, args.repeat)
        except Exception:
            page.screenshot(path=str(ROOT / "tests" / "artifacts" / "app_speed_failed.png"))
            raise
        browser.close()

    base = statistics.median(lib)
    rows = [("library fit, same data and model (baseline)", lib),
            ("page load -> first chart, default dataset", load),
            ("λ change -> refit -> new constants shown", refit),
            ("λ back to a value tried before (cache hit)", cached),
            ("Model -> Results page, parity chart redrawn", redraw)]
    print(f"upload: {len(frame)} rows ({meas.n_configurations} configurations), model {TERMS} "
          f"({res.n_params} parameters)")
    print(f"{'step':<48} {'median s':>9} {'runs':>5} {'x baseline':>11}")
    for name, vals in rows:
        med = statistics.median(vals)
        print(f"{name:<48} {med:>9.3f} {len(vals):>5} {med / base:>10.1f}x")


if __name__ == "__main__":
    main()

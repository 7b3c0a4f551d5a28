#!/usr/bin/env python3
"""Synchronous data-parallel SGD in numpy: a real (small) distributed training job to measure.

    python examples/dp_sgd.py --workers 4 --batch-size 64 --samples 20000 --epochs 1

What it does
    * Generates a synthetic binary classification data set of N samples × F features from ``--seed``
      (labels from a random "teacher" network, 5 % label noise) in shared memory.
    * Starts p worker processes. Every iteration each worker takes its own chunk of b samples of the
      current global mini-batch of p·b samples (b is the *per-worker* batch size), computes the gradient
      of a 2-layer MLP (F → H tanh → 1, logistic loss) on it, and writes the gradient into its slot of a
      shared-memory buffer.
    * All-reduce: after a barrier every worker sums all p slots (weighted by chunk size) into the
      averaged gradient, applies the same SGD update to its own copy of the weights (so the copies stay
      identical), and meets the others at a second barrier before the slots are overwritten.
    * Iterations per epoch = ceil(N / (p·b)); the last mini-batch of an epoch is smaller. The sample
      order is reshuffled every epoch from the seed, identically on all workers.
    * Prints the final training loss (logistic loss over all N samples, evaluated data-parallel by the
      workers) and the iteration count.

The cost therefore has the shape the paper models: a start-up part (processes, data generation ∝ N),
per-iteration compute ∝ b, and per-iteration synchronisation/reduction that grows with p, times
E·ceil(N/(p·b)) iterations. numpy is kept single-threaded in every process (the BLAS thread
variables are set before numpy is imported), so p is the only source of parallelism.
"""

from __future__ import annotations

import os

for _var in (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import multiprocessing as mp  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from multiprocessing import shared_memory  # noqa: E402

import numpy as np  # noqa: E402

LABEL_NOISE = 0.05
TEACHER_HIDDEN = 8  # the label-generating network is small: data generation stays cheap


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", "-p", type=int, default=1, help="worker processes p (default 1)")
    parser.add_argument("--batch-size", "-b", type=int, default=64, help="per-worker mini-batch b (default 64)")
    parser.add_argument("--samples", "-N", type=int, default=20000, help="training samples N (default 20000)")
    parser.add_argument("--epochs", "-E", type=int, default=1, help="epochs E (default 1)")
    parser.add_argument("--features", "-F", type=int, default=256, help="input features F (default 256)")
    parser.add_argument("--hidden", type=int, default=128, help="hidden units H (default 128)")
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="random seed for data, weights, shuffles")
    args = parser.parse_args(argv)
    for name in ("workers", "batch_size", "samples", "epochs", "features", "hidden"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1 (got {getattr(args, name)})")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        parser.error(f"--lr must be a positive number (got {args.lr})")
    return args


# ------------------------------------------------------------------------------------------- model
def param_shapes(features: int, hidden: int) -> list[tuple[int, ...]]:
    return [(features, hidden), (hidden,), (hidden,), ()]  # W1, b1, w2, b2


def n_params(features: int, hidden: int) -> int:
    return sum(int(np.prod(s)) for s in param_shapes(features, hidden))


def unpack(theta: np.ndarray, features: int, hidden: int) -> list[np.ndarray]:
    out, i = [], 0
    for shape in param_shapes(features, hidden):
        size = int(np.prod(shape))
        out.append(theta[i : i + size].reshape(shape))
        i += size
    return out


def init_params(features: int, hidden: int, rng: np.random.Generator) -> np.ndarray:
    w1 = rng.normal(0.0, 1.0 / math.sqrt(features), size=(features, hidden))
    w2 = rng.normal(0.0, 1.0 / math.sqrt(hidden), size=hidden)
    return np.concatenate([w1.ravel(), np.zeros(hidden), w2, np.zeros(1)])


def logits(theta: np.ndarray, x: np.ndarray, features: int, hidden: int) -> np.ndarray:
    w1, b1, w2, b2 = unpack(theta, features, hidden)
    return np.tanh(x @ w1 + b1) @ w2 + b2


def loss_and_grad(
    theta: np.ndarray, x: np.ndarray, y: np.ndarray, features: int, hidden: int, want_grad: bool = True
) -> tuple[float, np.ndarray | None]:
    """Mean logistic loss of the MLP on (x, y) and its gradient w.r.t. the flat parameter vector."""
    w1, b1, w2, b2 = unpack(theta, features, hidden)
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    # log(1 + exp(-s z)) with s = 2y - 1, computed stably
    s = 2.0 * y - 1.0
    loss = float(np.mean(np.logaddexp(0.0, -s * z)))
    if not want_grad:
        return loss, None
    n = x.shape[0]
    dz = (1.0 / (1.0 + np.exp(-z)) - y) / n  # d loss / d z
    g_w2 = h.T @ dz
    g_b2 = np.array([dz.sum()])
    dh = np.outer(dz, w2) * (1.0 - h * h)
    g_w1 = x.T @ dh
    g_b1 = dh.sum(axis=0)
    return loss, np.concatenate([g_w1.ravel(), g_b1, g_w2, g_b2])


def make_data(samples: int, features: int, seed: int, x_out: np.ndarray, y_out: np.ndarray) -> None:
    """Synthetic data: Gaussian inputs, labels from a random teacher MLP with label noise."""
    rng = np.random.default_rng(seed)
    x_out[:] = rng.standard_normal((samples, features))
    teacher = init_params(features, TEACHER_HIDDEN, rng) * 3.0
    z = logits(teacher, x_out, features, TEACHER_HIDDEN)
    labels = (z > np.median(z)).astype(np.float64)
    flip = rng.random(samples) < LABEL_NOISE
    y_out[:] = np.where(flip, 1.0 - labels, labels)


# ----------------------------------------------------------------------------------------- workers
def worker(rank: int, cfg: dict, names: dict, barrier, errors) -> None:
    """One data-parallel worker: gradient on its chunk, all-reduce through shared memory, update."""
    shms = {k: shared_memory.SharedMemory(name=v) for k, v in names.items()}
    try:
        n, f, h, p, b = cfg["samples"], cfg["features"], cfg["hidden"], cfg["workers"], cfg["batch_size"]
        k = n_params(f, h)
        x = np.ndarray((n, f), dtype=np.float64, buffer=shms["x"].buf)
        y = np.ndarray((n,), dtype=np.float64, buffer=shms["y"].buf)
        grads = np.ndarray((p, k), dtype=np.float64, buffer=shms["grads"].buf)
        counts = np.ndarray((p,), dtype=np.float64, buffer=shms["counts"].buf)
        theta = np.ndarray((k,), dtype=np.float64, buffer=shms["theta"].buf).copy()  # own replica
        global_batch = p * b
        iters = math.ceil(n / global_batch)
        for epoch in range(cfg["epochs"]):
            order = np.random.default_rng((cfg["seed"], epoch)).permutation(n)  # same on every worker
            for it in range(iters):
                lo = it * global_batch
                batch = order[lo : min(lo + global_batch, n)]
                mine = batch[rank * b : (rank + 1) * b]  # may be empty in the last, short mini-batch
                if mine.size:
                    _, g = loss_and_grad(theta, x[mine], y[mine], f, h)
                    grads[rank] = g * mine.size  # sum, not mean: weighted by chunk size
                else:
                    grads[rank] = 0.0
                counts[rank] = mine.size
                barrier.wait()  # all gradients written
                total = grads.sum(axis=0) / counts.sum()  # the all-reduce (every worker reduces)
                theta -= cfg["lr"] * total
                barrier.wait()  # all workers have read the slots before they are overwritten
        # Final evaluation, data-parallel too: each worker scores a contiguous shard of all N samples.
        lo, hi = rank * n // p, (rank + 1) * n // p
        z = logits(theta, x[lo:hi], f, h)
        sign = 2.0 * y[lo:hi] - 1.0
        scores = np.ndarray((p, 2), dtype=np.float64, buffer=shms["scores"].buf)
        scores[rank] = (np.logaddexp(0.0, -sign * z).sum(), np.sum((z > 0) == (y[lo:hi] > 0.5)))
        if rank == 0:
            np.ndarray((k,), dtype=np.float64, buffer=shms["theta"].buf)[:] = theta
    except BaseException as exc:  # report and release the others instead of hanging at the barrier
        errors.put(f"worker {rank}: {type(exc).__name__}: {exc}")
        barrier.abort()
        raise
    finally:
        for shm in shms.values():
            shm.close()


def train(args: argparse.Namespace) -> dict:
    n, f, h, p = args.samples, args.features, args.hidden, args.workers
    k = n_params(f, h)
    sizes = {"x": n * f * 8, "y": n * 8, "grads": p * k * 8, "counts": p * 8, "theta": k * 8, "scores": p * 2 * 8}
    shms = {key: shared_memory.SharedMemory(create=True, size=max(size, 8)) for key, size in sizes.items()}
    try:
        x = np.ndarray((n, f), dtype=np.float64, buffer=shms["x"].buf)
        y = np.ndarray((n,), dtype=np.float64, buffer=shms["y"].buf)
        make_data(n, f, args.seed, x, y)
        theta0 = init_params(f, h, np.random.default_rng((args.seed, 1)))
        np.ndarray((k,), dtype=np.float64, buffer=shms["theta"].buf)[:] = theta0

        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        barrier = ctx.Barrier(p)
        errors = ctx.Queue()
        cfg = {
            "samples": n,
            "features": f,
            "hidden": h,
            "workers": p,
            "batch_size": args.batch_size,
            "epochs": args.epochs,
            "lr": args.lr,
            "seed": args.seed,
        }
        names = {key: shm.name for key, shm in shms.items()}
        procs = [ctx.Process(target=worker, args=(r, cfg, names, barrier, errors)) for r in range(p)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
        failed = [proc.exitcode for proc in procs if proc.exitcode != 0]
        if failed:
            messages = []
            while not errors.empty():
                messages.append(errors.get())
            raise RuntimeError("; ".join(messages) or f"worker exit codes {failed}")
        scores = np.ndarray((p, 2), dtype=np.float64, buffer=shms["scores"].buf)
        final_loss, accuracy = scores[:, 0].sum() / n, scores[:, 1].sum() / n
        return {
            "final_loss": float(final_loss),
            "accuracy": float(accuracy),
            "iterations": args.epochs * math.ceil(n / (p * args.batch_size)),
        }
    finally:
        for shm in shms.values():
            shm.close()
            shm.unlink()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    try:
        result = train(args)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - start
    print(
        f"workers={args.workers} batch_size={args.batch_size} samples={args.samples} epochs={args.epochs} "
        f"iterations={result['iterations']} "
        f"final_loss={result['final_loss']:.6f} train_accuracy={result['accuracy']:.3f} "
        f"seconds={elapsed:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

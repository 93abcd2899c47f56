"""Compute the language means of the multilingual embedding model (memwrap/engine/embed_e5.py explains them).

    .venv/bin/python -m bench.multilingual.calibrate      # writes memwrap/engine/data/e5_language_means.npz

Input: the calibration users of MemoryBank (bench/multilingual/memorybank.py), every turn embedded as a passage and
as a query by the uncentred model. Each script's mean is the mean over the turns weighted by their share of letters
in that script, so Chinese turns make the Han mean and English turns the Latin one.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bench.multilingual.memorybank import calibration_turns
from memwrap.engine.embed_e5 import LANGUAGE_MEANS_FILE, SCRIPTS, E5Encoder, script_weights


def compute_means(texts: list[str], encoder: E5Encoder) -> dict[str, np.ndarray]:
    weights = script_weights(texts)  # (n, scripts)
    out: dict[str, np.ndarray] = {}
    for side in ("passage", "query"):
        vectors = encoder.encode(texts, 64, prefix=side)
        totals = weights.sum(axis=0)
        if (totals < 1.0).any():
            raise SystemExit(f"no calibration text in scripts {[s for s, t in zip(SCRIPTS, totals) if t < 1.0]}")
        out[side] = ((weights.T @ vectors) / totals[:, None]).astype(np.float32)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.multilingual.calibrate", description=__doc__)
    parser.add_argument("--out", type=Path, default=LANGUAGE_MEANS_FILE)
    args = parser.parse_args(argv)
    texts = [t.text for t in calibration_turns()]
    means = compute_means(texts, E5Encoder(centred=False))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, scripts=np.array(SCRIPTS), **means)
    print(f"{len(texts)} calibration turns -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

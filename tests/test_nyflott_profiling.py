"""The profiling testbed's tables and figures (ipclab.studies.nyflott.profiling) from a
class histogram as jcmd prints it and from folded stacks; and one profile of the
Californium adapters where a JDK is installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from ipclab.studies.nyflott import profiling

HISTOGRAM = """12345:
 num     #instances         #bytes  class name (module)
-------------------------------------------------------
   1:         20000        7200000  [B (java.base@17.0.15)
   2:          4000         400000  [C (java.base@17.0.15)
   3:          8000         192000  java.lang.String (java.base@17.0.15)
   4:           100           8000  org.eclipse.californium.core.network.Exchange
Total         32100        7800000
"""


def test_the_class_histogram_as_the_thesis_printed_it() -> None:
    t = profiling.histogram_table(HISTOGRAM)
    assert list(t["class"]) == ["[B", "[C", "java.lang.String",
                                "org.eclipse.californium.core.network.Exchange"]  # fmt: skip
    assert t.loc[0, "bytes_pct"] == pytest.approx(100 * 7200000 / 7800000)
    assert t["instances"].sum() == 32100


def test_a_flame_graph_from_folded_stacks() -> None:
    folded = pd.DataFrame({
        "stack": ["a.Main.run;b.Matcher.sendResponse;java.lang.StringBuilder.append",
                  "a.Main.run;b.Matcher.sendResponse", "a.Main.run;c.Other.work"],
        "samples": [60, 20, 20],
    })  # fmt: skip
    fig = profiling.flame_figure(folded)
    widths = sorted(round(p.get_width(), 2) for p in fig.axes[0].patches)
    assert widths == [0.2, 0.6, 0.8, 1.0]  # other.work, append, sendResponse, run
    assert "100 samples" in fig.axes[0].get_title()


@pytest.mark.skipif(shutil.which("jcmd") is None or shutil.which("jfr") is None,
                    reason="the JDK's jcmd and jfr are not installed")  # fmt: skip
def test_one_profile_of_the_californium_adapters(tmp_path: Path) -> None:
    from ipclab import javabuild

    if why := javabuild.toolchain_missing():
        pytest.skip(why)
    out = profiling.run_profile(profiling.ProfilePlan(duration_s=8, warmup_s=2), tmp_path / "p")
    flame = pd.read_csv(out / "flame.csv")
    assert flame["samples"].sum() > 0
    assert any("californium" in s for s in flame["stack"])
    heap = pd.read_csv(out / "heap.csv")
    assert (heap["used_bytes"] <= heap["committed_bytes"]).all() and len(heap)
    hist = pd.read_csv(out / "histogram.csv")
    assert len(hist) and hist["bytes_pct"].max() <= 100
    assert "/tmp/" not in (out / "load" / "manifest.json").read_text()  # committed as is

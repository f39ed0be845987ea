"""The thesis's figures rebuilt from measurements (its charts survive only as captions, so
what is drawn beside them is the one number it prints: the 43320KB Protobuf blob).

``all_figures(analysis)`` returns ``name -> (figure, caption)``:

* Fig. 27: response time, GET of 5 elements uncompressed, cache off and on, per format;
  drawn for each runtime (the Python services, and the JVM's where its procedure ran);
* Fig. 28: request processing over the request index, nested POST with gzip, no cache;
  for each runtime, as Fig. 27;
* Figs. 29-31: body bytes per structure and count, raw and gzip, with the reduction;
* Figs. 32-35: the data service's memory over time for flat 100,000 and 300,000, the
  limit and any OOM kill marked;
* Figs. 43-47: header and body bytes of the answer, stacked, per cell and format;
* the JVM's heap (Figs. 32-35 on the JVM, JConsole's view as its GC log gives it): the data
  service's committed and used heap at every collection beside the container's memory, for
  flat 100,000 and 300,000 under the thesis's heap policy.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ipclab.stats import t_interval
from ipclab.studies.buono import heap
from ipclab.studies.buono.stacks import ENCODERS, THESIS_HEAP

JVM = ENCODERS["jvm"][0]  # the JVM's JSON encoder (Jackson): its runs' rows
COLORS = {"json": "#d95f02", "protobuf": "#1b9e77"}
BLOB_KB = 43320  # the thesis's Protobuf blob at flat 300,000 (§6.1)
#: what a figure's caption says of its runtime, by the runtime's JSON encoder
_ON = {
    "orjson": " (Python services: uvicorn, orjson, protobuf on upb)",
    "jackson": " on the JVM (Quarkus in JVM mode, Jackson, protobuf-java)",
}
#: the same, by runtime, for the figures drawn per runtime from sizes and memory
RUNTIME_NAMES = {
    "python": "Python services (uvicorn, orjson, protobuf on upb)",
    "jvm": f"on the JVM (Quarkus in JVM mode, Jackson, protobuf-java; heap {THESIS_HEAP})",
}


def _bars_with_ci(ax: Any, x: float, values: np.ndarray, color: str, label: str | None,
                  hatch: str = "") -> None:  # fmt: skip
    ci = t_interval(values)
    err = None
    if np.isfinite(ci.low):
        err = [[ci.estimate - ci.low], [ci.high - ci.estimate]]
    ax.bar(x, ci.estimate, 0.38, color=color, label=label, hatch=hatch, edgecolor="black",
           linewidth=0.5, yerr=err, capsize=3)  # fmt: skip


def fig27(cells: pd.DataFrame, encoder: str = "orjson") -> tuple[Figure, str] | None:
    """Fig. 27 on the runtime whose JSON encoder is ``encoder`` (orjson: Python)."""
    sel = cells[(cells["method"] == "GET") & (cells["count"] == 5) & ~cells["gzip"]
                & (cells["json_library"] == encoder)]  # fmt: skip
    if sel.empty:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, structure in zip(axes, ("flat", "nested"), strict=True):
        for i, cache in enumerate((False, True)):
            for j, fmt in enumerate(("json", "protobuf")):
                v = sel[(sel["structure"] == structure) & (sel["cache"] == cache)
                        & (sel["fmt"] == fmt)]["response_ms"].to_numpy(float)  # fmt: skip
                if len(v):
                    _bars_with_ci(ax, i + (j - 0.5) * 0.4, v, COLORS[fmt],
                                  fmt if (i == 0 and structure == "flat") else None)  # fmt: skip
        ax.set_xticks([0, 1], ["no cache", "cache"])
        ax.set_title(f"{structure}, GET 5, uncompressed")
    axes[0].set_ylabel("response time (ms), mean over runs")
    axes[0].legend(frameon=False)
    fig.tight_layout()
    caption = (
        f"Fig. 27 rebuilt{_ON[encoder]}: client response time of GET with 5 elements, "
        f"uncompressed, cache off and on, JSON ({encoder}) against Protobuf; bars are the "
        "mean over runs of each run's mean, whiskers the 95 % t interval. The thesis: "
        "Protobuf under 2 ms (8.13 %) faster without the cache, both the same and faster "
        "with it."
    )
    return fig, caption


def fig28(requests: pd.DataFrame, encoder: str = "orjson") -> tuple[Figure, str] | None:
    """Fig. 28 on the runtime whose JSON encoder is ``encoder`` (orjson: Python)."""
    sel = requests[(requests["structure"] == "nested") & (requests["method"] == "POST")
                   & requests["gzip"] & ~requests["cache"]
                   & (requests["json_library"] == encoder)]  # fmt: skip
    if sel.empty:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    styles = {5: ":", 325: "--", 650: "-"}
    for (count, fmt), g in sel.groupby(["count", "fmt"]):
        med = g.groupby("seq")["server_ms"].median()
        axes[0].plot(med.index, med.to_numpy(), styles.get(int(count), "-"), color=COLORS[fmt],
                     label=f"{fmt} {count}", linewidth=1)  # fmt: skip
    axes[0].set_yscale("log")
    axes[0].set_xlabel("request of the cell's sequence")
    axes[0].set_ylabel("gunzip + deserialisation (ms), median over runs")
    axes[0].legend(frameon=False, fontsize=7, ncol=2)
    counts = sorted(sel["count"].unique())
    per_run = sel.groupby(["run", "count", "fmt"])["server_ms"].mean().reset_index()
    for i, count in enumerate(counts):
        for j, fmt in enumerate(("json", "protobuf")):
            v = per_run[(per_run["count"] == count) & (per_run["fmt"] == fmt)]["server_ms"]
            if len(v):
                _bars_with_ci(axes[1], i + (j - 0.5) * 0.4, v.to_numpy(float), COLORS[fmt],
                              fmt if i == 0 else None)  # fmt: skip
    axes[1].set_xticks(range(len(counts)), [str(c) for c in counts])
    axes[1].set_xlabel("payments per request")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("mean over runs (ms)")
    axes[1].legend(frameon=False)
    fig.tight_layout()
    caption = (
        f"Fig. 28 rebuilt{_ON[encoder]}: request processing of a nested POST with gzip, no "
        "cache: the data service's gunzip + deserialisation time (Server-Timing) over the "
        "100 requests of a cell (left, median over runs) and its mean per count (right, "
        "95 % t interval). The thesis: Protobuf 25.1 % (164.3 ms) faster at its best case."
    )
    return fig, caption


def fig29_31(sizes: pd.DataFrame, runtime: str = "python") -> tuple[Figure, str] | None:
    if sizes.empty:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, structure in zip(axes, ("flat", "nested"), strict=True):
        s = sizes[sizes["structure"] == structure].sort_values(["count", "gzip"])
        labels = []
        for i, (_, r) in enumerate(s.iterrows()):
            for j, fmt in enumerate(("json", "protobuf")):
                v = r[f"{fmt}_bytes"]
                if np.isfinite(v):
                    ax.bar(i + (j - 0.5) * 0.4, v, 0.38, color=COLORS[fmt],
                           hatch="//" if r["gzip"] else "", edgecolor="black", linewidth=0.5,
                           label=fmt if i == 0 else None)  # fmt: skip
                elif fmt == "json":
                    ax.text(i - 0.2, 1, "not\ncompleted", fontsize=6, ha="center", va="bottom",
                            rotation=90)  # fmt: skip
            if np.isfinite(r["reduction_pct"]):
                top = np.nanmax([r["json_bytes"], r["protobuf_bytes"]])
                ax.text(i, top * 1.3, f"{r['reduction_pct']:.1f}%", ha="center", fontsize=7)
            labels.append(f"{r['count']:,}\n{'gzip' if r['gzip'] else 'raw'}")
        if structure == "flat" and (s["count"] == 300_000).any():
            i = list(s["count"]).index(300_000)
            ax.plot([i + 0.2], [BLOB_KB * 1024], "k*", markersize=9,
                    label="thesis: 43320KB Protobuf blob")  # fmt: skip
        ax.set_xticks(range(len(labels)), labels, fontsize=7)
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * 4)  # room for the percentages
        ax.set_title(f"{structure}: body bytes as sent, (J - P) / J above")
        ax.legend(frameon=False, fontsize=7)
    axes[0].set_ylabel("bytes")
    fig.tight_layout()
    caption = (
        f"Figs. 29-31 rebuilt, {RUNTIME_NAMES[runtime]}: the answer's body as sent (GET), JSON "
        "against Protobuf, raw and "
        "gzip (hatched), per structure and count; above each pair the reduction (J - P) / J. "
        "The thesis: 25.80 % (flat, worst) to 72.28 % (nested, best), 58.2 % for flat 5 with "
        "gzip, and a 43320KB Protobuf blob at flat 300,000 (the star)."
    )
    return fig, caption


def fig32_35(mem: pd.DataFrame, runtime: str = "python") -> tuple[Figure, str] | None:
    mem = mem[~mem["traced"]] if "traced" in mem.columns else mem
    if mem.empty:
        return None
    counts = sorted(mem["count"].unique())
    limits = mem["limit_mb"].dropna()  # docker's mem_limit "<n>m": n MiB, as the y axis
    limit = float(limits.iloc[0]) if len(limits) else None
    fig, axes = plt.subplots(1, len(counts), figsize=(5.5 * len(counts), 3.8), squeeze=False)
    for ax, count in zip(axes[0], counts, strict=True):
        for (fmt, lib), rows in mem[mem["count"] == count].groupby(["fmt", "json_library"]):
            r = rows.sort_values("repetition").iloc[0]
            name = f"{fmt} ({lib})" if fmt == "json" else fmt
            style = "--" if fmt == "json" and lib == "json" else "-"
            m = pd.read_csv(f"{r['path']}/memory.csv")
            if m.empty:
                continue
            t = m["t"] - m["t"].iloc[0]
            col = "usage_bytes" if m["usage_bytes"].notna().any() else "rss_bytes"
            ax.plot(t, m[col] / 2**20, style, color=COLORS[fmt],
                    label=f"{name}, {col.split('_')[0]}")  # fmt: skip
            if r["oom_killed"]:
                ax.plot(t.iloc[-1], m[col].dropna().iloc[-1] / 2**20, "rx", markersize=10,
                        label=f"{name} OOM-killed")  # fmt: skip
            elif not r["completed"]:
                ax.plot(t.iloc[-1], m[col].dropna().iloc[-1] / 2**20, "ko", label=f"{name} failed")
        if limit is not None:
            ax.axhline(limit, color="grey", linestyle="--", linewidth=1,
                       label=f"limit: {limit:.0f} MiB (mem_limit {limit:.0f}m)")  # fmt: skip
        ax.set_title(f"flat GET {count:,}: the data service")
        ax.set_xlabel("s since the first sample")
        ax.legend(frameon=False, fontsize=7)
    axes[0][0].set_ylabel("memory (MiB)")
    fig.tight_layout()
    caption = (
        f"Figs. 32-35 rebuilt, {RUNTIME_NAMES[runtime]}: the data service's memory (the "
        "cgroup's usage, which the limit "
        "counts, in a container; resident memory on local processes) sampled at 20 Hz while "
        "it builds and serialises flat 100,000 and 300,000 users, the first repetition of "
        "each format. The thesis: both complete at 100,000; at 300,000 JSON was killed by "
        "the 400 MB limit and Protobuf completed."
    )
    if limit is not None:
        caption += (
            f" The dashed line is the container's limit, docker's mem_limit {limit:.0f}m ="
            f" {limit:.0f} MiB (the thesis's 400 MB as set here)."
        )
    return fig, caption


def fig43_47(sizes: pd.DataFrame, runtime: str = "python") -> tuple[Figure, str] | None:
    wanted = [("flat", 100_000), ("flat", 300_000), ("nested", 5), ("nested", 325), ("nested", 650)]
    s = sizes[~sizes["gzip"]].set_index(["structure", "count"])
    present = [w for w in wanted if w in s.index]
    if not present:
        return None
    fig, axes = plt.subplots(1, len(present), figsize=(2.3 * len(present), 3.6), squeeze=False)
    for ax, key in zip(axes[0], present, strict=True):
        r = s.loc[key]
        top = 0.0
        for j, fmt in enumerate(("json", "protobuf")):
            body, head = r[f"{fmt}_bytes"] / 1024, r[f"{fmt}_header_bytes"]
            if np.isfinite(body):
                hk = head / 1024 if np.isfinite(head) else 0.0
                ax.bar(j, body, 0.6, color=COLORS[fmt], edgecolor="black", linewidth=0.5)
                ax.bar(j, hk, 0.6, bottom=body, color="black")
                ax.text(j, body + hk, f"{body:,.1f} KiB\n+{head:.0f} B", ha="center",
                        va="bottom", fontsize=6)  # fmt: skip
                top = max(top, body + hk)
            else:
                ax.text(j, 0, "not\ncompleted", ha="center", va="bottom", fontsize=7)
        ax.set_ylim(0, top * 1.3 if top else 1)
        ax.set_xticks([0, 1], ["JSON", "Protobuf"], fontsize=8)
        ax.set_title(f"{key[0]} {key[1]:,}", fontsize=9)
    axes[0][0].set_ylabel("KiB (body; header stacked in black)")
    fig.tight_layout()
    caption = (
        f"Figs. 43-47 rebuilt, {RUNTIME_NAMES[runtime]}: the answer's header and body bytes "
        "(GET, raw) per cell; headers "
        "are a few hundred bytes, bodies dominate at every count shown."
    )
    return fig, caption


def _heap_panel(ax: Any, r: pd.Series) -> None:
    """One JVM memory run: the container's usage (memory.csv) and the data service's
    committed and used heap at each collection (heap.csv), on the same clock."""
    m, h = pd.read_csv(f"{r['path']}/memory.csv"), heap.read(r["path"])
    h = h[h["role"] == "data"]
    if m.empty:
        return
    t0, color = m["t"].iloc[0], COLORS[r["fmt"]]
    h = h[h["t"] >= t0]  # the JVM's start-up collections came before the sampling
    ax.plot(m["t"] - t0, m["usage_bytes"] / 2**20, color=color, linewidth=1,
            label=f"{r['fmt']}: container usage")  # fmt: skip
    if len(h):
        ht = h["t"] - t0
        ax.step(ht, h["committed_after_bytes"] / 2**20, where="post", color=color,
                linestyle="--", linewidth=1, label=f"{r['fmt']}: heap committed")  # fmt: skip
        ax.plot(ht, h["used_before_bytes"] / 2**20, ".", color=color, markersize=3,
                label=f"{r['fmt']}: heap used, before each collection")  # fmt: skip
    if r["oom_killed"]:  # at its peak: the samples after the kill see the memory freed
        end = m.loc[m["usage_bytes"].idxmax()]
        ax.plot(end["t"] - t0, end["usage_bytes"] / 2**20, "rx", markersize=10,
                label=f"{r['fmt']}: killed for memory")  # fmt: skip


def jvm_heap(mem: pd.DataFrame) -> tuple[Figure, str] | None:
    """The JVM's memory runs under the thesis's heap policy that read their heap, the first
    repetition of each format per count."""
    if mem.empty or "runtime" not in mem.columns:
        return None
    sel = mem[(mem["runtime"] == "jvm") & (mem["heap"] == THESIS_HEAP)]
    sel = sel[sel["heap_committed_mb"].notna()] if "heap_committed_mb" in sel else sel.iloc[:0]
    if sel.empty:
        return None
    counts = sorted(sel["count"].unique())
    fig, axes = plt.subplots(1, len(counts), figsize=(5.5 * len(counts), 3.8), squeeze=False)
    for ax, count in zip(axes[0], counts, strict=True):
        for _, rows in sel[sel["count"] == count].groupby("fmt"):
            _heap_panel(ax, rows.sort_values("repetition").iloc[0])
        limit = sel["limit_mb"].dropna()
        if len(limit):
            ax.axhline(float(limit.iloc[0]), color="grey", linestyle=":", linewidth=1,
                       label=f"limit: {float(limit.iloc[0]):.0f} MiB")  # fmt: skip
        ax.set_title(f"flat GET {count:,} on the JVM: the data service")
        ax.set_xlabel("s since the first sample")
        ax.legend(frameon=False, fontsize=6)
    axes[0][0].set_ylabel("MiB")
    fig.tight_layout()
    caption = (
        "Figs. 32-35 on the JVM (Quarkus, Jackson, protobuf-java; the heap's maximum at the "
        "container's limit, the thesis's policy): the container's memory at 20 Hz and the "
        "data service's heap as its JVM's GC log gives it, committed (what the JVM took for "
        "its heap: B16c) and used before each collection, the first repetition of each "
        "format. The thesis read its heap with JConsole."
    )
    return fig, caption


def _jvm_judged(mem: pd.DataFrame) -> pd.DataFrame:
    """The JVM's memory runs with the heap its claims are judged on (empty without any)."""
    if mem.empty or "runtime" not in mem.columns:
        return mem.iloc[0:0]
    sel = mem[mem["runtime"] == "jvm"]
    return sel[sel["heap"] == THESIS_HEAP] if "heap" in sel.columns else sel


def _python(df: pd.DataFrame) -> pd.DataFrame:
    """The Python services' rows (the thesis's figures are drawn for the primary set-up;
    the JVM's runs are in the tables, beside them)."""
    return df[df["runtime"] == "python"] if "runtime" in df.columns else df


def all_figures(a: Any) -> dict[str, tuple[Figure, str]]:
    cells, requests, mem = _python(a.cells), _python(a.requests), _python(a.memory)
    jvm_sizes = getattr(a, "sizes_jvm", pd.DataFrame())
    jvm_mem = _jvm_judged(a.memory)
    made = {
        "buono_fig27_cache": fig27(cells) if len(cells) else None,
        "buono_fig27_cache_jvm": fig27(a.cells, JVM) if len(a.cells) else None,
        "buono_fig28_processing": fig28(requests) if len(requests) else None,
        "buono_fig28_processing_jvm": fig28(a.requests, JVM) if len(a.requests) else None,
        "buono_fig29_31_sizes": fig29_31(a.sizes),
        "buono_fig29_31_sizes_jvm": fig29_31(jvm_sizes, "jvm") if len(jvm_sizes) else None,
        "buono_fig32_35_memory": fig32_35(mem),
        "buono_fig32_35_memory_jvm": fig32_35(jvm_mem, "jvm") if len(jvm_mem) else None,
        "buono_fig43_47_headers": fig43_47(a.sizes) if len(a.sizes) else None,
        "buono_fig43_47_headers_jvm": fig43_47(jvm_sizes, "jvm") if len(jvm_sizes) else None,
        "buono_jvm_heap": jvm_heap(a.memory),
    }
    return {k: v for k, v in made.items() if v is not None}

"""Derive symcost's kernel calibration (``symcost/hardware/kernels/*.json``) from aiconfigurator's
measured kernel databases — a one-off tool, not part of the package (it needs ``pyarrow``).

Source: github.com/ai-dynamo/aiconfigurator (Apache-2.0), ``aic-core/src/aiconfigurator_core/systems/
data/<system>/<op>/<framework>/<version>/*.parquet``: per-kernel latencies (ms) measured on each card
(TensorRT-LLM's database first — its GEMMs, fused MoE, context/generation attention and MLA kernels —
then vLLM's and SGLang's where it has none; vLLM's custom all-reduce; NCCL 2.27 collectives).

For every GPU × operation class × dtype × regime (and, for the fused MoE, × engine: ``ENGINES``) the three
numbers of ``symcost.hardware.calibration`` are fitted to the rows of that regime, all shapes together
(never one model's shapes):

    t = max(F / (P_dtype · η_c), Q / (BW · η_m)) + t_0

F and Q are counted from each row's shape the way symcost's latency model counts them (see the
``_gemm``/``_moe``/... functions); P and BW are symcost's catalogue figures (``symcost gpus``), so η is
the share of *symcost's* peak. The fit minimises the mean squared log error over a grid of η_c, η_m in
(0, 1] and t_0 in [0, 200] µs. Each JSON row records the rows it was fitted on, its median and 90th-
percentile relative error over them, and the file it came from.

    PYTHONPATH=/path/to/pyarrow python benchmarks/derive_calibration.py /path/to/aiconfigurator
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from symcost.hardware.gpus import gpu as find_gpu  # noqa: E402

SYSTEMS = {"A100-80GB": "a100_sxm", "H100": "h100_sxm", "H200": "h200_sxm", "B200": "b200_sxm",
           "B300": "b300_sxm", "GB200": "gb200", "L40S": "l40s"}
BASE = "aic-core/src/aiconfigurator_core/systems/data"
REPO_URL = "github.com/ai-dynamo/aiconfigurator"
M_REGIMES = ((1, 16), (17, 64), (65, 256), (257, 1024), (1025, 4096), (4097, None))
E_REGIMES = ((0, 1), (2, 8), (9, 64), (65, None))  # rows per expert
T_REGIMES = ((1, 2048), (2049, 16384), (16385, None))  # prefill attention tokens
B_REGIMES = ((0, 65536), (65537, 1 << 20), ((1 << 20) + 1, 16 << 20), ((16 << 20) + 1, None))
#: weight bytes per parameter by the databases' dtype names (block scales counted: 1/128² FP8 blocks are
#: negligible; MXFP4 one e8m0 byte per 32, NVFP4 one fp8 byte per 16)
B_W = {"bfloat16": 2, "fp8": 1, "fp8_block": 1, "nvfp4": 0.5 + 1 / 16, "w4a16_mxfp4": 0.5 + 1 / 32,
       "int4_wo": 0.5 + 2 / 128, "w4a8_mxfp4_mxfp8": 0.5 + 1 / 32}
#: the tensor-core dtype each runs at, and symcost's dtype label for the row
COMPUTE = {"bfloat16": ("bf16", "bf16"), "fp8": ("fp8", "fp8"), "fp8_block": ("fp8", "fp8_block"),
           "nvfp4": ("fp4", "nvfp4"), "w4a16_mxfp4": ("bf16", "w4a16"), "int4_wo": ("bf16", "w4a16_int4"),
           "w4a8_mxfp4_mxfp8": ("fp8", "w4a8")}


def git_files(repo: Path, pattern: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD", BASE],
                         capture_output=True, text=True, check=True).stdout.split()
    return [f for f in out if pattern in f]


def latest(repo: Path, system: str, op: str, framework: str, name: str) -> str | None:
    files = [f for f in git_files(repo, f"/{system}/{op}/{framework}/") if f.endswith(f"/{name}.parquet")]
    if not files:
        return None

    def version(f):
        v = f.split("/")[-2]
        return tuple(int(x) if x.isdigit() else 0 for x in v.replace("rc", ".").replace("post", ".").split("."))
    return max(files, key=version)


#: the databases tried in turn: TensorRT-LLM's first (aiconfigurator's reference database), then vLLM's
#: and SGLang's. vLLM 0.24's DeepGEMM block-FP8 rows on B200 sit at ~175 us for every small shape (an
#: artefact of that collection, 10x TensorRT-LLM's and SGLang's DeepGEMM on the same shapes).
FRAMEWORKS = ("trtllm", "vllm", "sglang")
#: engines whose kernel rows are their own (``engine``), for the fused MoE and the GEMMs: each serving engine
#: runs its own kernels (fused MoE: vLLM's Triton / FlashInfer / CUTLASS paths, SGLang's, TensorRT-LLM's,
#: which differ by up to 2x on the same shape -- B200, DeepSeek-V3's experts at TP 8, 16 tokens, block FP8:
#: TensorRT-LLM 1.3.0rc20 220 us, SGLang 0.5.14 102 us; NVFP4 GEMMs: SGLang's FlashInfer CuTe-DSL kernel 5.6-5.9
#: us at 7168x2048 and M 1-16 on B200, vLLM's 8.9-9.2, TensorRT-LLM's 10.0); the engine-less rows (FRAMEWORKS
#: order, TensorRT-LLM's first) serve TensorRT-LLM and any other engine. Attention keeps one row set
#: (FlashInfer / FlashAttention / TensorRT-LLM's FMHA; the engines' attention collections moved the measured
#: set's TPOT median ratio 1.26 -> 1.27, worst 2.2 -> 2.5)
ENGINES = ("vllm", "sglang")
#: GEMM dtypes whose engine rows are not read (``SAME_GEMM``): block FP8, where every engine calls DeepGEMM (or
#: CUTLASS's block-scaled GEMM) as TensorRT-LLM does and the engines' collections time the same kernel at 2-33x
#: TensorRT-LLM's on the same shapes -- 7168x2048 at M 1-16: vLLM 0.24 57-59 us on H200 and 176-263 us on B200,
#: SGLang 0.5.14 17.8-17.9 us on B200, TensorRT-LLM 7.4-7.9 us on B200 -- the collection harness's overhead (a
#: decode step does not pay it: vLLM's DeepSeek-R1 decode on H200 runs ~500 such GEMMs in a ~17 ms step),
#: not the kernel's
SAME_GEMM = ("fp8_block",)


def first(repo: Path, system: str, op: str, name: str) -> str | None:
    for fw in FRAMEWORKS:
        path = latest(repo, system, op, fw, name)
        if path:
            return path
    return None


def by_dtype(repo: Path, system: str, op: str, name: str, key: str, frameworks=FRAMEWORKS) -> dict:
    """{dtype: (path, rows)}: per dtype the rows of the first framework (``frameworks`` order) and, within
    it, the latest version that measured that dtype (a later partial re-collection may hold one dtype only)."""
    def version(f):
        v = f.split("/")[-2]
        return tuple(int(x) if x.isdigit() else 0 for x in v.replace("rc", ".").replace("post", ".").split("."))
    out = {}
    for fw in frameworks:
        files = sorted((f for f in git_files(repo, f"/{system}/{op}/{fw}/") if f.endswith(f"/{name}.parquet")),
                       key=version, reverse=True)
        for f in files:
            rows = table(repo, f)
            for dt in {r[key] for r in rows}:
                if dt not in out:
                    out[dt] = (f, [r for r in rows if r[key] == dt])
    return out


@cache
def table(repo: Path, path: str) -> list[dict]:
    import pyarrow.parquet as pq
    blob = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, check=True).stdout
    return pq.read_table(io.BytesIO(blob)).to_pylist()


GRID = np.concatenate([np.linspace(0.02, 0.2, 10), np.linspace(0.22, 1.0, 40)])
FLOORS = np.concatenate([np.linspace(0, 20, 11), np.linspace(24, 60, 10), np.linspace(70, 200, 14)]) * 1e-6


def fit(F, Q, t, P, BW):
    """(η_c, η_m, t_0, median and p90 relative error) minimising the mean squared log error."""
    F, Q, t = (np.asarray(x, dtype=float) for x in (F, Q, t))
    if len(t) > 800:
        idx = np.random.default_rng(0).choice(len(t), 800, replace=False)
        F, Q, t = F[idx], Q[idx], t[idx]
    a, b, lt = F / P, Q / BW, np.log(t)
    best = None
    for t0 in FLOORS:
        comp = a[None, :] / GRID[:, None]  # ηc × rows
        mem = b[None, :] / GRID[:, None]
        # (ηc, ηm, rows)
        pred = np.maximum(comp[:, None, :], mem[None, :, :]) + t0
        loss = ((np.log(pred) - lt) ** 2).mean(axis=2)
        i, j = np.unravel_index(np.argmin(loss), loss.shape)
        if best is None or loss[i, j] < best[0]:
            best = (loss[i, j], GRID[i], GRID[j], t0)
    _, ec, em, t0 = best
    rel = np.abs(np.maximum(a / ec, b / em) + t0 - t) / t
    return float(ec), float(em), float(t0), float(np.median(rel)), float(np.percentile(rel, 90)), len(t)


def in_regime(v, lo, hi):
    return (lo is None or v >= lo) and (hi is None or v <= hi)


def row(gpu, dtype, ec, em, t0, med, p90, n, src, regime=None, variant=None, about="", engine=None):
    r = {"gpu": gpu, "dtype": dtype}
    if engine:
        r["engine"] = engine
    if variant:
        r["variant"] = variant
    if regime:
        r.update(regime)
    r.update({"eta_compute": round(ec, 3), "eta_memory": round(em, 3), "floor_us": round(t0 * 1e6, 2),
              "fit": {"rows": n, "median_rel_err": round(med, 3), "p90_rel_err": round(p90, 3)},
              "source": f"{REPO_URL} {src} @ {COMMIT[:10]} (Apache-2.0){'; ' + about if about else ''}"})
    return r


def gemms(repo, name, sysname, g, engine=None):
    found = by_dtype(repo, sysname, "gemm", "gemm_perf", "gemm_dtype", (engine,) if engine else FRAMEWORKS)
    out = {"gemm": [], "quant_gemm": []}
    for dt in sorted(found):
        if dt not in COMPUTE or (engine and dt in SAME_GEMM):
            continue
        path, rows = found[dt]
        rows = [r for r in rows if r["n"] >= 512 and r["k"] >= 512]
        cdt, label = COMPUTE[dt]
        P = g.peak(cdt)[0]
        cls = "gemm" if dt in ("bfloat16", "fp8") else "quant_gemm"
        for lo, hi in M_REGIMES:
            sel = [r for r in rows if r["gemm_dtype"] == dt and in_regime(r["m"], lo, hi)]
            if len(sel) < 20:
                continue
            m, n, k = (np.array([r[x] for r in sel], float) for x in "mnk")
            F = 2 * m * n * k
            Q = n * k * B_W[dt] + 2 * (m * k + m * n)
            t = np.array([r["latency"] for r in sel]) * 1e-3
            reg = {"m_min": lo} | ({"m_max": hi} if hi else {})
            out[cls].append(row(name, label, *fit(F, Q, t, P, g.bandwidth_bytes_per_s), path, reg, engine=engine,
                                about=f"{sel[0]['kernel_source']} et al.; F=2mnk, Q=nk*b_w+2(mk+mn), n,k>=512"))
    return out


#: the token-to-expert routing the MoE rows are taken at: aiconfigurator's own default for its estimates
#: (aic-core/src/aiconfigurator_core/sdk/config.py ``workload_distribution = "power_law"``, α = 1.01 in
#: sdk/models/deepseek.py et al. ``_power_law_alpha``): a trained router is skewed, so a decode batch touches
#: fewer experts than uniform routing would and the kernel reads fewer weights. The fit keeps symcost's
#: uniform touched-expert count in Q, so η_m carries the skew (a measured share, not a fitted constant).
ROUTING = "power_law_1.01"
ROUTING_NOTE = (" (aiconfigurator's default MoE workload distribution for its estimates: sdk/config.py "
                "workload_distribution='power_law', sdk/models/deepseek.py _power_law_alpha=1.01)")


def moes(repo, name, sysname, g, engine=None):
    found = by_dtype(repo, sysname, "moe", "moe_perf", "moe_dtype", (engine,) if engine else FRAMEWORKS)
    out = []
    for dt in sorted(found):
        if dt not in COMPUTE:
            continue
        path, rows = found[dt]
        routing = ROUTING
        sel_rows = [r for r in rows if r["distribution"] == ROUTING]
        if len(sel_rows) < 20:  # a table without the skewed rows: the balanced ones, stated in the row
            routing, sel_rows = "balanced", [r for r in rows if r["distribution"] in ("balanced", "uniform")]
        rows = sel_rows
        cdt, label = COMPUTE[dt]
        P = g.peak(cdt)[0]
        for lo, hi in E_REGIMES:
            sel = [r for r in rows if r["moe_dtype"] == dt
                   and in_regime(-(-r["num_tokens"] * r["topk"] // r["num_experts"]), lo, hi)]
            if len(sel) < 20:
                continue
            tok, h, inter, k, E, tp, ep = (np.array([r[x] for r in sel], float) for x in (
                "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"))
            F = 2 * tok * k * 3 * h * inter / (tp * ep)
            touched = (E / ep) * (1 - (1 - k / E) ** tok)
            Q = touched * 3 * h * inter / tp * B_W[dt] + 2 * tok * h * 2 + 2 * tok * k / ep * (2 * inter / tp + h)
            t = np.array([r["latency"] for r in sel]) * 1e-3
            reg = {"m_min": lo} | ({"m_max": hi} if hi else {})
            out.append(row(name, label, *fit(F, Q, t, P, g.bandwidth_bytes_per_s), path, reg, engine=engine,
                           about=(f"{routing} routing{ROUTING_NOTE if routing == ROUTING else ' (no ' + ROUTING + ' rows)'}; "
                                  "m = rows per expert ceil(tokens*k/E); F=6*tokens*k*d*d_moe/(tp*ep), "
                                  "Q=touched local experts' 3*d*d_moe/tp weights (uniform routing) + activations")))
    return out


def attention(repo, name, sysname, g):
    out = {"attn_prefill": [], "attn_decode": []}
    P, BW = g.peak("bf16")[0], g.bandwidth_bytes_per_s
    path = first(repo, sysname, "attention", "context_attention_perf")
    if path:
        rows = [r for r in table(repo, path) if r.get("window_size") in (0, -1, None) and r["kv_cache_dtype"] == "bfloat16"]
        for lo, hi in T_REGIMES:
            sel = [r for r in rows if in_regime(r["batch_size"] * r["isl"], lo, hi)]
            if len(sel) < 20:
                continue
            b, s, H, Hk, D = (np.array([r[x] for r in sel], float) for x in (
                "batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim"))
            F = 4 * D * H * b * s * (s + 1) / 2
            Q = 2 * b * s * D * (2 * H + 2 * Hk)
            t = np.array([r["latency"] for r in sel]) * 1e-3
            reg = {"m_min": lo} | ({"m_max": hi} if hi else {})
            out["attn_prefill"].append(row(name, "bf16", *fit(F, Q, t, P, BW), path, reg, about=(
                "causal prefill; m = batch*isl tokens; F=4*D*H*b*s(s+1)/2, Q=2*b*s*D*(2H+2H_kv)")))
    path = first(repo, sysname, "attention", "generation_attention_perf")
    if path:
        rows = [r for r in table(repo, path) if r.get("window_size") in (0, -1, None)]
        for kvd, label, bkv in (("bfloat16", "bf16", 2), ("fp8", "fp8", 1)):
            sel = [r for r in rows if r["kv_cache_dtype"] == kvd]
            if len(sel) < 20:
                continue
            b, s, H, Hk, D = (np.array([r[x] for r in sel], float) for x in (
                "batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim"))
            s = s + np.array([r["step"] for r in sel], float)  # the context: the prompt + the steps decoded
            F = 4 * b * H * D * s
            Q = b * s * 2 * Hk * D * bkv + 2 * 2 * b * H * D
            t = np.array([r["latency"] for r in sel]) * 1e-3
            out["attn_decode"].append(row(name, label, *fit(F, Q, t, P, BW), path, about=(
                f"decode attention, KV {kvd}; context s = isl + step; F=4*b*H*D*s, Q=b*s*2*H_kv*D*b_kv")))
    # MLA (DeepSeek-V3 dims: kv_lora 512, rope 64, nope 128, v 128): TensorRT-LLM's kernels
    for op, cls in (("generation_mla_perf", "attn_decode"), ("context_mla_perf", "attn_prefill")):
        path = latest(repo, sysname, "mla", "trtllm", op)
        if not path:
            continue
        rows = [r for r in table(repo, path) if r["kv_cache_dtype"] == "bfloat16" and r["mla_dtype"] == "bfloat16"]
        if len(rows) < 20:
            continue
        b, s, H = (np.array([r[x] for r in rows], float) for x in ("batch_size", "isl", "num_heads"))
        H = H / np.array([r["tp_size"] for r in rows], float)  # heads on the rank
        if cls == "attn_decode":
            s = s + np.array([r["step"] for r in rows], float)  # context = prompt + steps decoded
            F = 2 * b * H * s * (576 + 512)
            Q = b * s * 576 * 2
            about = "MLA absorbed decode (DeepSeek dims); F=2*b*H*s*(576+512), Q=b*s*576*2"
        else:
            F = b * H * s * (s + 1) / 2 * 2 * (192 + 128)
            Q = 2 * b * s * H * (192 * 2 + 128 * 2)
            about = "MLA expanded prefill (DeepSeek dims); F=2*(192+128)*H*b*s(s+1)/2"
        t = np.array([r["latency"] for r in rows]) * 1e-3
        out[cls].append(row(name, "bf16", *fit(F, Q, t, P, BW), path, variant="mla", about=about))
    return out


def collectives(repo, name, sysname, g):
    out = []
    link = g.link_gbs * 1e9
    nccl = latest(repo, sysname, "comm", "nccl", "nccl_perf")
    custom = latest(repo, sysname, "comm", "vllm", "custom_allreduce_perf")
    sets = []
    if custom:
        sets.append(("all_reduce", [r for r in table(repo, custom) if r["kernel_source"] == "vLLM_custom_graph"],
                     custom, "vLLM custom all-reduce (CUDA graph)"))
    if nccl:
        rows = table(repo, nccl)
        for op in ("all_reduce", "all_gather", "reduce_scatter", "alltoall"):
            if op == "all_reduce" and custom:
                continue
            sets.append((op, [r for r in rows if r["op_name"] == op], nccl, "NCCL"))
    for op, rows, path, what in sets:
        variant = "all_to_all" if op == "alltoall" else op
        for lo, hi in B_REGIMES:
            sel = [r for r in rows if in_regime(r["message_size"] * 2, lo, hi)]
            if len(sel) < 6:
                continue
            n = np.array([r["num_gpus"] for r in sel], float)
            S = np.array([r["message_size"] for r in sel], float) * 2  # half / bf16 elements -> bytes
            vol = (2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n) * S
            t = np.array([r["latency"] for r in sel]) * 1e-3
            reg = {"bytes_min": lo} | ({"bytes_max": hi} if hi else {})
            ec, em, t0, med, p90, cnt = fit(np.zeros_like(vol), vol, t, 1.0, link)
            out.append(row(name, "*", 1.0, em, t0, med, p90, cnt, path, reg, variant=variant, about=(
                f"{what}, 2-8 GPUs in one NVLink domain; eta_memory = share of the catalogue link_gbs; "
                "bytes = message size; per-rank volume all_reduce 2(n-1)/n*S, others (n-1)/n*S")))
    return out


def main(repo: Path):
    global COMMIT
    COMMIT = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    classes = {c: [] for c in ("gemm", "quant_gemm", "grouped_gemm", "attn_prefill", "attn_decode", "collective")}
    only = set(ONLY) or set(classes)
    for name, sysname in SYSTEMS.items():
        g = find_gpu(name)
        print(name, file=sys.stderr)
        if only & {"gemm", "quant_gemm"}:
            for engine in (None,) + ENGINES:
                for k, v in gemms(repo, name, sysname, g, engine).items():
                    classes[k] += v
        if "grouped_gemm" in only:
            for engine in (None,) + ENGINES:
                classes["grouped_gemm"] += moes(repo, name, sysname, g, engine)
        if only & {"attn_prefill", "attn_decode"}:
            for k, v in attention(repo, name, sysname, g).items():
                classes[k] += v
        if "collective" in only:
            classes["collective"] += collectives(repo, name, sysname, g)
        table.cache_clear()  # one card's tables at a time
    classes = {k: v for k, v in classes.items() if k in only}
    kdir = ROOT / "symcost" / "hardware" / "kernels"
    for cls, rows in classes.items():
        path = kdir / f"{cls}.json"
        doc = json.loads(path.read_text()) if path.exists() else {"op_class": cls, "about": ""}
        # rebuilt: the fitted rows (with "fit") and the cross-card medians; kept: rows derived elsewhere
        keep = [r for r in doc.get("rows", []) if "fit" not in r and not _is_default(r)]
        doc["rows"] = keep + rows
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(cls, len(rows), file=sys.stderr)


DEFAULT_SOURCE = "median of the measured rows of this class"


def _is_default(r: dict) -> bool:
    """A cross-card median row ``add_defaults`` writes (rebuilt each run; other rows derived by hand, whose
    source may also say "median of", are kept)."""
    return r["gpu"] == "*" and r.get("source", "").startswith(DEFAULT_SOURCE)


def add_defaults(kdir: Path) -> None:
    """A ``"*"`` row per class × dtype × variant × regime: the median of the measured GPUs' rows, what
    a card without its own measurements (H800, H20, GH200, MI300X, ...) is costed at."""
    keys = ("engine", "dtype", "variant", "m_min", "m_max", "bytes_min", "bytes_max")
    for path in sorted(kdir.glob("*.json")):
        doc = json.loads(path.read_text())
        rows = [r for r in doc["rows"] if not _is_default(r)]
        groups: dict = {}
        for r in rows:
            if r["gpu"] != "*" and "fit" in r:  # the fitted rows (hand-derived ones keep their own defaults)
                groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
        for key, rs in groups.items():
            d = {k: v for k, v in zip(keys, key) if v is not None}
            rows.append({"gpu": "*", **d,
                         "eta_compute": round(float(np.median([r["eta_compute"] for r in rs])), 3),
                         "eta_memory": round(float(np.median([r["eta_memory"] for r in rs])), 3),
                         "floor_us": round(float(np.median([r["floor_us"] for r in rs])), 2),
                         "source": DEFAULT_SOURCE + ", dtype and regime over "
                                   + ", ".join(sorted(r["gpu"] for r in rs))
                                   + " (cards without measurements of their own)"})
        doc["rows"] = rows
        path.write_text(json.dumps(doc, indent=1) + "\n")


COMMIT = ""
ONLY: list = []  # --only gemm,quant_gemm,grouped_gemm: re-derive those classes, keep the rest
if __name__ == "__main__":
    if "--only" in sys.argv:
        i = sys.argv.index("--only")
        ONLY = sys.argv[i + 1].split(",")
        del sys.argv[i:i + 2]
    if sys.argv[1:2] == ["--defaults-only"]:
        add_defaults(ROOT / "symcost" / "hardware" / "kernels")
    else:
        main(Path(sys.argv[1]))
        add_defaults(ROOT / "symcost" / "hardware" / "kernels")

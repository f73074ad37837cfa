"""Step time predicted with no --mfu against published measured training runs
(tests/data/training_throughput_measured.json). ``python -m tests.training_throughput`` prints the table."""
import json
import statistics
from pathlib import Path

from symcost.architectures import loader
from symcost.core.errors import SymcostError
from symcost.hardware.gpus import gpu as find_gpu
from symcost.training import run, train_memory
from symcost.training.comm import comm
from symcost.training.setup import TrainSetup

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data" / "training_throughput_measured.json"


def row_argv(base: list, b: dict, *, schedule: bool = False) -> list:
    """``symcost train`` options that run one ``--search`` row alone: its layout, micro-batch, ZeRO stage,
    recomputation, offload, interleaving, sequence parallelism, HSDP shard; ``schedule``: the pipeline
    schedule the search chose for it."""
    argv = base + ["--micro-batch", str(b["micro_batch"]), "--zero", str(b["zero"]), "--recompute", b["recompute"],
                   "--offload", b["offload"], "--virtual-stages", str(b["virtual_stages"]),
                   "--sp" if b["sp"] else "--no-sp"]
    argv += [x for k in ("dp", "tp", "pp", "ep", "cp") for x in (f"--{k}", str(b[k]))]
    if b["hsdp_shard"] is not None:
        argv += ["--hsdp-shard", str(b["hsdp_shard"])]
    if schedule and b["schedule"] != "none":
        argv += ["--schedule", b["schedule"].split("+")[0]]
    return argv


def rows() -> list[dict]:
    return json.loads(DATA.read_text())["rows"]


def measured_step(row: dict, model=None) -> float:
    """The row's step time: as logged where the source gives it; else tokens per step over the measured
    tokens/s of all its GPUs; or, from TFLOPS/GPU, the step's megatron-preset FLOPs over the GPUs'
    measured FLOP/s."""
    fig = row["figure"]
    if "step_time_s" in fig:
        return fig["step_time_s"]
    tokens = row["global_batch"] * row["seq"]
    if "tokens_per_s_per_gpu" in fig:
        return tokens / (fig["tokens_per_s_per_gpu"] * row["gpus"])
    from symcost.training.flops import preset_megatron
    per_seq = preset_megatron(model).xreplace(model.values_with(T=row["seq"], B=1))
    return float(per_seq) * row["global_batch"] / (fig["model_tflops_per_gpu"] * 1e12 * row["gpus"])


def setup_of(row: dict) -> TrainSetup:
    return TrainSetup.of(seq=row["seq"], micro_batch=row["micro_batch"], global_batch=row["global_batch"],
                         dp=row["dp"], tp=row["tp"], pp=row["pp"], ep=row["ep"], cp=row["cp"], zero=row["zero"],
                         sp=row["tp"] > 1, virtual=row["virtual"], recompute=row["recompute"], grad_dtype="fp32",
                         framework=row["framework"],
                         etp=row.get("etp"), first_stage_layers=row.get("first_stage_layers"),
                         last_stage_layers=row.get("last_stage_layers"),
                         account_embedding=row.get("account_embedding", False),
                         account_loss=row.get("account_loss", False), pipeline_layout=row.get("pipeline_layout"),
                         attention_impl=row.get("attention_impl", "fused"))


def model_of(row: dict):
    name = row["model"]
    return loader.build(str(ROOT / name) if name.endswith(".json") else name)


def predict(row: dict) -> dict:
    m = model_of(row)
    g = find_gpu(row["gpu"])
    setup = setup_of(row)
    setup.check(m)
    tm = train_memory(m, setup)
    cm = comm(m, setup.replace(recompute=run.comm_recompute(row["recompute"], row["cp"])))
    links = run.links(g, ib_gbs=50.0, gpus_per_node=g.nvlink_domain, alpha_us=10.0, pcie_gbs=63.0)
    hide = row.get("hide") or ({"ep": True} if row.get("moe_a2a_overlap") else None)  # the run's EP overlap as stated
    st = run.kernel_step(m, tm, cm, setup, gpu=g, links=links, schedule=row.get("schedule"), precision=row["precision"], hide=hide,
                        cuda_graphs=row.get("cuda_graphs"))
    return {"predicted_s": st["step_time_s"], "measured_s": measured_step(row, m), "step": st}


def table() -> tuple[list[dict], list[str]]:
    out, refused = [], []
    for row in rows():
        try:
            r = predict(row)
        except SymcostError as e:
            refused.append(f"{row['id']}: {e}")
            continue
        r["id"] = row["id"]
        r["ratio"] = r["predicted_s"] / r["measured_s"]
        out.append(r)
    return out, refused


def summary(out) -> dict:
    err = [abs(r["ratio"] - 1) for r in out]
    worst = max(max(r["ratio"], 1 / r["ratio"]) for r in out)
    return {"rows": len(out), "median_abs_error": statistics.median(err), "worst_factor": worst}


def by_dispatcher(out) -> dict:
    """Median predicted/measured ratio of the routed-expert rows by the token dispatcher their
    recipe ran (``moe_dispatcher``: Megatron-Core's ``alltoall``, or the flex dispatcher's
    ``hybridep``), with the rows' ids: the predictor does not read the dispatcher, so a split
    between the groups is a mechanism of one dispatcher the model lacks."""
    rows_ = {r["id"]: r for r in rows()}
    groups: dict = {}
    for r in out:
        disp = rows_[r["id"]].get("moe_dispatcher")
        if disp:
            groups.setdefault(disp, []).append(r)
    return {k: {"rows": len(v), "median_ratio": statistics.median(x["ratio"] for x in v),
                "ids": sorted(x["id"] for x in v)} for k, v in groups.items()}


if __name__ == "__main__":
    out, refused = table()
    for r in out:
        s = r["step"]
        print(f"{r['id']:<34} measured {r['measured_s']:9.3f} s  predicted {r['predicted_s']:9.3f} s  "
              f"ratio {r['ratio']:.2f}  mfu {s['mfu_implied']:.2f}  bubble {s['bubble_s']:.2f}  "
              f"exposed {sum(s['exposed_comm_s'].values()):.2f}")
    for x in refused:
        print("REFUSED", x)
    for disp, g in by_dispatcher(out).items():
        print(f"moe_dispatcher {disp:<9} rows {g['rows']}  median ratio {g['median_ratio']:.2f}")
    print(summary(out))

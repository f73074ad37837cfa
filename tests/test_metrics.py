"""The serving and training metrics of the symbolic commands (symcost.analysis.metrics): each metric's
formula substituted equals the exact numeric command, its derivative in a layout size equals a
finite difference of exact substitutions, and hand formulas are checked like parameters are."""
import json

import pytest
import sympy

import symcost
from symcost.analysis.metrics import Options, metric_terms
from symcost.architectures.loader import read_json
from symcost.cli import main
from symcost.core.exprparse import parse
from symcost.core.notation import sym


@pytest.fixture
def unbounded(monkeypatch):
    """The symbolic commands' CPU budget lifted: these tests check the calibrated TTFT's derivative,
    whose regimes resolve near the budget (``BUDGET_CPU_S``, product behaviour measured by
    ``benchmarks/``), so a slower machine would test the budget instead of the derivative."""
    from symcost.cli.commands import symbolic
    monkeypatch.setattr(symbolic, "BUDGET_CPU_S", 120.0)


def _run(argv, capsys):
    code = main(argv + ["--json"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return json.loads(out)


def _terms(name, metric, **kw):
    m = symcost.build(name)
    return m, metric_terms(m, read_json(name)[1], metric, Options(**kw))


def _fd(expr, var, at, h=sympy.Rational(1, 10**4)):
    """Central difference of exact substitutions (a Rational step; every value exact)."""
    f = lambda x: expr.xreplace({var: x})  # noqa: E731
    return (f(at + h) - f(at - h)) / (2 * h)


# -- derivatives in a layout size against finite differences of exact substitutions -----------------
@pytest.mark.parametrize("name, metric, wrt, at, kw", [
    ("deepseek-v3", "serve_memory", "tp", 8, dict(pp=1, ep=1)),   # MLA: no ⌈H_kv/N_tp⌉ staircase
    # the bound (--ideal): the calibrated step's regimes in N_tp exceed scale's CPU budget (it says so, exit 2)
    # at N_tp = 6: 8 is the NVLink domain's edge, where the link (a step in N_tp) changes
    ("deepseek-v3", "tpot", "tp", 6, dict(pp=1, ep=1, gpu="H200", ideal=True)),
    ("llama-3.1-8b", "ttft", "tp", 2, dict(pp=1, gpu="H100", T=4096, ideal=True)),
    ("llama-3.1-8b", "train_memory", "dp", 8, dict(zero=1, tp=2, cp=1)),
    ("llama-3.1-8b", "train_memory", "N_dp", 8, dict(zero=3, tp=1, cp=1)),
    ("llama-3.1-8b", "train_memory", "cp", 2, dict(zero=1, tp=1, dp=4)),
    ("mixtral-8x7b-v0.1", "train_memory", "ep", 4, dict(zero=1, dp=8, tp=1, cp=1)),
])
def test_scale_derivative_equals_finite_difference(name, metric, wrt, at, kw, capsys, unbounded):
    argv = ["scale", name, "--metric", metric, "--wrt", wrt, "--batch", "4"]
    for k, v in kw.items():
        argv += [f"--{k}"] if v is True else [f"--{k}", str(v)]
    data = _run(argv, capsys)
    var = parse(data["wrt"])
    assert var.name.startswith("N_")  # the alias resolves to the notation's symbol
    m, t = _terms(name, metric, **kw)
    vals = {k: v for k, v in {**t.bound, sym.B: sympy.Integer(4), sym.T: sympy.Integer(4096)}.items()
            if k is not var}
    expr = t.total.xreplace(vals)
    assert expr.free_symbols == {var}
    d = parse(data["derivative"]).xreplace({sym.T: 4096, var: at})
    fd = _fd(expr, var, sympy.Integer(at))
    assert d != 0 and float(d) == pytest.approx(float(fd), rel=1e-6)


def test_moe_ttft_derivative(capsys, unbounded):
    """DeepSeek-V3's TTFT keeps (1 − k/E)^T (experts the prompt touches), which symcost's parser
    does not read back: the derivative is checked through the API against the finite difference."""
    from symcost.analysis.symbolic import derivative
    from symcost.core.exprparse import to_text
    kw = dict(pp=1, ep=1, gpu="H200", ideal=True)
    data = _run(["scale", "deepseek-v3", "--metric", "ttft", "--wrt", "tp", "--pp", "1", "--ep", "1",
                 "--gpu", "H200", "--ideal"], capsys)
    _, t = _terms("deepseek-v3", "ttft", **kw)
    values = {k: v for k, v in t.bound.items() if k is not sym.N_tp}
    d = derivative(t.total, sym.N_tp, values=values)
    assert data["derivative"] == to_text(d)
    v = {sym.T: sympy.Integer(4096)}
    fd = _fd(t.total.xreplace({**values, **v}), sym.N_tp, sympy.Integer(6))  # 8: the NVLink domain's edge
    assert float(d.xreplace({**v, sym.N_tp: 6})) == pytest.approx(float(fd), rel=1e-6)
    # with T a number the power (31/32)^4096 stays unevaluated (core.powers.RatioPow), so --T answers
    assert main(["scale", "deepseek-v3", "--metric", "ttft", "--wrt", "tp", "--T", "4096", "--pp", "1", "--ep", "1",
                 "--gpu", "H200", "--ideal", "--json"]) == 0
    assert "(31/32)**4096" in json.loads(capsys.readouterr().out)["derivative"]


def test_wrt_layout_needs_a_layout_metric(capsys):
    assert main(["scale", "llama-3.1-8b", "--metric", "params", "--wrt", "dp", "--json"]) == 2
    assert "does not depend on the layout" in json.loads(capsys.readouterr().out)["error"]
    assert main(["scale", "llama-3.1-8b", "--metric", "train_memory", "--wrt", "pp", "--json"]) == 2
    assert "--pp" in json.loads(capsys.readouterr().out)["error"]
    assert main(["check", "llama-3.1-8b", "--metric", "params", "--expr", "d", "--tp", "2", "--json"]) == 2
    assert "--tp" in json.loads(capsys.readouterr().out)["error"]


# -- the formulas substituted equal the exact numeric commands ----------------------------------
def test_serving_formulas_equal_memory_and_roofline(capsys):
    argv = ["--T", "32768", "--batch", "8", "--gpu", "H200", "--tp", "8"]
    mem = _run(["memory", "deepseek-v3", *argv], capsys)
    roof = _run(["roofline", "deepseek-v3", "--phase", "decode", *argv], capsys)
    v = {sym.T: sympy.Integer(32768), sym.B: sympy.Integer(8)}
    get = lambda metric: _terms("deepseek-v3", metric, tp=8, pp=1, ep=1, gpu="H200")[1]  # noqa: E731
    t = get("serve_memory")
    assert int(sympy.ceiling(t.total.xreplace({**t.bound, **v}))) == mem["per_gpu_bytes"]
    t = get("kv_capacity")
    assert int(t.total.xreplace(t.bound)) == mem["kv_capacity_tokens"]
    t = get("max_concurrency")
    assert float(t.total.xreplace({**t.bound, **v})) == pytest.approx(mem["max_concurrency"], rel=1e-12)
    # the ttft/tpot metrics are roofline's TTFT and TPOT: the calibrated kernel model, and with --ideal its bound
    for ideal in (False, True):
        flag = ["--ideal"] if ideal else []
        dec = _run(["roofline", "deepseek-v3", "--phase", "decode", *argv, *flag], capsys)
        pre = _run(["roofline", "deepseek-v3", "--phase", "prefill", "--T", "32768", "--batch", "1", "--gpu", "H200",
                    "--tp", "8", *flag], capsys)
        fv = {sym.T: sympy.Float(32768), sym.B: sympy.Float(8)}
        for metric, r in (("tpot", dec), ("ttft", pre)):
            t = _terms("deepseek-v3", metric, tp=8, pp=1, ep=1, gpu="H200", ideal=ideal)[1]
            bound = {k: (sympy.Float(v) if isinstance(v, sympy.Integer) else v) for k, v in t.bound.items()}
            got = float(sympy.sympify(t.total).xreplace({**bound, **fv}).xreplace({**bound, **fv}))
            assert got == pytest.approx(r[f"{metric}_s"], rel=1e-9), (metric, ideal)


def test_train_memory_formula_equals_train(capsys):
    data = _run(["train", "llama-3.1-8b", "--seq", "4096", "--micro-batch", "1", "--dp", "8", "--tp", "2",
                 "--zero", "1"], capsys)
    _, t = _terms("llama-3.1-8b", "train_memory", dp=8, tp=2, cp=1, zero=1)
    exact = t.total.xreplace({**t.bound, sym.T: 4096, sym.B: 1})
    # the command rounds weights, gradients and optimizer state up to whole bytes each
    assert 0 <= data["per_gpu_bytes"] - exact < 3


# -- hand formulas checked like parameters --------------------------------------------------------
W = "2*(2*V*d/N_tp + L*(2*d*H_q*D_h/N_tp + 2*d*D_h*ceiling(H_kv/N_tp) + 3*d*d_ff/N_tp + 2*d) + d)"
# the profiled peak (serving/profile.py): the forward's residual, its copy and the norm output (3·d) plus
# the widest GEMM outputs, or Model Runner V2's dummy sampler (the default release 0.33: bf16 logits and
# three fp32 tensors of its warmup pass, 14 bytes per (sequence, vocabulary entry) at S = 1,024 on an H100)
# + the held hidden states; and V2's sampler state held for the worker's life (penalty bins 4·S·V, the
# prompt mask and the grammar bitmask 4·S·⌈V/32⌉ each)
A = ("Max(2*M*(Max(H_q*D_h/N_tp + 2*D_h*ceiling(H_kv/N_tp) + d, 3*d_ff/N_tp + d) + 3*d), "
     "2*M*d + 14*V*Min(M, 1024)) + 4*1024*V + 2*4*1024*ceiling(V/32)")
# non-torch (engine_memory.json): kernel modules 0.11 GiB + NCCL 0.41 GiB per peer rank on an NVLink card + the
# custom all-reduce's 2·8 MiB once N_tp > 1
NT = "(118111600 + 440234147*(N_tp*N_pp - 1) + 16777216*Min(1, N_tp - 1))"
# vLLM's CUDA-graph estimate (the default release, >= 0.21): the graph pool = the forward's transient at the
# largest capture size 512, + 1 MiB for each further graph (51 PIECEWISE and 51 FULL sizes: 100 more)
CG = "(2*512*(Max(H_q*D_h/N_tp + 2*D_h*ceiling(H_kv/N_tp) + d, 3*d_ff/N_tp + d) + 3*d) + 100*1048576)"
PAGE = "16*L*2*H_kv*D_h*2*ceiling(H_kv/N_tp)/H_kv"  # 16-token block, K and V, bf16, KV heads replicated
HAND = {  # Llama-3.1-8B in bf16 on one stage, N_tp left a symbol
    "serve_memory": f"{W} + {A} + {NT} + {CG} + B*ceiling(T/16)*{PAGE}",
    "kv_capacity": f"16*floor(Max(0, M_gpu - ({W} + {A} + {NT} + {CG}))/({PAGE}))",
    "max_concurrency": f"floor(Max(0, M_gpu - ({W} + {A} + {NT} + {CG}))/({PAGE}))/ceiling(T/16)",
}


@pytest.mark.parametrize("metric", list(HAND))
def test_check_hand_serving_formula(metric, capsys):
    data = _run(["check", "llama-3.1-8b", "--metric", metric, "--pp", "1", "--gpu", "H100",
                 "--expr", HAND[metric]], capsys)
    assert data["equal"] is True
    # forgetting that KV heads are replicated past H_kv (H_kv/N_tp instead of ⌈H_kv/N_tp⌉) is caught
    wrong = HAND[metric].replace("*ceiling(H_kv/N_tp)/H_kv", "/N_tp")
    data = _run(["check", "llama-3.1-8b", "--metric", metric, "--pp", "1", "--gpu", "H100",
                 "--expr", wrong], capsys)
    assert data["equal"] is False


def test_check_hand_tpot(capsys):
    """Llama-3.1-8B decode on one H100 at B=1: memory-bound, time = bytes read / BW_hbm: every bf16
    weight once but the input embedding, of which the step gathers its one row (2·d bytes: the table
    is untied from the head), plus the KV cache of T tokens read and one token's K and V written; one
    GPU, no communication."""
    weights = "2*(V*d + d + L*(2*d*H_q*D_h + 2*d*H_kv*D_h + 3*d*d_ff + 2*d) + d)"
    kv = "4*L*H_kv*D_h"  # bytes per token of K and V in bf16
    passes = "16*L*d"  # the bound's elementwise passes: 4 a layer (2 norms, activation, residual), R·d read + written
    expr = f"({weights} + {kv}*T + {kv} + {passes})/BW_hbm"
    data = _run(["check", "llama-3.1-8b", "--metric", "tpot", "--tp", "1", "--pp", "1", "--gpu", "H100",
                 "--T", "4096", "--batch", "1", "--ideal", "--expr", expr], capsys)
    assert data["equal"] is True, data["difference"]


def test_export_and_crossover_take_the_metrics(capsys):
    out = main(["export", "llama-3.1-8b", "--metric", "tpot", "--tp", "1", "--pp", "1", "--gpu", "H100",
                "--to", "python"])
    code = capsys.readouterr().out
    assert out is None or out == 0
    ns = {}
    exec(code, ns)  # the exported module is self-contained
    _, t = _terms("llama-3.1-8b", "tpot", tp=1, pp=1, gpu="H100")
    assert float(ns["tpot"](B=8, T=4096)) == pytest.approx(float(t.total.xreplace({**t.bound, sym.B: 8, sym.T: 4096})),
                                                           rel=1e-12)
    data = _run(["export", "llama-3.1-8b", "--metric", "train_memory", "--zero", "1", "--to", "json"], capsys)
    assert {"N_dp", "N_tp", "B", "T"} <= set(data["arguments"])
    data = _run(["crossover", "llama-3.1-8b", "--metric", "tpot", "--a", "kernels",
                 "--b", "collectives", "--gpu", "H100", "--tp", "2", "--batch", "8"], capsys)
    assert data["always"] is True  # at TP=2 the memory-bound step outweighs the all-reduces at every T

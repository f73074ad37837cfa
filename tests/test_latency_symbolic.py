"""The calibrated latency kept a formula: the calibration regime as a Piecewise in the step's own
quantities (``roofline.calibration_piecewise``), equal to the numeric lookup; the ``ttft``/``tpot``
metrics of ``symcost.analysis`` are the calibrated ones by default, as ``roofline`` prints them."""
import json

import pytest
import sympy

from symcost.analysis.metrics import Options, metric_terms
from symcost.cli import main
from symcost.cli.commands.common import read_model
from symcost.core.notation import sym
from symcost.hardware.gpus import gpu as find_gpu
from symcost.serving.plan import Layout, ServeSetup
from symcost.serving.roofline import CalibratedLatency


@pytest.fixture(scope="module")
def moe():
    m, raw = read_model("qwen3-30b-a3b")
    setup = ServeSetup(layout=Layout(), gpu=find_gpu("H100"))
    return m, raw, CalibratedLatency(m, setup.checkpoint(m, raw), setup)


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_piecewise_calibration_equals_the_lookup(moe, phase):
    """Across regime boundaries (rows 1..300 per GEMM call, prefill of 1K..8K tokens), TP and TP·EP."""
    m, _, cal = moe
    st = cal.symbolic(phase).total
    assert not ({sym.eta_cg, sym.eta_mx, sym.t_g, sym.alpha_ar} & st.free_symbols)  # the regime is inside
    for kw in (dict(tp=2), dict(tp=2, ep=2)):
        lay = Layout.vllm(m, **kw)
        for B, T in ((1, 1024), (20, 3000), (300, 8000)):
            at = {k: sympy.Float(v) for k, v in cal.at(lay, T=T, batch=B, max_batched_tokens=8192).items()}
            got = float(st.xreplace({**at, sym.D_nv: cal.hw[sym.D_nv]}))
            want = cal.evaluate(phase, lay, T=T, batch=B, max_batched_tokens=8192, text=False).seconds
            assert got == pytest.approx(want, rel=1e-9), (kw, B, T)


def test_decode_step_is_a_formula_of_the_batch(moe):
    """Differentiable in B within a regime; the step function of the calibration is in the formula."""
    m, _, cal = moe
    st = cal.symbolic("decode").total.xreplace({sym.N_tp: 2, sym.N_pp: 1, sym.N_ep: 1, sym.x_ep: 0, sym.T: 2048})
    assert st.free_symbols == {sym.B} and st.has(sympy.Piecewise)
    slope = sympy.diff(st, sym.B).xreplace({sym.B: sympy.Float(40)})
    assert float(slope) > 0


def _json(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_metrics_are_the_calibrated_latency_roofline_prints(capsys):
    """``ttft``/``tpot`` metrics at numbers equal roofline's TTFT/TPOT, calibrated and --ideal."""
    m, raw = read_model("llama-3.1-8b")
    for ideal in (False, True):
        flag = ["--ideal"] if ideal else []
        r = _json(capsys, "roofline", "llama-3.1-8b", "--phase", "decode", "--T", "4096", "--batch", "16",
                  "--gpu", "H100", "--tp", "2", "--json", *flag)
        o = Options(tp=2, pp=1, gpu="H100", T=4096, ideal=ideal)
        for name in ("ttft", "tpot"):
            t = metric_terms(m, raw, name, o)
            v = {**t.bound, sym.B: sympy.Float(16)}
            got = float(sympy.sympify(t.total).xreplace(v).xreplace(v))
            assert got == pytest.approx(r[f"{name}_s"], rel=1e-9), (name, ideal)


def test_metrics_without_a_gpu_keep_the_calibration_symbols():
    m, raw = read_model("llama-3.1-8b")
    free = sympy.sympify(metric_terms(m, raw, "tpot", Options()).total).free_symbols
    assert {sym.eta_cg, sym.eta_mg, sym.t_g, sym.BW_hbm} <= free
    ideal = sympy.sympify(metric_terms(m, raw, "tpot", Options(ideal=True)).total).free_symbols
    assert not ({sym.eta_cg, sym.t_g, sym.alpha_ar} & ideal) and sym.BW_hbm in ideal

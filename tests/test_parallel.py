"""One layout for serving and training (symcost.model.parallel): the constraints, each named, and the
serving flags' mapping onto N_tp·N_ep."""
import pytest

import symcost
from symcost.core.errors import SymcostError
from symcost.model.parallel import Layout
from symcost.training.plan import Plan


@pytest.fixture(scope="module")
def llama():
    return symcost.build("llama-3.1-70b")  # H_q 64, H_kv 8, L 80, no experts


@pytest.fixture(scope="module")
def mixtral():
    return symcost.build("mixtral-8x7b-v0.1")  # H_q 32, H_kv 8, E 8, L 32


@pytest.mark.parametrize("kw, needle", [
    (dict(tp=3), "query heads H_q"),
    (dict(tp=16), None),  # 8 KV heads replicated over 16 ranks
    (dict(tp=32), None),
    (dict(pp=81), "--pp 81 exceeds the layers L=80"),
    (dict(pp=80), None),
    (dict(ep=2, dp=2), "no routed experts"),
])
def test_dense_constraints(llama, kw, needle):
    lay = Layout(**kw)
    if needle is None:
        lay.check(llama)
        return
    with pytest.raises(SymcostError, match=needle):
        lay.check(llama)


def test_kv_heads_neither_split_nor_replicated():
    m = symcost.build("llama-3.1-70b")
    v = dict(m.values)
    from symcost.core.notation import sym
    v[sym.H_kv] = 6  # tp 4 divides H_q = 64, but neither 6 % 4 nor 4 % 6 is 0

    class M:  # the check reads only values and groups
        values, groups = v, m.groups
    with pytest.raises(SymcostError, match="KV heads H_kv"):
        Layout(tp=4).check(M)


def test_world_and_experts(mixtral):
    lay = Layout(dp=4, tp=2, pp=2, ep=4, cp=2)
    assert lay.world == 32 and lay.expert_ranks == 8 and lay.expert_dp == 2
    with pytest.raises(SymcostError, match="needs 32 GPUs, more than --gpus 16"):
        lay.check(mixtral, gpus=16)
    with pytest.raises(SymcostError, match="must divide dp × cp"):  # EP inside DP×CP
        Layout(dp=2, ep=4).check(mixtral)
    Layout(dp=2, cp=2, ep=4).check(mixtral)
    with pytest.raises(SymcostError, match="does not divide the routed experts E=8"):
        Layout(dp=16, ep=16).check(mixtral)


def test_serving_flags_map_onto_N_ep(mixtral):
    """vLLM's --ep is the group N_tp·N_ep: off (1), or the TP ranks of N_ep DP replicas."""
    lay = Layout.vllm(tp=2, dp=4, ep=8)
    assert (lay.tp, lay.dp, lay.ep, lay.ep_group, lay.expert_ranks) == (2, 4, 4, 8, 8)
    assert lay.label() == "TP2·PP1·DP4·EP8"
    lay.check(mixtral)
    assert Layout.vllm(tp=8, ep=8).expert_ranks == 8  # EP over the TP ranks only: N_ep = 1
    assert Layout.vllm(tp=8).ep_group == 1 and Layout.vllm(tp=8).expert_ranks == 8
    with pytest.raises(SymcostError, match="tp·dp"):
        Layout.vllm(tp=2, ep=8)
    with pytest.raises(SymcostError, match="no routed experts"):
        Layout.vllm(symcost.build("llama-3.1-70b"), ep=2)
    # whole experts: E must split over all N_tp·N_ep ranks (training needs only N_ep | E)
    with pytest.raises(SymcostError, match="does not divide the routed experts E=8"):
        Layout.vllm(tp=4, dp=4, ep=16).check(mixtral)
    Plan(tp=4, dp=4, ep=4).check(mixtral)


def test_training_plan_adds_its_own(llama):
    with pytest.raises(SymcostError, match="--zero"):
        Plan(zero=4).check(llama)
    with pytest.raises(SymcostError, match="does not divide --seq"):
        Plan(cp=3).check(llama, 512)
    with pytest.raises(SymcostError, match="needs --tp > 1"):
        Plan(sp=True).check(llama)
    assert isinstance(Plan(), Layout)

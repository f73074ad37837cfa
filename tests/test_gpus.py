"""The GPU catalogue as data: every entry sourced, the INTERFACE keys of `symcost gpus --json`."""
import json

import pytest

from symcost.cli import main
from symcost.hardware.gpus import CATALOGUE, gpu


def test_gpus_json_contract(capsys):
    assert main(["gpus", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["gpus"]
    names = {r["name"] for r in rows}
    assert {"H800", "A800", "GH200", "B300", "MI355X", "H100", "H200", "B200"} <= names
    for r in rows:
        for key in ("name", "memory_bytes", "usable_bytes", "bandwidth_bytes_per_s", "peak_flops", "source"):
            assert key in r, (r["name"], key)
        assert isinstance(r["usable_bytes"], int) and r["usable_bytes"] <= r["memory_bytes"] * 1.2
        assert all(isinstance(v, int) for v in r["peak_flops"].values()) and "bf16" in r["peak_flops"]
        assert r["source"]


def test_h100_usable_memory_is_what_the_driver_reports():
    """CUDA reports 85,029,158,912 bytes on an H100 80GB: 79.19 GiB, the figure vLLM logs."""
    h = gpu("H100")
    assert h.usable_bytes == 85_029_158_912 and round(h.usable_bytes / 2**30, 2) == 79.19
    assert h.memory_bytes == 80 * 2**30  # the nominal capacity, as the engine always read it


def test_peaks_fall_back_and_say_so():
    assert gpu("A100").peak("fp8") == (312 * 10**12, "bf16")
    assert gpu("H100").peak("fp4") == (1979 * 10**12, "fp8")
    assert gpu("B300").peak("fp4") == (14000 * 10**12, "fp4")
    assert len(CATALOGUE) >= 16


def test_every_card_states_its_domain_and_scaleout_link():
    """The cards of issue 22 are all there, each with an NVLink domain and a scale-out NIC."""
    wanted = {"A100-40GB", "A100-80GB", "A100-40GB-PCIe", "A100-80GB-PCIe", "A10", "A10G", "L4", "L40", "L40S",
              "RTX-3090", "RTX-4090", "RTX-5090", "RTX-6000-Ada", "RTX-PRO-6000", "H20", "H20-141GB", "H100-PCIe",
              "H100", "H100-NVL", "H200", "H200-NVL", "GH200", "B200", "B300", "GB200", "GB300", "MI250X",
              "MI300X", "MI325X", "MI355X"}
    assert wanted <= set(CATALOGUE)
    for g in CATALOGUE.values():
        assert isinstance(g.nvlink_domain, int) and g.nvlink_domain >= 1, g.name
        assert isinstance(g.scaleout_gbs, float) and g.scaleout_gbs > 0, g.name
    assert gpu("GB200").nvlink_domain == 72 and gpu("H100").nvlink_domain == 8 and gpu("L40S").nvlink_domain == 1
    assert gpu("H100").scaleout_gbs == 50.0 and gpu("B300").scaleout_gbs == 100.0


def test_driver_reported_memory_of_the_cards_in_public_logs():
    """What vLLM/PyTorch log as the card's total (two decimals of GiB, the log's precision)."""
    for name, gib in (("RTX-3090", 23.58), ("A10", 22.18), ("A100-80GB", 79.25), ("H200", 139.81)):
        assert round(gpu(name).usable_bytes / 2**30, 2) == gib and gpu(name).usable_measured


def test_links_default_to_the_catalogue_domain_and_nic():
    from symcost.hardware.links import Links
    nvl = Links.of(gpu("GB200"))
    assert nvl.gpus_per_node == 72 and nvl.ib_bytes_s == 50e9 and nvl.nvlink_bytes_s == 900e9
    assert Links.of(gpu("L40S")).gpus_per_node == 1 and Links.of(gpu("B300")).ib_bytes_s == 100e9
    pinned = Links.of(gpu("GB200"), gpus_per_node=4, ib_bytes_s=25e9)  # explicit rates still override
    assert pinned.gpus_per_node == 4 and pinned.ib_bytes_s == 25e9


def test_the_expert_all_to_all_link_is_one_mechanism_as_number_and_formula():
    """Serving's symbolic EP link (``ep_link_formula``) is training's numeric ``link_bytes_s("ep")``: NVLink
    inside a domain; across domains the off-domain share over scale-out, the rest over NVLink at once."""
    import sympy

    from symcost.hardware.links import Links, ep_link_formula, link_bytes_s
    for card in ("H100", "GB200"):
        links = Links.of(gpu(card))
        for span in (1, 2, 8, 16, 64, 72, 144, 256):
            want = link_bytes_s("ep", span, links)
            got = ep_link_formula(sympy.Integer(span), links.gpus_per_node, sympy.Float(links.nvlink_bytes_s),
                                  sympy.Float(links.ib_bytes_s))
            assert float(got) == pytest.approx(want, rel=1e-12), (card, span)
    links = Links.of(gpu("H100"))
    assert link_bytes_s("ep", 16, links) == pytest.approx(1 / max((8 / 15) / 50e9, (7 / 15) / 900e9))
    assert link_bytes_s("ep", 16, links) > links.ib_bytes_s  # not the whole volume at the scale-out rate


def test_custom_card_keeps_base_peaks_or_has_none():
    import pytest

    from symcost.core.errors import SymcostError
    from symcost.hardware.gpus import custom
    c = custom(25_318_000_000, gpu("RTX-4090"))
    assert c.usable_bytes == 25_318_000_000 and c.peak("bf16") == gpu("RTX-4090").peak("bf16")
    bare = custom(25_318_000_000)
    assert bare.usable_bytes == 25_318_000_000
    with pytest.raises(SymcostError, match="--gpu-memory"):
        bare.peak("bf16")

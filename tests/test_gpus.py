"""The GPU catalogue as data: every entry sourced, the INTERFACE keys of `symcost gpus --json`."""
import json

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

"""The hardware floor's lookup rules (``symcost.hardware.calibration``): the most specific row wins."""
import pytest

from symcost.core.errors import SymcostError
from symcost.hardware import calibration


def test_most_specific_row_wins(monkeypatch):
    data = [
        {"gpu": "*", "dtype": "*", "eta_compute": 0.5, "eta_memory": 0.6, "floor_us": 5, "source": "default"},
        {"gpu": "H100-SXM", "dtype": "*", "eta_compute": 0.7, "eta_memory": 0.8, "floor_us": 4, "source": "gpu"},
        {"gpu": "H100-SXM", "dtype": "bf16", "m_max": 64, "eta_compute": 0.2, "eta_memory": 0.85, "floor_us": 3,
         "source": "small-m"},
    ]
    monkeypatch.setattr(calibration, "rows", lambda op: tuple(data))
    assert calibration.efficiency("A10", "gemm").source == "default"
    assert calibration.efficiency("H100-SXM", "gemm", dtype="fp8", m=8).source == "gpu"
    assert calibration.efficiency("H100-SXM", "gemm", m=8).source == "small-m"
    assert calibration.efficiency("H100-SXM", "gemm", m=4096).source == "gpu"
    assert calibration.efficiency("H100-SXM", "gemm", m=8).floor_s == pytest.approx(3e-6)


def test_unknown_class_and_missing_rows_are_named(monkeypatch):
    with pytest.raises(SymcostError, match="unknown operation class"):
        calibration.rows("matmul")
    monkeypatch.setattr(calibration, "rows", lambda op: ())
    with pytest.raises(SymcostError, match="no calibration for gemm on H100"):
        calibration.efficiency("H100", "gemm")

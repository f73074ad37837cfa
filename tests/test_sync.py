"""formulas/ and reports/ are exactly what ``python -m symcost.generate`` renders now."""
from symcost.generate import ROOT, stale


def test_generated_documents_are_current():
    bad = stale(ROOT)
    assert not bad, ("generated documents are stale; run `python -m symcost.generate` and commit: "
                     + ", ".join(bad[:20]))

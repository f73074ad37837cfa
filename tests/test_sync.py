"""formulas/ and reports/ are exactly what ``python -m symcost.documents.generate`` renders now."""
from symcost.documents.generate import ROOT, stale


def test_generated_documents_are_current():
    bad = stale(ROOT)
    assert not bad, ("generated documents are stale; run `python -m symcost.documents.generate` and commit: "
                     + ", ".join(bad[:20]))

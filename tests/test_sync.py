"""formulas/ and reports/ are exactly what ``python -m symcost.documents.generate`` renders now."""
from symcost.documents.generate import ROOT, stale
from tests.generated import rendered


def test_generated_documents_are_current():
    bad = stale(ROOT, want=rendered())
    assert not bad, ("generated documents are stale; run `python -m symcost.documents.generate` and commit: "
                     + ", ".join(bad[:20]))

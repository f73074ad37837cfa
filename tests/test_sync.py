"""formulas/ and reports/ are exactly what ``python -m symcost.documents.generate`` renders now."""
import pytest

from symcost.documents.generate import ROOT, stale
from tests.generated import rendered

# on one xdist worker: the documents are rendered once per worker (tests/generated.py)
pytestmark = pytest.mark.xdist_group("generated")


def test_generated_documents_are_current():
    bad = stale(ROOT, want=rendered())
    assert not bad, ("generated documents are stale; run `python -m symcost.documents.generate` and commit: "
                     + ", ".join(bad[:20]))

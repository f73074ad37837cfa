import os

# One intra-op thread for torch (and the BLAS under NumPy): the tests run tiny models, whose ops a
# second thread only slows (and on a shared two-core runner the idle thread spins against the other
# jobs: the tiny transformers forwards took three times the CPU with two threads). Set before any
# test imports torch, which reads it at start-up; a value the caller set is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from hypothesis import settings

from tests.tiny import cases

# Property tests draw the same examples on every run (a CI failure reproduces locally).
settings.register_profile("symcost", derandomize=True, deadline=None)
settings.load_profile("symcost")

TINY = cases()


def pytest_generate_tests(metafunc):
    if "tiny_case" in metafunc.fixturenames:
        metafunc.parametrize("tiny_case", [c[1:] for c in TINY], ids=[c[0] for c in TINY])

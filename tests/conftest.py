from hypothesis import settings

from tests.tiny import cases

# Property tests draw the same examples on every run (a CI failure reproduces locally).
settings.register_profile("symcost", derandomize=True, deadline=None)
settings.load_profile("symcost")

TINY = cases()


def pytest_generate_tests(metafunc):
    if "tiny_case" in metafunc.fixturenames:
        metafunc.parametrize("tiny_case", [c[1:] for c in TINY], ids=[c[0] for c in TINY])


from tests.tiny import cases

TINY = cases()


def pytest_generate_tests(metafunc):
    if "tiny_case" in metafunc.fixturenames:
        metafunc.parametrize("tiny_case", [c[1:] for c in TINY], ids=[c[0] for c in TINY])

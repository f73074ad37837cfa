"""Moved to ``symcost.serving.memory``; this name stays so older imports keep working."""
from .serving.memory import *  # noqa: F401,F403
from .serving.memory import check_parallel, leaf_bytes  # noqa: F401

"""Moved to ``symcost.serving.gpus``; this name stays so older imports keep working."""
from .serving.gpus import *  # noqa: F401,F403
from .serving.gpus import CATALOGUE, GPU, gpu  # noqa: F401

"""Components: one module per mechanism; ``towers/`` holds the encoders beside the text stack (vision
and audio towers and their projectors)."""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules(*, base: bool = False) -> list[ModuleType]:
    """Every component module, towers included, imported and ordered by module name (``base``, the
    Component contract, only when asked)."""
    found = [importlib.import_module(info.name) for info in pkgutil.walk_packages(__path__, f"{__name__}.")
             if not info.ispkg and (base or info.name != f"{__name__}.base")]
    return sorted(found, key=lambda m: m.__name__.rsplit(".", 1)[1])

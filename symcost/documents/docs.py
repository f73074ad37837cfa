"""Regenerate the README's generated tables (families, notation) from the code's tables."""
from __future__ import annotations

import re

from .. import architectures
from ..core import notation


def fill(text: str) -> str:
    for key, body in (("families", architectures.families_table()),
                      ("notation", notation.markdown_table())):
        text = re.sub(rf"(<!-- {key}:start -->\n).*?(<!-- {key}:end -->)",
                      lambda m: m.group(1) + body + "\n" + m.group(2), text, flags=re.S)
    return text

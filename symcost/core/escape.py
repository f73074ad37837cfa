"""One escaping function per target, for every config- or spec-derived string that reaches a document.

A user spec (``"model_type": "symcost"``) or a config names models, layer groups, norms and notes
freely, so any of its strings may hold ``\\end{document}``, ``\\directlua{…}``, ``\\catcode``,
Markdown links or ``<script>``. Each string goes through the function of the place it lands in:

- ``tex(s)``: LaTeX running text (every TeX special character escaped, so no string can become a
  control sequence, a group, math or an alignment cell; characters pdflatex cannot print become
  ``[U+XXXX]``);
- ``tex_code(s)``: LaTeX ``\\texttt{…}`` text with break points after ``_ . / ,``;
- ``tex_break(s)``: running text with break points (narrow table columns);
- ``tex_math_text(s)``: text inside math (``\\mathrm{…}``), through ``\\text{…}`` so text-only
  commands stay legal there;
- ``md(s)``: inert GitHub Markdown text (no links, HTML, emphasis, math, table breaks);
- ``md_code(s)``: a Markdown code span holding ``s`` whatever backticks or pipes it contains;
- ``html(s)``: HTML text or a quoted attribute value (``& < > " '`` as entities).

>>> tex(r"\\end{document}")
'\\\\textbackslash{}end\\\\{document\\\\}'
>>> md("<b>[x](y)</b>")
'\\\\<b\\\\>\\\\[x\\\\](y)\\\\</b\\\\>'
>>> md_code("a`b|c")
'`` a`b\\\\|c ``'
>>> html('<a href="x">')
'&lt;a href=&quot;x&quot;&gt;'
"""
from __future__ import annotations

import html as _html
import re
import unicodedata

#: TeX's special characters in text mode, each as the text command that prints it
TEX_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "^": r"\textasciicircum{}", "_": r"\_", "%": r"\%", "~": r"\textasciitilde{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}


def tex(value) -> str:
    """Any string (a config's name, a path, a note) as safe LaTeX text.

    Every TeX special character is escaped, so config text can never become a command
    (``\\input``, ``\\write18``); control characters become spaces; characters pdflatex cannot
    print become ``[U+XXXX]`` (the few the docstrings use map to their LaTeX, ``core.latex``).
    """
    from .latex import _TEX_COMBINING, _TEX_UNICODE  # the Unicode maps live beside the printer that shares them

    out = []
    for ch in str(value):
        if ch in _TEX_COMBINING and out and len(out[-1]) == 1 and out[-1].isalnum():
            out[-1] = _TEX_COMBINING[ch] + "{" + out[-1] + "}"  # the accent over the letter before
        elif ch in TEX_SPECIAL:
            out.append(TEX_SPECIAL[ch])
        elif ch in _TEX_UNICODE:
            out.append(_TEX_UNICODE[ch])
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(" ")
        elif ord(ch) > 126 and len(nfd := unicodedata.normalize("NFD", ch)) == 2 \
                and nfd[0].isascii() and nfd[1] in _TEX_COMBINING:  # an accented letter: ä → \"{a}
            out.append(_TEX_COMBINING[nfd[1]] + "{" + nfd[0] + "}")
        elif ord(ch) > 126:
            out.append(f"[U+{ord(ch):04X}]")
        else:
            out.append(ch)
    return "".join(out)


def tex_code(value) -> str:
    """``tex`` for typewriter text, with line-break points after ``_ . / ,``."""
    return re.sub(r"(\\_|[./,])", r"\1\\allowbreak{}", tex(value))


def tex_break(value) -> str:
    """``tex`` with line-break points after ``_ · / ,`` (for narrow table columns)."""
    return re.sub(r"(\\_|\$\\cdot\$|[/,])", r"\1\\allowbreak{}", tex(value))


def tex_math_text(value) -> str:
    """A string inside math mode: ``\\text{…}`` of its ``tex`` (amsmath)."""
    return r"\text{" + tex(value) + "}"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|$~])")


def md(value) -> str:
    """Any string as inert Markdown text (no links, HTML, emphasis, math, table breaks)."""
    return _MD_SPECIAL.sub(r"\\\1", re.sub(r"[\x00-\x1f\x7f]", " ", str(value)))


def md_code(value) -> str:
    """``value`` as one Markdown code span, safe in a table cell: fenced by one backtick more than
    its longest run of backticks, ``|`` escaped (GFM splits cells before reading code spans)."""
    text = re.sub(r"[\x00-\x1f\x7f]", " ", str(value)).replace("|", r"\|")
    runs = [len(r) for r in re.findall(r"`+", text)]
    if not runs:
        return f"`{text}`"
    fence = "`" * (max(runs) + 1)
    return f"{fence} {text} {fence}"


def html(value) -> str:
    """Any string as HTML text or a quoted attribute value."""
    return _html.escape(re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", " ", str(value)), quote=True)

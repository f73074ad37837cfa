"""LaTeX for symcost formulas: the notation's names, exact numbers, and "numbers plugged in".

``latex(expr)`` prints with the notation's LaTeX names (``H_{kv}``, ``d_{ff}``) and groups big
integers with ``{,}`` (``128{,}256``). ``plugged(expr, values)`` substitutes the config's integers
without evaluating, keeping the order the symbolic form prints in, so a derivation reads
``d H_{q} D_{h}`` → ``4096 \\cdot 32 \\cdot 128`` → ``16{,}777{,}216``. ``split_lines`` breaks a
long sum into lines short enough for the page; ``texescape`` makes any config string safe in text.

>>> from symcost.core.notation import sym
>>> latex(sym.H_kv * sym.D_h)
'D_{h} H_{\\\\mathrm{kv}}'
>>> print(latex_plugged(sym.d * (sym.H_q + 2 * sym.H_kv) * sym.D_h,
...                     {sym.d: 4096, sym.H_q: 32, sym.H_kv: 8, sym.D_h: 128}))
128 \\cdot 4096 \\cdot \\left(2 \\cdot 8 + 32\\right)
>>> print(texescape("a_&%$#{}\\\\~^b"))
a\\_\\&\\%\\$\\#\\{\\}\\textbackslash{}\\textasciitilde{}\\textasciicircum{}b
"""
from __future__ import annotations

import re
from typing import Mapping

import sympy
from sympy.printing.latex import LatexPrinter

# the escaping functions live in core.escape; these names are the ones templates and callers use
from . import unevaluated
from .escape import md as mdescape
from .escape import md_code
from .escape import tex as texescape  # noqa: F401
from .escape import tex_break as texbreak
from .escape import tex_code as ttescape
from .notation import LATEX_NAMES


def group_digits(n: int, sep: str = "{,}") -> str:
    """``1234567`` → ``1{,}234{,}567`` (numbers below 10 000 stay as they are)."""
    text = str(abs(int(n)))
    if len(text) > 4:
        text = f"{int(text):,}".replace(",", sep)
    return ("-" if n < 0 else "") + text


class SymcostLatexPrinter(LatexPrinter):
    """LatexPrinter with the notation's symbol names and digit-grouped integers."""

    def __init__(self, settings=None):
        settings = dict(settings or {})
        settings["symbol_names"] = {**LATEX_NAMES, **settings.get("symbol_names", {})}
        super().__init__(settings)

    def _print_Integer(self, expr):
        return group_digits(int(expr))


def latex(expr, **settings) -> str:
    """LaTeX of ``expr`` in the notation (``settings`` as for ``sympy.latex``)."""
    return SymcostLatexPrinter(settings).doprint(sympy.sympify(expr))


def plugged(expr, values: Mapping) -> sympy.Expr:
    """``expr`` with ``values`` substituted but nothing evaluated, in the order it prints in.

    Print the result with ``latex(..., order="none", mul_symbol="dot")``; ``exact`` gives its value.
    """
    values = {k: sympy.Integer(v) for k, v in values.items()}

    def walk(e):
        if e in values:
            return values[e]
        if not e.args or e.is_Atom:
            return e
        if e.is_Add:
            args = e.as_ordered_terms()
        elif e.is_Mul:
            args = e.as_ordered_factors()
        else:
            args = e.args
        return unevaluated.build(e.func, *(walk(a) for a in args))

    return walk(sympy.sympify(expr))


def latex_plugged(expr, values: Mapping) -> str:
    return latex(plugged(expr, values), order="none", mul_symbol="dot")


def _width(tex: str) -> int:
    """Rough printed width of a LaTeX math string, in characters."""
    t = tex.replace("{,}", ",")
    t = re.sub(r"\\(left|right|bigl|bigr|Bigl|Bigr)", "", t)
    t = re.sub(r"\\(cdot|min|max|quad|qquad|times)", "x", t)
    t = re.sub(r"\\[a-zA-Z]+", "", t)
    t = re.sub(r"[{}_^ ]", "", t)
    return len(t)


def split_lines(expr, printer_kw: Mapping | None = None, width: int = 64) -> list[str]:
    """LaTeX of ``expr`` as one or more lines of at most ~``width`` printed characters.

    A long sum breaks between its terms; ``c·(a + b + …)`` breaks inside the bracket
    (``\\bigl(`` … ``\\bigr)`` work across lines). The continuation lines start with ``+``/``-``.
    """
    kw = dict(printer_kw or {})
    whole = latex(expr, **kw)
    if _width(whole) <= width:
        return [whole]
    prefix, suffix, terms = "", "", None
    if expr.is_Add:
        terms = list(expr.args) if kw.get("order") == "none" else expr.as_ordered_terms()
    elif expr.is_Mul:
        factors = list(expr.args) if kw.get("order") == "none" else expr.as_ordered_factors()
        adds = [f for f in factors if f.is_Add]
        if len(adds) == 1:
            prefix, suffix = _coefficient(factors, adds[0], kw) + r"\bigl(", r"\bigr)"
            terms = list(adds[0].args) if kw.get("order") == "none" else adds[0].as_ordered_terms()
    if not terms:
        return _split_extremum(expr, kw, width) or [whole]
    pieces: list[str | list[str]] = []
    for i, t in enumerate(terms):
        tex = latex(t, **kw)
        sign = "" if not i else ("- " if tex.startswith("-") else "+ ")
        if sign == "- ":
            tex = tex[1:]
        if not prefix and _width(tex) > width and t.is_Mul:  # a long factored group: its own lines
            sub = split_lines(-t if sign == "- " else t, kw, width)
            if len(sub) > 1:
                pieces.append([sign + sub[0], *sub[1:]])
                continue
        pieces.append(sign + tex)
    lines, cur = [], prefix
    for p in pieces:
        if isinstance(p, list):
            if cur.strip() and cur != prefix:
                lines.append(cur)
            lines += p[:-1]
            cur = p[-1]
            continue
        if cur.strip() and cur != prefix and _width(cur + p) > width:
            lines.append(cur)
            cur = ""
        cur = (cur + " " + p).strip() if cur else p
    lines.append(cur + suffix)
    return lines


def _coefficient(factors: list, inner, kw: dict) -> str:
    """LaTeX of the product of ``factors`` but ``inner`` (left as written), then the product sign: what
    precedes a bracket that ``split_lines`` breaks across lines."""
    others = [f for f in factors if f is not inner]
    head = unevaluated.build(sympy.Mul, *others) if len(others) > 1 else others[0]
    return latex(head, **kw) + (r" \cdot " if kw.get("mul_symbol") == "dot" else " ")


def _split_extremum(expr, kw: dict, width: int) -> list[str] | None:
    """``c·max(a, b, …)`` (or a bare ``max``/``min``) too long for a line: its arguments packed onto
    lines, a comma ending each line but the last (``\\bigl(`` … ``\\bigr)`` across them); None for any
    other expression."""
    factors = expr.as_ordered_factors() if expr.is_Mul else [expr]
    ext = [f for f in factors if isinstance(f, (sympy.Max, sympy.Min))]
    if len(ext) != 1 or any(f.is_Add for f in factors):
        return None
    head = _coefficient(factors, ext[0], kw) if len(factors) > 1 else ""
    name = r"\max" if isinstance(ext[0], sympy.Max) else r"\min"
    args = [latex(a, **kw) for a in sorted(ext[0].args, key=sympy.default_sort_key)]
    lines, cur = [], head + name + r"\bigl("
    for i, a in enumerate(args):
        piece = a + ("," if i < len(args) - 1 else r"\bigr)")
        if not cur.endswith("(") and _width(cur + " " + piece) > width:
            lines.append(cur)
            cur = piece
        else:
            cur = (cur + " " + piece) if not cur.endswith("(") else cur + piece
    lines.append(cur)
    return lines if len(lines) > 1 else None


# TeX-special characters: core.escape.TEX_SPECIAL (the escaping functions live in core.escape)
#: non-ASCII characters the docstrings use, in LaTeX that pdflatex knows without extra packages
_TEX_UNICODE = {
    "·": r"$\cdot$", "×": r"$\times$", "−": "-", "–": "--", "—": "---", "→": r"$\to$",
    "←": r"$\leftarrow$", "≤": r"$\le$", "≥": r"$\ge$", "≈": r"$\approx$", "≠": r"$\ne$",
    "Σ": r"$\Sigma$", "∑": r"$\sum$", "ᵀ": r"$^{T}$", "²": r"$^{2}$", "³": r"$^{3}$",
    "½": r"$\frac12$", "…": r"\dots{}", "‘": "`", "’": "'", "“": "``", "”": "''", "α": r"$\alpha$",
    "β": r"$\beta$", "γ": r"$\gamma$", "δ": r"$\delta$", "ε": r"$\epsilon$", "θ": r"$\theta$",
    "λ": r"$\lambda$", "μ": r"$\mu$", "σ": r"$\sigma$", "τ": r"$\tau$", "∈": r"$\in$",
    "√": r"$\surd$", "∞": r"$\infty$", "⌈": r"$\lceil$", "⌉": r"$\rceil$", "⌊": r"$\lfloor$",
    "⌋": r"$\rfloor$", "\u00a0": "~", "§": r"\S{}", "°": r"$^\circ$",
    # operators and signs of the mechanism docstrings (issue 25: none may print as a code point)
    "⊗": r"$\otimes$", "⊙": r"$\odot$", "⊕": r"$\oplus$", "⋅": r"$\cdot$", "∗": r"$\ast$",
    "∂": r"$\partial$", "∇": r"$\nabla$", "÷": r"$\div$", "±": r"$\pm$", "≡": r"$\equiv$",
    "∉": r"$\notin$", "∏": r"$\prod$", "∝": r"$\propto$", "∘": r"$\circ$", "‖": r"$\|$",
    "≪": r"$\ll$", "≫": r"$\gg$", "∼": r"$\sim$", "⇒": r"$\Rightarrow$", "↔": r"$\leftrightarrow$",
    "′": r"$'$", "µ": r"$\mu$", "，": ",", "③": r"(3)", "✓": r"$\checkmark$", "✗": r"$\times$", "│": r"$|$",
    "¹": r"$^{1}$", "⁰": r"$^{0}$", "⁻": r"$^{-}$", "⁺": r"$^{+}$",
    **{chr(0x2074 + i): f"$^{{{4 + i}}}$" for i in range(6)},  # ⁴ … ⁹
    **{chr(0x2080 + i): f"$_{{{i}}}$" for i in range(10)},  # ₀ … ₉
    "₊": r"$_{+}$", "₋": r"$_{-}$",
    # the Greek alphabet, lower and upper case (upper-case letters LaTeX sets as Latin print as such)
    **{ch: rf"$\{name}$" for ch, name in zip(
        "αβγδεζηθικλμνξοπρστυφχψω",
        ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda",
         "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega"])
       if name != "omicron"},
    "ο": "o", "ς": r"$\varsigma$",
    **{ch: (rf"$\{name}$" if len(name) > 1 else name) for ch, name in zip(
        "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩ",
        ["A", "B", "Gamma", "Delta", "E", "Z", "H", "Theta", "I", "K", "Lambda", "M", "N", "Xi", "O", "Pi",
         "P", "Sigma", "T", "Upsilon", "Phi", "X", "Psi", "Omega"])},
}
#: a base letter with a combining accent (``x̂``) → the text accent over it (``\^{x}``)
_TEX_COMBINING = {"\u0302": r"\^", "\u0303": r"\~", "\u0304": r"\=", "\u0307": r"\.", "\u0308": '\\"',
                  "\u0301": "\\'", "\u0300": "\\`"}


def rst_to_tex(text: str) -> str:
    """A docstring paragraph (``literal`` spans, plain text) as LaTeX text, escaped."""
    parts = re.split(r"``(.+?)``", text)
    return "".join(r"\texttt{" + ttescape(p) + "}" if i % 2 else texbreak(p)
                   for i, p in enumerate(parts))


def rst_to_md(text: str) -> str:
    parts = re.split(r"``(.+?)``", text)
    return "".join(md_code(p) if i % 2 else mdescape(p)
                   for i, p in enumerate(parts))

"""Safe parsing of user expressions (plain text or LaTeX) into SymPy, without evaluating code.

User text never reaches ``eval``, ``exec``, ``sympify`` or ``parse_expr``. Plain text is parsed
by Python's ``ast`` (``mode="eval"``, which builds a tree and runs nothing) and the tree is walked
against a whitelist: numbers (decimals become exact ``Rational``), the notation's symbol names
(plus user names from ``--map``), ``+ - * / // ** ^``, parentheses, and a few functions
(``ceil floor min max log sqrt Min Max ceiling Piecewise``). Everything else (attributes, calls
of other names, subscripts, lambdas, strings, keyword arguments) is refused with an ``ExprError``
naming the token and its column. LaTeX (anything with a backslash or braces) goes through a small
tokenizer and recursive-descent parser: ``\\left( \\right)``, ``\\times``, ``\\cdot``, ``\\frac``,
``^{...}``, subscripts joined into names (``H_{kv}`` → ``H_kv``) and multiplication by
juxtaposition (``2 d H_{kv} D_{h}``). Plain text that is not valid Python (``2d^2 + 3dm``) gets
the same juxtaposition grammar. Huge exponents, power towers, expressions that would expand to
huge polynomials and over-long input are refused before any work is done.

``to_text`` writes SymPy ``str()`` syntax that ``parse`` reads back to the same expression.

>>> parse("L*(2*d^2 + 3*d*d_ff)")
L*(2*d**2 + 3*d*d_ff)
>>> parse(r"2 d H_{kv} D_{h} + \\frac{V d}{2}")
2*D_h*H_kv*d + V*d/2
>>> parse("d*m", extra={"m": parse("d_ff")})
d*d_ff
>>> parse("().__class__")
Traceback (most recent call last):
...
symcost.core.exprparse.ExprError: expression: attribute access '.__class__' is not allowed (column 3)
"""
from __future__ import annotations

import ast
import difflib
import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Mapping

import sympy

from .errors import SymcostError
from .notation import ENTRIES, by_name

MAX_LENGTH = 20_000  # characters of input
MAX_EXPONENT = 64  # |exponent| of any power
MAX_DIGITS = 1_000  # digits of any number, literal or computed
MAX_TERMS = 500  # bound on the number of terms the expression expands to
MAX_DEGREE = 16  # bound on the total degree (a cost formula is a product of a few dimensions)
MAX_DEPTH = 200  # nesting of the walked tree


class ExprError(SymcostError):
    """A user expression symcost refuses to read; the message names the token and its column."""

    def __init__(self, message: str, column: int | None = None):
        self.column = column
        where = f" (column {column})" if column is not None else ""
        super().__init__(f"expression: {message}{where}")


def _ceil(x):
    return sympy.ceiling(x)


#: Functions a user may call, by the name they write. Extend by adding rows.
FUNCTIONS: dict[str, tuple[Callable, tuple[int, int | None]]] = {
    "ceil": (_ceil, (1, 1)), "ceiling": (_ceil, (1, 1)), "floor": (sympy.floor, (1, 1)),
    "min": (sympy.Min, (1, None)), "Min": (sympy.Min, (1, None)),
    "max": (sympy.Max, (1, None)), "Max": (sympy.Max, (1, None)),
    "log": (sympy.log, (1, 2)), "sqrt": (sympy.sqrt, (1, 1)),
    "Mod": (sympy.Mod, (2, 2)), "mod": (sympy.Mod, (2, 2)),  # remainders in chunked/compressed caches
}

_UNICODE_OPS = {"×": "*", "·": "*", "⋅": "*", "∗": "*", "÷": "/", "−": "-", "–": "-"}


# -- shared helpers ------------------------------------------------------------------------------
def _known(extra: Mapping[str, sympy.Expr] | None) -> dict[str, sympy.Expr]:
    names = {n: by_name(n) for n in ENTRIES}
    names.update(extra or {})
    return names


class _Names:
    """Name lookup that records unknown names (reported together at the end)."""

    def __init__(self, extra):
        self.known = _known(extra)
        self.unknown: list[tuple[str, int]] = []

    def get(self, name: str, col: int) -> sympy.Expr:
        if name in self.known:
            return self.known[name]
        self.unknown.append((name, col))
        return sympy.Dummy(name)

    def check(self) -> None:
        if not self.unknown:
            return
        parts = []
        for name, col in self.unknown:
            close = difflib.get_close_matches(name, list(self.known), n=1)
            hint = f", did you mean {close[0]}?" if close else ""
            parts.append(f"'{name}' at column {col}{hint}")
        raise ExprError("unknown symbol(s) " + "; ".join(parts)
                        + " — write them in the notation or map them with --map NAME=EXPR")


def _check_number(x: sympy.Expr, col: int | None) -> sympy.Expr:
    if x.is_Rational and max(abs(x.p), x.q).bit_length() > MAX_DIGITS * 3.33:
        raise ExprError(f"a number with more than {MAX_DIGITS} digits", col)
    return x


def _power(base: sympy.Expr, exp: sympy.Expr, col: int | None) -> sympy.Expr:
    if not exp.is_Rational:
        raise ExprError(f"the exponent must be a number, got {exp}", col)
    if abs(exp) > MAX_EXPONENT:
        raise ExprError(f"exponent {exp} is too large (at most {MAX_EXPONENT})", col)
    if base.is_Rational and base != 0:
        digits = abs(float(exp)) * (math.log10(abs(base.p)) + math.log10(base.q))
        if digits > MAX_DIGITS:
            raise ExprError(f"{base}**{exp} has more than {MAX_DIGITS} digits", col)
    if base == 0 and exp < 0:
        raise ExprError("division by zero", col)
    result = base ** exp
    if isinstance(result, sympy.Pow) and result.exp.is_Number and abs(result.exp) > MAX_EXPONENT:
        raise ExprError(f"power tower: exponent {result.exp} is too large (at most {MAX_EXPONENT})", col)
    return _check_number(result, col)


def _divide(a: sympy.Expr, b: sympy.Expr, col: int | None) -> sympy.Expr:
    if b == 0:
        raise ExprError("division by zero", col)
    return _check_number(a / b, col)


def _call(name: str, args: list[sympy.Expr], col: int | None) -> sympy.Expr:
    fn, (lo, hi) = FUNCTIONS[name]
    if len(args) < lo or (hi is not None and len(args) > hi):
        want = str(lo) if lo == hi else f"{lo} or more" if hi is None else f"{lo} to {hi}"
        raise ExprError(f"{name}() takes {want} argument(s), got {len(args)}", col)
    try:
        return fn(*args)
    except (TypeError, ValueError, ArithmeticError) as e:
        raise ExprError(f"{name}(): {e}", col) from None


def _expanded_terms(e: sympy.Basic) -> int:
    """An upper bound on the number of terms ``expand(e)`` would produce."""
    if e.is_Atom:
        return 1
    if e.is_Add:
        return sum(_expanded_terms(a) for a in e.args)
    if e.is_Mul:
        n = 1
        for a in e.args:
            n *= _expanded_terms(a)
            if n > MAX_TERMS:
                return n
        return n
    if e.is_Pow and e.exp.is_Integer and e.exp > 0:
        s = _expanded_terms(e.base)
        return math.comb(s + int(e.exp) - 1, int(e.exp)) if s < MAX_TERMS else s
    return max((_expanded_terms(a) for a in e.args), default=1)


def _degree(e: sympy.Basic) -> int:
    """An upper bound on the total degree of ``e`` in its symbols, denominators counted as well
    (``d**2/T`` has degree 3): what ``expand`` and every later comparison must multiply out."""
    if e.is_Symbol:
        return 1
    if e.is_Atom:
        return 0
    if e.is_Add:
        return max(_degree(a) for a in e.args)
    if e.is_Mul:
        return sum(_degree(a) for a in e.args)
    if e.is_Pow and e.exp.is_Rational:
        return math.ceil(abs(e.exp) * _degree(e.base))
    return max((_degree(a) for a in e.args), default=0)


def bounded(expr: sympy.Expr, what: str = "the expression") -> sympy.Expr:
    """``expr`` when expanding it is cheap: at most ``MAX_DEGREE`` in total degree and at most
    ``MAX_TERMS`` terms once expanded (both bounds read off the tree, nothing expanded); else an
    ``ExprError`` naming the bound, so no command spends more than a moment on a user's input."""
    deg = _degree(expr)
    if deg > MAX_DEGREE:
        raise ExprError(f"{what} has total degree {deg} (at most {MAX_DEGREE}: a cost formula is a product "
                        "of a few dimensions)")
    if _expanded_terms(expr) > MAX_TERMS:
        raise ExprError(f"{what} would expand to more than {MAX_TERMS} terms")
    return expr


def _finish(expr: sympy.Expr, names: _Names) -> sympy.Expr:
    names.check()
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise ExprError("division by zero")
    bounded(expr)
    if _expanded_terms(expr) > MAX_TERMS:
        raise ExprError(f"the expression would expand to more than {MAX_TERMS} terms")
    return expr


def _normalise(text: str) -> tuple[str, list[int]]:
    """ASCII text plus the 1-based original column of every character; ``^`` becomes ``**``."""
    out, cols = [], []
    for i, ch in enumerate(text):
        ch = _UNICODE_OPS.get(ch, ch)
        if ch in "\t\r\n":
            ch = " "
        if not (" " <= ch <= "~"):
            raise ExprError(f"character {ch!r} is not allowed", i + 1)
        if ch == "^":
            out.append("**")
            cols += [i + 1, i + 1]
        else:
            out.append(ch)
            cols.append(i + 1)
    return "".join(out), cols


# -- plain text: Python's ast, walked with a whitelist ---------------------------------------------
_DESCRIBE = {
    ast.Attribute: "attribute access", ast.Subscript: "subscript", ast.Lambda: "lambda",
    ast.ListComp: "comprehension", ast.SetComp: "comprehension", ast.DictComp: "comprehension",
    ast.GeneratorExp: "generator", ast.Tuple: "tuple", ast.List: "list", ast.Dict: "dict",
    ast.Set: "set", ast.JoinedStr: "f-string", ast.NamedExpr: "assignment", ast.IfExp: "if-else",
    ast.BoolOp: "and/or", ast.Compare: "comparison", ast.Starred: "starred argument",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield", ast.Slice: "slice",
}
_OPS = {ast.MatMult: "@", ast.Mod: "%", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
        ast.LShift: "<<", ast.RShift: ">>", ast.Not: "not", ast.Invert: "~"}
_CHAIN = {ast.Add: "add", ast.Sub: "add", ast.Mult: "mul", ast.Div: "mul"}
_RELATIONS = {ast.Lt: sympy.Lt, ast.LtE: sympy.Le, ast.Gt: sympy.Gt, ast.GtE: sympy.Ge,
              ast.Eq: sympy.Eq, ast.NotEq: sympy.Ne}


class _AstWalker:
    def __init__(self, src: str, cols: list[int], names: _Names):
        self.src, self.cols, self.names = src, cols, names

    def col(self, node) -> int:
        off = getattr(node, "col_offset", 0)
        return self.cols[min(off, len(self.cols) - 1)] if self.cols else 1

    def refuse(self, node, what: str | None = None):
        if isinstance(node, ast.Attribute) and what is None:
            col = self.cols[max(0, min(node.end_col_offset, len(self.cols)) - len(node.attr) - 1)]
            raise ExprError(f"attribute access '.{node.attr}' is not allowed", col)
        seg = ast.get_source_segment(self.src, node) or ""
        seg = seg if len(seg) <= 30 else seg[:27] + "..."
        what = what or _DESCRIBE.get(type(node), type(node).__name__)
        raise ExprError(f"{what} {seg!r} is not allowed", self.col(node))

    def number(self, node: ast.Constant) -> sympy.Expr:
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.refuse(node, "string" if isinstance(v, (str, bytes)) else "constant")
        if isinstance(v, int):
            if v.bit_length() > MAX_DIGITS * 3.33:
                raise ExprError(f"a number with more than {MAX_DIGITS} digits", self.col(node))
            return sympy.Integer(v)
        seg = (ast.get_source_segment(self.src, node) or "").replace("_", "")
        if not re.fullmatch(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?", seg):
            self.refuse(node, "number")
        return _check_number(sympy.Rational(Fraction(seg)), self.col(node))

    def walk(self, node, depth: int = 0) -> sympy.Expr:
        if depth > MAX_DEPTH:
            raise ExprError("the expression is nested too deeply", self.col(node))
        if isinstance(node, ast.Constant):
            return self.number(node)
        if isinstance(node, ast.Name):
            return self.names.get(node.id, self.col(node))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return -self.walk(node.operand, depth + 1)
            if isinstance(node.op, ast.UAdd):
                return self.walk(node.operand, depth + 1)
            self.refuse(node, f"operator '{_OPS.get(type(node.op), '?')}' in")
        if isinstance(node, ast.BinOp):
            kind = _CHAIN.get(type(node.op))
            if kind:
                return self.chain(node, kind, depth)
            if isinstance(node.op, ast.Pow):
                return _power(self.walk(node.left, depth + 1), self.walk(node.right, depth + 1),
                              self.col(node.right))
            if isinstance(node.op, ast.FloorDiv):
                return sympy.floor(_divide(self.walk(node.left, depth + 1),
                                           self.walk(node.right, depth + 1), self.col(node.right)))
            self.refuse(node, f"operator '{_OPS.get(type(node.op), '?')}' in")
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        self.refuse(node)

    def chain(self, node: ast.BinOp, kind: str, depth: int) -> sympy.Expr:
        """``a + b - c`` or ``a * b / c`` walked iteratively along the left spine."""
        rights = []
        while isinstance(node, ast.BinOp) and _CHAIN.get(type(node.op)) == kind:
            rights.append((node.op, node.right))
            node = node.left
        acc = self.walk(node, depth + 1)
        items = [acc]
        for op, right in reversed(rights):
            value = self.walk(right, depth + 1)
            if isinstance(op, ast.Sub):
                value = -value
            elif isinstance(op, ast.Div):
                value = _divide(sympy.Integer(1), value, self.col(right))
            items.append(value)
        out = sympy.Add(*items) if kind == "add" else sympy.Mul(*items)
        return _check_number(out, self.col(node))

    def call(self, node: ast.Call, depth: int) -> sympy.Expr:
        func = node.func
        if not isinstance(func, ast.Name):
            self.walk(func, depth + 1)  # refuses attributes, subscripts, ... with their own name
            self.refuse(node, "call")
        if func.id in self.names.known and len(node.args) == 1 and not node.keywords:
            # L(2*d + ...) written for L*(2*d + ...): a notation symbol is never a function
            return self.names.known[func.id] * self.walk(node.args[0], depth + 1)
        if func.id not in FUNCTIONS and func.id != "Piecewise":
            raise ExprError(f"function '{func.id}' is not allowed (allowed: "
                            f"{', '.join(sorted(FUNCTIONS))}, Piecewise)", self.col(node))
        if node.keywords:
            self.refuse(node.keywords[0].value, f"keyword argument '{node.keywords[0].arg}='")
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.refuse(a)
        if node.func.id == "Piecewise":
            return self.piecewise(node, depth)
        return _call(node.func.id, [self.walk(a, depth + 1) for a in node.args], self.col(node))

    def piecewise(self, node: ast.Call, depth: int) -> sympy.Expr:
        pieces = []
        for a in node.args:
            if not isinstance(a, ast.Tuple) or len(a.elts) != 2:
                self.refuse(a, "Piecewise argument (expected (expr, condition))")
            pieces.append((self.walk(a.elts[0], depth + 1), self.condition(a.elts[1], depth + 1)))
        if not pieces:
            raise ExprError("Piecewise() needs at least one (expr, condition)", self.col(node))
        try:
            return sympy.Piecewise(*pieces)
        except (TypeError, ValueError) as e:
            raise ExprError(f"Piecewise(): {e}", self.col(node)) from None

    def condition(self, node, depth: int):
        if depth > MAX_DEPTH:
            raise ExprError("the expression is nested too deeply", self.col(node))
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return sympy.true if node.value else sympy.false
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _RELATIONS:
            rel = _RELATIONS[type(node.ops[0])]
            return rel(self.walk(node.left, depth + 1), self.walk(node.comparators[0], depth + 1))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            fn = sympy.And if isinstance(node.op, ast.BitAnd) else sympy.Or
            return fn(self.condition(node.left, depth + 1), self.condition(node.right, depth + 1))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return sympy.Not(self.condition(node.operand, depth + 1))
        self.refuse(node, "condition")


def _parse_plain(text: str, names: _Names) -> sympy.Expr:
    src, cols = _normalise(text)
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as e:
        off = (e.offset or 1) - 1
        col = cols[min(off, len(cols) - 1)] if cols else 1
        msg = (e.msg or "invalid syntax").split(" (")[0]
        raise _Syntax(msg, col) from None
    except (RecursionError, MemoryError, ValueError):
        raise ExprError("the expression is nested too deeply") from None
    return _AstWalker(src, cols, names).walk(tree.body)


class _Syntax(ExprError):
    """Not Python syntax: the juxtaposition grammar gets a try before this is reported."""


# -- LaTeX (and juxtaposition) ---------------------------------------------------------------------
@dataclass
class _Tok:
    kind: str  # num, name, op, cmd, end
    value: str
    col: int


_TIMES = {"times", "cdot", "ast", "cdotp"}
_SPACES = {"quad", "qquad", "left", "right", "displaystyle", "textstyle", "big", "Big", "bigl",
           "bigr", "Bigl", "Bigr", "biggl", "biggr"}
_DOTS = {"dots", "cdots", "ldots", "dotsb", "dotsc", "dotsm", "vdots", "ddots"}
_WRAPPERS = {"mathrm", "text", "mathit", "operatorname", "textrm", "textit", "mathbf", "mathsf", "rm"}
_CMDS = {"frac", "dfrac", "tfrac", "sqrt", "min", "max", "log", "ln", "lceil", "rceil", "lfloor",
         "rfloor", "div"}


def _digit(ch: str) -> bool:
    """An ASCII digit. ``str.isdigit`` is also true for ``²``, ``③``, ..., which no number pattern
    matches (the lexer would then loop on an empty match)."""
    return len(ch) == 1 and "0" <= ch <= "9"


class _Lexer:
    def __init__(self, text: str, latex: bool, known: Mapping[str, sympy.Expr]):
        self.s, self.latex, self.known = text, latex, known
        self.i, self.toks = 0, []

    def err(self, msg: str, i: int | None = None):
        raise ExprError(msg, (self.i if i is None else i) + 1)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def braced_word(self) -> str:
        """``{ff}`` after ``\\mathrm``: letters, digits and underscores only."""
        m = re.compile(r"\s*\{\s*([A-Za-z0-9_]+)\s*\}").match(self.s, self.i)
        if not m:
            self.err("expected {letters} here")
        self.i = m.end()
        return m.group(1)

    def command(self) -> str:
        m = re.compile(r"\\([A-Za-z]+|.?)").match(self.s, self.i)
        self.i = m.end()
        return m.group(1)

    def subscript(self) -> str:
        start = self.i
        self.i += 1  # the underscore
        while self.peek() == " ":
            self.i += 1
        if self.peek() == "{":
            self.i += 1
            parts = []
            while True:
                while self.peek() == " ":
                    self.i += 1
                ch = self.peek()
                if not ch:
                    self.err("missing '}' after the subscript", start)
                if ch == "}":
                    self.i += 1
                    break
                if ch == "\\":
                    if self.command() not in _WRAPPERS:
                        self.err("only letters and digits can go in a subscript", start)
                    parts.append(self.braced_word())
                elif ch.isalnum() and ch.isascii():
                    parts.append(ch)
                    self.i += 1
                else:
                    self.err("only letters and digits can go in a subscript", start)
            word = "".join(parts)
        elif self.latex:
            word = self.peek() if self.peek().isascii() and self.peek().isalnum() else ""
            self.i += len(word)
        else:
            m = re.compile(r"[A-Za-z0-9]+").match(self.s, self.i)
            word = m.group(0) if m else ""
            self.i = m.end() if m else self.i
        if not word:
            self.err("empty subscript", start)
        return word

    def letters(self):
        start = self.i
        m = re.compile(r"[A-Za-z]+").match(self.s, self.i)
        run = m.group(0)
        self.i = m.end()
        sub = self.subscript() if self.peek() == "_" else None
        if sub is None and len(run) > 1 and run in self.known:
            self.toks.append(_Tok("name", run, start + 1))
            return
        for j, ch in enumerate(run[:-1]):
            self.toks.append(_Tok("name", ch, start + j + 1))
        last = run[-1] if sub is None else f"{run[-1]}_{sub}"
        self.toks.append(_Tok("name", last, start + len(run)))

    def run(self) -> list[_Tok]:
        s = self.s
        while self.i < len(s):
            ch, start = s[self.i], self.i
            if ch == " ":
                self.i += 1
            elif _digit(ch) or (ch == "." and _digit(self.peek(1))):
                m = re.compile(r"[0-9]*\.?[0-9]*").match(s, self.i)
                self.i = m.end()
                if self.peek() == ".":
                    self.err("malformed number", start)
                self.toks.append(_Tok("num", m.group(0), start + 1))
            elif ch.isalpha() and ch.isascii():
                self.letters()
            elif ch == "^" or (ch == "*" and self.peek(1) == "*"):
                self.i += 1 if ch == "^" else 2
                self.toks.append(_Tok("op", "^", start + 1))
                while self.peek() == " ":
                    self.i += 1
                if self.latex and _digit(self.peek()):  # LaTeX: d^23 is d² · 3
                    self.toks.append(_Tok("num", self.peek(), self.i + 1))
                    self.i += 1
                elif self.latex and self.peek().isalpha() and self.peek().isascii():
                    self.toks.append(_Tok("name", self.peek(), self.i + 1))
                    self.i += 1
            elif ch in "+-*/(),[]{}":
                self.i += 1
                value = {"[": "(", "]": ")"}.get(ch, ch)
                if value in "{}" and not self.latex:
                    self.err("braces are LaTeX", start)
                self.toks.append(_Tok("op", value, start + 1))
            elif ch == "\\" and self.latex:
                name = self.command()
                if name in _TIMES:
                    self.toks.append(_Tok("op", "*", start + 1))
                elif name == "div":
                    self.toks.append(_Tok("op", "/", start + 1))
                elif name in (",", ";", ":", "!", " ") or name in _SPACES:
                    if name in ("left", "right") and self.peek() == ".":
                        self.i += 1
                elif name in ("{", "}"):
                    self.toks.append(_Tok("op", "(" if name == "{" else ")", start + 1))
                elif name in _DOTS:
                    self.err(f"'\\{name}' leaves terms out; write every term of the expression", start)
                elif name in _WRAPPERS:
                    word = self.braced_word()
                    sub = self.subscript() if self.peek() == "_" else None
                    self.toks.append(_Tok("name", word if sub is None else f"{word}_{sub}", start + 1))
                elif name in _CMDS:
                    self.toks.append(_Tok("cmd", name, start + 1))
                else:
                    self.err(f"LaTeX command '\\{name}' is not supported", start)
            elif ch == "=":
                self.err("'=' is not allowed; give only the right-hand side", start)
            else:
                self.err(f"character {ch!r} is not allowed", start)
        self.toks.append(_Tok("end", "", len(s) + 1))
        return self.toks


class _Parser:
    """expr := term (± term)*; term := factor ((*|/|juxtaposition) factor)*; factor := ±factor | power."""

    def __init__(self, toks: list[_Tok], names: _Names, latex: bool):
        self.toks, self.names, self.latex, self.i, self.depth = toks, names, latex, 0, 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, value: str) -> _Tok:
        if self.tok.value != value or self.tok.kind not in ("op", "cmd"):
            self.unexpected(f"expected '{value}'")
        return self.take()

    def unexpected(self, why: str = ""):
        t = self.tok
        what = "end of input" if t.kind == "end" else f"'{t.value}'"
        raise ExprError(f"unexpected {what}" + (f" ({why})" if why else ""), t.col)

    def parse(self) -> sympy.Expr:
        e = self.expr()
        if self.tok.kind != "end":
            self.unexpected()
        return e

    def enter(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError("the expression is nested too deeply", self.tok.col)

    def expr(self) -> sympy.Expr:
        self.enter()
        items = [self.term()]
        while self.tok.kind == "op" and self.tok.value in "+-":
            sign = self.take().value
            t = self.term()
            items.append(-t if sign == "-" else t)
        self.depth -= 1
        return _check_number(sympy.Add(*items), self.tok.col)

    def starts_atom(self) -> bool:
        t = self.tok
        return (t.kind in ("num", "name") or (t.kind == "op" and t.value in "({")
                or (t.kind == "cmd" and t.value not in ("rceil", "rfloor", "div")))

    def term(self) -> sympy.Expr:
        items = [self.factor()]
        while True:
            t = self.tok
            if t.kind == "op" and t.value in "*/":
                self.take()
                f = self.factor()
                items.append(_divide(sympy.Integer(1), f, t.col) if t.value == "/" else f)
            elif self.starts_atom():
                items.append(self.factor())
            else:
                return _check_number(sympy.Mul(*items), t.col)

    def factor(self) -> sympy.Expr:
        t = self.tok
        if t.kind == "op" and t.value in "+-":
            self.take()
            self.enter()
            f = self.factor()
            self.depth -= 1
            return -f if t.value == "-" else f
        base = self.atom()
        if self.tok.kind == "op" and self.tok.value == "^":
            col = self.take().col
            self.enter()
            exp = self.atom() if self.latex else self.factor()
            self.depth -= 1
            return _power(base, exp, col)
        return base

    def group(self) -> sympy.Expr:
        """``{expr}`` (LaTeX argument)."""
        self.expect("{")
        e = self.expr()
        self.expect("}")
        return e

    def args(self) -> list[sympy.Expr]:
        close = {"(": ")", "{": "}"}.get(self.tok.value)
        if self.tok.kind != "op" or close is None:
            self.unexpected("expected '('")
        self.take()
        out = [self.expr()]
        while self.tok.kind == "op" and self.tok.value == ",":
            self.take()
            out.append(self.expr())
        self.expect(close)
        return out

    def atom(self) -> sympy.Expr:
        t = self.tok
        if t.kind == "num":
            self.take()
            if len(t.value.replace(".", "")) > MAX_DIGITS or t.value == ".":
                raise ExprError("malformed or over-long number", t.col)
            return sympy.Rational(Fraction(t.value))
        if t.kind == "name":
            self.take()
            return self.names.get(t.value, t.col)
        if t.kind == "op" and t.value in "({":
            self.take()
            self.enter()
            e = self.expr()
            self.depth -= 1
            self.expect(")" if t.value == "(" else "}")
            return e
        if t.kind == "cmd":
            self.take()
            self.enter()
            try:
                return self.command(t)
            finally:
                self.depth -= 1
        self.unexpected()

    def command(self, t: _Tok) -> sympy.Expr:
        name = t.value
        if name in ("frac", "dfrac", "tfrac"):
            if not (self.tok.kind == "op" and self.tok.value == "{"):
                self.unexpected(f"write \\{name}{{a}}{{b}} with braces")
            num = self.group()
            return _divide(num, self.group(), t.col)
        if name == "sqrt":
            return _call("sqrt", [self.atom()], t.col)
        if name in ("min", "max"):
            return _call(name, self.args(), t.col)
        if name in ("log", "ln"):
            return _call("log", [self.atom()], t.col)
        if name in ("lceil", "lfloor"):
            e = self.expr()
            self.expect("rceil" if name == "lceil" else "rfloor")
            return _call("ceil" if name == "lceil" else "floor", [e], t.col)
        self.unexpected()


def _parse_math(text: str, names: _Names, latex: bool) -> sympy.Expr:
    chars = "".join(" " if c in "\t\r\n" else _UNICODE_OPS.get(c, c) for c in text)
    toks = _Lexer(chars, latex, names.known).run()
    return _Parser(toks, names, latex).parse()


# -- the public API --------------------------------------------------------------------------------
def is_latex(text: str) -> bool:
    """LaTeX when the text has a backslash or braces."""
    return "\\" in text or "{" in text or "}" in text


def parse(text: str, *, extra: Mapping[str, sympy.Expr] | None = None,
          mode: str = "auto") -> sympy.Expr:
    """The SymPy expression for user ``text`` (``mode``: auto | text | latex).

    ``extra`` maps the user's own names to expressions in the notation (``--map``); it overrides
    notation names of the same spelling. Raises ``ExprError`` and nothing else.
    """
    if not isinstance(text, str):
        raise ExprError(f"expected text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"the expression is longer than {MAX_LENGTH} characters")
    if not text.strip():
        raise ExprError("the expression is empty")
    latex = mode == "latex" or (mode == "auto" and is_latex(text))
    try:
        if latex:
            names = _Names(extra)
            return _finish(_parse_math(text, names, latex=True), names)
        names = _Names(extra)
        try:
            return _finish(_parse_plain(text, names), names)
        except _Syntax as syntax:
            if mode == "text":
                raise ExprError(str(syntax).removeprefix("expression: ").rsplit(" (column", 1)[0],
                                syntax.column) from None
            names = _Names(extra)
            # 2d^2 + 3dm: the juxtaposition grammar, as people write it; its errors name the token
            return _finish(_parse_math(text, names, latex=False), names)
    except ExprError:
        raise
    except Exception as e:  # a guard: nothing but ExprError leaves this function
        raise ExprError(f"could not read the expression ({type(e).__name__})") from None


def parse_latex(text: str, *, extra: Mapping[str, sympy.Expr] | None = None) -> sympy.Expr:
    """``parse`` in LaTeX mode (``\\frac``, ``H_{kv}``, juxtaposition)."""
    return parse(text, extra=extra, mode="latex")


def parse_map(items: list[str] | tuple[str, ...]) -> dict[str, sympy.Expr]:
    """``["m=d_ff", "c=2", "d_kv=H_kv*D_h"]`` (``--map``) → ``{name: expression}``.

    >>> parse_map(["m=d_ff", "c=2"])
    {'m': d_ff, 'c': 2}
    """
    out: dict[str, sympy.Expr] = {}
    for item in items:
        name, sep, rhs = item.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise ExprError(f"--map expects NAME=EXPR with NAME an identifier, got {item!r}")
        if name in FUNCTIONS or name == "Piecewise":
            raise ExprError(f"--map: {name!r} is a function name")
        out[name] = parse(rhs)
    return out


@functools.lru_cache(maxsize=4096)
def to_text(expr: sympy.Expr) -> str:
    """SymPy ``str()`` syntax in the notation's names; ``parse`` reads it back unchanged. Memoised:
    expressions are immutable, and a command prints the same large ones more than once (a derivative in
    its summary and its regimes), each print sorting every sum's terms again.

    >>> from symcost.core.notation import sym
    >>> e = sympy.Min(sym.T, sym.W - 1) * sym.H_kv / 2
    >>> parse(to_text(e)) == e
    True
    """
    return sympy.sstr(expr)

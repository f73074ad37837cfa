"""An extraction of the seeds' numeric claims, independent of the audit's data file.

Rules (each one is a line of code below):

1. Sections. 000/001: a line ``N.N[.N] title`` (short, the first number <= 12) opens section
   ``§N.N[.N]``; a line ``CH N ...`` opens ``§N``. 002: a line ``N title`` opens ``§N``. 003: a
   chapter ``一、``..``十二、`` opens ``§N``; inside it a short line ``N. title`` opens ``§C.N``
   (in chapter 十二 ``§12 QN``). 004: a line ``#一、`` opens ``§N``.
2. Excluded lines: code listings (indented lines, ``import``/``from``/``def``/``class``/``@``/
   ``return``/``print(``/``if __name__`` lines, ``NAME = ...`` assignments, ``# `` comment lines, the
   ``\"\"\"`` docstring blocks, JSON lines ``"field": value`` and ``{``/``}``) and config-field tables
   (a line holding a config.json field name -- ``hidden_size``, ``num_*``, ``*_size``, ``*_dim``,
   ``*_rank``, ``*_heads``, ``*_experts``, ... -- written next to its value: ``hidden_size8192``,
   ``head_dim = 128``, ``"vocab_size": 128256``).
3. LaTeX is read as text: ``\\text{B}`` is ``B``, ``{,}`` is ``,``, ``\\times`` is ``×``; ``$``,
   ``\\(``, ``\\)``, ``\\mathbf`` and ``\\,`` are dropped.
4. A claim is a number (``1,234``, ``12.5``) directly followed (optionally one space) by a unit or
   magnitude word: FLOPs, GFLOPs, TFLOPs, MFLOPs, GiB, MiB, KiB, TiB, GB, MB, KB, TB, B, M, K, G,
   T (a single letter only when no letter follows: ``8 KV`` is not 8 K), 万, 亿, %, and ×/x as a
   ratio (not followed by a number or a letter: ``4096 × 14336`` is a product). A number glued to
   letters before it is part of a name (``H100``) unless those letters are the unit of the number
   before it (a flattened table row ``~143.7M49%`` holds 143.7M and 49%).
5. Not claims: a context or token count (the number after ``T=``/``T =``/``S=``/``T_total=``/``@``, or followed by
   ``上下文``, ``context``, ``token``, ``tokens``, ``个 key``, ``时`` "at", ``KV``, ``序列``, ``和 128K 上下文``; or in parentheses after
   ``上下文``: ``短上下文（4K）``), a hardware figure (followed by ``/card``,
   ``TFLOPS``, or preceded by ``H100``/``H200``/``A100``), and a model's own name (``Llama-3-8B``,
   ``550B`` right after a hyphen, ``-A55B``).
6. Also not claims: an exponent (the ``9`` of ``2.15 × 10^9 FLOPs``), a chapter number (``CH 3 FLOPs``),
   a factor of a product (a number right after ``×``/``·``: ``64 × 1M × 256 = 16.4G`` claims 16.4G), a
   dimension inside a tensor shape (``[1, 64, 1M, 128]``),
   the ``1`` of a unit definition (``1 GiB = ...``, ``1B 参数 = 2 GiB``: the right side is the claim), and
   a bare size equal to the size part of a model name the same seed writes with a hyphen
   (``70B`` where the seed names ``Llama-3-70B``): it names the model.
7. A claim is the pair (section, value as written without thousands separators); repeats of the
   same value in a section count once.

Issue 25 widens what a claim is: any number the seeds state about a cost, with or without a unit.
``all_claims(seed)`` yields (section, line, value, kind) for every claim of rules 1-6 (kind "unit")
and, on the same lines (rules 2, 3, 5 and 6 apply), for:

8. a ratio written with 倍 (``约 28 倍``, ``快 30 倍``: the number right before 倍) — kind "ratio";
9. a fraction ``a/b`` stated as a size (after 约, ≈, ~, 为, 是, 仅为, 占 or before 倍; not an operand:
   not followed by ``=``, ``≈``, ``×``, ``·``: ``≈ 1986 / 174 ≈ 11.4×`` claims the 11.4) — value ``a/b``,
   kind "fraction";
10. a change ``a → b`` between two numbers (``batch 从 1→4``): the value it goes to, ``b`` — kind
    "arrow";
11. a count of collectives, in digits or Chinese numerals (``两次 all-reduce``, ``4 次 all-to-all``)
    — kind "count";
12. the result of an arithmetic chain without a unit: the number after the last ``=`` or ``≈`` of an
    expression that holds an operator (``4 × (1280 × 16 × 80) = 6,553,600``; not ``d = 4096``, a
    definition), not itself followed by an operator, on a line that speaks of a cost (``COST``:
    parameters, FLOPs, memory, cache, bytes, elements, communication; shape arithmetic such as
    ``32 × 128 = 4096`` for a head split is not a cost) — kind "result".

A claim of rules 8-12 is the triple (seed, line, value): ``coverage`` in tests/test_audit.py matches
a row of the audit by where its quote stands (``line`` in symcost/data/seed_claims.json), never by
its value alone.
"""
from __future__ import annotations

import re
from pathlib import Path

SEEDS = Path("/work/shared/seeds")
CN = {c: i for i, c in enumerate("一二三四五六七八九十", 1)}


def cn_number(s: str) -> int:
    if s == "十":
        return 10
    if s.startswith("十"):
        return 10 + CN[s[1]]
    if len(s) == 2 and s[1] == "十":
        return CN[s[0]] * 10
    return CN[s[0]]


CODE = re.compile(r"^(\s{2,}\S|import |from \S+ import|def |class |@|return |print\(|if __name__|[A-Z_0-9]+ = |"
                  r"# |\"\"\"|\s*[{}\[\]],?$|\s*\"[a-z_]+\":)")
FIELD = re.compile(r"\b(?:hidden_size|intermediate_size|vocab_size|head_dim|num_[a-z_]+|[a-z_]+_(?:size|dim|rank|heads|"
                   r"experts|layers|window|embeddings|theta|eps|ratio|tok|group|groups|replace|freq))"
                   r"\"?\s*(?:=|:)?\s*\d")
UNITS = (r"GFLOPs|TFLOPs|MFLOPs|FLOPs|GiB|MiB|KiB|TiB|GB|MB|KB|TB|万|亿|%|(?:B|M|K|G|T)(?![A-Za-z])"
         r"|[×x](?!\s*[\w(\\])")
NUM = re.compile(r"(?<![\d.,_])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?(" + UNITS + ")")


def _latex(line: str) -> str:
    line = re.sub(r"\\(?:text|mathbf|mathrm|textbf)\{([^{}]*)\}", r"\1", line)
    line = line.replace("{,}", ",").replace("\\times", "×").replace("\\approx", "≈").replace("\\,", "")
    return re.sub(r"\$|\\\(|\\\)", "", line)


def _heading(seed: str, line: str, chapter: list) -> str | None:
    s = line.strip()
    if seed in ("000", "001"):
        m = re.match(r"^(\d{1,2}(?:\.\d+){1,3}) \S", s)
        if m and len(s) < 60 and int(m.group(1).split(".")[0]) <= 12:
            return "§" + m.group(1)
        m = re.match(r"^CH (\d+)\b", s)
        return "§" + m.group(1) if m and "&" not in s and "-" not in s.split()[1] else None
    if seed == "002":
        m = re.match(r"^(\d) \S", s)
        return "§" + m.group(1) if m and len(s) < 30 else None
    if seed == "003":
        m = re.match(r"^([一二三四五六七八九十]+)、", s)
        if m:
            chapter[0] = cn_number(m.group(1))
            return f"§{chapter[0]}"
        m = re.match(r"^(\d+)\. \S", s)
        if m and chapter[0] and (len(s) < 40 or chapter[0] == 12):
            return f"§12 Q{m.group(1)}" if chapter[0] == 12 else f"§{chapter[0]}.{m.group(1)}"
        return None
    m = re.match(r"^#([一二三四五六七八九十]+)、", s)
    return f"§{cn_number(m.group(1))}" if m else None


def _excluded(line: str, in_doc: bool) -> bool:
    return in_doc or bool(CODE.match(line)) or bool(FIELD.search(line))


def claims(seed: str) -> dict[str, set[str]]:
    """Section -> the values (as written, without thousands separators) of the seed's claims."""
    out: dict[str, set[str]] = {}
    for section, _, _, value in matches(seed):
        out.setdefault(section, set()).add(value)
    return out


def matches(seed: str):
    """Every claim with its place: (section, line number, the line as written, value)."""
    path = next(SEEDS.glob(f"{seed}_*.txt"))
    section, chapter, in_doc = "§0", [0], False
    text = path.read_text(encoding="utf-8")
    names = set(re.findall(r"[A-Za-z][\w.]*-(?:[\w.]+-)*?(\d+(?:\.\d+)?)B\b", text))  # Llama-3-70B -> 70
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.strip().startswith('"""'):
            in_doc = not in_doc if raw.strip().count('"""') == 1 else in_doc
            continue
        h = _heading(seed, raw, chapter)
        if h:
            section = h
            continue
        if _excluded(raw, in_doc):
            continue
        line = _latex(raw)
        for m in NUM.finditer(line):
            before, after = line[:m.start()], line[m.end():]
            if re.search(r"[A-Za-z]$", before) and not re.search(r"\d(?:B|M|K|G|T|iB|FLOPs)$", before):
                continue  # H100, W1, fp8: part of a name, unless the letters are the unit of a number before it
            if re.search(r"(?:\b[TS](?:_\{?[\w\\{}]*\}?)?\s*=\s*|H[12]00\s*|A100\s*|-|@\s*)$", before):
                continue  # rule 5: T=, T_total=, @1M are token counts; H100 ... hardware; -A55B a name
            if re.match(r"\s*(?:[长短中]?上下文|context|tokens?|个\s*(?:历史|新)?\s*(?:token|key|value)|时|KV|序列|(?:和|与)\s*\d+\s?[KM]\s*上下文|/card|TFLOPS|\w*-)",
                        after) or re.match(r"[A-Za-z]", after) or re.search(r"上下文\s*[（(]\s*(?:如\s*)?[<>]?\s*$", before):
                continue
            if re.search(r"(?:\^\{?|\bCH\s|[×·*]\s*|\[[^\]]*)$", before):
                continue  # rule 6: an exponent (10^9 FLOPs), a chapter (CH 3), a factor (64 × 1M), a shape [1, 1M]
            if m.group(1) == "1" and not m.group(2) and re.match(r"\s*(?:参数\s*)?[=≈]", after):
                continue  # rule 6: the 1 of a unit definition (1 GiB = 1024^3 bytes, 1B 参数 = 2 GiB)
            if m.group(3) == "B" and (m.group(1) + (m.group(2) or "")) in names:
                continue  # rule 6: a size that is the size part of a model name of the same seed (70B)
            yield section, number, raw, m.group(1).replace(",", "") + (m.group(2) or "")


CN_COUNT = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
N = r"(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
RATIO = re.compile(N + r"\s*倍")
FRACTION = re.compile(r"(?:约|≈|~|为|是|占)\s*(\d+)\s*/\s*(\d+)(?![\d.])(?!\s*[=≈×·*])|(?<![\d./])(\d+)\s*/\s*(\d+)\s*倍")
ARROW = re.compile(N + r"\s*(?:→|\\to)\s*" + N + r"(?![\d.])")
COUNT = re.compile(r"([一两二三四五六七八九十]|\d+)\s*次\s*(?:[（(]?[^）)]{0,12}[）)]?\s*)?"
                   r"(?:all-reduce|all-gather|reduce-scatter|all-to-all|allreduce|allgather|AllReduce|All-Reduce|"
                   r"All-to-All|AllGather|通信|P2P|send)", re.I)
RESULT = re.compile(r"(?:=|≈)\s*~?\s*" + N + r"(?![\d.,]|\s*[×*·/+^\-]|\s?(?:" + UNITS + r"))")
COST = re.compile(r"参数|Params|FLOP|显存|[Cc]ache|缓存|字节|bytes|GiB|GB|MB|通信|计算量|内存|元素|激活|memory")
OPERATOR = re.compile(r"[×*·/+]|\d\s*\^|\d\s*-\s*\d|\\frac|\\cdot")


def _value(m, a: int = 1) -> str:
    return m.group(a).replace(",", "") + (m.group(a + 1) or "")


def all_claims(seed: str):
    """(section, line number, value, kind) of every claim: rules 1-7 ("unit") and 8-12."""
    seen = set()
    for section, number, _, value in matches(seed):
        seen.add((number, value))
        yield section, number, value, "unit"
    yield from _wider(seed, seen)


def _wider(seed: str, seen: set):
    """Rules 8-12 (``all_claims``), skipping what rules 1-7 found on the same line."""
    path = next(SEEDS.glob(f"{seed}_*.txt"))
    section, chapter, in_doc = "§0", [0], False
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if raw.strip().startswith('"""'):
            in_doc = not in_doc if raw.strip().count('"""') == 1 else in_doc
            continue
        h = _heading(seed, raw, chapter)
        if h:
            section = h
            continue
        if _excluded(raw, in_doc):
            continue
        line = _latex(raw).replace("\\to", "→")
        found = []
        for m in RATIO.finditer(line):
            found.append((_value(m), "ratio"))
        for m in FRACTION.finditer(line):
            a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            found.append((f"{a}/{b}", "fraction"))
        for m in ARROW.finditer(line):
            if not re.match(r"\s*(?:" + UNITS + r")", line[m.end():]):
                found.append((_value(m, 3), "arrow"))
        for m in COUNT.finditer(line):
            n = m.group(1)
            found.append((str(CN_COUNT.get(n, n)), "count"))
        for m in RESULT.finditer(line) if COST.search(line) else ():
            head = re.split(r"[，,。；;：:（(]|(?<![=≈])\s{2,}", line[:m.start()])[-1]
            head = re.split(r"=|≈", head)[0] if head.count("=") + head.count("≈") else head
            if OPERATOR.search(head) and not re.search(r"\b[TS]\s*$", head) and not re.fullmatch(
                    r"\s*[A-Za-z_\\{}^]+(?:_\{?[\w\\{}]*\}?)?(?:\^\{?[\w\\{}]*\}?)?\s*", head):
                found.append((_value(m), "result"))
        for value, kind in found:
            if (number, value) not in seen:
                seen.add((number, value))
                yield section, number, value, kind

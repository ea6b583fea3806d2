"""Constant folding of generated Excel formulas: what is known when the formula is written is
resolved then, so a reader never sees `IF("none"="full",8,6)` or `IF(0>=3,1,1)`.

The formula is tokenized with openpyxl's Excel tokenizer and parsed with Excel's operator
precedence (Microsoft: "Calculation operators and precedence in Excel"). Folded: a comparison
of two literals; `x*1`, `x/1`, `x+0`, `x-0`, `x*0`, `0/x` (arithmetic on the user's own numbers stays
visible: `6*7E9*1E9`, not `4.2E19`); IF, AND, OR, NOT, ISNUMBER, MAX, MIN and
ROUNDUP over literals (IF with a literal condition takes its branch); INDEX of an array constant
at the MATCH of a literal. Everything else is written back as it came.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any

from openpyxl.formula.tokenizer import Token, Tokenizer

# Binary operators, lowest precedence first (Excel: comparison < & < +- < */ < ^).
_LEVELS = (("=", "<>", "<", ">", "<=", ">="), ("&",), ("+", "-"), ("*", "/"), ("^",))
_PREC = {op: i for i, ops in enumerate(_LEVELS) for op in ops}
_COMPARE = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, ">": operator.gt,
            "<=": operator.le, ">=": operator.ge}


@dataclass
class Lit:
    """A number, text or logical literal; `text` keeps the way it was written."""

    value: Any
    text: str = ""

    def render(self) -> str:
        return self.text or literal(self.value)


@dataclass
class Raw:
    """An operand kept as written: a reference, a name, an array constant, an error."""

    text: str

    def render(self) -> str:
        return self.text


@dataclass
class Func:
    name: str  # with its "(" as the tokenizer gives it, e.g. "IF("
    args: list[Any] = field(default_factory=list)

    def render(self) -> str:
        return self.name + ",".join(render(a, top=True) for a in self.args) + ")"


@dataclass
class Paren:
    inner: Any

    def render(self) -> str:
        return "(" + render(self.inner, top=True) + ")"


@dataclass
class Bin:
    op: str
    left: Any
    right: Any

    def render(self) -> str:
        return _side(self.left, self.op, False) + self.op + _side(self.right, self.op, True)


@dataclass
class Unary:
    op: str  # "-", "+" (prefix) or "%" (postfix)
    inner: Any

    def render(self) -> str:
        inner = render(self.inner)
        return inner + "%" if self.op == "%" else self.op + inner


def literal(value: Any) -> str:
    """A Python value as the shortest Excel literal: 7E9, 0.5, "adamw", TRUE."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    v = float(value)
    plain = str(int(v)) if v.is_integer() and abs(v) < 1e16 else repr(v)
    mantissa, _, exp = f"{v:.15e}".partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    sci = f"{mantissa}E{int(exp)}"
    return sci if len(sci) < len(plain) and float(sci) == v else plain


def _side(node: Any, op: str, right: bool) -> str:
    """A Bin operand, its brackets dropped where the precedence makes them needless."""
    if isinstance(node, Paren) and isinstance(node.inner, Bin):
        inner = _PREC[node.inner.op]
        if inner > _PREC[op] or (inner == _PREC[op] and not right and op != "^"):
            return node.inner.render() if not isinstance(node.inner, Paren) else render(node.inner)
    return render(node)


def render(node: Any, top: bool = False) -> str:
    """Excel text of a node; `top`: a whole argument or formula, where brackets are needless."""
    if top and isinstance(node, Paren):
        return render(node.inner, top=True)
    if isinstance(node, Paren) and isinstance(node.inner, (Lit, Raw, Func, Paren)):
        return render(node.inner)
    return node.render()


class _Parser:
    def __init__(self, formula: str):
        self.items = [t for t in Tokenizer(formula if formula.startswith("=") else "=" + formula).items
                      if t.type != Token.WSPACE]
        self.i = 0

    def peek(self) -> Token | None:
        return self.items[self.i] if self.i < len(self.items) else None

    def take(self) -> Token:
        self.i += 1
        return self.items[self.i - 1]

    def expr(self, level: int = 0) -> Any:
        if level == len(_LEVELS):
            return self.unary()
        node = self.expr(level + 1)
        while (t := self.peek()) is not None and t.type == Token.OP_IN and t.value in _LEVELS[level]:
            self.take()
            node = Bin(t.value, node, self.expr(level + 1))
        return node

    def unary(self) -> Any:
        t = self.peek()
        if t is not None and t.type == Token.OP_PRE:
            self.take()
            return Unary(t.value, self.unary())
        node = self.atom()
        while (t := self.peek()) is not None and t.type == Token.OP_POST:
            self.take()
            node = Unary("%", node)
        return node

    def atom(self) -> Any:
        t = self.take()
        if t.type == Token.OPERAND:
            if t.subtype == Token.NUMBER:
                return Lit(float(t.value), t.value)
            if t.subtype == Token.TEXT:
                return Lit(t.value[1:-1].replace('""', '"'), t.value)
            if t.subtype == Token.LOGICAL:
                return Lit(t.value.upper() == "TRUE", t.value)
            return Raw(t.value)
        if t.type == Token.PAREN and t.subtype == Token.OPEN:
            inner = self.expr()
            self.take()
            return Paren(inner)
        if t.type == Token.FUNC and t.subtype == Token.OPEN:
            func = Func(t.value)
            if self.peek() is not None and self.peek().subtype == Token.CLOSE:
                self.take()
                return func
            while True:
                func.args.append(self.expr())
                if self.take().subtype == Token.CLOSE:
                    return func
        if t.type == Token.ARRAY and t.subtype == Token.OPEN:  # an array constant, kept as text
            depth, text = 1, t.value
            while depth:
                nxt = self.take()
                depth += {Token.OPEN: 1, Token.CLOSE: -1}.get(nxt.subtype, 0) if nxt.type in (
                    Token.ARRAY, Token.FUNC, Token.PAREN) else 0
                text += nxt.value
            return Raw(text)
        raise ValueError(f"cannot parse formula token {t.value!r}")


def parse(formula: str) -> Any:
    """The formula (with or without '=') as a tree of nodes."""
    return _Parser(formula).expr()


def _num(node: Any) -> float | None:
    return node.value if isinstance(node, Lit) and isinstance(node.value, float) else None


def _is(node: Any, value: float) -> bool:
    return _num(node) == value


def _fold_bin(node: Bin) -> Any:
    a, b = node.left, node.right
    if isinstance(a, Lit) and isinstance(b, Lit) and node.op in _COMPARE and type(a.value) is type(b.value):
        x, y = a.value, b.value
        if isinstance(x, str):
            x, y = x.lower(), y.lower()  # Excel compares text without regard to case
        return Lit(_COMPARE[node.op](x, y))
    if (node.op == "*" and (_is(a, 0) or _is(b, 0))) or (node.op == "/" and _is(a, 0)):
        return Lit(0.0)
    if (node.op in ("*", "/") and _is(b, 1)) or (node.op in ("+", "-") and _is(b, 0)):
        return a
    if (node.op == "*" and _is(a, 1)) or (node.op == "+" and _is(a, 0)):
        return b
    return node


def _fold_func(node: Func) -> Any:
    name, args = node.name[:-1].upper(), node.args
    lits = all(isinstance(a, Lit) for a in args)
    if name == "IF" and args and isinstance(args[0], Lit) and isinstance(args[0].value, bool):
        chosen = args[1] if args[0].value else (args[2] if len(args) > 2 else Lit(False))
        return chosen if isinstance(chosen, (Lit, Raw, Func, Paren)) else Paren(chosen)
    if name in ("AND", "OR") and args and all(isinstance(a, Lit) and isinstance(a.value, bool) for a in args):
        return Lit((all if name == "AND" else any)(a.value for a in args))
    if name == "NOT" and lits and len(args) == 1 and isinstance(args[0].value, bool):
        return Lit(not args[0].value)
    if name == "ISNUMBER" and lits and len(args) == 1:
        return Lit(isinstance(args[0].value, float))
    if name in ("MAX", "MIN") and lits and args and all(_num(a) is not None for a in args):
        return Lit((max if name == "MAX" else min)(a.value for a in args))
    if name == "ROUNDUP" and lits and len(args) == 2 and all(_num(a) is not None for a in args):
        scale = 10 ** args[1].value
        return Lit(math.copysign(math.ceil(abs(args[0].value) * scale - 1e-9) / scale, args[0].value))
    if name == "INDEX" and len(args) == 2 and isinstance(args[0], Raw) and isinstance(args[1], Func):
        return _index_match(node)
    return node


def _array(text: str) -> list[Any] | None:
    if not (text.startswith("{") and text.endswith("}")) or ";" in text:
        return None
    return [parse(part) for part in text[1:-1].split(",")]


def _index_match(node: Func) -> Any:
    """INDEX({a,b},MATCH("x",{"x","y"},0)) is a."""
    match = node.args[1]
    if match.name.upper() != "MATCH(" or len(match.args) != 3 or not _is(match.args[2], 0):
        return node
    values, keys = _array(node.args[0].text), (
        _array(match.args[1].text) if isinstance(match.args[1], Raw) else None)
    wanted = match.args[0]
    if values is None or keys is None or not isinstance(wanted, Lit) or not isinstance(wanted.value, str):
        return node
    lowered = [k.value.lower() if isinstance(k, Lit) and isinstance(k.value, str) else None for k in keys]
    if wanted.value.lower() not in lowered:
        return node
    return values[lowered.index(wanted.value.lower())]


def simplify(node: Any) -> Any:
    """The node with every foldable part folded (bottom up)."""
    if isinstance(node, Paren):
        inner = simplify(node.inner)
        return inner if isinstance(inner, (Lit, Raw, Func, Paren)) else Paren(inner)
    if isinstance(node, Func):
        return _fold_func(Func(node.name, [simplify(a) for a in node.args]))
    if isinstance(node, Bin):
        return _fold_bin(Bin(node.op, simplify(node.left), simplify(node.right)))
    if isinstance(node, Unary):
        inner = simplify(node.inner)
        if node.op == "-" and _num(inner) is not None:
            return Lit(-inner.value)
        return Unary(node.op, inner)
    return node


def fold(formula: str) -> str:
    """The formula (without '=') with everything known folded."""
    return render(simplify(parse(formula)), top=True)


def literal_comparisons(formula: str) -> list[str]:
    """Comparisons between two literals in the formula (a folded formula has none)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, Bin):
            if node.op in _COMPARE and isinstance(node.left, Lit) and isinstance(node.right, Lit):
                found.append(node.render())
            walk(node.left)
            walk(node.right)
        elif isinstance(node, Func):
            for a in node.args:
                walk(a)
        elif isinstance(node, (Paren, Unary)):
            walk(node.inner)
    walk(parse(formula))
    return found

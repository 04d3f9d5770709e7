"""Statement fingerprints: SQL text with every literal value replaced by `?`, so that what a
recording keeps of a statement says what ran, never with which values (an e-mail address,
a token, a customer's name). The recorder fingerprints the statements it reads from the
server unless asked `record --keep-literals`; `innostall redact` fingerprints a recording's.

The rules are those of pt-query-digest's fingerprint and of Performance Schema's digests:

  - quoted strings ('..', "..", with backslash escapes and doubled quotes), numbers (whole,
    decimal, with an exponent; hex 0x.., bits 0b..), hex, bit and national strings (X'..',
    B'..', N'..'), strings with a character set introducer (_utf8mb4'..') become `?`, a
    number's sign with it where the sign is unary (`id = -5` → `id = ?`, `k+1` → `k+?`);
  - a list of literals after IN or VALUES becomes `(?+)`, and the rows of a multi-row
    VALUES after the first are dropped (`VALUES (1,'a'),(2,'b')` → `VALUES (?+)`);
  - comments go, their content with them (/* .. */, /*! .. */ and /*+ .. */ included, --
    and #), and every run of whitespace becomes one space.

What a DBA reads is kept as written: keywords and identifiers in their case, backquoted
identifiers whole (`sbtest1` stays `sbtest1`), NULL, TRUE and FALSE (they hold no value of
anyone's, and `IS NULL` reads differently from `IS ?`), LIMIT and ORDER BY as they are.

The text may be cut (the server gives the first characters of a statement): everything
after a quote that is not closed becomes `?`. A backquoted identifier that is not closed
too, for the same reason: the text after it cannot be told apart from a literal. Double
quotes are read as strings, as in the default sql_mode; with ANSI_QUOTES they quote
identifiers, which then show as `?` too.

fingerprint() is pure and total: any text gives a fingerprint, none raises, and a
fingerprint fingerprints to itself."""
from __future__ import annotations

import re
from typing import NamedTuple

WHITESPACE = " \t\n\r\f\v"
# decimal and hexadecimal numbers; what follows the match decides whether it is one (`1abc`
# is an identifier, MySQL allows identifiers that begin with a digit)
NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|0[bB][01]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# a string whose first quote follows one of these, with no space, is one literal
STRING_PREFIXES = ("x", "b", "n")
# words after which a + or - is a sign, not an operator: `WHERE -5`, `LIMIT -1`
SIGN_AFTER = frozenset("""SELECT WHERE AND OR NOT XOR BY THEN ELSE WHEN CASE VALUES VALUE SET
    LIMIT OFFSET IN IS BETWEEN LIKE RETURN DEFAULT INTERVAL ON HAVING DIV MOD REGEXP RLIKE
    DISTINCT ALL ANY SOME""".split())
LIST_WORDS = ("IN", "VALUES", "VALUE")
CONSTANT_WORDS = frozenset(("NULL", "TRUE", "FALSE"))  # literals in a list, kept as written


class Token(NamedTuple):
    text: str
    kind: str  # "literal" (a `?` now), "word" (keyword or identifier), "quoted" (`name`), "mark"
    spaced: bool  # whitespace or a comment came before it


def is_word_char(c: str) -> bool:
    """Part of an unquoted identifier or keyword: ASCII letters and digits, _ and $, and, as
    MySQL allows in identifiers, any character beyond ASCII."""
    return (c.isalnum() or c in "_$") if c.isascii() else True


def quoted_end(sql: str, i: int) -> int | None:
    """The index after the quoted text that opens at i (its quote is sql[i]), backslash
    escapes and doubled quotes read; None when it is not closed."""
    quote, j, n = sql[i], i + 1, len(sql)
    while j < n:
        c = sql[j]
        if c == "\\" and quote != "`":  # backquoted identifiers have no escapes
            j += 2
        elif c == quote:
            if j + 1 < n and sql[j + 1] == quote:
                j += 2
            else:
                return j + 1
        else:
            j += 1
    return None


def comment_end(sql: str, i: int) -> int | None:
    """The index after the comment that starts at i, or None if none does there."""
    if sql.startswith("/*", i):
        end = sql.find("*/", i + 2)
        return len(sql) if end < 0 else end + 2
    # `--` opens a comment only when a space or a control character follows it (`a--1` is a - -1)
    if sql[i] == "#" or (sql.startswith("--", i) and (i + 2 == len(sql) or ord(sql[i + 2]) <= 32)):
        end = sql.find("\n", i)
        return len(sql) if end < 0 else end + 1
    return None


def signed(tokens: list[Token]) -> bool:
    """Whether the + or - last in tokens is the sign of the number that follows it."""
    if not tokens or tokens[-1].kind != "mark" or tokens[-1].text not in ("+", "-"):
        return False
    if len(tokens) == 1:
        return True
    before = tokens[-2]
    if before.kind == "mark":
        return before.text != ")"
    return before.kind == "word" and before.text.upper() in SIGN_AFTER


def tokens_of(sql: str) -> list[Token]:
    """The statement's tokens, each literal already a `?`, comments and whitespace gone."""
    tokens: list[Token] = []
    i, n, spaced = 0, len(sql), False

    def literal(end: int) -> int:
        nonlocal spaced
        if signed(tokens):  # the sign goes with the number: `= -5` → `= ?`
            spaced = tokens.pop().spaced
        tokens.append(Token("?", "literal", spaced))
        return end

    while i < n:
        c = sql[i]
        if c in WHITESPACE:
            i, spaced = i + 1, True
            continue
        end = comment_end(sql, i)
        if end is not None:
            i, spaced = end, True
            continue
        if c == "?":  # a placeholder: a literal already, its sign an operator (`a-?`)
            tokens.append(Token("?", "literal", spaced))
            i += 1
        elif c in "'\"":
            i = literal(quoted_end(sql, i) or n)  # not closed: the rest is the string's
        elif c == "`":
            end = quoted_end(sql, i)
            if end is None:  # cut inside the name: what follows may be anything
                i = literal(n)
            else:
                tokens.append(Token(sql[i:end], "quoted", spaced))
                i = end
        elif c.isascii() and (c.isdigit() or (c == "." and i + 1 < n and sql[i + 1].isascii()
                                              and sql[i + 1].isdigit() and not glued(tokens, spaced))):
            match = NUMBER.match(sql, i)
            end = match.end()
            if end < n and is_word_char(sql[end]) and "." not in match.group():
                i = word(sql, i, tokens, spaced)  # an identifier that begins with digits
            else:
                i = literal(end)
        elif is_word_char(c):
            end = word_end(sql, i)
            text = sql[i:end]
            if end < n and sql[end] in "'\"" and (text.lower() in STRING_PREFIXES or text[0] == "_"):
                i = literal(quoted_end(sql, end) or n)  # X'0F', N'text', _utf8mb4'text'
            else:
                i = word(sql, i, tokens, spaced)
        else:
            tokens.append(Token(c, "mark", spaced))
            i += 1
        spaced = False
    return tokens


def word_end(sql: str, i: int) -> int:
    n = len(sql)
    while i < n and is_word_char(sql[i]):
        i += 1
    return i


def word(sql: str, i: int, tokens: list[Token], spaced: bool) -> int:
    end = word_end(sql, i)
    tokens.append(Token(sql[i:end], "word", spaced))
    return end


def glued(tokens: list[Token], spaced: bool) -> bool:
    """Whether a `.` here qualifies the name just before it (t.c), rather than start a
    number (.5)."""
    return bool(tokens) and not spaced and (tokens[-1].kind in ("word", "quoted") or tokens[-1].text == ")")


def is_constant(token: Token) -> bool:
    return token.kind == "literal" or (token.kind == "word" and token.text.upper() in CONSTANT_WORDS)


def literal_list_end(tokens: list[Token], i: int) -> int | None:
    """The index after the `(` at i's list, if it holds literals only: `(?, ?, NULL)`."""
    j = i + 1
    while j < len(tokens) and (is_constant(tokens[j]) or tokens[j].text == ","):
        j += 1
    if j < len(tokens) and tokens[j].text == ")" and any(is_constant(t) for t in tokens[i + 1:j]):
        return j + 1
    return None


def rows_end(tokens: list[Token], i: int) -> int:
    """Past the rows `, (...), (...)` that follow a VALUES list's first (a cut one included)."""
    while i + 1 < len(tokens) and tokens[i].text == "," and tokens[i + 1].text == "(":
        depth, i = 1, i + 2
        while i < len(tokens) and depth:
            depth += {"(": 1, ")": -1}.get(tokens[i].text, 0) if tokens[i].kind == "mark" else 0
            i += 1
    return i


def collapse_lists(tokens: list[Token]) -> list[Token]:
    """IN (?, ?) and VALUES (?, ?), (?, ?) as IN (?+) and VALUES (?+); of a VALUES list whose
    rows hold more than literals (NOW(), a column), its first row alone."""
    out: list[Token] = []
    first_rows: list[int] = []  # depths at which a VALUES list's first row opened
    depth, i = 0, 0
    while i < len(tokens):
        token = tokens[i]
        opens_list = (token.kind == "word" and token.text.upper() in LIST_WORDS
                      and i + 1 < len(tokens) and tokens[i + 1].text == "(")
        if opens_list:
            values = token.text.upper() != "IN"
            end = literal_list_end(tokens, i + 1)
            if end is not None:
                out += [token, Token("(?+)", "literal", True)]
                i = rows_end(tokens, end) if values else end
                continue
            if values:
                first_rows.append(depth)
        if token.kind == "mark" and token.text == "(":
            depth += 1
        elif token.kind == "mark" and token.text == ")":
            depth -= 1
            if first_rows and first_rows[-1] == depth:
                first_rows.pop()
                out.append(token)
                i = rows_end(tokens, i + 1)
                continue
        out.append(token)
        i += 1
    return out


def fingerprint(sql: str) -> str:
    """The statement with its literals as `?`, comments removed and whitespace collapsed;
    keywords and identifiers as written. Never raises."""
    tokens = collapse_lists(tokens_of(sql))
    out = []
    for k, token in enumerate(tokens):
        # `- -` whatever came between: `--` and a space would make what follows a comment
        if k and (token.spaced or token.text == "-" == tokens[k - 1].text):
            out.append(" ")
        out.append(token.text)
    return "".join(out)

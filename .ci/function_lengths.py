#!/usr/bin/python3
"""Counts the lines of every function body in server/**/*.cc and fails when one is too long.

A function's length is the number of lines from the line of its name to its closing brace,
both included. Lambdas and local classes count within the function that holds them. Tests
(*_test.cc, *test_util*) are left out. The count matches braces after removing comments,
string and character literals (raw strings included) and preprocessor lines, so braces inside
them do not count. At namespace and class scope a brace opens a function body when the text
before it holds a parameter list (and, for a constructor, its initializer list); namespace,
class, struct, union and enum bodies and initializers (`= {...}`, `T x{...}`) are not
functions.

Usage: function_lengths.py [--top N] [--max LINES] [ROOT]
Prints the N longest functions (length, file:line of the name, name) and exits 1,
naming them, when any is longer than LINES (or when a file's braces do not match).
"""
import argparse
import pathlib
import re
import sys

IDENT_START = re.compile(r"[A-Za-z_]")
IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
NUMBER = re.compile(r"[0-9](?:'?[0-9A-Za-z_.]|[eEpP][+-])*")
RAW_PREFIX = re.compile(r"(?:u8|u|U|L)?R$")
STRING_PREFIX = re.compile(r"(?:u8|u|U|L)$")
# Operator spellings after `operator`, longest first.
OPERATORS = sorted(["()", "[]", "->*", "->", "<<=", ">>=", "<=>", "<<", ">>", "<=", ">=", "==",
                    "!=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
                    "^=", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", "<", ">", ",",
                    "\"\""], key=len, reverse=True)
CONTAINERS = {"namespace", "class", "struct", "union"}
NOT_NAMES = {"__attribute__", "alignas", "decltype", "__declspec", "noexcept", "requires"}


def strip(text):
    """Returns text with comments, literals and preprocessor lines blanked; newlines kept."""
    out = []
    i, n = 0, len(text)
    line_start = True  # only whitespace since the last newline
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            out.append(c)
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            while end < n and end > 0 and text[end - 1] == "\\":  # continued comment
                nxt = text.find("\n", end + 1)
                end = n if nxt < 0 else nxt
            out.append(_blank(text[i:end]))
            i = end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(_blank(text[i:end]))
            i = end
            continue
        if c == "#" and line_start:
            end = _directive_end(text, i)
            out.append(_blank(text[i:end]))
            i = end
            continue
        line_start = False
        if c == '"':
            word = _word_before(text, i)
            if RAW_PREFIX.search(word) and (len(word) == 1 or STRING_PREFIX.match(word[:-1])):
                end = _raw_string_end(text, i)
            else:
                end = _quoted_end(text, i, '"')
            out.append('""' + _blank(text[i + 2:end]) if end - i >= 2 else _blank(text[i:end]))
            i = end
            continue
        if c == "'":
            end = _quoted_end(text, i, "'")
            out.append("''" + _blank(text[i + 2:end]) if end - i >= 2 else _blank(text[i:end]))
            i = end
            continue
        if c.isdigit():  # a number may hold digit separators: 1'000'000
            m = NUMBER.match(text, i)
            out.append(m.group(0).replace("'", " "))
            i = m.end()
            continue
        if IDENT_START.match(c):
            m = IDENT.match(text, i)
            out.append(m.group(0))
            i = m.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _blank(s):
    return re.sub(r"[^\n]", " ", s)


def _word_before(text, i):
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    return text[j:i]


def _directive_end(text, i):
    n = len(text)
    while i < n:
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if text.startswith("//", i) or text[i] == "\n":
            end = text.find("\n", i)
            end = n if end < 0 else end
            if end > 0 and text[end - 1] == "\\":
                i = end + 1
                continue
            return end
        if text[i] == "\\" and text.startswith("\n", i + 1):
            i += 2
            continue
        i += 1
    return n


def _quoted_end(text, i, quote):
    j, n = i + 1, len(text)
    while j < n:
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == quote:
            return j + 1
        if text[j] == "\n":  # unterminated: stop at the line's end
            return j
        j += 1
    return n


def _raw_string_end(text, i):
    open_paren = text.find("(", i)
    if open_paren < 0:
        return _quoted_end(text, i, '"')
    closing = ")" + text[i + 1:open_paren] + '"'
    end = text.find(closing, open_paren)
    return len(text) if end < 0 else end + len(closing)


TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9][0-9A-Za-z_.]*|::|->|\"\"|''|\S")


def tokens(stripped):
    """Yields (token, line); `operator X` comes as one token."""
    line, pos, skip_to = 1, 0, 0
    for m in TOKEN.finditer(stripped):
        if m.start() < skip_to:
            continue
        line += stripped.count("\n", pos, m.start())
        pos = m.start()
        tok = m.group(0)
        if tok == "operator":
            rest = stripped[m.end():]
            spaces = len(rest) - len(rest.lstrip())
            spelled = _operator_spelling(rest[spaces:])
            if spelled:
                tok += spelled[0]
                skip_to = m.end() + spaces + len(spelled[1])
        yield tok, line


def _operator_spelling(rest):
    """(name suffix, consumed text) of the operator at the start of rest, or None."""
    m = re.match(r"(\(\s*\)|\[\s*\])", rest)
    if m:
        return m.group(0).replace(" ", ""), m.group(0)
    m = re.match(r"(new|delete)(\s*\[\s*\])?", rest)
    if m:
        return " " + m.group(0).replace(" ", ""), m.group(0)
    for op in OPERATORS:
        if rest.startswith(op):
            return op, op
    return None  # a conversion operator: `operator bool` reads on as ordinary tokens


def _strip_template_prefix(header):
    """Drops leading `template <...>` groups and `[[...]]` attributes."""
    i = 0
    while i < len(header):
        if header[i] == "template" and i + 1 < len(header) and header[i + 1] == "<":
            depth, i = 0, i + 1
            while i < len(header):
                if header[i] == "<":
                    depth += 1
                elif header[i] == ">":
                    depth -= 1
                    if depth == 0:
                        break
                elif header[i] == ">>":
                    depth -= 2
                i += 1
            i += 1
            continue
        if header[i] == "[" and i + 1 < len(header) and header[i + 1] == "[":
            while i + 1 < len(header) and not (header[i] == "]" and header[i + 1] == "]"):
                i += 1
            i += 2
            continue
        break
    return header[i:]


def classify(header):
    """What a brace at namespace or class scope opens, from the tokens before it.

    Returns ("container", None), ("function", (name, index of its parameter list's `(` in
    header)), ("member-init", None) for a brace initializing a member in a constructor's
    initializer list, or ("block", None) for anything else (enum bodies, initializers)."""
    head = _strip_template_prefix(header)
    if not head:
        return "block", None
    if head[0] in ("inline", "export") and len(head) > 1 and head[1] == "namespace":
        head = head[1:]
    if head[0] == "extern" and len(head) > 1 and head[1] == '""':
        return "container", None
    if head[0] in CONTAINERS or (head[0] in ("typedef",) and len(head) > 1
                                 and head[1] in CONTAINERS):
        return "container", None
    if head[0] == "enum":
        return "block", None
    # The parameter list: the first paren group at depth 0 whose name is not an attribute.
    depth = 0
    params_open = params_close = None
    for k, tok in enumerate(head):
        if tok in ("(", "["):
            if depth == 0 and tok == "(" and params_open is None:
                before = head[k - 1] if k > 0 else ""
                if before not in NOT_NAMES and (IDENT.fullmatch(before) or
                                                before.startswith("operator") or before == ">"):
                    params_open = k
            depth += 1
        elif tok in (")", "]"):
            depth -= 1
            if depth == 0 and params_open is not None and params_close is None:
                params_close = k
        elif tok == "=" and depth == 0 and params_open is None:
            return "block", None  # an initializer; a lambda there belongs to no function
    if params_close is None:
        return "block", None
    name = _name_before(head, params_open)
    tail = head[params_close + 1:]
    init_list = _initializer_list_start(tail)
    if init_list is not None and tail and (IDENT.fullmatch(tail[-1]) or tail[-1] == ">") \
            and tail[-1] not in ("const", "override", "final", "noexcept", "mutable"):
        return "member-init", None
    if init_list is None and "->" not in tail and tail and IDENT.fullmatch(tail[-1]) and \
            tail[-1] not in ("const", "override", "final", "noexcept", "mutable", "volatile",
                             "try"):
        return "block", None  # e.g. `Type name(args) extra {`: not a definition we know
    return "function", (name, len(header) - len(head) + params_open)


def _initializer_list_start(tail):
    depth = 0
    for k, tok in enumerate(tail):
        if tok in ("(", "[", "{"):
            depth += 1
        elif tok in (")", "]", "}"):
            depth -= 1
        elif tok == ":" and depth == 0:
            return k
    return None


def _name_before(head, k):
    """The qualified name ending just before head[k], template arguments left out."""
    parts = []
    j = k - 1
    while j >= 0:
        if head[j] == ">":  # Foo<T>::Bar, or a specialization Foo<int>(
            depth = 0
            while j >= 0:
                depth += {">": 1, ">>": 2, "<": -1}.get(head[j], 0)
                j -= 1
                if depth == 0:
                    break
        if j < 0 or not (IDENT.fullmatch(head[j]) or head[j].startswith("operator")):
            break
        parts.append(head[j])
        j -= 1
        if j >= 0 and head[j] == "~":
            parts[-1] = "~" + parts[-1]
            j -= 1
        if j < 0 or head[j] != "::":
            break
        parts.append("::")
        j -= 1
    return "".join(reversed(parts)) or "?"


def functions(text):
    """Yields (name, line, length in lines) for each function, counted from the line of its
    name to its closing brace."""
    stack = []  # kinds of the open braces at namespace or class scope
    header, header_lines = [], []
    function = None  # (name, line, depth) of the function being read
    depth = 0
    for tok, line in tokens(strip(text)):
        if function is not None:
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
                if depth == 0:
                    yield function[0], function[1], line - function[1] + 1
                    function = None
                    header, header_lines = [], []
            continue
        if tok == "{":
            kind, found = classify(header)
            if kind == "function":
                name, params_open = found
                function, depth = (name, header_lines[params_open]), 1
            elif kind == "container":
                stack.append("container")
                header, header_lines = [], []
            else:
                stack.append(kind)
                header.append(tok)
                header_lines.append(line)
            continue
        if tok == "}":
            kind = stack.pop() if stack else "container"
            if kind == "container":
                header, header_lines = [], []
            else:
                header.append(tok)
                header_lines.append(line)
            continue
        if tok == ";" and (not stack or stack[-1] == "container"):
            header, header_lines = [], []
            continue
        if stack and stack[-1] != "container":
            continue  # inside an initializer or enum body
        if tok == ":" and header in (["public"], ["private"], ["protected"]):
            header, header_lines = [], []
            continue
        header.append(tok)
        header_lines.append(line)
    if function is not None or stack:
        raise ValueError("unmatched braces (an open %s)" %
                         ("function " + function[0] if function else stack[-1]))


def is_test(path):
    name = path.rsplit("/", 1)[-1]
    return name.endswith("_test.cc") or "test_util" in name


def main():
    parser = argparse.ArgumentParser(
        description="Lists the longest function bodies in server/**/*.cc (tests left out) and "
        "exits 1 when any is longer than --max lines.")
    parser.add_argument("root", nargs="?", default=".", help="repository root (default .)")
    parser.add_argument("--top", type=int, default=10, metavar="N",
                        help="how many of the longest functions to print (default 10)")
    parser.add_argument("--max", type=int, default=100, metavar="LINES",
                        help="the most lines a function may take, from its name to its closing brace "
                        "(default 100)")
    args = parser.parse_args()
    root = pathlib.Path(args.root)
    found, unreadable = [], []
    for file in sorted((root / "server").rglob("*.cc")):
        path = file.relative_to(root).as_posix()
        if is_test(path):
            continue
        try:
            for name, line, length in functions(file.read_text(errors="replace")):
                found.append((length, "%s:%d" % (path, line), name))
        except ValueError as e:
            print("%s: %s" % (path, e), file=sys.stderr)
            unreadable.append(path)
    found.sort(key=lambda f: (-f[0], f[1]))
    for length, where, name in found[:args.top]:
        print("%5d  %s  %s" % (length, where, name))
    over = [f for f in found if f[0] > args.max]
    for length, where, name in over:
        print("too long: %s %s is %d lines (at most %d)" % (where, name, length, args.max),
              file=sys.stderr)
    print("functions: %d over %d lines, of %d" % (len(over), args.max, len(found)))
    return 1 if over or unreadable else 0


if __name__ == "__main__":
    sys.exit(main())

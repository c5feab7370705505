#!/usr/bin/env python3
"""Copies one of etcd's .proto files without its gogoproto and google.api annotations.

Usage: strip_proto_options.py INPUT OUTPUT

Removes the imports of gogoproto/gogo.proto and google/api/annotations.proto, every
`option (gogoproto.*) = ...;`, every `(gogoproto.*) = ...` inside a field's [...] options (the
brackets too when nothing is left in them) and every `option (google.api.http) = {...};` block.
Comments and string literals are left as they are: the patterns are matched on a copy of the
text in which both are blanked out, so a `[` or `;` inside them never counts.
"""
import re
import sys

_DROPPED_IMPORTS = ('gogoproto/gogo.proto', 'google/api/annotations.proto')


def masked(text):
    """The text with comments as spaces and string contents as '_', of the same length."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out[i:j] = ' ' * (j - i)
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [c if c == '\n' else ' ' for c in text[i:j]]
            i = j
        elif text[i] in '"\'':
            quote, j = text[i], i + 1
            while j < n and text[j] != quote:
                j += 2 if text[j] == '\\' else 1
            out[i + 1:j] = '_' * (j - i - 1)
            i = j + 1
        else:
            i += 1
    return ''.join(out)


def closing(mask, start, opening, closer):
    """The index just past the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(mask)):
        if mask[i] == opening:
            depth += 1
        elif mask[i] == closer:
            depth -= 1
            if depth == 0:
                return i + 1
    raise SystemExit('unbalanced %s at offset %d' % (opening, start))


def edits(text, mask):
    """(begin, end, replacement) for every annotation to take out."""
    found = []
    for m in re.finditer(r'import\s+"_*"\s*;[ \t]*\n?', mask):
        if text[m.start():m.end()].split('"')[1] in _DROPPED_IMPORTS:
            found.append((m.start(), m.end(), ''))
    for m in re.finditer(r'[ \t]*option\s*\(\s*gogoproto\.[\w.]+\s*\)\s*=[^;]*;[ \t]*\n?', mask):
        found.append((m.start(), m.end(), ''))
    for m in re.finditer(r'[ \t]*option\s*\(\s*google\.api\.http\s*\)\s*=\s*\{', mask):
        end = closing(mask, m.end() - 1, '{', '}')
        tail = re.compile(r'\s*;?[ \t]*\n?').match(mask, end)
        found.append((m.start(), tail.end(), ''))
    for m in re.finditer(r'\s*\[', mask):
        end = closing(mask, m.end() - 1, '[', ']')
        inner_begin = m.end()
        parts, begin = [], inner_begin
        for i in range(inner_begin, end):
            if mask[i] in ',]':
                parts.append((begin, i))
                begin = i + 1
        kept = [text[b:e].strip() for b, e in parts
                if not re.match(r'\s*\(\s*gogoproto\.', mask[b:e])]
        if len(kept) == len(parts):
            continue
        found.append((m.start(), end, ' [' + ', '.join(kept) + ']' if kept else ''))
    return found


def strip(text):
    mask = masked(text)
    out, last = [], 0
    for begin, end, replacement in sorted(edits(text, mask)):
        if begin < last:
            continue
        out.append(text[last:begin])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return ''.join(out)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    with open(sys.argv[1], encoding='utf-8') as f:
        text = f.read()
    with open(sys.argv[2], 'w', encoding='utf-8') as f:
        f.write(strip(text))


if __name__ == '__main__':
    main()

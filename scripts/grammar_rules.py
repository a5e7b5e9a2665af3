"""Print the generated rules of logicpipe/llm/grammars/pyexpr.gbnf and smt.gbnf.

Some exact conditions are finite but long to write by hand: a Python name that is not a keyword and
does not start with '__', an integer literal below 2**63, a '#' line that is not a section header.
This script writes them; tests/llm/test_grammar_csp_smt.py checks that the .gbnf files hold its
output verbatim, so edit the rules here and paste what it prints.

    python scripts/grammar_rules.py
"""

from __future__ import annotations

import keyword

# 2**63 - 1: the largest integer the solvers take (logicpipe.solvers.pyexpr.INT_BOUND).
BOUND = str(2**63 - 1)
IDENT = "[A-Za-z0-9_]"


def _without(chars: str, base: str = "A-Za-z0-9_") -> str:
    """A character class of `base` (identifier characters) minus the letters in `chars`."""
    if not chars:
        return f"[{base}]"
    keep = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
            if c not in chars and (base == "A-Za-z0-9_" or c.isalpha())]
    return "[" + _ranges(keep) + "]"


def _ranges(chars: list[str]) -> str:
    out, index = [], 0
    while index < len(chars):
        end = index
        while end + 1 < len(chars) and ord(chars[end + 1]) == ord(chars[end]) + 1:
            end += 1
        out.append(chars[index] if end == index else f"{chars[index]}-{chars[end]}")
        index = end + 1
    return "".join(out)


def names() -> list[str]:
    """py-name: an identifier that Python reads as a name the solvers allow (ASCII only)."""
    words = sorted(w for w in keyword.kwlist)
    prefixes = sorted({w[:i] for w in words for i in range(1, len(w))} | set(words))
    rules = [f"py-name-tail ::= {IDENT}{{name}}"]

    def rule(prefix: str) -> str:
        return "py-name-" + prefix if prefix else "py-name"

    def children(prefix: str) -> list[str]:
        return sorted({p[len(prefix)] for p in prefixes if p.startswith(prefix) and len(p) == len(prefix) + 1})

    tail = "py-name-tail"
    # From the start: a letter, or '_' not followed by '_'.
    first = children("")
    start = [f'"{c}" {rule(c)}' for c in first]
    start.append(f"{_without(''.join(first), 'A-Za-z')} {tail}")
    start.append(f'"_" ({_without("_")} {tail})?')
    rules.append(f"py-name ::= {' | '.join(start)}")
    for prefix in prefixes:
        nexts = children(prefix)
        options = [] if prefix in words else ['""']
        options += [f'"{c}" {rule(prefix + c)}' for c in nexts]
        options.append(f"{_without(''.join(nexts))} {tail}")
        rules.append(f"{rule(prefix)} ::= {' | '.join(options)}")
    return rules


def _below(bound: str, digit: str, sep: str) -> list[str]:
    """Alternatives for a string of len(bound) digits (no leading zero) at most `bound`."""
    options = []
    for index, char in enumerate(bound):
        if char == "0" if index else char == "1":
            continue
        low = "1" if index == 0 else "0"
        head = " ".join([f'"{bound[0]}"'] + [f'{sep}"{c}"' for c in bound[1:index]]) if index else ""
        lower = f"[{low}-{int(char) - 1}]" if int(char) - 1 > int(low) else f'"{low}"' if char != low else ""
        if not lower:
            continue
        rest = len(bound) - index - 1
        piece = f"{sep}{lower}" if index else lower
        tail = f"({sep}{digit}){{{rest}}}" if sep else f"{digit}{{{rest}}}"
        options.append(" ".join(p for p in (head, piece, tail) if p))
    options.append(" ".join([f'"{bound[0]}"'] + [f'{sep}"{c}"' for c in bound[1:]]))
    return options


def integers() -> list[str]:
    """py-int: a Python integer literal (any base, '_' between digits) below 2**63."""
    under = '"_"? '
    nineteen = " | ".join(f"({o})" for o in _below(BOUND, "[0-9]", under))
    return [
        "py-int ::= py-dec | \"0\" [xX] py-hex | \"0\" [oO] py-oct | \"0\" [bB] py-bin",
        f'py-dec ::= "0" ("_"? "0"){{chars}} | [1-9] ("_"? [0-9]){{0,17}} | {nineteen}',
        # Leading zeros are free after a base prefix; then at most 63 bits.
        'py-hex ::= ("_"? "0"){chars} (("_"? [0-9A-Fa-f]){1,15} | "_"? [1-7] ("_"? [0-9A-Fa-f]){15})',
        'py-oct ::= ("_"? "0"){chars} ("_"? [0-7]){1,21}',
        'py-bin ::= ("_"? "0"){chars} ("_"? [01]){1,63}',
    ]


def members() -> list[str]:
    """smt-number: a member that is all digits, as smt._members bounds it (at most 20 characters with
    its sign, below 2**63 in size); leading zeros allowed."""
    nineteen = " | ".join(f"({o})" for o in _below(BOUND, "[0-9]", ""))
    return [
        "smt-number ::= \"-\"? ([0-9]{1,18} | smt-u19) | \"0\" smt-u19",
        f'smt-u19 ::= "0" [0-9]{{18}} | {nineteen}',
    ]


def hash_lines() -> list[str]:
    """smt-hash-text: what may follow the '#'s of a comment line so that the line is no section header
    (its text, stripped and lower-cased, is not declarations, constraints or options). No ':' in it,
    so that no ':::' comment starts inside."""
    words = ["constraints", "declarations", "options"]
    prefixes = sorted({w[:i] for w in words for i in range(1, len(w) + 1)})
    other = "[^\\x00\\n\\r\\x0b\\x0c\\x1c-\\x1e`\\x85\\u2028\\u2029: \\t{}]"
    free = "smt-hash-free"
    rules = [
        # After the '#'s: nothing, spaces, or text (whose first character is not '#' unless spaces came first).
        "smt-hash-text ::= ws | [ \\t] ws smt-hash-word | smt-hash-start",
        f"smt-hash-free ::= ({other.format('')} | [ \\t]){{chars}}",
    ]

    def letters(chars: str) -> str:
        return "".join(sorted({c.lower() for c in chars} | {c.upper() for c in chars}))

    firsts = sorted({w[0] for w in words})
    start_class = other.format(letters("".join(firsts)) + "#")
    word_class = other.format(letters("".join(firsts)))
    for name, cls in (("smt-hash-start", start_class), ("smt-hash-word", word_class)):
        options = [f"[{c.upper()}{c}] smt-hash-{c}" for c in firsts]
        options.append(f"{cls} {free}")
        rules.append(f"{name} ::= {' | '.join(options)}")
    for prefix in prefixes:
        nexts = sorted({w[len(prefix)] for w in words if w.startswith(prefix) and len(w) > len(prefix)})
        options = [f"[{c.upper()}{c}] smt-hash-{prefix + c}" for c in nexts]
        if prefix in words:
            # The whole word: only more text after it keeps the line a comment.
            options.append(f"ws {other.format('')} {free}")
        else:
            options.append("ws")
            options.append(f"{other.format(letters(''.join(nexts)))} {free}")
            options.append(f"[ \\t] ws {other.format('')} {free}")
        rules.append(f"smt-hash-{prefix} ::= {' | '.join(options)}")
    return rules


def main() -> None:
    print("# pyexpr.gbnf")
    for line in names() + integers():
        print(line)
    print("# smt.gbnf")
    for line in members() + hash_lines():
        print(line)


if __name__ == "__main__":
    main()

"""Reading a model's reply: the program in it (formulate, refine), or the option a Standard or CoT answer
settles on (baselines and the `cot` backup). Each is read in exactly one place, here.

A reply that holds no program, or names no single option of the answer space, is read as nothing and
says why; it is never passed on as a program, nor cut down to its first letter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from ..prompts import extract_program
from ..solvers.base import map_answer, option_letters
from ..solvers.sections import quote, split_comment


# The section headers that open a program, per formalism, as its parser reads them: a line holding only
# `Name:` (before any ::: comment). An SMT program's sections are `# Declarations` and the like instead.
@cache
def _headers() -> dict[str, set[str]]:
    from ..solvers import csp, fol, lp  # their parsers load only when a reply is read

    return {"lp": set(lp.SECTIONS), "fol": {*fol.SECTIONS, "Conclusions"}, "csp": set(csp.SECTIONS)}


_SMT_HEADER = re.compile(r"^\s*#+\s*(?:declarations|constraints|options)\s*$", re.IGNORECASE)
# An ASP program has no headers; it states its answer with an option/1 or query rule (solvers/asp.py).
_ASP_ANSWER = re.compile(r"^\s*(?:option\s*\(|query\s*(?::-|\.))", re.MULTILINE)

NO_PROGRAM = "the reply holds no program"


def _is_linc(program: str) -> bool:
    """Whether a FOL program is in LINC's form, TEXT:/FOL: line pairs (solvers/nltk_syntax.py)."""
    from ..solvers.nltk_syntax import is_linc_program  # its parser loads only when a reply is read

    return is_linc_program(program)


def read_program(text: str, solver: str) -> str | None:
    """The program a reply holds, or None when it holds none: it is empty, or prose without one of the
    formalism's section headers (`Facts:`, `Premises:`, `Variables:`, `# Declarations`, ...), or for
    ASP, without a rule stating the answer (`option(a) :- ...`, `query :- ...`). A FOL reply in LINC's
    form (`TEXT:`/`FOL:` line pairs, cut at `</EVALUATE>` when it is read) is a program too."""
    program = extract_program(text)
    if not program.strip():
        return None
    lines = [split_comment(line)[0] for line in program.splitlines()]
    if solver == "fol" and _is_linc(program):
        found = True
    elif solver == "smt":
        found = any(_SMT_HEADER.match(line) for line in lines)
    elif solver == "asp":
        found = _ASP_ANSWER.search(program) is not None
    elif solver in _headers():
        found = any(line.endswith(":") and line[:-1].strip() in _headers()[solver] for line in lines)
    else:  # a solver this module does not know: any text is its program
        found = True
    return program if found else None


@dataclass(frozen=True)
class Reading:
    """The option letter a reply settles on, or None and why not."""

    letter: str | None
    reason: str | None = None


# Where a reply states its answer: "The correct option is: X" (the prompts' own form, and Logic-LM's),
# "correct answer is", "final answer", "the answer is" (lm-evaluation-harness's CoT filters), "Answer: X".
_CUE = re.compile(r"(?:\b(?:correct|right|final|best)\s+(?:option|answer|choice)(?:\s+is)?|\banswer\s+is"
                  r"|\banswer(?=\s*\**\s*[:=]))[\s:=*]*", re.IGNORECASE)
# An option letter as answers write it: "(B)", "B)", "B.", "B", "option B"; the letter is capital.
_LETTER = re.compile(r"(?i:(?:either|both)\s+)?(?i:(?:option|choice)\s+)?\**(?:\(([A-Z])\)|([A-Z])(?![\w'’]))\**")
# A second letter right after the first: "A or B", "A and B", "A, B", "A/B".
_ANOTHER = re.compile(r"\s*(?:,|/|&|(?i:or|and)\b)\s*(?i:(?:option|choice)\s+)?\(?([A-Z])\)?(?![\w'’])")
_LETTER_END = re.compile(r"^\s*[).:\-]?\s*")
# LaTeX, as math-tuned models box their final answer: "$\boxed{B}$".
_BOXED = re.compile(r"\$*\\boxed\{\s*(\(?[A-Z]\)?)\s*\}\$*")
# A reply that opens with an option letter and a bracket: "A) because of the rules", "(A) since ...".
_LEADING = re.compile(r"\(?[A-Z]\)")


def read_answer(text: str, options: list[str]) -> Reading:
    """The option a Standard or CoT reply settles on: the answer after its last cue ("The correct option
    is:", "The answer is", "Answer:", ...) that names an option, else the reply's last or first line if
    it is nothing but an option ("B", "(B)", "B) False", "False"), else the letter the reply opens
    with ("A) because ..."), as Logic-LM's scorer reads it. An answer naming two options, an
    option outside the answer space, or a letter with another option's text is no answer, with the reason."""
    if not text.strip():
        return Reading(None, "the reply is empty")
    letters = option_letters(options)
    text = _BOXED.sub(r"\1", text)
    # The last statement of an answer is the one the reply settles on.
    for cue in reversed(list(_CUE.finditer(text))):
        span = text[cue.end():].split("\n", 1)[0]
        reading = _read_span(span, options, letters)
        if reading is not None:
            return reading
    lines = [line.strip(" \t*_`") for line in text.strip().splitlines() if line.strip(" \t*_`")]
    for line in dict.fromkeys([lines[-1], lines[0]]) if lines else []:
        reading = _read_span(line, options, letters, whole=True)
        if reading is not None:
            return reading
    # Logic-LM's baseline scorer (baselines/evaluation.py) reads a reply that starts with "A)" as A, with
    # whatever reasoning follows. It is read last: a cue or a last line that names an option is the
    # reply's later word and wins over its opening. Only "A)" and "(A)" count, not a bare "A" or "A.",
    # which also open ordinary sentences ("A man walks ...", "A. Smith said ...").
    if lines and _LEADING.match(lines[0]):
        reading = _read_span(lines[0], options, letters)
        if reading is not None:
            return reading
    return Reading(None, "the reply names no option (no 'The correct option is: X', 'The answer is X', "
                         "'Answer: X' or a bare option letter)")


def _read_span(span: str, options: list[str], letters: dict[str, str], whole: bool = False) -> Reading | None:
    """The answer at the start of `span` (the text after a cue, or with `whole`, a line that must be
    nothing but the answer); None when it names nothing."""
    shown = quote(span.strip())
    span = span.lstrip()
    match = _LETTER.match(span)
    rest = span[match.end():] if match is not None else ""
    letter = (match.group(1) or match.group(2)) if match is not None else ""
    if match is not None and letter not in letters and letter == "I" and re.match(r"\s+[a-z]", rest):
        match = None  # "I think ...": the pronoun, not an option I
    if match is not None:
        another = _ANOTHER.match(rest)
        if another is not None and another.group(1) != letter:
            return Reading(None, f"the reply names more than one option ({letter}, {another.group(1)}): {shown}")
        if letter not in letters:
            return Reading(None, f"the reply names option {letter}, which is not one of "
                                 f"{', '.join(sorted(letters)) or 'the options'}: {shown}")
        after = _LETTER_END.sub("", rest, count=1)
        named, tail = _option_text(after, options, letters)
        if named is not None and named != letter:
            return Reading(None, f"the reply names option {letter} with the text of option {named} "
                                 f"({letters[named]!r}): {shown}")
        if whole and _words(tail if named is not None else after):
            return None  # "A man walks ...": a sentence, not an answer
        return Reading(letter)
    named, tail = _option_text(span, options, letters)
    if named is not None and not (whole and _words(tail)):
        return Reading(named)
    return None


def _option_text(span: str, options: list[str], letters: dict[str, str]) -> tuple[str | None, str]:
    """The option whose text `span` begins with ("False.", "The quail is second."), or whose truth value
    it states ("Uncertain" for an Unknown option), and the text after it; the longest text wins."""
    start = span.lstrip(" \t*_`\"'")
    lowered = start.lower()
    texts = {letter: text.strip(" .").lower() for letter, text in letters.items() if text.strip(" .")}
    found = [(len(text), letter) for letter, text in texts.items()
             if lowered.startswith(text) and not lowered[len(text):][:1].isalnum()]
    if found:
        size, letter = max(found)
        return letter, start[size:]
    word = re.match(r"[a-z]+", lowered)
    named = map_answer(word.group(0), options) if word is not None else None
    return (named, start[word.end():]) if named is not None and word is not None else (None, span)


def _words(text: str) -> bool:
    """Whether `text` says more than punctuation and markup."""
    return bool(text.strip(" \t.!*_`\"'"))


# SymbCoT's answer form (symbcot.py and verifier.py, post_process_c): "Final answer: {true}", "Final answer:
# {B}", else the first word in curly brackets anywhere in the reply. Their "Final answer" is case-sensitive,
# which misses LogicalDeduction's own "Final Answer: {G}"; here it is not.
_FINAL = re.compile(r"final answer\s*:\s*\{([^{}\n]*)\}", re.IGNORECASE)
_BRACED = re.compile(r"\{(\w+)\}")


def read_final(text: str, options: list[str], closed_world: bool = False) -> Reading:
    """The option a reply's "Final answer: {X}" names (else its first `{word}`): an option letter, or a
    truth value matched to the option of that text (`{uncertain}` to Unknown; in a closed world, Unknown to
    False, as the solvers' verdicts are). What names no option is no answer, with the reason: never
    the Unknown option by default, as SymbCoT's verifier maps it."""
    if not text.strip():
        return Reading(None, "the reply is empty")
    match = _FINAL.search(text) or _BRACED.search(text)
    if match is None:
        return Reading(None, "the reply states no final answer (no 'Final answer: {X}' nor a word in curly brackets)")
    said = match.group(1).strip().strip("()").strip()
    letters = option_letters(options)
    letter = said.upper() if len(said) == 1 and said.upper() in letters else map_answer(said, options, closed_world)
    if letter is None:
        return Reading(None, f"the final answer {{{said}}} is not one of the options "
                             f"({', '.join(f'{k}) {v}' for k, v in letters.items())})")
    return Reading(letter)

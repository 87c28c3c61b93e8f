"""Format lint of registered prompts: findings an author sees before a version is saved.

:func:`lint_prompt` checks a prompt version's system template and named user templates.
Each :class:`FormatFinding` has a stable ``code``, a ``level``, a plain-words ``message``,
the ``template`` it is about (``"system"``, a user template's name, or None for the
prompt as a whole) and a ``position`` in that template (or None).

The rules, by code:

``unbalanced_braces``, ``invalid_placeholder`` (error)
    The template does not parse (see :mod:`assembler.templates`); every error is listed.
``not_curly_convertible`` (warning)
    A ``format`` template whose literal braces cannot be written in the ``curly`` syntax,
    so the Langfuse-compatible API cannot serve it (see
    :func:`~assembler.templates.to_curly`).
``system_text_in_user`` (warning)
    A user template that opens by telling the model who it is ("You are a …", "Act as …",
    "Your role is …", "I want you to act as …"): that belongs in the system text, which
    the interface sends separately; in the user text it is duplicated.
``repeats_system_text`` (warning)
    A user template that repeats a sentence of the system text (one of four words or
    more; case and spacing ignored).
``system_mismatch`` (error)
    The system template differs from the prompt's declared expected system message
    (compared exactly, as written, before rendering); the message shows the first
    difference.
``citation_order`` (warning)
    In a RAG context block (the lines after a ``Context:`` line, up to the next
    ``Question:`` or ``Answer:`` line), the snippets that start a line with ``[n]`` are
    not numbered ``[1]``, ``[2]``, … in order.
``question_answer_layout`` (warning)
    A user template with a context block, or with both ``Question:`` and ``Answer:``
    lines, that breaks the layout "Question: …" then a final "Answer:" line the model
    completes: no ``Question:`` line, no ``Answer:`` line after the last question, or
    text after the final ``Answer:``.
``invalid_variable_name`` (error), ``undeclared_variable`` (error), ``unused_variable`` (warning)
    Only when the prompt declares its variables: a declared name that is not a plain
    name, a name a template uses but the declaration lacks (callers would not know to
    send it), and a declared name no template uses.

Rendering adds one rule, :data:`EMPTY_VALUE` (see :func:`empty_values`): a placeholder
that renders empty in a template whose other text does not (an adapter instruction's
"…validates against this JSON schema:" followed by nothing). Renders report it as a
warning; the version editor, as ``info``, for the adapter instructions of the version's
task rendered without instruction context.

Labels (``Question:``, ``Answer:``, ``Context:``) are matched at the start of a line,
ignoring case.

>>> findings = lint_prompt(syntax="curly", system="You are a research paper assistant.",
...     user_templates={"question": "You are a helper. Question: {{ q }}"},
...     variables=["q", "topic"], expected_system=None)
>>> [(finding.code, finding.template) for finding in findings]
[('system_text_in_user', 'question'), ('unused_variable', None)]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from assembler.templates import (
    NAME_PATTERN,
    Placeholder,
    Position,
    RenderManyResult,
    RenderResult,
    TemplateConversionError,
    check,
    check_syntax,
    parse,
    to_curly,
)

FindingLevel: TypeAlias = Literal["error", "warning", "info"]

#: The code of the finding about a placeholder that rendered empty where text is expected.
EMPTY_VALUE = "empty_value"

#: The ``template`` of findings about the system template.
SYSTEM_TEMPLATE = "system"

# A user template's opening that tells the model who it is. "You are" needs an article or
# a capitalized name after it, so "You are given the context below" is not flagged.
_SYSTEM_OPENER = re.compile(
    r"""\A\s*(?P<phrase>
        (?i:you\s+are|you're|you\s+will\s+be|from\s+now\s+on,?\s+you\s+are)
            \s+(?:(?i:a|an|the|my|our|now)\b|[A-Z])
      | (?i:(?:you\s+will\s+)?act\s+as|acting\s+as|i\s+want\s+you\s+to\s+act\s+as)\b
      | (?i:your\s+(?:role|persona|job)\s+is)\b
      | (?i:pretend\s+(?:to\s+be|you\s+are)|imagine\s+you\s+are)\b
      | (?i:as\s+an?\s+(?:ai|assistant|language\s+model|helpful|expert))\b
      | (?i:system\s*:)
    )""",
    re.VERBOSE,
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_MIN_REPEATED_WORDS = 4
_LABEL = re.compile(r"^[ \t]*(?P<label>question|answer|context)[ \t]*:", re.IGNORECASE | re.M)
_SNIPPET = re.compile(r"^[ \t]*\[(?P<number>\d+)\]", re.M)
_EXCERPT_BEFORE = 15
_EXCERPT_AFTER = 25


@dataclass(frozen=True, slots=True)
class FormatFinding:
    """One finding of :func:`lint_prompt`."""

    code: str
    level: FindingLevel
    message: str
    template: str | None
    position: Position | None

    def to_dict(self) -> dict[str, object]:
        """JSON-safe form; ``position`` is ``{"offset", "line", "column"}`` or None.

        >>> FormatFinding("unused_variable", "warning", "…", None, None).to_dict()
        {'code': 'unused_variable', 'level': 'warning', 'message': '…', 'template': None, \
'position': None}
        """
        return {
            "code": self.code,
            "level": self.level,
            "message": self.message,
            "template": self.template,
            "position": None if self.position is None else self.position.to_dict(),
        }


def lint_prompt(
    *,
    syntax: str,
    system: str,
    user_templates: Mapping[str, str],
    variables: Sequence[str] | None = None,
    expected_system: str | None = None,
) -> list[FormatFinding]:
    """Every finding about one prompt version, in a deterministic order: the system
    template's first, then each user template's (by name), each by position, then the
    findings about the prompt as a whole. ``variables`` None means the prompt declares no
    variables (the variable rules are skipped); ``expected_system`` None skips the
    system-message comparison.

    >>> findings = lint_prompt(syntax="format", system="You grade.",
    ...     user_templates={"rag": "Context:\\n[1] a\\n[3] b\\nQuestion: {q}\\nAnswer: {a}"},
    ...     variables=["q"], expected_system="You grade.")
    >>> for finding in findings:
    ...     print(finding.code, finding.level, finding.template, finding.position.line)
    citation_order warning rag 3
    question_answer_layout warning rag 5
    undeclared_variable error rag 5
    """
    checked = check_syntax(syntax)
    templates = {
        SYSTEM_TEMPLATE: system,
        **{name: user_templates[name] for name in sorted(user_templates)},
    }
    findings: list[FormatFinding] = []
    first_use: dict[str, tuple[str, Position]] = {}
    for name, text in templates.items():
        result = check(text, checked)
        for error in result.errors:
            findings.append(FormatFinding(error.code, "error", error.message, name, error.position))
        for placeholder in result.placeholders:
            if placeholder.name not in first_use:
                first_use[placeholder.name] = (name, Position.of(text, placeholder.offset))
        if checked == "format" and not result.errors:
            findings.extend(_curly_conversion(name, text))
    if expected_system is not None and system != expected_system:
        findings.append(_system_mismatch(system, expected_system))
    for name in sorted(user_templates):
        text = user_templates[name]
        findings.extend(_system_like(name, text, system))
        findings.extend(_citations(name, text))
        findings.extend(_question_answer_layout(name, text))
    if variables is not None:
        findings.extend(_variables(variables, first_use))
    rank = {name: index for index, name in enumerate(templates)}
    findings.sort(
        key=lambda finding: (
            len(rank) if finding.template is None else rank[finding.template],
            -1 if finding.position is None else finding.position.offset,
            finding.code,
            finding.message,
        )
    )
    return findings


def _curly_conversion(name: str, text: str) -> list[FormatFinding]:
    try:
        to_curly(text, "format")
    except TemplateConversionError as error:
        return [
            FormatFinding(
                "not_curly_convertible",
                "warning",
                f"{error.message}, so the Langfuse-compatible API cannot serve this template.",
                name,
                error.position,
            )
        ]
    return []


def _system_mismatch(system: str, expected: str) -> FormatFinding:
    index = next(
        (i for i, (left, right) in enumerate(zip(system, expected, strict=False)) if left != right),
        min(len(system), len(expected)),
    )
    position = Position.of(system, index)
    return FormatFinding(
        "system_mismatch",
        "error",
        f"The system text differs from the expected system message at line {position.line}, "
        f"column {position.column}: the text has {_excerpt(system, index)} where the "
        f"expected message has {_excerpt(expected, index)}.",
        SYSTEM_TEMPLATE,
        position,
    )


def _excerpt(text: str, index: int) -> str:
    """A short quoted piece of ``text`` around ``index``, newlines shown as ``\\n``."""
    if index >= len(text):
        before = text[max(0, index - _EXCERPT_BEFORE) :]
        return f'"{_visible(before)}" then the end of the text'
    start = max(0, index - _EXCERPT_BEFORE)
    end = min(len(text), index + _EXCERPT_AFTER)
    piece = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
    return f'"{_visible(piece)}"'


def _visible(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def _system_like(name: str, text: str, system: str) -> list[FormatFinding]:
    findings: list[FormatFinding] = []
    repeated = _repeated_sentence(text, system)
    if repeated is not None:
        offset, sentence = repeated
        findings.append(
            FormatFinding(
                "repeats_system_text",
                "warning",
                f"The user template repeats the system text ({sentence!r}); the system text "
                "is sent separately, so the model would read it twice.",
                name,
                Position.of(text, offset),
            )
        )
    opener = _SYSTEM_OPENER.match(text)
    if opener is not None and (repeated is None or repeated[0] != opener.start("phrase")):
        findings.append(
            FormatFinding(
                "system_text_in_user",
                "warning",
                f"The user template opens by telling the model who it is "
                f"({opener.group('phrase')!r}); that belongs in the system text, which the "
                "interface sends separately.",
                name,
                Position.of(text, opener.start("phrase")),
            )
        )
    return findings


def _repeated_sentence(text: str, system: str) -> tuple[int, str] | None:
    """The earliest place ``text`` repeats a long-enough sentence of ``system``."""
    best: tuple[int, str] | None = None
    for match in _SENTENCE.finditer(system):
        words = match.group().split()
        if len(words) < _MIN_REPEATED_WORDS:
            continue
        pattern = r"\s+".join(re.escape(word) for word in words)
        found = re.search(pattern, text, re.IGNORECASE)
        if found is not None and (best is None or found.start() < best[0]):
            best = (found.start(), " ".join(words))
    return best


def _citations(name: str, text: str) -> list[FormatFinding]:
    findings: list[FormatFinding] = []
    labels = list(_LABEL.finditer(text))
    for index, label in enumerate(labels):
        if label.group("label").lower() != "context":
            continue
        end = next(
            (
                later.start()
                for later in labels[index + 1 :]
                if later.group("label").lower() != "context"
            ),
            len(text),
        )
        expected = 1
        for snippet in _SNIPPET.finditer(text, label.end(), end):
            number = int(snippet.group("number"))
            if number != expected:
                findings.append(
                    FormatFinding(
                        "citation_order",
                        "warning",
                        f"Context snippet [{number}] is where [{expected}] should be; number "
                        "the snippets [1], [2], … in the order they appear.",
                        name,
                        Position.of(text, snippet.start("number") - 1),
                    )
                )
                break
            expected += 1
    return findings


def _question_answer_layout(name: str, text: str) -> list[FormatFinding]:
    labels = [(label.group("label").lower(), label) for label in _LABEL.finditer(text)]
    questions = [label for kind, label in labels if kind == "question"]
    answers = [label for kind, label in labels if kind == "answer"]
    contexts = [label for kind, label in labels if kind == "context"]
    if not contexts and not (questions and answers):
        return []

    def finding(message: str, offset: int) -> FormatFinding:
        return FormatFinding(
            "question_answer_layout", "warning", message, name, Position.of(text, offset)
        )

    if not questions:
        return [
            finding(
                "The prompt has a context block but no 'Question:' line; lay it out as "
                "'Question: …' then a final 'Answer:'.",
                contexts[0].start("label"),
            )
        ]
    last_question = questions[-1]
    after = [answer for answer in answers if answer.start() > last_question.start()]
    if not after:
        return [
            finding(
                "No 'Answer:' line follows the last 'Question:'; end the prompt with 'Answer:' "
                "for the model to complete.",
                last_question.start("label"),
            )
        ]
    final = after[-1]
    if text[final.end() :].strip():
        return [
            finding(
                "Text follows the final 'Answer:'; the prompt should end there, so the model "
                "writes the answer.",
                final.start("label"),
            )
        ]
    return []


def _variables(
    declared: Sequence[str], first_use: Mapping[str, tuple[str, Position]]
) -> list[FormatFinding]:
    findings: list[FormatFinding] = []
    names = list(dict.fromkeys(declared))
    for name in names:
        if not NAME_PATTERN.fullmatch(name):
            findings.append(
                FormatFinding(
                    "invalid_variable_name",
                    "error",
                    f"The declared variable {name!r} is not a plain name (a letter or '_', "
                    "then letters, digits or '_').",
                    None,
                    None,
                )
            )
        elif name not in first_use:
            findings.append(
                FormatFinding(
                    "unused_variable",
                    "warning",
                    f"The variable {name!r} is declared but no template uses it.",
                    None,
                    None,
                )
            )
    for name, (template, position) in first_use.items():
        if name not in names:
            findings.append(
                FormatFinding(
                    "undeclared_variable",
                    "error",
                    f"The template uses {name!r}, which the prompt does not declare; callers "
                    "would not know to send it.",
                    template,
                    position,
                )
            )
    return findings


_CONTEXT_CHARS = 40


def empty_values(
    template: str,
    syntax: str,
    rendered: RenderResult,
    *,
    name: str,
    what: str,
    hint: str = "Give '{name}' a value.",
    level: FindingLevel = "warning",
) -> list[FormatFinding]:
    """An :data:`EMPTY_VALUE` finding for each placeholder of ``template`` that
    ``rendered`` (its render) shows empty while the rest of the text is not: the words
    around it expect a value. A render that is blank as a whole is not flagged (an
    adapter addition with nothing to add is left out on purpose).

    ``name`` is the findings' ``template``; ``what`` names the template in the message,
    ``hint`` says what to do (``{name}``: the variable).

    >>> text = "Reply with JSON that validates against this JSON schema:\\n{{ json_schema }}"
    >>> from assembler.templates import render
    >>> [finding] = empty_values(text, "curly", render(text, "curly", {}, lenient=True),
    ...     name="adapter", what="The openai_endpoint adapter's system addition",
    ...     hint="Pass '{name}' in the instruction context.")
    >>> print(finding.message)  # doctest: +NORMALIZE_WHITESPACE
    The openai_endpoint adapter's system addition renders 'json_schema' empty: "…that
    validates against this JSON schema:" is followed by nothing. Pass 'json_schema' in the
    instruction context.
    """
    if not rendered.empty or not rendered.text.strip():
        return []
    parts = parse(template, syntax).parts
    findings: list[FormatFinding] = []
    for variable in rendered.empty:
        index = next(
            i
            for i, part in enumerate(parts)
            if isinstance(part, Placeholder) and part.name == variable
        )
        placeholder = parts[index]
        assert isinstance(placeholder, Placeholder)
        before = _literal(parts, index - 1).rstrip()
        after = _literal(parts, index + 1).strip()
        if before and after:
            where = f'nothing comes between "{_tail(before)}" and "{_head(after)}"'
        elif before:
            where = f'"{_tail(before)}" is followed by nothing'
        else:
            where = f'nothing comes before "{_head(after)}"'
        findings.append(
            FormatFinding(
                EMPTY_VALUE,
                level,
                f"{what} renders '{variable}' empty: {where}. {hint.format(name=variable)}",
                name,
                Position.of(template, placeholder.offset),
            )
        )
    return findings


def rendered_findings(
    templates: Mapping[str, str], syntax: str, rendered: RenderManyResult
) -> list[FormatFinding]:
    """:func:`empty_values` for a prompt version's templates (``system`` and user
    templates by name) as :func:`~assembler.templates.render_many` rendered them.

    >>> from assembler.templates import render_many
    >>> templates = {"system": "You grade.", "default": "Question: {{ q }}"}
    >>> [finding] = rendered_findings(templates, "curly",
    ...     render_many(templates, "curly", {"q": ""}))
    >>> print(finding.template, finding.message)  # doctest: +NORMALIZE_WHITESPACE
    default The user template 'default' renders 'q' empty: "Question:" is followed by
    nothing. Give 'q' a value.
    """
    findings: list[FormatFinding] = []
    for name, template in templates.items():
        what = "The system template" if name == SYSTEM_TEMPLATE else f"The user template '{name}'"
        result = RenderResult(rendered.texts[name], (), rendered.empty.get(name, ()))
        findings += empty_values(template, syntax, result, name=name, what=what)
    return findings


def _literal(parts: Sequence[str | Placeholder], index: int) -> str:
    if 0 <= index < len(parts):
        part = parts[index]
        return part if isinstance(part, str) else ""
    return ""


def _tail(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _CONTEXT_CHARS else "…" + text[-_CONTEXT_CHARS:].lstrip()


def _head(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _CONTEXT_CHARS else text[:_CONTEXT_CHARS].rstrip() + "…"

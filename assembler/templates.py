"""Templates of registered prompts: parsing, variables, rendering and conversion.

A template is text with placeholders, written in one of two syntaxes chosen per prompt
version:

``curly`` (the default)
    ``{{ name }}``, spaces inside optional, as Langfuse, MLflow and Humanloop write it.
    Single braces are plain text, so JSON examples need no escaping. A placeholder opens
    at ``{{`` and closes at the next ``}}`` (exactly how the Langfuse SDK's ``compile()``
    scans), so the curly syntax has no way to write a literal ``{{``.

``format``
    ``{name}``, with ``{{`` and ``}}`` standing for a literal brace, as in Python's
    ``str.format``. No spaces inside a placeholder.

In both syntaxes a placeholder holds one plain name: an ASCII letter or underscore, then
letters, digits or underscores. Attribute access (``a.b``), indexing (``a[0]``),
conversions (``a!r``), format specs (``a:>10``), positional fields (``{}``, ``{0}``) and
expressions are syntax errors, and nothing in a template is ever evaluated: rendering
inserts text, it never calls ``str.format`` or ``eval``.

Values are turned into text by :func:`value_text`: a ``str`` as is, ``None`` as the empty
string (as the Langfuse SDK does), booleans as ``true``/``false``, numbers, mappings and
lists as JSON. Inserted text is never scanned again, so a value containing ``{{ x }}`` is
inserted literally. (The Langfuse SDK's ``compile()`` applies Python's ``str()`` to the
values it is given, so for the same curly template the two agree on strings, numbers and
None, but not on booleans, lists or mappings: ``True`` there, ``true`` here.)

>>> render("Hello {{ name }}!", "curly", {"name": "Ada"}).text
'Hello Ada!'
>>> render('{{"id": {id}}}', "format", {"id": 7}).text
'{"id": 7}'
>>> variables("{{ b }} then {{ a }} then {{ b }}", "curly")
('b', 'a')
>>> to_curly("Q: {question}", "format")
'Q: {{question}}'
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

Syntax: TypeAlias = Literal["curly", "format"]

SYNTAXES: tuple[Syntax, ...] = ("curly", "format")
DEFAULT_SYNTAX: Syntax = "curly"

#: What a placeholder may hold: a plain ASCII identifier.
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_BRACE = re.compile(r"[{}]")

SyntaxErrorCode: TypeAlias = Literal["unbalanced_braces", "invalid_placeholder"]

# Why a placeholder's content is not a plain name, keyed by the first character that is
# not part of a name. Checked in this order, so `a.b[0]` is reported as attribute access.
_WHY_NOT_A_NAME = {
    ".": "attribute access ('.') is not allowed",
    "[": "indexing ('[') is not allowed",
    "!": "conversions ('!') are not allowed",
    ":": "format specs (':') are not allowed",
    "(": "calls ('(') are not allowed",
    "|": "filters ('|') are not allowed",
}


class TemplateError(ValueError):
    """Base class of every error this module raises about a template or its values."""


@dataclass(frozen=True, slots=True)
class Position:
    """A place in a template: ``offset`` counts characters from 0; ``line`` and ``column``
    count from 1 (columns in characters, not bytes)."""

    offset: int
    line: int
    column: int

    @classmethod
    def of(cls, text: str, offset: int) -> Position:
        """The position of ``offset`` in ``text``.

        >>> Position.of("ab\\ncd", 4)
        Position(offset=4, line=2, column=2)
        """
        line_start = text.rfind("\n", 0, offset) + 1
        return cls(offset, text.count("\n", 0, offset) + 1, offset - line_start + 1)

    def to_dict(self) -> dict[str, int]:
        """JSON-safe form: ``{"offset": ..., "line": ..., "column": ...}``."""
        return {"offset": self.offset, "line": self.line, "column": self.column}


class TemplateSyntaxError(TemplateError):
    """A template that does not parse. ``code`` is ``unbalanced_braces`` (a brace opened
    and never closed, or a lone ``}`` in the format syntax) or ``invalid_placeholder``
    (a placeholder that does not hold one plain name)."""

    def __init__(self, code: SyntaxErrorCode, message: str, position: Position) -> None:
        self.code: SyntaxErrorCode = code
        self.message = message
        self.position = position
        super().__init__(f"{message} (line {position.line}, column {position.column})")

    def to_dict(self) -> dict[str, object]:
        """JSON-safe form: code, message and position."""
        return {"code": self.code, "message": self.message, "position": self.position.to_dict()}


class UnknownSyntaxError(TemplateError):
    """A syntax name that is not one of :data:`SYNTAXES`."""

    def __init__(self, syntax: str) -> None:
        self.syntax = syntax
        super().__init__(f"unknown template syntax {syntax!r}; use one of {', '.join(SYNTAXES)}")


class MissingVariablesError(TemplateError):
    """Rendering needs variables the caller did not give.

    ``names`` lists every missing name once, in order of first use. ``templates`` maps
    each missing name to the templates that use it (only filled by :func:`render_many`).
    """

    def __init__(
        self, names: Iterable[str], templates: Mapping[str, tuple[str, ...]] | None = None
    ) -> None:
        self.names = tuple(names)
        self.templates = dict(templates or {})
        super().__init__(f"missing variables: {', '.join(self.names)}")


class TemplateValueError(TemplateError):
    """A value that :func:`value_text` cannot turn into text."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"variable {name!r}: {reason}")


class TemplateConversionError(TemplateError):
    """A ``format`` template whose literal text cannot be written in the ``curly`` syntax.

    The curly syntax has no escape: a literal ``{{`` in the text, or a literal ``{`` right
    before a placeholder, would read as the start of a placeholder.
    """

    def __init__(self, message: str, position: Position) -> None:
        self.message = message
        self.position = position
        super().__init__(f"{message} (line {position.line}, column {position.column})")


@dataclass(frozen=True, slots=True)
class Placeholder:
    """One placeholder: the variable ``name`` and where it is in the source
    (``source[offset:end]`` is the whole placeholder, braces included)."""

    name: str
    offset: int
    end: int


@dataclass(frozen=True, slots=True)
class RenderResult:
    """A rendered template: its ``text``, the ``unused`` names, given values no
    placeholder asked for (sorted), and the ``empty`` ones, placeholders that rendered
    blank (no value, or a blank one), in order of first use."""

    text: str
    unused: tuple[str, ...]
    empty: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RenderManyResult:
    """Several templates rendered with one set of values: ``texts`` by template name (in
    the order given), and the ``unused`` names, given values no template asked for
    (sorted)."""

    texts: dict[str, str]
    unused: tuple[str, ...]
    empty: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TemplateCheck:
    """What :func:`check` found: the valid ``placeholders`` and the syntax ``errors``,
    each in source order."""

    placeholders: tuple[Placeholder, ...]
    errors: tuple[TemplateSyntaxError, ...]

    @property
    def variables(self) -> tuple[str, ...]:
        """The names the valid placeholders use, each once, in order of first use."""
        return tuple(dict.fromkeys(placeholder.name for placeholder in self.placeholders))


@dataclass(frozen=True, slots=True)
class ParsedTemplate:
    """A template split into literal text and placeholders; build it with :func:`parse`.

    ``parts`` alternate freely between ``str`` (literal text, escapes already resolved)
    and :class:`Placeholder`.
    """

    source: str
    syntax: Syntax
    parts: tuple[str | Placeholder, ...]

    @property
    def variables(self) -> tuple[str, ...]:
        """The names the placeholders use, each once, in order of first use."""
        return tuple(
            dict.fromkeys(part.name for part in self.parts if isinstance(part, Placeholder))
        )

    def render(self, values: Mapping[str, object], *, lenient: bool = False) -> RenderResult:
        """Fill the placeholders; see :func:`render`."""
        missing = [name for name in self.variables if name not in values]
        if missing and not lenient:
            raise MissingVariablesError(missing)
        texts = {name: value_text(values[name], name) for name in self.variables if name in values}
        text = "".join(
            part if isinstance(part, str) else texts.get(part.name, "") for part in self.parts
        )
        used = set(self.variables)
        # isspace() stops at the first other character: a long value costs nothing here.
        empty = tuple(name for name in self.variables if _blank(texts.get(name, "")))
        return RenderResult(text, tuple(sorted(name for name in values if name not in used)), empty)


def check_syntax(syntax: str) -> Syntax:
    """``syntax`` if it is one of :data:`SYNTAXES`, else :class:`UnknownSyntaxError`.

    >>> check_syntax("format")
    'format'
    """
    if syntax == "curly":
        return "curly"
    if syntax == "format":
        return "format"
    raise UnknownSyntaxError(syntax)


def parse(template: str, syntax: str = DEFAULT_SYNTAX) -> ParsedTemplate:
    """Parse ``template``; raise :class:`TemplateSyntaxError` at its first error.

    >>> parse("Hi {{name}}, {x}", "curly").parts
    ('Hi ', Placeholder(name='name', offset=3, end=11), ', {x}')
    >>> parse("Hi {{ user.name }}", "curly")
    Traceback (most recent call last):
    ...
    assembler.templates.TemplateSyntaxError: {{ user.name }}: attribute access ('.') is not \
allowed; a placeholder holds one plain name, like {{ name }} (line 1, column 4)
    """
    return _parse_cached(template, check_syntax(syntax))


@functools.lru_cache(maxsize=512)
def _parse_cached(template: str, syntax: Syntax) -> ParsedTemplate:
    tokens, errors = _scan(template, syntax)
    if errors:
        raise errors[0]
    parts: list[str | Placeholder] = []
    for kind, value, offset, end in tokens:
        if kind == "placeholder":
            parts.append(Placeholder(value, offset, end))
        elif parts and isinstance(parts[-1], str):
            parts[-1] += value
        else:
            parts.append(value)
    return ParsedTemplate(template, syntax, tuple(parts))


def check(template: str, syntax: str = DEFAULT_SYNTAX) -> TemplateCheck:
    """Every valid placeholder and every syntax error in ``template``, for editors and lint
    that show all problems at once (:func:`parse` stops at the first). After an error,
    scanning resumes past the faulty placeholder; an unclosed brace ends the scan.

    >>> result = check("{a.b} and {c[0]} and {ok}", "format")
    >>> [error.position.column for error in result.errors], result.variables
    ([1, 11], ('ok',))
    """
    tokens, errors = _scan(template, check_syntax(syntax))
    placeholders = tuple(
        Placeholder(value, offset, end)
        for kind, value, offset, end in tokens
        if kind == "placeholder"
    )
    return TemplateCheck(placeholders, tuple(errors))


def variables(template: str, syntax: str = DEFAULT_SYNTAX) -> tuple[str, ...]:
    """The variable names ``template`` uses, each once, in order of first use: exactly the
    names :func:`render` needs.

    >>> variables("{greeting}, {name}! {{not_a_variable}} {name}", "format")
    ('greeting', 'name')
    """
    return parse(template, syntax).variables


def used_variables(syntax: str, system: str, user_templates: Mapping[str, str]) -> tuple[str, ...]:
    """Every variable a prompt version's texts use, each once, in order of first use: the
    system text's, then each user template's by name. A text with a syntax error gives
    the names it could read (as :func:`check` does).

    >>> used_variables("curly", "Grade {{ subject }}.", {"short": "{{ b }}", "long": "{{ a }}"})
    ('subject', 'a', 'b')
    """
    names: dict[str, None] = {}
    for text in (system, *(user_templates[name] for name in sorted(user_templates))):
        names.update(dict.fromkeys(check(text, syntax).variables))
    return tuple(names)


def render(
    template: str,
    syntax: str,
    values: Mapping[str, object],
    *,
    lenient: bool = False,
) -> RenderResult:
    """Fill ``template``'s placeholders with ``values`` (converted by :func:`value_text`).

    A missing variable raises :class:`MissingVariablesError` naming every missing one, in
    order of first use; with ``lenient=True`` (used for adapter instructions) a missing
    variable renders as the empty string instead. Values no placeholder uses are reported
    in ``unused``. Inserted values are never scanned for placeholders.

    >>> result = render("{{ a }} and {{ b }}", "curly", {"a": "{{ b }}", "b": None, "c": 1})
    >>> result.text, result.unused
    ('{{ b }} and ', ('c',))
    >>> render("{{ a }} {{ b }} {{ a }} {{ c }}", "curly", {"b": 1})
    Traceback (most recent call last):
    ...
    assembler.templates.MissingVariablesError: missing variables: a, c
    >>> render("[{{ a }}]", "curly", {}, lenient=True).text
    '[]'
    """
    return parse(template, syntax).render(values, lenient=lenient)


def render_many(
    templates: Mapping[str, str],
    syntax: str,
    values: Mapping[str, object],
    *,
    lenient: bool = False,
) -> RenderManyResult:
    """Render several named templates (a prompt version's system and user templates) with
    one set of values.

    Every template is parsed first, so a syntax error in any is raised before rendering.
    A name missing from ``values`` is reported once for all templates, in order of first
    use going through the templates in the order given; ``unused`` lists the given names
    no template uses.

    >>> result = render_many({"system": "You help {{ user }}.", "question": "Q: {{ q }}"},
    ...     "curly", {"user": "Ada", "q": "Why?"})
    >>> result.texts
    {'system': 'You help Ada.', 'question': 'Q: Why?'}
    >>> try:
    ...     render_many({"s": "{{ a }}", "u": "{{ b }} {{ a }}"}, "curly", {})
    ... except MissingVariablesError as error:
    ...     print(error.names, error.templates)
    ('a', 'b') {'a': ('s', 'u'), 'b': ('u',)}
    """
    parsed = {name: parse(text, syntax) for name, text in templates.items()}
    users: dict[str, list[str]] = {}
    for template_name, template in parsed.items():
        for variable in template.variables:
            users.setdefault(variable, []).append(template_name)
    missing = {name: tuple(where) for name, where in users.items() if name not in values}
    if missing and not lenient:
        raise MissingVariablesError(missing, missing)
    rendered = {name: template.render(values, lenient=True) for name, template in parsed.items()}
    return RenderManyResult(
        {name: result.text for name, result in rendered.items()},
        tuple(sorted(name for name in values if name not in users)),
        {name: result.empty for name, result in rendered.items()},
    )


def _blank(text: str) -> bool:
    return not text or text.isspace()


def value_text(value: object, name: str = "value") -> str:
    """The text a value renders as; ``name`` is only used in error messages.

    ``str`` as is; ``None`` as ``""``; ``True``/``False`` as ``true``/``false``; ints and
    floats as JSON writes them (non-finite floats as ``NaN``, ``Infinity``,
    ``-Infinity``); mappings with string keys, lists and tuples as compact-but-readable
    JSON (``", "`` and ``": "`` separators, keys in their given order, non-ASCII kept).
    Anything else raises :class:`TemplateValueError`: a template never calls an object's
    own ``str()``.

    >>> [value_text(v) for v in ("a", None, True, 3, 2.5, [1, "x"], {"k": None})]
    ['a', '', 'true', '3', '2.5', '[1, "x"]', '{"k": null}']
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(_json_safe(value, name), ensure_ascii=False, allow_nan=True)


def _json_safe(value: object, name: str) -> object:
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return int(value)  # an IntEnum or other int subclass renders as its number
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        items = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TemplateValueError(name, f"mapping keys must be strings, got {key!r}")
            items[str(key)] = _json_safe(item, name)
        return items
    if isinstance(value, list | tuple):
        return [_json_safe(item, name) for item in value]
    raise TemplateValueError(
        name, f"cannot render a {type(value).__name__}; give text, a number, a list or a mapping"
    )


def to_curly(template: str, syntax: str) -> str:
    """``template`` rewritten in the ``curly`` syntax; rendering the result in ``curly``
    gives the same text as rendering ``template`` in ``syntax``.

    A ``curly`` template is returned as it is (after checking it parses). In a ``format``
    template each ``{name}`` becomes ``{{name}}`` and each ``{{``/``}}`` escape becomes a
    single literal brace. The curly syntax cannot write a literal ``{{`` (nor a literal
    ``{`` right before a placeholder): such a template raises
    :class:`TemplateConversionError` at the escape the literal ``{`` comes from, rather than turning
    literal text into a placeholder.

    >>> to_curly('{{"answer": "{answer}"}}', "format")
    '{"answer": "{{answer}}"}'
    >>> to_curly("{{{{raw}}}}", "format")
    Traceback (most recent call last):
    ...
    assembler.templates.TemplateConversionError: the literal braces '{{' cannot be written \
in the curly syntax, where they would open a placeholder (line 1, column 1)
    """
    checked = check_syntax(syntax)
    if checked == "curly":
        parse(template, checked)
        return template
    tokens, errors = _scan(template, checked)
    if errors:
        raise errors[0]
    out: list[str] = []
    open_brace: int | None = None  # offset of the escape behind a literal "{" just written
    for kind, value, offset, _ in tokens:
        if kind == "placeholder":
            if open_brace is not None:
                raise TemplateConversionError(
                    "a literal '{' right before a placeholder cannot be written in the curly "
                    "syntax, where '{{{' would open the placeholder one brace early",
                    Position.of(template, open_brace),
                )
            out.append("{{" + value + "}}")
            continue
        if kind == "escape" and value == "{":
            if open_brace is not None:
                raise TemplateConversionError(
                    "the literal braces '{{' cannot be written in the curly syntax, "
                    "where they would open a placeholder",
                    Position.of(template, open_brace),
                )
            open_brace = offset
        else:
            open_brace = None
        out.append(value)
    return "".join(out)


# -- scanning ----------------------------------------------------------------------------

# A token is (kind, value, offset, end): kind "text" (literal, no braces), "escape" (one
# literal brace written doubled, format syntax only) or "placeholder" (value = the name).
_Token: TypeAlias = tuple[Literal["text", "escape", "placeholder"], str, int, int]


def _scan(template: str, syntax: Syntax) -> tuple[list[_Token], list[TemplateSyntaxError]]:
    if syntax == "curly":
        return _scan_curly(template)
    return _scan_format(template)


def _scan_curly(template: str) -> tuple[list[_Token], list[TemplateSyntaxError]]:
    tokens: list[_Token] = []
    errors: list[TemplateSyntaxError] = []
    index = 0
    while True:
        start = template.find("{{", index)
        if start == -1:
            break
        if start > index:
            tokens.append(("text", template[index:start], index, start))
        close = template.find("}}", start + 2)
        if close == -1:
            errors.append(
                TemplateSyntaxError(
                    "unbalanced_braces",
                    "'{{' opens a placeholder that is never closed with '}}' (the curly "
                    "syntax has no escape for a literal '{{')",
                    Position.of(template, start),
                )
            )
            index = start
            break
        end = close + 2
        name = template[start + 2 : close].strip()
        problem = _name_problem(name, "curly")
        if problem is None:
            tokens.append(("placeholder", name, start, end))
        else:
            errors.append(
                TemplateSyntaxError(
                    "invalid_placeholder",
                    f"{template[start:end]}: {problem}; "
                    "a placeholder holds one plain name, like {{ name }}",
                    Position.of(template, start),
                )
            )
        index = end
    if index < len(template):
        tokens.append(("text", template[index:], index, len(template)))
    return tokens, errors


def _scan_format(template: str) -> tuple[list[_Token], list[TemplateSyntaxError]]:
    tokens: list[_Token] = []
    errors: list[TemplateSyntaxError] = []
    index, length = 0, len(template)
    while index < length:
        char = template[index]
        doubled = template.startswith(char, index + 1)
        if char not in "{}":
            brace = _BRACE.search(template, index)
            end = length if brace is None else brace.start()
            tokens.append(("text", template[index:end], index, end))
            index = end
        elif doubled:
            tokens.append(("escape", char, index, index + 2))
            index += 2
        elif char == "}":
            errors.append(
                TemplateSyntaxError(
                    "unbalanced_braces",
                    "a single '}' closes nothing; write '}}' for a literal brace",
                    Position.of(template, index),
                )
            )
            index += 1
        else:
            close = template.find("}", index + 1)
            if close == -1:
                errors.append(
                    TemplateSyntaxError(
                        "unbalanced_braces",
                        "'{' opens a placeholder that is never closed with '}'; "
                        "write '{{' for a literal brace",
                        Position.of(template, index),
                    )
                )
                break
            name = template[index + 1 : close]
            problem = _name_problem(name, "format")
            if problem is None:
                tokens.append(("placeholder", name, index, close + 1))
            else:
                errors.append(
                    TemplateSyntaxError(
                        "invalid_placeholder",
                        f"{template[index : close + 1]}: {problem}; "
                        "a placeholder holds one plain name, like {name}",
                        Position.of(template, index),
                    )
                )
            index = close + 1
    return tokens, errors


def _name_problem(name: str, syntax: Syntax) -> str | None:
    """Why ``name`` (a placeholder's content, stripped in curly) is not a plain name."""
    if NAME_PATTERN.fullmatch(name):
        return None
    if not name:
        return "a placeholder needs a name (positional placeholders are not supported)"
    if "{" in name:
        return "'{' inside a placeholder (a brace left open before it?)"
    for char, problem in _WHY_NOT_A_NAME.items():
        if char in name:
            return problem
    if name[0].isdigit():
        return "a name cannot start with a digit (positional placeholders are not supported)"
    if syntax == "format" and any(char.isspace() for char in name):
        return "spaces are not allowed inside {name}"
    return "only a plain name is allowed (letters, digits and '_'), not an expression"

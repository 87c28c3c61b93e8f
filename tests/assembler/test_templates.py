"""Templates of registered prompts: two syntaxes, plain names only, nothing evaluated."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping
from typing import NamedTuple

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from assembler.templates import (
    SYNTAXES,
    MissingVariablesError,
    Placeholder,
    Position,
    TemplateConversionError,
    TemplateSyntaxError,
    TemplateValueError,
    UnknownSyntaxError,
    check,
    parse,
    render,
    render_many,
    to_curly,
    value_text,
    variables,
)

PROPERTY = settings(max_examples=150, deadline=None)


# -- the two syntaxes ----------------------------------------------------------------------


def test_syntaxes_are_curly_and_format() -> None:
    assert SYNTAXES == ("curly", "format")


@pytest.mark.parametrize("template", ["{{name}}", "{{ name }}", "{{  name\t}}", "{{\nname\n}}"])
def test_curly_placeholders_allow_whitespace_inside(template: str) -> None:
    assert render(template, "curly", {"name": "Ada"}).text == "Ada"


def test_single_braces_are_plain_text_in_curly_so_json_needs_no_escaping() -> None:
    template = 'Reply as {"answer": "{{ answer }}", "tags": {"a": 1}}'
    assert render(template, "curly", {"answer": "yes"}).text == (
        'Reply as {"answer": "yes", "tags": {"a": 1}}'
    )


def test_format_placeholders_use_single_braces_and_doubled_braces_are_literal() -> None:
    template = 'Q{idx}: {question} {{"id": {idx}}}'
    assert render(template, "format", {"idx": 2, "question": "Why?"}).text == ('Q2: Why? {"id": 2}')


def test_the_default_syntax_is_curly() -> None:
    assert parse("{{ a }}").syntax == "curly"
    assert variables("{{ a }} {b}") == ("a",)


def test_parse_splits_text_and_placeholders_with_their_source_span() -> None:
    parsed = parse("Hi {{ name }}!", "curly")
    assert parsed.parts == ("Hi ", Placeholder("name", 3, 13), "!")
    assert parsed.source[3:13] == "{{ name }}"


def test_an_unknown_syntax_is_refused() -> None:
    with pytest.raises(UnknownSyntaxError, match="jinja"):
        parse("{{ a }}", "jinja")


# -- names are plain identifiers, errors carry the position --------------------------------


@pytest.mark.parametrize(
    ("template", "syntax", "words"),
    [
        ("Hi {{ user.name }}", "curly", "attribute access"),
        ("Hi {{ items[0] }}", "curly", "indexing"),
        ("Hi {{ a + b }}", "curly", "not an expression"),
        ("Hi {{ name | upper }}", "curly", "filters"),
        ("Hi {{ f(x) }}", "curly", "calls"),
        ("Hi {{ }}", "curly", "needs a name"),
        ("Hi {{ 0 }}", "curly", "cannot start with a digit"),
        ("Hi {user.name}", "format", "attribute access"),
        ("Hi {items[0]}", "format", "indexing"),
        ("Hi {name!r}", "format", "conversions"),
        ("Hi {name:>10}", "format", "format specs"),
        ("Hi {}", "format", "needs a name"),
        ("Hi {0}", "format", "cannot start with a digit"),
        ("Hi { name }", "format", "spaces are not allowed"),
        ("Hi {a+b}", "format", "not an expression"),
        ("Hi {naïve}", "format", "plain name"),
    ],
)
def test_a_placeholder_that_is_not_a_plain_name_is_rejected_at_its_position(
    template: str, syntax: str, words: str
) -> None:
    with pytest.raises(TemplateSyntaxError) as raised:
        parse(template, syntax)
    assert raised.value.code == "invalid_placeholder"
    assert words in raised.value.message
    assert raised.value.position == Position(offset=3, line=1, column=4)


def test_the_position_counts_lines_and_columns_from_one() -> None:
    with pytest.raises(TemplateSyntaxError) as raised:
        parse("First line.\nSay {{ a.b }} now.", "curly")
    assert raised.value.position == Position(offset=16, line=2, column=5)
    assert str(raised.value).endswith("(line 2, column 5)")
    assert raised.value.to_dict() == {
        "code": "invalid_placeholder",
        "message": raised.value.message,
        "position": {"offset": 16, "line": 2, "column": 5},
    }


@pytest.mark.parametrize(
    ("template", "syntax", "offset"),
    [
        ("Hello {{ name", "curly", 6),
        ("Hello {name", "format", 6),
        ("Hello name}", "format", 10),
        ("{a} and }", "format", 8),
    ],
)
def test_unbalanced_braces_are_rejected_at_the_lone_brace(
    template: str, syntax: str, offset: int
) -> None:
    with pytest.raises(TemplateSyntaxError) as raised:
        parse(template, syntax)
    assert raised.value.code == "unbalanced_braces"
    assert raised.value.position.offset == offset


def test_a_lone_closing_pair_is_plain_text_in_curly() -> None:
    assert render('{"a": {"b": 1}} {{ x }}', "curly", {"x": 2}).text == '{"a": {"b": 1}} 2'


def test_check_lists_every_error_and_every_valid_placeholder_in_order() -> None:
    result = check("{{ a.b }} {{ ok }} {{ c[0] }} {{ d", "curly")
    assert result.placeholders == (Placeholder("ok", 10, 18),)
    assert result.variables == ("ok",)
    assert [(error.code, error.position.offset) for error in result.errors] == [
        ("invalid_placeholder", 0),
        ("invalid_placeholder", 19),
        ("unbalanced_braces", 30),
    ]
    assert check("{{ fine }}", "curly").errors == ()


# -- variables and rendering ---------------------------------------------------------------


def test_variables_are_listed_once_in_order_of_first_use() -> None:
    assert variables("{{ b }} {{ a }} {{ b }} {{ c }}", "curly") == ("b", "a", "c")
    assert variables("{{literal}} {b} {a} {b}", "format") == ("b", "a")


def test_a_missing_variable_error_names_every_missing_one_in_order_of_first_use() -> None:
    with pytest.raises(MissingVariablesError) as raised:
        render("{{ c }} {{ a }} {{ b }} {{ c }}", "curly", {"a": 1})
    assert raised.value.names == ("c", "b")
    assert str(raised.value) == "missing variables: c, b"


def test_given_values_no_placeholder_uses_are_reported_sorted() -> None:
    result = render("{{ a }}", "curly", {"zeta": 1, "a": 2, "beta": 3})
    assert result.unused == ("beta", "zeta")
    assert render("{{ a }}", "curly", {"a": 1}).unused == ()


def test_lenient_rendering_leaves_missing_variables_empty() -> None:
    result = render("Schema: [{{ json_schema }}] {{ note }}", "curly", {"note": "ok"}, lenient=True)
    assert result.text == "Schema: [] ok"


def test_values_containing_placeholders_are_inserted_literally() -> None:
    values = {"a": "{{ b }} {b} {{", "b": "B"}
    assert render("{{ a }}|{{ b }}", "curly", values).text == "{{ b }} {b} {{|B"
    assert render("{a}|{b}", "format", values).text == "{{ b }} {b} {{|B"


class Colour(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("as is ", "as is "),
        (None, ""),
        (True, "true"),
        (False, "false"),
        (42, "42"),
        (Colour.RED, "1"),
        (-2.5, "-2.5"),
        (1e100, "1e+100"),
        (float("nan"), "NaN"),
        (["a", 1, None, True], '["a", 1, null, true]'),
        (("t", 2), '["t", 2]'),
        ({"b": 1, "a": {"é": [1.5]}}, '{"b": 1, "a": {"é": [1.5]}}'),
    ],
)
def test_values_render_by_the_documented_rule(value: object, text: str) -> None:
    assert value_text(value) == text
    assert render("{{ v }}", "curly", {"v": value}).text == text


class Secret:
    def __str__(self) -> str:
        raise AssertionError("a template must never call an object's str()")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (Secret(), "cannot render a Secret"),
        ({1: "x"}, "keys must be strings"),
        ([{"ok": Secret()}], "cannot render a Secret"),
        (b"bytes", "cannot render a bytes"),
    ],
)
def test_values_of_other_types_are_refused_by_name(value: object, words: str) -> None:
    with pytest.raises(TemplateValueError, match=words) as raised:
        render("{{ v }}", "curly", {"v": value})
    assert raised.value.name == "v"


def test_render_many_reports_missing_names_across_templates_once() -> None:
    templates = {"system": "You help {{ user }}.", "question": "{{ q }} {{ user }} {{ topic }}"}
    with pytest.raises(MissingVariablesError) as raised:
        render_many(templates, "curly", {"q": "Why?"})
    assert raised.value.names == ("user", "topic")
    assert raised.value.templates == {"user": ("system", "question"), "topic": ("question",)}


def test_render_many_renders_every_template_and_reports_unused_names() -> None:
    result = render_many({"system": "{a}", "user": "{b}{{x}}"}, "format", {"a": 1, "b": 2, "c": 3})
    assert result.texts == {"system": "1", "user": "2{x}"}
    assert result.unused == ("c",)


def test_render_many_raises_a_syntax_error_before_rendering_anything() -> None:
    with pytest.raises(TemplateSyntaxError):
        render_many({"system": "{{ a }}", "user": "{{ a.b }}"}, "curly", {})


# -- conversion to curly -------------------------------------------------------------------


def test_to_curly_rewrites_placeholders_and_resolves_escapes() -> None:
    template = 'Q{idx}: {question}\n{{"answer": "{answer}"}}'
    curly = to_curly(template, "format")
    assert curly == 'Q{{idx}}: {{question}}\n{"answer": "{{answer}}"}'
    values = {"idx": 1, "question": "Why?", "answer": "because"}
    assert render(curly, "curly", values).text == render(template, "format", values).text


def test_to_curly_keeps_a_curly_template_as_it_is_after_checking_it() -> None:
    assert to_curly("{{ a }} {x}", "curly") == "{{ a }} {x}"
    with pytest.raises(TemplateSyntaxError):
        to_curly("{{ a.b }}", "curly")


def test_to_curly_refuses_literal_double_braces_rather_than_make_a_placeholder() -> None:
    with pytest.raises(TemplateConversionError) as raised:
        to_curly("Write {{{{name}}}} literally", "format")
    assert raised.value.position == Position(offset=6, line=1, column=7)


def test_to_curly_refuses_a_literal_brace_right_before_a_placeholder() -> None:
    with pytest.raises(TemplateConversionError, match="right before a placeholder") as raised:
        to_curly("Set: {{{name}}}", "format")
    assert raised.value.position.offset == 5
    assert to_curly("Set: {{ {name}}}", "format") == "Set: { {{name}}}"


def test_to_curly_accepts_a_literal_brace_right_after_a_placeholder() -> None:
    curly = to_curly("{name}}}", "format")
    assert curly == "{{name}}}"
    assert render(curly, "curly", {"name": "x"}).text == "x}"


# -- properties ----------------------------------------------------------------------------


class Var(NamedTuple):
    name: str


Piece = str | Var

NAMES = st.sampled_from(["a", "b", "name", "_x", "Q2"])
VALUES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["{{ a }}", "{a}", "{{", "}}", "{", "}", "{{ name }}"]),
    st.integers(),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
)
# Literal text as the rendered output shows it (braces included).
LITERALS = st.lists(
    st.sampled_from(["a", " ", "{", "}", "}}", '"k": 1', "\n", "é", "Q:", "x y"]), max_size=4
).map("".join)
PIECES = st.lists(st.one_of(LITERALS, NAMES.map(Var)), max_size=8)


def _joined(pieces: list[Piece]) -> list[Piece]:
    """Adjacent literals merged, so literal runs can be checked whole."""
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str) and out and isinstance(out[-1], str):
            out[-1] += piece
        elif piece != "":
            out.append(piece)
    return out


def as_format(pieces: list[Piece]) -> str:
    return "".join(
        "{" + piece.name + "}"
        if isinstance(piece, Var)
        else piece.replace("{", "{{").replace("}", "}}")
        for piece in pieces
    )


def curly_safe(pieces: list[Piece]) -> list[Piece]:
    """The pieces with every literal '{{', or '{' before a placeholder, split by a space:
    the curly syntax cannot write those."""
    out = _joined(pieces)
    for index, piece in enumerate(out):
        if isinstance(piece, str):
            while "{{" in piece:
                piece = piece.replace("{{", "{ {")
            if piece.endswith("{") and index + 1 < len(out):
                piece += " "
            out[index] = piece
    return out


def as_curly(pieces: list[Piece]) -> str:
    return "".join("{{ " + p.name + " }}" if isinstance(p, Var) else p for p in pieces)


def expected(pieces: list[Piece], values: Mapping[str, object]) -> str:
    return "".join(value_text(values[p.name]) if isinstance(p, Var) else p for p in pieces)


def used(pieces: list[Piece]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p.name for p in pieces if isinstance(p, Var)))


def langfuse_compile(template: str, values: Mapping[str, object]) -> str:
    """How the Langfuse Python SDK's ``compile()`` fills a curly template: a placeholder
    opens at the next ``{{`` and closes at the first ``}}`` after it; the stripped text
    between is the name; names not given stay as written; None renders empty."""
    out, index = [], 0
    while (start := template.find("{{", index)) != -1:
        close = template.find("}}", start + 2)
        if close == -1:
            break
        name = template[start + 2 : close].strip()
        out.append(template[index:start])
        if name in values:
            value = values[name]
            out.append("" if value is None else str(value))
        else:
            out.append(template[start : close + 2])
        index = close + 2
    out.append(template[index:])
    return "".join(out)


@PROPERTY
@given(pieces=PIECES, values=st.dictionaries(NAMES, VALUES, min_size=5))
def test_rendering_inserts_each_value_once_and_never_reexpands_it(
    pieces: list[Piece], values: dict[str, object]
) -> None:
    assume(set(values) >= {"a", "b", "name", "_x", "Q2"})
    format_template = as_format(pieces)
    format_result = render(format_template, "format", values)
    assert format_result.text == expected(pieces, values)
    assert render(format_template, "format", values) == format_result

    curly_pieces = curly_safe(pieces)
    curly_template = as_curly(curly_pieces)
    assert render(curly_template, "curly", values).text == expected(curly_pieces, values)


@PROPERTY
@given(pieces=PIECES, data=st.data())
def test_variables_are_exactly_the_names_render_needs(
    pieces: list[Piece], data: st.DataObject
) -> None:
    format_template = as_format(pieces)
    curly_template = as_curly(curly_safe(pieces))
    needed = used(pieces)
    assert variables(format_template, "format") == needed
    assert variables(curly_template, "curly") == needed
    full = {name: name.upper() for name in needed}
    assert render(format_template, "format", full).unused == ()
    dropped = data.draw(st.sets(st.sampled_from(needed)) if needed else st.just(set()))
    partial = {name: value for name, value in full.items() if name not in dropped}
    if dropped:
        with pytest.raises(MissingVariablesError) as raised:
            render(curly_template, "curly", partial)
        assert raised.value.names == tuple(name for name in needed if name in dropped)
    else:
        render(curly_template, "curly", partial)


@PROPERTY
@given(pieces=PIECES, values=st.dictionaries(NAMES, st.text(max_size=8)))
def test_format_rendering_agrees_with_str_format_on_plain_names(
    pieces: list[Piece], values: dict[str, str]
) -> None:
    template = as_format(pieces)
    values = {**{name: "?" for name in used(pieces)}, **values}
    assert render(template, "format", values).text == template.format(**values)


@PROPERTY
@given(pieces=PIECES, values=st.dictionaries(NAMES, st.text(max_size=8)))
def test_curly_rendering_agrees_with_the_langfuse_sdk(
    pieces: list[Piece], values: dict[str, str]
) -> None:
    template = as_curly(curly_safe(pieces))
    values = {**{name: "?" for name in used(pieces)}, **values}
    assert render(template, "curly", values).text == langfuse_compile(template, values)


@PROPERTY
@given(pieces=PIECES, values=st.dictionaries(NAMES, VALUES, min_size=5))
def test_to_curly_renders_like_the_format_template_or_refuses(
    pieces: list[Piece], values: dict[str, object]
) -> None:
    assume(set(values) >= {"a", "b", "name", "_x", "Q2"})
    template = as_format(pieces)
    joined = _joined(pieces)
    writable = all(
        "{{" not in piece and not (piece.endswith("{") and index + 1 < len(joined))
        for index, piece in enumerate(joined)
        if isinstance(piece, str)
    )
    if not writable:
        with pytest.raises(TemplateConversionError):
            to_curly(template, "format")
        return
    curly = to_curly(template, "format")
    assert render(curly, "curly", values).text == render(template, "format", values).text
    assert variables(curly, "curly") == variables(template, "format")
    # and the Langfuse SDK fills it the same way
    text_values = {name: value_text(value) for name, value in values.items()}
    assert langfuse_compile(curly, text_values) == render(template, "format", values).text


class Recording(Mapping[str, object]):
    """Values that record every name a render looks up (and hold a text for each)."""

    def __init__(self) -> None:
        self.looked_up: list[str] = []

    def __getitem__(self, name: str) -> object:
        self.looked_up.append(name)
        return f"<{name}>"

    def __contains__(self, name: object) -> bool:
        self.looked_up.append(str(name))
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


# What an attacker would put in a placeholder to reach an object: names (dunders
# included), the operators of attribute access, indexing, conversions, format specs,
# calls and filters, digits and spaces.
HOSTILE_BODIES = st.lists(
    st.sampled_from(
        ["a", "name", "_x", "Q2", "0", "1", "__class__", "__globals__", "__init__",
         "__import__", "__builtins__", "os", ".", "[", "]", "!", ":", "(", ")", "|", " "]
    ),
    max_size=8,
).map("".join)  # fmt: skip


@PROPERTY
@given(body=HOSTILE_BODIES, syntax=st.sampled_from(SYNTAXES))
def test_a_placeholder_is_a_plain_name_or_a_syntax_error_with_its_position_never_evaluated(
    body: str, syntax: str
) -> None:
    prefix = "Q:\n"
    placeholder = "{{" + body + "}}" if syntax == "curly" else "{" + body + "}"
    template = prefix + placeholder + " end"
    values = Recording()
    try:
        result = render(template, syntax, values)
    except TemplateSyntaxError as error:
        assert error.code == "invalid_placeholder"
        assert error.position == Position(len(prefix), 2, 1)
        assert placeholder in error.message
        assert values.looked_up == []  # refused before any value was looked at
        return
    name = body.strip() if syntax == "curly" else body
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
    assert variables(template, syntax) == (name,)
    # The name is only ever a key: its value is inserted as text, nothing else is asked.
    assert set(values.looked_up) == {name}
    assert result.text == f"{prefix}<{name}> end"

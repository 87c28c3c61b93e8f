"""Release services: make a release, publish, move and remove labels, edit scenarios.

Every change goes through these functions, whatever the entry point; each checks the
actor's permission itself (making a release: authors and write keys; moving a label:
admins and admin keys; scripts acting as nobody may do both).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Q, Value
from django.utils import timezone

import assembler
from assembler.impact import MAX_EXPECTATIONS, ExpectationError, parse_expectation
from assembler.replies import (
    REPLY_PARAMS,
    is_reply_expectation,
    parse_reply_expectation,
    reply_params_problems,
)
from assembler.request import AssembleParams, RequestError, parse_assemble_params
from assembler.storable import StoredJsonError, check_stored_json, printable
from promptadmin.content.assembly import AssemblyInputError, conversation_history
from promptadmin.content.models import NPC, Entry, is_slug
from promptadmin.core.actors import Actor, attribution, record_actor, user_or_none
from promptadmin.core.errors import StaleStateError
from promptadmin.core.revisions import locked_revision
from promptadmin.core.roles import Role, require
from promptadmin.core.text import normalize_newlines, normalize_values
from promptadmin.releases import serving
from promptadmin.releases.bundles import Version, index_of, release_version, store
from promptadmin.releases.impact import failing
from promptadmin.releases.models import (
    MAX_SCENARIO_NAME,
    RESERVED_NAMES,
    WORKING,
    Release,
    ReleaseAlias,
    ReleaseLabel,
    ReleaseLabelMove,
    Scenario,
    label_validator,
    release_name_validator,
)
from promptadmin.releases.scenarios import scenarios_for
from promptadmin.releases.working import working_version

MAX_NOTES = 10_000
MOVING_A_LABEL = "Moving a release label"
#: In a label move's ``expected`` states: the label exists (If-Match: *).
ANY_RELEASE = "*"
CHANGING_SCENARIOS = "Changing scenarios"


class ExpectationsFailing(Exception):
    """A label would move to content that fails expectations, and nobody confirmed it."""

    def __init__(self, failures: list[dict[str, str]]) -> None:
        self.failures = failures
        listed = "; ".join(
            f"{item['scenario']}: {item['expectation']} ({item['reason']})" for item in failures
        )
        super().__init__(
            f"{len(failures)} {'expectation fails' if len(failures) == 1 else 'expectations fail'}"
            f" on this release: {listed}. Confirm to move the label anyway."
        )


class WorkingCopyChanged(Exception):
    """The working copy is no longer the content a person reviewed before publishing."""

    def __init__(self, *, reviewed: str, current: str) -> None:
        self.reviewed = reviewed
        self.current = current
        super().__init__(
            f"The working copy changed since it was reviewed (content hash {reviewed[:12]}…, "
            f"now {current[:12]}…): compare again, then publish what you reviewed."
        )


# A PostgreSQL advisory lock: taken while a release name or a new label is checked and
# written, so two transactions can never each miss the other's name (see _lock_names).
NAMES_LOCK_ID = 0x5E1_EA5E  # "release"


def _lock_names() -> None:
    """Serialize making release names and labels until the transaction ends: the check
    that a new name is neither a label nor a release then sees every name made before.

    Taken before any label row lock (release_create) or with none held (a new label), so
    it never waits in a cycle with the label row locks. SQLite allows one writer at a time.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [NAMES_LOCK_ID])


def _free_name(base: str) -> str:
    """``base``, or ``base-2``, ``base-3``...: the first that is no release's, no label's
    and no former label's (whose name needs an admin, see _check_name)."""
    taken = set(Release.objects.filter(name__startswith=base).values_list("name", flat=True))
    taken.update(ReleaseLabel.objects.filter(name__startswith=base).values_list("name", flat=True))
    taken.update(
        ReleaseLabelMove.objects.filter(label__startswith=base).values_list("label", flat=True)
    )
    taken.update(ReleaseAlias.objects.filter(name__startswith=base).values_list("name", flat=True))
    if base not in taken:
        return base
    number = 2
    while f"{base}-{number}" in taken:
        number += 1
    return f"{base}-{number}"


def _default_name() -> str:
    return _free_name(f"r-{timezone.now():%Y-%m-%d}")


def _check_name(name: str, labels: Sequence[str] = (), *, actor: Actor = None) -> None:
    """A new release's name: well-formed, not reserved, and neither a release's nor a
    label's (existing or among ``labels``, moved to it). A name a label had before needs
    an admin: it may be meant for that label again, and only admins move labels."""
    _check_not_working("name", name, release_name_validator)
    if name in RESERVED_NAMES:
        raise ValidationError(
            {"name": f"'{name}' is reserved for a label; no release takes it. Choose another name."}
        )
    if name in labels:
        why = "a release name must differ from every label"
        raise ValidationError({"name": f"'{name}' is a label to move to this release; {why}."})
    held = _holders(name)
    if "release" in held:
        raise ValidationError({"name": f"There is already a release named '{name}'."})
    if "alias" in held:
        raise ValidationError(
            {"name": f"'{name}' is another name of a release (an alias); choose another name."}
        )
    if "label" in held:
        raise ValidationError(
            {"name": f"'{name}' is a label; a release name must differ from every label."}
        )
    if "former label" in held:
        require(actor, role=Role.ADMIN, action=f"Naming a release '{name}', which was a label,")


def _holders(name: str) -> set[str]:
    """What holds ``name`` (one query): ``release``, ``alias``, ``label``, ``former label``
    (a label once, moved or removed since)."""
    kinds = [
        # No ordering: SQLite takes none in the parts of a UNION (the models have one).
        model.objects.filter(**{field: name})
        .order_by()
        .annotate(kind=Value(kind))
        .values_list("kind")
        for model, field, kind in (
            (Release, "name", "release"),
            (ReleaseAlias, "name", "alias"),
            (ReleaseLabel, "name", "label"),
            (ReleaseLabelMove, "label", "former label"),
        )
    ]
    return {kind for (kind,) in kinds[0].union(*kinds[1:])}


def _check_notes(notes: str, field: str = "notes") -> None:
    if len(notes) > MAX_NOTES:
        raise ValidationError({field: f"At most {MAX_NOTES} characters."})
    try:
        check_stored_json(notes)
    except StoredJsonError as exc:
        raise ValidationError({field: exc.message}) from None


def _store(version: Version, *, name: str, notes: str, actor: Actor) -> Release:
    """Write ``version`` as a release: its manifest and index, and the bundles and index
    shards no release stored before (after a small change, the few that changed)."""
    who = attribution(actor)
    index, shards = index_of(version.manifest)
    release = Release.objects.create(
        name=name,
        notes=notes,
        created_by=who.user,
        created_via=who.via,
        content_hash=version.content_hash,
        segment_count=version.segment_count,
        catalog=dict(version.catalog),
        manifest=version.manifest,
        index=index,
    )
    store({**version.held, **shards})
    return release


def release_create(
    *,
    actor: Actor,
    name: str | None = None,
    notes: str = "",
    labels: Sequence[str] = (),
    confirm: bool = False,
    expected_hash: str | None = None,
    before_commit: Callable[[Release], None] | None = None,
) -> Release:
    """Snapshot the working copy as a release and, when ``labels`` are given, move them to
    it (publish). Moving labels to content failing expectations needs ``confirm``.

    ``expected_hash``: the content hash of the working copy the person reviewed (its
    impact report); WorkingCopyChanged when it is not the working copy's now, so nothing
    saved after the review is published unseen.

    ``before_commit(release)`` runs in the transaction writing it: an entry point answers
    there, so that an answer it cannot give undoes the release. (The release cannot be
    written in the entry point's own transaction: the snapshot is read in one of its own,
    before it.)
    """
    require(actor, role=Role.AUTHOR, action="Making a release")
    if labels:
        require(actor, role=Role.ADMIN, action=MOVING_A_LABEL)
    _check_names(name or None, labels, actor=actor)
    notes = normalize_newlines(notes)
    _check_notes(notes)
    # Content writes are not locked out: the snapshot is read in one REPEATABLE READ
    # transaction of its own (see working_content). The release is written in another,
    # at the default READ COMMITTED, where a text another release stored meanwhile is
    # skipped and a label another publish moved meanwhile is waited for; REPEATABLE READ
    # would fail this release with a serialization error instead.
    content = working_version()
    if expected_hash is not None and content.content_hash != expected_hash:
        raise WorkingCopyChanged(reviewed=expected_hash, current=content.content_hash)
    with transaction.atomic():
        # The names checked above (before the costly read, to fail fast) again, under the
        # lock: one made meanwhile by another transaction is seen now.
        _lock_names()
        name = name or _default_name()
        _check_names(name, labels, actor=actor)
        if labels and not confirm:
            failures = failing(content, scenarios_for(()), memo=cache)
            if failures:
                raise ExpectationsFailing(failures)
        release = _store(content, name=name, notes=notes, actor=actor)
        for label in labels:
            _move(label, release, actor=actor, note=notes, confirmed=confirm, content=content)
        if before_commit is not None:
            before_commit(release)
    return release


def _check_names(name: str | None, labels: Sequence[str], *, actor: Actor) -> None:
    """A new release's name (None: the default, checked when made) and its labels."""
    for index, label in enumerate(labels):
        try:
            _check_label(label)
        except ValidationError as exc:
            raise ValidationError({f"labels.{index}": exc.message_dict["label"]}) from None
    if name is not None:
        _check_name(name, labels, actor=actor)


def _check_not_working(field: str, value: str, validator: Callable[[str], None]) -> None:
    """``value`` passes ``validator`` and is not the working copy's name (errors on ``field``)."""
    try:
        validator(value)
    except ValidationError as exc:
        raise ValidationError({field: exc.messages}) from None
    if value == WORKING:
        raise ValidationError({field: f"'working' names the working copy; choose another {field}."})


def _check_label(label: str) -> None:
    _check_not_working("label", label, label_validator)


def _holder(name: str) -> Release | None:
    """The release called ``name``, by its own name or by an alias."""
    return Release.objects.filter(Q(name=name) | Q(aliases__name=name)).first()


def _alias(holder: Release, label: str, move: ReleaseLabelMove) -> ReleaseAlias:
    """``holder`` answered to ``label``, which a label now takes: from then on the name
    means the label, and the release, whose own name never changes, answers to
    ``<label>.r<id>`` (``-2``, ``-3``... when taken) too. Only label moves make one, and only
    admins move labels: nobody else can stand in the way of a label, nor give a release
    another name."""
    return ReleaseAlias.objects.create(
        name=_free_name(f"{label}.r{holder.pk}"), release=holder, move=move
    )


def _locked_label(label: str, expected: Collection[str | None] | None) -> ReleaseLabel | None:
    """The label's row, locked until the transaction ends, after checking it is where the
    caller last saw it (``expected``, see release_label_set): StaleStateError if not."""
    # Only the label's row is locked, not its release's.
    labels = ReleaseLabel.objects.select_for_update(of=("self",)).select_related("release")
    current = labels.filter(name=label).first()
    if expected is None:
        return current
    state = None if current is None else current.release.name
    if state in expected or (current is not None and ANY_RELEASE in expected):
        return current
    if ANY_RELEASE in expected:
        raise StaleStateError(f"There is no label '{label}' (you asked for an existing one).")
    where = f"points at {state}" if state else "does not exist"
    raise StaleStateError(
        f"Label '{label}' is not where you last saw it: it {where} now. Read it again and decide."
    )


def _move(
    label: str,
    release: Release | None,
    *,
    actor: Actor,
    note: str,
    confirmed: bool,
    content: Version | None = None,
) -> ReleaseLabelMove | None:
    current = ReleaseLabel.objects.select_for_update().filter(name=label).first()
    if current is None and release is not None:
        # A new label: under the names lock, so that no release takes its name meanwhile,
        # and another transaction may have made it meanwhile.
        _lock_names()
        current = ReleaseLabel.objects.select_for_update().filter(name=label).first()
    holder = _holder(label) if current is None and release is not None else None
    before = current.release if current is not None else None
    if before == release:
        return None
    failures: list[dict[str, str]] = []
    if release is not None and confirmed:
        failures = failing(content or release_version(release), scenarios_for(()), memo=cache)
    if release is None:
        assert current is not None
        current.delete()
    elif current is None:
        ReleaseLabel.objects.create(name=label, release=release, moved_at=timezone.now())
    else:
        current.release = release
        current.moved_at = timezone.now()
        current.save(update_fields=["release", "moved_at"])
    who = attribution(actor)
    move = ReleaseLabelMove.objects.create(
        label=label,
        from_release=before,
        to_release=release,
        by=who.user,
        via=who.via,
        note=note,
        confirmed_failures=failures,
    )
    if holder is not None:
        _alias(holder, label, move)
    serving.labels_changed()
    return move


@transaction.atomic
def release_label_set(
    *,
    actor: Actor,
    label: str,
    release: Release,
    note: str = "",
    confirm: bool = False,
    expected: Collection[str | None] | None = None,
) -> ReleaseLabelMove | None:
    """Point ``label`` at ``release`` (set, move or roll back); None when it already does.

    Content failing an expectation needs ``confirm``; the failures confirmed are recorded.
    ``expected``: move it only from where the caller last saw it, the names of the
    releases it may point at now (None among them: or not exist yet; ``ANY_RELEASE``: any
    release, as long as it exists); StaleStateError otherwise. A release holding the
    label's name gives it up: the release gets another name (see _alias).
    """
    require(actor, role=Role.ADMIN, action=MOVING_A_LABEL)
    _check_label(label)
    note = normalize_newlines(note)
    _check_notes(note, "note")
    current = _locked_label(label, expected)
    if not confirm and (current is None or current.release_id != release.pk):
        failures = failing(release_version(release), scenarios_for(()), memo=cache)
        if failures:
            raise ExpectationsFailing(failures)
    return _move(label, release, actor=actor, note=note, confirmed=confirm)


@transaction.atomic
def release_label_remove(
    *,
    actor: Actor,
    label: str,
    note: str = "",
    expected: Collection[str | None] | None = None,
) -> ReleaseLabelMove:
    """Remove ``label``; callers that named it get an error, default serving the working
    copy. ``expected`` as for release_label_set."""
    require(actor, role=Role.ADMIN, action=MOVING_A_LABEL)
    note = normalize_newlines(note)
    _check_notes(note, "note")
    if _locked_label(label, expected) is None:
        raise ValidationError({"label": f"There is no label '{label}'."})
    move = _move(label, None, actor=actor, note=note, confirmed=False)
    assert move is not None
    return move


#: A scenario's fields that make its assembly request, read by the one request parser.
SCENARIO_REQUEST_FIELDS = (
    "entry",
    "first_turn",
    "npcs",
    "state",
    "token_budget",
    "npc_budget",
    "lore",
    "conversation",
)
SCENARIO_FIELDS = ("name", *SCENARIO_REQUEST_FIELDS, "expectations", *REPLY_PARAMS)
SCENARIO_DEFAULTS: dict[str, Any] = {
    "first_turn": False,
    "npcs": [],
    "state": {},
    "token_budget": assembler.DEFAULT_TOKEN_BUDGET,
    "npc_budget": assembler.DEFAULT_NPC_BUDGET,
    "lore": {},
    "expectations": [],
    **REPLY_PARAMS,
    "conversation": "",
}

Errors = dict[str, list[str]]


def _scenario_name(name: Any, errors: Errors) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_SCENARIO_NAME:
        errors["name"] = [f"Expected a name of 1 to {MAX_SCENARIO_NAME} characters."]
        return ""
    try:
        check_stored_json(name)
    except StoredJsonError as exc:
        errors["name"] = [exc.message]
    return name.strip()


def _scenario_request(values: dict[str, Any], errors: Errors) -> AssembleParams | None:
    """The scenario's assembly request, read as /assemble and the preview read theirs;
    its state is stored, so it must also be storable JSON (no NUL in a text)."""
    request = {name: values[name] for name in SCENARIO_REQUEST_FIELDS if name in values}
    if request.get("conversation") == "":  # stored blank: the scenario names none
        request["conversation"] = None
    try:
        params = parse_assemble_params(request)
    except RequestError as error:
        for field, messages in error.errors.items():
            errors.setdefault(field, []).extend(messages)
        return None
    try:
        check_stored_json(dict(params.state))
    except StoredJsonError as exc:
        errors[f"state.{exc.path}".rstrip(".")] = [exc.message]
        return None
    return params


def _scenario_expectations(items: Any, errors: Errors) -> list[dict[str, Any]]:
    if not isinstance(items, list) or len(items) > MAX_EXPECTATIONS:
        errors["expectations"] = [f"Expected a list of at most {MAX_EXPECTATIONS} expectations."]
        return []
    parsed = []
    for index, item in enumerate(items):
        # Reply expectations (playtests) sit beside the prompt ones; the assembler parses both.
        parse = parse_reply_expectation if is_reply_expectation(item) else parse_expectation
        try:
            parsed.append(parse(normalize_values(item)).to_dict())
            check_stored_json(parsed[-1])
        except ExpectationError as exc:
            errors[f"expectations.{index}.{exc.field}"] = [str(exc)]
        except StoredJsonError as exc:
            errors[f"expectations.{index}.{exc.path}"] = [exc.message]
    return parsed


def _scenario_fields(
    values: dict[str, Any], errors: Errors
) -> tuple[dict[str, Any], AssembleParams | None]:
    """A scenario's fields checked for what they are, whatever they refer to (each bad one
    named in ``errors``), and normalised (when none is bad); with its assembly request, if
    it is one."""
    unknown = sorted(set(values) - set(SCENARIO_FIELDS))
    for name in unknown:
        errors[printable(name)] = [f"Unknown field; the fields are: {', '.join(SCENARIO_FIELDS)}."]
    name = _scenario_name(normalize_newlines(values.get("name")), errors)
    params = _scenario_request(values, errors)
    expectations = _scenario_expectations(values.get("expectations", []), errors)
    for field, problem in reply_params_problems(values).items():
        errors[field] = [problem]
    if errors or params is None:  # nothing to normalise: the caller names the errors
        return {}, params
    replies = {param: values.get(param, default) for param, default in REPLY_PARAMS.items()}
    return {
        "name": name,
        "entry": params.entry,
        "first_turn": params.first_turn,
        "npcs": [{"npc": slug, "tier": tier} for slug, tier in params.npcs],
        "state": normalize_values(dict(params.state)),
        "token_budget": params.token_budget,
        "npc_budget": params.npc_budget,
        "lore": params.lore.to_dict(),
        "expectations": expectations,
        **replies,
        "temperature": float(replies["temperature"]),
        "conversation": params.conversation or "",
    }, params


def _scenario_references(params: AssembleParams, errors: Errors) -> None:
    """Name in ``errors`` the scenario's entry or NPCs that do not exist (in the working
    copy), or its conversation."""
    if not (is_slug(params.entry) and Entry.objects.filter(slug=params.entry).exists()):
        errors["entry"] = [f"No entry with slug '{params.entry}'."]
    slugs = [slug for slug, _tier in params.npcs]
    known = set(NPC.objects.filter(slug__in=slugs).values_list("slug", flat=True))
    unknown = [slug for slug in slugs if slug not in known]
    if unknown:
        errors["npcs"] = [f"Unknown NPC slugs: {', '.join(unknown)}."]
    if params.conversation is not None:
        try:
            conversation_history(params.conversation)
        except AssemblyInputError as exc:
            errors["conversation"] = list(exc.errors.values())


def _clean_scenario(values: dict[str, Any]) -> dict[str, Any]:
    """A scenario's fields checked (ValidationError naming each bad one) and normalised."""
    errors: Errors = {}
    cleaned, params = _scenario_fields(values, errors)
    if params is not None:
        _scenario_references(params, errors)
    if errors:
        raise ValidationError(errors)
    return cleaned


def scenario_fields_check(values: dict[str, Any], *, scenario: Scenario) -> None:
    """Refuse changes to ``scenario`` that are malformed whatever they refer to
    (ValidationError naming each bad field); what the names refer to is checked when
    saved, and nothing is saved here."""
    base = {name: getattr(scenario, name) for name in SCENARIO_FIELDS}
    errors: Errors = {}
    _scenario_fields({**base, **values}, errors)
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def scenario_create(*, actor: Actor, **values: Any) -> Scenario:
    """Save a preview configuration as a named scenario."""
    require(actor, role=Role.AUTHOR, action=CHANGING_SCENARIOS)
    values = _clean_scenario({**SCENARIO_DEFAULTS, **values})
    if Scenario.objects.filter(name=values["name"]).exists():
        raise ValidationError({"name": f"There is already a scenario named '{values['name']}'."})
    scenario = Scenario(updated_by=user_or_none(actor), **values)
    record_actor(scenario, actor)
    scenario.save()
    return scenario


def scenario_check(*, scenario: Scenario, **changes: Any) -> dict[str, Any]:
    """The scenario's fields with ``changes`` applied, checked (ValidationError names each
    bad field); nothing is saved."""
    return _clean_scenario({name: getattr(scenario, name) for name in SCENARIO_FIELDS} | changes)


def _locked_scenario(scenario: Scenario, expected_revision: int | None) -> Scenario:
    return locked_revision(scenario, expected_revision, f"Scenario {scenario.pk}")


@transaction.atomic
def scenario_update(
    *, actor: Actor, scenario: Scenario, expected_revision: int | None = None, **changes: Any
) -> Scenario:
    """Change some of a scenario's fields; saves only what changed. ``expected_revision``:
    the revision the caller edited (StaleRevisionError when it is not the current one)."""
    require(actor, role=Role.AUTHOR, action=CHANGING_SCENARIOS)
    locked = _locked_scenario(scenario, expected_revision)
    values = scenario_check(scenario=locked, **changes)
    if Scenario.objects.filter(name=values["name"]).exclude(pk=locked.pk).exists():
        raise ValidationError({"name": f"There is already a scenario named '{values['name']}'."})
    changed = [name for name in SCENARIO_FIELDS if getattr(locked, name) != values[name]]
    if not changed:
        return locked
    for name in changed:
        setattr(locked, name, values[name])
    locked.revision += 1
    locked.updated_by = user_or_none(actor)
    record_actor(locked, actor)
    locked.save(update_fields=[*changed, "revision", "updated_by", "updated_at"])
    return locked


@transaction.atomic
def scenario_delete(
    *, actor: Actor, scenario: Scenario, expected_revision: int | None = None
) -> None:
    """Delete a scenario; its history keeps what it was, and who deleted it when.
    ``expected_revision`` as for scenario_update."""
    require(actor, role=Role.AUTHOR, action=CHANGING_SCENARIOS)
    locked = _locked_scenario(scenario, expected_revision)
    record_actor(locked, actor)
    locked.delete()

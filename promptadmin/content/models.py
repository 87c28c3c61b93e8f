"""The content model: worlds, rulesets, NPCs, entries and the segments that make prompts.

The rules that keep content assemblable (which object a segment of each scope belongs to,
which scopes may be active, tiers only on NPC segments) are enforced by the database with
check constraints and real foreign keys, and mirrored in ``clean()`` so forms and the API
can name the offending field before the database has to refuse the row.
"""

from __future__ import annotations

import re
from typing import ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone
from rest_framework_api_key.models import AbstractAPIKey
from simple_history.models import HistoricalRecords

from assembler.request import MAX_SLUG
from promptadmin.core.storedjson import validate_stored_json

SLUG_PATTERN = r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$"
slug_validator = RegexValidator(
    SLUG_PATTERN,
    "Use lowercase letters, digits, and single '-' or '_' between them (e.g. 'iron-coast').",
    code="invalid_slug",
)


def is_slug(value: str) -> bool:
    """Whether ``value`` is a well-formed slug; check before looking one up from a request
    (a NUL byte, for one, would reach PostgreSQL and fail there)."""
    return re.fullmatch(SLUG_PATTERN, value) is not None


class Scope(models.TextChoices):
    CORE = "core", "Core"
    RULESET = "ruleset", "Ruleset"
    WORLD = "world", "World"
    ENTRY = "entry", "Entry"
    ENTRY_START = "entry_start", "Entry start"
    NPC = "npc", "NPC"
    # Deprecated: the caller supplies these layers at assembly time. Rows of these scopes
    # are kept, inactive, so that no authored word is lost.
    GAME_STATE = "game_state", "Game state (deprecated)"
    PLAYER = "player", "Player (deprecated)"
    RNG = "rng", "RNG (deprecated)"
    INPUT = "input", "Input (deprecated)"


SEGMENT_SCOPES = (Scope.CORE, Scope.RULESET, Scope.WORLD, Scope.ENTRY, Scope.ENTRY_START, Scope.NPC)
DEPRECATED_SCOPES = (Scope.GAME_STATE, Scope.PLAYER, Scope.RNG, Scope.INPUT)

# The one foreign key each scope must set (None: the segment belongs to nothing).
SCOPE_REF_FIELD: dict[str, str | None] = {
    Scope.CORE: None,
    Scope.RULESET: "ruleset",
    Scope.WORLD: "world",
    Scope.ENTRY: "entry",
    Scope.ENTRY_START: "entry",
    Scope.NPC: "npc",
}
# The foreign keys a segment may set, in the order of the scopes above (the database
# constraints are built in this order); promptadmin.content.kinds describes each one.
REF_FIELDS = tuple(dict.fromkeys(field for field in SCOPE_REF_FIELD.values() if field))


def _only_ref(field: str | None) -> Q:
    """Q that holds when exactly ``field`` (or no field, for None) of the refs is set."""
    q = Q()
    for name in REF_FIELDS:
        q &= Q(**{f"{name}__isnull": name != field})
    return q


def segment_title(title: str, content: str) -> str:
    """A segment's label: its title, else the start of its first line.

    Also used on history records, which hold the same two fields.
    """
    if title.strip():
        return title.strip()
    first_line = content.strip().splitlines()[0] if content.strip() else ""
    return first_line[:60] + ("…" if len(first_line) > 60 else "")


class KeptOnInsertDateTimeField(models.DateTimeField):
    """Set to now on every save, like ``auto_now``, except that an insert keeps a time given
    explicitly: an import keeps the original row's timestamps (bulk inserts too)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("editable", False)
        kwargs.setdefault("blank", True)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def pre_save(self, model_instance: models.Model, add: bool) -> object:
        value = getattr(model_instance, self.attname)
        if add and value is not None:
            return value
        value = timezone.now()
        setattr(model_instance, self.attname, value)
        return value


class TimestampedContent(models.Model):
    slug = models.SlugField(max_length=MAX_SLUG, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # Bumped on every saved change (an entry's world, rulesets and cast included): the
    # optimistic-concurrency token of the studio's forms, the admin and the API's ETags.
    revision = models.PositiveIntegerField(default=1, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ("slug",)

    def __str__(self) -> str:
        return self.name or self.slug

    @classmethod
    def slug_constraints(cls, prefix: str) -> list[models.BaseConstraint]:
        return [
            models.CheckConstraint(condition=Q(slug=Lower("slug")), name=f"{prefix}_slug_lowercase")
        ]

    @classmethod
    def list_indexes(cls, prefix: str) -> list[models.Index]:
        """The studio's lists go by name (then slug): read in order from an index."""
        return [models.Index(fields=("name", "slug"), name=f"{prefix}_by_name")]


class World(TimestampedContent):
    history = HistoricalRecords()

    class Meta(TimestampedContent.Meta):
        constraints = TimestampedContent.slug_constraints("world")
        indexes = TimestampedContent.list_indexes("world")


class Ruleset(TimestampedContent):
    history = HistoricalRecords()

    class Meta(TimestampedContent.Meta):
        constraints = TimestampedContent.slug_constraints("ruleset")
        indexes = TimestampedContent.list_indexes("ruleset")


class NPC(TimestampedContent):
    history = HistoricalRecords()

    class Meta(TimestampedContent.Meta):
        verbose_name = "NPC"
        verbose_name_plural = "NPCs"
        constraints = TimestampedContent.slug_constraints("npc")
        indexes = TimestampedContent.list_indexes("npc")


class Entry(TimestampedContent):
    """An entry point (scenario): a world and an ordered list of rulesets."""

    world = models.ForeignKey(World, on_delete=models.PROTECT, related_name="entries")
    rulesets = models.ManyToManyField(Ruleset, through="EntryRuleset", related_name="entries")
    history = HistoricalRecords()

    class Meta(TimestampedContent.Meta):
        verbose_name_plural = "entries"
        constraints = TimestampedContent.slug_constraints("entry")
        indexes = TimestampedContent.list_indexes("entry")

    def ordered_rulesets(self) -> list[Ruleset]:
        return [link.ruleset for link in self.ruleset_links.select_related("ruleset")]

    def ordered_cast(self) -> list[EntryNpc]:
        return list(self.cast_links.select_related("npc").order_by("position"))


class EntryRuleset(models.Model):
    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="ruleset_links")
    ruleset = models.ForeignKey(Ruleset, on_delete=models.PROTECT, related_name="entry_links")
    position = models.PositiveIntegerField()
    history = HistoricalRecords()

    class Meta:
        ordering = ("entry", "position")
        constraints = [
            models.UniqueConstraint(
                fields=("entry", "position"), name="entryruleset_unique_position"
            ),
            models.UniqueConstraint(
                fields=("entry", "ruleset"), name="entryruleset_unique_ruleset"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.entry_id}#{self.position}: {self.ruleset_id}"


class EntryNpc(models.Model):
    """One NPC of an entry's cast: who usually appears in it, in priority order, at what tier.

    The preview starts from the cast; callers of the API still name the NPCs of each turn.
    """

    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="cast_links")
    npc = models.ForeignKey(NPC, on_delete=models.PROTECT, related_name="entry_links")
    position = models.PositiveIntegerField()
    tier = models.PositiveSmallIntegerField(default=0)
    history = HistoricalRecords()

    class Meta:
        ordering = ("entry", "position")
        verbose_name = "cast member"
        constraints = [
            models.UniqueConstraint(fields=("entry", "position"), name="entrynpc_unique_position"),
            models.UniqueConstraint(fields=("entry", "npc"), name="entrynpc_unique_npc"),
        ]

    def __str__(self) -> str:
        return f"{self.entry_id}#{self.position}: {self.npc_id} (tier {self.tier})"


# Fields of Segment whose copies in its history table keep no index (see Segment.history).
HISTORY_UNINDEXED = [
    "ruleset",
    "world",
    "entry",
    "npc",
    "legacy_id",
    "import_key",
    "created_by",
    "updated_by",
]


class Segment(models.Model):
    """A piece of prompt text, belonging to the object its scope names."""

    scope = models.CharField(max_length=20, choices=Scope.choices, db_index=False)
    ruleset = models.ForeignKey(
        Ruleset, null=True, blank=True, on_delete=models.PROTECT, related_name="segments"
    )
    world = models.ForeignKey(
        World, null=True, blank=True, on_delete=models.PROTECT, related_name="segments"
    )
    entry = models.ForeignKey(
        Entry, null=True, blank=True, on_delete=models.PROTECT, related_name="segments"
    )
    npc = models.ForeignKey(
        NPC, null=True, blank=True, on_delete=models.PROTECT, related_name="segments"
    )
    title = models.CharField(max_length=200, blank=True)
    content = models.TextField()
    metadata = models.JSONField(default=dict, blank=True, validators=[validate_stored_json])
    version = models.CharField("version label", max_length=32, default="1.0.0")
    active = models.BooleanField(default=True)
    sort_order = models.IntegerField(default=0)
    tier = models.PositiveSmallIntegerField(
        default=0,
        help_text="NPC segments only: shown when the NPC is requested at this tier or above.",
    )
    # Where seeded or imported content came from (e.g. the demo's key), so that loading it
    # again is idempotent. Internal: never shown to authors, not part of the metadata.
    import_key = models.CharField(max_length=64, blank=True, editable=False, db_index=True)
    # Cached count of ``content`` in ``token_encoding``; recomputed when either changes.
    token_count = models.PositiveIntegerField(null=True, blank=True, editable=False)
    token_encoding = models.CharField(max_length=64, blank=True, editable=False)
    # Bumped on every saved change; the optimistic-concurrency token for editors and the API.
    revision = models.PositiveIntegerField(default=1, editable=False)
    # An import keeps the legacy row's timestamps; otherwise these are set as usual.
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = KeptOnInsertDateTimeField()
    # Imported rows: the legacy table's id (a second import of it changes nothing) and a
    # fingerprint of the row as exported (a changed row is reported as a conflict).
    legacy_id = models.CharField(max_length=64, null=True, blank=True, unique=True, editable=False)
    legacy_hash = models.CharField(max_length=64, blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    # A segment's history is read by the segment's id alone (its revisions, newest first):
    # the other indexes its fields have here would cost every write to the history (a
    # tenth of a legacy import's time) and serve no query.
    history = HistoricalRecords(excluded_fields=["updated_at"], no_db_index=HISTORY_UNINDEXED)

    REF_FIELDS: ClassVar[tuple[str, ...]] = REF_FIELDS

    class Meta:
        ordering = ("scope", "sort_order", "id")
        constraints = [
            models.CheckConstraint(
                condition=Q(scope__in=SEGMENT_SCOPES)
                | Q(scope__in=DEPRECATED_SCOPES, active=False),
                name="segment_scope_allowed",
                violation_error_message="Scope must be one of core, ruleset, world, entry, "
                "entry_start, npc; deprecated scopes are allowed only on inactive segments.",
            ),
            models.CheckConstraint(
                condition=(
                    Q(scope__in=DEPRECATED_SCOPES)
                    | (Q(scope=Scope.CORE) & _only_ref(None))
                    | (Q(scope=Scope.RULESET) & _only_ref("ruleset"))
                    | (Q(scope=Scope.WORLD) & _only_ref("world"))
                    | (Q(scope__in=[Scope.ENTRY, Scope.ENTRY_START]) & _only_ref("entry"))
                    | (Q(scope=Scope.NPC) & _only_ref("npc"))
                ),
                name="segment_ref_matches_scope",
                violation_error_message=(
                    "A segment must point at exactly the object its scope names."
                ),
            ),
            models.CheckConstraint(
                condition=Q(tier__gte=0) & (Q(tier=0) | Q(scope=Scope.NPC)),
                name="segment_tier_npc_only",
                violation_error_message="Tier is a non-negative integer, set only on NPC segments.",
            ),
        ]
        indexes = [
            # "Active segments of scope S for object X", in assembly order.
            models.Index(
                fields=("scope", "sort_order", "id"),
                condition=Q(active=True, scope=Scope.CORE),
                name="segment_active_core",
            ),
            *(
                models.Index(
                    fields=(ref, order, "sort_order", "id"),
                    condition=Q(active=True, **{f"{ref}__isnull": False}),
                    name=f"segment_active_{ref}",
                )
                # An NPC's segments are ordered by tier first, the others by scope.
                for ref, order in (
                    ("ruleset", "scope"),
                    ("world", "scope"),
                    ("entry", "scope"),
                    ("npc", "tier"),
                )
            ),
            models.Index(fields=("scope", "active"), name="segment_scope_active"),
            # The segment list's sorts (either direction): read in order from an index.
            models.Index(fields=("updated_at", "id"), name="segment_by_update"),
            models.Index(fields=("token_count", "id"), name="segment_by_tokens"),
            models.Index(fields=("scope", "sort_order", "id"), name="segment_by_scope"),
            # The list's filters, in its default order (newest change first): a scope's
            # segments, and the inactive ones (few, so a partial index).
            models.Index(fields=("scope", "updated_at", "id"), name="segment_scope_by_update"),
            models.Index(
                fields=("updated_at", "id"),
                condition=Q(active=False),
                name="segment_inactive_by_update",
            ),
            # On PostgreSQL, a stored ``search`` column (a tsvector of the title and text)
            # and its GIN index are added by migration 0011, outside the model: see
            # content.search.
        ]

    def __str__(self) -> str:
        return f"{self.scope} #{self.pk}: {self.label}"

    @property
    def ref(self) -> models.Model | None:
        """The object this segment belongs to, per its scope (None for core)."""
        field = SCOPE_REF_FIELD.get(self.scope)
        return getattr(self, field) if field else None

    @property
    def ref_slug(self) -> str | None:
        ref = self.ref
        return getattr(ref, "slug", None)

    @property
    def label(self) -> str:
        """A short author-facing label: the title, or the start of the content."""
        return segment_title(self.title, self.content)

    @property
    def is_deprecated(self) -> bool:
        return self.scope in DEPRECATED_SCOPES

    def clean(self) -> None:
        """Name the offending field before the database constraints would refuse the row."""
        errors: dict[str, list[str]] = {}
        if self.scope in DEPRECATED_SCOPES:
            if self.active:
                errors.setdefault("active", []).append(
                    f"Scope '{self.scope}' is deprecated: such segments must stay inactive."
                )
        elif self.scope in SCOPE_REF_FIELD:
            wanted = SCOPE_REF_FIELD[self.scope]
            for name in REF_FIELDS:
                is_set = getattr(self, f"{name}_id") is not None
                if name == wanted and not is_set:
                    errors.setdefault(name, []).append(
                        f"A '{self.scope}' segment must belong to a {name}."
                    )
                elif name != wanted and is_set:
                    errors.setdefault(name, []).append(
                        f"A '{self.scope}' segment cannot belong to a {name}."
                    )
        if self.tier and self.scope != Scope.NPC:
            errors.setdefault("tier", []).append("Tier is set only on NPC segments; use 0.")
        if not isinstance(self.metadata, dict):
            errors.setdefault("metadata", []).append("Metadata must be a JSON object.")
        if errors:
            raise ValidationError(errors)


class ApiKeyScope(models.TextChoices):
    READ = "read", "Read (assemble, preview, fetch)"
    WRITE = "write", "Write (also content changes)"
    ADMIN = "admin", "Admin (also imports, deprecated content, releases and labels)"


class ApiKey(AbstractAPIKey):
    """A key for a service calling the REST API, stored hashed; shown once when created.

    ``prefix``, ``hashed_key``, ``name``, ``revoked`` and ``expiry_date`` come from
    djangorestframework-api-key (SHA-512 of the high-entropy key; see ``promptadmin.api``).
    """

    scope = models.CharField(max_length=8, choices=ApiKeyScope.choices, default=ApiKeyScope.READ)

    # How promptadmin.core.actors tells a key from a person without importing this app.
    is_api_key: ClassVar[bool] = True

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "API key"
        verbose_name_plural = "API keys"
        constraints = [
            models.CheckConstraint(
                condition=Q(scope__in=ApiKeyScope.values), name="apikey_scope_valid"
            )
        ]

    @property
    def can_write(self) -> bool:
        return self.scope in (ApiKeyScope.WRITE, ApiKeyScope.ADMIN)

    @property
    def can_admin(self) -> bool:
        return self.scope == ApiKeyScope.ADMIN


class Job(models.Model):
    """Work the workers do in the background: who asked for it (a person, or a service
    with an API key) and when it was made, started and finished; the newest first."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ("-created_at", "-id")


class ImportJob(Job):
    """A legacy import run in the background: the upload (kept as :class:`ImportChunk`
    rows until it has been read), then the report (``ImportReport.as_dict()``) or why it
    failed. Progress while it runs is kept in the cache (the import is one transaction,
    whose writes nobody sees before it ends)."""

    status = models.CharField(max_length=8, choices=Job.Status.choices, default=Job.Status.QUEUED)
    file_name = models.CharField(max_length=255)
    format = models.CharField(max_length=8)
    size = models.PositiveBigIntegerField(help_text="Bytes uploaded.")
    refs = models.JSONField(default=dict, blank=True, validators=[validate_stored_json])
    dry_run = models.BooleanField(default=False)
    skip_invalid = models.BooleanField(default=False)
    rows_read = models.PositiveBigIntegerField(default=0)
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta(Job.Meta):
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed"]),
                name="importjob_status_valid",
            )
        ]

    def __str__(self) -> str:
        return f"import #{self.pk} ({self.file_name}, {self.status})"


class ImportChunk(models.Model):
    """A piece of an uploaded export, in order, until its import has read it."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="chunks")
    seq = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("job", "seq"), name="importchunk_unique_seq")
        ]

    def __str__(self) -> str:
        return f"import #{self.job_id}, piece {self.seq}"


class EntryHealth(models.Model):
    """What an entry's prompt loses, and its lint findings, at the default budgets (a
    first turn and a later turn, with its cast): worked out in the background after
    content changes (``content.services.health``), read by the dashboard.

    ``fingerprint`` names what it was worked out from (a hash of the entry's content, its
    cast's and the tokenizer's), so an entry whose content did not change is not checked
    again.
    """

    entry = models.OneToOneField(
        Entry, on_delete=models.CASCADE, primary_key=True, related_name="health"
    )
    fingerprint = models.CharField(max_length=64)
    errors = models.JSONField(default=list)
    warnings = models.JSONField(default=list)
    # [{"turn": "First turn", "lost": [...], "cause": "..."}]: what each turn leaves out.
    losses = models.JSONField(default=list)
    error_count = models.PositiveIntegerField(default=0)
    warning_count = models.PositiveIntegerField(default=0)
    loss_count = models.PositiveIntegerField(default=0)
    checked_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "entry health"
        indexes = [
            # The dashboard's worst entries first: losses, then errors, then warnings.
            models.Index(
                fields=["-loss_count", "-error_count", "-warning_count", "entry"],
                name="entryhealth_worst_first",
            )
        ]

    def __str__(self) -> str:
        return f"health of entry #{self.entry_id}"


class ContentCheck(models.Model):
    """The one row saying how far the background check of content has come.

    Every committed content change adds one to ``requested``; a check that started at
    ``requested`` = N stores ``checked`` = N when done, so the findings are up to date
    when ``checked >= requested``. ``running_since`` is the claim of the worker doing it
    (a claim older than any task may run belongs to a worker that died). The check also
    keeps the segment counts per scope and the active segments without text.
    """

    requested = models.PositiveBigIntegerField(default=0)
    checked = models.PositiveBigIntegerField(default=0)
    running_since = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    # {"scope": [active, inactive]}
    scope_counts = models.JSONField(default=dict)
    # [[id, scope], ...]: active segments with no text (saved before the services refused them)
    blank_segments = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"content check {self.checked}/{self.requested}"

    @property
    def up_to_date(self) -> bool:
        return self.checked_at is not None and self.checked >= self.requested

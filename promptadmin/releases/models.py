"""Releases, their labels and the scenarios that show a change's impact.

A release is written once, by ``release_create``, and never changed: ``save()`` refuses
to update one (and PostgreSQL triggers refuse whatever the code path). It is a small
manifest naming, for the core and each world, ruleset, entry and NPC, the bundle of what
that object contributes to assembly (``releases.bundles``); a bundle is named by the hash
of its content and stored once, so an object unchanged across a thousand releases is
stored once, and making a release writes only the bundles that changed.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q, Value
from simple_history.models import HistoricalRecords

import assembler
from assembler.request import MAX_CONVERSATION_KEY, MAX_SLUG
from promptadmin.core.storedjson import validate_stored_json

WORKING = "working"
"""What callers name the working copy (never a release or a label)."""

LABEL_PATTERN = r"^[a-z0-9_.-]{1,36}$"
RELEASE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
PRODUCTION = "production"
STAGING = "staging"
#: Names no release may take: the labels every deployment uses, the label that always
#: means the newest version of a registered prompt, and the working copy. Release names
#: and labels share one namespace, so a release holding one of these would stand where a
#: label is meant.
RESERVED_NAMES = (PRODUCTION, STAGING, "latest", WORKING)

label_validator = RegexValidator(
    LABEL_PATTERN,
    "Use 1 to 36 lowercase letters, digits, '_', '.' or '-' (e.g. 'production').",
    code="invalid_label",
)
release_name_validator = RegexValidator(
    RELEASE_NAME_PATTERN,
    "Use up to 64 lowercase letters, digits, '_', '.' or '-', starting with a letter or a "
    "digit (e.g. 'r-2026-11-22').",
    code="invalid_name",
)


class Immutable(models.Model):
    """Rows written once: an update or a delete through the ORM is refused."""

    class Meta:
        abstract = True

    def save(self, *args: object, **kwargs: object) -> None:
        if not self._state.adding:
            raise ValidationError(f"A {self._meta.verbose_name} never changes once made.")
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    def delete(self, *args: object, **kwargs: object) -> tuple[int, dict[str, int]]:
        raise ValidationError(f"A {self._meta.verbose_name} is never deleted.")


class ReleaseBundle(Immutable):
    """What one object (the core, a world, a ruleset, an entry, an NPC) contributes to
    assembly, as canonical JSON (``releases.bundles.encode``), named by its SHA-256:
    stored once, shared by every release whose manifest names it."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    kind = models.CharField(max_length=16)
    content = models.TextField()

    def __str__(self) -> str:
        return f"{self.kind} {self.sha256[:12]}"


class Release(Immutable):
    """An immutable snapshot of every world, ruleset, NPC, entry and active segment.

    ``catalog`` holds the objects (few, small): ``{"worlds": [...], "rulesets": [...],
    "npcs": [...], "entries": [...]}``, each ``{"id", "slug", "name", "description"}``,
    entries also ``"world"`` (slug) and ``"rulesets"`` (slugs, in order). ``manifest``
    names the bundle of every object (see ``releases.bundles.Manifest``); ``index``, made
    from it, is what game servers are served from: the core's and the lore's bundles, and
    the shards naming the bundles of the entries and the NPCs (``releases.bundles.index_of``).
    """

    name = models.CharField(max_length=64, unique=True, validators=[release_name_validator])
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_via = models.CharField(max_length=100, blank=True, help_text="The API key, if any.")
    content_hash = models.CharField(max_length=64)
    segment_count = models.PositiveIntegerField()
    catalog = models.JSONField()
    manifest = models.JSONField()
    index = models.JSONField(default=dict)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.CheckConstraint(condition=~Q(name=WORKING), name="release_name_not_working")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def author(self) -> str:
        if self.created_by is not None:
            return self.created_by.get_username()
        return self.created_via or "system"


class ReleaseLabel(models.Model):
    """A movable name (``production``, ``staging``) for one release."""

    name = models.CharField(max_length=36, unique=True, validators=[label_validator])
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="labels")
    moved_at = models.DateTimeField()

    class Meta:
        ordering = ("name",)
        constraints = [
            models.CheckConstraint(condition=~Q(name=WORKING), name="releaselabel_not_working")
        ]

    def __str__(self) -> str:
        return f"{self.name} -> {self.release_id}"


class ReleaseLabelMove(Immutable):
    """Every move of a label: set, moved (publish, roll back) or removed."""

    label = models.CharField(max_length=36, db_index=True)
    from_release = models.ForeignKey(
        Release, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    to_release = models.ForeignKey(
        Release, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.CharField(max_length=100, blank=True, help_text="The API key, if any.")
    note = models.TextField(blank=True)
    confirmed_failures = models.JSONField(
        default=list,
        blank=True,
        help_text="Expectations failing on the release when the mover confirmed the move.",
    )

    class Meta:
        ordering = ("-at", "-id")

    def __str__(self) -> str:
        return f"{self.label}: {self.from_release_id} -> {self.to_release_id}"

    @property
    def actor(self) -> str:
        if self.by is not None:
            return self.by.get_username()
        return self.via or "system"


class ReleaseAlias(Immutable):
    """Another name a release answers to, made when an admin set a label of a name the
    release answered to: from then on that name means the label, and the release, which
    keeps its own name for good, is reached by this one (``<name>.r<id>``)."""

    name = models.CharField(max_length=64, unique=True, validators=[release_name_validator])
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="aliases")
    move = models.ForeignKey(
        ReleaseLabelMove,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The label move that took the name the release answered to: who, when.",
    )

    class Meta:
        verbose_name_plural = "release aliases"
        ordering = ("name",)

    def __str__(self) -> str:
        return f"{self.name} -> {self.release_id}"


MAX_SCENARIO_NAME = 100


class Scenario(models.Model):
    """A saved preview configuration, with expectations of its prompt."""

    name = models.CharField(max_length=MAX_SCENARIO_NAME, unique=True)
    entry = models.CharField(max_length=MAX_SLUG, help_text="Entry slug.")
    first_turn = models.BooleanField(default=False)
    # What people type: checked like every stored JSON value (the services check it too).
    npcs = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_stored_json],
        help_text='[{"npc": slug, "tier": n}]',
    )
    state = models.JSONField(default=dict, blank=True, validators=[validate_stored_json])
    token_budget = models.PositiveIntegerField(default=assembler.DEFAULT_TOKEN_BUDGET)
    npc_budget = models.PositiveIntegerField(default=assembler.DEFAULT_NPC_BUDGET)
    # The request's ``lore`` option (assembler.request.LoreOptions.to_dict: only what differs
    # from the defaults). A database default too, so rows written by code (or a migration's
    # frozen model) that knows no lore are valid.
    lore = models.JSONField(
        default=dict,
        db_default=Value({}, output_field=models.JSONField()),
        blank=True,
        validators=[validate_stored_json],
        help_text='{"scan_depth": n, "budget": n, "recursion": n, "enabled": bool}',
    )
    # Prompt expectations (assembler.impact) and reply expectations (assembler.replies).
    expectations = models.JSONField(default=list, blank=True, validators=[validate_stored_json])
    # How a playtest asks the model (promptadmin.playtests): limits in assembler.replies.
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=300)
    seed = models.BigIntegerField(null=True, blank=True)
    samples = models.PositiveSmallIntegerField(default=1)
    # A conversation whose history a playtest sends as chat messages (assembler.replies):
    # its key, read by the one request parser; blank: none. A database default too, so
    # rows written by older code (historical models included) get one.
    conversation = models.CharField(
        max_length=MAX_CONVERSATION_KEY, blank=True, default="", db_default=""
    )
    revision = models.PositiveIntegerField(default=1, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Who made, changed or deleted it, and what it said: a deleted scenario leaves its
    # last state and its deleter here.
    history = HistoricalRecords(excluded_fields=["updated_at", "updated_by"])

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name


class WorkingStamp(models.Model):
    """What the working copy's reader knows of one object without reading its segments:
    a random ``stamp`` that PostgreSQL replaces whenever the object's active segments (or
    a world's active lore entries) change, and how many there are.

    Written by the database alone: statement-level triggers on the segment and lore
    tables (migration 0011), so every path (services, bulk loads, imports, migrations,
    raw SQL) keeps it right. ``kind`` is the bundle kind (``releases.bundles.BUNDLE_KIND``,
    or ``lore``); ``owner`` the object's id (0: the core; lore of every world). Rows of
    owner 0 stamp the ``catalog`` (the objects themselves), and what a comparison's
    scenarios follow from (0012): ``scenarios`` (the saved ones) and ``casts``. A random
    stamp never means two states, in this database or another sharing the cache. Empty
    on SQLite, where the working copy is read whole.
    """

    kind = models.CharField(max_length=16)
    owner = models.BigIntegerField()
    stamp = models.UUIDField()
    count = models.IntegerField(help_text="Active segments (lore: active entries).")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("kind", "owner"), name="workingstamp_kind_owner")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.owner}: {self.stamp} ({self.count})"

"""Serializers of releases, labels, scenarios and the impact report."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers

import assembler
from assembler.impact import EXPECTATION_KINDS, MAX_EXPECTATION_TEXT, MAX_EXPECTATIONS
from assembler.replies import (
    MAX_PATTERN,
    MAX_REPLY_TOKENS,
    MAX_RUBRIC,
    MAX_SAMPLES,
    MAX_TEMPERATURE,
    REPLY_KINDS,
)
from assembler.request import MAX_CONVERSATION_KEY, MAX_SLUG
from promptadmin.api import fields as f
from promptadmin.api.serializers.assembly import (
    LoreOptionsSerializer,
    OutcomeSerializer,
    StateSerializer,
    npcs_field,
)
from promptadmin.api.serializers.common import StrictSerializer, utf8_text
from promptadmin.releases.models import (
    MAX_SCENARIO_NAME,
    Release,
    ReleaseLabel,
    ReleaseLabelMove,
    Scenario,
)

HEX_SHA256 = RegexValidator(r"^[0-9a-f]{64}\Z", "Expected a SHA-256 in lowercase hex.")


class ReleaseInputSerializer(StrictSerializer):
    name = f.Text(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="Default: r-YYYY-MM-DD (with -2, -3... when taken). Release names and "
        "labels share one namespace: `production`, `staging`, `latest` and `working` are "
        "reserved, a label's name is refused, and a name a label had before needs the admin "
        "role or an admin key (403).",
    )
    notes = f.Text(required=False, allow_blank=True, default="", max_length=10_000)
    labels = serializers.ListField(
        child=f.Text(max_length=36),
        required=False,
        default=list,
        max_length=20,
        help_text="Labels to move to the new release (publish); needs the admin role or an "
        "admin key.",
    )
    confirm = f.Flag(
        default=False,
        help_text="Move the labels even though expectations fail (recorded with the move).",
    )
    expected_hash = f.Text(
        required=False,
        min_length=64,
        max_length=64,
        validators=[HEX_SHA256],
        help_text="Optional: the working copy's `content_hash` from the compare you reviewed; "
        "409 `working_copy_changed` when the working copy changed since.",
    )

    def validate_notes(self, value: str) -> str:
        utf8_text(value)
        return value


class ReleaseSerializer(serializers.Serializer):
    name = f.Text()
    notes = f.Text(allow_blank=True)
    labels = serializers.ListField(child=f.Text())
    created = serializers.DateTimeField()
    created_by = f.Text(help_text="Username, API key, or 'system'.")
    content_hash = f.Text()
    segments = f.Integer(help_text="Number of segments in the release.")
    aliases = serializers.ListField(
        child=f.Text(),
        help_text="Other names the release answers to: when an admin sets a label of a name "
        "the release answered to, the name means the label from then on and the release "
        "gets another, `<name>.r<id>`.",
    )

    @staticmethod
    def of(release: Release) -> dict[str, Any]:
        return {
            "name": release.name,
            "notes": release.notes,
            "labels": sorted(label.name for label in release.labels.all()),
            "created": release.created_at,
            "created_by": release.author,
            "content_hash": release.content_hash,
            "segments": release.segment_count,
            "aliases": sorted(alias.name for alias in release.aliases.all()),
        }


class LabelInputSerializer(StrictSerializer):
    release = f.Text(max_length=64, help_text="The release's name.")
    note = f.Text(required=False, allow_blank=True, default="", max_length=10_000)
    confirm = f.Flag(default=False, help_text="Move even though expectations fail.")

    def validate_note(self, value: str) -> str:
        utf8_text(value)
        return value


class LabelRemoveSerializer(StrictSerializer):
    note = f.Text(required=False, allow_blank=True, default="", max_length=10_000)


class ReleaseLabelSerializer(serializers.Serializer):
    label = f.Text()
    release = f.Text()
    moved_at = serializers.DateTimeField()

    @staticmethod
    def of(label: ReleaseLabel) -> dict[str, Any]:
        return {"label": label.name, "release": label.release.name, "moved_at": label.moved_at}


class FailureSerializer(serializers.Serializer):
    scenario = f.Text()
    expectation = f.Text()
    reason = f.Text()


class LabelMoveSerializer(serializers.Serializer):
    label = f.Text()
    from_release = f.Text(allow_null=True)
    to_release = f.Text(allow_null=True, help_text="null: the label was removed.")
    at = serializers.DateTimeField()
    by = f.Text(help_text="Username, API key, or 'system'.")
    note = f.Text(allow_blank=True)
    confirmed_failures = FailureSerializer(many=True)

    @staticmethod
    def of(move: ReleaseLabelMove) -> dict[str, Any]:
        return {
            "label": move.label,
            "from_release": move.from_release.name if move.from_release else None,
            "to_release": move.to_release.name if move.to_release else None,
            "at": move.at,
            "by": move.actor,
            "note": move.note,
            "confirmed_failures": move.confirmed_failures,
        }


class ExpectationSerializer(StrictSerializer):
    """A prompt expectation (fits, keeps_segment, contains, max_tokens) or a reply one
    (reply_*, judge: checked by playtests on the model's replies)."""

    kind = serializers.ChoiceField(choices=(*EXPECTATION_KINDS, *REPLY_KINDS))
    segment = f.Integer(required=False, min_value=1, help_text="keeps_segment: the segment's id.")
    text = f.Text(
        required=False, max_length=MAX_EXPECTATION_TEXT, help_text="contains: the text to find."
    )
    tokens = f.Integer(
        required=False,
        min_value=1,
        max_value=assembler.MAX_BUDGET,
        help_text="max_tokens, reply_max_tokens: the most tokens allowed.",
    )
    pattern = f.Text(
        required=False,
        max_length=MAX_PATTERN,
        help_text="reply_matches: a regular expression (RE2 syntax) the reply must match.",
    )
    schema = serializers.JSONField(
        required=False, help_text="reply_json: the JSON Schema the reply must validate against."
    )
    rubric = f.Text(
        required=False,
        max_length=MAX_RUBRIC,
        help_text="judge: what the model grading the reply checks it for.",
    )


# For the OpenAPI schema only: the scenario services check a write, its request fields
# with the one request parser (assembler.request), as /assemble reads them.
class ScenarioInputSerializer(StrictSerializer):
    """The shape of a scenario write; what the names refer to (the entry, the NPCs) is
    checked by the scenario services, after the If-Match precondition."""

    name = f.Text(max_length=MAX_SCENARIO_NAME)
    entry = f.Text(max_length=MAX_SLUG, help_text="Entry slug.")
    first_turn = f.Flag(required=False)
    npcs = npcs_field(required=False, help_text="Most important first.")
    state = StateSerializer(required=False)
    token_budget = f.Integer(min_value=0, max_value=assembler.MAX_BUDGET, required=False)
    npc_budget = f.Integer(min_value=0, max_value=assembler.MAX_BUDGET, required=False)
    lore = LoreOptionsSerializer(required=False)
    conversation = f.Text(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=MAX_CONVERSATION_KEY,
        help_text="Playtests: a conversation's key; its history is sent as chat messages "
        "before the input. Blank or null: none.",
    )
    expectations = serializers.ListField(
        child=ExpectationSerializer(), required=False, max_length=MAX_EXPECTATIONS
    )
    temperature = f.Number(
        required=False, min_value=0, max_value=MAX_TEMPERATURE, help_text="Playtests: 0 default."
    )
    max_tokens = f.Integer(
        required=False, min_value=1, max_value=MAX_REPLY_TOKENS, help_text="Playtests: 300 default."
    )
    seed = f.Integer(required=False, allow_null=True, help_text="Playtests: sent when set.")
    samples = f.Integer(
        required=False, min_value=1, max_value=MAX_SAMPLES, help_text="Playtests: replies per side."
    )


class ScenarioSerializer(serializers.Serializer):
    """A saved scenario, as read."""

    id = f.Integer(read_only=True)
    name = f.Text(max_length=MAX_SCENARIO_NAME)
    entry = f.Text(max_length=MAX_SLUG, help_text="Entry slug.")
    first_turn = f.Flag(required=False)
    npcs = serializers.ListField(child=serializers.DictField(), required=False)
    state = serializers.DictField(required=False)
    token_budget = f.Integer(required=False, default=assembler.DEFAULT_TOKEN_BUDGET)
    npc_budget = f.Integer(required=False, default=assembler.DEFAULT_NPC_BUDGET)
    lore = serializers.DictField(
        required=False,
        help_text="The request's lore option, only what differs from the defaults ({}: all).",
    )
    expectations = ExpectationSerializer(many=True, required=False)
    temperature = f.Number(required=False, default=0.0)
    max_tokens = f.Integer(required=False, default=300)
    seed = f.Integer(required=False, allow_null=True)
    samples = f.Integer(required=False, default=1)
    conversation = f.Text(required=False, default="", help_text="A conversation's key, or blank.")
    revision = f.Integer(read_only=True)

    @staticmethod
    def of(scenario: Scenario) -> dict[str, Any]:
        return {
            "id": scenario.pk,
            "name": scenario.name,
            "entry": scenario.entry,
            "first_turn": scenario.first_turn,
            "npcs": scenario.npcs,
            "state": scenario.state,
            "token_budget": scenario.token_budget,
            "npc_budget": scenario.npc_budget,
            "lore": scenario.lore,
            "expectations": scenario.expectations,
            "temperature": scenario.temperature,
            "max_tokens": scenario.max_tokens,
            "seed": scenario.seed,
            "samples": scenario.samples,
            "conversation": scenario.conversation,
            "revision": scenario.revision,
        }


class SegmentSummarySerializer(serializers.Serializer):
    id = f.Integer()
    scope = f.Text()
    owner = f.Text(allow_null=True)
    title = f.Text(allow_blank=True)
    tokens = f.Integer()


class FieldChangeSerializer(serializers.Serializer):
    field = f.Text()
    before = serializers.JSONField()
    after = serializers.JSONField()


class ContentChangeSerializer(serializers.Serializer):
    """What changed of a segment or a lore entry."""

    fields = serializers.ListField(child=f.Text())
    changes = FieldChangeSerializer(
        many=True, help_text="Each changed field but the content, before and after."
    )
    tokens_before = f.Integer()
    diff = f.Text(allow_blank=True, help_text="Unified diff of the content ('' if unchanged).")


class SegmentChangeSerializer(SegmentSummarySerializer, ContentChangeSerializer):
    pass


def change_set(
    name: str, summary: type[serializers.Serializer], change: type[serializers.Serializer], doc: str
) -> type[serializers.Serializer]:
    """A serializer of what was ``added``, ``changed`` and ``removed`` of one kind of thing."""
    return type(
        name,
        (serializers.Serializer,),
        {
            "__doc__": doc,
            "added": summary(many=True),
            "changed": change(many=True),
            "removed": summary(many=True),
        },
    )


SegmentChangesSerializer = change_set(
    "SegmentChangesSerializer",
    SegmentSummarySerializer,
    SegmentChangeSerializer,
    "Active segments added, changed and removed.",
)


class ObjectSummarySerializer(serializers.Serializer):
    kind = f.Text(help_text="worlds, rulesets, npcs or entries.")
    slug = f.Text()
    name = f.Text()


class ObjectChangeSerializer(ObjectSummarySerializer):
    fields = serializers.ListField(child=f.Text())
    changes = FieldChangeSerializer(
        many=True, help_text="Each changed field but the description, before and after."
    )
    diff = f.Text(allow_blank=True, help_text="Unified diff of the description ('' if unchanged).")


ObjectChangesSerializer = change_set(
    "ObjectChangesSerializer",
    ObjectSummarySerializer,
    ObjectChangeSerializer,
    "Worlds, rulesets, NPCs and entries added, changed and removed.",
)


class LoreSummarySerializer(serializers.Serializer):
    id = f.Integer()
    world = f.Text(allow_null=True, help_text="The world's slug; null: lore of every world.")
    title = f.Text(allow_blank=True)
    tokens = f.Integer()


class LoreChangeSerializer(LoreSummarySerializer, ContentChangeSerializer):
    pass


LoreChangesSerializer = change_set(
    "LoreChangesSerializer",
    LoreSummarySerializer,
    LoreChangeSerializer,
    "Active lore entries (what assembles) added, changed and removed: one made inactive is "
    "removed.",
)


class ExpectationResultSerializer(serializers.Serializer):
    expectation = f.Text()
    reason = f.Text()


class ScenarioImpactSerializer(serializers.Serializer):
    scenario = f.Text()
    saved = f.Flag(help_text="false: an entry's implicit scenario.")
    entry = f.Text()
    first_turn = f.Flag()
    tokens_before = f.Integer(allow_null=True)
    tokens_after = f.Integer(allow_null=True)
    cuts_added = serializers.ListField(child=f.Text())
    cuts_removed = serializers.ListField(child=f.Text())
    expectations_failing = ExpectationResultSerializer(many=True)
    expectations_fixed = ExpectationResultSerializer(many=True)
    expectations_still_failing = ExpectationResultSerializer(many=True)
    expectations_holding = serializers.ListField(
        child=f.Text(),
        help_text="The expectations that hold on the new version (when it was assembled).",
    )
    error_before = f.Text(allow_null=True)
    error_after = f.Text(allow_null=True)
    new = f.Flag(
        help_text="Its entry (or an NPC it names) did not exist before, and it assembles now: "
        "outcome_after says what it loses."
    )
    missing_before = serializers.ListField(
        child=f.Text(), help_text="What the before side lacks, e.g. \"entry 'The cinder gate'\"."
    )
    missing_after = serializers.ListField(child=f.Text(), help_text="What the after side lacks.")
    outcome_before = OutcomeSerializer(
        allow_null=True,
        help_text="meta.outcome before, of the cuts that disappear alone (cuts_removed, item "
        "by item; null: not assembled). A version's whole outcome is what /assemble, with "
        "that release, says.",
    )
    outcome_after = OutcomeSerializer(
        allow_null=True,
        help_text="meta.outcome after, of the cuts that appear alone (cuts_added, item by "
        "item): all of a new scenario's (null: not assembled).",
    )
    changed = f.Flag(help_text="Whether the prompt differs.")
    assembled = f.Flag(
        help_text="Whether it was assembled from both sides: false when nothing it is made of "
        "differs (its prompt is the same; its tokens and expectations are then null and empty)."
    )
    preview_query = f.Text(help_text="The studio preview's query string for this scenario.")


class SideSerializer(serializers.Serializer):
    name = f.Text()
    label = f.Text(allow_null=True)
    content_hash = f.Text(
        allow_null=True,
        help_text="The content's hash (null: nothing published); the working copy's is what "
        "a publish may send as `expected_hash`.",
    )


class CompareSerializer(serializers.Serializer):
    before = SideSerializer()
    after = SideSerializer()
    segments = SegmentChangesSerializer()
    objects = ObjectChangesSerializer()
    lore = LoreChangesSerializer()
    scenarios = ScenarioImpactSerializer(many=True)

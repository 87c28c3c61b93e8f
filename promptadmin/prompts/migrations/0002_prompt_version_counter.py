"""Each prompt counts the version numbers it has given, so a deleted version's number is
never given again (the next version used to take the highest remaining number plus one).

Existing prompts start from their highest version: a number deleted before this
migration cannot be known any more, and only a deleted newest version could be reused.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce


def count_given_numbers(apps: Any, schema_editor: Any) -> None:
    Prompt = apps.get_model("prompts", "Prompt")
    PromptVersion = apps.get_model("prompts", "PromptVersion")
    highest = (
        PromptVersion.objects.filter(prompt=OuterRef("pk"))
        .values("prompt")
        .annotate(highest=Max("number"))
        .values("highest")
    )
    Prompt.objects.update(last_version_number=Coalesce(Subquery(highest), Value(0)))


class Migration(migrations.Migration):
    dependencies = [("prompts", "0001_registered_prompts")]

    operations = [
        migrations.AddField(
            model_name="prompt",
            name="last_version_number",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(count_given_numbers, migrations.RunPython.noop),
    ]

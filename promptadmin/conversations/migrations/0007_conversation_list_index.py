"""The studio's list of conversations, most recently active first, read from an index."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0006_indexes_for_long_conversations"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="conversation",
            index=models.Index(fields=["updated_at", "id"], name="conversation_by_update"),
        ),
    ]

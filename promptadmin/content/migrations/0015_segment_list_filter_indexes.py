"""The segment list filtered by scope, or to its inactive segments, in its default order
(newest change first), read from an index: at 100,000 segments a scope's newest page was
a scan of the table and a sort (about 100 ms)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("promptadmin", "0014_segment_search_index_written_at_once"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="segment",
            index=models.Index(
                fields=["scope", "updated_at", "id"], name="segment_scope_by_update"
            ),
        ),
        migrations.AddIndex(
            model_name="segment",
            index=models.Index(
                condition=models.Q(("active", False)),
                fields=["updated_at", "id"],
                name="segment_inactive_by_update",
            ),
        ),
    ]

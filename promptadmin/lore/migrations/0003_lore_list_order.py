"""The lore page's order (priority, highest first, then id) as indexes: a world's page and
the total tokens of its book (from the index alone, on PostgreSQL), and the page of every
world's lore, cost the same at 10,000 entries as at 100 (a sort of the whole book each
time before)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('lore', '0002_lore_search'),
        ('promptadmin', '0016_segment_history_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='loreentry',
            index=models.Index(fields=['world', '-priority', 'id'], include=('token_count',), name='lore_world_order'),
        ),
        migrations.AddIndex(
            model_name='loreentry',
            index=models.Index(fields=['-priority', 'id'], name='lore_order'),
        ),
    ]

from django.db import migrations

ROLES = ("viewer", "author", "admin")


def create_role_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def remove_role_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("promptadmin", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_role_groups, remove_role_groups)]

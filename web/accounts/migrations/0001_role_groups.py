"""Create the role groups viewer, operator and admin (see web/accounts/roles.py)."""

from django.db import migrations

ROLES = ("viewer", "operator", "admin")  # frozen copy: migrations must not import changing code


def create_role_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def delete_role_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(create_role_groups, delete_role_groups)]

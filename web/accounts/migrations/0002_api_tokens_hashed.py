"""API tokens stored as SHA-256 digests (web.accounts.models.ApiToken); every token DRF kept in clear is converted
(same key, so clients keep working) and its clear row deleted."""

import hashlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def convert_clear_tokens(apps, schema_editor):
    ClearToken = apps.get_model("authtoken", "Token")
    ApiToken = apps.get_model("accounts", "ApiToken")
    for token in ClearToken.objects.all():
        digest = hashlib.sha256(token.key.encode()).hexdigest()
        ApiToken.objects.get_or_create(digest=digest, defaults={"user_id": token.user_id, "prefix": token.key[:8],
                                                                "created": token.created})
    ClearToken.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_role_groups"),
        ("authtoken", "0004_alter_tokenproxy_options"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]
    operations = [
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("digest", models.CharField(help_text="SHA-256 of the key, hexadecimal.", max_length=64, unique=True)),
                ("prefix", models.CharField(db_index=True, help_text="The key's first characters.", max_length=8)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="api_tokens",
                                           to=settings.AUTH_USER_MODEL)),
            ],
            options={"verbose_name": "API token", "ordering": ["-created"]},
        ),
        migrations.RunPython(convert_clear_tokens, migrations.RunPython.noop),
    ]

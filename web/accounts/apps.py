from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "web.accounts"
    label = "accounts"
    verbose_name = "Accounts and roles"

    def ready(self):
        from web.accounts import tokens  # noqa: F401 - connects the conversion of clear DRF tokens

from django.apps import AppConfig


class VerificationConfig(AppConfig):
    name = "verification"
    default_auto_field = "django.db.models.BigAutoField"

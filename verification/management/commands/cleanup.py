"""`python manage.py cleanup [--days N]`: deletes the runs that finished more than
RUN_RETENTION_DAYS days ago, with all their rows. Runs still under way are kept."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from verification import services


class Command(BaseCommand):
    help = "Delete runs that finished more than RUN_RETENTION_DAYS days ago (0 keeps every run)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--days", type=int, help="instead of RUN_RETENTION_DAYS")

    def handle(self, *args, **options) -> None:
        days = settings.RUN_RETENTION_DAYS if options["days"] is None else options["days"]
        if days < 0:
            raise CommandError("--days must be 0 (keep every run) or more")
        if days == 0:
            self.stdout.write("Retention is 0 days: every run is kept.")
            return
        deleted = services.verifications_delete_older_than(days)
        self.stdout.write(f"Deleted {deleted} run{'' if deleted == 1 else 's'} finished more than {days} days ago.")

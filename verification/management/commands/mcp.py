"""`python manage.py mcp`: factsite as an MCP server over stdio, for an assistant on this machine
(docs/mcp.md). The process is one client: its runs count against RUNS_PER_HOUR as one address
(limits.MCP_STDIO_ADDRESS), and its owner token is MCP_CLIENT_TOKEN, or a new one told on standard
error (standard output is the protocol's). Runs go to the Celery workers on REDIS_URL, or to the
embedded worker in this process, started with it."""

import anyio
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from verification.access import limits, ownership
from verification.mcp import identity
from verification.mcp.server import server
from verification.worker import embedded


class Command(BaseCommand):
    help = "Serve factsite's MCP tools (check_text, check_trail, get_result, cancel) over stdio."

    def handle(self, *args, **options) -> None:
        token = settings.MCP_CLIENT_TOKEN
        if token and not ownership.TOKEN_PATTERN.fullmatch(token):
            raise CommandError(f"MCP_CLIENT_TOKEN: {ownership.TOKEN_RULE.removeprefix(ownership.HEADER + ' ')}.")
        if not token:
            token = ownership.new_token()
            self.stderr.write(
                f"factsite MCP: this process's client token is {token} (set MCP_CLIENT_TOKEN to keep one across "
                "restarts: only the client that started a run may cancel it)."
            )
        # A fresh clone has no tables yet (as for `manage.py verify`); standard output is the protocol's.
        call_command("migrate", verbosity=0, interactive=False, stdout=self.stderr)
        identity.serve_as(
            identity.Identity(
                client=limits.client_key(limits.MCP_STDIO_ADDRESS), token=token, site=settings.MCP_SITE_URL
            )
        )
        # Without REDIS_URL the runs are worked on in this process: its worker started from the main thread, as
        # the web app's (factsite/wsgi.py), so that a stop signal ends its CPU pool too, and so that the runs a
        # previous process left unfinished go on.
        embedded.ensure_embedded_worker()
        anyio.run(server.run_stdio_async)

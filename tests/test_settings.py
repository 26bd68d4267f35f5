"""Settings from the environment, read by separate processes as a deployment reads them: a fresh
clone serves plain http, and the documented production environment passes Django's deployment
checks with no warning."""

import os
import secrets
import subprocess
import sys

from tests.conftest import ROOT
from tests.deployment import clean_checkout, image_environment

# The production environment README.md and .env.example document (its secret made up here).
PRODUCTION = {
    "DJANGO_DEBUG": "0",
    "DJANGO_ALLOWED_HOSTS": "factsite.example.org",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://factsite.example.org",
    "DJANGO_HTTPS": "1",
    "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "DJANGO_SECURE_HSTS_PRELOAD": "1",
}


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    environment = {"PATH": os.environ["PATH"], "DJANGO_SECRET_KEY": secrets.token_urlsafe(50), **env}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


# What requests to the home page get (one line each: status, Location, the CSRF cookie's Secure
# flag), under the settings of a separate process.
REQUESTS = """
from django.test import Client
for headers in {headers!r}:
    response = Client(HTTP_HOST="{host}").get("/", **headers)
    cookie = response.cookies.get("csrftoken")
    secure = "no-cookie" if cookie is None else cookie["secure"] or "-"
    print(response.status_code, response.get("Location", "-"), secure)
"""


def home_page(env: dict[str, str], *headers: dict[str, str], host: str = "127.0.0.1") -> list[list[str]]:
    result = manage("shell", "--no-imports", "-c", REQUESTS.format(host=host, headers=list(headers)), env=env)
    assert result.returncode == 0, result.stderr
    return [line.split() for line in result.stdout.splitlines()[-len(headers) :]]


def test_the_production_environment_passes_the_deployment_checks_with_no_warning():
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNING" not in result.stdout + result.stderr


def test_the_defaults_serve_plain_http_and_the_deployment_checks_say_what_is_missing():
    checks = manage("check", "--deploy", "--fail-level", "WARNING", env={})

    assert checks.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W016"):
        assert warning in checks.stderr + checks.stdout, warning
    # A fresh clone over plain http: no redirect to https, and a CSRF cookie the browser sends back.
    assert home_page({}, {}) == [["200", "-", "-"]]


def test_behind_a_tls_proxy_https_is_served_with_secure_cookies_and_http_is_redirected():
    # Left empty, as in a copied .env.example, they follow DJANGO_HTTPS.
    unset = {"DJANGO_SECURE_SSL_REDIRECT": "", "DJANGO_SECURE_COOKIES": ""}
    env = {**PRODUCTION, **unset, "DJANGO_SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"}

    https, http = home_page(env, {"HTTP_X_FORWARDED_PROTO": "https"}, {}, host="factsite.example.org")

    assert https == ["200", "-", "True"]
    assert http == ["301", "https://factsite.example.org/", "no-cookie"]


def allow_private_fetch(checkout, env: dict[str, str]) -> str:
    """ALLOW_PRIVATE_FETCH as settings read it in a process started in `checkout`."""
    code = "import django; django.setup(); from django.conf import settings; print(settings.ALLOW_PRIVATE_FETCH)"
    environment = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "factsite.settings", **env}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=checkout, env=environment, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_a_dot_env_file_is_read_in_development_and_never_in_the_image(tmp_path):
    checkout = clean_checkout(tmp_path / "checkout")
    (checkout / ".env").write_text("ALLOW_PRIVATE_FETCH=1\nDJANGO_SECRET_KEY=from-the-file\n")

    assert allow_private_fetch(checkout, {}) == "True"
    assert allow_private_fetch(checkout, image_environment(checkout)) == "False"

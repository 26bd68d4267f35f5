"""Brave Search API: GET {base}/res/v1/web/search?q=&count= with X-Subscription-Token, and for
a text in a language Brave lists its `search_lang` and `country`; hits in `web.results[]` (url,
title, description). Errors come as {"type": "ErrorResponse", "error": {"code", "detail",
"status"}}."""

from verification.pipeline import languages
from verification.pipeline.types import SearchHit, StepError

from .http import HttpProvider, error_detail, hits_from, json_object, send

# The API refuses (422) a count over 20.
MAX_COUNT = 20


class BraveSearch(HttpProvider):
    name, label = "brave", "Brave"
    path = "/res/v1/web/search"

    def search(self, query: str, num: int, *, language: str | None = None) -> list[SearchHit]:
        response = send(
            self.session,
            self.label,
            "GET",
            self.endpoint,
            params={"q": query, "count": min(num, MAX_COUNT), **locale(language)},
            headers={"X-Subscription-Token": self.api_key, "Accept": "application/json"},
            timeout=self.timeout,
        )
        if response.status_code != 200:
            raise StepError(self._refusal(response))
        web = json_object(response, self.label).get("web") or {}
        # No "web" section at all is how Brave says it found nothing.
        results = web.get("results") if isinstance(web, dict) else web
        return hits_from(results, self.label, self.name, url="url", title="title", snippet="description")

    def _refusal(self, response) -> str:
        status, detail, code = response.status_code, error_detail(response), _error_code(response)
        if status in (401, 403) or (status == 422 and ("TOKEN" in code or not code)):
            return f"Brave: the key was refused (HTTP {status}): check BRAVE_API_KEY"
        if status == 429:
            if "QUOTA" in code:
                return "Brave: the plan's monthly quota is used up (HTTP 429)"
            return "Brave: too many requests for the plan's rate limit (HTTP 429)"
        return f"Brave: the service answered HTTP {status}" + (f" ({detail})" if detail else "")


# The values Brave's documentation lists ("codes"): it refuses (422) any other, so a language or
# country it does not list is left out and Brave searches as it did before languages were read.
SEARCH_LANGS = frozenset(
    """ar eu bn bg ca zh-hans zh-hant hr cs da nl en en-gb et fi fr gl de el gu he hi hu is it jp kn ko
    lv lt ms ml mr nb pl pt-br pt-pt pa ro ru sr sk sl es sv ta te th tr uk vi""".split()
)
COUNTRIES = frozenset(
    """ar au at be br ca cl dk fi fr de gr hk in id it jp kr my mx nl nz no cn pl pt ph ru sa za es se ch tw
    tr gb us""".split()
)
# Brave's codes where they are not ISO 639-1 (Japanese is "jp"; Chinese and Portuguese by variant).
_SEARCH_LANG = {"ja": "jp", "zh": "zh-hans", "pt": "pt-br", "no": "nb"}


def locale(language: str | None) -> dict[str, str]:
    """{"search_lang", "country"} as far as Brave lists them; {} for no language."""
    found = languages.language(language)
    if found is None:
        return {}
    params = {}
    search_lang = _SEARCH_LANG.get(found.code, found.code)
    if search_lang in SEARCH_LANGS:
        params["search_lang"] = search_lang
    if found.region in COUNTRIES:
        params["country"] = found.region.upper()
    return params


def _error_code(response) -> str:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return ""
    return str(error.get("code") or "").upper() if isinstance(error, dict) else ""

"""Brave Search API: GET {base}/res/v1/web/search?q=&count= with X-Subscription-Token; hits
in `web.results[]` (url, title, description). Errors come as
{"type": "ErrorResponse", "error": {"code", "detail", "status"}}."""

from verification.pipeline.types import SearchHit, StepError

from .http import HttpProvider, error_detail, hits_from, json_object, send

# The API refuses (422) a count over 20.
MAX_COUNT = 20


class BraveSearch(HttpProvider):
    name, label = "brave", "Brave"
    path = "/res/v1/web/search"

    def search(self, query: str, num: int) -> list[SearchHit]:
        response = send(
            self.session,
            self.label,
            "GET",
            self.endpoint,
            params={"q": query, "count": min(num, MAX_COUNT)},
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


def _error_code(response) -> str:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return ""
    return str(error.get("code") or "").upper() if isinstance(error, dict) else ""

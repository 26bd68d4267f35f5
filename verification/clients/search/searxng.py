"""SearXNG, self-hosted and keyless: GET {url}/search?q=&format=json, and `language` (an ISO
639-1 code, which SearXNG hands each engine in its own form) for a text in a known language;
hits in `results[]` (url, title, content). An instance answers 403 when its settings leave
`json` out of `search.formats`."""

from verification.pipeline.types import SearchHit, StepError

from .http import HttpProvider, hits_from, json_object, send


class SearxngSearch(HttpProvider):
    name, label = "searxng", "SearXNG"
    path = "/search"

    def search(self, query: str, num: int, *, language: str | None = None) -> list[SearchHit]:
        params = {"q": query, "format": "json"}
        if language:  # without it, the instance's default (search.default_lang, often "auto")
            params["language"] = language
        response = send(
            self.session,
            self.label,
            "GET",
            self.endpoint,
            params=params,
            headers={"Accept": "application/json"},
            timeout=self.timeout,
        )
        if response.status_code == 403:
            raise StepError(
                "SearXNG: the instance refused the JSON format (HTTP 403): add json to search.formats "
                "in its settings.yml"
            )
        if response.status_code == 429:
            raise StepError("SearXNG: the instance's limiter refused the request (HTTP 429)")
        if response.status_code != 200:
            raise StepError(f"SearXNG: the instance answered HTTP {response.status_code}")
        data = json_object(response, self.label)
        # It has no count parameter: one page of results comes back, of which the first num count.
        return hits_from(data.get("results"), self.label, self.name, url="url", title="title", snippet="content")[:num]

"""Tavily: POST {base}/search with `Authorization: Bearer <key>` and {"query", "max_results"};
hits in `results[]` (url, title, content). Errors come as {"detail": {"error": "..."}}.
Tavily takes no language: a query in the text's language finds pages in it all the same."""

from verification.pipeline.types import SearchHit, StepError

from .http import HttpProvider, error_detail, hits_from, json_object, send

# The API takes 0 to 20 results.
MAX_RESULTS = 20


class TavilySearch(HttpProvider):
    name, label = "tavily", "Tavily"
    path = "/search"

    def search(self, query: str, num: int, *, language: str | None = None) -> list[SearchHit]:
        response = send(
            self.session,
            self.label,
            "POST",
            self.endpoint,
            json={"query": query, "max_results": min(num, MAX_RESULTS)},
            headers={"Authorization": f"Bearer {self.api_key}"},
            timeout=self.timeout,
        )
        if response.status_code != 200:
            raise StepError(self._refusal(response))
        data = json_object(response, self.label)
        return hits_from(data.get("results"), self.label, self.name, url="url", title="title", snippet="content")

    def _refusal(self, response) -> str:
        status, detail = response.status_code, error_detail(response)
        if status in (401, 403):
            return f"Tavily: the key was refused (HTTP {status}): check TAVILY_API_KEY"
        if status == 429:
            return "Tavily: too many requests for the plan's rate limit (HTTP 429)"
        # 432: the plan's monthly credits are spent; 433: the pay-as-you-go limit is reached.
        if status in (432, 433):
            return f"Tavily: the plan's usage limit is reached (HTTP {status})"
        return f"Tavily: the service answered HTTP {status}" + (f" ({detail})" if detail else "")

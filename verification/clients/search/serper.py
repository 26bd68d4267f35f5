"""Serper (Google results): POST {base}/search with X-API-KEY and {"q", "num"}; hits in
`organic[]` (link, title, snippet)."""

from verification.pipeline.types import SearchHit, StepError

from .http import HttpProvider, error_detail, hits_from, json_object, send


class SerperSearch(HttpProvider):
    name, label = "serper", "Serper"
    path = "/search"

    def search(self, query: str, num: int) -> list[SearchHit]:
        response = send(
            self.session,
            self.label,
            "POST",
            self.endpoint,
            json={"q": query, "num": num},
            headers={"X-API-KEY": self.api_key},
            timeout=self.timeout,
        )
        if response.status_code != 200:
            raise StepError(self._refusal(response))
        data = json_object(response, self.label)
        return hits_from(data.get("organic"), self.label, self.name, url="link", title="title", snippet="snippet")

    def _refusal(self, response) -> str:
        status, detail = response.status_code, error_detail(response)
        # Serper answers 400 {"message": "Not enough credits"} when the account's credits are spent.
        if "credits" in detail.lower():
            return "Serper: not enough credits"
        if status in (401, 403):
            return f"Serper: the key was refused (HTTP {status}): check SERPER_API_KEY"
        return f"Serper: the service answered HTTP {status}" + (f" ({detail})" if detail else "")

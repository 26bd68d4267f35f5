"""Serper (Google results): POST {base}/search with X-API-KEY and {"q", "num"}, and for a text
in a known language Google's `hl` (its language) and `gl` (its country); hits in `organic[]`
(link, title, snippet)."""

from verification.pipeline import languages
from verification.pipeline.types import SearchHit, StepError

from .http import HttpProvider, error_detail, hits_from, json_object, send


class SerperSearch(HttpProvider):
    name, label = "serper", "Serper"
    path = "/search"

    def search(self, query: str, num: int, *, language: str | None = None) -> list[SearchHit]:
        response = send(
            self.session,
            self.label,
            "POST",
            self.endpoint,
            json={"q": query, "num": num, **locale(language)},
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


# Google's interface-language codes where they are not the ISO 639-1 code.
_GOOGLE_HL = {"zh": "zh-cn", "he": "iw", "jv": "jw"}


def locale(language: str | None) -> dict[str, str]:
    """{"hl", "gl"} for a language factsite knows (gl only where it has a country); {} else,
    and Google answers as it did before languages were read."""
    found = languages.language(language)
    if found is None:
        return {}
    params = {"hl": _GOOGLE_HL.get(found.code, found.code)}
    if found.region:
        params["gl"] = found.region
    return params

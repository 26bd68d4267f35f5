"""Web search providers. Serper (Google results) is the first; any class with
`search(query, num) -> list[SearchHit]` can stand in its place."""

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from verification.pipeline.types import SearchHit, StepError


def retrying_session(total: int = 3) -> requests.Session:
    """A session that retries 429/5xx and dropped connections with exponential backoff."""
    retry = Retry(
        total=total,
        backoff_factor=0.5,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=None,
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry, pool_maxsize=32)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class SerperSearch:
    def __init__(self, *, api_key: str, base_url: str, timeout: float, session=None) -> None:
        self.api_key = api_key
        self.endpoint = base_url.rstrip("/") + "/search"
        self.timeout = timeout
        self.session = session or retrying_session()

    def search(self, query: str, num: int) -> list[SearchHit]:
        try:
            response = self.session.post(
                self.endpoint,
                json={"q": query, "num": num},
                headers={"X-API-KEY": self.api_key},
                timeout=self.timeout,
            )
        except requests.RequestException as error:
            raise StepError(f"could not reach the search service ({type(error).__name__})") from error
        if response.status_code in (401, 403):
            raise StepError(f"the search service refused the key (HTTP {response.status_code}): check SERPER_API_KEY")
        if response.status_code != 200:
            raise StepError(f"the search service answered HTTP {response.status_code}")
        try:
            organic = response.json().get("organic") or []
            return [
                SearchHit(
                    url=str(item["link"]),
                    title=str(item.get("title") or ""),
                    snippet=str(item.get("snippet") or ""),
                    rank=rank,
                )
                for rank, item in enumerate(organic, start=1)
                if isinstance(item, dict) and item.get("link")
            ]
        except (ValueError, AttributeError, TypeError) as error:
            raise StepError("the search service sent an answer that is not Serper's JSON") from error

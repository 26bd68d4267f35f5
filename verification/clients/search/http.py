"""What every search provider's client shares: a retrying session, one request that turns
network errors into readable reasons, and reading the JSON answer."""

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


class HttpProvider:
    """A provider's connection: its endpoint (the base URL and `path`), timeout and session;
    `api_key` for the ones that need a key (the keyless ones leave it empty)."""

    name = label = path = ""

    def __init__(self, *, base_url: str, timeout: float, api_key: str = "", session=None) -> None:
        self.api_key = api_key
        self.endpoint = base_url.rstrip("/") + self.path if self.path else base_url
        self.timeout = timeout
        self.session = session or retrying_session()


def send(session: requests.Session, label: str, method: str, url: str, **kwargs) -> requests.Response:
    try:
        return session.request(method, url, **kwargs)
    except requests.RequestException as error:
        raise StepError(f"{label}: could not reach the service ({type(error).__name__})") from error


def json_object(response: requests.Response, label: str) -> dict:
    """The answer's JSON object, or a reason naming the provider: a proxy's HTML error page or
    a changed API must fail the provider (so the next one is tried), not the worker."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise StepError(f"{label}: the answer is not the JSON its API sends (HTTP {response.status_code})")
    return data


def error_detail(response: requests.Response) -> str:
    """The reason an API gave for refusing a request, when its JSON body states one."""
    try:
        data = response.json()
    except ValueError:
        return ""
    for path in (("message",), ("detail", "error"), ("detail",), ("error", "detail"), ("error", "info")):
        value = data
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip()[:200]
    return ""


def hits_from(items, label: str, provider: str, *, url: str, title: str, snippet: str) -> list[SearchHit]:
    """Search hits from an API's list of results (keys named per API), in the order given;
    entries without a link are skipped, missing texts are empty."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise StepError(f"{label}: the answer is not the JSON its API sends (its results are not a list)")
    entries = [item for item in items if isinstance(item, dict) and item.get(url)]
    return [
        SearchHit(
            url=str(item[url]),
            title=str(item.get(title) or ""),
            snippet=str(item.get(snippet) or ""),
            rank=rank,
            provider=provider,
        )
        for rank, item in enumerate(entries, start=1)
    ]

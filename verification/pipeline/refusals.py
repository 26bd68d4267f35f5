"""Pages that refuse to be read, and what stands in for them: the search engine's title and snippet.

On the real web a scraper meets many pages it cannot read: the server refuses it (HTTP 401, 403,
429, 451), sends a bot challenge instead of the page (Cloudflare's "Just a moment…", DataDome,
PerimeterX, Imperva), sends an empty shell that only JavaScript fills, does not answer in time, or
the page has no text. The search engine did read those pages, and its title and snippet often hold
the very sentence that decides the claim: such a result is judged from them ("snippet only")
rather than dropped.

`stand_in_reason` tells a challenge or a shell from a real page, however short: only what a
browser shows before any script runs counts as the page's text, and a page with words of its own
is a page. A challenge is often sent with an error status (Cloudflare's, DDoS-Guard's and Sucuri's
with 503, others with 403 or 429): `error_page_failure` tells it, from the start of the response,
from the server's own error page. `unread_reason` reads a failed page's reason (the fetcher's, the
extractor's or this module's words) as the short reason a snippet is shown with."""

import re

import lxml.etree
import lxml.html

# What a challenge or a shell is served as (the fetcher's types of a web page).
HTML_TYPES = ("text/html", "application/xhtml+xml")

BOT_CHALLENGE = "a bot challenge"
JAVASCRIPT_SHELL = "a page that needs JavaScript"
# The reasons a fetched page fails with (Source.error) when it is a stand-in.
CHALLENGE_ERROR = "the server sent a bot challenge instead of the page"
SHELL_ERROR = "the page is an empty shell until JavaScript runs"
# How much of an error response's body the fetcher keeps to look for a challenge in (never more,
# and never stored or shown): a challenge is small, and its markers and words come first.
ERROR_PAGE_BYTES = 64 * 1024

# Pages whose main text is at least this long are not checked: a challenge or a shell reads as a
# few lines at most, and parsing every article a second time would cost CPU for nothing.
CHECKED_BELOW_CHARS = 2000
# A challenge page says a few sentences (what is happening, a ray id, who protects the site); a
# real page that merely carries a vendor's script says far more.
CHALLENGE_MAX_WORDS = 150
# Only the start of a page is searched for vendor markers: a challenge is small.
_MARKER_WINDOW = 200_000

# In the HTML of a challenge, never of the page it stands for. Cloudflare also puts a script
# under /cdn-cgi/challenge-platform/scripts/ into ordinary pages: that path is not a marker.
_VENDOR_MARKERS = re.compile(
    r"cf_chl_opt|cf-browser-verification|cf-challenge-running|/cdn-cgi/challenge-platform/h/[a-z]/orchestrate"
    r"|<title>\s*just a moment(?:\.\.\.|…)\s*</title>|<title>\s*attention required! \| cloudflare"
    r"|captcha-delivery\.com|id=[\"']px-captcha|_incapsula_resource|incapsula incident id"
    r"|token\.awswaf\.com|awswafintegration|/_sec/cp_challenge/"
    r"|/\.well-known/ddos-guard/(?:js-challenge|ddg-captcha-page)/|sucuri_cloudproxy_js",
    re.IGNORECASE,
)
# What a challenge says to the reader, whichever vendor sent it.
_CHALLENGE_WORDS = re.compile(
    r"just a moment|checking your browser|checking if the site connection is secure|verify(?:ing)? you are (?:a )?human"
    r"|enable javascript and cookies to continue|are you a robot|press (?:&|and) hold"
    r"|access to this page has been denied|please enable js and disable any ad blocker",
    re.IGNORECASE,
)
# What a shell shows while (or instead of) its script running: not words of the page.
_SHELL_WORDS = re.compile(
    r"(?:you need to |please )?(?:enable|turn on) javascript(?: to (?:run|use|view) this (?:app|site|page))?"
    r"|javascript is (?:required|disabled)|this (?:app|site|page) requires javascript|loading(?:\.\.\.|…)?",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+")
# Not shown before scripts run, or not text.
_HIDDEN_TAGS = ("script", "style", "noscript", "template", "svg", "iframe")


def stand_in_reason(html: str) -> str | None:
    """BOT_CHALLENGE or JAVASCRIPT_SHELL when the HTML is not the page but something in its place;
    None for a page, however short its text."""
    tree = _parse(html)
    if tree is None:
        return None
    title = " ".join((tree.findtext(".//title") or "").split())
    scripted = tree.find(".//script") is not None
    words = _visible_text(tree)  # takes the scripts out
    if len(_WORD.findall(words)) <= CHALLENGE_MAX_WORDS and (
        _VENDOR_MARKERS.search(html[:_MARKER_WINDOW]) or _CHALLENGE_WORDS.search(f"{title} {words}")
    ):
        return BOT_CHALLENGE
    if scripted and not _WORD.search(_SHELL_WORDS.sub(" ", words)):
        return JAVASCRIPT_SHELL
    return None


def stand_in_error(reason: str) -> str:
    """The failure a stand-in page is recorded with (unread_reason reads it back)."""
    return CHALLENGE_ERROR if reason == BOT_CHALLENGE else SHELL_ERROR


def error_page_failure(status: int, html: str) -> str | None:
    """The failure an HTTP error response (4xx, 5xx) is recorded with when what it carries is a
    bot challenge: CHALLENGE_ERROR with its status (unread_reason reads it back as "a bot
    challenge, HTTP 503"). None for any other error page, a plain "503 Service Unavailable"
    included: that is the server's failure, not a refusal. `html`: the start of the body
    (ERROR_PAGE_BYTES at most). An error page that only needs JavaScript is still an error page."""
    if stand_in_reason(html) != BOT_CHALLENGE:
        return None
    return f"{CHALLENGE_ERROR} (HTTP {status})"


def _parse(html: str):
    try:
        return lxml.html.document_fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return None


def _visible_text(tree) -> str:
    body = tree.find(".//body")
    if body is None:
        return ""
    for element in list(body.iter(*_HIDDEN_TAGS)):
        # Keep the text that follows a removed element: it belongs to its parent.
        element.drop_tree()
    return " ".join(body.text_content().split())


# The failures a snippet stands in for, as the fetcher (clients/fetch.py), the extractors
# (extract.py, pdf.py) and this module word them; anything else (a server error, a refused
# address, not a web page) is no reason to believe the search engine read the page either.
_UNREAD_REASONS = (
    # Before the statuses: a challenge sent with 403 is a challenge, and with 503 a refusal too.
    (re.compile(re.escape(CHALLENGE_ERROR) + r" \(HTTP (\d{3})\)"), rf"{BOT_CHALLENGE}, HTTP \1"),
    (re.compile(re.escape(CHALLENGE_ERROR)), BOT_CHALLENGE),
    (re.compile(r"\bHTTP (401|403|429|451)\b"), r"HTTP \1"),
    (re.compile(r"did not answer within|too slow to download"), "timed out"),
    (re.compile(r"^the page is empty$|has no readable text|^the PDF has no text"), "no text"),
    (re.compile(re.escape(SHELL_ERROR)), JAVASCRIPT_SHELL),
)


# How the fetcher says a page's host name has no address (no such domain): a cited page that does
# not exist, told apart from a server that exists and does not answer.
NO_SUCH_HOST = "the page's host name does not resolve (no such domain)"
_GONE = re.compile(r"\bHTTP (?:404|410)\b|" + re.escape(NO_SUCH_HOST))


def page_gone(error: str) -> bool:
    """Whether a page's failure says it does not exist: no such host, HTTP 404 or 410 (a DOI that
    does not resolve is answered 404 by doi.org)."""
    return bool(_GONE.search(error))


def unread_reason(error: str) -> str | None:
    """The short reason a page was not read ("HTTP 403", "a bot challenge", "a bot challenge, HTTP
    503", "timed out", "no text"), when its failure is one its search snippet may stand in
    for; None otherwise."""
    for pattern, reason in _UNREAD_REASONS:
        found = pattern.search(error)
        if found:
            return found.expand(reason)
    return None


def snippet_passage(title: str, snippet: str) -> str:
    """What is judged of a result whose page was not read: its snippet, or its title when the
    search engine gave no snippet (the judge sees the title beside it either way)."""
    return " ".join(snippet.split()) or " ".join(title.split())

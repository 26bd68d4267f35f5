"""A source's host → its type (news, blog, wiki, …): a curated rule table first; the LLM is
asked only about hosts the table does not know (callers cache its answer per host)."""

import re
from collections.abc import Sequence
from typing import Any

from .types import JsonLLM, MalformedAnswer, SourceType

T = SourceType
# Registrable domains (or suffixes) → type. Matched on the host and each parent domain, so
# "en.m.wikipedia.org" finds "wikipedia.org" and "cdc.gov" finds ".gov".
DOMAIN_RULES: dict[str, SourceType] = {
    **dict.fromkeys(
        "wikipedia.org wikimedia.org wiktionary.org wikidata.org fandom.com wikihow.com "
        "britannica.com scholarpedia.org wikivoyage.org".split(),
        T.WIKI,
    ),
    **dict.fromkeys(
        "twitter.com x.com facebook.com instagram.com reddit.com tiktok.com youtube.com "
        "youtu.be linkedin.com quora.com pinterest.com threads.net bsky.app mastodon.social "
        "tumblr.com stackexchange.com stackoverflow.com t.me vk.com weibo.com".split(),
        T.SOCIAL_MEDIA,
    ),
    **dict.fromkeys(
        "ncbi.nlm.nih.gov pubmed.ncbi.nlm.nih.gov nature.com science.org sciencedirect.com "
        "springer.com link.springer.com wiley.com onlinelibrary.wiley.com thelancet.com "
        "nejm.org bmj.com jamanetwork.com plos.org journals.plos.org cell.com arxiv.org "
        "biorxiv.org medrxiv.org frontiersin.org mdpi.com tandfonline.com sagepub.com "
        "oup.com academic.oup.com cochranelibrary.com cochrane.org pnas.org acs.org ieee.org "
        "ieeexplore.ieee.org acm.org dl.acm.org researchgate.net semanticscholar.org "
        "jstor.org hindawi.com elifesciences.org annualreviews.org aps.org iop.org "
        "mayoclinic.org clevelandclinic.org hopkinsmedicine.org webmd.com healthline.com "
        "medlineplus.gov uptodate.com".split(),
        T.SCIENTIFIC_MEDICAL_ARTICLE,
    ),
    **dict.fromkeys(
        "reuters.com apnews.com bbc.com bbc.co.uk cnn.com nytimes.com washingtonpost.com "
        "theguardian.com wsj.com bloomberg.com ft.com economist.com npr.org cbsnews.com "
        "nbcnews.com abcnews.go.com foxnews.com usatoday.com latimes.com time.com "
        "newsweek.com forbes.com cnbc.com politico.com axios.com aljazeera.com dw.com "
        "france24.com lemonde.fr spiegel.de theatlantic.com vox.com independent.co.uk "
        "telegraph.co.uk thetimes.co.uk news.yahoo.com huffpost.com businessinsider.com "
        "theverge.com wired.com arstechnica.com techcrunch.com scientificamerican.com "
        "newscientist.com nationalgeographic.com smithsonianmag.com sciencedaily.com "
        "statnews.com abc.net.au cbc.ca".split(),
        T.NEWS,
    ),
    **dict.fromkeys(
        "medium.com substack.com blogspot.com wordpress.com tumblr.blog ghost.io "
        "hashnode.dev dev.to blogger.com wixsite.com squarespace.com".split(),
        T.BLOG,
    ),
    **dict.fromkeys(
        ".gov .mil .gov.uk .gov.au .gc.ca .gouv.fr .bund.de .europa.eu who.int un.org "
        "worldbank.org imf.org oecd.org nhs.uk nih.gov cdc.gov fda.gov .gob.mx .gov.in "
        ".go.jp .govt.nz".split(),
        T.GOVERNMENT_WEBSITE,
    ),
}
# Hostname labels that name a blog or news site wherever it is hosted.
_LABEL_HINTS = {"blog": T.BLOG, "blogs": T.BLOG, "news": T.NEWS, "wiki": T.WIKI}

CATEGORIES = """Categories: news (newspapers, broadcasters, news agencies, magazines), blog (personal or company
blogs, opinion newsletters), wiki (encyclopedias and wikis), social_media (social networks,
forums, video platforms, Q&A sites), scientific_medical_article (journals, preprint servers,
medical references), government_website (governments, their agencies, intergovernmental bodies),
other (shops, company pages, anything else)."""

# The answers are plain words, not JSON: a local model writes about 30 tokens a second, and
# {"host": "H1", "source_type": "news"} is five times as long as "H1: news".
SYSTEM_PROMPT = f"""You classify websites by their host name for a fact-checking tool.
{CATEGORIES} Answer with the category alone."""

# The hosts a search brought are asked together: the categories are read once, not once per
# host (a claim's five results are often five hosts the rule table does not know).
SYSTEM_PROMPT_MANY = f"""You classify websites by their host name for a fact-checking tool.
{CATEGORIES} Classify every host listed (H1..), each on its own, a line each:
H1: news"""

# What a web page can be: "your document" is for the user's own documents only.
WEB_TYPES = tuple(t for t in SourceType if t is not SourceType.YOUR_DOCUMENT)

MAX_TITLE_CHARS = 200
# Hosts per call: a search's results at the largest top-k, few enough for a small model.
HOSTS_PER_CALL = 10


def categorize_by_rules(host: str) -> SourceType | None:
    host = host.lower().removeprefix("www.")
    if host.count(":") == 1:  # "example.gov:8080": the port says nothing about the site's kind
        host = host.split(":")[0]
    host = host.rstrip(".")
    labels = host.split(".")
    # Longest suffix first, so "pubmed.ncbi.nlm.nih.gov" is an article, not ".gov".
    for i in range(len(labels)):
        domain = ".".join(labels[i:])
        rule = DOMAIN_RULES.get(domain) or DOMAIN_RULES.get("." + domain)
        if rule:
            return rule
    for label in labels[:-1]:
        if label in _LABEL_HINTS:
            return _LABEL_HINTS[label]
    return None


# What an answer may hold: a type's name, or a line a host ("H12: scientific_medical_article").
ANSWER_TOKENS = 16
ANSWER_TOKENS_PER_HOST = 16


def categorize_with_llm(llm: JsonLLM, host: str, title: str = "") -> SourceType:
    return llm.complete(
        system=SYSTEM_PROMPT,
        user=_describe(host, title),
        schema_name="source_type",
        schema=None,
        parse=parse_source_type,
        max_tokens=ANSWER_TOKENS,
        done=_answered,
    )


def categorize_many_with_llm(llm: JsonLLM, hosts: Sequence[tuple[str, str]]) -> dict[str, SourceType]:
    """One call for several (host, page title) pairs → {host: type} for the hosts the model
    answered; the caller asks again about any it left out."""
    labels = {f"H{n}": host for n, (host, _) in enumerate(hosts, start=1)}
    user = "\n".join(f"{label}. {_describe(host, title)}" for label, (host, title) in zip(labels, hosts, strict=True))
    return llm.complete(
        system=SYSTEM_PROMPT_MANY,
        user=user,
        schema_name="source_types",
        schema=None,
        parse=lambda answer: parse_source_types(answer, labels),
        max_tokens=ANSWER_TOKENS + ANSWER_TOKENS_PER_HOST * len(labels),
        done=lambda answer: _answered_all(answer, labels),
    )


def _answered(answer: str) -> bool:
    """Whether an answer cut at its cap names a type (a model that writes on after it)."""
    try:
        parse_source_type(answer.split("\n", 1)[0])
    except MalformedAnswer:
        return False
    return True


def _answered_all(answer: str, labels: dict[str, str]) -> bool:
    try:
        return set(parse_source_types(answer, labels)) == set(labels.values())
    except MalformedAnswer:
        return False


def _describe(host: str, title: str) -> str:
    return f"Host: {host}" + (f"\nA page title on it: {title[:MAX_TITLE_CHARS]}" if title else "")


def parse_source_types(answer: Any, labels: dict[str, str]) -> dict[str, SourceType]:
    """ "H1: news" lines (or the JSON some models write anyway: {"types": [{"host": "H1",
    "source_type": ...}]}) → {host: type}; entries naming the host itself instead of its label
    count too. An answer that types none of them is malformed."""
    if isinstance(answer, str):
        answer = [{"host": host, "source_type": kind} for host, kind in _LINE.findall(answer)]
    entries = answer.get("types") if isinstance(answer, dict) else answer
    if not isinstance(entries, list):
        raise MalformedAnswer("expected an object with a 'types' list")
    hosts = set(labels.values())
    found: dict[str, SourceType] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        named = str(entry.get("host", "")).strip()
        host = labels.get(named.upper()) or (named if named in hosts else None)
        if host is None or host in found:
            continue
        try:
            found[host] = parse_source_type(entry)
        except MalformedAnswer:
            continue
    if not found:
        raise MalformedAnswer("no usable source type in the answer")
    return found


# "H1: news", "**H2** - blog", "3. H3: wiki": a label, then the category.
_LINE = re.compile(r"^\W*(?:\d{1,3}[.)]\s*\W*)?(H\d+)\b[\W_]*(\w.*?)\W*$", re.MULTILINE)


def parse_source_type(answer: Any) -> SourceType:
    value = answer.get("source_type") if isinstance(answer, dict) else answer
    if not isinstance(value, str):
        raise MalformedAnswer("expected {'source_type': ...}")
    normalized = value.strip().lower().replace("/", "_").replace(" ", "_").replace("-", "_")
    for source_type in WEB_TYPES:
        if source_type.value == normalized or normalized.startswith(source_type.value):
            return source_type
    named = [(normalized.find(t.value), t) for t in WEB_TYPES if t.value in normalized]
    if named:  # prose: the category named first ("a blog rather than news" → blog)
        return min(named)[1]
    raise MalformedAnswer(f"not a category: {value[:60]!r}")

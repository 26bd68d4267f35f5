"""A simulated web for the benchmark: for every sentence to verify, pages on several sites that
state it (twice, far apart, so a page yields more than one passage), among filler sentences
that share no words with it. Built on the fake servers of tests/fakes.py."""

import random

from tests.fakes import FakePage, FakeSite

KINDS = [
    "Wiki encyclopedia",
    "City News",
    "travel blog",
    "Journal of Studies",
    "Gov portal",
    "forum thread",
    "Daily News",
    "Science Journal",
]
FILLER = [
    "Opening hours vary during public holidays.",
    "Tickets can be bought online or at the gate.",
    "Our editors review every article regularly.",
    "Subscribe to our newsletter for weekly updates.",
    "Photographs courtesy of the regional archive.",
    "Readers often ask about parking nearby.",
    "Accessibility information is available on request.",
    "Comments are moderated before publication.",
    "Share this page with friends and family.",
    "Weather conditions may affect some activities.",
]


def build_sites(
    sentences: list[str],
    *,
    sites: int = 8,
    pages_per_sentence: int = 5,
    latency: float = 0.0,
    seed: int = 7,
    refusing: float = 0.0,
    hang_s: float = 15.0,
) -> list[FakeSite]:
    """`pages_per_sentence` pages per sentence, spread over `sites` sites (each its own host);
    `refusing` of them refuse a scraper (FakeSite.refusing), a hanging one for `hang_s` seconds."""
    rng = random.Random(seed)
    web = [FakeSite(latency=latency, refusing=refusing, hang_s=hang_s) for _ in range(sites)]
    for i, sentence in enumerate(sentences):
        for j in range(pages_per_sentence):
            site = web[(i + j) % sites]
            kind = KINDS[(i + j) % sites % len(KINDS)]
            filler = rng.sample(FILLER, 8)
            lowered = sentence[0].lower() + sentence[1:]
            # Every fourth page disputes the sentence, so verdicts are not all "supported".
            restated = f"Contrary to reports, it is false that {lowered}" if j % 4 == 3 else f"In short, {lowered}"
            body = filler[:3] + [sentence] + filler[3:6] + [restated] + filler[6:]
            title = " ".join(sentence.split()[:6]).rstrip(".,") + f" - {kind}"
            site.pages[f"/s{i}/p{j}"] = FakePage(title=title, body="\n\n".join(body))
    return web


ENTITIES = [
    "Norbridge",
    "Caldervale",
    "Ostwick",
    "Fenmoor",
    "Highmere",
    "Larkspur",
    "Quillon",
    "Ravensholt",
    "Tamberly",
    "Westcombe",
]
THINGS = ["bridge", "library", "observatory", "museum", "harbour", "cathedral", "railway", "university"]


def generated_texts(count: int, sentences_per_text: int = 7, seed: int = 11) -> list[str]:
    """Distinct texts of simple checkable sentences about fictional places."""
    rng = random.Random(seed)
    texts = []
    for n in range(count):
        lines = []
        for k in range(sentences_per_text):
            entity, thing = rng.choice(ENTITIES), rng.choice(THINGS)
            year = 1700 + (n * 37 + k * 13) % 300
            lines.append(f"The {entity} {thing} number {n}{k} was opened in {year}.")
        texts.append(" ".join(lines))
    return texts

"""Seeded prose about a topic, for the benchmark's generated pages: sentences of 6 to 45 words
from templates and word lists, with numbers, years, quotes, questions and the odd accented
word, so a page reads (to a tokenizer, a sentence splitter and BM25) like an article, not like
one line repeated. Only what the benchmark needs: it is not meant to fool a person."""

import functools
import random
import re
from dataclasses import dataclass

ADJECTIVES = """ancient modern narrow broad quiet busy historic familiar remarkable modest elegant sturdy
    fragile popular controversial ambitious practical ornate plain northern southern eastern western
    central local regional national temporary permanent original restored neglected celebrated
    costly affordable crowded empty early late wooden stone iron brick seasonal annual public private""".split()
NOUNS = """archive council committee engineer visitor resident district market square harbour tunnel
    street festival exhibition survey report budget plan design facade roof staircase garden museum
    gallery station platform workshop library chapel tower wall gate courtyard collection record
    letter photograph map census ledger lecture ceremony renovation extension proposal campaign
    petition contract survey schedule timetable route bridge ferry canal mill warehouse quarry""".split()
PLURALS = """visitors residents engineers historians architects tourists merchants critics students
    volunteers officials builders painters farmers musicians sailors pupils guides curators""".split()
GROUPS = [
    "local historians",
    "the city council",
    "several residents",
    "the regional newspaper",
    "a group of engineers",
    "the heritage trust",
    "early travel guides",
    "the museum's curators",
    "contemporary critics",
    "the town's archivists",
    "a committee of merchants",
    "two university researchers",
]
VERBS_PAST = """restored expanded described funded surveyed rebuilt praised criticised documented
    redesigned repaired replaced opened closed moved painted measured recorded visited organised
    announced postponed approved rejected reported studied photographed financed completed""".split()
VERBS_BASE = """admire visit study photograph describe remember discuss recommend explore compare
    protect celebrate question praise measure""".split()
REPORTING = "argue note suggest point out believe claim recall explain report estimate".split()
ADVERBS = "quickly slowly carefully rarely often gradually briefly widely largely barely steadily".split()
TIMES = [
    "in the early years",
    "during the following decade",
    "after the war",
    "by the late nineteenth century",
    "in the spring of {year}",
    "during the winter of {year}",
    "between {year} and {year2}",
    "at the turn of the century",
    "a few years later",
    "over the next two decades",
    "in {year}",
    "shortly afterwards",
]
CONNECTIVES = ["However,", "Meanwhile,", "In addition,", "As a result,", "Even so,", "Later,", "At first,"]
CONNECTIVES += ["By contrast,", "For a while,", "Since then,", "Today,", "In practice,", "Still,"]
CLAUSES = [
    "which {vpast} the {noun} {time}",
    "although {group} {vpast} the {adj} {noun}",
    "and the {noun} was {vpast} soon after",
    "while the {adj} {noun} stayed {adj2}",
    "as {group} had expected",
    "despite a {adj} {noun} that {vpast} the work",
    "so that {plural} could reach the {noun}",
]
NAMES = """Anna Berger, Tomás Ruiz, Mei Lin, Jonas Holt, Claire Dubois, Samuel Okafor, Ingrid Sørensen,
    Rafael Costa, Helen Park, Dmitri Volkov, Amélie Laurent, George Whitaker""".split(", ")
ROLES = ["a local guide", "an architect", "a retired engineer", "a historian", "a shop owner", "a council member"]
UNITS = ["metres", "tonnes", "visitors", "workers", "pounds", "kilometres", "rooms", "steps"]
TEMPLATES = [
    "{Conn} the {adj} {noun} near {topic} was {vpast} {time}.",
    "{Group} {report} that {topic} {vpast} its {adj} {noun} {time}.",
    "In {year}, {group} {vpast} the {noun} of {topic}, {clause}.",
    "{Topic} remains {adj} to many {plural}, who {vbase} its {noun} and its {adj2} {noun2}.",
    "According to {group}, the {noun} {vpast} about {number} {unit} {time}.",
    "{Plural} who {vbase} the {noun} often {vbase2} the {adj} {noun2} as well.",
    "Why was the {noun} of {short} {vpast} so {adverb}?",
    "“The {noun} was {adj}, but the {noun2} was {adj2},” said {name}, {role} from {place}.",
    "Roughly {percent} percent of the {noun} was {vpast} between {year} and {year2}.",
    "The {adj} {noun} beside {short} is {adverb} mentioned in guidebooks.",
    "{Conn} {group} {vpast} a {adj} {noun} for {place}, {clause}.",
    "Few records of the {noun} survive, and {group} {report} that it was {vpast} {time}.",
    "The {noun} {vpast} by {group} cost about {number} {unit} {time}.",
    "A {adj} {noun} connects {short} with the {adj2} {noun2} of {place}.",
    "{Name} {vpast} the {noun} in a letter, calling it {adj} and {adj2}.",
    "{Conn} {plural} {adverb} {vbase} {short} on {weekday} mornings.",
    "The café opposite {short} has served {plural} since {year}.",
    "{Topic} appears on a {adj} map of {place} printed in {year}.",
    "Not every {noun} was {vpast}: some were simply left {adj}.",
    "{Group} {vpast} {number} {unit}, {clause}.",
]
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()


@dataclass(frozen=True)
class Topic:
    """What a page is about: "Norbridge bridge" in "Norbridge" (names in the text to verify)."""

    name: str
    place: str

    @property
    def full(self) -> str:
        return f"the {self.name}"

    @property
    def short(self) -> str:
        return f"the {self.name.split()[-1].lower()}"


_SUBJECT = re.compile(
    r"^(?:The\s+)?(?!(?:The|It|This|They|I)\b)([A-Z][\w'-]*(?:\s+[\w'-]+)*?)\s+(?:is|was|are|were|has|had)\b"
)
_PLACE = re.compile(r"\bin ([A-Z][a-z]+)")
_ARTICLE = re.compile(r"\b([Aa]) (?=[aeiou])")


def topic_of(sentence: str, text: str) -> Topic:
    """The sentence's named subject ("The Norbridge bridge number 12 was …" → Norbridge bridge),
    else the subject of the text's first sentence; the place is the first "in <Name>" of the
    text, else the subject's first word."""
    subject = _SUBJECT.match(sentence) or _SUBJECT.match(text)
    name = re.sub(r"\s+number\s+\d+$", "", subject.group(1)) if subject else "town hall"
    place = _PLACE.search(text)
    return Topic(name=name, place=place.group(1) if place else name.split()[0])


def _pick(rng: random.Random, words: list):
    return words[int(rng.random() * len(words))]


WORDS = {
    "adj": ADJECTIVES,
    "adj2": ADJECTIVES,
    "noun": NOUNS,
    "noun2": NOUNS,
    "plural": PLURALS,
    "group": GROUPS,
    "vpast": VERBS_PAST,
    "vbase": VERBS_BASE,
    "vbase2": VERBS_BASE,
    "report": REPORTING,
    "adverb": ADVERBS,
    "Conn": CONNECTIVES,
    "name": NAMES,
    "Name": NAMES,
    "role": ROLES,
    "unit": UNITS,
    "weekday": WEEKDAYS,
}


POOL_SIZE = 20_000
_MARKERS = {"topic": "\x00", "Topic": "\x01", "short": "\x02", "place": "\x03"}


class _Slots(dict):
    """A template's values, drawn only when the template asks for them (most use a few)."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(_MARKERS)
        self.rng = rng

    def __missing__(self, key: str):
        rng = self.rng
        if key in WORDS:
            value = _pick(rng, WORDS[key])
        elif key in ("Plural", "Group"):
            value = _capital(self[key.lower()])
        elif key == "year":
            value = 1650 + int(rng.random() * 370)
        elif key == "year2":
            value = self["year"] + 1 + int(rng.random() * 40)
        elif key == "number":
            value = f"{2 + int(rng.random() * 9000):,}"
        elif key == "percent":
            value = 3 + int(rng.random() * 95)
        elif key == "time":
            value = _pick(rng, TIMES).format_map(self)
        elif key == "clause":
            # Its own nouns and verbs, not the main clause's.
            clause = _Slots(rng)
            clause["time"] = self["time"]
            value = _pick(rng, CLAUSES).format_map(clause)
        else:
            raise KeyError(key)
        self[key] = value
        return value


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


@functools.cache
def _pool() -> tuple[str, ...]:
    """Filled templates with markers where the topic goes: drawing from them is ~15 times
    faster than filling a template, and the benchmark's web has a million sentences."""
    rng = random.Random("prose")
    return tuple(_ARTICLE.sub(r"\1n ", _pick(rng, TEMPLATES).format_map(_Slots(rng))) for _ in range(POOL_SIZE))


def sentence(rng: random.Random, topic: Topic) -> str:
    text = _pick(rng, _pool())
    values = (topic.full, _capital(topic.full), topic.short, topic.place)
    for marker, value in zip(_MARKERS.values(), values, strict=True):
        text = text.replace(marker, value)
    return text


def headline(rng: random.Random, topic: Topic) -> str:
    return rng.choice(
        [
            f"What {rng.choice(PLURALS)} get wrong about {topic.full}",
            f"{topic.place} {rng.choice(NOUNS)} {rng.choice(VERBS_PAST)} after {rng.randint(2, 40)} years",
            f"The {rng.choice(ADJECTIVES)} history of {topic.full}",
            f"{rng.randint(5, 25)} things to know before you visit {topic.place}",
            f"Inside the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} of {topic.place}",
            f"Why {rng.choice(GROUPS)} {rng.choice(VERBS_PAST)} the {rng.choice(NOUNS)}",
        ]
    )

"""Texts shaped like chatbot answers, for the benchmark's runs at once: 3 to 8 sentences and
367 to 713 characters (the span of typical answers to a factual question), about a fictional
place, sometimes opening with a greeting, sometimes giving a numbered list, sometimes an
opinion, sometimes a closing line. Seeded: the same texts on every run.

Each answer names its subject with a number ("the Norbridge museum number 12") so that its
pages (bench/web.py, bench/pages.py) are its own, and later sentences say "It", as answers do,
for the decomposition to resolve from the paragraph."""

import random

from bench.web import ENTITIES, THINGS
from verification.pipeline.segment import segment

MIN_CHARS, MAX_CHARS = 367, 713
MIN_SENTENCES, MAX_SENTENCES = 3, 8

# Openers and closers with no checkable claim (the simulated LLM gives none for these words).
GREETINGS = ["Hello! Happy to help with that.", "Thanks for asking!", "Hello!"]
CLOSINGS = ["I hope this helps!", "Thanks for your interest, and I hope this helps!"]
OPINIONS = [
    "In my opinion, it is one of the most charming places in the region.",
    "Personally, I think it is well worth a visit if you are nearby, especially on a quiet weekday morning.",
    "It is, I would say, a remarkable piece of local history.",
]
FACTS = [
    "It was designed by the architect {name} and built by local masons over {build_years} years.",
    "It was restored in {year2}; it now welcomes about {visitors:,} visitors a year.",
    "It stands {height} metres tall and is {length} metres long, which made it the largest {thing} in the county "
    "when it was completed.",
    "It is located in {entity}, close to the old market square and a short walk from the railway station.",
    "Around {visitors2:,} people visit it every year, most of them in summer.",
    "It was closed for repairs between {year2} and {year3}, after a storm damaged its roof and two of its walls.",
    "The original plans, drawn by {name}, are kept in the {entity} town archive and can be seen on request.",
    "In {year3}, the town council bought it from the {family} family for {cost:,} pounds.",
]
# A list item is a paragraph of its own: it names the subject (no "It" to resolve there).
ITEMS = [
    "The {thing} was built for about {cost:,} pounds.",
    "The {thing}'s {part} was added in {year2}.",
    "The {entity} {thing} was the first in town to have electric light.",
    "The {thing} hosts an annual festival every {month}.",
]
NAMES = ["Edith Marlowe", "Tobias Crane", "Henrietta Vos", "Samuel Okafor", "Agnes Lindqvist", "Rafael Ortiz"]
PARTS = ["east wing", "clock tower", "north gate", "glass roof", "reading room"]
MONTHS = ["May", "June", "September", "October"]
FAMILIES = ["Ashdown", "Bellamy", "Crowther", "Dunmore", "Everard"]


def chatbot_answers(count: int, seed: int = 11) -> list[str]:
    """`count` distinct answers, each within the sentence and character bounds."""
    rng = random.Random(seed)
    answers = []
    for n in range(count):
        while True:
            text = _answer(rng, n)
            if MIN_CHARS <= len(text) <= MAX_CHARS and MIN_SENTENCES <= len(segment(text)) <= MAX_SENTENCES:
                answers.append(text)
                break
    return answers


def _answer(rng: random.Random, n: int) -> str:
    entity, thing = rng.choice(ENTITIES), rng.choice(THINGS)
    year = 1700 + (n * 37) % 250
    values = {
        "entity": entity,
        "thing": thing,
        "name": rng.choice(NAMES),
        "year2": year + rng.randint(30, 90),
        "year3": year + rng.randint(95, 120),
        "visitors": rng.randrange(20_000, 900_000, 1000),
        "visitors2": rng.randrange(20_000, 900_000, 1000),
        "build_years": rng.randint(2, 12),
        "family": rng.choice(FAMILIES),
        "height": rng.randint(12, 140),
        "length": rng.randint(20, 400),
        "cost": rng.randrange(5_000, 200_000, 500),
        "part": rng.choice(PARTS),
        "month": rng.choice(MONTHS),
    }
    paragraphs = []
    if rng.random() < 0.35:
        paragraphs.append(rng.choice(GREETINGS))
    opening = f"The {entity} {thing} number {n} was opened in {year}."
    facts = [f.format(**values) for f in rng.sample(FACTS, rng.randint(1, 5))]
    if rng.random() < 0.4:
        items = [f.format(**values) for f in rng.sample(ITEMS, rng.randint(2, 3))]
        paragraphs.append(" ".join([opening, *facts[:1]]) + " Here are a few more facts about it:")
        paragraphs.append("\n".join(f"{k}. {item}" for k, item in enumerate(items, start=1)))
    else:
        paragraphs.append(" ".join([opening, *facts]))
    if rng.random() < 0.4:
        paragraphs.append(rng.choice(OPINIONS).format(**values))
    if rng.random() < 0.35:
        paragraphs.append(rng.choice(CLOSINGS))
    return "\n\n".join(paragraphs)

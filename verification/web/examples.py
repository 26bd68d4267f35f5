"""Texts to try factsite on, for a newcomer with none at hand (issue 17.5). Written for factsite:
short chatbot-style answers, each with a known mix of true and false statements, so that a first
run shows both colours and a sentence with nothing to check."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    title: str
    text: str


EXAMPLES = (
    # False: the third sentence (completed in 1889, not 1901) and the fifth (it is repainted about
    # every seven years, in a brown called "Eiffel Tower Brown", not red every year). The last
    # sentence has nothing to check.
    Example(
        title="The Eiffel Tower",
        text=(
            "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
            "It was designed by the company of the engineer Gustave Eiffel for the 1889 World's Fair. "
            "The tower was completed in 1901. "
            "At about 300 metres, it was the tallest man-made structure in the world until the Chrysler "
            "Building in New York was finished in 1930. "
            "It is painted bright red every year.\n\n"
            "I hope this helps!"
        ),
    ),
    # False: the second sentence (a myth: it cannot be seen with the naked eye from the Moon) and
    # the fifth (with all its branches it is about 21,000 km long, not 500 km).
    Example(
        title="The Great Wall of China",
        text=(
            "The Great Wall of China is a series of fortifications built across the historical northern "
            "borders of ancient Chinese states. "
            "It is clearly visible to the naked eye from the Moon. "
            "Most of the wall that stands today was built during the Ming dynasty. "
            "It was inscribed as a UNESCO World Heritage Site in 1987. "
            "With all of its branches, its total length is about 500 kilometres."
        ),
    ),
)


def example_text(number: str | None) -> str | None:
    """The text of example `number` ("1", "2", … as the links name them), or None for anything else."""
    return {str(n): example.text for n, example in enumerate(EXAMPLES, 1)}.get(number or "")

"""The decomposition's instructions (decompose.py): the plain prompt, the one that asks for no
search query, the line quick mode adds to either, and the lines a text in another language than
English adds to its user message."""

# Worded after the FACTS&EVIDENCE prompt: the paragraphs are numbered S1..Sn so the model can
# resolve "it"/"this treatment" from earlier sentences, and only the target sentences are split.
# The example shows decontextualization and an empty answer for an opinion, because models
# otherwise invent claims for greetings and hedges; every target is listed in the answer so a
# sentence the model skips is noticed (and asked again) instead of read as "no claims". The
# answer is plain lines, not JSON: the model writes every character of it, and the keys and
# quotes of JSON cost about a third of what it wrote.
_PROMPT = """You split sentences of an AI-written text into atomic claims for fact-checking. An
atomic claim states exactly one checkable fact and stands alone: replace pronouns and references
("it", "this drug") with what they refer to in the context. Add no facts the sentence does not
state. Opinions, greetings, advice and questions have no claims.{ask_query} Paragraphs are separated by a blank line.

Example
Context:
S1: Metformin is the first-line drug for type 2 diabetes.
S2: It lowers blood sugar and was approved in the US in 1994.
S3: I hope this helps!
Target sentences: S2, S3
Answer:
S2:
- Metformin lowers blood sugar.{query_1}
- Metformin was approved in the US in 1994.{query_2}
S3:

Answer every target sentence, in order, as in the example."""

_QUERY = {
    "ask_query": " Give each claim a short web\nsearch query that would find evidence for or against it.",
    "query_1": " | metformin lowers blood sugar",
    "query_2": " | metformin FDA approval 1994",
}
SYSTEM_PROMPT = _PROMPT.format(**_QUERY)
# WRITE_SEARCH_QUERIES=0: each claim is searched by its own words, as VeriScore searches
# Google; the queries were about a third of what the model wrote (a local model's seconds).
SYSTEM_PROMPT_NO_QUERY = _PROMPT.format(**dict.fromkeys(_QUERY, ""))

# Quick mode (FaStfact's pre-verification) appends this to the instructions above, so that the
# plain prompt stays byte-identical (a local server's cached prefix) and quick calls share it too.
# The label goes last on the claim's line: the model has written the claim out before it commits
# to a label, and the label's token is easy to find for its logprob. "unsure" is offered so that
# the model need not guess; only a true or false label can ever spare a claim its search.
QUICK_INSTRUCTION = """

Also label each claim from your own knowledge, without any search: after its query add " | " and
true if you know the claim is true, false if you know it is false, unsure otherwise.
- Metformin lowers blood sugar. | metformin lowers blood sugar | true"""
QUICK_INSTRUCTION_NO_QUERY = """

Also label each claim from your own knowledge, without any search: after the claim add " | " and
true if you know the claim is true, false if you know it is false, unsure otherwise.
- Metformin lowers blood sugar. | true"""
QUICK_SYSTEM_PROMPT = SYSTEM_PROMPT + QUICK_INSTRUCTION


def system_prompt(*, quick: bool = False, queries: bool = True) -> str:
    if queries:
        return SYSTEM_PROMPT + (QUICK_INSTRUCTION if quick else "")
    return SYSTEM_PROMPT_NO_QUERY + (QUICK_INSTRUCTION_NO_QUERY if quick else "")


# A text in another language than English (pipeline/languages.py). The example above is English,
# and models follow the example's language unless told otherwise: the claims would come out
# translated, their names and terms reworded before anything was searched, and their queries
# would find English pages only. Claims in the text's own words keep what it says as it says it;
# queries in its language find the pages its readers read. In the user message, after the
# targets, so that the instructions above stay the same bytes for every text (a local server's
# cached prefix).
LANGUAGE_LINE = "The text is in {name}: write the claims{and_queries} in {name}, in the text's own words."
# A language whose web is thin (languages.LARGE_WEB: under about 1 % of the web's pages): a query
# in it may find few pages, so each claim also gets one in English, marked so the parser tells
# the two apart. The English pages' passages are then judged against the claim as written.
ENGLISH_QUERY_LINE = """
After each claim's query add " | en: " and the same query in English:
- <claim in {name}> | <query in {name}> | en: <the query in English>"""

"""Words too common to tell sentences apart, for BM25 and for a query's key words. Their own
module: the search step needs them, and a worker that only searches should not import the
passage ranker (numpy, nltk: a quarter of a second of CPU per process start)."""

# A small English list kept here because NLTK's corpus needs a download.
ENGLISH = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    out over own same she should so some such than that the their theirs them themselves then
    there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself""".split()
)

"""Every node of a verification is a row with a status, so progress is a COUNT, a redelivered
task finds its row already finished, and failed rows count as finished (a run always ends)."""

import uuid

from django.db import models


class Status(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    # A run its creator stopped: its queued work is ignored, what it found so far stays.
    CANCELLED = "cancelled"


FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)


class ClaimStatus(models.TextChoices):
    PENDING = "pending"
    SEARCHING = "searching"
    READING = "reading", "reading pages"
    JUDGING = "judging"
    DONE = "done"
    FAILED = "failed"


class SourceType(models.TextChoices):
    # The same values as the pipeline's SourceType (a test keeps them in step).
    NEWS = "news"
    BLOG = "blog"
    WIKI = "wiki"
    SOCIAL_MEDIA = "social_media", "social media"
    SCIENTIFIC_MEDICAL_ARTICLE = "scientific_medical_article", "scientific/medical article"
    GOVERNMENT_WEBSITE = "government_website", "government website"
    OTHER = "other"
    # A document the user gave the run (an upload or a URL they listed), not a search result.
    YOUR_DOCUMENT = "your_document", "your document"


class Origin(models.TextChoices):
    WEB = "web", "web search"
    DOCUMENT = "document", "your document"
    # An address the text itself cites (issue 34): read for the claims of the sentences citing it.
    CITED = "cited", "cited by the text"


class Verdict(models.TextChoices):
    SUPPORTED = "supported"
    NOT_SUPPORTED = "not_supported", "not supported"
    IRRELEVANT = "irrelevant"


class Verification(models.Model):
    # uuid4: 122 random bits, so a permalink cannot be guessed from another one.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    text = models.TextField()
    settings = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    edited_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    llm_calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    # Of the completion tokens, those the model spent thinking (issue 37).
    reasoning_tokens = models.PositiveIntegerField(default=0)
    searches = models.PositiveIntegerField(default=0)
    # The highest progress percentage shown so far: the bar never goes back as work is found.
    progress = models.PositiveSmallIntegerField(default=0)
    # Times "Retry failed parts" re-queued this run (shown with the run's details).
    retries = models.PositiveSmallIntegerField(default=0)
    retried_at = models.DateTimeField(null=True, blank=True)
    # Last sign of life: a task of this run started or ended (workers beat every few seconds
    # while they hold one). The sweeper resumes runs that stay silent (a dead worker, a lost
    # message), and RUN_TIMEOUT counts from here, so a run waiting behind a backlog is not lost.
    touched_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # When the sweeper last re-enqueued this run's unfinished items, and how often it did.
    swept_at = models.DateTimeField(null=True, blank=True)
    resumes = models.PositiveSmallIntegerField(default=0)
    # Who asked, as a keyed hash of their address (never the address): the runs-per-hour limit.
    client = models.CharField(max_length=64, blank=True, db_index=True)
    # Claims this run has taken from its budget (MAX_CLAIMS_PER_RUN), counted atomically.
    claims_used = models.PositiveIntegerField(default=0)
    # The process working on this run (a WorkerProcess name; "" before a worker took it): the
    # one that started it when it runs on that process's embedded worker, else the worker that
    # last held a task of it. Another process resumes the run only once this one stops beating.
    owner = models.CharField(max_length=200, blank=True, db_index=True)
    # The configuration the run was started with, as keyed digests (providers.run_needs): a
    # process that would run it with other keys or servers says so instead.
    needs = models.JSONField(default=dict, blank=True)
    # The browser or API caller that started it, as a keyed hash of its owner token (ownership.py;
    # "" for runs from before tokens, and for the CLI): only it may use the run's documents again.
    creator = models.CharField(max_length=64, blank=True, db_index=True)
    # Whether a retry may end this failure otherwise (StepError.transient); meaningless unless failed.
    transient = models.BooleanField(default=True)
    # Seconds worked in the passes before the current one (the first run, earlier retries): the
    # idle time between a run's end and its retry is no part of its duration.
    worked_seconds = models.FloatField(default=0)
    # Answers taken from the cross-run cache (cache.py) instead of asking the model or the search
    # provider: a run that asked nothing says where its answers came from.
    llm_cached = models.PositiveIntegerField(default=0)
    searches_cached = models.PositiveIntegerField(default=0)
    # The text's language (ISO 639-1, pipeline/languages.py), detected when the run was saved; ""
    # when the text was too short to tell or the detector unsure (and for runs from before).
    language = models.CharField(max_length=8, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"verification {self.id} ({self.status})"


class Sentence(models.Model):
    verification = models.ForeignKey(Verification, on_delete=models.CASCADE, related_name="sentences")
    index = models.PositiveIntegerField()
    text = models.TextField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    paragraph_index = models.PositiveIntegerField()
    context = models.JSONField()
    position_in_context = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    transient = models.BooleanField(default=True)

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["verification", "index"], name="sentence_unique_index")]

    def __str__(self) -> str:
        return f"S{self.index}: {self.text[:60]}"


class Claim(models.Model):
    sentence = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="claims")
    index = models.PositiveIntegerField()
    text = models.TextField()
    query = models.TextField()
    status = models.CharField(max_length=16, choices=ClaimStatus.choices, default=ClaimStatus.PENDING)
    error = models.TextField(blank=True)
    transient = models.BooleanField(default=True)
    # A trail run's claim, once its trail ended (trail_loop.ClaimTrailResult as JSON: verdict,
    # reasoning, stop, error stage, supported path, calls and tokens); empty otherwise.
    trail = models.JSONField(default=dict, blank=True)
    # The query of the second search, when too few of the first search's pages could be read
    # (issue 28); blank when one search was enough.
    second_query = models.TextField(blank=True)
    # Quick mode (FaStfact's pre-verification, issue 29): the label the model gave the claim from
    # its own knowledge at decomposition ("true", "false", "unsure"; blank when not asked), its
    # probability from the token's logprob (None when the server gives no logprobs), and whether
    # that label was trusted instead of a search.
    model_label = models.CharField(max_length=8, blank=True)
    model_label_probability = models.FloatField(null=True, blank=True)
    from_model_knowledge = models.BooleanField(default=False)
    # A claim of a text in a language whose web is thin (languages.LARGE_WEB) is also searched in
    # English, with this query the decomposition wrote; blank otherwise.
    english_query = models.TextField(blank=True)

    class Meta:
        ordering = ["sentence_id", "index"]
        constraints = [models.UniqueConstraint(fields=["sentence", "index"], name="claim_unique_index")]

    def __str__(self) -> str:
        return self.text[:80]


class TrailNode(models.Model):
    """A text of a trail run: a source, an intermediate output or the final text (whose
    sentences are the run's). Its `key` is the id the trail gave it; `inputs` the keys of the
    texts it was written from."""

    verification = models.ForeignKey(Verification, on_delete=models.CASCADE, related_name="trail_nodes")
    index = models.PositiveIntegerField()
    key = models.CharField(max_length=200)
    text = models.TextField(blank=True)
    # A document to read (a web address), when the trail gave no text.
    url = models.TextField(blank=True)
    inputs = models.JSONField(default=list)
    step = models.CharField(max_length=200, blank=True)
    stage = models.PositiveIntegerField()
    # Whether its text is there: done for a given text, pending until a document is read.
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DONE)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["verification_id", "index"]
        constraints = [models.UniqueConstraint(fields=["verification", "key"], name="trail_node_unique_key")]

    def __str__(self) -> str:
        return self.key


class TrailRound(models.Model):
    """One round of a claim's trail: the candidate nodes whose evidence was selected (one
    TrailSelection each, in parallel) and the verdict on what they hold. Pending while its
    selections run; running while its verdict is asked; done with the verdict."""

    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="trail_rounds")
    index = models.PositiveIntegerField()
    candidates = models.JSONField(default=list)
    verdict = models.CharField(max_length=24, blank=True)
    reasoning = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    # Who asks the verdict of a running round: "<task id> <process>". A verdict task judges
    # other claims' rounds in its call (worker/trail_verdict.py); the rounds it took carry its
    # mark, so that a retry of it, or the task sent again when its process died, finds them.
    taken_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["claim_id", "index"]
        constraints = [models.UniqueConstraint(fields=["claim", "index"], name="trail_round_unique_index")]

    def __str__(self) -> str:
        return f"round {self.index} of claim {self.claim_id}"


class TrailSelection(models.Model):
    """The evidence one node holds for a claim in one round (trail_select.NodeSelection as JSON)."""

    round = models.ForeignKey(TrailRound, on_delete=models.CASCADE, related_name="selections")
    position = models.PositiveIntegerField()
    node_key = models.CharField(max_length=200)
    result = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    transient = models.BooleanField(default=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["round_id", "position"]
        constraints = [models.UniqueConstraint(fields=["round", "node_key"], name="trail_selection_unique_node")]

    def __str__(self) -> str:
        return f"{self.node_key} in round {self.round_id}"


class Source(models.Model):
    """One web page per run, however many claims cite it: it is fetched once. Its text is not
    kept per run: the shared page cache holds it (CACHE_TTL), and a retry after it expired
    downloads the page again."""

    verification = models.ForeignKey(Verification, on_delete=models.CASCADE, related_name="sources")
    url = models.TextField()
    final_url = models.TextField(blank=True)
    host = models.CharField(max_length=255)
    title = models.TextField(blank=True)
    source_type = models.CharField(max_length=32, choices=SourceType.choices, blank=True)
    # "rules", "llm", "cache", or "fallback: <why the question failed>" (any length).
    type_decided_by = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    transient = models.BooleanField(default=True)
    # Found by web search, or given by the user (an uploaded file or a URL they listed).
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.WEB)
    # The publication date the page or PDF states, when it states one.
    published = models.DateField(null=True, blank=True)
    # The language of its text (ISO 639-1), detected when it was read; "" when unknown.
    language = models.CharField(max_length=8, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["verification", "url"], name="source_unique_url")]

    def __str__(self) -> str:
        return self.url


class SearchResult(models.Model):
    """A claim's search hit: which page, at which rank, and whether its passages are chosen."""

    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="search_results")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="search_results")
    rank = models.PositiveIntegerField()
    snippet = models.TextField(blank=True)
    # The result's title as the search engine gave it: with the snippet, the evidence of a page
    # that refuses to be read.
    title = models.TextField(blank=True)
    # 1 for the claim's first search, 2 for the second one (issue 28).
    search_round = models.PositiveSmallIntegerField(default=1)
    # The search provider that found the page ("serper", "wikipedia", …); blank for the
    # user's own documents.
    provider = models.CharField(max_length=32, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)

    class Meta:
        ordering = ["rank"]
        constraints = [models.UniqueConstraint(fields=["claim", "source"], name="result_unique_source")]

    def __str__(self) -> str:
        return f"#{self.rank} for claim {self.claim_id}: source {self.source_id}"


class Evidence(models.Model):
    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="evidence")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="evidence")
    index = models.PositiveIntegerField()
    passage = models.TextField()
    highlights = models.JSONField(default=list)
    relevance = models.FloatField()
    verdict = models.CharField(max_length=16, choices=Verdict.choices, blank=True)
    rationale = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    transient = models.BooleanField(default=True)
    # The same text syndicated at another URL: this item is shown as "also at …" under the one
    # it duplicates and does not count again.
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="duplicates"
    )
    # Judged from the search result's title and snippet because the page could not be read
    # (issue 28); `unread_reason` says why ("HTTP 403", "a bot challenge", "timed out").
    snippet_only = models.BooleanField(default=False)
    unread_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["claim_id", "id"]
        constraints = [models.UniqueConstraint(fields=["claim", "source", "index"], name="evidence_unique_passage")]

    def __str__(self) -> str:
        return f"evidence {self.pk} for claim {self.claim_id}: {self.verdict or self.status}"


class Citation(models.Model):
    """One source a marker of the text cites (pipeline/citations.py), in the order of the text: where
    the marker stands in the original, what it points to, and the source read for it. Its outcome is
    derived from its source's state and the verdicts on it (scoring/citations.py), never stored."""

    verification = models.ForeignKey(Verification, on_delete=models.CASCADE, related_name="citations")
    index = models.PositiveIntegerField()
    # None when the text has no sentence for it to go with.
    sentence = models.ForeignKey(Sentence, null=True, blank=True, on_delete=models.CASCADE, related_name="citations")
    marker = models.TextField()  # as written: "[1]", "([nytimes.com](https://…))", "[Data: Reports (2, 7)]"
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    points_to = models.CharField(max_length=16)  # citation_markers.Points: url, doi, reference, graphrag, name
    label = models.CharField(max_length=200, blank=True)
    url = models.TextField(blank=True)  # "" when it gives no address (a name, a GraphRAG record)
    title = models.TextField(blank=True)
    # Why the marker points nowhere ("" when it resolves).
    unresolved = models.TextField(blank=True)
    # Why its address is not read though it resolves (over MAX_CITED_SOURCES); "" otherwise.
    left_out = models.TextField(blank=True)
    # The run's Source for its address, once a claim of its sentence took it to read.
    source = models.ForeignKey("Source", null=True, blank=True, on_delete=models.SET_NULL, related_name="citations")

    class Meta:
        ordering = ["verification_id", "index"]
        constraints = [models.UniqueConstraint(fields=["verification", "index"], name="citation_unique_index")]

    def __str__(self) -> str:
        return f"citation {self.index} {self.marker[:40]}"


class Upload(models.Model):
    """A file the user uploaded as evidence for their run. Its bytes stay in the database (a
    worker on another machine reads them from there) and are never served back: pages show its
    name and the passages chosen from it."""

    source = models.OneToOneField(Source, on_delete=models.CASCADE, related_name="upload")
    name = models.CharField(max_length=255)
    # Sniffed from the content, not from the name: application/pdf, text/html, text/plain,
    # text/markdown.
    content_type = models.CharField(max_length=64)
    sha256 = models.CharField(max_length=64)
    body = models.BinaryField()

    def __str__(self) -> str:
        return f"upload {self.name} ({self.content_type}, {len(self.body)} bytes)"


class HostCategory(models.Model):
    """The LLM's source type for a host the rule table does not know, kept across runs. A row
    with no type yet is a question in flight: sources of that host wait for its answer instead
    of asking again."""

    host = models.CharField(max_length=255, unique=True)
    source_type = models.CharField(max_length=32, choices=SourceType.choices, blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.host}: {self.source_type}"


class WorkerProcess(models.Model):
    """A process that runs verifications' tasks (the web server or `manage.py verify` with the
    embedded worker, a `celery worker`), and its last sign of life."""

    class Kind(models.TextChoices):
        EMBEDDED = "embedded"  # its runs' tasks are in its own memory: nobody else can run them
        CELERY = "celery"  # takes tasks from the shared broker

    name = models.CharField(max_length=200, primary_key=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField(db_index=True)
    # When its CPU pool and model were ready (null while it warms up).
    warm_at = models.DateTimeField(null=True, blank=True)
    # The tasks it had taken from the shared broker and not finished at its last beat, as
    # [name, args]: a message leaves Redis when a worker takes it, so those of a process that
    # died are sent again (worker/resume.sweep), at once, whatever else the queue holds.
    tasks = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"{self.kind} process {self.name}"


class Spending(models.Model):
    """What one client spent, one row per request that spends: the per-hour limits of steps,
    retries and uploaded bytes (limits.py) are sums over these rows, so they hold across web
    processes and do not depend on the cache. Rows older than the window are deleted."""

    client = models.CharField(max_length=64)
    kind = models.CharField(max_length=16)
    amount = models.PositiveBigIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["client", "kind", "created_at"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} at {self.created_at}"


class DeletedVerification(models.Model):
    """A run its creator deleted: all that is kept of it is its id, so its permalink can say
    "deleted by its owner" instead of a bare "not found"."""

    id = models.UUIDField(primary_key=True, editable=False)
    deleted_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"verification {self.id} (deleted)"

"""The language model the pipeline's unit tests pass to a step (in the spirit of
long-form-factuality's FakeModel): a fixed answer, parsed by the step's own parser."""


class FakeModel:
    def __init__(self, answer):
        self.answer = answer
        self.calls: list[dict] = []

    def complete(self, *, system, user, schema_name, schema, parse, max_tokens=0, done=None):
        self.calls.append({"system": system, "user": user, "schema_name": schema_name, "schema": schema})
        return parse(self.answer)

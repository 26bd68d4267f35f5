"""The trail form (issue 26): a builder for the common shape of a generation process — your
sources, one or more levels of intermediate texts each made from texts of the level below, then
the final text — or a trail JSON file; the model and VeriTrail's q.

The builder's boxes are plain POST fields counted by hidden fields, so "Add a source" is a submit
that renders the same form with one more box: it works without JavaScript (htmx only spares the
page reload). `builder_from_data` reads the boxes as typed and `trail_data` turns them into the
trail's JSON shape (pipeline/trail_graph); both are pure. An empty box is left out, so nobody has
to remove the boxes they did not need."""

from dataclasses import dataclass, field

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS
from django.utils.datastructures import MultiValueDict

from verification.access import limits
from verification.clients import providers
from verification.inputs.trail_files import trail_from_files
from verification.inputs.trails import MAX_Q, TrailRefused

# Empty boxes a new form offers; "Add" gives one more each time.
SOURCE_BOXES = 3
LEVEL_BOXES = 2
# A form of more boxes than this is a trail for a file: Django refuses a form of over 1,000 fields
# (DATA_UPLOAD_MAX_NUMBER_FIELDS), and every ticked input is one.
MAX_BOXES = 30
MAX_LEVELS = 6
SOURCE_STEP = "source"
FINAL_STEP = "final text"
FINAL_DEFAULT = "final"


@dataclass
class Option:
    """A text of the level below, as a box's "made from" checkbox."""

    value: int
    prefix: str
    label: str
    filled: bool
    checked: bool


@dataclass
class Box:
    """One text of the builder as typed: `name` is its node id (`default` when left empty);
    an intermediate text's `inputs` are positions in the level below."""

    prefix: str
    default: str
    name: str = ""
    text: str = ""
    inputs: frozenset[int] = frozenset()
    options: list[Option] = field(default_factory=list)

    @property
    def node_id(self) -> str:
        return self.name.strip() or self.default

    @property
    def filled(self) -> bool:
        return bool(self.text.strip())


@dataclass
class Level:
    prefix: str
    number: int
    step: str = ""
    boxes: list[Box] = field(default_factory=list)


@dataclass
class Builder:
    sources: list[Box]
    levels: list[Level]
    final: Box
    final_step: str = ""
    # The field a press of "Add" just made (the page puts the focus there).
    focus: str = ""


def builder_from_data(data: MultiValueDict | None) -> Builder:
    """The builder's boxes as the form sent them (or a new form's empty ones), with one more box
    where an "Add" button was pressed (`add`: source, level, or text-<level index>)."""
    data = data if data is not None else MultiValueDict()
    add = data.get("add", "")
    sources = [_box(data, f"source-{i}", f"source-{i + 1}") for i in range(_count(data, "source-count", SOURCE_BOXES))]
    focus = ""
    if add == "source" and len(sources) < MAX_BOXES:
        sources.append(_box(data, f"source-{len(sources)}", f"source-{len(sources) + 1}", new=True))
        focus = f"{sources[-1].prefix}-text"
    levels = [_level(data, i) for i in range(_count(data, "level-count", 1, most=MAX_LEVELS))]
    if add == "level" and len(levels) < MAX_LEVELS:
        levels.append(_level(data, len(levels), new=True))
        focus = f"{levels[-1].prefix}-step"
    added_to = plain_number(add.removeprefix("text-")) if add.startswith("text-") else None
    if added_to is not None and added_to < len(levels):
        level = levels[added_to]
        if len(level.boxes) < MAX_BOXES:
            level.boxes.append(_level_box(data, level, len(level.boxes), new=True))
            focus = f"{level.boxes[-1].prefix}-text"
    below = sources
    for level in levels:
        for box in level.boxes:
            box.options = _options(data, box, below)
        below = level.boxes
    final = _box(data, "final", FINAL_DEFAULT)
    return Builder(sources, levels, final, data.get("final-step", "")[:200], focus)


def plain_number(value: str, *, digits: int = 6) -> int | None:
    """A counter or position the page wrote: ASCII digits, at most `digits` of them; None for
    anything else. str.isdigit alone takes "²", which int() refuses, and "٣", which it reads as 3;
    a long run of digits is more than int() converts."""
    return int(value) if value.isascii() and value.isdigit() and len(value) <= digits else None


def _count(data: MultiValueDict, name: str, default: int, *, most: int = MAX_BOXES) -> int:
    value = plain_number(data.get(name, ""))
    return min(value, most) if value else default


def _text(data: MultiValueDict, name: str) -> str:
    # Browsers send a textarea's line breaks as CRLF; the trail's texts keep one kind.
    return data.get(name, "").replace("\r\n", "\n")


def _box(data: MultiValueDict, prefix: str, default: str, *, new: bool = False) -> Box:
    if new:
        return Box(prefix, default)
    return Box(prefix, default, name=data.get(f"{prefix}-name", "")[:200], text=_text(data, f"{prefix}-text"))


def _level(data: MultiValueDict, index: int, *, new: bool = False) -> Level:
    prefix = f"level-{index}"
    level = Level(prefix, index + 1, step="" if new else data.get(f"{prefix}-step", "")[:200])
    count = LEVEL_BOXES if new else _count(data, f"{prefix}-count", LEVEL_BOXES)
    level.boxes = [_level_box(data, level, j, new=new) for j in range(count)]
    return level


def _level_box(data: MultiValueDict, level: Level, index: int, *, new: bool = False) -> Box:
    box = _box(data, f"{level.prefix}-{index}", f"level-{level.number}-text-{index + 1}", new=new)
    if not new:
        ticked = (plain_number(value) for value in data.getlist(f"{box.prefix}-from"))
        box.inputs = frozenset(position for position in ticked if position is not None)
    return box


def _options(data: MultiValueDict, box: Box, below: list[Box]) -> list[Option]:
    """The texts of the level below as checkboxes. A text this box has not been shown with yet
    (a new form, a new box, a text added below since) is ticked: the common shape is "made from
    all of them"."""
    seen = plain_number(data.get(f"{box.prefix}-seen", "")) or 0
    return [
        Option(
            value=position,
            prefix=other.prefix,
            label=other.node_id,
            filled=other.filled,
            checked=position in box.inputs or position >= seen,
        )
        for position, other in enumerate(below)
    ]


def trail_data(builder: Builder) -> dict:
    """The builder's texts as a trail (the JSON shape of docs/examples/trail.json): the sources,
    each level's texts made from the ticked texts of the level below, and the final text made
    from every text of the highest level given. TrailRefused when a text is missing or made from
    nothing, or two texts of one name; anything else (a text nobody used) is parse_trail's to say."""
    if not builder.final.filled:
        raise TrailRefused("Paste the final text: it is the text whose claims are checked.")
    sources = [box for box in builder.sources if box.filled]
    if not sources:
        raise TrailRefused("Paste at least one source: the texts the first step was made from.")
    nodes = [{"id": box.node_id, "step": SOURCE_STEP, "from": [], "text": box.text} for box in sources]
    below, top = builder.sources, [box.node_id for box in sources]
    for level in builder.levels:
        given = [box for box in level.boxes if box.filled]
        for box in given:
            inputs = [below[o.value].node_id for o in box.options if o.checked and o.filled]
            if not inputs:
                raise TrailRefused(
                    f"{box.node_id!r} (level {level.number}) is made from none of the texts given below it: "
                    "tick the texts it was made from."
                )
            node = {"id": box.node_id, "from": inputs, "text": box.text}
            if level.step.strip():
                node["step"] = level.step.strip()
            nodes.append(node)
        if given:
            top = [box.node_id for box in given]
        below = level.boxes
    final_step = builder.final_step.strip() or FINAL_STEP
    nodes.append({"id": builder.final.node_id, "step": final_step, "from": top, "text": builder.final.text})
    names = [node["id"] for node in nodes]
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:
        raise TrailRefused(f"Two texts are named {twice!r}: give each text a name of its own.")
    return {"nodes": nodes}


def builder_of_trail(trail: dict) -> Builder:
    """A trail's nodes in the builder's boxes (Edit): sources, each stage's texts a level, the
    final text. TrailRefused, naming why, for a trail the builder cannot show: a text made from
    texts two levels below, a level of texts from different steps, a text given by its web
    address, more texts or levels than the builder holds. `trail` is the JSON shape with every
    node's stage (selectors.trail_copy)."""
    nodes = trail["nodes"]
    used = {name for node in nodes for name in node.get("from", [])}
    final = next(node for node in nodes if node["id"] not in used)
    if addressed := next((node["id"] for node in nodes if "text" not in node), None):
        raise TrailRefused(f"{addressed!r} is read from a web address, and the builder takes texts only")
    by_stage: dict[int, list[dict]] = {}
    for node in nodes:
        if node is not final:
            by_stage.setdefault(node["stage"] if node.get("from") else 0, []).append(node)
    stages = sorted(by_stage)
    if stages != list(range(len(stages))):
        raise TrailRefused("its stages skip a number: the builder's levels are written each from the one below")
    if len(stages) - 1 > MAX_LEVELS or any(len(level) > MAX_BOXES for level in by_stage.values()):
        raise TrailRefused(f"the builder holds {MAX_LEVELS} levels of up to {MAX_BOXES} texts each")
    data = MultiValueDict()
    position = {}
    for stage, level in by_stage.items():
        prefix = "source" if stage == 0 else f"level-{stage - 1}"
        steps = {node.get("step") for node in level}
        if stage and len(steps) > 1:
            raise TrailRefused(f"the texts of stage {stage} were written by different steps; a level has one")
        below = [] if stage == 0 else by_stage[stage - 1]
        for index, node in enumerate(level):
            if stage and not set(node["from"]) <= {other["id"] for other in below}:
                raise TrailRefused(f"{node['id']!r} is made from texts other than those of the stage below it")
            box = f"{prefix}-{index}"
            data.setlist(f"{box}-name", [node["id"]])
            data.setlist(f"{box}-text", [node["text"]])
            if stage:
                data.setlist(f"{box}-seen", [str(len(below))])
                data.setlist(f"{box}-from", [str(position[name]) for name in node["from"]])
            position[node["id"]] = index
        if stage:
            data.setlist(f"{prefix}-step", [steps.pop() or ""])
        data.setlist(f"{prefix}-count", [str(len(level))])
    top = by_stage[stages[-1]]
    if set(final.get("from", [])) != {node["id"] for node in top}:
        raise TrailRefused("the final text is not made from every text of the highest level, as the builder's is")
    data.setlist("source-count", [str(len(by_stage[0]))])
    data.setlist("level-count", [str(max(len(stages) - 1, 1))])
    data.setlist("final-name", [final["id"]])
    data.setlist("final-text", [final["text"]])
    data.setlist("final-step", [final.get("step") or ""])
    return builder_from_data(data)


class TrailForm(forms.Form):
    """The builder, or a trail file instead; the model and q. `cleaned_data["trail"]` is the
    trail as decoded JSON, for inputs/trails.trail_submission to validate."""

    model = forms.ChoiceField(label="Model", required=False)
    q = forms.IntegerField(
        label="Stop after this many “not fully supported” verdicts in a row (q)",
        min_value=1,
        max_value=MAX_Q,
        required=False,
        help_text="1 finds the most unsupported claims; 3 gave VeriTrail its best balance.",
    )
    trail_file = forms.FileField(
        label="Or a file: a trail, a trail result, a LangChain run or GraphRAG output",
        required=False,
        help_text="A file, when chosen, is checked instead of the texts above.",
    )

    def __init__(self, data=None, files=None, *, builder: Builder | None = None, **kwargs) -> None:
        """`builder`: boxes filled from a trail (Edit) for a form not yet sent."""
        super().__init__(data, files, **kwargs)
        self.fields["model"].choices = [(name, name) for name in providers.model_names()]
        self.fields["q"].initial = settings.TRAIL_Q
        self.fields["q"].widget.attrs.update({"min": 1, "max": MAX_Q})
        self.builder = builder or builder_from_data(data)

    @property
    def adding(self) -> bool:
        """An "Add" button was pressed: the form comes back with one more box, nothing runs."""
        return self.is_bound and bool(self.data.get("add"))

    def clean_trail_file(self):
        # GraphRAG's tables may be chosen together: the field keeps the last, the form takes them all.
        uploads = self.files.getlist("trail_file")
        size = sum(upload.size for upload in uploads)
        if size > (limit := max(settings.MAX_UPLOAD_BYTES, limits.trail_body_limit())):
            raise forms.ValidationError(limits.trail_too_large(size, limit))
        return uploads

    def clean(self) -> dict:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        uploads = cleaned.get("trail_file")
        try:
            if uploads:
                cleaned["trail"] = trail_from_files(uploads, answer=self.builder.final.text)
            else:
                cleaned["trail"] = trail_data(self.builder)
        except TrailRefused as refusal:
            raise forms.ValidationError(str(refusal)) from None
        return cleaned

    def refusals(self) -> list[str]:
        """Every refusal in words, the field named: the page says them above the form."""
        messages = list(self.non_field_errors())
        for name, errors in self.errors.items():
            if name != NON_FIELD_ERRORS:
                messages += [f"{self.fields[name].label}: {error}" for error in errors]
        return messages

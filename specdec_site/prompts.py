"""The prompt sets and how a prompt becomes token ids: one home for the build and the tests."""

from __future__ import annotations

import json
import re
from pathlib import Path

# Broad sets, not chosen for speed. kind "chat" goes through the chat template.
PROMPTS = {
    "code": [
        {"id": "code-fib", "kind": "completion", "text": "def fibonacci(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number (fibonacci(0) == 0).\"\"\"\n"},
        {"id": "code-chat-reverse", "kind": "chat", "text": "Write a Python function that reverses the words in a sentence."},
        {"id": "code-parse", "kind": "completion", "text": "import json\n\n\ndef load_config(path):\n    \"\"\"Read a JSON config file and return it as a dict, or {} if the file is missing.\"\"\"\n"},
        {"id": "code-chat-sql", "kind": "chat", "text": "Write a SQL query that returns the ten customers with the highest total order value."},
        {"id": "code-binsearch", "kind": "completion", "text": "def binary_search(items: list[int], target: int) -> int:\n    \"\"\"Return the index of target in the sorted list items, or -1.\"\"\"\n"},
        {"id": "code-chat-class", "kind": "chat", "text": "Write a Python class Stack with push, pop and peek methods."},
    ],
    "prose": [
        {"id": "prose-lighthouse", "kind": "completion", "text": "The old lighthouse keeper climbed the stairs one last time. Outside, the storm"},
        {"id": "prose-chat-poem", "kind": "chat", "text": "Write a short poem in English about autumn rain."},
        {"id": "prose-letter", "kind": "completion", "text": "Dear Margaret,\n\nI am writing to you from the little village by the sea, where"},
        {"id": "prose-chat-story", "kind": "chat", "text": "Tell a very short story about a fox who learns to read."},
    ],
}


def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def prompt_text(tokenizer, prompt: dict) -> str:
    """The text the model sees: chat prompts through the tokenizer's chat template, others as they are (a chat
    prompt too, when the tokenizer has no chat template: a base model's pair; the run records it)."""
    if prompt["kind"] == "chat" and has_chat_template(tokenizer):
        return tokenizer.apply_chat_template([{"role": "user", "content": prompt["text"]}], tokenize=False,
                                             add_generation_prompt=True)
    return prompt["text"]


def encode(tokenizer, prompt: dict, device="cpu"):
    """(n,) int64 token ids of a prompt."""
    return tokenizer(prompt_text(tokenizer, prompt), return_tensors="pt").input_ids[0].to(device)


def eos_ids(tokenizer) -> list[int]:
    """End-of-sequence and end-of-turn ids: where a user's generation would stop."""
    ids = {tokenizer.eos_token_id} | {tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")}
    return sorted(i for i in ids if isinstance(i, int) and i >= 0 and i != tokenizer.unk_token_id)


USER_DOMAIN = "custom"  # the domain of a prompt that names none
PROMPT_KINDS = ("completion", "chat")
PROMPT_ID = re.compile(r"[A-Za-z0-9._-]{1,80}")


class PromptError(ValueError):
    """A prompt file or a --prompt that cannot be used; the message says where and why."""


def user_prompts(texts: list[str], files: list[str]) -> dict | None:
    """The prompt table of --prompt TEXT (each a completion in the domain "custom") and --prompts FILE (a .jsonl file:
    one {"text", "domain"?, "kind"?, "id"?} per line; any other file: its whole text is one completion prompt), in
    the order given; None if neither was given. Ids are made unique; an empty text is an error."""
    rows = [(f"--prompt #{i}", {"text": t}) for i, t in enumerate(texts, 1)]
    for name in files:
        path = Path(name).expanduser()
        try:
            content = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise PromptError(f"--prompts {name}: cannot read it ({err})") from None
        if path.suffix != ".jsonl":
            rows.append((f"--prompts {name}", {"text": content, "id": path.stem}))
            continue
        for n, line in enumerate(content.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((f"--prompts {name}:{n}", json.loads(line)))
                except ValueError as err:
                    raise PromptError(f"--prompts {name}:{n}: not JSON ({err})") from None
    if not rows:
        return None
    table: dict = {}
    for where, row in rows:
        table.setdefault(check_prompt(where, row), []).append(row)
    seen: set = set()
    for domain, prompts in table.items():
        for i, prompt in enumerate(prompts, 1):
            base = prompt.get("id") or f"{domain}-{i}"
            pid, n = base, 1
            while pid in seen:
                n += 1
                pid = f"{base}-{n}"
            seen.add(pid)
            prompts[i - 1] = {"id": pid, "kind": prompt.get("kind", "completion"), "text": prompt["text"]}
    return table


def check_prompt(where: str, row) -> str:
    """The prompt's domain, or a PromptError naming `where`."""
    if not isinstance(row, dict):
        raise PromptError(f"{where}: a prompt is a JSON object with a \"text\", got {type(row).__name__}")
    unknown = set(row) - {"text", "domain", "kind", "id"}
    if unknown:
        raise PromptError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} (a prompt has text, domain, kind, id)")
    if not isinstance(row.get("text"), str) or not row["text"].strip():
        raise PromptError(f"{where}: the prompt's text is missing or empty")
    if row.get("kind", "completion") not in PROMPT_KINDS:
        raise PromptError(f"{where}: kind must be one of {', '.join(PROMPT_KINDS)}, got {row.get('kind')!r}")
    for field in ("domain", "id"):
        if field in row and not (isinstance(row[field], str) and PROMPT_ID.fullmatch(row[field])):
            raise PromptError(f"{where}: {field} must be 1-80 letters, digits, '.', '_' or '-', got {row[field]!r}")
    return row.get("domain", USER_DOMAIN)


def prompt_ids(ctx, cfg, prompt):
    """(n,) token ids of a benchmark prompt, its last cfg.policy_prompt_cap tokens if the config caps them (the quick
    build), as every benchmark stage cuts them."""
    ids = encode(ctx.target.tokenizer, prompt, ctx.device)
    return ids if cfg.policy_prompt_cap is None else ids[-cfg.policy_prompt_cap:]

"""The prompt sets and how a prompt becomes token ids: one home for the build and the tests."""

from __future__ import annotations

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


def prompt_text(tokenizer, prompt: dict) -> str:
    """The text the model sees: chat prompts through the tokenizer's chat template, others as they are."""
    if prompt["kind"] == "chat":
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

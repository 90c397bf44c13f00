"""The stages of a data build, one module and one artifact each (run(ctx, cfg) -> dict), and what only they use:
Hugging Face's assisted generation (hf) and the k sweep's summary (sweep). engine/stages.py is their table."""

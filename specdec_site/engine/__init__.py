"""The build engine: the command line and its options, the config, the model context every stage is given, the
provenance of an artifact (meta), which stages are stale (freshness), and the table of stages (stages)."""

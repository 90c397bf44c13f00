"""Exactness tools: exact distributions of tiny models (exact), the mutants that known wrong rules must fail
(mutants), the audit of any implementation (audit) and EAGLE's published tree rule (eagle)."""

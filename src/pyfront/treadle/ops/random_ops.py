"""Random number ops and seeds (td.random)."""

PUBLIC = {"random": []}

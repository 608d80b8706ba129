"""Neural-network wrappers (td.nn)."""

PUBLIC = {"nn": []}

"""Files: saved functions and looms, schedule records."""

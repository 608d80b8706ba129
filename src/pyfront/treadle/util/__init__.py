"""Utilities shared by the front end (nested structures)."""

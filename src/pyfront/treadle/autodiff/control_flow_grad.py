"""Gradients of If and While (to be written)."""

"""Tensors, dtypes, shapes, structures and op wrappers as the front end sees them."""

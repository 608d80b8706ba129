"""AST passes that turn a function's Python control flow into calls of the
AutoGraph runtime operators (see converter.py for their order)."""

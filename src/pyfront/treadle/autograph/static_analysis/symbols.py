"""Symbols that analysis tracks: plain names (`x`) and compound symbols made
of attribute chains and subscripts with a constant or plain-name index
(`a.b`, `a.b[0]`, `a['k']`, `a[i]`).

A symbol is identified by its source text (its key); the key parses back to
an expression, which is how generated code reads and writes it."""

import ast
import functools


class Symbol:
    """One tracked symbol.

    key:  its source text, e.g. "self.count" or "d['k']"
    root: the plain name it starts from ("self", "d")
    deps: every plain name its value depends on (the root and subscript indices)
    """

    __slots__ = ("key", "root", "deps")

    def __init__(self, key, root, deps):
        self.key = key
        self.root = root
        self.deps = deps

    @property
    def is_simple(self):
        return self.key == self.root

    def __repr__(self):
        return f"Symbol({self.key})"


def symbol_of(node):
    """The Symbol an expression node denotes, or None when it is not a name,
    attribute chain or simple subscript (e.g. `f().x`, `a[i + 1]`)."""
    if isinstance(node, ast.Name):
        return Symbol(node.id, node.id, frozenset((node.id,)))
    if isinstance(node, ast.Attribute):
        base = symbol_of(node.value)
        if base is None:
            return None
        return Symbol(f"{base.key}.{node.attr}", base.root, base.deps)
    if isinstance(node, ast.Subscript):
        base = symbol_of(node.value)
        if base is None:
            return None
        index = node.slice
        if isinstance(index, ast.Constant) and type(index.value) in (int, str):
            return Symbol(f"{base.key}[{index.value!r}]", base.root, base.deps)
        if isinstance(index, ast.Name):
            return Symbol(f"{base.key}[{index.id}]", base.root, base.deps | {index.id})
        return None
    return None


@functools.lru_cache(maxsize=4096)
def _parsed(key):
    return ast.parse(key, mode="eval").body


def _with_ctx(node, ctx):
    """A copy of a Name/Attribute/Subscript chain with the outer node's ctx set."""
    if isinstance(node, ast.Name):
        return ast.Name(id=node.id, ctx=ctx)
    if isinstance(node, ast.Attribute):
        return ast.Attribute(value=_with_ctx(node.value, ast.Load()), attr=node.attr, ctx=ctx)
    if isinstance(node, ast.Subscript):
        return ast.Subscript(value=_with_ctx(node.value, ast.Load()), slice=_with_ctx(node.slice, ast.Load()),
                             ctx=ctx)
    if isinstance(node, ast.Constant):
        return ast.Constant(value=node.value)
    raise TypeError(f"not a symbol expression: {ast.dump(node)}")


def load(key):
    """An expression reading the symbol `key`."""
    return _with_ctx(_parsed(key), ast.Load())


def store(key):
    """An assignment target for the symbol `key`."""
    return _with_ctx(_parsed(key), ast.Store())

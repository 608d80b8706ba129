"""Rewrites if/while/for statements into calls of the runtime operators,
which decide when they run whether to stage (a tensor condition or
iterable) or to run plain Python.

    if x > 0:                       def get_state():
        y = x                           return (y,)
    else:                           def set_state(vars_):
        y = -x                          nonlocal y
                          ->            (y,) = vars_
                                    def if_body():
                                        nonlocal y
                                        y = x
                                    def else_body():
                                        nonlocal y
                                        y = -x
                                    y = ag__.Undefined('y')
                                    ag__.if_stmt(x > 0, if_body, else_body, get_state, set_state, ('y',), 1)

The state of a statement is every symbol its blocks modify; the outputs of
a conditional are the modified symbols live after it (listed first, their
count passed as `nouts`); the loop variables of a loop are the modified
symbols live at its head or after it. Compound symbols (`self.n`, `d['k']`)
are part of the state when the object they belong to outlives the block.

Each block becomes a nested function that declares the symbols it modifies
`nonlocal`, so those need a binding in the function being converted: a
symbol that no earlier code may have bound gets an `ag__.Undefined`
placeholder before the outermost converted statement; a symbol bound on
some paths only is read through `ag__.ldu` (which gives the placeholder
when it is unbound)."""

import ast

from treadle.autograph.static_analysis import activity, definitions
from treadle.autograph.static_analysis import symbols as sym
from treadle.autograph.transformer import base


class _ScopeInfo:
    """Facts about the function scope being converted."""

    def __init__(self, function_node):
        whole = activity.analyze(function_node.body)
        self.globals = whole.declared_global
        self.user_nonlocals = whole.declared_nonlocal
        self.params = definitions.parameters(function_node)
        self.assigned = set(whole.simple_modified())


class _Block:
    """The symbols of one if/while/for statement."""

    def __init__(self, modified, live, scope, node):
        self.simple = [k for k, s in modified.items() if s.is_simple]
        self.local = [k for k in self.simple if k not in scope.globals]
        self.globals = [k for k in self.simple if k in scope.globals]
        changed = set(self.simple)
        self.compounds = [s.key for s in modified.values() if not s.is_simple and not (s.deps & changed)
                          and (s.root in live or s.root in scope.params or s.root not in scope.assigned)]
        self.must_in = node.ag_must_in
        self.may_in = node.ag_may_in


def _declarations(names, scope):
    out = []
    local = [n for n in names if n not in scope.globals]
    glob = [n for n in names if n in scope.globals]
    if local:
        out.append(ast.Nonlocal(names=local))
    if glob:
        out.append(ast.Global(names=glob))
    return out


def _is_simple(key):
    return "." not in key and "[" not in key


def _maybe_unbound(key, must_in):
    """Whether a state read needs a guard: compound symbols, and names not bound on every path."""
    return not _is_simple(key) or not (must_in is definitions.EVERYTHING or key in must_in)


def _read(key, must_in):
    if _maybe_unbound(key, must_in):
        return base.ag_call("ldu", base.lambda_(sym.load(key)), base.const(key))
    return base.load(key)


class _Transformer(ast.NodeTransformer):
    def __init__(self, namer, scope):
        self.namer = namer
        self.scope = scope
        self.depth = 0  # enclosing converted statements; 0 means scope level
        self.maybe_undefined = set()  # symbols that may hold an Undefined placeholder
        self.vars_name = namer.shared("vars_")  # set_state's parameter

    # nested scopes are converted on their own
    def _keep(self, node):
        return node

    visit_FunctionDef = _keep
    visit_AsyncFunctionDef = _keep
    visit_Lambda = _keep
    visit_ClassDef = _keep

    def _children(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    # ---------------------------------------------------------- state helpers
    def _state_functions(self, state, must_in, origin):
        """(get_state, set_state) definitions and the names to pass for them."""
        if not state:
            return [], base.const(None), base.const(None)
        get_name, set_name = self.namer.new("get_state"), self.namer.new("set_state")
        getter = base.function_def(get_name, [], [ast.Return(value=base.tuple_([_read(k, must_in) for k in state]))])
        getter.ag_state_getter = True
        self.maybe_undefined.update(k for k in state if _is_simple(k) and _maybe_unbound(k, must_in))
        simple = [k for k in state if _is_simple(k)]
        setter = base.function_def(set_name, [self.vars_name], _declarations(simple, self.scope) + [
            ast.Assign(targets=[base.tuple_([sym.store(k) for k in state], ast.Store())],
                       value=base.load(self.vars_name))])
        return [getter, setter], base.load(get_name), base.load(set_name)

    def _placeholders(self, block):
        """`x = ag__.Undefined('x')` for symbols no earlier code may have bound."""
        if self.depth:
            return []  # the enclosing converted statement binds them
        names = [k for k in block.local if k not in block.may_in and k not in self.scope.user_nonlocals]
        self.maybe_undefined.update(names)
        return [base.assign(k, base.ag_call("Undefined", base.const(k))) for k in names]

    def _block_function(self, prefix, block, body, params=()):
        name = self.namer.new(prefix)
        return base.function_def(name, list(params), _declarations(block.simple, self.scope) + body), name

    @staticmethod
    def _names(state):
        return base.tuple_([base.const(k) for k in state])

    @staticmethod
    def _options(node):
        opts = getattr(node, "ag_options", None) or ast.Dict(keys=[], values=[])
        flags = getattr(node, "ag_flags", None)
        if flags:
            opts.keys.append(base.const("flags"))
            opts.values.append(ast.Dict(keys=[base.const(k) for k in flags],
                                        values=[base.tuple_([base.const(v) for v in kl]) for kl in flags.values()]))
        return opts

    # ---------------------------------------------------------- if
    # Each visit analyzes the statement before converting the statements
    # nested in it (which turns their assignments into nested functions).
    def visit_If(self, node):
        modified = activity.analyze(node.body).modified
        for k, v in activity.analyze(node.orelse).modified.items():
            modified.setdefault(k, v)
        self._children(node)
        live = node.ag_live_out
        block = _Block(modified, live, self.scope, node)
        outputs = [k for k in block.simple if k in live] + block.compounds
        state = outputs + [k for k in block.simple if k not in live]
        defs, get_state, set_state = self._state_functions(state, block.must_in, node)
        body_fn, body_name = self._block_function("if_body", block, node.body)
        defs.append(body_fn)
        else_ref = base.const(None)
        if node.orelse:
            else_fn, else_name = self._block_function("else_body", block, node.orelse)
            defs.append(else_fn)
            else_ref = base.load(else_name)
        call = base.expr_stmt(base.ag_call("if_stmt", node.test, base.load(body_name), else_ref, get_state, set_state,
                                           self._names(state), base.const(len(outputs))))
        call.ag_must_here = node.ag_must_in  # the test runs where the if statement was
        return base.located(defs + self._placeholders(block) + [call], node)

    # ---------------------------------------------------------- loops
    def _loop_state(self, node, modified):
        live = node.ag_live_in | node.ag_live_out
        block = _Block(modified, live, self.scope, node)
        state = [k for k in block.simple if k in live] + block.compounds
        return block, state

    def visit_While(self, node):
        modified = activity.analyze(node.body).modified
        test_modified = activity.analyze(node.test).simple_modified()  # walrus
        for k in test_modified:
            modified.setdefault(k, sym.Symbol(k, k, frozenset((k,))))
        self._children(node)
        block, state = self._loop_state(node, modified)
        defs, get_state, set_state = self._state_functions(state, block.must_in, node)
        test_name = self.namer.new("loop_test")
        defs.append(base.function_def(test_name, [], _declarations(test_modified, self.scope)
                                      + [ast.Return(value=node.test)]))
        defs[-1].ag_must_here = node.ag_must_in  # bound before the loop stays bound at its head
        body_fn, body_name = self._block_function("loop_body", block, node.body)
        defs.append(body_fn)
        call = base.expr_stmt(base.ag_call("while_stmt", base.load(test_name), base.load(body_name), get_state,
                                           set_state, self._names(state), self._options(node)))
        return base.located(defs + self._placeholders(block) + [call], node)

    def visit_For(self, node):
        modified = dict(activity.analyze(node.target).modified)
        for k, v in activity.analyze(node.body).modified.items():
            modified.setdefault(k, v)
        self._children(node)
        block, state = self._loop_state(node, modified)
        defs, get_state, set_state = self._state_functions(state, block.must_in, node)
        itr = self.namer.new("itr")
        bind_target = ast.Assign(targets=[node.target], value=base.load(itr))
        body_fn, body_name = self._block_function("loop_body", block, [bind_target] + node.body, [itr])
        body_fn.ag_bound_first = set(activity.analyze(node.target).simple_modified())
        defs.append(body_fn)
        extra = getattr(node, "ag_extra_tests", None)
        extra_ref = base.const(None)
        if extra:
            test = extra[0] if len(extra) == 1 else ast.BoolOp(op=ast.And(), values=list(extra))
            extra_name = self.namer.new("extra_test")
            defs.append(base.function_def(extra_name, [], [ast.Return(value=test)]))
            defs[-1].ag_must_here = node.ag_must_in
            extra_ref = base.load(extra_name)
        call = base.expr_stmt(base.ag_call("for_stmt", node.iter, extra_ref, base.load(body_name), get_state,
                                           set_state, self._names(state), self._options(node)))
        call.ag_must_here = node.ag_must_in
        return base.located(defs + self._placeholders(block) + [call], node)


def transform(function_node, namer):
    """Converts the control flow of one function scope (analysis must have run)."""
    t = _Transformer(namer, _ScopeInfo(function_node))
    new_body = []
    for s in function_node.body:
        r = t.visit(s)
        new_body.extend(r if isinstance(r, list) else [r])
    function_node.body = new_body
    return t.maybe_undefined

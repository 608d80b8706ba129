"""The recording path of a cell called with lists of per-example values, as
a child-sum TreeLSTM's cell takes its children's states: `cell(x, [c...],
[h...])`. Walking the arguments' structure (as the general path does) costs
more than the rest of the call; this key names the same op from the
arguments' signature numbers alone, and the flat arguments come with it."""

from treadle.loom.autobatch._record import Value  # the class of the values the recording makes


def list_call_key(function, args):
    """(key, flat per-example arguments) of a positional call whose arguments
    are per-example values (each with a signature number) or lists or tuples
    of them; None for any other call (the general path takes it). The key
    holds a value's signature number, or a list's type and its elements'
    numbers (so its length): what the general path's key tells apart."""
    parts, flat = [function], []
    for a in args:
        t = type(a)
        if t is Value:
            sig = a._autobatch_sig
            if sig is None:  # a variable read inside the function
                return None
            parts.append(sig)
            flat.append(a)
        elif t is list or t is tuple:
            sigs = []
            for x in a:
                if type(x) is not Value or x._autobatch_sig is None:
                    return None
                sigs.append(x._autobatch_sig)
            parts.append((t, tuple(sigs)))
            flat.extend(a)
        else:
            return None
    return tuple(parts), tuple(flat)

"""Which code saves and loads each kind of treadle file: td.save and td.load
dispatch through this registry. A kind of file whose objects live in a higher
layer (a loom: treadle.loom.saving) registers itself here, so io never imports
that layer."""

from treadle import errors
from treadle.io.container import kind_name

_SAVERS = []   # (types, description, save(obj, path)), in registration order
_LOADERS = {}  # kind -> load(path)


def register(kind, types, description, save, load):
    """Objects of `types` (described as e.g. "a Loom" in messages) are saved by
    `save(obj, path)`; files of `kind` (a container.KIND_ constant) are loaded by
    `load(path)`. A kind is registered once."""
    if kind in _LOADERS:
        raise ValueError(f"{kind_name(kind)} (file kind {kind}) is already registered")
    _LOADERS[kind] = load
    if types:
        _SAVERS.append((tuple(types), description, save))


def saver_for(obj):
    """(description, save) of the kind that saves `obj`, or None."""
    for types, description, save in _SAVERS:
        if isinstance(obj, types):
            return description, save
    return None


def loader_for(kind, path):
    """load(path) of files of `kind`; InvalidArgumentError naming the kind when none is registered."""
    try:
        return _LOADERS[kind]
    except KeyError:
        raise errors.InvalidArgumentError(None, None, f"{path}: holds {kind_name(kind)}, which td.load does not "
                                                      "read (it reads saved functions and looms)") from None

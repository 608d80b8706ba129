"""The AutoGraph runtime: what converted code calls (as `ag__.<name>`;
`ag__.converted_call` comes from treadle.autograph.converter)."""

from treadle.autograph.operators.conditionals import if_stmt
from treadle.autograph.operators.exceptions import assert_stmt
from treadle.autograph.operators.logical import and_, if_exp, not_, or_
from treadle.autograph.operators.loops import for_stmt, while_stmt
from treadle.autograph.operators.variables import Undefined, UndefinedReturnValue, ld, ldu, retval

__all__ = ["assert_stmt", "if_stmt", "and_", "or_", "not_", "if_exp", "for_stmt", "while_stmt", "Undefined",
           "UndefinedReturnValue", "ld", "ldu", "retval"]

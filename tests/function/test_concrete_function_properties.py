"""ConcreteFunction.variables, trainable_variables, output_shapes and
output_dtypes, as TensorFlow's: the variables the traced function uses (in
order of first use, trainable or not), and the outputs' static shapes and
dtypes in the structure the function returns."""

import treadle as td


def test_variables_are_those_the_function_uses():
    v = td.Variable(1.0)
    frozen = td.Variable(2.0, trainable=False)
    unused = td.Variable(3.0)

    @td.function
    def f(x):
        if x > 0:
            v.assign_add(x)
        return x * frozen + v

    conc = f.get_concrete_function(td.TensorSpec([], td.float32))
    assert [id(u) for u in conc.variables] == [id(v), id(frozen)]
    assert [id(u) for u in conc.trainable_variables] == [id(v)]
    assert all(id(u) != id(unused) for u in conc.variables)
    assert td.function(lambda x: x + 1).get_concrete_function(td.constant(1)).variables == ()


def test_variables_created_on_the_first_trace_belong_to_it():
    class Counter(td.Module):
        def __init__(self):
            super().__init__()
            self.count = None

        @td.function
        def __call__(self, x):
            if self.count is None:
                self.count = td.Variable(0, trainable=False)
            self.count.assign_add(x)
            return self.count.read_value()

    counter = Counter()
    conc = counter.__call__.get_concrete_function(td.constant(1))
    assert [id(u) for u in conc.variables] == [id(counter.count)]
    assert conc.trainable_variables == ()


def test_output_shapes_and_dtypes_follow_the_returned_structure():
    @td.function
    def f(x):
        return {"sum": td.reduce_sum(x), "pair": (x * 2, td.cast(x, td.int64)), "none": None}

    conc = f.get_concrete_function(td.TensorSpec([None, 3], td.float32))
    shapes, dtypes = conc.output_shapes, conc.output_dtypes
    assert shapes["sum"].rank == 0
    assert shapes["pair"][0].as_list() == [None, 3]
    assert shapes["none"] == td.TensorShape(None) and shapes["none"].rank is None
    assert dtypes == {"sum": td.float32, "pair": (td.float32, td.int64), "none": None}
    single = td.function(lambda x: x[0]).get_concrete_function(td.zeros([4, 2]))
    assert single.output_shapes.as_list() == [2] and single.output_dtypes == td.float32

"""Hand-written op wrappers: the public functions whose TensorFlow signature
needs more than the registry's generated function (axis handling, dtype
policies, list arguments). Each calls registered ops through framework.op_execution."""

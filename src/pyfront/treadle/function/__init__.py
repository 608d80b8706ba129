"""td.function: polymorphic functions traced into graphs, and the concrete
(traced, callable) functions they dispatch to."""

"""td.random: filled in by treadle._api from the op registry and treadle.ops."""

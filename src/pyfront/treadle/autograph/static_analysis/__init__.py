"""Static analysis of function bodies: activity, liveness, definedness."""

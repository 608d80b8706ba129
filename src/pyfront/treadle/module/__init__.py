"""td.Module: a container of variables and submodules."""

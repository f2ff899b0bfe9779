"""Reaches into PyFlink's, py4j's, Beam's and pemja's internals, one module per dependency
(see `flink_agents._compat`): `pyflink`, `py4j`, `beam`, `pemja`."""

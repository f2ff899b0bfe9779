"""flink."""

"""Runtimes that execute agents: the local runner and the PyFlink operator."""

"""Upstream's plan-layer path of its tools (`function_tool.FunctionTool`)."""

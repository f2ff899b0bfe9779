"""`requires_extra`: the imports of an optional SDK, and what to install when one fails.

An integration module imports its SDK in a ``with requires_extra(...)`` block at the top;
an `ImportError` there becomes one that names the package extra to install::

    with requires_extra("ollama", "the Ollama models need the ollama SDK"):
        import ollama
"""

from __future__ import annotations

from types import TracebackType

__all__ = ["requires_extra"]


def requires_extra(extra: str, needs: str) -> _ExtraImports:
    """A block of imports from the package extra ``extra``; ``needs`` says who needs what
    (``"the Bedrock chat model needs boto3"``). An `ImportError` in the block is raised
    again as ``"<needs>: pip install 'pyflink-agents[<extra>]'"``, from the original."""
    return _ExtraImports(f"{needs}: pip install 'pyflink-agents[{extra}]'")


class _ExtraImports:
    """The context manager of `requires_extra`; its ``__exit__`` never swallows an error
    (so a type checker sees the block's names as bound after it)."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(exc, ImportError):
            raise ImportError(self.message) from exc

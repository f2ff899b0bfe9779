"""Keys of the metadata reported with a model (``llm``) execution."""

__all__ = ["LLMExecutionMetadataKeys"]


class LLMExecutionMetadataKeys:
    """Metadata keys of an ``llm`` execution."""

    MODEL = "model"
    """The provider's model name (the chat model setup's ``model``)."""

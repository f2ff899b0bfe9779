"""Types, prompts, the tool and the model connection of the two quickstart agents.

Written as the Apache Flink Agents quickstart has them (same modules, names and API
calls), with one change: the model connection. Upstream's quickstart talks to qwen3:8b
on an Ollama server; here ``ollama_server_descriptor`` is an offline stand-in
(`offline_review_model.review_model`), so the examples run with no model server. The
agents keep upstream's Ollama chat model setup (``ResourceName.ChatModel.OLLAMA_SETUP``).
"""

from pydantic import BaseModel

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor

# System prompt of the review analysis agents.
review_analysis_system_prompt_str = """
    You analyze product reviews. From the review and the product id, work out a
    satisfaction score from 1 (very unhappy) to 5 (very happy) and the reasons the
    customer is unhappy, if any.

    The input looks like:
    {
        "id": "p-1",
        "review": "It stopped working after a day."
    }

    Answer with JSON only, which Python's json module can parse, like:
    {
     "id": "p-1",
     "score": 1,
     "reasons": [
       "poor quality"
       ]
    }

    When the customer is unhappy with the shipping (late, damaged on the way), first
    notify the shipping manager with the tool you have; then answer exactly as above,
    without mentioning the tool.
    """

# Prompt of the workflow agent: the action fills {input} with the review as text.
review_analysis_prompt = Prompt.from_messages(
    messages=[
        ChatMessage(
            role=MessageRole.SYSTEM,
            content=review_analysis_system_prompt_str,
        ),
        ChatMessage(
            role=MessageRole.USER,
            content="""
            "input":
            {input}
            """,
        ),
    ],
)

# Prompt of the ReAct agent: it fills {id} and {review} from the fields of its input.
review_analysis_react_prompt = Prompt.from_messages(
    messages=[
        ChatMessage(
            role=MessageRole.SYSTEM,
            content=review_analysis_system_prompt_str,
        ),
        ChatMessage(
            role=MessageRole.USER,
            content="""
            "id": {id},
            "review": {review}
            """,
        ),
    ],
)


# The tool: tell the shipping manager (here it only prints).
def notify_shipping_manager(id: str, review: str) -> None:
    """Notify the shipping manager when a product got a negative review because of
    its shipping.

    Parameters
    ----------
    id : str
        The id of the product whose review complains about the shipping
    review: str
        The text of the negative review
    """
    print(f"Shipping problem with product [{id}], the customer wrote: {review}")


class ProductReview(BaseModel):
    """A product review: the product's id and the review's text."""

    id: str
    review: str


class ProductReviewAnalysisRes(BaseModel):
    """The analysis of one review: the product, a score and the reasons."""

    id: str
    score: int
    reasons: list[str]


# ------------------------------------------------------------------ the model connection
# Upstream (and here, with an Ollama server running qwen3:8b):
#     ollama_server_descriptor = ResourceDescriptor(
#         clazz=ResourceName.ChatModel.OLLAMA_CONNECTION, request_timeout=120
#     )
# Here: the offline model, so the examples run anywhere.

from offline_review_model import review_model  # noqa: E402 (the model connection)

ollama_server_descriptor = ResourceDescriptor(
    clazz=FunctionChatModelConnection, function=review_model
)

"""The ReAct agent quickstart of Apache Flink Agents (review analysis), run here.

    python examples/upstream_quickstart/react_agent_example.py          # Flink
    python examples/upstream_quickstart/react_agent_example.py --local  # no Flink

`main` is upstream's: a `ReActAgent` with the review prompt, the
``notify_shipping_manager`` tool (``Tool.from_callable``) and the output schema
`ProductReviewAnalysisRes` scores each review of a PyFlink stream. `run_locally` runs the
same agent on the local runner. The model is the offline stand-in of
`custom_types_and_resources`; the job reads the file once, so it ends.
"""

import sys

from _harness import REVIEWS, print_results, result_line, reviews, share_this_folder_with_workers
from custom_types_and_resources import (
    ProductReview,
    ProductReviewAnalysisRes,
    notify_shipping_manager,
    ollama_server_descriptor,
    review_analysis_react_prompt,
)

from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor, ResourceName, ResourceType
from flink_agents.api.tools.tool import Tool


def review_analysis_react_agent() -> ReActAgent:
    """The ReAct agent: the chat model with the tool, the prompt and the output schema."""
    return ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=ResourceName.ChatModel.OLLAMA_SETUP,
            connection="ollama_server",
            model="qwen3:8b",
            tools=["notify_shipping_manager"],
        ),
        prompt=review_analysis_react_prompt,
        output_schema=ProductReviewAnalysisRes,
    )


def add_resources(agents_env: AgentsExecutionEnvironment) -> None:
    """The chat model connection and the tool, shared with the agent."""
    agents_env.add_resource(
        "ollama_server",
        ResourceType.CHAT_MODEL_CONNECTION,
        ollama_server_descriptor,
    ).add_resource(
        "notify_shipping_manager",
        ResourceType.TOOL,
        Tool.from_callable(notify_shipping_manager),
    )


def main() -> None:
    """Score a stream of product reviews in a Flink job."""
    share_this_folder_with_workers()
    from pyflink.common import WatermarkStrategy
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    env = StreamExecutionEnvironment.get_execution_environment()
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)
    agents_env.get_config().set(AgentExecutionOptions.NUM_ASYNC_THREADS, 2)
    add_resources(agents_env)

    product_review_stream = env.from_source(
        source=FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), f"file://{REVIEWS}"
        ).build(),
        watermark_strategy=WatermarkStrategy.no_watermarks(),
        source_name="streaming_agent_example",
    ).map(lambda x: ProductReview.model_validate_json(x))

    review_analysis_res_stream = (
        agents_env.from_datastream(input=product_review_stream, key_selector=lambda x: x.id)
        .apply(review_analysis_react_agent())
        .to_datastream()
    )

    # Print the results (upstream: review_analysis_res_stream.print()).
    review_analysis_res_stream.map(result_line).print()

    agents_env.execute("ReAct Agent Example Job")


def run_locally() -> None:
    """The same agent on the local runner (no Flink)."""
    agents_env = AgentsExecutionEnvironment.get_execution_environment()
    add_resources(agents_env)
    inputs = []
    for line in reviews():
        review = ProductReview.model_validate_json(line)
        inputs.append({"key": review.id, "value": review})
    outputs = agents_env.from_list(inputs).apply(review_analysis_react_agent()).to_list()
    agents_env.execute()
    print_results([value for output in outputs for value in output.values()])


if __name__ == "__main__":
    if "--local" in sys.argv:
        run_locally()
    else:
        main()

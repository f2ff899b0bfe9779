"""The workflow agent quickstart of Apache Flink Agents (review analysis), run here.

    python examples/upstream_quickstart/workflow_single_agent_example.py          # Flink
    python examples/upstream_quickstart/workflow_single_agent_example.py --local  # no Flink

`main` is upstream's: a PyFlink job reads product reviews, `ReviewAnalysisAgent` scores
each one (keyed by product id) and the results are printed. `run_locally` runs the same
agent on the local runner. The model is the offline stand-in of
`custom_types_and_resources`; the job reads the file once, so it ends.
"""

import sys

from _harness import REVIEWS, print_results, result_line, reviews, share_this_folder_with_workers
from custom_types_and_resources import ProductReview, ollama_server_descriptor
from review_analysis_agent import ReviewAnalysisAgent

from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceType


def main() -> None:
    """Score a stream of product reviews in a Flink job."""
    share_this_folder_with_workers()
    from pyflink.common import WatermarkStrategy
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    # The Flink streaming environment and the agents execution environment.
    env = StreamExecutionEnvironment.get_execution_environment()
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)

    # At most two synchronous actions at a time.
    agents_env.get_config().set(AgentExecutionOptions.NUM_ASYNC_THREADS, 2)

    # The chat model connection the agent's chat model setup refers to.
    agents_env.add_resource(
        "ollama_server",
        ResourceType.CHAT_MODEL_CONNECTION,
        ollama_server_descriptor,
    )

    # One JSON ProductReview per line of the file.
    product_review_stream = env.from_source(
        source=FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), f"file://{REVIEWS}"
        ).build(),
        watermark_strategy=WatermarkStrategy.no_watermarks(),
        source_name="streaming_agent_example",
    ).map(lambda x: ProductReview.model_validate_json(x))

    # The agent analyzes each review, keyed by product id.
    review_analysis_res_stream = (
        agents_env.from_datastream(input=product_review_stream, key_selector=lambda x: x.id)
        .apply(ReviewAnalysisAgent())
        .to_datastream()
    )

    # Print the results (upstream: review_analysis_res_stream.print()).
    review_analysis_res_stream.map(result_line).print()

    agents_env.execute("Workflow Agent Example Job")


def run_locally() -> None:
    """The same agent on the local runner (no Flink)."""
    agents_env = AgentsExecutionEnvironment.get_execution_environment()
    agents_env.add_resource(
        "ollama_server", ResourceType.CHAT_MODEL_CONNECTION, ollama_server_descriptor
    )
    inputs = []
    for line in reviews():
        review = ProductReview.model_validate_json(line)
        inputs.append({"key": review.id, "value": review})
    outputs = agents_env.from_list(inputs).apply(ReviewAnalysisAgent()).to_list()
    agents_env.execute()
    print_results([value for output in outputs for value in output.values()])


if __name__ == "__main__":
    if "--local" in sys.argv:
        run_locally()
    else:
        main()

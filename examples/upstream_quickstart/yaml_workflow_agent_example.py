"""The YAML agent quickstart of Apache Flink Agents (review analysis, the agent declared in
``yaml_review_analysis_agent.yaml``), run here.

    python examples/upstream_quickstart/yaml_workflow_agent_example.py          # Flink
    python examples/upstream_quickstart/yaml_workflow_agent_example.py --local  # no Flink

`main` is upstream's: ``load_yaml`` registers the agent the file declares (its actions and
tool are `ReviewAnalysisAgent`'s static methods), and ``apply("review_analysis_agent")``
runs it by name over a stream of product reviews. `run_locally` runs the same file on the
local runner. The file's model connection is the offline stand-in
(`offline_review_model.OfflineReviewModelConnection`); the job reads the file once, so it
ends.
"""

import sys

from _harness import (
    HERE,
    REVIEWS,
    print_results,
    result_line,
    reviews,
    share_this_folder_with_workers,
)
from custom_types_and_resources import ProductReview

from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.execution_environment import AgentsExecutionEnvironment

AGENT_FILE = HERE / "yaml_review_analysis_agent.yaml"


def main() -> None:
    """Score a stream of product reviews in a Flink job, with the agent of the YAML file."""
    share_this_folder_with_workers()
    from pyflink.common import WatermarkStrategy
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    env = StreamExecutionEnvironment.get_execution_environment()
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)

    # At most two synchronous actions at a time.
    agents_env.get_config().set(AgentExecutionOptions.NUM_ASYNC_THREADS, 2)

    # The agent, its chat model connection and setup, prompt, tool and actions.
    agents_env.load_yaml(AGENT_FILE)

    # One JSON ProductReview per line of the file.
    product_review_stream = env.from_source(
        source=FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), f"file://{REVIEWS}"
        ).build(),
        watermark_strategy=WatermarkStrategy.no_watermarks(),
        source_name="yaml_review_analysis_example",
    ).map(lambda x: ProductReview.model_validate_json(x))

    # The agent of the YAML file, applied by its name.
    review_analysis_res_stream = (
        agents_env.from_datastream(input=product_review_stream, key_selector=lambda x: x.id)
        .apply("review_analysis_agent")
        .to_datastream()
    )

    # Print the results (upstream: review_analysis_res_stream.print()).
    review_analysis_res_stream.map(result_line).print()

    agents_env.execute("YAML Agent Example Job")


def run_locally() -> None:
    """The same file's agent on the local runner (no Flink)."""
    agents_env = AgentsExecutionEnvironment.get_execution_environment()
    agents_env.load_yaml(AGENT_FILE)
    inputs = []
    for line in reviews():
        review = ProductReview.model_validate_json(line)
        inputs.append({"key": review.id, "value": review})
    outputs = agents_env.from_list(inputs).apply("review_analysis_agent").to_list()
    agents_env.execute()
    print_results([value for output in outputs for value in output.values()])


if __name__ == "__main__":
    if "--local" in sys.argv:
        run_locally()
    else:
        main()

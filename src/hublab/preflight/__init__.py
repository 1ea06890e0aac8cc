"""Preflight: every input of a command is checked before any work, and each problem is one located line. The pipeline
YAML, the CLI options, the dataset file and the environment (output paths, the MLflow store, the variables ``*_env``
keys name, the LLM endpoints) are checked together, before the first model load or question, and every problem is
reported at once (``InputErrors``), each located by file, line/row and field. Nothing is created while checking (a
write probe is removed at once).

One module per concern: ``outputs`` (output files and folders), ``tracking`` (the MLflow store), ``llm`` (the LLM
endpoints), ``files`` (the pipeline YAML and its config values), ``run`` (the run's check that calls them all). The
names other modules use are re-exported here; a constant is read where it is defined (set it there)."""

from hublab.llm.endpoints import LLMEndpoint, llm_endpoints
from hublab.preflight.files import (
    MAX_EVAL_K,
    MAX_PIPELINE_BYTES,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    config_value_problems,
    device_problem,
    lite_index_problem,
    yaml_file_problem,
)
from hublab.preflight.llm import (
    LLM_CONNECT_TIMEOUT_S,
    LLM_READ_TIMEOUT_S,
    check_llm,
    llm_endpoint_problem,
    missing_env_vars,
)
from hublab.preflight.outputs import is_devnull, output_dir_problem, output_file_problem
from hublab.preflight.run import (
    GOLDEN_ANSWER_METRICS,
    Checked,
    apply_hub_types,
    blank_answer_warning,
    check_names,
    check_run,
    golden_id_check,
    hub_types_for,
    print_warnings,
)
from hublab.preflight.tracking import TRACKING_CONNECT_TIMEOUT_S, bound_tracking_retries, tracking_problem

__all__ = [
    # the run's check
    "Checked", "check_run", "check_names", "hub_types_for", "apply_hub_types", "golden_id_check",
    "GOLDEN_ANSWER_METRICS", "blank_answer_warning", "print_warnings",
    # output files and folders
    "is_devnull", "output_file_problem", "output_dir_problem",
    # the MLflow store
    "TRACKING_CONNECT_TIMEOUT_S", "tracking_problem", "bound_tracking_retries",
    # the LLM endpoints
    "LLM_CONNECT_TIMEOUT_S", "LLM_READ_TIMEOUT_S", "LLMEndpoint", "llm_endpoints", "missing_env_vars",
    "llm_endpoint_problem", "check_llm",
    # the pipeline YAML and its config values
    "MAX_PIPELINE_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "MAX_EVAL_K", "yaml_file_problem",
    "config_value_problems", "device_problem", "lite_index_problem",
]

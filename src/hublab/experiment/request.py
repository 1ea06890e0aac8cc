"""What one experiment run is: a :class:`RunRequest`, built once by its caller (``hublab run`` and DVC's evaluate
stage through it, ``hublab report compare``, the fair comparison, the tuner's trials) and passed down whole to
:func:`hublab.experiment.runner.run_experiment`.

Everything a run derives from its inputs and the environment — the project settings, the MLflow tracking URI and
experiment, the flattened config, the secret values to mask — is resolved here, once per request, and read by the
runner's steps from it instead of being recomputed in each module.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from hublab.config import Settings
from hublab.config import settings as load_settings
from hublab.pipeline.config import PipelineConfig, flatten
from hublab.redact import scrub, without_credentials
from hublab.tracking.mlflow_log import env_names_in, secret_values
from hublab.tracking.recorder import RunDescription


@dataclass(frozen=True)
class RunRequest:
    """A pipeline over a dataset on a graph, and how to run and track it.

    ``cfg`` is the loaded pipeline (its ``--llm-base-url`` override already applied); ``experiment`` None means
    ``params.yaml: tracking.experiment``; ``run_name`` None means ``<pipeline>·<graph>·<dataset>``. The three
    budgets override the pipeline's ``evaluation.*`` keys of the same name.
    """

    cfg: PipelineConfig
    graph: str
    dataset: str
    settings: Settings
    limit: int | None = None
    experiment: str | None = None
    run_name: str | None = None
    parent_run_id: str | None = None
    nested: bool = False
    resume: bool = True
    log_artifacts: bool = True
    #: the run's artifacts include a chart per slice field (~0.2 s each): off where a caller charts the runs itself
    artifact_plots: bool = True
    #: the dataset as an MLflow input of the run (~50 ms): off for a study's trials, whose params and tags name it
    log_dataset_input: bool = True
    #: take an answer this process gave the same LLM-free configuration for the same question in an earlier run
    #: (:mod:`hublab.experiment.shared_answers`): a study's trials across a comparison's folds
    share_answers: bool = False
    progress: bool = True
    track_carbon: bool = True
    trace: bool = True
    question_timeout_s: float | None = None
    run_timeout_s: float | None = None
    max_failure_share: float | None = None
    #: answer the pending questions in this seeded order (a tuning trial: a pruner sees a mixed sample first, not the
    #: dataset's first template); each record and every metric are the same in any order
    order_seed: int | None = None
    #: ``--hub-type`` as the caller was given it: it wins over the hub types the graph declares (empty: the graph's
    #: declared hub types, else the pipeline's)
    hub_types: tuple[str, ...] = ()

    @classmethod
    def build(cls, cfg: PipelineConfig, graph: str, dataset: str, *, settings: Settings | None = None,
              **options: Any) -> RunRequest:
        """The request with the project's settings read now (``settings=None``) or the caller's."""
        return cls(cfg, graph, dataset, settings or load_settings(), **options)

    @cached_property
    def experiment_name(self) -> str:
        """The MLflow experiment: ``--experiment``, else ``params.yaml: tracking.experiment``, else ``hublab``."""
        return self.experiment or str(self.settings.section("tracking").get("experiment", "hublab"))

    @cached_property
    def tracking_uri(self) -> str:
        """Where the run logs: ``$MLFLOW_TRACKING_URI``, else the checkout's own store (``config.tracking_uri``)."""
        return self.settings.tracking_uri()

    @cached_property
    def config_hash(self) -> str:
        """The config's hash with the graph as it identifies the run: an endpoint without its credentials (the
        same endpoint reached with another password is the same graph, and no hash is taken of a secret)."""
        return self.cfg.config_hash(without_credentials(self.graph), self.dataset)

    @cached_property
    def graph_shown(self) -> str:
        """``graph`` as it may be stored or printed: an endpoint URL's credentials masked."""
        return scrub(self.graph)

    @cached_property
    def flat_config(self) -> dict[str, Any]:
        """The pipeline config as MLflow params see it (``a.b.c`` keys), flattened once."""
        return flatten(self.cfg.to_dict())

    @cached_property
    def secrets(self) -> list[str]:
        """Values never written anywhere (secret-looking env vars and those the config names in ``*_env`` keys),
        masked in params, tags, traces, records and artifacts."""
        return secret_values(env_names_in(self.flat_config))

    def description(self, run_name: str) -> RunDescription:
        """What the tracking layer's :class:`~hublab.tracking.recorder.RunRecorder` needs of this request."""
        return RunDescription(self.cfg, self.graph_shown, self.dataset, self.settings, self.experiment_name, run_name,
                              self.config_hash, self.flat_config, tuple(self.secrets), self.parent_run_id, self.nested)

    def display_name(self, scope: str | None = None) -> str:
        """The MLflow run name: the caller's, else ``<pipeline>·<graph>·<dataset>``; a partial run says its scope."""
        name = self.run_name or f"{self.cfg.name}·{self.graph_shown}·{self.dataset}"
        return scrub(f"{name} [{scope}]" if scope else name)

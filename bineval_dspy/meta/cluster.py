"""``bineval meta-eval --ray``: actors that score a batch of outputs with one method (its scorer built once, on
the run's LM or the method's own), mapped over the outputs by ``core.cluster.on_actors`` while this process
writes the one scores log."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING

from bineval_dspy.core.cluster import on_actors

if TYPE_CHECKING:
    from bineval_dspy.core.schema import Checklist
    from bineval_dspy.meta.config import MetaEvalConfig
    from bineval_dspy.meta.datasets import MetaRow
    from bineval_dspy.meta.methods import MethodConfig
    from bineval_dspy.meta.runner import Cluster, OutputScore


class _MetaWorker:
    """One Ray actor of ``bineval meta-eval --ray``: one method's scorer built once (on the run's LM, or the
    method's own), then batches of outputs scored with it."""

    def __init__(self, cluster: Cluster, config: MetaEvalConfig, method: MethodConfig, checklist: Checklist | None, threads: int, rows: list[MetaRow]) -> None:
        from bineval_dspy.lm import runtime
        from bineval_dspy.lm.specs import make_lm
        from bineval_dspy.meta.runner import method_scorer

        self.method = method
        self.lm = runtime.configure(cluster.lm, cluster.cache_dir) if cluster.lm is not None and method.uses_lm else None
        if method.lm is not None and method.uses_lm:
            self.lm = make_lm(method.lm, source=f"{config.source or 'config'}: method {method.name!r}: field 'lm' =")
        self.scorer, self.plan = method_scorer(method, config, checklist, self.lm, threads, rows)

    def run(self, rows: list[MetaRow]) -> list[OutputScore]:
        """Each output's score, with its cost and seconds, in input order."""
        import dspy

        from bineval_dspy.meta.runner import scored_rows

        with dspy.context(lm=self.lm) if self.lm is not None else nullcontext():
            return list(scored_rows(self.method, self.scorer, self.plan, rows, show=False))


def ray_scored(
    cluster: Cluster, config: MetaEvalConfig, method: MethodConfig, checklist: Checklist | None, threads: int, todo: Sequence[MetaRow], rows: Sequence[MetaRow]
) -> Iterator[OutputScore]:
    """One method's scores for ``todo``, computed by ``cluster.workers`` actors, in input order."""
    args = (cluster, config, method, checklist, threads, list(rows))
    yield from on_actors(cluster.address, cluster.workers, _MetaWorker, args, todo, label=f"scoring ({method.name})", total=len(todo))
